//! Lean typed caches: a projection type holding only what a controller reads.
//!
//! A `k8s_openapi` `Pod` is large even when mostly empty (every optional field takes its
//! inline space); a controller that only needs a pod's node, phase and images can cache a
//! small struct instead and keep the typed API. The projection is decoded straight from the
//! JSON as served (serde skips every other field), or made from a decoded `Pod`.
//!
//! Figures for 100,000 bench pods (`kinformer-bench cache` W4, W4P, W4-compact; counting
//! allocator; heap bytes per object, the indexer with two indices included): typed `Pod`
//! ≈ 6,320; a projection like this one ≈ 1,230 (most of it the `ObjectMeta`);
//! `PartialObjectMeta<Pod>` (metadata only) ≈ 1,130; a compact indexer of full pods ≈ 254.
//!
//! The projection is `kinformer_bench::pod_lite::PodLite`: the type the `kinformer-bench` W4P
//! workload measures. Run: `cargo run -p kinformer-examples --example projection`.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kinformer::cache::store::{Indexer, NAMESPACE_INDEX, namespace_index_func};
use kinformer::cache::{Lister, Selector};

use kinformer_bench::pod_lite::PodLite;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let served = r#"{
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web-0", "namespace": "prod", "labels": {"app": "web"},
                     "resourceVersion": "42"},
        "spec": {"nodeName": "node-7", "containers": [
            {"name": "app", "image": "registry.example/web:1.2",
             "env": [{"name": "MODE", "value": "prod"}], "ports": [{"containerPort": 8080}]}]},
        "status": {"phase": "Running", "podIP": "10.244.1.7"}
    }"#;

    // Straight from the wire: serde keeps the projected fields and skips the rest.
    let lite: PodLite = serde_json::from_str(served)?;
    // Or from a decoded pod (e.g. in a transform).
    let pod: Pod = serde_json::from_str(served)?;
    assert_eq!(PodLite::from(&pod), lite);

    let indexer = Arc::new(Indexer::<PodLite>::new(
        [(NAMESPACE_INDEX.to_string(), namespace_index_func())].into(),
    ));
    indexer.add(Arc::new(lite))?;
    let lister = Lister::new(Arc::clone(&indexer));
    let web: Selector = "app=web".parse()?;
    for p in lister.namespaced("prod").list(&web) {
        println!(
            "{}/{} on {:?}: {:?}, images {:?}",
            p.metadata.namespace.as_deref().unwrap_or_default(),
            p.metadata.name.as_deref().unwrap_or_default(),
            p.spec.node_name,
            p.status.phase,
            p.spec
                .containers
                .iter()
                .map(|c| c.image.as_deref().unwrap_or_default())
                .collect::<Vec<_>>()
        );
    }
    println!(
        "inline size: Pod {} bytes, PodLite {} bytes",
        std::mem::size_of::<Pod>(),
        std::mem::size_of::<PodLite>()
    );
    Ok(())
}
