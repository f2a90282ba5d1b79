//! RealFIFO: an in-order log of single deltas (client-go's current informer queue).
//!
//! Its properties and invariants are documented on [`RealFifo`].

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
use crate::hash::{FastMap, FastSet, FastState};
use kube_core::Resource;

/// The default largest batch a pop hands out.
pub(crate) const DEFAULT_MAX_BATCH: usize = 1000;

/// The largest batch an informer's queue hands out past its initial list: a batch's
/// notifications reach the handlers only once the whole batch is applied, so live batches are
/// kept short while an initial list goes in large ones.
pub(crate) const INFORMER_MAX_LIVE_BATCH: usize = 64;

/// One logged delta; the key is `None` exactly for `ReplacedAll`, `SyncAll` and `Bookmark`.
type Entry<K> = (Option<ObjectKey>, Delta<K>);

/// The log.
type Log<K> = VecDeque<Entry<K>>;

/// The in-order delta log.
///
/// # Properties
///
/// - Deltas are delivered exactly in arrival order; nothing is merged or deduplicated.
/// - Atomic mode (the default): a relist appends one `ReplacedAll { resource_version,
///   objects }` and a resync one `SyncAll`; the consumer reconciles them against its store.
///   Non-atomic mode appends per-object `Replaced` deltas, tombstones for vanished keys and
///   per-object `Sync` deltas, as DeltaFIFO does.
/// - Bookmarks are appended as `Bookmark` deltas when enabled.
/// - A pop takes up to `max_batch` (default 1000) consecutive deltas with distinct keys, or
///   up to `max_live_batch` (by default the same) once the initial population is popped; a
///   `ReplacedAll`, `SyncAll` or `Bookmark` is always popped alone.
/// - `has_synced` turns true once everything queued up to the first `replace` has been popped
///   and processed; a batch never straddles that boundary.
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::Pod;
/// use kinformer::cache::fifo::{DeltaType, RealFifo, ReflectorSink};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let fifo = RealFifo::<Pod>::new();
/// let mut pod = Pod::default();
/// pod.metadata.name = Some("a".into());
/// fifo.replace(vec![Arc::new(pod)], "10").unwrap();
/// let kinds = fifo
///     .pop_with(|p| p.deltas.iter().map(|d| d.delta_type()).collect::<Vec<_>>())
///     .await
///     .unwrap();
/// assert_eq!(kinds, [DeltaType::ReplacedAll]);
/// assert!(fifo.has_synced());
/// # });
/// ```
pub struct RealFifo<K> {
    core: FifoCore<Log<K>>,
    inputs: Inputs<K>,
    atomic: bool,
    emit_bookmarks: bool,
    max_batch: usize,
    max_live_batch: usize,
}

impl<K> fmt::Debug for RealFifo<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.core.lock();
        f.debug_struct("RealFifo")
            .field("queued", &s.data.len())
            .field("atomic", &self.atomic)
            .field("populated", &s.populated)
            .field("initial_population_count", &s.initial_population_count)
            .field("closed", &s.closed)
            .finish()
    }
}

impl<K: Resource + Send + Sync + 'static> Default for RealFifo<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Resource + Send + Sync + 'static> RealFifo<K> {
    /// An empty log in atomic mode, without bookmarks, batches of up to
    /// 1,000.
    pub fn new() -> Self {
        RealFifo {
            core: FifoCore::new(VecDeque::new()),
            inputs: Inputs::none(),
            atomic: true,
            emit_bookmarks: false,
            max_batch: DEFAULT_MAX_BATCH,
            max_live_batch: DEFAULT_MAX_BATCH,
        }
    }

    /// `true`: relists go page by page as the first list does
    /// ([`ReflectorSink::begin_paged_replace`]), whatever
    /// [`with_atomic_events`](Self::with_atomic_events) says: their objects are queued as
    /// `Replaced` deltas as their pages arrive and the tombstones of what they no longer list
    /// at their end, so a relist holds a page or two instead of the whole list, and the
    /// consumer applies it object by object (readers can see a mix of old and new). `false`
    /// (the default): a relist is one [`replace`](ReflectorSink::replace) of the whole list
    /// (one `ReplacedAll` in atomic mode).
    #[must_use]
    pub fn with_paged_relists(mut self, on: bool) -> Self {
        self.core.paged_relists = on;
        self
    }

