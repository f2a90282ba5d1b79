//! The controller's process step: apply popped deltas to the indexer and tell the handler.

use std::collections::HashSet;
use std::sync::Arc;

use kube_core::Resource;

use super::{
    DeletedFinalStateUnknown, DeletedObject, Delta, Indexer, IndexerError, Notification,
    ObjectKey, meta_namespace_key,
};

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
/// use kinformer::cache::{Delta, Indexer, Notification, process_deltas};
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
    handler: &mut dyn FnMut(Notification<K>),
) -> Result<(), IndexerError> {
    let up = indexer.upsert(obj)?;
    handler(match up.old {
        Some(old) => Notification::Update { old, new: up.new },
        None => Notification::Add {
            obj: up.new,
            is_in_initial_list,
        },
    });
    Ok(())
}

fn apply_one<K: Resource>(
    indexer: &Indexer<K>,
    delta: Delta<K>,
    is_in_initial_list: bool,
    handler: &mut dyn FnMut(Notification<K>),
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
            handler(Notification::Delete(d));
            Ok(())
        }
        Delta::ReplacedAll { objects, .. } => {
            let mut keys: Vec<ObjectKey> = Vec::with_capacity(objects.len());
            for o in &objects {
                keys.push(meta_namespace_key(o.as_ref())?);
            }
            let mut old = indexer.replace_take_old(objects, "")?;
            let listed: HashSet<&str> = keys.iter().map(|k| k.as_str()).collect();
            let vanished: Vec<ObjectKey> = old
                .keys()
                .filter(|k| !listed.contains(k.as_str()))
                .cloned()
                .collect();
            for key in vanished {
                if let Some(obj) = old.remove(key.as_str()) {
                    let tomb = DeletedFinalStateUnknown { key, obj };
                    handler(Notification::Delete(DeletedObject::Tombstone(tomb)));
                }
            }
            for key in keys {
                let Some(new) = indexer.get_by_key(key.as_str()) else {
                    continue;
                };
                handler(match old.get(key.as_str()) {
                    Some(prev) => Notification::Update {
                        old: Arc::clone(prev),
                        new,
                    },
                    None => Notification::Add {
                        obj: new,
                        is_in_initial_list,
                    },
                });
            }
            Ok(())
        }
        Delta::SyncAll => {
            for obj in indexer.list() {
                handler(Notification::Update {
                    old: Arc::clone(&obj),
                    new: obj,
                });
            }
            Ok(())
        }
        Delta::Bookmark { .. } => Ok(()),
    }
}
