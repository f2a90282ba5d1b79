//! What the crate's unit tests share: pods and deltas to build, and the names of a decoded
//! list's items. (Integration tests share `tests/support/`; the public test doubles are
//! `cache::testing`.)

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;

use crate::cache::fifo::{Delta, DeltaType};
use crate::cache::processor::Notification;

/// A pod `ns/name` with labels.
pub(crate) fn pod(ns: &str, name: &str, labels: &[(&str, &str)]) -> Arc<Pod> {
    let mut p = Pod::default();
    p.metadata.name = Some(name.into());
    if !ns.is_empty() {
        p.metadata.namespace = Some(ns.into());
    }
    if !labels.is_empty() {
        p.metadata.labels = Some(
            labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
        );
    }
    Arc::new(p)
}

/// A pod `ns/name` with a resourceVersion.
pub(crate) fn pod_rv(ns: &str, name: &str, rv: &str) -> Arc<Pod> {
    let mut p = (*pod(ns, name, &[])).clone();
    p.metadata.resource_version = Some(rv.into());
    Arc::new(p)
}

/// The resourceVersion of a pod ("" if none).
pub(crate) fn rv(p: &Pod) -> &str {
    p.metadata.resource_version.as_deref().unwrap_or_default()
}

/// Delta kinds of a list.
pub(crate) fn kinds(deltas: &[Delta<Pod>]) -> Vec<DeltaType> {
    deltas.iter().map(|d| d.delta_type()).collect()
}

/// A short description of a notification: `add ns/a`, `update ns/a`, `delete ns/a`,
/// `tombstone ns/a`.
pub(crate) fn describe(n: &Notification<Pod>) -> String {
    let name = |p: &Pod| {
        format!(
            "{}/{}",
            p.metadata.namespace.as_deref().unwrap_or_default(),
            p.metadata.name.as_deref().unwrap_or_default()
        )
    };
    match n {
        Notification::Add { obj, .. } => format!("add {}", name(obj)),
        Notification::Update { new, .. } => format!("update {}", name(new)),
        Notification::Delete(d) if d.is_tombstone() => format!("tombstone {}", name(d.object())),
        Notification::Delete(d) => format!("delete {}", name(d.object())),
    }
}

/// The names of a list's items, in order.
#[cfg(feature = "kube")]
pub(crate) fn item_names<K: kube_core::Resource>(
    list: &crate::cache::listwatch::ObjectList<K>,
) -> Vec<String> {
    list.items
        .iter()
        .map(|o| o.meta().name.clone().unwrap_or_default())
        .collect()
}

/// `cm-0` … `cm-<n - 1>`, without `cm-<skip>`.
#[cfg(feature = "kube")]
pub(crate) fn config_map_names(n: usize, skip: Option<usize>) -> Vec<String> {
    (0..n)
        .filter(|i| Some(*i) != skip)
        .map(|i| format!("cm-{i}"))
        .collect()
}