    /// `true` (the default): one `ReplacedAll` per relist and one `SyncAll` per resync.
    pub fn with_atomic_events(mut self, atomic: bool) -> Self {
        self.atomic = atomic;
        self
    }

    /// `true`: append a `Bookmark` delta for every bookmark.
    pub fn with_bookmarks(mut self, emit: bool) -> Self {
        self.emit_bookmarks = emit;
        self
    }

    /// The largest batch a pop hands out (at least 1); also the largest past the initial
    /// population unless [`with_max_live_batch`](Self::with_max_live_batch) sets another.
    pub fn with_max_batch(mut self, max: usize) -> Self {
        self.max_batch = max.max(1);
        self.max_live_batch = self.max_batch;
        self
    }

    /// The largest batch a pop hands out once the initial population has been popped (at
    /// least 1); informers use 64, so that a live batch's notifications are not held back
    /// long.
    pub fn with_max_live_batch(mut self, max: usize) -> Self {
        self.max_live_batch = max.max(1);
        self
    }

    fn append(
        &self,
        entries: impl IntoIterator<Item = (Option<ObjectKey>, Delta<K>)>,
        replace: bool,
    ) -> Result<(), CacheError> {
        let mut s = self.core.lock_open()?;
        s.data.extend(entries);
        if replace {
            let n = s.data.len();
            s.populate(n);
        } else {
            s.populated = true;
        }
        drop(s);
        self.core.wake();
        Ok(())
    }

    fn push_object(&self, delta_of: fn(Arc<K>) -> Delta<K>, obj: Arc<K>) -> Result<(), CacheError> {
        let obj = self.inputs.transform(obj);
        let key = meta_namespace_key(obj.as_ref())?;
        // One delta: appended as it is, without a vector around it.
        self.append(std::iter::once((Some(key), delta_of(obj))), false)
    }

    /// Tombstones for every key the consumer will know once `log` drains (the known objects
    /// overlaid with the log) that `listed` does not hold: keys queued in `log` first, in
    /// queue order, then the known keys in the store's order. Part of a non-atomic replace.
    fn tombstones(&self, log: &Log<K>, listed: impl Fn(&str) -> bool) -> Vec<Entry<K>> {
        // The consumer's state once the log drains (known objects overlaid with the log), and
        // the order in which its keys get tombstones.
        let mut effective: FastMap<ObjectKey, Option<Arc<K>>> = FastMap::default();
        let mut queued_order: Vec<ObjectKey> = Vec::new();
        for (key, delta) in log {
            match (key, delta) {
                (Some(k), d) => {
                    let obj = match d {
                        Delta::Deleted(_) => None,
                        d => d.object().cloned(),
                    };
                    if effective.insert(k.clone(), obj).is_none() {
                        queued_order.push(k.clone());
                    }
                }
                (None, Delta::ReplacedAll { objects, .. }) => {
                    // Everything before is superseded: known objects included.
                    for v in effective.values_mut() {
                        *v = None;
                    }
                    for o in objects {
                        if let Ok(k) = meta_namespace_key(o.as_ref())
                            && effective.insert(k.clone(), Some(Arc::clone(o))).is_none()
                        {
                            queued_order.push(k);
                        }
                    }
                }
                (None, _) => {}
            }
        }
        let replaced_all = log
            .iter()
            .any(|(_, d)| matches!(d, Delta::ReplacedAll { .. }));
        let mut order = queued_order;
        if let Some(known) = &self.inputs.known_objects
            && !replaced_all
        {
            for key in known.list_keys() {
                if !effective.contains_key(key.as_str()) {
                    let obj = known.get_by_key(key.as_str());
                    effective.insert(key.clone(), obj);
                    order.push(key);
                }
            }
        }
        let mut entries = Vec::new();
        for key in order {
            if listed(key.as_str()) {
                continue;
            }
            if let Some(Some(obj)) = effective.remove(key.as_str()) {
                let tomb = DeletedFinalStateUnknown {
                    key: key.clone(),
                    obj,
                };
                entries.push((Some(key), Delta::Deleted(DeletedObject::Tombstone(tomb))));
            }
        }
        entries
    }

