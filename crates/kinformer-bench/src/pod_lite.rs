//! `PodLite`: the slice of a pod a scheduling-aware controller reads, as a typed object the
//! indexer can cache (the W4P workload, and the `projection` example of `kinformer-examples`).

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

/// The slice of a pod a scheduling-aware controller reads.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PodLite {
    /// Name, namespace, labels, resourceVersion … (the key and the selectors need these).
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The node and the containers' images.
    #[serde(default)]
    pub spec: PodLiteSpec,
    /// The phase.
    #[serde(default)]
    pub status: PodLiteStatus,
}

/// `PodLite.spec`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodLiteSpec {
    /// The node the pod runs on, once scheduled.
    #[serde(default)]
    pub node_name: Option<String>,
    /// The containers, name and image only.
    #[serde(default)]
    pub containers: Vec<ContainerLite>,
}

/// A container's name and image.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ContainerLite {
    /// The container's name.
    pub name: String,
    /// The container's image.
    #[serde(default)]
    pub image: Option<String>,
}

/// `PodLite.status`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PodLiteStatus {
    /// `Pending`, `Running`, `Succeeded`, `Failed` or `Unknown`.
    #[serde(default)]
    pub phase: Option<String>,
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
