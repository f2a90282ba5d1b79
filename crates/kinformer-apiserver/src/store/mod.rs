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
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use serde_json::{Map, Value, json};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::object::StoredObject;
use crate::resource::ResourceDef;
use crate::status::ApiError;

mod read;
#[cfg(test)]
mod tests;
mod write;

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
    /// Encode each written object of a built-in kind in protobuf at the write, as it is
    /// serialized in JSON, instead of at the first protobuf read (see
    /// [`StoredObject::protobuf`]): protobuf lists and watches then only copy bytes, as JSON
    /// ones do.
    pub encode_protobuf: bool,
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            max_events: 100_000,
            max_age: Duration::from_secs(300),
            encode_protobuf: false,
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
pub(super) struct Inner {
    pub(super) revision: u64,
    pub(super) compacted: u64,
    pub(super) resources: Vec<Arc<ResourceDef>>,
    pub(super) objects: Vec<BTreeMap<String, Arc<StoredObject>>>,
    pub(super) history: VecDeque<Event>,
    pub(super) config: StoreConfig,
}

/// The shared object store. Cheap to clone; all clones share state.
#[derive(Debug, Clone)]
pub struct Store {
    pub(super) inner: Arc<RwLock<Inner>>,
    pub(super) rev_tx: Arc<watch::Sender<u64>>,
}

pub(super) fn meta_mut(obj: &mut Value) -> Result<&mut Map<String, Value>, ApiError> {
    let o = obj
        .as_object_mut()
        .ok_or_else(|| ApiError::bad_request("the object must be a JSON object"))?;
    let m = o.entry("metadata").or_insert_with(|| json!({}));
    m.as_object_mut()
        .ok_or_else(|| ApiError::bad_request("metadata must be an object"))
}

pub(super) fn meta_str<'a>(obj: &'a Value, k: &str) -> Option<&'a str> {
    obj.get("metadata")?.get(k)?.as_str()
}

pub(super) fn spec_part(obj: &Value) -> Value {
    let mut o = obj.as_object().cloned().unwrap_or_default();
    for k in ["metadata", "status", "kind", "apiVersion"] {
        o.remove(k);
    }
    Value::Object(o)
}

pub(super) fn has_finalizers(obj: &Value) -> bool {
    obj.get("metadata")
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty())
}

pub(super) fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..5)
        .map(|_| ALPHABET[rand::random_range(0..ALPHABET.len())] as char)
        .collect()
}

pub(super) fn ser_err(e: serde_json::Error) -> ApiError {
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

    /// The stored version of a written object `v` at revision `rev`, its protobuf form encoded
    /// from `v` when the store encodes at the write (a failure is kept with it, and logged by
    /// [`Store::record`]).
    pub(super) fn stored(
        g: &Inner,
        ridx: usize,
        v: &Value,
        rev: u64,
    ) -> Result<Arc<StoredObject>, ApiError> {
        let stored = StoredObject::from_value(v, rev).map_err(ser_err)?;
        if let Some((api_version, kind)) = Self::encoded_at_write(g, ridx) {
            // An error stays with the object; `record` logs it.
            let _ = stored.protobuf_from_value(v, &api_version, kind);
        }
        Ok(stored)
    }

    /// The `apiVersion` and `kind` to encode resource `ridx`'s writes in protobuf as, when the
    /// store encodes at the write ([`StoreConfig::encode_protobuf`]) and the kind has a schema.
    fn encoded_at_write(g: &Inner, ridx: usize) -> Option<(String, &str)> {
        let def = g.resources.get(ridx).filter(|_| g.config.encode_protobuf)?;
        let api_version = def.api_version();
        kinformer_protobuf::has_schema(&api_version, &def.kind).then_some((api_version, &def.kind))
    }

    pub(super) fn commit(
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
    pub(super) fn record(
        g: &mut Inner,
        ridx: usize,
        kind: EventType,
        object: Arc<StoredObject>,
        prev: Option<Arc<StoredObject>>,
        now: Instant,
    ) {
        // Objects made by `Store::stored` come encoded already; the others (seeded from
        // their parts) are encoded here.
        if object.encoded_protobuf().is_none()
            && let Some((api_version, kind)) = Self::encoded_at_write(g, ridx)
            && let Err(e) = object.protobuf(&api_version, kind)
        {
            tracing::warn!(
                "{api_version} {kind} {} has no protobuf form: {e}",
                object.key()
            );
        }
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
}
