//! Synthetic "bench pods", as defined by the benchmark workloads, and the one builder of them.
//!
//! Pod `i`: name `pod-<i>`, namespace `ns-<i % 100>`, labels `{app: a<i % 1000>, tier:
//! t<i % 3>}`, one container `app` with image `registry.example/app:1.<i % 10>` and env
//! `POD_INDEX=<i>`, `MODE=bench`.
//!
//! [`BenchPod`] builds it as JSON for the server ([`bench_pod`], [`bench_pod_update`]) and as a
//! typed `k8s_openapi` [`Pod`] for the benchmark workloads and benches; both renderings come from
//! the same field values, and [`stored_bench_pod`] is the server's stored form of the JSON one.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use k8s_openapi::api::core::v1::{Container, EnvVar, Pod, PodSpec};
use serde_json::{Value, json};

use crate::object::{StoredObject, new_uid, now_rfc3339};

use crate::status::ApiError;
use crate::store::Store;

/// The bench pod with index `index`, optionally varied the ways the workloads vary it: the
/// `app` label's index (W4 moves pods to the next `app` value), the `MODE` env value (updates
/// change it) and a resource version (typed caches fed without a server want one).
///
/// ```
/// use kinformer_apiserver::synthetic::BenchPod;
///
/// let pod = BenchPod::new(7).app(8).mode("modified").typed();
/// assert_eq!(pod.metadata.name.as_deref(), Some("pod-7"));
/// assert_eq!(pod.metadata.labels.unwrap()["app"], "a8");
/// assert_eq!(BenchPod::new(7).json()["metadata"]["namespace"], "ns-7");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BenchPod<'a> {
    index: usize,
    app: usize,
    mode: &'a str,
    resource_version: Option<u64>,
}

impl<'a> BenchPod<'a> {
    /// Bench pod `index`: label `app = a<index % 1000>`, `MODE=bench`, no resource version.
    pub fn new(index: usize) -> Self {
        BenchPod {
            index,
            app: index,
            mode: "bench",
            resource_version: None,
        }
    }

    /// Sets the `app` label to `a<app % 1000>`.
    #[must_use]
    pub fn app(self, app: usize) -> Self {
        BenchPod { app, ..self }
    }

    /// Sets the `MODE` env value.
    #[must_use]
    pub fn mode(self, mode: &'a str) -> Self {
        BenchPod { mode, ..self }
    }

    /// Sets `metadata.resourceVersion` (of the typed pod only: a server assigns its own, and
    /// refuses a create that carries one).
    #[must_use]
    pub fn resource_version(self, resource_version: u64) -> Self {
        BenchPod {
            resource_version: Some(resource_version),
            ..self
        }
    }

    fn name(&self) -> String {
        format!("pod-{}", self.index)
    }

    fn namespace(&self) -> String {
        format!("ns-{}", self.index % 100)
    }

    fn app_label(&self) -> String {
        format!("a{}", self.app % 1000)
    }

    fn tier_label(&self) -> String {
        format!("t{}", self.index % 3)
    }

    fn image(&self) -> String {
        format!("registry.example/app:1.{}", self.index % 10)
    }

    /// The pod as a typed `k8s_openapi` [`Pod`].
    pub fn typed(&self) -> Pod {
        let mut pod = Pod::default();
        let m = &mut pod.metadata;
        m.name = Some(self.name());
        m.namespace = Some(self.namespace());
        m.resource_version = self.resource_version.map(|rv| rv.to_string());
        m.labels = Some(BTreeMap::from([
            ("app".to_string(), self.app_label()),
            ("tier".to_string(), self.tier_label()),
        ]));
        pod.spec = Some(PodSpec {
            containers: vec![Container {
                name: "app".into(),
                image: Some(self.image()),
                env: Some(vec![
                    EnvVar {
                        name: "POD_INDEX".into(),
                        value: Some(self.index.to_string()),
                        ..Default::default()
                    },
                    EnvVar {
                        name: "MODE".into(),
                        value: Some(self.mode.into()),
                        ..Default::default()
                    },
                ]),
                ..Default::default()
            }],
            ..Default::default()
        });
        pod
    }

