//! The controller's process step: apply popped deltas to the indexer and tell the handler.

use std::collections::HashSet;
use std::sync::Arc;

use kube_core::Resource;

use crate::cache::fifo::Delta;
use crate::cache::meta::{DeletedFinalStateUnknown, DeletedObject, ObjectKey, meta_namespace_key};
use crate::cache::processor::{Notification, is_sync};
use crate::cache::store::{Indexer, IndexerError};

/// Applies `deltas` (oldest first) to `indexer` and calls `handler` once per resulting
/// notification, as client-go's `processDeltas` (plus RealFIFO's atomic kinds):
///
/// - `Added`, `Updated`, `Replaced`, `Sync`: update the object if present (→ `Update{old,
///   new}`), else add it (→ `Add{obj, is_in_initial_list}`).
/// - `Deleted`: remove it (by key for a tombstone) → `Delete` with what the delta carried.
/// - `ReplacedAll`: replace the store's content; then `Delete(tombstone)` for every key that
///   vanished, then `Update`/`Add` for every listed object in list order.
/// - `SyncAll`: `Update{o, o}` for every stored object.
/// - `Bookmark`: nothing.
///
/// Notifications carry the objects as stored (after the indexer's transform, if any).
///
/// # Errors
/// The first [`IndexerError`] met. A failing delta is skipped (and logged); the others in the
/// batch are still applied, so one bad object does not lose the rest of a batch.
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::Pod;
/// use kinformer::cache::fifo::Delta;
/// use kinformer::cache::store::Indexer;
/// use kinformer::cache::{Notification, process_deltas};
///
/// let indexer = Indexer::<Pod>::default();
/// let mut pod = Pod::default();
/// pod.metadata.name = Some("a".into());
/// let pod = Arc::new(pod);
/// let mut seen = Vec::new();
/// let deltas = vec![Delta::Added(Arc::clone(&pod)), Delta::Updated(pod)];
/// process_deltas(&indexer, deltas, true, &mut |n| seen.push(n)).unwrap();
/// assert!(matches!(seen[0], Notification::Add { is_in_initial_list: true, .. }));
/// assert!(matches!(seen[1], Notification::Update { .. }));
/// assert_eq!(indexer.len(), 1);
/// ```
pub fn process_deltas<K: Resource>(
    indexer: &Indexer<K>,
    deltas: Vec<Delta<K>>,
    is_in_initial_list: bool,
    handler: &mut dyn FnMut(Notification<K>),
) -> Result<(), IndexerError> {
    apply_each(indexer, deltas, is_in_initial_list, &mut |n, _| handler(n))
}

/// A notification with its sync mark: as the indexer decided it for an upsert (in compact
/// storage without decoding the old object's metadata), else from the objects.
pub(crate) type Marked<K> = (Notification<K>, bool);

/// [`process_deltas`] for the informer's consumer: applies the batch and returns its
/// notifications, each marked whether it is a sync, with the first error met.
pub(crate) fn apply_deltas<K: Resource>(
    indexer: &Indexer<K>,
    deltas: Vec<Delta<K>>,
    is_in_initial_list: bool,
) -> (Vec<Marked<K>>, Result<(), IndexerError>) {
    let mut notifications = Vec::with_capacity(deltas.len());
    let res = apply_each(indexer, deltas, is_in_initial_list, &mut |n, sync| {
        notifications.push((n, sync));
    });
    (notifications, res)
}

