//! Namespaces that exist because objects live in them.
//!
//! The server does not require a `Namespace` object before objects are created in a namespace
//! (Kubernetes' `NamespaceLifecycle` admission would refuse them; the bench pods live in
//! `ns-0` … `ns-99` without one). So that `kubectl get namespaces` lists what is there, a
//! namespace that holds at least one object and has no `Namespace` object of its own is
//! *implied*: LIST and GET of `namespaces` answer it as an `Active` `Namespace`, as if it had
//! been created with its oldest object (that object's revision is its resourceVersion, that
//! object's creationTimestamp its own; its uid is derived from its name, so it is stable).
//!
//! Implied namespaces are a read-side view of the current state: they are not stored, they make
//! no watch events (an informer on namespaces sees them in its lists only), a list at an older
//! revision shows the current ones, and a page may hold more than `limit` items when implied
//! ones fall in its key range. Creating the `Namespace` makes it a stored object like any other
//! (and it replaces the implied one); so does the first PATCH or PUT of an implied namespace
//! (`kubectl label namespace ns-1 team=a`): it is created (labels and status as shown; a new
//! uid, resourceVersion and creation time, as for any create), then changed. Deleting a
//! namespace, stored or implied, deletes the objects in it at once, as Kubernetes' namespace
//! controller does in the background (an object with finalizers stays, marked for deletion,
//! and keeps its namespace implied until its finalizers are removed).

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::list::{self, ListedPage};
use crate::object::StoredObject;
use crate::query::Query;
use crate::resource::ResourceDef;
use crate::status::ApiError;
use crate::store::Store;

/// True if `def` is the core `namespaces` resource.
pub fn is_namespaces(def: &ResourceDef) -> bool {
    def.group.is_empty() && def.plural == "namespaces"
}

/// A stable UUID-shaped uid for an implied namespace.
fn implied_uid(name: &str) -> String {
    let half = |salt: u8| {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (salt, "kinformer-implied-namespace", name).hash(&mut h);
        h.finish().to_be_bytes()
    };
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&half(1));
    bytes[8..].copy_from_slice(&half(2));
    uuid::Builder::from_random_bytes(bytes)
        .into_uuid()
        .to_string()
}

/// The `Namespace` shown for `name`, implied by `oldest`, its oldest object.
///
/// # Errors
/// 500 if the object cannot be serialized (never for a `Value`).
pub fn implied(name: &str, oldest: &StoredObject) -> Result<Arc<StoredObject>, ApiError> {
    let created = oldest
        .to_value()
        .ok()
        .and_then(|v| v.get("metadata")?.get("creationTimestamp").cloned())
        .unwrap_or(Value::Null);
    let mut meta = json!({
        "name": name,
        "uid": implied_uid(name),
        "resourceVersion": oldest.revision.to_string(),
        "labels": {"kubernetes.io/metadata.name": name},
    });
    if !created.is_null() {
        meta["creationTimestamp"] = created;
    }
    let ns = json!({
        "kind": "Namespace",
        "apiVersion": "v1",
        "metadata": meta,
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    });
    StoredObject::from_value(&ns, oldest.revision)
        .map_err(|e| ApiError::internal(format!("serialization failed: {e}")))
}

/// The namespace `name` when it is implied (objects live in it, no `Namespace` is stored).
///
/// # Errors
/// As [`implied`].
pub fn get_implied(store: &Store, name: &str) -> Result<Option<Arc<StoredObject>>, ApiError> {
    store
        .namespaces_in_use()
        .get(name)
        .map(|o| implied(name, o))
        .transpose()
}

/// Adds the implied namespaces that fall in `page`'s key range (after the continue token's key,
/// up to the page's last key when more follow) and match the query's selectors, in key order.
///
/// # Errors
/// As [`implied`].
pub fn add_implied(store: &Store, q: &Query, page: ListedPage) -> Result<ListedPage, ApiError> {
    let after = q
        .continue_token
        .as_deref()
        .and_then(|t| list::decode_continue(t).ok())
        .map(|(_, key)| key);
    // The page's last key when more follow (the continue token's key).
    let until = page
        .continue_token
        .as_deref()
        .and_then(|t| list::decode_continue(t).ok())
        .map(|(_, key)| key);
    let mut extra = Vec::new();
    for (name, oldest) in store.namespaces_in_use() {
        if after.as_deref().is_some_and(|a| name.as_str() <= a)
            || until.as_deref().is_some_and(|u| name.as_str() > u)
            || page.items.iter().any(|o| o.name == name)
            || store.namespace_object_exists(&name)
        {
            continue;
        }
        let ns = implied(&name, &oldest)?;
        if list::selects(&q.label_selector, &q.field_selector, &ns) {
            extra.push(ns);
        }
    }
    if extra.is_empty() {
        return Ok(page);
    }
    let mut items = page.items;
    items.extend(extra);
    items.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(ListedPage { items, ..page })
}

