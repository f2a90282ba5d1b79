//! The demo's final check: every ReplicaSet has exactly its replicas (created, ready and
//! reported), no pod is left without its ReplicaSet, and the informer caches hold exactly the
//! server's objects at the server's versions.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use kube::Resource;

use super::controller::{controller_of, desired_replicas, is_pod_active, is_pod_ready};

/// What the verification found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verification {
    /// ReplicaSets on the server.
    pub replicasets: usize,
    /// ReplicaSets with exactly their replicas, all ready, status reported.
    pub converged: usize,
    /// Pods on the server.
    pub pods: usize,
    /// Everything that is wrong (empty: verified). At most [`MAX_PROBLEMS`] are listed.
    pub problems: Vec<String>,
    /// How many problems were found in all.
    pub problem_count: usize,
}

/// How many problems are listed in detail.
pub const MAX_PROBLEMS: usize = 10;

impl Verification {
    /// Whether everything checked out.
    pub fn ok(&self) -> bool {
        self.problem_count == 0
    }

    /// Adds a problem found by another check.
    pub fn add_problem(&mut self, p: String) {
        self.problem(p);
    }

    fn problem(&mut self, p: String) {
        self.problem_count += 1;
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(p);
        }
    }
}

fn key_of<K: Resource>(o: &K) -> String {
    let m = o.meta();
    format!(
        "{}/{}",
        m.namespace.as_deref().unwrap_or_default(),
        m.name.as_deref().unwrap_or_default()
    )
}

fn versions<'a, K: Resource + 'a>(objs: impl Iterator<Item = &'a K>) -> BTreeMap<String, String> {
    objs.map(|o| {
        (
            key_of(o),
            o.meta().resource_version.clone().unwrap_or_default(),
        )
    })
    .collect()
}

/// Compares caches with (a share of) the server's objects; returns the differences.
pub fn compare_caches(
    server_rs: &[Arc<ReplicaSet>],
    server_pods: &[Arc<Pod>],
    cached_rs: &[Arc<ReplicaSet>],
    cached_pods: &[Arc<Pod>],
) -> Vec<String> {
    let mut v = Verification::default();
    compare_cache(
        "ReplicaSet",
        versions(server_rs.iter().map(AsRef::as_ref)),
        versions(cached_rs.iter().map(AsRef::as_ref)),
        &mut v,
    );
    compare_cache(
        "pod",
        versions(server_pods.iter().map(AsRef::as_ref)),
        versions(cached_pods.iter().map(AsRef::as_ref)),
        &mut v,
    );
    v.problems
}

/// Checks the server's ReplicaSets and pods, and compares the caches with them.
pub fn verify(
    server_rs: &[ReplicaSet],
    server_pods: &[Pod],
    cached_rs: &[Arc<ReplicaSet>],
    cached_pods: &[Arc<Pod>],
) -> Verification {
    let mut v = Verification {
        replicasets: server_rs.len(),
        pods: server_pods.len(),
        ..Verification::default()
    };
    let mut by_owner: HashMap<&str, (usize, usize)> = HashMap::new();
    let uids: HashMap<&str, &ReplicaSet> = server_rs
        .iter()
        .filter_map(|r| Some((r.metadata.uid.as_deref()?, r)))
        .collect();
    for pod in server_pods.iter().filter(|p| is_pod_active(p)) {
        match controller_of(&pod.metadata) {
            Some(o) if uids.contains_key(o.uid.as_str()) => {
                let e = by_owner.entry(o.uid.as_str()).or_default();
                e.0 += 1;
                e.1 += usize::from(is_pod_ready(pod));
            }
            Some(o) => v.problem(format!(
                "pod {} belongs to {} (uid {}), which no longer exists",
                key_of(pod),
                o.name,
                o.uid
            )),
            None => {}
        }
    }
    for rs in server_rs {
        let want = desired_replicas(rs);
        let uid = rs.metadata.uid.as_deref().unwrap_or_default();
        let (have, ready) = by_owner.get(uid).copied().unwrap_or_default();
        let status = rs.status.clone().unwrap_or_default();
        let reported = usize::try_from(status.replicas).unwrap_or(usize::MAX);
        let reported_ready =
            usize::try_from(status.ready_replicas.unwrap_or(0)).unwrap_or(usize::MAX);
        let observed = status.observed_generation == rs.metadata.generation;
        if have == want && ready == want && reported == want && reported_ready == want && observed {
            v.converged += 1;
        } else {
            v.problem(format!(
                "ReplicaSet {} wants {want}: has {have} pods ({ready} ready), status says {reported} ({reported_ready} ready){}",
                key_of(rs),
                if observed { "" } else { ", generation not observed" }
            ));
        }
    }
    compare_cache(
        "ReplicaSet",
        versions(server_rs.iter()),
        versions(cached_rs.iter().map(AsRef::as_ref)),
        &mut v,
    );
    compare_cache(
        "pod",
        versions(server_pods.iter()),
        versions(cached_pods.iter().map(AsRef::as_ref)),
        &mut v,
    );
    v
}