fn apply_each<K: Resource>(
    indexer: &Indexer<K>,
    deltas: Vec<Delta<K>>,
    is_in_initial_list: bool,
    handler: &mut dyn FnMut(Notification<K>, bool),
) -> Result<(), IndexerError> {
    let mut first_err = None;
    for delta in deltas {
        if let Err(e) = apply_one(indexer, delta, is_in_initial_list, handler) {
            tracing::warn!(error = %e, "skipping a delta the indexer refused");
            first_err.get_or_insert(e);
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

fn upsert<K: Resource>(
    indexer: &Indexer<K>,
    obj: Arc<K>,
    is_in_initial_list: bool,
    handler: &mut dyn FnMut(Notification<K>, bool),
) -> Result<(), IndexerError> {
    let up = indexer.upsert(obj)?;
    let sync = up.is_sync();
    match up.old {
        Some(old) => handler(Notification::Update { old, new: up.new }, sync),
        None => handler(
            Notification::Add {
                obj: up.new,
                is_in_initial_list,
            },
            false,
        ),
    }
    Ok(())
}

fn apply_one<K: Resource>(
    indexer: &Indexer<K>,
    delta: Delta<K>,
    is_in_initial_list: bool,
    handler: &mut dyn FnMut(Notification<K>, bool),
) -> Result<(), IndexerError> {
    match delta {
        Delta::Added(o) | Delta::Updated(o) | Delta::Replaced(o) | Delta::Sync(o) => {
            upsert(indexer, o, is_in_initial_list, handler)
        }
        Delta::Deleted(d) => {
            match &d {
                DeletedObject::Live(o) => {
                    indexer.delete(o.as_ref())?;
                }
                DeletedObject::Tombstone(t) => {
                    indexer.delete_by_key(t.key.as_str())?;
                }
            }
            handler(Notification::Delete(d), false);
            Ok(())
        }
        Delta::ReplacedAll { objects, .. } => {
            let mut keys: Vec<ObjectKey> = Vec::with_capacity(objects.len());
            for o in &objects {
                keys.push(meta_namespace_key(o.as_ref())?);
            }
            let (mut old, stored) = indexer.replace_returning_stored(objects)?;
            let listed: HashSet<&str> = keys.iter().map(|k| k.as_str()).collect();
            let vanished: Vec<ObjectKey> = old
                .keys()
                .filter(|k| !listed.contains(k.as_str()))
                .cloned()
                .collect();
            for key in vanished {
                if let Some(obj) = old.remove(key.as_str()) {
                    let tomb = DeletedFinalStateUnknown { key, obj };
                    handler(Notification::Delete(DeletedObject::Tombstone(tomb)), false);
                }
            }
            // The objects as stored, not re-read: in compact mode a read would decode a copy.
            // (With a key listed twice, "unchanged" describes only the later object.)
            let duplicates = listed.len() != keys.len();
            for (key, new) in keys.iter().zip(stored) {
                let prev = if duplicates {
                    old.get_owned(key.as_str())
                } else {
                    old.old_for(key.as_str(), &new)
                };
                let n = match prev {
                    Some(prev) => Notification::Update { old: prev, new },
                    None => Notification::Add {
                        obj: new,
                        is_in_initial_list,
                    },
                };
                let sync = is_sync(&n);
                handler(n, sync);
            }
            Ok(())
        }
        Delta::SyncAll => {
            for obj in indexer.list() {
                let update = Notification::Update {
                    old: Arc::clone(&obj),
                    new: obj,
                };
                handler(update, true);
            }
            Ok(())
        }
        Delta::Bookmark { .. } => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;

    use super::*;
    use crate::test_support::{describe, pod_rv, rv};

    fn run(idx: &Indexer<Pod>, deltas: Vec<Delta<Pod>>) -> Vec<Notification<Pod>> {
        let mut seen = Vec::new();
        process_deltas(idx, deltas, false, &mut |n| seen.push(n)).unwrap();
        seen
    }

    #[test]
    fn every_object_delta_is_update_or_add() {
        let idx = Indexer::<Pod>::default();
        for make in [Delta::Added, Delta::Updated, Delta::Replaced, Delta::Sync] {
            let idx2 = Indexer::<Pod>::default();
            let seen = run(&idx2, vec![make(pod_rv("ns", "a", "1"))]);
            assert_eq!(describe(&seen[0]), "add ns/a");
            let seen = run(&idx2, vec![make(pod_rv("ns", "a", "2"))]);
            assert!(
                matches!(&seen[0], Notification::Update { old, new } if rv(old) == "1" && rv(new) == "2")
            );
        }
        assert!(idx.is_empty());
    }

    #[test]
    fn deletes_remove_by_object_or_by_tombstone_key() {
        let idx = Indexer::<Pod>::default();
        idx.add(pod_rv("ns", "a", "1")).unwrap();
        idx.add(pod_rv("ns", "b", "1")).unwrap();
        let tomb = DeletedFinalStateUnknown {
            key: ObjectKey::from("ns/b"),
            obj: pod_rv("ns", "b", "0"),
        };
        let seen = run(
            &idx,
            vec![
                Delta::Deleted(DeletedObject::Live(pod_rv("ns", "a", "2"))),
                Delta::Deleted(DeletedObject::Tombstone(tomb)),
            ],
        );
        let d: Vec<String> = seen.iter().map(describe).collect();
        assert_eq!(d, ["delete ns/a", "tombstone ns/b"]);
        assert!(idx.is_empty());
    }

    #[test]
    fn a_bad_delta_is_reported_and_the_rest_of_the_batch_applied() {
        let idx = Indexer::<Pod>::default();
        let mut seen = Vec::new();
        let res = process_deltas(
            &idx,
            vec![
                Delta::Added(Arc::new(Pod::default())),
                Delta::Added(pod_rv("ns", "ok", "1")),
            ],
            false,
            &mut |n| seen.push(n),
        );
        assert!(matches!(res, Err(IndexerError::Key(_))));
        assert_eq!(seen.len(), 1);
        assert!(idx.get_by_key("ns/ok").is_some());
    }

    #[test]
    fn bookmarks_change_nothing() {
        let idx = Indexer::<Pod>::default();
        let seen = run(
            &idx,
            vec![Delta::Bookmark {
                resource_version: "3".into(),
            }],
        );
        assert!(seen.is_empty());
    }
}
