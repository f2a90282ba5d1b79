//! Writes: create, update, patch and delete, each one revision.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use tokio::time::Instant;

use crate::object::{StoredObject, new_uid, now_rfc3339, object_key};
use crate::resource::ResourceDef;
use crate::status::ApiError;
use crate::validate;

use super::*;

impl Store {
    /// Creates `n` objects under one lock, each with the next revision: `make(i, revision)`
    /// returns the complete stored object (with server fields already set). The fast path for
    /// seeding; every object is recorded as an ADDED event like any create.
    ///
    /// # Errors
    /// 409 AlreadyExists for the first existing key (objects before it stay created).
    pub fn create_bulk(
        &self,
        ridx: usize,
        n: usize,
        mut make: impl FnMut(usize, u64) -> Arc<StoredObject>,
    ) -> Result<(), ApiError> {
        let def = self.def(ridx)?;
        let mut g = self.inner.write();
        let now = Instant::now();
        let mut result = Ok(());
        for i in 0..n {
            let rev = g.revision + 1;
            let obj = make(i, rev);
            if g.objects[ridx].contains_key(&obj.key()) {
                result = Err(ApiError::already_exists(&def.group, &def.plural, &obj.name));
                break;
            }
            g.revision = rev;
            Self::record(&mut g, ridx, EventType::Added, obj, None, now);
        }
        self.rev_tx.send_replace(g.revision);
        result
    }

    /// Creates an object. `namespace` (from the URL) wins over an absent body namespace; a
    /// different body namespace is a 400. Sets uid, creationTimestamp, generation,
    /// resourceVersion, kind and apiVersion; supports `generateName`.
    ///
    /// # Errors
    /// 400 for a malformed object or namespace mismatch, 422 without a name, 409 AlreadyExists.
    pub fn create_at(
        &self,
        ridx: usize,
        namespace: Option<&str>,
        mut obj: Value,
    ) -> Result<Arc<StoredObject>, ApiError> {
        let def = self.def(ridx)?;
        validate::body(&def, &obj)?;
        let meta = meta_mut(&mut obj)?;
        let ns = resolve_namespace(&def, namespace, meta)?;
        let mut name = meta
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if name.is_empty() {
            match meta.get("generateName").and_then(Value::as_str) {
                Some(prefix) if !prefix.is_empty() => name = format!("{prefix}{}", random_suffix()),
                _ => {
                    return Err(ApiError::invalid(
                        &def.kind,
                        &def.group,
                        "",
                        "metadata.name",
                        "Required value: name or generateName is required",
                    ));
                }
            }
        }
        validate::name(&def, &name)?;
        if def.namespaced {
            validate::namespace(&def, &name, &ns)?;
        }
        meta.insert("name".into(), json!(name));
        if def.namespaced {
            meta.insert("namespace".into(), json!(ns));
        } else {
            meta.remove("namespace");
        }
        meta.insert("uid".into(), json!(new_uid()));
        meta.insert("creationTimestamp".into(), json!(now_rfc3339()));
        meta.insert("generation".into(), json!(1));
        meta.remove("deletionTimestamp");
        meta.remove("deletionGracePeriodSeconds");
        set_type_meta(&def, &mut obj);
        validate::labels(&def, &name, &obj)?;
        let mut g = self.inner.write();
        let key = object_key(&ns, &name);
        if g.objects[ridx].contains_key(&key) {
            return Err(ApiError::already_exists(&def.group, &def.plural, &name));
        }
        let rev = g.revision + 1;
        set_rv(&mut obj, rev)?;
        let stored = Self::stored(&g, ridx, &obj, rev)?;
        validate::size(stored.bytes.len())?;
        g.revision = rev;
        self.commit(&mut g, ridx, EventType::Added, stored.clone(), None);
        Ok(stored)
    }

    /// Replaces an object (PUT). A non-empty `metadata.resourceVersion` must equal the stored one
    /// (else 409 Conflict). With `status_only`, only `.status` is taken from `obj`; otherwise a
    /// resource with a status subresource keeps its stored status. An update that changes
    /// nothing writes nothing. Removing the last finalizer of an object being deleted deletes it.
    ///
    /// # Errors
    /// 404 NotFound, 409 Conflict, 400 for name/namespace mismatches.
    pub fn update_at(
        &self,
        ridx: usize,
        namespace: Option<&str>,
        name: &str,
        obj: Value,
        status_only: bool,
    ) -> Result<Arc<StoredObject>, ApiError> {
        let def = self.def(ridx)?;
        validate::body(&def, &obj)?;
        self.modify(ridx, namespace, name, |_| Ok(obj.clone()), status_only)
    }

