//! The metadata-level parse of an object's JSON: `metadata` without `managedFields`, every
//! other top-level field skipped.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// Decodes a body with the library's JSON decoder: sonic-rs with the `fast-json` feature,
/// serde_json otherwise (a sonic-rs error becomes a `serde_json::Error` with its message).
pub(super) fn from_json<T: DeserializeOwned>(json: &str) -> Result<T, serde_json::Error> {
    #[cfg(feature = "fast-json")]
    {
        sonic_rs::from_str(json).map_err(|e| serde::de::Error::custom(sonic_message(&e)))
    }
    #[cfg(not(feature = "fast-json"))]
    {
        serde_json::from_str(json)
    }
}

/// A sonic-rs error on one line, like serde_json's: `<what> at line L column C`, then the
/// text around the position (sonic-rs prints it on extra lines, under a caret mask).
#[cfg(feature = "fast-json")]
pub(crate) fn sonic_message(e: &sonic_rs::Error) -> String {
    let text = e.to_string();
    match text.split_once("\n\n\t") {
        Some((head, rest)) => match rest.lines().next() {
            Some(near) if !near.trim().is_empty() => format!("{head}, near `{}`", near.trim()),
            _ => head.to_owned(),
        },
        None => text,
    }
}

/// The metadata of `json`, an object known to be valid JSON (split from a list or a watch
/// event by a validating parser, or stored after such a split): read up to the end of
/// `metadata` (the members before it skipped, with a check of their syntax), the members
/// after it not scanned again. An object without `metadata` has empty metadata.
///
/// Kubernetes writes `metadata` right after `kind` and `apiVersion`, so this reads a few
/// hundred bytes of a pod instead of all of it.
pub(super) fn metadata_first(json: &str) -> Result<MetaView, serde_json::Error> {
    crate::codec::member_ahead_str(json, "metadata", &[]).map(Option::unwrap_or_default)
}

/// The top level of an object, of which only `metadata` is read.
#[derive(Deserialize)]
pub(super) struct Envelope {
    #[serde(default)]
    pub(super) metadata: MetaView,
}

/// `ObjectMeta` without `managedFields` (often most of the metadata's bytes, and read by
/// almost no controller) and the deprecated `selfLink`. Field names as on the wire.
#[derive(Deserialize, Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct MetaView {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    generate_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    uid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    resource_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    creation_timestamp: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    deletion_timestamp: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    deletion_grace_period_seconds: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    labels: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    annotations: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    owner_references: Option<Vec<OwnerReference>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    finalizers: Option<Vec<String>>,
}

/// The metadata keys a [`MetaView`] carries (every other key of `metadata` is left as it is
/// when metadata changed through `meta_mut` is written back).
pub(super) const VIEW_KEYS: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
];

impl From<MetaView> for ObjectMeta {
    fn from(v: MetaView) -> Self {
        ObjectMeta {
            name: v.name,
            generate_name: v.generate_name,
            namespace: v.namespace,
            uid: v.uid,
            resource_version: v.resource_version,
            generation: v.generation,
            creation_timestamp: v.creation_timestamp,
            deletion_timestamp: v.deletion_timestamp,
            deletion_grace_period_seconds: v.deletion_grace_period_seconds,
            labels: v.labels,
            annotations: v.annotations,
            owner_references: v.owner_references,
            finalizers: v.finalizers,
            managed_fields: None,
            self_link: None,
        }
    }
}

impl From<&ObjectMeta> for MetaView {
    fn from(m: &ObjectMeta) -> Self {
        MetaView {
            name: m.name.clone(),
            generate_name: m.generate_name.clone(),
            namespace: m.namespace.clone(),
            uid: m.uid.clone(),
            resource_version: m.resource_version.clone(),
            generation: m.generation,
            creation_timestamp: m.creation_timestamp.clone(),
            deletion_timestamp: m.deletion_timestamp.clone(),
            deletion_grace_period_seconds: m.deletion_grace_period_seconds,
            labels: m.labels.clone(),
            annotations: m.annotations.clone(),
            owner_references: m.owner_references.clone(),
            finalizers: m.finalizers.clone(),
        }
    }
}

/// The metadata view of an object's protobuf metadata: the same [`ObjectMeta`] the JSON
/// parse gives (the protobuf parse already follows Go's JSON form, see
/// [`kinformer_protobuf::object_meta`]).
#[cfg(feature = "protobuf")]
pub(super) fn from_protobuf(m: kinformer_protobuf::ObjectMetaRef<'_>) -> ObjectMeta {
    fn map(entries: &[(&str, &str)]) -> Option<BTreeMap<String, String>> {
        (!entries.is_empty()).then(|| {
            entries
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        })
    }
    let owned = |s: Option<&str>| s.map(str::to_owned);
    ObjectMeta {
        name: owned(m.name),
        generate_name: owned(m.generate_name),
        namespace: owned(m.namespace),
        uid: owned(m.uid),
        resource_version: owned(m.resource_version),
        generation: m.generation,
        creation_timestamp: m.creation_timestamp.map(Time),
        deletion_timestamp: m.deletion_timestamp.map(Time),
        deletion_grace_period_seconds: m.deletion_grace_period_seconds,
        labels: map(&m.labels),
        annotations: map(&m.annotations),
        owner_references: (!m.owner_references.is_empty()).then(|| {
            m.owner_references
                .iter()
                .map(|o| OwnerReference {
                    api_version: o.api_version.to_owned(),
                    kind: o.kind.to_owned(),
                    name: o.name.to_owned(),
                    uid: o.uid.to_owned(),
                    controller: o.controller,
                    block_owner_deletion: o.block_owner_deletion,
                })
                .collect()
        }),
        finalizers: (!m.finalizers.is_empty())
            .then(|| m.finalizers.iter().map(|f| (*f).to_owned()).collect()),
        managed_fields: None,
        self_link: None,
    }
}
