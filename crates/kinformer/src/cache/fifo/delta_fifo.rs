//! DeltaFIFO: per-key delta lists in a FIFO of keys (client-go's legacy informer queue).
//!
//! Its properties and invariants are documented on [`DeltaFifo`].

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;

use crate::cache::fifo::core::{FifoCore, Locked, impl_delta_queue};
use crate::cache::fifo::inputs::{Inputs, impl_inputs_builders};
use crate::cache::fifo::{Delta, ReflectorSink};
use crate::cache::fifo::{DeltaQueue, PopFuture, Popped, ProcessFn};
use crate::cache::meta::{
    CacheError, DeletedFinalStateUnknown, DeletedObject, ObjectKey, meta_namespace_key,
};
use crate::hash::{FastMap, FastSet};
use kube_core::Resource;

/// The queued deltas per key, and the keys in queue order.
struct Keyed<K> {
    /// Invariant: a key is in `items` iff it is in `queue`, exactly once; no delta list is
    /// empty.
    items: FastMap<ObjectKey, Vec<Delta<K>>>,
    queue: VecDeque<ObjectKey>,
    /// The key popped and being processed (outside the lock), with the object the consumer
    /// will know under it once processing ends (`None` if its last delta is a delete). While
    /// set, it stands in for `known_objects` on that key: client-go processes a pop under the
    /// queue's lock, so a delete or relist racing with the processing sees its outcome.
    in_flight: Option<(ObjectKey, Option<Arc<K>>)>,
}

impl<K> Keyed<K> {
    /// Appends `delta` to `key`'s list (deduplicating deletes); queues the key if new.
    fn queue_action(&mut self, key: ObjectKey, delta: Delta<K>) {
        match self.items.get_mut(key.as_str()) {
            Some(deltas) => {
                deltas.push(delta);
                dedup_deltas(deltas);
            }
            None => {
                self.queue.push_back(key.clone());
                self.items.insert(key, vec![delta]);
            }
        }
    }
}

/// Client-go's rule: if the last two deltas are both deletes, keep one of them — the newer if
/// the older is a tombstone (the newer carries at least as much), otherwise the older.
fn dedup_deltas<K>(deltas: &mut Vec<Delta<K>>) {
    let n = deltas.len();
    if n < 2 {
        return;
    }
    if let (Delta::Deleted(older), Delta::Deleted(_)) = (&deltas[n - 2], &deltas[n - 1]) {
        if older.is_tombstone() {
            deltas.remove(n - 2);
        } else {
            deltas.pop();
        }
    }
}

/// The legacy per-key delta queue.
///
/// # Properties
///
/// - A key holds one place in the queue while its deltas accumulate: a busy object cannot
///   starve others, and the consumer sees every delta of a key together, oldest first.
/// - Only consecutive deletes are deduplicated (the last two, when both are `Deleted`).
/// - `replace` queues `Replaced` for listed objects and tombstones for keys that vanished,
///   whether queued or only known to the consumer (the `known_objects` store).
/// - `resync` queues `Sync` for known objects with nothing queued.
/// - `has_synced` turns true once everything the first `replace` queued has been popped and
///   processed.
/// - A transformer runs once per object on add/update/delete/replace, never on tombstones or
///   resyncs; it runs before the queue's lock is taken.
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::Pod;
/// use kinformer::cache::fifo::{Delta, DeltaFifo, ReflectorSink};
///
/// # tokio_test_rt(async {
/// let fifo = DeltaFifo::<Pod>::new();
/// let mut pod = Pod::default();
/// pod.metadata.name = Some("a".into());
/// let pod = Arc::new(pod);
/// fifo.add(Arc::clone(&pod)).unwrap();
/// fifo.update(pod).unwrap();
/// let kinds = fifo
///     .pop_with(|p| p.deltas.iter().map(|d| d.delta_type()).collect::<Vec<_>>())
///     .await
///     .unwrap();
/// assert_eq!(kinds.len(), 2);
/// # });
/// # fn tokio_test_rt(f: impl std::future::Future<Output = ()>) {
/// #     tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
/// # }
/// ```
pub struct DeltaFifo<K> {
    core: FifoCore<Keyed<K>>,
    inputs: Inputs<K>,
    emit_delta_type_replaced: bool,
}

/// Clears the in-flight key when the processing of a pop ends (also if it panics).
struct InFlightKey<'a, K>(&'a DeltaFifo<K>);