    /// The pod as the JSON a client sends (no server-set fields, so no resource version).
    pub fn json(&self) -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": self.name(),
                "namespace": self.namespace(),
                "labels": {"app": self.app_label(), "tier": self.tier_label()}
            },
            "spec": {
                "containers": [{
                    "name": "app",
                    "image": self.image(),
                    "env": [
                        {"name": "POD_INDEX", "value": self.index.to_string()},
                        {"name": "MODE", "value": self.mode}
                    ]
                }]
            }
        })
    }
}

/// The bench pod with index `i` (without server-set fields).
pub fn bench_pod(i: usize) -> Value {
    BenchPod::new(i).json()
}

/// Creates bench pods `0..n` in the store.
///
/// # Errors
/// The first failed create (e.g. 409 if a pod already exists).
pub fn seed_bench_pods(store: &Store, n: usize) -> Result<(), ApiError> {
    seed_bench_pods_range(store, 0..n)
}

/// Creates bench pods with the given indices.
///
/// # Errors
/// The first failed create.
pub fn seed_bench_pods_range(store: &Store, range: std::ops::Range<usize>) -> Result<(), ApiError> {
    let (ridx, _) = store.resolve("pods")?;
    let created = now_rfc3339();
    let start = range.start;
    store.create_bulk(ridx, range.len(), |k, rev| {
        stored_bench_pod(start + k, rev, &new_uid(), &created)
    })
}

/// Bench pod `i` as the server stores it, built directly as bytes (what [`bench_pod`] becomes
/// after a create, with keys in the same order).
pub fn stored_bench_pod(i: usize, revision: u64, uid: &str, created: &str) -> Arc<StoredObject> {
    let pod = BenchPod::new(i);
    let (app, tier, ns) = (pod.app_label(), pod.tier_label(), pod.namespace());
    let bytes = format!(
        concat!(
            r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"creationTimestamp":"{created}","generation":1,"#,
            r#""labels":{{"app":"{app}","tier":"{tier}"}},"name":"pod-{i}","namespace":"{ns}","resourceVersion":"{rev}","uid":"{uid}"}},"#,
            r#""spec":{{"containers":[{{"env":[{{"name":"POD_INDEX","value":"{i}"}},{{"name":"MODE","value":"bench"}}],"#,
            r#""image":"registry.example/app:1.{minor}","name":"app"}}]}}}}"#
        ),
        created = created,
        app = app,
        tier = tier,
        i = i,
        ns = ns,
        rev = revision,
        uid = uid,
        minor = i % 10,
    );
    let labels = [("app".to_string(), app), ("tier".to_string(), tier)]
        .into_iter()
        .collect();
    StoredObject::from_parts(Bytes::from(bytes), pod.name(), ns, labels, revision)
}