fn compare_cache(
    kind: &str,
    server: BTreeMap<String, String>,
    cache: BTreeMap<String, String>,
    v: &mut Verification,
) {
    for (key, rv) in &server {
        match cache.get(key) {
            None => v.problem(format!("cache misses {kind} {key}")),
            Some(c) if c != rv => v.problem(format!(
                "cache has {kind} {key} at version {c}, the server at {rv}"
            )),
            Some(_) => {}
        }
    }
    for key in cache.keys().filter(|k| !server.contains_key(*k)) {
        v.problem(format!("cache still has deleted {kind} {key}"));
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::ReplicaSetStatus;

    use super::super::controller::{computed_status, new_pod};
    use super::super::scenario::ReplicaSetPlan;
    use super::*;

    fn world(replicas: i32, pods: usize) -> (ReplicaSet, Vec<Pod>) {
        let mut rs = ReplicaSetPlan {
            namespace: "ns".into(),
            name: "web".into(),
            replicas,
        }
        .to_replicaset();
        rs.metadata.uid = Some("u1".into());
        rs.metadata.generation = Some(1);
        rs.metadata.resource_version = Some("1".into());
        let pods: Vec<Pod> = (0..pods)
            .map(|i| {
                let mut p = new_pod(&rs).unwrap();
                p.metadata.name = Some(format!("web-{i}"));
                p.metadata.resource_version = Some(format!("{}", i + 2));
                p.status = Some(k8s_openapi::api::core::v1::PodStatus {
                    phase: Some("Running".into()),
                    conditions: Some(vec![k8s_openapi::api::core::v1::PodCondition {
                        type_: "Ready".into(),
                        status: "True".into(),
                        ..Default::default()
                    }]),
                    ..Default::default()
                });
                p
            })
            .collect();
        let arcs: Vec<Arc<Pod>> = pods.iter().cloned().map(Arc::new).collect();
        rs.status = Some(computed_status(&rs, &arcs));
        (rs, pods)
    }

    fn arcs<K: Clone>(v: &[K]) -> Vec<Arc<K>> {
        v.iter().cloned().map(Arc::new).collect()
    }

    #[test]
    fn converged_world_verifies() {
        let (rs, pods) = world(3, 3);
        let v = verify(
            std::slice::from_ref(&rs),
            &pods,
            &arcs(std::slice::from_ref(&rs)),
            &arcs(&pods),
        );
        assert!(v.ok(), "{:?}", v.problems);
        assert_eq!((v.replicasets, v.converged, v.pods), (1, 1, 3));
    }

    #[test]
    fn finds_missing_pods_stale_status_and_stale_cache() {
        let (mut rs, pods) = world(3, 2);
        let v = verify(
            std::slice::from_ref(&rs),
            &pods,
            &arcs(std::slice::from_ref(&rs)),
            &arcs(&pods),
        );
        assert_eq!(v.problem_count, 1, "{:?}", v.problems);

        rs.spec.replicas = Some(2);
        rs.status = Some(ReplicaSetStatus {
            replicas: 2,
            ..Default::default()
        });
        let v = verify(
            std::slice::from_ref(&rs),
            &pods,
            &arcs(std::slice::from_ref(&rs)),
            &arcs(&pods),
        );
        assert_eq!(
            v.problem_count, 1,
            "ready replicas not reported: {:?}",
            v.problems
        );

        let (rs, pods) = world(2, 2);
        let mut stale = pods.clone();
        stale[0].metadata.resource_version = Some("1".into());
        stale.pop();
        let v = verify(
            std::slice::from_ref(&rs),
            &pods,
            &arcs(std::slice::from_ref(&rs)),
            &arcs(&stale),
        );
        assert_eq!(v.problem_count, 2, "{:?}", v.problems);
        let v = verify(
            std::slice::from_ref(&rs),
            &pods[..1],
            &arcs(std::slice::from_ref(&rs)),
            &arcs(&pods),
        );
        assert!(v.problems.iter().any(|p| p.contains("cache still has")));
    }

    #[test]
    fn orphans_are_problems() {
        let (rs, pods) = world(1, 1);
        let v = verify(&[], &pods, &[], &arcs(&pods));
        assert!(
            v.problems.iter().any(|p| p.contains("no longer exists")),
            "{:?}",
            v.problems
        );
        let _ = rs;
    }
}
