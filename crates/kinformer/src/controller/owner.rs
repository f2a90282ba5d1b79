//! Owner references: the controlling owner of an object, and index functions over it, so a
//! controller finds the objects it owns without a scan.

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube_core::Resource;

use crate::cache::store::{IndexFunc, IndexFuncError};

/// The conventional name of the index by controlling owner UID.
pub const CONTROLLER_UID_INDEX: &str = "controller-uid";
/// The conventional name of the index by controlling owner key (`namespace/name`).
pub const CONTROLLER_KEY_INDEX: &str = "controller-key";

/// The owner reference marked `controller: true`, if any (client-go's `GetControllerOf`).
///
/// ```
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
/// use kinformer::controller::controller_of;
///
/// let owner = |name: &str, controller| OwnerReference {
///     name: name.into(), controller: Some(controller), ..Default::default()
/// };
/// let meta = ObjectMeta {
///     owner_references: Some(vec![owner("other", false), owner("rs-1", true)]),
///     ..Default::default()
/// };
/// assert_eq!(controller_of(&meta).map(|o| o.name.as_str()), Some("rs-1"));
/// assert!(controller_of(&ObjectMeta::default()).is_none());
/// ```
pub fn controller_of(meta: &ObjectMeta) -> Option<&OwnerReference> {
    meta.owner_references
        .as_deref()?
        .iter()
        .find(|r| r.controller == Some(true))
}

/// The `namespace/name` key of the object's controlling owner, if that owner is of `kind` in
/// API group `group` (`""` for the core group). Owners of namespaced objects live in the same
/// namespace (Kubernetes forbids cross-namespace owners), so the key uses the object's
/// namespace.
pub fn controlling_owner_key(meta: &ObjectMeta, group: &str, kind: &str) -> Option<String> {
    let owner = controller_of(meta)?;
    let owner_group = owner
        .api_version
        .rsplit_once('/')
        .map_or("", |(group, _version)| group);
    if owner.kind != kind || owner_group != group {
        return None;
    }
    Some(match meta.namespace.as_deref() {
        Some(ns) if !ns.is_empty() => format!("{ns}/{}", owner.name),
        _ => owner.name.clone(),
    })
}

/// An index function by the controlling owner's UID (register it as
/// [`CONTROLLER_UID_INDEX`]): `by_index(CONTROLLER_UID_INDEX, uid)` lists what one owner
/// controls.
pub fn controller_uid_index_func<K: Resource>() -> IndexFunc<K> {
    Arc::new(|obj: &K, values: &mut Vec<String>| {
        if let Some(owner) = controller_of(obj.meta()) {
            values.push(owner.uid.clone());
        }
        Ok::<(), IndexFuncError>(())
    })
}

/// An index function by the controlling owner's key, for owners of `kind` in `group` (register
/// it as [`CONTROLLER_KEY_INDEX`]): finds what a deleted owner left behind, when its UID is no
/// longer known.
pub fn controller_key_index_func<K: Resource>(
    group: &'static str,
    kind: &'static str,
) -> IndexFunc<K> {
    Arc::new(move |obj: &K, values: &mut Vec<String>| {
        if let Some(key) = controlling_owner_key(obj.meta(), group, kind) {
            values.push(key);
        }
        Ok::<(), IndexFuncError>(())
    })
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;

    use super::*;
    use crate::cache::store::Indexer;

    fn pod(name: &str, owner: Option<(&str, &str, &str, &str)>) -> Arc<Pod> {
        let mut p = Pod::default();
        p.metadata.name = Some(name.into());
        p.metadata.namespace = Some("ns".into());
        p.metadata.owner_references = owner.map(|(api_version, kind, name, uid)| {
            vec![OwnerReference {
                api_version: api_version.into(),
                kind: kind.into(),
                name: name.into(),
                uid: uid.into(),
                controller: Some(true),
                ..Default::default()
            }]
        });
        Arc::new(p)
    }

    #[test]
    fn owner_indexes_find_what_an_owner_controls_by_uid_and_by_key()
    -> Result<(), Box<dyn std::error::Error>> {
        let indexer = Indexer::<Pod>::new(
            [
                (CONTROLLER_UID_INDEX.to_owned(), controller_uid_index_func()),
                (
                    CONTROLLER_KEY_INDEX.to_owned(),
                    controller_key_index_func("apps", "ReplicaSet"),
                ),
            ]
            .into(),
        );
        indexer.add(pod("a", Some(("apps/v1", "ReplicaSet", "web", "u1"))))?;
        indexer.add(pod("b", Some(("apps/v1", "ReplicaSet", "web", "u1"))))?;
        indexer.add(pod("c", Some(("batch/v1", "Job", "web", "u2"))))?;
        indexer.add(pod("d", None))?;
        let mut by_uid: Vec<_> = indexer
            .index_keys(CONTROLLER_UID_INDEX, "u1")?
            .into_iter()
            .map(|k| k.as_str().to_owned())
            .collect();
        by_uid.sort();
        assert_eq!(by_uid, ["ns/a", "ns/b"]);
        assert_eq!(
            indexer.index_keys(CONTROLLER_KEY_INDEX, "ns/web")?.len(),
            2,
            "the Job is not a ReplicaSet"
        );
        assert_eq!(indexer.index_keys(CONTROLLER_UID_INDEX, "u2")?.len(), 1);
        Ok(())
    }

    #[test]
    fn the_owner_key_needs_the_kind_and_the_group() {
        let p = pod("a", Some(("apps/v1", "ReplicaSet", "web", "u1")));
        assert_eq!(
            controlling_owner_key(&p.metadata, "apps", "ReplicaSet").as_deref(),
            Some("ns/web")
        );
        assert_eq!(controlling_owner_key(&p.metadata, "", "ReplicaSet"), None);
        assert_eq!(
            controlling_owner_key(&p.metadata, "apps", "Deployment"),
            None
        );
        let core = pod("b", Some(("v1", "ReplicationController", "rc", "u3")));
        assert_eq!(
            controlling_owner_key(&core.metadata, "", "ReplicationController").as_deref(),
            Some("ns/rc")
        );
    }
}
