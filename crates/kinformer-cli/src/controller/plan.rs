//! What a ReplicaSet needs, as a pure function of the ReplicaSet and the pods it owns.
//!
//! Nothing here talks to a server: [`plan`] looks at a ReplicaSet and its pods and returns the
//! actions (create N pods, delete these pods, write this status), which the controller then
//! carries out. That keeps the decision logic testable without a cluster.

use std::cmp::Ordering;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetStatus};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kinformer::controller::controlling_owner_key;

/// The `namespace/name` key of the ReplicaSet controlling `pod`, if a ReplicaSet controls it.
pub fn controlling_replicaset_key(pod: &Pod) -> Option<String> {
    controlling_owner_key(&pod.metadata, "apps", "ReplicaSet")
}

/// Whether the pod counts towards a ReplicaSet's replicas: not being deleted and not
/// terminated (client-go's `IsPodActive`).
pub fn is_pod_active(pod: &Pod) -> bool {
    if pod.metadata.deletion_timestamp.is_some() {
        return false;
    }
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    !matches!(phase, Some("Succeeded" | "Failed"))
}

/// Whether the pod has the `Ready` condition set to `True`.
pub fn is_pod_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The desired replica count (Kubernetes defaults a missing value to 1).
pub fn desired_replicas(rs: &ReplicaSet) -> usize {
    let n = rs.spec.replicas.unwrap_or(1);
    usize::try_from(n).unwrap_or(0)
}

/// The actions one sync of a ReplicaSet takes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Plan {
    /// How many pods to create.
    pub create: usize,
    /// The names of the pods to delete, the least valuable first.
    pub delete: Vec<String>,
    /// The status to write, if it differs from the current one.
    pub status: Option<ReplicaSetStatus>,
}

impl Plan {
    /// Whether the plan does nothing.
    pub fn is_noop(&self) -> bool {
        self.create == 0 && self.delete.is_empty() && self.status.is_none()
    }
}

/// Decides what to do for `rs` given the pods it controls (`owned`, as the owner index
/// returns them; inactive pods are ignored).
///
/// With `manage_replicas` false (pod creations or deletions of an earlier sync have not been
/// observed yet) only the status is computed: acting on a cache that does not yet show our
/// own writes would create or delete twice.
pub fn plan(rs: &ReplicaSet, owned: &[Arc<Pod>], manage_replicas: bool) -> Plan {
    let mut active: Vec<&Pod> = owned
        .iter()
        .map(AsRef::as_ref)
        .filter(|p| is_pod_active(p))
        .collect();
    let want = desired_replicas(rs);
    let mut out = Plan::default();
    if manage_replicas {
        if active.len() < want {
            out.create = want - active.len();
        } else if active.len() > want {
            active.sort_by(|a, b| deletion_rank(a, b));
            out.delete = active[..active.len() - want]
                .iter()
                .filter_map(|p| p.metadata.name.clone())
                .collect();
        }
    }
    let status = computed_status(rs, owned);
    if rs.status.as_ref().map(normalized) != Some(normalized(&status)) {
        out.status = Some(status);
    }
    out
}

/// The status with absent counts written as zero (servers may drop zero values).
fn normalized(s: &ReplicaSetStatus) -> ReplicaSetStatus {
    let zero = |v: Option<i32>| Some(v.unwrap_or(0));
    ReplicaSetStatus {
        available_replicas: zero(s.available_replicas),
        fully_labeled_replicas: zero(s.fully_labeled_replicas),
        ready_replicas: zero(s.ready_replicas),
        terminating_replicas: zero(s.terminating_replicas),
        ..s.clone()
    }
}

/// The status observed from the pods (before this sync's creations and deletions take
/// effect, as the Kubernetes controller reports it).
pub fn computed_status(rs: &ReplicaSet, owned: &[Arc<Pod>]) -> ReplicaSetStatus {
    let active: Vec<&Pod> = owned
        .iter()
        .map(AsRef::as_ref)
        .filter(|p| is_pod_active(p))
        .collect();
    let count = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    let ready = count(active.iter().filter(|p| is_pod_ready(p)).count());
    let template_labels = rs
        .spec
        .template
        .as_ref()
        .and_then(|t| t.metadata.as_ref())
        .and_then(|m| m.labels.as_ref());
    let fully_labeled = active
        .iter()
        .filter(|p| match template_labels {
            None => true,
            Some(want) => want
                .iter()
                .all(|(k, v)| p.metadata.labels.as_ref().and_then(|l| l.get(k)) == Some(v)),
        })
        .count();
    let previous = rs.status.as_ref();
    ReplicaSetStatus {
        replicas: count(active.len()),
        ready_replicas: Some(ready),
        available_replicas: Some(ready),
        fully_labeled_replicas: Some(count(fully_labeled)),
        observed_generation: rs.metadata.generation,
        conditions: previous.and_then(|s| s.conditions.clone()),
        terminating_replicas: previous.and_then(|s| s.terminating_replicas),
    }
}

/// Orders pods from the first to delete to the last: not ready before ready, then the newest
/// first, then by name (so that the choice is deterministic).
fn deletion_rank(a: &Pod, b: &Pod) -> Ordering {
    is_pod_ready(a)
        .cmp(&is_pod_ready(b))
        .then_with(|| {
            let ca = a.metadata.creation_timestamp.as_ref().map(|t| t.0);
            let cb = b.metadata.creation_timestamp.as_ref().map(|t| t.0);
            cb.cmp(&ca)
        })
        .then_with(|| a.metadata.name.cmp(&b.metadata.name))
}

