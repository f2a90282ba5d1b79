//! The object store: etcd semantics over in-memory maps.
//!
//! Properties:
//! 1. One global revision shared by all resources; every write bumps it by exactly one and the
//!    new value becomes the written object's `resourceVersion`.
//! 2. Every write appends one [`Event`] to a bounded history, so the history holds the
//!    contiguous revisions `compacted + 1 ..= revision`.
//! 3. Compaction (by count, by age, or forced) drops the oldest events; revisions at or below
//!    [`Store::compacted_revision`] can no longer be listed exactly or watched from (410 Gone).
//! 4. Objects are serialized once per write ([`StoredObject`]); reads only clone `Arc`s.
//!
//! All methods are synchronous and take one lock; the only async method waits for a revision.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use serde_json::{Map, Value, json};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::object::{StoredObject, new_uid, now_rfc3339, object_key};
use crate::resource::ResourceDef;
use crate::status::ApiError;
use crate::validate;

/// Errors of the store are API errors: each maps to the `Status` a client would see.
pub type StoreError = ApiError;

/// The type of a watch event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// The object was created.
    Added,
    /// The object was changed.
    Modified,
    /// The object was removed.
    Deleted,
}

impl EventType {
    /// The wire name: `ADDED`, `MODIFIED`, `DELETED`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One write in the history.
#[derive(Debug, Clone)]
pub struct Event {
    /// The revision of this write.
    pub revision: u64,
    /// When it was written (for age-based compaction).
    pub at: Instant,
    /// Index of the resource in the registry.
    pub resource: usize,
    /// Event type.
    pub kind: EventType,
    /// The object after the write (for a delete: the last state, with the delete's revision).
    pub object: Arc<StoredObject>,
    /// The object before the write, if it existed.
    pub prev: Option<Arc<StoredObject>>,
}

/// History bounds.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// Keep at most this many events.
    pub max_events: usize,
    /// Drop events older than this (checked on each write).
    pub max_age: Duration,
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            max_events: 100_000,
            max_age: Duration::from_secs(300),
        }
    }
}

/// How to apply a PATCH body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    /// `application/merge-patch+json` (RFC 7386).
    Merge,
    /// `application/json-patch+json` (RFC 6902).
    Json,
    /// `application/strategic-merge-patch+json`: applied as a merge patch (lists replaced).
    StrategicMerge,
    /// `application/apply-patch+yaml` with a JSON body: applied as a merge patch.
    Apply,
}

/// A page of a list: objects at one revision.
#[derive(Debug, Clone)]
pub struct ListPage {
    /// The revision the page was read at.
    pub revision: u64,
    /// Matching objects in key order.
    pub items: Vec<Arc<StoredObject>>,
    /// Key of the last item when more keys follow.
    pub more_after: Option<String>,
}

#[derive(Debug)]
struct Inner {
    revision: u64,
    compacted: u64,
    resources: Vec<Arc<ResourceDef>>,
    objects: Vec<BTreeMap<String, Arc<StoredObject>>>,
    history: VecDeque<Event>,
    config: StoreConfig,
}

/// The shared object store. Cheap to clone; all clones share state.
#[derive(Debug, Clone)]
pub struct Store {
    inner: Arc<RwLock<Inner>>,
    rev_tx: Arc<watch::Sender<u64>>,
}

fn meta_mut(obj: &mut Value) -> Result<&mut Map<String, Value>, ApiError> {
    let o = obj
        .as_object_mut()
        .ok_or_else(|| ApiError::bad_request("the object must be a JSON object"))?;
    let m = o.entry("metadata").or_insert_with(|| json!({}));
    m.as_object_mut()
        .ok_or_else(|| ApiError::bad_request("metadata must be an object"))
}

fn meta_str<'a>(obj: &'a Value, k: &str) -> Option<&'a str> {
    obj.get("metadata")?.get(k)?.as_str()
}

fn spec_part(obj: &Value) -> Value {
    let mut o = obj.as_object().cloned().unwrap_or_default();
    for k in ["metadata", "status", "kind", "apiVersion"] {
        o.remove(k);
    }
    Value::Object(o)
}

