//! What the process loop tells handlers: add, update or delete of one object.

use std::sync::Arc;

use crate::cache::meta::DeletedObject;
use crate::cache::store::retire;

/// One event for the handlers, produced when a delta is applied to the indexer.
///
/// An `Update` whose old and new objects carry the same `resourceVersion` is a *sync* (from a
/// resync or a relist that found the object unchanged); the shared processor hands syncs only to
/// listeners whose resync period is due.
#[derive(Debug)]
pub enum Notification<K> {
    /// The object is new to the cache.
    Add {
        /// The object.
        obj: Arc<K>,
        /// True while the informer delivers its initial list (or replays the store to a
        /// handler added late).
        is_in_initial_list: bool,
    },
    /// The object replaced an older state in the cache.
    Update {
        /// The state the cache held before.
        old: Arc<K>,
        /// The new state.
        new: Arc<K>,
    },
    /// The object left the cache.
    Delete(DeletedObject<K>),
}

impl<K> Clone for Notification<K> {
    fn clone(&self) -> Self {
        match self {
            Notification::Add {
                obj,
                is_in_initial_list,
            } => Notification::Add {
                obj: Arc::clone(obj),
                is_in_initial_list: *is_in_initial_list,
            },
            Notification::Update { old, new } => Notification::Update {
                old: Arc::clone(old),
                new: Arc::clone(new),
            },
            Notification::Delete(d) => Notification::Delete(d.clone()),
        }
    }
}

impl<K: Send + Sync + 'static> Notification<K> {
    /// Releases a delivered notification: the state an update replaced and a deleted object,
    /// usually held by nothing else by then, are dropped on the indexer's dropping thread
    /// rather than piece by piece on the listener's.
    pub(crate) fn retire(self) {
        match self {
            Notification::Add { .. } => {}
            Notification::Update { old, .. } => retire(old),
            Notification::Delete(DeletedObject::Live(obj)) => retire(obj),
            Notification::Delete(DeletedObject::Tombstone(t)) => retire(t.obj),
        }
    }
}
