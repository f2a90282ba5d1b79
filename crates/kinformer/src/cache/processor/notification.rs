//! What the consumer stage tells handlers: add, update or delete of one object.

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
    /// Releases a delivered notification: every object it carries that nothing else holds —
    /// the state an update replaced, a deleted object, and with compact storage (which keeps
    /// only bytes) every delivered object — is dropped on the indexer's dropping thread rather
    /// than piece by piece on the listener's; an object still held (typed storage's current
    /// objects) costs a reference count. So a listener spends its time on delivery, not on
    /// freeing what it delivered (why, with E1C's figures: `docs/benchmarks.md`).
    pub(crate) fn retire(self) {
        match self {
            Notification::Add { obj, .. } => retire(obj),
            Notification::Update { old, new } => {
                retire(old);
                retire(new);
            }
            Notification::Delete(DeletedObject::Live(obj)) => retire(obj),
            Notification::Delete(DeletedObject::Tombstone(t)) => retire(t.obj),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;

    /// Records which object it was and the thread it is dropped on.
    struct Tracked(&'static str, mpsc::Sender<(&'static str, Option<String>)>);

    impl Drop for Tracked {
        fn drop(&mut self) {
            let thread = std::thread::current().name().map(str::to_owned);
            let _ = self.1.send((self.0, thread));
        }
    }

    /// Added and updated objects held by nothing else (as with compact storage, where the
    /// notification holds the last reference) go to the dropping thread, not dropped on the
    /// listener's. (When the dropping thread is behind, a batch is dropped where it was
    /// made, so the test asks that some of each kind went there.)
    #[test]
    fn delivered_objects_nothing_else_holds_are_dropped_off_the_listeners_thread() {
        let (tx, rx) = mpsc::channel();
        let listener = std::thread::Builder::new()
            .name("listener".into())
            .spawn(move || {
                // Full batches, whatever the thread had pending.
                for _ in 0..64 {
                    Notification::Add {
                        obj: Arc::new(Tracked("added", tx.clone())),
                        is_in_initial_list: false,
                    }
                    .retire();
                    Notification::Update {
                        old: Arc::new(Tracked("old", tx.clone())),
                        new: Arc::new(Tracked("new", tx.clone())),
                    }
                    .retire();
                }
            })
            .unwrap();
        listener.join().unwrap();
        let drops: Vec<(&str, Option<String>)> = rx.iter().take(3 * 64).collect();
        assert_eq!(drops.len(), 3 * 64);
        for kind in ["added", "old", "new"] {
            assert!(
                drops
                    .iter()
                    .any(|(k, t)| *k == kind && t.as_deref() == Some("kinformer-drop")),
                "no {kind} object was dropped on the dropping thread: {drops:?}"
            );
        }
    }
}