impl<K> Drop for InFlightKey<'_, K> {
    fn drop(&mut self) {
        self.0.core.lock().data.in_flight = None;
    }
}

impl<K> fmt::Debug for DeltaFifo<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.core.lock();
        f.debug_struct("DeltaFifo")
            .field("queued_keys", &s.data.queue.len())
            .field("populated", &s.populated)
            .field("initial_population_count", &s.initial_population_count)
            .field("closed", &s.closed)
            .finish()
    }
}

impl<K: Resource + Send + Sync + 'static> Default for DeltaFifo<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Resource + Send + Sync + 'static> DeltaFifo<K> {
    /// An empty queue without known objects, emitting `Replaced` on relist.
    pub fn new() -> Self {
        DeltaFifo {
            core: FifoCore::new(Keyed {
                items: FastMap::default(),
                queue: VecDeque::new(),
                in_flight: None,
            }),
            inputs: Inputs::none(),
            emit_delta_type_replaced: true,
        }
    }

    /// `true`: relists go page by page as the first list does
    /// ([`ReflectorSink::begin_paged_replace`]), their objects queued as `Replaced` (or
    /// `Sync`) deltas as their pages arrive and the tombstones of what they no longer list
    /// queued at their end, so a relist holds a page or two instead of the whole list.
    /// `false` (the default, as client-go): a relist is one atomic
    /// [`replace`](ReflectorSink::replace) of the whole list.
    #[must_use]
    pub fn with_paged_relists(mut self, on: bool) -> Self {
        self.core.paged_relists = on;
        self
    }

    /// `false` queues relisted objects as `Sync` instead of `Replaced` (client-go's behaviour
    /// before `EmitDeltaTypeReplaced`).
    pub fn with_emit_delta_type_replaced(mut self, emit: bool) -> Self {
        self.emit_delta_type_replaced = emit;
        self
    }

    fn push(&self, delta_of: fn(Arc<K>) -> Delta<K>, obj: Arc<K>) -> Result<(), CacheError> {
        let obj = self.inputs.transform(obj);
        let key = meta_namespace_key(obj.as_ref())?;
        let mut s = self.core.lock_open()?;
        s.populated = true;
        s.data.queue_action(key, delta_of(obj));
        drop(s);
        self.core.wake();
        Ok(())
    }

    /// Waits for the next key, removes it and calls `process` with its deltas; returns what
    /// `process` returned. See [`DeltaQueue::pop`].
    ///
    /// # Errors
    /// [`CacheError::Closed`] when closed and empty.
    ///
    /// # Cancel safety
    /// Cancel-safe: removal and `process` happen synchronously in the poll that completes.
    pub async fn pop_with<R>(&self, process: impl FnOnce(Popped<K>) -> R) -> Result<R, CacheError> {
        let take = |s: &mut Locked<Keyed<K>>| {
            let key = s.data.queue.pop_front()?;
            let deltas = s.data.items.remove(key.as_str()).unwrap_or_default();
            debug_assert!(!deltas.is_empty(), "queued key without deltas");
            let outcome = match deltas.last() {
                Some(Delta::Deleted(_)) | None => None,
                Some(d) => d.object().cloned(),
            };
            s.data.in_flight = Some((key, outcome));
            Some((deltas, 1))
        };
        let process = |popped| {
            let _done = InFlightKey(self);
            process(popped)
        };
        self.core.pop_with(take, process).await
    }