/// Before a PATCH or PUT of namespace `name` (`ridx`: the namespaces resource): an implied
/// namespace is created, so that the write changes a stored object.
///
/// # Errors
/// The create's errors.
pub fn materialize(store: &Store, ridx: usize, name: &str) -> Result<(), ApiError> {
    if store.get_at(ridx, None, name).is_some() {
        return Ok(());
    }
    let Some(ns) = get_implied(store, name)? else {
        return Ok(());
    };
    let mut v = ns
        .to_value()
        .map_err(|e| ApiError::internal(format!("implied namespace is not JSON: {e}")))?;
    if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        for k in ["resourceVersion", "uid", "creationTimestamp"] {
            m.remove(k);
        }
    }
    match store.create_at(ridx, None, v) {
        // Created meanwhile by another request: the write goes to that one.
        Err(e) if e.code == 409 => Ok(()),
        other => other.map(|_| ()),
    }
}

/// Deletes every object in namespace `name`, as Kubernetes' namespace controller does once a
/// namespace is deleted (here at once, within the request; an object with finalizers is only
/// marked for deletion). Returns how many objects were deleted or marked.
///
/// # Errors
/// A delete's error other than 404 (an object deleted meanwhile).
pub fn delete_contents(store: &Store, name: &str) -> Result<usize, ApiError> {
    let mut n = 0;
    for (ridx, def) in store.resources().iter().enumerate() {
        if !def.namespaced {
            continue;
        }
        let page = store.list_page(ridx, Some(name), None, None, 0, |_| true)?;
        for o in &page.items {
            match store.delete_at(ridx, Some(name), &o.name, None, None) {
                Ok(_) => n += 1,
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(n)
}

/// The DELETE of an implied namespace: its objects are deleted (so it no longer exists) and
/// the answer is the namespace as it was shown, `Terminating`, with a `deletionTimestamp`.
/// `None` when `name` is not implied (stored, or not there at all).
///
/// # Errors
/// As [`delete_contents`] and [`implied`].
pub fn delete_implied(
    store: &Store,
    ridx: usize,
    name: &str,
) -> Result<Option<Arc<StoredObject>>, ApiError> {
    if store.get_at(ridx, None, name).is_some() {
        return Ok(None);
    }
    let Some(ns) = get_implied(store, name)? else {
        return Ok(None);
    };
    delete_contents(store, name)?;
    let mut v = ns
        .to_value()
        .map_err(|e| ApiError::internal(format!("implied namespace is not JSON: {e}")))?;
    v["metadata"]["deletionTimestamp"] = json!(crate::object::now_rfc3339());
    v["status"]["phase"] = json!("Terminating");
    StoredObject::from_value(&v, store.revision())
        .map(Some)
        .map_err(|e| ApiError::internal(format!("serialization failed: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn implied_namespaces_are_stable_active_namespaces() {
        let pod = StoredObject::from_value(
            &json!({"metadata": {"name": "p", "namespace": "ns-1", "creationTimestamp": "2026-01-01T00:00:00Z"}}),
            12,
        )
        .unwrap();
        let ns = implied("ns-1", &pod).unwrap();
        let v = ns.to_value().unwrap();
        assert_eq!(v["kind"], "Namespace");
        assert_eq!(v["metadata"]["resourceVersion"], "12");
        assert_eq!(v["metadata"]["creationTimestamp"], "2026-01-01T00:00:00Z");
        assert_eq!(
            v["metadata"]["labels"]["kubernetes.io/metadata.name"],
            "ns-1"
        );
        assert_eq!(v["status"]["phase"], "Active");
        assert_eq!((ns.name.as_str(), ns.namespace.as_str()), ("ns-1", ""));
        assert_eq!(implied_uid("ns-1"), implied_uid("ns-1"));
        assert_ne!(implied_uid("ns-1"), implied_uid("ns-2"));
    }

    #[test]
    fn writes_to_an_implied_namespace_create_it_and_deletes_empty_it() {
        let store = Store::new(ResourceDef::builtins(), Default::default());
        let (pods, _) = store.resolve("pods").unwrap();
        let (cms, _) = store.resolve("configmaps").unwrap();
        let (nss, _) = store.resolve("namespaces").unwrap();
        for (r, ns, n) in [(pods, "ns-1", "p"), (cms, "ns-1", "c"), (pods, "ns-2", "q")] {
            store
                .create_at(r, Some(ns), json!({"metadata": {"name": n}}))
                .unwrap();
        }
        materialize(&store, nss, "nope").unwrap();
        assert!(!store.namespace_object_exists("nope"));
        materialize(&store, nss, "ns-2").unwrap();
        let stored = store.get_at(nss, None, "ns-2").unwrap().to_value().unwrap();
        assert_eq!(stored["status"]["phase"], "Active");
        assert_eq!(stored["metadata"]["resourceVersion"], "4");
        // A stored namespace is left to the caller's delete.
        assert!(delete_implied(&store, nss, "ns-2").unwrap().is_none());
        let gone = delete_implied(&store, nss, "ns-1").unwrap().unwrap();
        let gone = gone.to_value().unwrap();
        assert_eq!(gone["status"]["phase"], "Terminating");
        assert!(gone["metadata"]["deletionTimestamp"].is_string());
        assert_eq!(store.len_at(cms), 0);
        assert_eq!(store.len_at(pods), 1);
        assert!(get_implied(&store, "ns-1").unwrap().is_none());
        assert!(delete_implied(&store, nss, "ns-1").unwrap().is_none());
        assert_eq!(delete_contents(&store, "ns-2").unwrap(), 1);
        assert_eq!(store.len_at(pods), 0);
    }
}