    /// Transforms and keys `objs` as `Replaced` entries (before taking the lock).
    fn replaced(&self, objs: Vec<Arc<K>>) -> Result<Vec<Entry<K>>, CacheError> {
        objs.into_iter()
            .map(|o| {
                let o = self.inputs.transform(o);
                let key = meta_namespace_key(o.as_ref())?;
                Ok((Some(key), Delta::Replaced(o)))
            })
            .collect()
    }

    /// Waits for the next batch, removes it and calls `process` with it; returns what
    /// `process` returned. See [`DeltaQueue::pop`].
    ///
    /// # Errors
    /// [`CacheError::Closed`] when closed and empty.
    ///
    /// # Cancel safety
    /// Cancel-safe: removal and `process` happen synchronously in the poll that completes.
    pub async fn pop_with<R>(&self, process: impl FnOnce(Popped<K>) -> R) -> Result<R, CacheError> {
        let take = |s: &mut Locked<Log<K>>| {
            if s.data.is_empty() {
                return None;
            }
            // Never straddle the end of the initial population.
            let limit = if s.initial_population_count > 0 {
                self.max_batch.min(s.initial_population_count)
            } else {
                self.max_live_batch
            };
            // Sized for the whole batch up front: neither grows delta by delta.
            let cap = limit.min(s.data.len());
            let mut deltas = Vec::with_capacity(cap);
            let mut seen: FastSet<ObjectKey> =
                FastSet::with_capacity_and_hasher(cap, FastState::default());
            while deltas.len() < limit {
                let Some((key, _)) = s.data.front() else {
                    break;
                };
                match key {
                    None if !deltas.is_empty() => break,
                    Some(k) if seen.contains(k) => break,
                    _ => {}
                }
                let Some((key, delta)) = s.data.pop_front() else {
                    break;
                };
                deltas.push(delta);
                match key {
                    None => break,
                    Some(k) => {
                        seen.insert(k);
                    }
                }
            }
            let n = deltas.len();
            Some((deltas, n))
        };
        self.core.pop_with(take, process).await
    }

    /// The deltas logged (what a paged relist waits on, see `FifoCore::room_for`).
    fn queued_len(log: &Log<K>) -> usize {
        log.len()
    }

    /// Closes the queue; see [`DeltaQueue::close`].
    pub fn close(&self) {
        self.core.close();
    }

    /// See [`DeltaQueue::has_synced`].
    pub fn has_synced(&self) -> bool {
        self.core.has_synced()
    }

    /// Number of queued deltas.
    pub fn len(&self) -> usize {
        self.core.lock().data.len()
    }

    /// True when no delta is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<K: Resource + Send + Sync + 'static> ReflectorSink<K> for RealFifo<K> {
    fn add(&self, obj: Arc<K>) -> Result<(), CacheError> {
        self.push_object(Delta::Added, obj)
    }

    fn update(&self, obj: Arc<K>) -> Result<(), CacheError> {
        self.push_object(Delta::Updated, obj)
    }

    fn delete(&self, obj: Arc<K>) -> Result<(), CacheError> {
        self.push_object(|o| Delta::Deleted(DeletedObject::Live(o)), obj)
    }

    fn replace(&self, objs: Vec<Arc<K>>, resource_version: &str) -> Result<(), CacheError> {
        let objs: Vec<Arc<K>> = objs.into_iter().map(|o| self.inputs.transform(o)).collect();
        if self.atomic {
            // Keys are checked now so a bad object is refused here, not at the consumer.
            for o in &objs {
                meta_namespace_key(o.as_ref())?;
            }
            let delta = Delta::ReplacedAll {
                resource_version: resource_version.to_owned(),
                objects: objs,
            };
            return self.append(vec![(None, delta)], true);
        }
        // As client-go: the tombstones first (keys already queued, in queue order; then the
        // known keys in the store's order), then the Replaced items in list order.
        let mut replaced = Vec::with_capacity(objs.len());
        let mut keys = FastSet::with_capacity_and_hasher(objs.len(), Default::default());
        for o in objs {
            let key = meta_namespace_key(o.as_ref())?;
            keys.insert(key.clone());
            replaced.push((Some(key), Delta::Replaced(o)));
        }
        let mut s = self.core.lock_open()?;
        let mut entries = self.tombstones(&s.data, |k| keys.contains(k));
        entries.extend(replaced);
        s.data.extend(entries);
        let n = s.data.len();
        s.populate(n);
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
            .begin_paged(|log: &Log<K>| known_empty && log.is_empty())
    }