fn has_finalizers(obj: &Value) -> bool {
    obj.get("metadata")
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty())
}

fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..5)
        .map(|_| ALPHABET[rand::random_range(0..ALPHABET.len())] as char)
        .collect()
}

fn ser_err(e: serde_json::Error) -> ApiError {
    ApiError::internal(format!("serialization failed: {e}"))
}

impl Store {
    /// A store serving `resources`.
    pub fn new(resources: Vec<ResourceDef>, config: StoreConfig) -> Self {
        let objects = resources.iter().map(|_| BTreeMap::new()).collect();
        let (rev_tx, _) = watch::channel(0);
        Self {
            inner: Arc::new(RwLock::new(Inner {
                revision: 0,
                compacted: 0,
                resources: resources.into_iter().map(Arc::new).collect(),
                objects,
                history: VecDeque::new(),
                config,
            })),
            rev_tx: Arc::new(rev_tx),
        }
    }

    /// Registers another resource (e.g. a custom resource). Registering the same
    /// group/version/plural again is a no-op.
    pub fn register(&self, def: ResourceDef) {
        let mut g = self.inner.write();
        if g.resources
            .iter()
            .any(|r| r.group == def.group && r.version == def.version && r.plural == def.plural)
        {
            return;
        }
        g.resources.push(Arc::new(def));
        g.objects.push(BTreeMap::new());
    }

    /// All registered resources.
    pub fn resources(&self) -> Vec<ResourceDef> {
        self.inner
            .read()
            .resources
            .iter()
            .map(|r| (**r).clone())
            .collect()
    }

    /// Resolves a resource name (`pods`, `deployments.apps`, `apps/v1/deployments`, `Deployment`).
    ///
    /// # Errors
    /// 404 NotFound when no registered resource matches.
    pub fn resolve(&self, name: &str) -> Result<(usize, ResourceDef), ApiError> {
        let g = self.inner.read();
        g.resources
            .iter()
            .enumerate()
            .find(|(_, r)| r.matches_name(name))
            .map(|(i, r)| (i, (**r).clone()))
            .ok_or_else(|| ApiError::unknown_path(name))
    }

    /// Finds a resource by group, version and plural.
    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<(usize, ResourceDef)> {
        let g = self.inner.read();
        g.resources
            .iter()
            .enumerate()
            .find(|(_, r)| r.group == group && r.version == version && r.plural == plural)
            .map(|(i, r)| (i, (**r).clone()))
    }

    /// The current revision (the resourceVersion of the latest write).
    pub fn revision(&self) -> u64 {
        self.inner.read().revision
    }

    /// Revisions at or below this one have been compacted away.
    pub fn compacted_revision(&self) -> u64 {
        self.inner.read().compacted
    }

