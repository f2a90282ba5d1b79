//! The demo's workload and what happens to it, drawn from a seed: the same seed gives the
//! same ReplicaSets and the same schedule of scale-ups, scale-downs, additions, deletions and
//! pod kills.

use std::ops::RangeInclusive;
use std::time::Duration;

use k8s_openapi::api::apps::v1::ReplicaSet;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// The label every object of the demo carries.
pub const DEMO_LABEL: (&str, &str) = ("app.kubernetes.io/managed-by", "kinformer-demo");

/// Replicas of a new ReplicaSet on the embedded server: 5 to 50.
const REPLICAS: RangeInclusive<i32> = 5..=50;

/// Replicas of a new ReplicaSet on a real cluster: 1 to 3 (real pods take real resources).
const CLUSTER_REPLICAS: RangeInclusive<i32> = 1..=3;

/// ReplicaSets created at the start by default: on the embedded server, on a real cluster.
const REPLICASETS: usize = 100;
const CLUSTER_REPLICASETS: usize = 10;

/// How big the workload is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Size {
    /// ReplicaSets created at the start.
    pub replicasets: usize,
    /// Replicas of each new ReplicaSet (and of a scale-up).
    pub replicas: RangeInclusive<i32>,
}

impl Size {
    /// The workload for a target: a real `cluster` (`--kubeconfig`/`--context`) gets one sized
    /// for a small cluster, 10 ReplicaSets of 1–3 pods; the embedded server (or `--server`)
    /// 100 of 5–50. `replicasets` (`--replicasets`) overrides the count.
    pub fn for_target(cluster: bool, replicasets: Option<usize>) -> Self {
        let (default, replicas) = if cluster {
            (CLUSTER_REPLICASETS, CLUSTER_REPLICAS)
        } else {
            (REPLICASETS, REPLICAS)
        };
        Self {
            replicasets: replicasets.unwrap_or(default),
            replicas,
        }
    }
}

/// One ReplicaSet of the workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaSetPlan {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// `spec.replicas`.
    pub replicas: i32,
}

impl ReplicaSetPlan {
    /// The ReplicaSet object: a selector and template labelled `app=<name>`.
    pub fn to_replicaset(&self) -> ReplicaSet {
        super::controller::replicaset(&self.namespace, &self.name, self.replicas, &[DEMO_LABEL])
    }
}

/// Something the demo's user does during the chaos phase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Set a ReplicaSet's replicas.
    Scale {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
        /// New `spec.replicas`.
        replicas: i32,
    },
    /// Create a new ReplicaSet.
    Add(ReplicaSetPlan),
    /// Delete a ReplicaSet (the controller deletes its pods).
    Delete {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
    },
    /// Delete this many random pods (as if their nodes failed).
    KillPods(usize),
}

/// An action and when it happens, from the start of the chaos phase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// Offset from the start of the chaos phase.
    pub at: Duration,
    /// What happens.
    pub action: Action,
}

/// The whole scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scenario {
    /// The initial ReplicaSets.
    pub initial: Vec<ReplicaSetPlan>,
    /// The chaos phase's actions, in time order.
    pub steps: Vec<Step>,
    /// How long the chaos phase lasts.
    pub chaos_duration: Duration,
}