    /// Queues a tombstone for every key queued or known (the key in flight included) that
    /// `listed` does not hold; returns how many. Part of a replace, under the lock.
    fn queue_tombstones(&self, data: &mut Keyed<K>, listed: impl Fn(&str) -> bool) -> usize {
        // Deletions of queued keys missing from the list: tombstone with the newest state.
        let mut queued_deletions = 0;
        let vanished: Vec<(ObjectKey, Arc<K>)> = data
            .queue
            .iter()
            .filter(|k| !listed(k.as_str()))
            .filter_map(|k| {
                let newest = data.items.get(k.as_str())?.last()?.object()?;
                Some((k.clone(), Arc::clone(newest)))
            })
            .collect();
        for (key, obj) in vanished {
            queued_deletions += 1;
            let tomb = DeletedFinalStateUnknown {
                key: key.clone(),
                obj,
            };
            data.queue_action(key, Delta::Deleted(DeletedObject::Tombstone(tomb)));
        }
        // Deletions of known keys missing from the list with nothing queued (the key being
        // processed counts as known if its processing leaves an object).
        let mut known_keys = self
            .inputs
            .known_objects
            .as_ref()
            .map(|k| k.list_keys())
            .unwrap_or_default();
        if let Some((key, Some(_))) = &data.in_flight {
            // Listed twice at most: the second time it is queued (or listed) already.
            known_keys.push(key.clone());
        }
        for key in known_keys {
            if listed(key.as_str()) || data.items.contains_key(key.as_str()) {
                continue;
            }
            let Some(obj) = self.known(data, key.as_str()) else {
                // A known key whose in-flight delete is being applied: nothing to add.
                continue;
            };
            queued_deletions += 1;
            let tomb = DeletedFinalStateUnknown {
                key: key.clone(),
                obj,
            };
            data.queue_action(key, Delta::Deleted(DeletedObject::Tombstone(tomb)));
        }
        queued_deletions
    }

    /// Keys and transforms `objs` (before taking the lock).
    fn keyed(&self, objs: Vec<Arc<K>>) -> Result<Vec<(ObjectKey, Arc<K>)>, CacheError> {
        let mut keyed = Vec::with_capacity(objs.len());
        for obj in objs {
            let obj = self.inputs.transform(obj);
            let key = meta_namespace_key(obj.as_ref())?;
            keyed.push((key, obj));
        }
        Ok(keyed)
    }

    /// The delta a replace queues for a listed object.
    fn replaced(&self, obj: Arc<K>) -> Delta<K> {
        if self.emit_delta_type_replaced {
            Delta::Replaced(obj)
        } else {
            Delta::Sync(obj)
        }
    }

    /// What the consumer knows (or will know once the popped item is processed) under `key`.
    fn known(&self, data: &Keyed<K>, key: &str) -> Option<Arc<K>> {
        if let Some((k, outcome)) = &data.in_flight
            && k.as_str() == key
        {
            return outcome.clone();
        }
        self.inputs.known_objects.as_ref()?.get_by_key(key)
    }

    /// The keys queued in `data` (what a paged relist waits on, see `FifoCore::room_for`).
    fn queued_len(data: &Keyed<K>) -> usize {
        data.queue.len()
    }

    /// Closes the queue; see [`DeltaQueue::close`].
    pub fn close(&self) {
        self.core.close();
    }

    /// See [`DeltaQueue::has_synced`].
    pub fn has_synced(&self) -> bool {
        self.core.has_synced()
    }

    /// Number of queued keys.
    pub fn len(&self) -> usize {
        self.core.lock().data.queue.len()
    }

    /// True when no key is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The keys currently queued, in queue order.
    pub fn list_keys(&self) -> Vec<ObjectKey> {
        self.core.lock().data.queue.iter().cloned().collect()
    }

    /// A copy of the deltas queued for `key`.
    pub fn get_by_key(&self, key: &str) -> Option<Vec<Delta<K>>> {
        self.core.lock().data.items.get(key).cloned()
    }
}

