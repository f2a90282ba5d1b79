//! DeltaFIFO: per-key delta lists in a FIFO of keys (client-go's legacy informer queue).
//!
//! Properties:
//! - A key holds one place in the queue while its deltas accumulate: a busy object cannot
//!   starve others, and the consumer sees every delta of a key together, oldest first.
//! - Only consecutive deletes are deduplicated (the last two, when both are `Deleted`).
//! - `replace` queues `Replaced` for listed objects and tombstones for keys that vanished,
//!   whether queued or only known to the consumer (the `known_objects` store).
//! - `resync` queues `Sync` for known objects with nothing queued.
//! - `has_synced` turns true once everything the first `replace` queued has been popped and
//!   processed.
//! - A transformer runs once per object on add/update/delete/replace, never on tombstones or
//!   resyncs; it runs before the queue's lock is taken.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::sync::Arc;

use kube_core::Resource;
use parking_lot::Mutex;
use tokio::sync::Notify;

use super::queue::{KnownObjects, PopFuture, Popped, ProcessFn, Queue};
use super::transform::TransformFunc;
use super::{
    CacheError, DeletedFinalStateUnknown, DeletedObject, Delta, ObjectKey, ReflectorSink,
    meta_namespace_key,
};

struct State<K> {
    /// Invariant: a key is in `items` iff it is in `queue`, exactly once; no delta list is
    /// empty.
    items: HashMap<ObjectKey, Vec<Delta<K>>>,
    queue: VecDeque<ObjectKey>,
    /// The first `replace` (or a pop-free `has_synced` check after it) happened.
    populated: bool,
    /// Items of the initial population not yet popped.
    initial_population_count: usize,
    /// Items of the initial population popped but still being processed.
    initial_in_flight: usize,
    closed: bool,
}

impl<K> State<K> {
    fn has_synced(&self) -> bool {
        self.populated && self.initial_population_count == 0 && self.initial_in_flight == 0
    }

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

/// The legacy per-key delta queue; see the [module docs](self).
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::Pod;
/// use kinformer::cache::{Delta, DeltaFifo, ReflectorSink};
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
    state: Mutex<State<K>>,
    notify: Notify,
    known_objects: Option<Arc<dyn KnownObjects<K>>>,
    transformer: Option<TransformFunc<K>>,
    emit_delta_type_replaced: bool,
}

impl<K> fmt::Debug for DeltaFifo<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.state.lock();
        f.debug_struct("DeltaFifo")
            .field("queued_keys", &s.queue.len())
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
            state: Mutex::new(State {
                items: HashMap::new(),
                queue: VecDeque::new(),
                populated: false,
                initial_population_count: 0,
                initial_in_flight: 0,
                closed: false,
            }),
            notify: Notify::new(),
            known_objects: None,
            transformer: None,
            emit_delta_type_replaced: true,
        }
    }

    /// Sets the consumer's store (normally the informer's [`Indexer`](super::Indexer)): used to
    /// find deletions missed during a relist, to resync, and to decide whether a delete of an
    /// unqueued key is relevant.
    pub fn with_known_objects(mut self, known: Arc<dyn KnownObjects<K>>) -> Self {
        self.known_objects = Some(known);
        self
    }

    /// Sets a transformer run once per incoming object (never on tombstones or resyncs).
    pub fn with_transformer(mut self, transformer: TransformFunc<K>) -> Self {
        self.transformer = Some(transformer);
        self
    }

    /// `false` queues relisted objects as `Sync` instead of `Replaced` (client-go's behaviour
    /// before `EmitDeltaTypeReplaced`).
    pub fn with_emit_delta_type_replaced(mut self, emit: bool) -> Self {
        self.emit_delta_type_replaced = emit;
        self
    }

    fn transform(&self, obj: Arc<K>) -> Arc<K> {
        match &self.transformer {
            Some(t) => t(obj),
            None => obj,
        }
    }

    fn push(&self, delta_of: fn(Arc<K>) -> Delta<K>, obj: Arc<K>) -> Result<(), CacheError> {
        let obj = self.transform(obj);
        let key = meta_namespace_key(obj.as_ref())?;
        let mut s = self.state.lock();
        if s.closed {
            return Err(CacheError::Closed);
        }
        s.populated = true;
        s.queue_action(key, delta_of(obj));
        drop(s);
        self.notify.notify_waiters();
        Ok(())
    }

    /// Waits for the next key, removes it and calls `process` with its deltas; returns what
    /// `process` returned. See [`Queue::pop`].
    ///
    /// # Errors
    /// [`CacheError::Closed`] when closed and empty.
    ///
    /// # Cancel safety
    /// Cancel-safe: removal and `process` happen synchronously in the poll that completes.
    pub async fn pop_with<R>(&self, process: impl FnOnce(Popped<K>) -> R) -> Result<R, CacheError> {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let popped = {
                let mut s = self.state.lock();
                match s.queue.pop_front() {
                    Some(key) => {
                        let deltas = s.items.remove(key.as_str()).unwrap_or_default();
                        debug_assert!(!deltas.is_empty(), "queued key without deltas");
                        let is_in_initial_list = !s.has_synced();
                        let counted = s.initial_population_count > 0;
                        if counted {
                            s.initial_population_count -= 1;
                            s.initial_in_flight += 1;
                        }
                        Some((
                            Popped {
                                deltas,
                                is_in_initial_list,
                            },
                            counted,
                        ))
                    }
                    None if s.closed => return Err(CacheError::Closed),
                    None => None,
                }
            };
            if let Some((popped, counted)) = popped {
                let _done = InFlight {
                    state: &self.state,
                    counted,
                };
                return Ok(process(popped));
            }
            notified.await;
        }
    }

    /// Closes the queue; see [`Queue::close`].
    pub fn close(&self) {
        self.state.lock().closed = true;
        self.notify.notify_waiters();
    }

    /// See [`Queue::has_synced`].
    pub fn has_synced(&self) -> bool {
        self.state.lock().has_synced()
    }

    /// Number of queued keys.
    pub fn len(&self) -> usize {
        self.state.lock().queue.len()
    }

    /// True when no key is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The keys currently queued, in queue order.
    pub fn list_keys(&self) -> Vec<ObjectKey> {
        self.state.lock().queue.iter().cloned().collect()
    }

    /// A copy of the deltas queued for `key`.
    pub fn get_by_key(&self, key: &str) -> Option<Vec<Delta<K>>> {
        self.state.lock().items.get(key).cloned()
    }
}

