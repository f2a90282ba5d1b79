//! Synthetic "bench pods", as defined by the benchmark workloads.
//!
//! Pod `i`: name `pod-<i>`, namespace `ns-<i % 100>`, labels `{app: a<i % 1000>, tier:
//! t<i % 3>}`, one container `app` with image `registry.example/app:1.<i % 10>` and env
//! `POD_INDEX=<i>`, `MODE=bench`.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Value, json};

use crate::object::{StoredObject, new_uid, now_rfc3339};

use crate::status::ApiError;
use crate::store::Store;

/// The bench pod with index `i` (without server-set fields).
pub fn bench_pod(i: usize) -> Value {
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
    let (app, tier, ns) = (
        format!("a{}", i % 1000),
        format!("t{}", i % 3),
        format!("ns-{}", i % 100),
    );
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
    Arc::new(StoredObject {
        bytes: Bytes::from(bytes),
        name: format!("pod-{i}"),
        namespace: ns,
        labels,
        revision,
    })
}

/// A churn update of bench pod `i`: bumps the `MODE` env value with a counter so the spec
/// (and generation) changes.
pub fn bench_pod_update(i: usize, counter: u64) -> Value {
    let mut p = bench_pod(i);
    p["spec"]["containers"][0]["env"][1]["value"] = json!(format!("bench-{counter}"));
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::ResourceDef;
    use crate::store::StoreConfig;

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