impl<K: Resource + Send + Sync + 'static> ReflectorSink<K> for DeltaFifo<K> {
    fn add(&self, obj: Arc<K>) -> Result<(), CacheError> {
        self.push(Delta::Added, obj)
    }

    fn update(&self, obj: Arc<K>) -> Result<(), CacheError> {
        self.push(Delta::Updated, obj)
    }

    fn delete(&self, obj: Arc<K>) -> Result<(), CacheError> {
        let obj = self.inputs.transform(obj);
        let key = meta_namespace_key(obj.as_ref())?;
        let mut s = self.core.lock_open()?;
        s.populated = true;
        let queued = s.data.items.contains_key(key.as_str());
        let known = self.known(&s.data, key.as_str()).is_some();
        if !queued && !known {
            // Neither queued nor known to the consumer: nothing to tell anyone.
            return Ok(());
        }
        s.data
            .queue_action(key, Delta::Deleted(DeletedObject::Live(obj)));
        drop(s);
        self.core.wake();
        Ok(())
    }

    fn replace(&self, objs: Vec<Arc<K>>, _resource_version: &str) -> Result<(), CacheError> {
        let keyed = self.keyed(objs)?;
        let mut s = self.core.lock_open()?;
        let mut keys: FastSet<ObjectKey> =
            FastSet::with_capacity_and_hasher(keyed.len(), Default::default());
        for (key, obj) in keyed {
            keys.insert(key.clone());
            let delta = self.replaced(obj);
            s.data.queue_action(key, delta);
        }
        let queued_deletions = self.queue_tombstones(&mut s.data, |k| keys.contains(k));
        s.populate(keys.len() + queued_deletions);
        drop(s);
        self.core.wake();
        Ok(())
    }

    fn begin_paged_replace(&self) -> bool {
        let known_empty = self
            .inputs
            .known_objects
            .as_ref()
            .is_none_or(|k| k.is_empty());
        self.core
            .begin_paged(|data: &Keyed<K>| known_empty && data.queue.is_empty())
    }

    fn replace_page(&self, objs: Vec<Arc<K>>) -> Result<(), CacheError> {
        let keyed = self.keyed(objs)?;
        let mut guard = self.core.lock_open()?;
        let s = &mut *guard;
        let paged = s.paged.as_mut().ok_or(CacheError::NoPagedReplace)?;
        for (key, obj) in keyed {
            paged.saw(&key);
            if !s.populated && !s.data.items.contains_key(key.as_str()) {
                // A newly queued key of the first population.
                s.initial_population_count += 1;
            }
            let delta = self.replaced(obj);
            s.data.queue_action(key, delta);
        }
        drop(guard);
        self.core.wake();
        Ok(())
    }

    fn finish_paged_replace(&self, _resource_version: &str) -> Result<(), CacheError> {
        self.core.finish_paged(
            |data, seen| {
                self.queue_tombstones(data, |k| seen.contains(k));
            },
            |data| data.queue.len(),
        )
    }

    fn resync(&self) -> Result<(), CacheError> {
        let Some(known) = &self.inputs.known_objects else {
            return Ok(());
        };
        let mut s = self.core.lock_open()?;
        let mut queued_any = false;
        for key in known.list_keys() {
            if s.data.items.contains_key(key.as_str()) {
                continue;
            }
            let Some(obj) = known.get_by_key(key.as_str()) else {
                continue;
            };
            s.data.queue_action(key, Delta::Sync(obj));
            queued_any = true;
        }
        drop(s);
        if queued_any {
            self.core.wake();
        }
        Ok(())
    }
}