/// Draws a scenario: `replicasets` initial ReplicaSets spread over `namespaces`, then during
/// `chaos_duration` half as many actions as ReplicaSets (at least 8): scales (60 %),
/// additions, deletions and pod kills (when `kill_pods`).
pub fn generate(
    seed: u64,
    size: &Size,
    namespaces: &[String],
    chaos_duration: Duration,
    kill_pods: bool,
) -> Scenario {
    let mut rng = SmallRng::seed_from_u64(seed);
    let replicasets = size.replicasets;
    let ns_count = namespaces.len().max(1);
    let ns_of = |i: usize| {
        namespaces
            .get(i % ns_count)
            .cloned()
            .unwrap_or_else(|| "default".into())
    };
    let initial: Vec<ReplicaSetPlan> = (0..replicasets)
        .map(|i| ReplicaSetPlan {
            namespace: ns_of(i),
            name: format!("web-{i:04}"),
            replicas: rng.random_range(size.replicas.clone()),
        })
        .collect();
    let mut live: Vec<(String, String)> = initial
        .iter()
        .map(|r| (r.namespace.clone(), r.name.clone()))
        .collect();
    let mut next = replicasets;
    let count = (replicasets / 2).max(8);
    let mut steps = Vec::with_capacity(count);
    let span = chaos_duration.as_millis().max(1) as u64;
    let mut times: Vec<u64> = (0..count).map(|_| rng.random_range(0..span)).collect();
    times.sort_unstable();
    for t in times {
        let roll = rng.random_range(0..100);
        let action = if live.is_empty() || (60..75).contains(&roll) {
            let plan = ReplicaSetPlan {
                namespace: ns_of(next),
                name: format!("web-{next:04}"),
                replicas: rng.random_range(size.replicas.clone()),
            };
            next += 1;
            live.push((plan.namespace.clone(), plan.name.clone()));
            Action::Add(plan)
        } else if roll < 60 {
            let (namespace, name) = live[rng.random_range(0..live.len())].clone();
            // Scale to zero now and then, else anywhere in the usual range.
            let replicas = if rng.random_bool(0.1) {
                0
            } else {
                rng.random_range(size.replicas.clone())
            };
            Action::Scale {
                namespace,
                name,
                replicas,
            }
        } else if roll < 85 || !kill_pods {
            let (namespace, name) = live.swap_remove(rng.random_range(0..live.len()));
            Action::Delete { namespace, name }
        } else {
            Action::KillPods(rng.random_range(1..=10))
        };
        steps.push(Step {
            at: Duration::from_millis(t),
            action,
        });
    }
    Scenario {
        initial,
        steps,
        chaos_duration,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns() -> Vec<String> {
        vec!["a".into(), "b".into()]
    }

    #[test]
    fn a_real_cluster_gets_a_small_workload_unless_told_otherwise() {
        let small = Size::for_target(true, None);
        assert_eq!((small.replicasets, small.replicas.clone()), (10, 1..=3));
        assert_eq!(Size::for_target(true, Some(40)).replicasets, 40);
        assert_eq!(Size::for_target(false, None).replicasets, 100);
        assert_eq!(Size::for_target(false, None).replicas, 5..=50);
        let s = generate(2, &small, &ns(), Duration::from_secs(8), true);
        assert_eq!(s.initial.len(), 10);
        assert!(s.initial.iter().all(|r| (1..=3).contains(&r.replicas)));
        assert!(s.steps.iter().all(|st| match &st.action {
            Action::Scale { replicas, .. } => *replicas <= 3,
            Action::Add(p) => (1..=3).contains(&p.replicas),
            _ => true,
        }));
    }

    #[test]
    fn same_seed_same_scenario() {
        let d = Duration::from_secs(5);
        assert_eq!(
            generate(7, &Size::for_target(false, Some(20)), &ns(), d, true),
            generate(7, &Size::for_target(false, Some(20)), &ns(), d, true)
        );
        assert_ne!(
            generate(7, &Size::for_target(false, Some(20)), &ns(), d, true),
            generate(8, &Size::for_target(false, Some(20)), &ns(), d, true)
        );
    }

    #[test]
    fn shape_of_a_scenario() {
        let s = generate(
            1,
            &Size::for_target(false, Some(100)),
            &ns(),
            Duration::from_secs(8),
            true,
        );
        assert_eq!(s.initial.len(), 100);
        assert!(s.initial.iter().all(|r| REPLICAS.contains(&r.replicas)));
        assert_eq!(s.initial.iter().filter(|r| r.namespace == "b").count(), 50);
        assert_eq!(s.steps.len(), 50);
        assert!(s.steps.windows(2).all(|w| w[0].at <= w[1].at));
        assert!(s.steps.iter().all(|st| st.at < Duration::from_secs(8)));
        let kinds = |f: fn(&Action) -> bool| s.steps.iter().filter(|st| f(&st.action)).count();
        assert!(kinds(|a| matches!(a, Action::Scale { .. })) > 10);
        assert!(kinds(|a| matches!(a, Action::Add(_))) > 0);
        assert!(kinds(|a| matches!(a, Action::Delete { .. })) > 0);
        assert!(kinds(|a| matches!(a, Action::KillPods(_))) > 0);
        // Names never repeat, so a deleted ReplicaSet is never re-created.
        let mut names: Vec<&str> = s.initial.iter().map(|r| r.name.as_str()).collect();
        names.extend(s.steps.iter().filter_map(|st| match &st.action {
            Action::Add(p) => Some(p.name.as_str()),
            _ => None,
        }));
        let before = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), before);
    }

    #[test]
    fn no_pod_kills_without_chaos() {
        let s = generate(
            3,
            &Size::for_target(false, Some(30)),
            &ns(),
            Duration::from_secs(2),
            false,
        );
        assert!(
            !s.steps
                .iter()
                .any(|st| matches!(st.action, Action::KillPods(_)))
        );
    }

    #[test]
    fn replicaset_object_selects_its_template() {
        let rs = generate(
            1,
            &Size::for_target(false, Some(1)),
            &ns(),
            Duration::from_secs(1),
            true,
        )
        .initial[0]
            .to_replicaset();
        let spec = rs.spec;
        let sel = spec.selector.match_labels.unwrap();
        let tmpl = spec.template.unwrap().metadata.unwrap().labels.unwrap();
        assert!(sel.iter().all(|(k, v)| tmpl.get(k) == Some(v)));
    }
}