    /// Applies a patch to an object, then writes it as [`Store::update_at`] does.
    ///
    /// # Errors
    /// 404 NotFound, 422 for a patch that cannot apply, 409 Conflict on a resourceVersion
    /// precondition in the patch.
    pub fn patch_at(
        &self,
        ridx: usize,
        namespace: Option<&str>,
        name: &str,
        kind: PatchType,
        patch: &Value,
        status_only: bool,
    ) -> Result<Arc<StoredObject>, ApiError> {
        let def = self.def(ridx)?;
        self.modify(
            ridx,
            namespace,
            name,
            |current| {
                let mut v = current;
                match kind {
                    PatchType::Json => {
                        let p: json_patch::Patch =
                            serde_json::from_value(patch.clone()).map_err(|e| {
                                ApiError::bad_request(format!("invalid JSON patch: {e}"))
                            })?;
                        json_patch::patch(&mut v, &p).map_err(|e| {
                            ApiError::new(
                                422,
                                "Invalid",
                                format!("the JSON patch could not be applied: {e}"),
                            )
                        })?;
                    }
                    PatchType::Merge | PatchType::StrategicMerge | PatchType::Apply => {
                        if !patch.is_object() {
                            return Err(ApiError::bad_request(
                                "a merge patch must be a JSON object",
                            ));
                        }
                        if kind == PatchType::StrategicMerge {
                            let p = match without_directives(patch) {
                                Value::Null => json!({}),
                                p => p,
                            };
                            json_patch::merge(&mut v, &p);
                        } else {
                            json_patch::merge(&mut v, patch);
                        }
                    }
                }
                validate::patched(&def, name, &v)?;
                Ok(v)
            },
            status_only,
        )
    }

    pub(super) fn modify(
        &self,
        ridx: usize,
        namespace: Option<&str>,
        name: &str,
        make: impl Fn(Value) -> Result<Value, ApiError>,
        status_only: bool,
    ) -> Result<Arc<StoredObject>, ApiError> {
        // An unconditional write that raced with another writer is retried on the new state.
        let mut attempts = 0;
        loop {
            match self.try_modify(ridx, namespace, name, &make, status_only) {
                Err(Retry::Again) if attempts < 16 => attempts += 1,
                Err(Retry::Again) => {
                    let def = self.def(ridx)?;
                    return Err(ApiError::conflict(&def.group, &def.plural, name));
                }
                Err(Retry::Fail(e)) => return Err(e),
                Ok(o) => return Ok(o),
            }
        }
    }

    pub(super) fn try_modify(
        &self,
        ridx: usize,
        namespace: Option<&str>,
        name: &str,
        make: &impl Fn(Value) -> Result<Value, ApiError>,
        status_only: bool,
    ) -> Result<Arc<StoredObject>, Retry> {
        let def = self.def(ridx)?;
        let ns = if def.namespaced {
            namespace.unwrap_or("default").to_string()
        } else {
            String::new()
        };
        let key = object_key(&ns, name);
        let old = self.inner.read().objects[ridx]
            .get(&key)
            .cloned()
            .ok_or_else(|| ApiError::not_found(&def.group, &def.plural, name))?;
        let old_v = old.to_value().map_err(ser_err)?;
        let mut new = make(old_v.clone())?;
        {
            let meta = meta_mut(&mut new)?;
            let body_name = meta.get("name").and_then(Value::as_str).unwrap_or(name);
            if body_name != name {
                return Err(ApiError::bad_request(format!("the name of the object ({body_name}) does not match the name on the URL ({name})")).into());
            }
            resolve_namespace(
                &def,
                Some(&ns).filter(|_| def.namespaced).map(String::as_str),
                meta,
            )?;
        }
        let requested_rv = meta_str(&new, "resourceVersion")
            .unwrap_or_default()
            .to_string();
        let mut out = if status_only {
            let mut o = old_v.clone();
            if let (Some(o), Some(s)) = (o.as_object_mut(), new.get("status")) {
                o.insert("status".into(), s.clone());
            }
            o
        } else {
            let mut n = new;
            if def.status_subresource
                && let Some(o) = n.as_object_mut()
            {
                match old_v.get("status") {
                    Some(s) => o.insert("status".into(), s.clone()),
                    None => o.remove("status"),
                };
            }
            n
        };
        {
            let old_meta = old_v.get("metadata").cloned().unwrap_or_default();
            let meta = meta_mut(&mut out)?;
            meta.insert("name".into(), json!(name));
            if def.namespaced {
                meta.insert("namespace".into(), json!(ns));
            } else {
                meta.remove("namespace");
            }
            for k in [
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
            ] {
                match old_meta.get(k) {
                    Some(v) => meta.insert(k.into(), v.clone()),
                    None => meta.remove(k),
                };
            }
            meta.insert("resourceVersion".into(), json!(old.revision.to_string()));
        }
        set_type_meta(&def, &mut out);
        validate::labels(&def, name, &out)?;
        if spec_part(&out) != spec_part(&old_v) {
            let gen_ = old_v
                .get("metadata")
                .and_then(|m| m.get("generation"))
                .and_then(Value::as_i64)
                .unwrap_or(0);
            meta_mut(&mut out)?.insert("generation".into(), json!(gen_ + 1));
        }
        let finished_deleting =
            meta_str(&out, "deletionTimestamp").is_some() && !has_finalizers(&out);
        let mut g = self.inner.write();
        let current = g.objects[ridx]
            .get(&key)
            .cloned()
            .ok_or_else(|| ApiError::not_found(&def.group, &def.plural, name))?;
        if !requested_rv.is_empty() && requested_rv != current.revision.to_string() {
            return Err(ApiError::conflict(&def.group, &def.plural, name).into());
        }
        if current.revision != old.revision {
            return Err(Retry::Again);
        }
        if out == old_v && !finished_deleting {
            return Ok(current);
        }
        let rev = g.revision + 1;
        set_rv(&mut out, rev)?;
        let stored = Self::stored(&g, ridx, &out, rev)?;
        validate::size(stored.bytes.len())?;
        g.revision = rev;
        let kind = if finished_deleting {
            EventType::Deleted
        } else {
            EventType::Modified
        };
        self.commit(&mut g, ridx, kind, stored.clone(), Some(current));
        Ok(stored)
    }