    /// A receiver that sees every new revision.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.rev_tx.subscribe()
    }

    /// Waits until the revision reaches `rev`; returns whether it did within `timeout`.
    ///
    /// # Cancel safety
    /// Cancel safe: it only observes.
    pub async fn wait_for_revision(&self, rev: u64, timeout: Duration) -> bool {
        let mut rx = self.subscribe();
        tokio::time::timeout(timeout, rx.wait_for(|r| *r >= rev))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// Compacts the history: drops every event at or below `rev` (capped at the current
    /// revision). Returns the new compacted revision.
    pub fn compact(&self, rev: u64) -> u64 {
        let mut g = self.inner.write();
        let rev = rev.min(g.revision);
        while g.history.front().is_some_and(|e| e.revision <= rev) {
            g.history.pop_front();
        }
        g.compacted = g.compacted.max(rev);
        g.compacted
    }

    /// Compacts everything up to the current revision.
    pub fn compact_all(&self) -> u64 {
        self.compact(u64::MAX)
    }

    fn commit(
        &self,
        g: &mut Inner,
        ridx: usize,
        kind: EventType,
        object: Arc<StoredObject>,
        prev: Option<Arc<StoredObject>>,
    ) {
        Self::record(g, ridx, kind, object, prev, Instant::now());
        self.rev_tx.send_replace(g.revision);
    }

    /// Applies a write to the maps and the history (the caller has set `g.revision`).
    fn record(
        g: &mut Inner,
        ridx: usize,
        kind: EventType,
        object: Arc<StoredObject>,
        prev: Option<Arc<StoredObject>>,
        now: Instant,
    ) {
        let key = object.key();
        match kind {
            EventType::Deleted => {
                g.objects[ridx].remove(&key);
            }
            _ => {
                g.objects[ridx].insert(key, object.clone());
            }
        }
        g.history.push_back(Event {
            revision: g.revision,
            at: now,
            resource: ridx,
            kind,
            object,
            prev,
        });
        let (max_events, max_age) = (g.config.max_events, g.config.max_age);
        while g.history.len() > max_events
            || g.history
                .front()
                .is_some_and(|e| now.duration_since(e.at) > max_age)
        {
            if let Some(e) = g.history.pop_front() {
                g.compacted = e.revision;
            }
        }
    }

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
        let stored = StoredObject::from_value(&obj, rev).map_err(ser_err)?;
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
                        json_patch::merge(&mut v, patch);
                    }
                }
                validate::patched(&def, name, &v)?;
                Ok(v)
            },
            status_only,
        )
    }

    fn modify(
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

    fn try_modify(
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
        let stored = StoredObject::from_value(&out, rev).map_err(ser_err)?;
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
        let stored = StoredObject::from_value(&v, rev).map_err(ser_err)?;
        g.revision = rev;
        self.commit(&mut g, ridx, kind, stored.clone(), Some(current));
        Ok(stored)
    }

    /// The current version of one object.
    pub fn get_at(
        &self,
        ridx: usize,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Arc<StoredObject>> {
        let g = self.inner.read();
        let ns = match g.resources.get(ridx) {
            Some(d) if d.namespaced => namespace.unwrap_or("default"),
            _ => "",
        };
        g.objects.get(ridx)?.get(&object_key(ns, name)).cloned()
    }

    fn def(&self, ridx: usize) -> Result<Arc<ResourceDef>, ApiError> {
        self.inner
            .read()
            .resources
            .get(ridx)
            .cloned()
            .ok_or_else(|| ApiError::internal("unknown resource index"))
    }

    /// Reads one page of a list.
    ///
    /// `at`: the revision to read at (`None` = current); it must not be compacted (else 410
    /// Gone) nor in the future (else 504). `after`: exclusive start key (from a continue
    /// token). `limit` 0 = no limit. `filter` selects items.
    ///
    /// # Errors
    /// 410 Gone for a compacted revision, 504 for a future one.
    pub fn list_page(
        &self,
        ridx: usize,
        namespace: Option<&str>,
        at: Option<u64>,
        after: Option<&str>,
        limit: usize,
        mut filter: impl FnMut(&StoredObject) -> bool,
    ) -> Result<ListPage, ApiError> {
        let g = self.inner.read();
        let objects = g
            .objects
            .get(ridx)
            .ok_or_else(|| ApiError::internal("unknown resource index"))?;
        let revision = at.unwrap_or(g.revision);
        if revision > g.revision {
            return Err(ApiError::rv_too_large(revision, g.revision));
        }
        if revision < g.compacted {
            return Err(ApiError::too_old(revision));
        }
        // The state at `revision` = current state overridden by the pre-image of the first
        // later write of each key.
        let mut overlay: BTreeMap<String, Option<Arc<StoredObject>>> = BTreeMap::new();
        if revision < g.revision {
            let skip = (revision - g.compacted) as usize;
            for e in g.history.iter().skip(skip) {
                if e.resource == ridx {
                    overlay
                        .entry(e.object.key())
                        .or_insert_with(|| e.prev.clone());
                }
            }
        }
        let prefix = namespace.map(|n| format!("{n}/")).unwrap_or_default();
        let start: Bound<&str> = match after {
            Some(a) if a >= prefix.as_str() => Bound::Excluded(a),
            _ => Bound::Included(prefix.as_str()),
        };
        let range = (start, Bound::Unbounded);
        let mut cur = objects.range::<str, _>(range).peekable();
        let mut ov = overlay.range::<str, _>(range).peekable();
        let mut items = Vec::new();
        let mut more_after = None;
        loop {
            let next: Option<(&String, Option<&Arc<StoredObject>>)> = match (cur.peek(), ov.peek())
            {
                (None, None) => None,
                (Some(_), None) => cur.next().map(|(k2, v)| (k2, Some(v))),
                (None, Some(_)) => ov.next().map(|(k, v)| (k, v.as_ref())),
                (Some((ck, _)), Some((ok, _))) => {
                    if ck < ok {
                        cur.next().map(|(k, v)| (k, Some(v)))
                    } else if ok < ck {
                        ov.next().map(|(k, v)| (k, v.as_ref()))
                    } else {
                        cur.next();
                        ov.next().map(|(k, v)| (k, v.as_ref()))
                    }
                }
            };
            let Some((key, obj)) = next else { break };
            if !key.starts_with(prefix.as_str()) {
                break;
            }
            let Some(obj) = obj else { continue };
            if limit > 0 && items.len() >= limit {
                more_after = items.last().map(|o: &Arc<StoredObject>| o.key());
                break;
            }
            if filter(obj) {
                items.push(obj.clone());
            }
        }
        Ok(ListPage {
            revision,
            items,
            more_after,
        })
    }

    /// Events after `rev` (at most `max`), in revision order.
    ///
    /// # Errors
    /// 410 Gone when events after `rev` have been compacted away.
    pub fn events_after(&self, rev: u64, max: usize) -> Result<Vec<Event>, ApiError> {
        let g = self.inner.read();
        if rev < g.compacted {
            return Err(ApiError::too_old(rev));
        }
        let skip = (rev - g.compacted) as usize;
        Ok(g.history.iter().skip(skip).take(max).cloned().collect())
    }

    /// Every current object of a resource (all namespaces, key order) and the revision.
    pub fn snapshot_at(&self, ridx: usize) -> (u64, Vec<Arc<StoredObject>>) {
        let g = self.inner.read();
        let items = g
            .objects
            .get(ridx)
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default();
        (g.revision, items)
    }

    /// Number of objects of a resource.
    pub fn len_at(&self, ridx: usize) -> usize {
        self.inner.read().objects.get(ridx).map_or(0, BTreeMap::len)
    }
}

enum Retry {
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

fn resolve_namespace(
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

fn set_type_meta(def: &ResourceDef, obj: &mut Value) {
    if let Some(o) = obj.as_object_mut() {
        o.insert("apiVersion".into(), json!(def.api_version()));
        o.insert("kind".into(), json!(def.kind));
    }
}

fn set_rv(obj: &mut Value, rev: u64) -> Result<(), ApiError> {
    meta_mut(obj)?.insert("resourceVersion".into(), json!(rev.to_string()));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(max_events: usize) -> (Store, usize) {
        let s = Store::new(
            ResourceDef::builtins(),
            StoreConfig {
                max_events,
                ..StoreConfig::default()
            },
        );
        let (ridx, _) = s.resolve("configmaps").unwrap();
        (s, ridx)
    }

    fn cm(name: &str) -> Value {
        json!({"metadata": {"name": name}})
    }

    #[test]
    fn every_write_bumps_the_one_global_revision() {
        let (s, cms) = store(100);
        let (pods, _) = s.resolve("pods").unwrap();
        assert_eq!(s.create_at(cms, Some("a"), cm("x")).unwrap().revision, 1);
        assert_eq!(s.create_at(pods, Some("a"), cm("x")).unwrap().revision, 2);
        assert_eq!(
            s.delete_at(cms, Some("a"), "x", None, None)
                .unwrap()
                .revision,
            3
        );
        assert_eq!(s.revision(), 3);
        let evs = s.events_after(0, 10).unwrap();
        assert_eq!(
            evs.iter().map(|e| e.revision).collect::<Vec<_>>(),
            vec![1, 2, 3]
        );
        assert_eq!(evs[2].kind, EventType::Deleted);
    }

    #[test]
    fn history_is_bounded_and_compaction_makes_old_revisions_gone() {
        let (s, cms) = store(3);
        for i in 0..5 {
            s.create_at(cms, Some("a"), cm(&format!("c{i}"))).unwrap();
        }
        assert_eq!(s.compacted_revision(), 2);
        assert_eq!(s.events_after(1, 10).unwrap_err().code, 410);
        assert_eq!(s.events_after(2, 10).unwrap().len(), 3);
        assert_eq!(
            s.list_page(cms, None, Some(1), None, 0, |_| true)
                .unwrap_err()
                .code,
            410
        );
        assert_eq!(
            s.list_page(cms, None, Some(3), None, 0, |_| true)
                .unwrap()
                .items
                .len(),
            3
        );
        s.compact_all();
        assert_eq!(s.events_after(4, 10).unwrap_err().code, 410);
        assert!(s.events_after(5, 10).unwrap().is_empty());
    }

    #[test]
    fn lists_at_a_past_revision_undo_later_writes() {
        let (s, cms) = store(100);
        s.create_at(cms, Some("a"), cm("x")).unwrap();
        s.create_at(cms, Some("a"), cm("y")).unwrap();
        s.patch_at(
            cms,
            Some("a"),
            "x",
            PatchType::Merge,
            &json!({"data": {"k": "v"}}),
            false,
        )
        .unwrap();
        s.delete_at(cms, Some("a"), "y", None, None).unwrap();
        s.create_at(cms, Some("a"), cm("z")).unwrap();
        let at2 = s.list_page(cms, None, Some(2), None, 0, |_| true).unwrap();
        let keys: Vec<(String, u64)> = at2.items.iter().map(|o| (o.key(), o.revision)).collect();
        assert_eq!(keys, vec![("a/x".into(), 1), ("a/y".into(), 2)]);
        let page = s
            .list_page(cms, None, Some(2), Some("a/x"), 1, |_| true)
            .unwrap();
        assert_eq!(page.items[0].key(), "a/y");
        assert_eq!(page.more_after, None);
        let first = s
            .list_page(cms, Some("a"), None, None, 1, |_| true)
            .unwrap();
        assert_eq!(first.more_after.as_deref(), Some("a/x"));
        assert!(
            s.list_page(cms, Some("b"), None, None, 0, |_| true)
                .unwrap()
                .items
                .is_empty()
        );
        assert_eq!(
            s.list_page(cms, None, Some(99), None, 0, |_| true)
                .unwrap_err()
                .code,
            504
        );
    }

    #[test]
    fn identical_updates_write_nothing() {
        let (s, cms) = store(100);
        let o = s.create_at(cms, Some("a"), cm("x")).unwrap();
        let same = s
            .update_at(cms, Some("a"), "x", o.to_value().unwrap(), false)
            .unwrap();
        assert_eq!(same.revision, 1);
        assert_eq!(s.revision(), 1);
    }

    #[test]
    fn finalizers_hold_a_deleted_object_until_the_last_is_removed() {
        let (s, cms) = store(100);
        s.create_at(
            cms,
            Some("a"),
            json!({"metadata": {"name": "x", "finalizers": ["f1", "f2"]}}),
        )
        .unwrap();
        let marked = s.delete_at(cms, Some("a"), "x", None, None).unwrap();
        assert!(marked.to_value().unwrap()["metadata"]["deletionTimestamp"].is_string());
        assert!(s.get_at(cms, Some("a"), "x").is_some());
        s.patch_at(
            cms,
            Some("a"),
            "x",
            PatchType::Merge,
            &json!({"metadata": {"finalizers": ["f2"]}}),
            false,
        )
        .unwrap();
        assert!(s.get_at(cms, Some("a"), "x").is_some());
        s.patch_at(
            cms,
            Some("a"),
            "x",
            PatchType::Merge,
            &json!({"metadata": {"finalizers": []}}),
            false,
        )
        .unwrap();
        assert!(s.get_at(cms, Some("a"), "x").is_none());
        assert_eq!(s.events_after(3, 10).unwrap()[0].kind, EventType::Deleted);
    }
}
