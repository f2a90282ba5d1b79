//! Deltas: one recorded change, as the delta queues hand them to the informer's consumer stage.

use std::fmt;
use std::sync::Arc;

use kube_core::Resource;

use crate::cache::meta::{DeletedObject, KeyError, ObjectKey, meta_namespace_key};

/// The kind of a [`Delta`], client-go's `DeltaType` plus RealFIFO's atomic kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeltaType {
    /// A watch `ADDED`.
    Added,
    /// A watch `MODIFIED`.
    Updated,
    /// A watch `DELETED`, or a deletion inferred on relist (a tombstone).
    Deleted,
    /// An object found by a relist.
    Replaced,
    /// A periodic resync of a known object.
    Sync,
    /// An atomic relist (RealFIFO): the complete new content.
    ReplacedAll,
    /// An atomic resync (RealFIFO) of every stored object.
    SyncAll,
    /// A bookmark (RealFIFO, when enabled).
    Bookmark,
}

/// One change. Per-object kinds carry the object; tombstones appear only in `Deleted`.
pub enum Delta<K> {
    /// The object was added.
    Added(Arc<K>),
    /// The object was modified.
    Updated(Arc<K>),
    /// The object was deleted: its final state, or a tombstone.
    Deleted(DeletedObject<K>),
    /// The object was found by a relist.
    Replaced(Arc<K>),
    /// A resync of the object as the consumer knew it.
    Sync(Arc<K>),
    /// A relist in atomic mode: the consumer replaces its whole store with `objects`.
    ReplacedAll {
        /// The list's resource version.
        resource_version: String,
        /// The complete list, in list order.
        objects: Vec<Arc<K>>,
    },
    /// A resync in atomic mode: every stored object is re-delivered.
    SyncAll,
    /// A bookmark advanced the resource version.
    Bookmark {
        /// The new resource version.
        resource_version: String,
    },
}

impl<K> Clone for Delta<K> {
    fn clone(&self) -> Self {
        match self {
            Delta::Added(o) => Delta::Added(Arc::clone(o)),
            Delta::Updated(o) => Delta::Updated(Arc::clone(o)),
            Delta::Deleted(d) => Delta::Deleted(d.clone()),
            Delta::Replaced(o) => Delta::Replaced(Arc::clone(o)),
            Delta::Sync(o) => Delta::Sync(Arc::clone(o)),
            Delta::ReplacedAll {
                resource_version,
                objects,
            } => Delta::ReplacedAll {
                resource_version: resource_version.clone(),
                objects: objects.clone(),
            },
            Delta::SyncAll => Delta::SyncAll,
            Delta::Bookmark { resource_version } => Delta::Bookmark {
                resource_version: resource_version.clone(),
            },
        }
    }
}

impl<K> fmt::Debug for Delta<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Delta::Deleted(d) if d.is_tombstone() => f.write_str("Deleted(tombstone)"),
            Delta::ReplacedAll {
                resource_version,
                objects,
            } => write!(
                f,
                "ReplacedAll(rv={resource_version}, {} objects)",
                objects.len()
            ),
            Delta::Bookmark { resource_version } => write!(f, "Bookmark({resource_version})"),
            other => write!(f, "{:?}", other.delta_type()),
        }
    }
}

impl<K> Delta<K> {
    /// The kind of this delta.
    pub fn delta_type(&self) -> DeltaType {
        match self {
            Delta::Added(_) => DeltaType::Added,
            Delta::Updated(_) => DeltaType::Updated,
            Delta::Deleted(_) => DeltaType::Deleted,
            Delta::Replaced(_) => DeltaType::Replaced,
            Delta::Sync(_) => DeltaType::Sync,
            Delta::ReplacedAll { .. } => DeltaType::ReplacedAll,
            Delta::SyncAll => DeltaType::SyncAll,
            Delta::Bookmark { .. } => DeltaType::Bookmark,
        }
    }

    /// The object of a per-object delta (the last known state for a tombstone).
    pub fn object(&self) -> Option<&Arc<K>> {
        match self {
            Delta::Added(o) | Delta::Updated(o) | Delta::Replaced(o) | Delta::Sync(o) => Some(o),
            Delta::Deleted(d) => Some(d.object()),
            _ => None,
        }
    }

    /// True for a `Deleted` that carries a tombstone.
    pub fn is_tombstone(&self) -> bool {
        matches!(self, Delta::Deleted(d) if d.is_tombstone())
    }
}

impl<K: Resource> Delta<K> {
    /// The key of a per-object delta; `None` for `ReplacedAll`, `SyncAll` and `Bookmark`.
    pub fn key(&self) -> Option<Result<ObjectKey, KeyError>> {
        match self {
            Delta::Deleted(d) => Some(d.key()),
            Delta::Added(o) | Delta::Updated(o) | Delta::Replaced(o) | Delta::Sync(o) => {
                Some(meta_namespace_key(o.as_ref()))
            }
            _ => None,
        }
    }
}