/// A new pod for `rs`: its template, `generateName` `<rs>-`, and a controller owner
/// reference. `None` if the ReplicaSet has no name or UID yet.
pub fn new_pod(rs: &ReplicaSet) -> Option<Pod> {
    let name = rs.metadata.name.clone()?;
    let uid = rs.metadata.uid.clone()?;
    let template = rs.spec.template.clone().unwrap_or_default();
    let template_meta = template.metadata.unwrap_or_default();
    Some(Pod {
        metadata: ObjectMeta {
            generate_name: Some(format!("{name}-")),
            namespace: rs.metadata.namespace.clone(),
            labels: template_meta.labels,
            annotations: template_meta.annotations,
            owner_references: Some(vec![OwnerReference {
                api_version: "apps/v1".into(),
                kind: "ReplicaSet".into(),
                name,
                uid,
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..ObjectMeta::default()
        },
        spec: template.spec,
        status: None,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::api::apps::v1::ReplicaSetSpec;
    use k8s_openapi::api::core::v1::{PodCondition, PodStatus, PodTemplateSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;

    use super::*;

    fn rs(replicas: i32) -> ReplicaSet {
        ReplicaSet {
            metadata: ObjectMeta {
                name: Some("web".into()),
                namespace: Some("ns".into()),
                uid: Some("uid-1".into()),
                generation: Some(3),
                ..ObjectMeta::default()
            },
            spec: ReplicaSetSpec {
                replicas: Some(replicas),
                template: Some(PodTemplateSpec {
                    metadata: Some(ObjectMeta {
                        labels: Some(BTreeMap::from([("app".into(), "web".into())])),
                        ..ObjectMeta::default()
                    }),
                    spec: None,
                }),
                ..ReplicaSetSpec::default()
            },
            status: None,
        }
    }

    fn pod(name: &str, ready: bool, created_secs: i64) -> Arc<Pod> {
        let mut p = new_pod(&rs(1)).unwrap();
        p.metadata.name = Some(name.into());
        p.metadata.creation_timestamp = Some(Time(Timestamp::from_second(created_secs).unwrap()));
        p.status = Some(PodStatus {
            phase: Some("Running".into()),
            conditions: Some(vec![PodCondition {
                type_: "Ready".into(),
                status: if ready { "True" } else { "False" }.into(),
                ..PodCondition::default()
            }]),
            ..PodStatus::default()
        });
        Arc::new(p)
    }

    #[test]
    fn creates_missing_pods() {
        let p = plan(&rs(3), &[pod("a", true, 1)], true);
        assert_eq!(p.create, 2);
        assert!(p.delete.is_empty());
        let status = p.status.unwrap();
        assert_eq!(status.replicas, 1);
        assert_eq!(status.ready_replicas, Some(1));
        assert_eq!(status.observed_generation, Some(3));
    }

    #[test]
    fn deletes_unready_then_newest_first() {
        let pods = [
            pod("old", true, 1),
            pod("new", true, 5),
            pod("unready", false, 0),
            pod("mid", true, 3),
        ];
        let p = plan(&rs(2), &pods, true);
        assert_eq!(p.create, 0);
        assert_eq!(p.delete, vec!["unready".to_string(), "new".to_string()]);
    }

    #[test]
    fn waits_for_expectations_but_still_reports_status() {
        let p = plan(&rs(3), &[pod("a", false, 1)], false);
        assert_eq!((p.create, p.delete.len()), (0, 0));
        assert_eq!(p.status.unwrap().ready_replicas, Some(0));
    }

    #[test]
    fn ignores_inactive_pods() {
        let mut done = (*pod("done", true, 1)).clone();
        done.status.as_mut().unwrap().phase = Some("Succeeded".into());
        let mut leaving = (*pod("leaving", true, 1)).clone();
        leaving.metadata.deletion_timestamp = Some(Time(Timestamp::from_second(9).unwrap()));
        let p = plan(&rs(1), &[Arc::new(done), Arc::new(leaving)], true);
        assert_eq!(p.create, 1);
        assert_eq!(p.status.unwrap().replicas, 0);
    }

    #[test]
    fn converged_replicaset_needs_nothing() {
        let pods = [pod("a", true, 1), pod("b", true, 2)];
        let mut r = rs(2);
        r.status = Some(computed_status(&r, &pods));
        assert!(plan(&r, &pods, true).is_noop());
        // Scaling to zero deletes everything.
        r.spec.replicas = Some(0);
        assert_eq!(plan(&r, &pods, true).delete.len(), 2);
    }

    #[test]
    fn new_pods_are_owned_and_generated() {
        let p = new_pod(&rs(1)).unwrap();
        assert_eq!(p.metadata.generate_name.as_deref(), Some("web-"));
        assert_eq!(p.metadata.name, None);
        let owner = kinformer::controller::controller_of(&p.metadata).unwrap();
        assert_eq!(
            (owner.kind.as_str(), owner.uid.as_str()),
            ("ReplicaSet", "uid-1")
        );
        assert_eq!(controlling_replicaset_key(&p).as_deref(), Some("ns/web"));
        assert_eq!(p.metadata.labels.unwrap()["app"], "web");
        let mut nameless = rs(1);
        nameless.metadata.uid = None;
        assert!(new_pod(&nameless).is_none());
    }
}