/// A churn update of bench pod `i`: bumps the `MODE` env value with a counter so the spec
/// (and generation) changes.
pub fn bench_pod_update(i: usize, counter: u64) -> Value {
    BenchPod::new(i).mode(&format!("bench-{counter}")).json()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::ResourceDef;
    use crate::store::StoreConfig;

    /// The bench pods as the three builders that preceded [`BenchPod`] built them: the server's
    /// JSON (and its update), the cache workloads' typed pod with a resource version and a
    /// shifted `app`, and the informer workload's typed pod with a `MODE` value.
    mod before {
        use std::collections::BTreeMap;

        use k8s_openapi::api::core::v1::{Container, EnvVar, Pod, PodSpec};
        use serde_json::{Value, json};

        pub(super) fn server_json(i: usize) -> Value {
            json!({
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": format!("pod-{i}"),
                    "namespace": format!("ns-{}", i % 100),
                    "labels": {"app": format!("a{}", i % 1000), "tier": format!("t{}", i % 3)}
                },
                "spec": {
                    "containers": [{
                        "name": "app",
                        "image": format!("registry.example/app:1.{}", i % 10),
                        "env": [{"name": "POD_INDEX", "value": i.to_string()}, {"name": "MODE", "value": "bench"}]
                    }]
                }
            })
        }

        pub(super) fn server_update(i: usize, counter: u64) -> Value {
            let mut p = server_json(i);
            p["spec"]["containers"][0]["env"][1]["value"] = json!(format!("bench-{counter}"));
            p
        }

        fn typed(i: usize, app: usize, mode: &str, rv: Option<String>) -> Pod {
            let mut pod = Pod::default();
            let m = &mut pod.metadata;
            m.name = Some(format!("pod-{i}"));
            m.namespace = Some(format!("ns-{}", i % 100));
            m.resource_version = rv;
            m.labels = Some(BTreeMap::from([
                ("app".to_string(), format!("a{}", app % 1000)),
                ("tier".to_string(), format!("t{}", i % 3)),
            ]));
            pod.spec = Some(PodSpec {
                containers: vec![Container {
                    name: "app".into(),
                    image: Some(format!("registry.example/app:1.{}", i % 10)),
                    env: Some(vec![
                        EnvVar {
                            name: "POD_INDEX".into(),
                            value: Some(i.to_string()),
                            ..Default::default()
                        },
                        EnvVar {
                            name: "MODE".into(),
                            value: Some(mode.into()),
                            ..Default::default()
                        },
                    ]),
                    ..Default::default()
                }],
                ..Default::default()
            });
            pod
        }

        pub(super) fn cache_workload(i: usize, app: usize) -> Pod {
            typed(i, app, "bench", Some((i + 1).to_string()))
        }

        pub(super) fn informer_workload(i: usize, mode: &str) -> Pod {
            typed(i, i, mode, None)
        }
    }

    #[test]
    fn the_builder_builds_the_pods_of_the_builders_it_replaced() {
        for i in [0, 1, 99, 1234, 99_999] {
            assert_eq!(bench_pod(i), before::server_json(i));
            assert_eq!(bench_pod_update(i, 7), before::server_update(i, 7));
            for app in [i, i + 1, i + 2, i + 7] {
                let pod = BenchPod::new(i).app(app).resource_version(i as u64 + 1);
                assert_eq!(pod.typed(), before::cache_workload(i, app));
            }
            for mode in ["bench", "modified"] {
                let pod = BenchPod::new(i).mode(mode).typed();
                assert_eq!(pod, before::informer_workload(i, mode));
            }
        }
    }

    #[test]
    fn the_typed_and_json_renderings_are_the_same_pod() {
        for i in [0, 5, 1234] {
            for pod in [
                BenchPod::new(i),
                BenchPod::new(i).app(i + 1).mode("bench-3"),
            ] {
                assert_eq!(serde_json::to_value(pod.typed()).unwrap(), pod.json());
            }
        }
        let with_rv = BenchPod::new(3).resource_version(4).typed();
        assert_eq!(with_rv.metadata.resource_version.as_deref(), Some("4"));
    }

    #[test]
    fn the_fast_seed_path_stores_what_a_create_stores() {
        let store = Store::new(ResourceDef::builtins(), StoreConfig::default());
        let (ridx, _) = store.resolve("pods").unwrap();
        let slow = store.create_at(ridx, None, bench_pod(1234)).unwrap();
        let slow_v = slow.to_value().unwrap();
        let uid = slow_v["metadata"]["uid"].as_str().unwrap();
        let ts = slow_v["metadata"]["creationTimestamp"].as_str().unwrap();
        let fast = stored_bench_pod(1234, 1, uid, ts);
        assert_eq!(
            std::str::from_utf8(&fast.bytes).unwrap(),
            std::str::from_utf8(&slow.bytes).unwrap()
        );
        assert_eq!((fast.key(), &fast.labels), (slow.key(), &slow.labels));
    }

    #[test]
    fn seeding_creates_every_pod_with_increasing_revisions() {
        let store = Store::new(ResourceDef::builtins(), StoreConfig::default());
        seed_bench_pods(&store, 250).unwrap();
        assert_eq!(store.len("pods").unwrap(), 250);
        assert_eq!(store.revision(), 250);
        let p = store.get("pods", "ns-42", "pod-142").unwrap().unwrap();
        assert_eq!(p["metadata"]["labels"]["app"], "a142");
        assert_eq!(seed_bench_pods(&store, 1).unwrap_err().code, 409);
    }
}