    /// Queues the page's objects as `Replaced` deltas (in atomic mode too: the consumer's
    /// store is still empty, or the finish tombstones what a failed earlier list or what a
    /// paged relist no longer lists).
    fn replace_page(&self, objs: Vec<Arc<K>>) -> Result<(), CacheError> {
        let entries = self.replaced(objs)?;
        let mut guard = self.core.lock_open()?;
        let s = &mut *guard;
        let paged = s.paged.as_mut().ok_or(CacheError::NoPagedReplace)?;
        for (key, _) in &entries {
            if let Some(key) = key {
                paged.saw(key);
            }
        }
        if !s.populated {
            s.initial_population_count += entries.len();
        }
        s.data.extend(entries);
        drop(guard);
        self.core.wake();
        Ok(())
    }

    fn finish_paged_replace(&self, _resource_version: &str) -> Result<(), CacheError> {
        self.core.finish_paged(
            |log, seen| {
                let tombstones = self.tombstones(log, |k| seen.contains(k));
                log.extend(tombstones);
            },
            |log| log.len(),
        )
    }

    fn resync(&self) -> Result<(), CacheError> {
        if self.atomic {
            return self.append(vec![(None, Delta::SyncAll)], false);
        }
        let Some(known) = &self.inputs.known_objects else {
            return Ok(());
        };
        let mut s = self.core.lock_open()?;
        // A key with deltas still in the log would be rolled back by a stale Sync: skip it.
        let pending: FastSet<ObjectKey> = s.data.iter().filter_map(|(k, _)| k.clone()).collect();
        for key in known.list_keys() {
            if pending.contains(key.as_str()) {
                continue;
            }
            if let Some(obj) = known.get_by_key(key.as_str()) {
                s.data.push_back((Some(key), Delta::Sync(obj)));
            }
        }
        drop(s);
        self.core.wake();
        Ok(())
    }

    fn bookmark(&self, resource_version: &str) -> Result<(), CacheError> {
        if !self.emit_bookmarks {
            return Ok(());
        }
        let delta = Delta::Bookmark {
            resource_version: resource_version.to_owned(),
        };
        self.append(vec![(None, delta)], false)
    }
}