/// Marks an initial-population item processed when dropped (also if `process` panics).
struct InFlight<'a, K> {
    state: &'a Mutex<State<K>>,
    counted: bool,
}

impl<K> Drop for InFlight<'_, K> {
    fn drop(&mut self) {
        if self.counted {
            let mut s = self.state.lock();
            s.initial_in_flight = s.initial_in_flight.saturating_sub(1);
        }
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
        let obj = self.transform(obj);
        let key = meta_namespace_key(obj.as_ref())?;
        let mut s = self.state.lock();
        if s.closed {
            return Err(CacheError::Closed);
        }
        s.populated = true;
        let queued = s.items.contains_key(key.as_str());
        let known = match &self.known_objects {
            Some(k) => k.get_by_key(key.as_str()).is_some(),
            None => false,
        };
        if !queued && !known {
            // Neither queued nor known to the consumer: nothing to tell anyone.
            return Ok(());
        }
        s.queue_action(key, Delta::Deleted(DeletedObject::Live(obj)));
        drop(s);
        self.notify.notify_waiters();
        Ok(())
    }

    fn replace(&self, objs: Vec<Arc<K>>, _resource_version: &str) -> Result<(), CacheError> {
        let mut keyed = Vec::with_capacity(objs.len());
        for obj in objs {
            let obj = self.transform(obj);
            let key = meta_namespace_key(obj.as_ref())?;
            keyed.push((key, obj));
        }
        let mut s = self.state.lock();
        if s.closed {
            return Err(CacheError::Closed);
        }
        let mut keys: HashSet<ObjectKey> = HashSet::with_capacity(keyed.len());
        for (key, obj) in keyed {
            keys.insert(key.clone());
            let delta = if self.emit_delta_type_replaced {
                Delta::Replaced(obj)
            } else {
                Delta::Sync(obj)
            };
            s.queue_action(key, delta);
        }
        // Deletions of queued keys missing from the list: tombstone with the newest state.
        let mut queued_deletions = 0;
        let vanished: Vec<(ObjectKey, Arc<K>)> = s
            .queue
            .iter()
            .filter(|k| !keys.contains(k.as_str()))
            .filter_map(|k| {
                let newest = s.items.get(k.as_str())?.last()?.object()?;
                Some((k.clone(), Arc::clone(newest)))
            })
            .collect();
        for (key, obj) in vanished {
            queued_deletions += 1;
            let tomb = DeletedFinalStateUnknown {
                key: key.clone(),
                obj,
            };
            s.queue_action(key, Delta::Deleted(DeletedObject::Tombstone(tomb)));
        }
        // Deletions of known keys missing from the list with nothing queued.
        if let Some(known) = &self.known_objects {
            for key in known.list_keys() {
                if keys.contains(key.as_str()) || s.items.contains_key(key.as_str()) {
                    continue;
                }
                let Some(obj) = known.get_by_key(key.as_str()) else {
                    tracing::warn!(%key, "known key has no object during replace");
                    continue;
                };
                queued_deletions += 1;
                let tomb = DeletedFinalStateUnknown {
                    key: key.clone(),
                    obj,
                };
                s.queue_action(key, Delta::Deleted(DeletedObject::Tombstone(tomb)));
            }
        }
        if !s.populated {
            s.populated = true;
            s.initial_population_count = keys.len() + queued_deletions;
        }
        drop(s);
        self.notify.notify_waiters();
        Ok(())
    }

    fn resync(&self) -> Result<(), CacheError> {
        let Some(known) = &self.known_objects else {
            return Ok(());
        };
        let mut s = self.state.lock();
        if s.closed {
            return Err(CacheError::Closed);
        }
        let mut queued_any = false;
        for key in known.list_keys() {
            if s.items.contains_key(key.as_str()) {
                continue;
            }
            let Some(obj) = known.get_by_key(key.as_str()) else {
                continue;
            };
            s.queue_action(key, Delta::Sync(obj));
            queued_any = true;
        }
        drop(s);
        if queued_any {
            self.notify.notify_waiters();
        }
        Ok(())
    }
}

impl<K: Resource + Send + Sync + 'static> Queue<K> for DeltaFifo<K> {
    fn pop<'a>(&'a self, process: ProcessFn<'a, K>) -> PopFuture<'a> {
        Box::pin(async move { self.pop_with(process).await })
    }
    fn has_synced(&self) -> bool {
        DeltaFifo::has_synced(self)
    }
    fn close(&self) {
        DeltaFifo::close(self)
    }
    fn is_closed(&self) -> bool {
        self.state.lock().closed
    }
    fn len(&self) -> usize {
        DeltaFifo::len(self)
    }
}
