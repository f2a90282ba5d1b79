//! Synthetic "bench pods", as defined by the benchmark workloads.
//!
//! Pod `i`: name `pod-<i>`, namespace `ns-<i % 100>`, labels `{app: a<i % 1000>, tier:
//! t<i % 3>}`, one container `app` with image `registry.example/app:1.<i % 10>` and env
//! `POD_INDEX=<i>`, `MODE=bench`.

use serde_json::{Value, json};

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
    for i in range {
        store.create_at(ridx, None, bench_pod(i))?;
    }
    Ok(())
}

/// A churn update of bench pod `i`: bumps the `MODE` env value with a counter so the spec
/// (and generation) changes.
pub fn bench_pod_update(i: usize, counter: u64) -> Value {
    let mut p = bench_pod(i);
    p["spec"]["containers"][0]["env"][1]["value"] = json!(format!("bench-{counter}"));
    p
}