impl_delta_queue!(RealFifo);
impl_inputs_builders!(RealFifo);

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use k8s_openapi::api::core::v1::Pod;

    use super::*;
    use crate::cache::controller::process_deltas;
    use crate::cache::fifo::DeltaType;
    use crate::cache::processor::Notification;
    use crate::cache::store::Indexer;
    use crate::cache::store::TransformFunc;
    use crate::test_support::{describe, kinds, pod, pod_rv, rv};

    async fn pop(f: &RealFifo<Pod>) -> Popped<Pod> {
        f.pop_with(|p| p).await.unwrap()
    }

    #[tokio::test]
    async fn deltas_come_out_in_arrival_order_without_dedup() {
        let f = RealFifo::new();
        f.add(pod_rv("ns", "a", "1")).unwrap();
        f.update(pod_rv("ns", "a", "2")).unwrap();
        f.add(pod_rv("ns", "b", "1")).unwrap();
        f.delete(pod_rv("ns", "c", "1")).unwrap();
        f.delete(pod_rv("ns", "c", "2")).unwrap();
        // A batch stops before a key repeats.
        let p1 = pop(&f).await;
        assert_eq!(kinds(&p1.deltas), [DeltaType::Added]);
        let p2 = pop(&f).await;
        assert_eq!(
            kinds(&p2.deltas),
            [DeltaType::Updated, DeltaType::Added, DeltaType::Deleted]
        );
        let p3 = pop(&f).await;
        assert_eq!(kinds(&p3.deltas), [DeltaType::Deleted], "no delete dedup");
        assert_eq!(rv(p3.deltas[0].object().unwrap()), "2");
    }

    #[tokio::test]
    async fn batches_hold_at_most_max_batch_distinct_keys() {
        let f = RealFifo::new();
        for i in 0..2500 {
            f.add(pod("ns", &format!("p{i}"), &[])).unwrap();
        }
        let sizes = [
            pop(&f).await.deltas.len(),
            pop(&f).await.deltas.len(),
            pop(&f).await.deltas.len(),
        ];
        assert_eq!(sizes, [1000, 1000, 500]);
        let g = RealFifo::new().with_max_batch(2);
        for i in 0..3 {
            g.add(pod("ns", &format!("p{i}"), &[])).unwrap();
        }
        assert_eq!(pop(&g).await.deltas.len(), 2);
    }

    /// The initial population goes in large batches, what follows in live-sized ones.
    #[tokio::test]
    async fn live_batches_after_the_initial_population_hold_at_most_max_live_batch() {
        let f = RealFifo::new()
            .with_atomic_events(false)
            .with_max_live_batch(INFORMER_MAX_LIVE_BATCH);
        let listed = (0..1500)
            .map(|i| pod("ns", &format!("p{i}"), &[]))
            .collect();
        f.replace(listed, "1").unwrap();
        for i in 0..100 {
            f.update(pod("ns", &format!("p{i}"), &[])).unwrap();
        }
        let first = pop(&f).await;
        assert_eq!((first.deltas.len(), first.is_in_initial_list), (1000, true));
        let second = pop(&f).await;
        assert_eq!(
            (second.deltas.len(), second.is_in_initial_list),
            (500, true)
        );
        assert!(f.has_synced());
        let live = [pop(&f).await.deltas.len(), pop(&f).await.deltas.len()];
        assert_eq!(
            live,
            [INFORMER_MAX_LIVE_BATCH, 100 - INFORMER_MAX_LIVE_BATCH]
        );
    }

    #[tokio::test]
    async fn atomic_replace_and_resync_are_single_deltas_popped_alone() {
        let f = RealFifo::new().with_bookmarks(true);
        f.add(pod("ns", "a", &[])).unwrap();
        f.replace(vec![pod("ns", "b", &[])], "7").unwrap();
        f.add(pod("ns", "c", &[])).unwrap();
        f.resync().unwrap();
        f.bookmark("8").unwrap();
        assert_eq!(kinds(&pop(&f).await.deltas), [DeltaType::Added]);
        let r = pop(&f).await;
        assert!(matches!(
            &r.deltas[..],
            [Delta::ReplacedAll { resource_version, objects }] if resource_version == "7" && objects.len() == 1
        ));
        assert_eq!(kinds(&pop(&f).await.deltas), [DeltaType::Added]);
        assert_eq!(kinds(&pop(&f).await.deltas), [DeltaType::SyncAll]);
        assert_eq!(kinds(&pop(&f).await.deltas), [DeltaType::Bookmark]);
        assert!(f.is_empty());
    }

    #[tokio::test]
    async fn bookmarks_are_ignored_unless_enabled() {
        let f = RealFifo::<Pod>::new();
        f.bookmark("5").unwrap();
        assert!(f.is_empty());
    }

    #[tokio::test]
    async fn atomic_replace_reconciles_deletes_first_then_list_order() {
        let idx = Indexer::<Pod>::default();
        idx.add(pod_rv("ns", "a", "1")).unwrap();
        idx.add(pod_rv("ns", "b", "1")).unwrap();
        let f = RealFifo::new();
        f.replace(vec![pod_rv("ns", "c", "2"), pod_rv("ns", "a", "2")], "2")
            .unwrap();
        let p = pop(&f).await;
        let mut seen = Vec::new();
        process_deltas(&idx, p.deltas, p.is_in_initial_list, &mut |n| seen.push(n)).unwrap();
        let described: Vec<String> = seen.iter().map(describe).collect();
        assert_eq!(described, ["tombstone ns/b", "add ns/c", "update ns/a"]);
        assert!(matches!(
            &seen[1],
            Notification::Add {
                is_in_initial_list: true,
                ..
            }
        ));
        assert!(
            matches!(&seen[2], Notification::Update { old, new } if rv(old) == "1" && rv(new) == "2")
        );
        assert_eq!(idx.len(), 2);
        assert!(idx.get_by_key("ns/b").is_none());
    }

    #[tokio::test]
    async fn sync_all_updates_every_stored_object_with_itself() {
        let idx = Indexer::<Pod>::default();
        idx.add(pod_rv("ns", "a", "1")).unwrap();
        idx.add(pod_rv("ns", "b", "1")).unwrap();
        let f = RealFifo::new();
        f.resync().unwrap();
        let p = pop(&f).await;
        let mut seen = Vec::new();
        process_deltas(&idx, p.deltas, false, &mut |n| seen.push(n)).unwrap();
        assert_eq!(seen.len(), 2);
        for n in &seen {
            assert!(matches!(n, Notification::Update { old, new } if Arc::ptr_eq(old, new)));
        }
    }

    #[tokio::test]
    async fn non_atomic_replace_tombstones_known_and_queued_keys() {
        let known = Arc::new(Indexer::<Pod>::default());
        known.add(pod_rv("ns", "k", "1")).unwrap();
        known.add(pod_rv("ns", "deleted", "1")).unwrap();
        let f = RealFifo::new()
            .with_atomic_events(false)
            .with_known_objects(known);
        f.add(pod_rv("ns", "q", "1")).unwrap();
        f.delete(pod_rv("ns", "deleted", "2")).unwrap();
        f.replace(vec![pod_rv("ns", "x", "3")], "3").unwrap();
        let mut all = Vec::new();
        while !f.is_empty() {
            all.extend(pop(&f).await.deltas);
        }
        let mut tombs: Vec<String> = all
            .iter()
            .filter(|d| d.is_tombstone())
            .filter_map(|d| d.key().and_then(|k| k.ok()).map(|k| k.to_string()))
            .collect();
        tombs.sort();
        assert_eq!(
            tombs,
            ["ns/k", "ns/q"],
            "the already-deleted key gets no tombstone"
        );
        assert!(all.iter().any(|d| d.delta_type() == DeltaType::Replaced));
    }

    #[tokio::test]
    async fn non_atomic_replace_queues_tombstones_first_in_client_go_order() {
        let known = Arc::new(Indexer::<Pod>::default());
        for name in ["k1", "k2", "k3", "k4", "kept"] {
            known.add(pod_rv("ns", name, "1")).unwrap();
        }
        let f = RealFifo::new()
            .with_atomic_events(false)
            .with_known_objects(known.clone());
        // Queued: q2 then q1 then k3 (a known key, queued: it goes with the queued keys).
        f.add(pod_rv("ns", "q2", "2")).unwrap();
        f.add(pod_rv("ns", "q1", "3")).unwrap();
        f.update(pod_rv("ns", "k3", "4")).unwrap();
        f.update(pod_rv("ns", "q2", "5")).unwrap();
        f.replace(
            vec![pod_rv("ns", "new", "6"), pod_rv("ns", "kept", "6")],
            "6",
        )
        .unwrap();
        let mut all = Vec::new();
        while !f.is_empty() {
            all.extend(pop(&f).await.deltas);
        }
        let tail: Vec<(DeltaType, String, String)> = all[4..]
            .iter()
            .map(|d| {
                (
                    d.delta_type(),
                    d.key().unwrap().unwrap().to_string(),
                    d.object().map(|o| rv(o).to_owned()).unwrap_or_default(),
                )
            })
            .collect();
        let mut want: Vec<(DeltaType, String, String)> = vec![
            (DeltaType::Deleted, "ns/q2".into(), "5".into()),
            (DeltaType::Deleted, "ns/q1".into(), "3".into()),
            (DeltaType::Deleted, "ns/k3".into(), "4".into()),
        ];
        // Then the known keys nothing queued, in the store's order.
        for key in known.list_keys() {
            if ["ns/k1", "ns/k2", "ns/k4"].contains(&key.as_str()) {
                want.push((DeltaType::Deleted, key.to_string(), "1".into()));
            }
        }
        want.push((DeltaType::Replaced, "ns/new".into(), "6".into()));
        want.push((DeltaType::Replaced, "ns/kept".into(), "6".into()));
        assert_eq!(tail, want);
        assert!(all[4..7].iter().all(|d| d.is_tombstone()));
    }

    #[tokio::test]
    async fn non_atomic_resync_skips_keys_with_pending_deltas() {
        let known = Arc::new(Indexer::<Pod>::default());
        known.add(pod_rv("ns", "a", "1")).unwrap();
        known.add(pod_rv("ns", "b", "1")).unwrap();
        let f = RealFifo::new()
            .with_atomic_events(false)
            .with_known_objects(known);
        f.update(pod_rv("ns", "a", "2")).unwrap();
        f.resync().unwrap();
        let p = pop(&f).await;
        assert_eq!(kinds(&p.deltas), [DeltaType::Updated, DeltaType::Sync]);
        assert_eq!(p.deltas[1].key().unwrap().unwrap().as_str(), "ns/b");
    }

    #[tokio::test]
    async fn has_synced_after_everything_the_first_replace_queued_is_processed() {
        let f = RealFifo::new().with_atomic_events(false);
        assert!(!f.has_synced());
        f.replace(vec![pod("ns", "a", &[])], "1").unwrap();
        f.add(pod("ns", "a", &[])).unwrap();
        f.add(pod("ns", "late", &[])).unwrap();
        assert!(!f.has_synced());
        let first = f
            .pop_with(|p| (p.deltas.len(), p.is_in_initial_list, f.has_synced()))
            .await
            .unwrap();
        assert_eq!(first, (1, true, false), "synced only after processing");
        assert!(f.has_synced());
        let rest = pop(&f).await;
        assert_eq!((rest.deltas.len(), rest.is_in_initial_list), (2, false));
    }

    #[tokio::test]
    async fn an_add_before_the_first_replace_marks_the_queue_populated_as_client_go() {
        let f = RealFifo::new();
        f.add(pod("ns", "early", &[])).unwrap();
        f.replace(vec![pod("ns", "a", &[])], "1").unwrap();
        assert!(f.has_synced());
    }

    #[tokio::test]
    async fn batches_do_not_straddle_the_initial_population() {
        let f = RealFifo::new().with_atomic_events(false);
        f.replace(vec![pod("ns", "a", &[]), pod("ns", "b", &[])], "1")
            .unwrap();
        f.add(pod("ns", "c", &[])).unwrap();
        let p = pop(&f).await;
        assert_eq!((p.deltas.len(), p.is_in_initial_list), (2, true));
        let p = pop(&f).await;
        assert_eq!((p.deltas.len(), p.is_in_initial_list), (1, false));
    }

    #[tokio::test]
    async fn transformer_runs_once_and_never_on_tombstones() {
        static CALLS: AtomicUsize = AtomicUsize::new(0);
        let t: TransformFunc<Pod> = Arc::new(|p| {
            CALLS.fetch_add(1, Ordering::SeqCst);
            p
        });
        let known = Arc::new(Indexer::<Pod>::default());
        known.add(pod("ns", "k", &[])).unwrap();
        let f = RealFifo::new()
            .with_atomic_events(false)
            .with_known_objects(known)
            .with_transformer(t);
        f.add(pod("ns", "a", &[])).unwrap();
        f.update(pod("ns", "a", &[])).unwrap();
        f.delete(pod("ns", "a", &[])).unwrap();
        f.replace(vec![pod("ns", "b", &[])], "1").unwrap();
        f.resync().unwrap();
        assert_eq!(CALLS.load(Ordering::SeqCst), 4);
    }

    #[tokio::test(start_paused = true)]
    async fn pop_unblocks_on_close() {
        let f = Arc::new(RealFifo::<Pod>::new());
        let g = Arc::clone(&f);
        let waiter = tokio::spawn(async move { g.pop_with(|_| ()).await });
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        assert!(!waiter.is_finished());
        f.close();
        assert!(matches!(waiter.await.unwrap(), Err(CacheError::Closed)));
        assert!(matches!(f.resync(), Err(CacheError::Closed)));
    }

    #[tokio::test]
    async fn a_dropped_pop_future_loses_nothing() {
        let f = RealFifo::<Pod>::new();
        {
            let fut = f.pop_with(|_| ());
            tokio::pin!(fut);
            assert!(futures::poll!(fut.as_mut()).is_pending());
        }
        f.add(pod("ns", "a", &[])).unwrap();
        assert_eq!(pop(&f).await.deltas.len(), 1);
    }

    #[test]
    fn queues_are_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<RealFifo<Pod>>();
        check::<DeltaFifo<Pod>>();
    }

    use crate::cache::fifo::DeltaFifo;
}