impl_delta_queue!(DeltaFifo);
impl_inputs_builders!(DeltaFifo);

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use k8s_openapi::api::core::v1::Pod;

    use super::*;
    use crate::cache::fifo::DeltaType;
    use crate::cache::store::Indexer;
    use crate::cache::store::TransformFunc;
    use crate::test_support::{kinds, pod, pod_rv, rv};

    async fn pop(f: &DeltaFifo<Pod>) -> Popped<Pod> {
        f.pop_with(|p| p).await.unwrap()
    }

    fn known_with(pods: &[Arc<Pod>]) -> Arc<Indexer<Pod>> {
        let idx = Arc::new(Indexer::default());
        for p in pods {
            idx.add(Arc::clone(p)).unwrap();
        }
        idx
    }

    fn popped_key(p: &Popped<Pod>) -> String {
        p.deltas[0]
            .key()
            .and_then(|k| k.ok())
            .map(|k| k.to_string())
            .unwrap_or_default()
    }

    #[tokio::test]
    async fn deltas_of_one_key_accumulate_in_order() {
        let f = DeltaFifo::new();
        f.add(pod_rv("ns", "a", "1")).unwrap();
        f.update(pod_rv("ns", "a", "2")).unwrap();
        f.delete(pod_rv("ns", "a", "3")).unwrap();
        let p = pop(&f).await;
        assert_eq!(
            kinds(&p.deltas),
            [DeltaType::Added, DeltaType::Updated, DeltaType::Deleted]
        );
        assert_eq!(rv(p.deltas[1].object().unwrap()), "2");
        assert!(f.is_empty());
    }

    #[tokio::test]
    async fn a_key_keeps_its_place_while_deltas_accumulate() {
        let f = DeltaFifo::new();
        f.add(pod("ns", "a", &[])).unwrap();
        f.add(pod("ns", "b", &[])).unwrap();
        f.update(pod("ns", "a", &[])).unwrap();
        f.add(pod("ns", "c", &[])).unwrap();
        let order: Vec<String> = vec![
            popped_key(&pop(&f).await),
            popped_key(&pop(&f).await),
            popped_key(&pop(&f).await),
        ];
        assert_eq!(order, ["ns/a", "ns/b", "ns/c"]);
    }

    #[tokio::test]
    async fn a_delete_racing_with_the_processing_of_its_add_is_kept() {
        let known = known_with(&[]);
        let f = DeltaFifo::new().with_known_objects(Arc::clone(&known) as _);
        let a = pod("ns", "a", &[]);
        f.add(Arc::clone(&a)).unwrap();
        // The delete arrives after the add was popped, before it reached the store.
        f.pop_with(|_| {
            f.delete(Arc::clone(&a)).unwrap();
            known.add(Arc::clone(&a)).unwrap();
        })
        .await
        .unwrap();
        let queued = f.get_by_key("ns/a").expect("the delete is queued");
        assert_eq!(kinds(&queued), [DeltaType::Deleted]);
    }

    #[tokio::test]
    async fn a_relist_racing_with_the_processing_of_an_add_tombstones_it() {
        let known = known_with(&[]);
        let f = DeltaFifo::new().with_known_objects(Arc::clone(&known) as _);
        let b = pod("ns", "b", &[]);
        f.add(Arc::clone(&b)).unwrap();
        f.pop_with(|_| {
            f.replace(Vec::new(), "9").unwrap();
            known.add(Arc::clone(&b)).unwrap();
        })
        .await
        .unwrap();
        let queued = f.get_by_key("ns/b").expect("a tombstone is queued");
        assert!(matches!(
            queued.as_slice(),
            [Delta::Deleted(DeletedObject::Tombstone(t))] if t.key.as_str() == "ns/b"
        ));
    }

    #[tokio::test]
    async fn a_delete_racing_with_the_processing_of_a_delete_is_dropped() {
        let a = pod("ns", "a", &[]);
        let known = known_with(&[Arc::clone(&a)]);
        let f = DeltaFifo::new().with_known_objects(Arc::clone(&known) as _);
        f.delete(Arc::clone(&a)).unwrap();
        f.pop_with(|_| {
            f.delete(Arc::clone(&a)).unwrap();
            f.replace(Vec::new(), "9").unwrap();
            known.delete(&a).unwrap();
        })
        .await
        .unwrap();
        assert!(f.is_empty(), "{:?}", f.list_keys());
    }

    #[tokio::test]
    async fn delete_of_an_unknown_unqueued_key_is_ignored() {
        let f = DeltaFifo::<Pod>::new();
        f.delete(pod("ns", "ghost", &[])).unwrap();
        assert!(f.is_empty());
        // Known to the consumer: queued.
        let known = known_with(&[pod("ns", "k", &[])]);
        let f = DeltaFifo::new().with_known_objects(known);
        f.delete(pod("ns", "ghost", &[])).unwrap();
        assert!(f.is_empty());
        f.delete(pod("ns", "k", &[])).unwrap();
        assert_eq!(kinds(&pop(&f).await.deltas), [DeltaType::Deleted]);
    }

    #[test]
    fn dedup_keeps_the_older_delete_unless_it_is_a_tombstone() {
        let live = |r: &str| Delta::Deleted(DeletedObject::Live(pod_rv("ns", "a", r)));
        let tomb = |r: &str| {
            Delta::Deleted(DeletedObject::Tombstone(DeletedFinalStateUnknown {
                key: ObjectKey::from("ns/a"),
                obj: pod_rv("ns", "a", r),
            }))
        };
        let mut d = vec![live("1"), tomb("2")];
        dedup_deltas(&mut d);
        assert_eq!(d.len(), 1);
        assert!(!d[0].is_tombstone());
        assert_eq!(rv(d[0].object().unwrap()), "1");

        let mut d = vec![tomb("1"), live("2")];
        dedup_deltas(&mut d);
        assert_eq!(d.len(), 1);
        assert!(!d[0].is_tombstone());
        assert_eq!(rv(d[0].object().unwrap()), "2");

        let mut d = vec![live("1"), live("2")];
        dedup_deltas(&mut d);
        assert_eq!(rv(d[0].object().unwrap()), "1");
        assert_eq!(d.len(), 1);

        // Only deletes are merged.
        let mut d = vec![Delta::Updated(pod_rv("ns", "a", "1")), live("2")];
        dedup_deltas(&mut d);
        assert_eq!(d.len(), 2);
    }

    #[tokio::test]
    async fn replace_without_known_objects_tombstones_vanished_queued_keys() {
        let f = DeltaFifo::new();
        f.add(pod_rv("ns", "gone", "1")).unwrap();
        f.update(pod_rv("ns", "gone", "2")).unwrap();
        f.add(pod_rv("ns", "stays", "1")).unwrap();
        f.replace(
            vec![pod_rv("ns", "stays", "3"), pod_rv("ns", "new", "3")],
            "3",
        )
        .unwrap();
        let gone = pop(&f).await;
        assert_eq!(
            kinds(&gone.deltas),
            [DeltaType::Added, DeltaType::Updated, DeltaType::Deleted]
        );
        assert!(gone.deltas[2].is_tombstone());
        // The tombstone carries the newest queued state.
        assert_eq!(rv(gone.deltas[2].object().unwrap()), "2");
        let stays = pop(&f).await;
        assert_eq!(
            kinds(&stays.deltas),
            [DeltaType::Added, DeltaType::Replaced]
        );
        let new = pop(&f).await;
        assert_eq!(kinds(&new.deltas), [DeltaType::Replaced]);
        assert!(f.is_empty());
    }

    #[tokio::test]
    async fn replace_with_known_objects_tombstones_known_keys_missing_from_the_list() {
        let known = known_with(&[pod_rv("ns", "k1", "1"), pod_rv("ns", "k2", "1")]);
        let f = DeltaFifo::new().with_known_objects(known);
        // k2 also has a queued update: it gets exactly one tombstone, from the queue.
        f.update(pod_rv("ns", "k2", "2")).unwrap();
        f.replace(vec![pod_rv("ns", "x", "5")], "5").unwrap();
        let mut by_key = FastMap::default();
        while !f.is_empty() {
            let p = pop(&f).await;
            by_key.insert(popped_key(&p), p.deltas);
        }
        let k1 = &by_key["ns/k1"];
        assert_eq!(kinds(k1), [DeltaType::Deleted]);
        assert!(k1[0].is_tombstone());
        assert_eq!(rv(k1[0].object().unwrap()), "1");
        let k2 = &by_key["ns/k2"];
        assert_eq!(kinds(k2), [DeltaType::Updated, DeltaType::Deleted]);
        assert_eq!(rv(k2[1].object().unwrap()), "2");
        assert_eq!(kinds(&by_key["ns/x"]), [DeltaType::Replaced]);
    }

    #[tokio::test]
    async fn replace_can_emit_sync_instead_of_replaced() {
        let f = DeltaFifo::new().with_emit_delta_type_replaced(false);
        f.replace(vec![pod("ns", "a", &[])], "1").unwrap();
        assert_eq!(kinds(&pop(&f).await.deltas), [DeltaType::Sync]);
    }

    #[tokio::test]
    async fn has_synced_after_the_initial_population_is_processed() {
        let f = DeltaFifo::new();
        assert!(!f.has_synced());
        f.replace(vec![pod("ns", "a", &[]), pod("ns", "b", &[])], "1")
            .unwrap();
        assert!(!f.has_synced());
        let first = f
            .pop_with(|p| (p.is_in_initial_list, f.has_synced()))
            .await
            .unwrap();
        assert_eq!(first, (true, false));
        // While the last initial item is being processed, the queue is not synced yet.
        let second = f
            .pop_with(|p| (p.is_in_initial_list, f.has_synced()))
            .await
            .unwrap();
        assert_eq!(second, (true, false));
        assert!(f.has_synced());
        f.add(pod("ns", "c", &[])).unwrap();
        assert!(!pop(&f).await.is_in_initial_list);
        assert!(f.has_synced());
    }

    #[tokio::test]
    async fn an_empty_initial_list_is_synced_at_once_and_adds_mark_populated() {
        let f = DeltaFifo::<Pod>::new();
        f.replace(Vec::new(), "1").unwrap();
        assert!(f.has_synced());
        let g = DeltaFifo::<Pod>::new();
        g.add(pod("ns", "a", &[])).unwrap();
        assert!(
            g.has_synced(),
            "populated by an add with nothing initial pending"
        );
    }

    #[tokio::test]
    async fn initial_population_counts_queued_deletions() {
        let known = known_with(&[pod("ns", "old", &[])]);
        let f = DeltaFifo::new().with_known_objects(known);
        f.replace(vec![pod("ns", "a", &[])], "1").unwrap();
        pop(&f).await;
        assert!(!f.has_synced());
        pop(&f).await;
        assert!(f.has_synced());
    }

    #[tokio::test]
    async fn resync_queues_sync_only_for_known_keys_with_nothing_queued() {
        let known = known_with(&[pod_rv("ns", "a", "1"), pod_rv("ns", "b", "1")]);
        let f = DeltaFifo::new().with_known_objects(known);
        f.update(pod_rv("ns", "a", "2")).unwrap();
        f.resync().unwrap();
        let a = pop(&f).await;
        assert_eq!(
            kinds(&a.deltas),
            [DeltaType::Updated],
            "update then resync: only Updated"
        );
        let b = pop(&f).await;
        assert_eq!(kinds(&b.deltas), [DeltaType::Sync]);
        assert!(f.is_empty());
    }

    #[tokio::test]
    async fn transformer_runs_once_per_object_and_never_on_tombstones_or_syncs() {
        static CALLS: AtomicUsize = AtomicUsize::new(0);
        let t: TransformFunc<Pod> = Arc::new(|p| {
            CALLS.fetch_add(1, Ordering::SeqCst);
            let mut o = (*p).clone();
            o.metadata.annotations = Some([("t".to_string(), "1".to_string())].into());
            Arc::new(o)
        });
        let known = known_with(&[pod("ns", "known", &[]), pod("ns", "k2", &[])]);
        let f = DeltaFifo::new()
            .with_known_objects(known)
            .with_transformer(t);
        f.add(pod("ns", "a", &[])).unwrap();
        f.update(pod("ns", "a", &[])).unwrap();
        f.delete(pod("ns", "a", &[])).unwrap();
        assert_eq!(CALLS.load(Ordering::SeqCst), 3);
        f.replace(vec![pod("ns", "b", &[]), pod("ns", "k2", &[])], "1")
            .unwrap();
        // Two listed objects; the tombstones for "a" and "known" are not transformed.
        assert_eq!(CALLS.load(Ordering::SeqCst), 5);
        while !f.is_empty() {
            pop(&f).await;
        }
        f.resync().unwrap();
        assert_eq!(CALLS.load(Ordering::SeqCst), 5);
        assert!(!f.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn pop_blocks_until_an_item_arrives_and_unblocks_on_close() {
        let f = Arc::new(DeltaFifo::<Pod>::new());
        let g = Arc::clone(&f);
        let waiter = tokio::spawn(async move { g.pop_with(|p| p.deltas.len()).await });
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        assert!(!waiter.is_finished());
        f.add(pod("ns", "a", &[])).unwrap();
        assert_eq!(waiter.await.unwrap().unwrap(), 1);

        let g = Arc::clone(&f);
        let waiter = tokio::spawn(async move { g.pop_with(|_| ()).await });
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        f.close();
        assert!(matches!(waiter.await.unwrap(), Err(CacheError::Closed)));
        assert!(matches!(
            f.add(pod("ns", "b", &[])),
            Err(CacheError::Closed)
        ));
    }

    #[tokio::test]
    async fn closed_queue_drains_before_reporting_closed() {
        let f = DeltaFifo::<Pod>::new();
        f.add(pod("ns", "a", &[])).unwrap();
        f.close();
        assert!(f.pop_with(|_| ()).await.is_ok());
        assert!(matches!(f.pop_with(|_| ()).await, Err(CacheError::Closed)));
    }

    #[tokio::test]
    async fn a_dropped_pop_future_loses_nothing() {
        let f = DeltaFifo::<Pod>::new();
        {
            let fut = f.pop_with(|_| ());
            tokio::pin!(fut);
            // Poll once (pending), then drop.
            assert!(futures::poll!(fut.as_mut()).is_pending());
        }
        f.add(pod("ns", "a", &[])).unwrap();
        assert_eq!(pop(&f).await.deltas.len(), 1);
    }

    #[tokio::test]
    async fn works_through_the_queue_trait_object() {
        let q: Arc<dyn DeltaQueue<Pod>> = Arc::new(DeltaFifo::new());
        q.add(pod("ns", "a", &[])).unwrap();
        let mut got = 0;
        q.pop(&mut |p: Popped<Pod>| got += p.deltas.len())
            .await
            .unwrap();
        assert_eq!(got, 1);
        q.close();
        assert!(q.is_closed());
    }
}
