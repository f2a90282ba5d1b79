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
//! Run: `cargo run -p kinformer --example projection`.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kinformer::cache::store::{Indexer, NAMESPACE_INDEX, namespace_index_func};
use kinformer::cache::{Lister, Selector};
use serde::{Deserialize, Serialize};

/// The slice of a pod a scheduling-aware controller reads.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct PodLite {
    /// Name, namespace, labels, resourceVersion … (the key and the selectors need these).
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(default)]
    spec: PodLiteSpec,
    #[serde(default)]
    status: PodLiteStatus,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PodLiteSpec {
    #[serde(default)]
    node_name: Option<String>,
    #[serde(default)]
    containers: Vec<ContainerLite>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct ContainerLite {
    name: String,
    #[serde(default)]
    image: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct PodLiteStatus {
    #[serde(default)]
    phase: Option<String>,
}

// The indexer needs the object's metadata and its kind; these two impls give `PodLite` the
// `kube` `Resource` trait (through its blanket impl), as a pod.
impl k8s_openapi::Resource for PodLite {
    const API_VERSION: &'static str = "v1";
    const GROUP: &'static str = "";
    const KIND: &'static str = "Pod";
    const VERSION: &'static str = "v1";
    const URL_PATH_SEGMENT: &'static str = "pods";
    type Scope = k8s_openapi::NamespaceResourceScope;
}

impl k8s_openapi::Metadata for PodLite {
    type Ty = ObjectMeta;
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl From<&Pod> for PodLite {
    fn from(p: &Pod) -> Self {
        let spec = p.spec.as_ref();
        PodLite {
            metadata: ObjectMeta {
                managed_fields: None,
                ..p.metadata.clone()
            },
            spec: PodLiteSpec {
                node_name: spec.and_then(|s| s.node_name.clone()),
                containers: spec
                    .map(|s| {
                        s.containers
                            .iter()
                            .map(|c| ContainerLite {
                                name: c.name.clone(),
                                image: c.image.clone(),
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
            },
            status: PodLiteStatus {
                phase: p.status.as_ref().and_then(|s| s.phase.clone()),
            },
        }
    }
}

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