    /// Deletes an object. With finalizers it only sets `deletionTimestamp` (a MODIFIED event)
    /// and the object stays until an update removes the last finalizer. `precondition_rv` and
    /// `precondition_uid` come from `DeleteOptions.preconditions`.
    ///
    /// # Errors
    /// 404 NotFound, 409 Conflict on a failed precondition.
    pub fn delete_at(
        &self,
        ridx: usize,
        namespace: Option<&str>,
        name: &str,
        precondition_rv: Option<&str>,
        precondition_uid: Option<&str>,
    ) -> Result<Arc<StoredObject>, ApiError> {
        let def = self.def(ridx)?;
        let ns = if def.namespaced {
            namespace.unwrap_or("default").to_string()
        } else {
            String::new()
        };
        let key = object_key(&ns, name);
        let mut g = self.inner.write();
        let current = g.objects[ridx]
            .get(&key)
            .cloned()
            .ok_or_else(|| ApiError::not_found(&def.group, &def.plural, name))?;
        let mut v = current.to_value().map_err(ser_err)?;
        if let Some(rv) = precondition_rv
            && rv != current.revision.to_string()
        {
            return Err(ApiError::conflict(&def.group, &def.plural, name));
        }
        if let Some(uid) = precondition_uid
            && Some(uid) != meta_str(&v, "uid")
        {
            return Err(ApiError::conflict(&def.group, &def.plural, name));
        }
        let rev = g.revision + 1;
        let kind = if has_finalizers(&v) {
            if meta_str(&v, "deletionTimestamp").is_some() {
                return Ok(current);
            }
            let meta = meta_mut(&mut v)?;
            meta.insert("deletionTimestamp".into(), json!(now_rfc3339()));
            meta.insert("deletionGracePeriodSeconds".into(), json!(0));
            EventType::Modified
        } else {
            EventType::Deleted
        };
        set_rv(&mut v, rev)?;
        let stored = Self::stored(&g, ridx, &v, rev)?;
        g.revision = rev;
        self.commit(&mut g, ridx, kind, stored.clone(), Some(current));
        Ok(stored)
    }
}

pub(super) enum Retry {
    Again,
    Fail(ApiError),
}

impl From<ApiError> for Retry {
    fn from(e: ApiError) -> Self {
        Retry::Fail(e)
    }
}

impl From<serde_json::Error> for Retry {
    fn from(e: serde_json::Error) -> Self {
        Retry::Fail(ser_err(e))
    }
}

pub(super) fn resolve_namespace(
    def: &ResourceDef,
    url_ns: Option<&str>,
    meta: &mut Map<String, Value>,
) -> Result<String, ApiError> {
    if !def.namespaced {
        return Ok(String::new());
    }
    let body_ns = meta
        .get("namespace")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    match (url_ns, body_ns) {
        (Some(u), Some(b)) if u != b => Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        )),
        (Some(u), _) => Ok(u.to_string()),
        (None, Some(b)) => Ok(b.to_string()),
        (None, None) => Ok("default".to_string()),
    }
}

pub(super) fn set_type_meta(def: &ResourceDef, obj: &mut Value) {
    if let Some(o) = obj.as_object_mut() {
        o.insert("apiVersion".into(), json!(def.api_version()));
        o.insert("kind".into(), json!(def.kind));
    }
}

pub(super) fn set_rv(obj: &mut Value, rev: u64) -> Result<(), ApiError> {
    meta_mut(obj)?.insert("resourceVersion".into(), json!(rev.to_string()));
    Ok(())
}

/// A strategic merge patch as the merge patch this store applies: its directives
/// (`$setElementOrder/…`, `$retainKeys`, `$deleteFromPrimitiveList/…`, `$patch`) are not
/// fields, so they are dropped, except `$patch: delete`, which deletes its map (lists are
/// replaced whole, as in a merge patch).
fn without_directives(patch: &Value) -> Value {
    match patch {
        Value::Object(m) => {
            if m.get("$patch").and_then(Value::as_str) == Some("delete") {
                return Value::Null;
            }
            Value::Object(
                m.iter()
                    .filter(|(k, _)| !k.starts_with('$'))
                    .map(|(k, v)| (k.clone(), without_directives(v)))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(
            a.iter()
                .filter(|v| !v.as_object().is_some_and(|m| m.contains_key("$patch")))
                .map(without_directives)
                .collect(),
        ),
        other => other.clone(),
    }
}
