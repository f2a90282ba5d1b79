//! The basic work queue: deduplicating, fair, with processing tracking and shutdown.

use std::collections::VecDeque;
use std::fmt;
use std::hash::Hash;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::items::{ItemShards, ItemState, Times};
use super::metrics::{MetricsProvider, QueueMetrics};
use crate::hash::FastMap;

/// How often the "unfinished work" gauges of a named queue are refreshed.
const UNFINISHED_WORK_UPDATE_PERIOD: Duration = Duration::from_millis(500);

/// Construction options shared by [`Queue`], [`DelayingQueue`](super::DelayingQueue) and
/// [`RateLimitingQueue`](super::RateLimitingQueue).
///
/// Metrics are recorded only when both `name` is non-empty and `metrics_provider` is set.
#[derive(Clone, Default)]
pub struct QueueConfig {
    /// The queue's name, reported with its metrics (e.g. the controller's name).
    pub name: String,
    /// Where the queue's metrics go; `None` records nothing.
    pub metrics_provider: Option<Arc<dyn MetricsProvider>>,
}

impl QueueConfig {
    /// A config for a named queue reporting to `provider`.
    pub fn named(name: impl Into<String>, provider: Arc<dyn MetricsProvider>) -> Self {
        Self {
            name: name.into(),
            metrics_provider: Some(provider),
        }
    }
}

impl fmt::Debug for QueueConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueConfig")
            .field("name", &self.name)
            .field("metrics_provider", &self.metrics_provider.is_some())
            .finish()
    }
}

/// A deduplicating work queue, as client-go's `workqueue.Interface`.
///
/// Properties:
/// - **Fair**: items are handed out in the order they were added.
/// - **Stingy**: an item added many times before it is handed out is handed out once.
/// - **Exclusive**: an item is never handed to two workers at once. An item added again while a
///   worker processes it is remembered and handed out again after that worker calls
///   [`done`](Self::done).
/// - **Many producers and consumers**; the handle is cheap to clone and all clones share one
///   queue. Adding an item that is already queued or being processed locks only a shard of
///   the queue's item states (one of 64, by the item's hash), so producers on several threads
///   adding the same busy keys rarely wait for each other.
/// - **Shutdown**: after [`shut_down`](Self::shut_down) adds are ignored, queued items are still
///   handed out, and [`get`](Self::get) returns `None` once the queue is empty.
///
/// Every item taken with `get` must be given back with `done`, or the queue will never hand
/// it out again.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use kinformer::workqueue::Queue;
///
/// let queue = Queue::new();
/// queue.add("ns/a".to_string());
/// queue.add("ns/a".to_string()); // deduplicated
/// queue.add("ns/b".to_string());
/// assert_eq!(queue.len(), 2);
///
/// let item = queue.get().await.unwrap();
/// assert_eq!(item, "ns/a");
/// queue.add("ns/a".to_string()); // being processed: comes back after done
/// assert_eq!(queue.len(), 1);
/// queue.done(&item);
/// assert_eq!(queue.len(), 2);
///
/// queue.shut_down();
/// assert_eq!(queue.get().await.as_deref(), Some("ns/b"));
/// # }
/// ```
pub struct Queue<T> {
    inner: Arc<Inner<T>>,
}

impl<T> Clone for Queue<T> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<T> fmt::Debug for Queue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.inner.state.lock();
        f.debug_struct("Queue")
            .field("name", &self.inner.name)
            .field("queued", &state.queue.len())
            .field("processing", &self.inner.processing.load(Ordering::Relaxed))
            .field("shutting_down", &self.inner.is_shutting_down())
            .finish()
    }
}

struct Inner<T> {
    state: Mutex<State<T>>,
    /// Every item's state; locked before `state` when both are needed.
    items: ItemShards<T>,
    /// Set once by a shutdown, under `state`'s lock: read under that lock where an item is
    /// queued or the queue found empty, without it where an add finds its item already held.
    shutting_down: AtomicBool,
    /// Items handed out and not yet done (counted up under `state`'s lock as an item leaves
    /// `queue`, down by `done` without it).
    processing: AtomicUsize,
    /// A `shut_down_with_drain` caller is waiting for `processing` to reach zero. It and
    /// `processing` are read and written with `SeqCst`: of a last `done` (counts down, then
    /// reads this) and a drainer (sets this, then reads the count), one sees the other's write.
    drain: AtomicBool,
    /// Wakes workers blocked in `get`.
    item_ready: Notify,
    /// Wakes `shut_down_with_drain` callers when processing ends.
    drained: Notify,
    /// Cancelled on shutdown; background tasks of this queue and its wrappers watch it.
    shutdown: CancellationToken,
    metrics: Option<QueueMetrics>,
    name: String,
}

impl<T> Inner<T> {
    fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::Acquire)
    }

    /// Both shutdowns' start: the flags set under the state lock (`drain`: whether a
    /// shutdown waits for the items being processed), the background tasks stopped, and
    /// every waiting `get` woken.
    fn begin_shut_down(&self, drain: bool) {
        {
            let _state = self.state.lock();
            self.shutting_down.store(true, Ordering::Release);
            self.drain.store(drain, Ordering::SeqCst);
        }
        self.shutdown.cancel();
        self.item_ready.notify_waiters();
    }
}

/// Counts an add that made `item` dirty in the metrics, and when it became dirty.
fn record_add<T: Eq + Hash>(m: &QueueMetrics, times: &mut FastMap<T, Times>, item: T) {
    m.adds.inc();
    m.depth.inc();
    let t = times.entry(item).or_default();
    t.added_at.get_or_insert_with(Instant::now);
}

impl<T> Drop for Inner<T> {
    /// Stops the background tasks of a queue nobody holds any more.
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// Invariants (checked with `debug_assert!` where cheap), with `items` the item shards:
/// 1. an item is in `items` iff it is dirty or processing;
/// 2. an item is in `queue` iff it is dirty and not processing, and then exactly once — but
///    for the moment between a `get` taking it off `queue` and marking it processing in its
///    shard, in which an `add` of it finds it dirty (so is merged into this hand-out) and a
///    `done` of it finds it not processing (a stray `done`);
/// 3. `Inner::processing` counts the items handed out and not yet done (and, for a moment,
///    one that `done` queued again);
/// 4. `waiters` counts the `get` calls registered on `item_ready` (or just woken from it), so
///    that adds skip the wake-up when nobody waits.
struct State<T> {
    queue: VecDeque<T>,
    waiters: usize,
}

impl<T> Queue<T>
where
    T: Clone + Eq + Hash + Send + Sync + 'static,
{
    /// An unnamed queue that records no metrics.
    pub fn new() -> Self {
        Self::with_config(QueueConfig::default())
    }

    /// A queue built from `config`. A named queue with a metrics provider reports its metrics;
    /// if it is built inside a tokio runtime, a background task refreshes the "unfinished work"
    /// gauges every 500 ms until the queue shuts down.
    pub fn with_config(config: QueueConfig) -> Self {
        let metrics = match (&config.metrics_provider, config.name.is_empty()) {
            (Some(provider), false) => Some(QueueMetrics::new(provider.as_ref(), &config.name)),
            _ => None,
        };
        let has_metrics = metrics.is_some();
        let queue = Self {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    queue: VecDeque::new(),
                    waiters: 0,
                }),
                items: ItemShards::new(),
                shutting_down: AtomicBool::new(false),
                processing: AtomicUsize::new(0),
                drain: AtomicBool::new(false),
                item_ready: Notify::new(),
                drained: Notify::new(),
                shutdown: CancellationToken::new(),
                metrics,
                name: config.name,
            }),
        };
        if has_metrics {
            match tokio::runtime::Handle::try_current() {
                Ok(handle) => {
                    handle.spawn(update_unfinished_work_loop(
                        Arc::downgrade(&queue.inner),
                        queue.inner.shutdown.clone(),
                    ));
                }
                Err(_) => tracing::debug!(
                    queue = %queue.inner.name,
                    "queue built outside a tokio runtime: unfinished-work gauges are not refreshed"
                ),
            }
        }
        queue
    }

    /// Marks `item` as needing processing.
    ///
    /// Ignored while shutting down, and when the item is already waiting. If the item is being
    /// processed it is remembered and queued again when its worker calls [`done`](Self::done).
    pub fn add(&self, item: T) {
        if self.add_one(item) {
            self.inner.item_ready.notify_one();
        }
    }

    /// Adds every item of `items` (draining it), as [`add`](Self::add) would.
    pub(crate) fn add_all(&self, items: &mut Vec<T>) {
        let mut wake = 0;
        for item in items.drain(..) {
            wake += usize::from(self.add_one(item));
        }
        for _ in 0..wake {
            self.inner.item_ready.notify_one();
        }
    }

    /// `add` without the wake-up; true if the item was queued while a `get` waits.
    fn add_one(&self, item: T) -> bool {
        let inner = &*self.inner;
        if inner.is_shutting_down() {
            return false;
        }
        let mut shard = inner.items.lock(&item);
        if let Some(s) = shard.get_mut(&item) {
            // Held already: at most a processing item becomes dirty, in its shard alone.
            if !s.dirty {
                debug_assert!(s.processing);
                s.dirty = true;
                if let Some(m) = &inner.metrics {
                    record_add(m, shard.times(), item);
                }
            }
            return false;
        }
        let mut state = inner.state.lock();
        if inner.is_shutting_down() {
            return false;
        }
        if let Some(m) = &inner.metrics {
            record_add(m, shard.times(), item.clone());
        }
        state.queue.push_back(item.clone());
        shard.insert(
            item,
            ItemState {
                dirty: true,
                processing: false,
            },
        );
        state.waiters > 0
    }

    /// Waits for the next item and marks it as being processed; `None` once the queue is shut
    /// down and empty. The caller must call [`done`](Self::done) with the item when finished.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: an item is taken off the queue only in the same poll that returns it, so
    /// dropping the future never loses an item, and a wake-up meant for a dropped `get` is
    /// passed on to another waiting `get`.
    pub async fn get(&self) -> Option<T> {
        let inner = &*self.inner;
        let mut waiter = WaiterGuard {
            inner,
            registered: false,
        };
        loop {
            let mut notified = pin!(inner.item_ready.notified());
            let popped = {
                let mut state = inner.state.lock();
                if waiter.registered {
                    state.waiters -= 1;
                    waiter.registered = false;
                }
                match state.queue.pop_front() {
                    Some(item) => {
                        // Counted before the lock is released: a drainer never sees an
                        // item that has left the queue uncounted.
                        inner.processing.fetch_add(1, Ordering::SeqCst);
                        Some(item)
                    }
                    None if inner.is_shutting_down() => return None,
                    None => {
                        // Registered while holding the lock: an `add` after this point sees
                        // the count and wakes us.
                        notified.as_mut().enable();
                        state.waiters += 1;
                        waiter.registered = true;
                        None
                    }
                }
            };
            if let Some(item) = popped {
                self.mark_processing(&item);
                return Some(item);
            }
            notified.await;
        }
    }

    /// The second half of handing `item` out, in its shard (the queue's lock is released).
    fn mark_processing(&self, item: &T) {
        let inner = &*self.inner;
        let mut shard = inner.items.lock(item);
        match shard.get_mut(item) {
            Some(s) => {
                debug_assert!(s.dirty && !s.processing);
                s.dirty = false;
                s.processing = true;
            }
            None => {
                // Invariant 2 makes this unreachable; recover by tracking the item anyway.
                debug_assert!(false, "queued item missing from the item map");
                shard.insert(
                    item.clone(),
                    ItemState {
                        dirty: false,
                        processing: true,
                    },
                );
            }
        }
        if let Some(m) = &inner.metrics {
            let now = Instant::now();
            m.depth.dec();
            let times = shard.times();
            let t = match times.get_mut(item) {
                Some(t) => t,
                None => times.entry(item.clone()).or_default(),
            };
            if let Some(added) = t.added_at.take() {
                m.latency.observe((now - added).as_secs_f64());
            }
            t.started_at = Some(now);
        }
    }

    /// Marks `item` as done processing. If it was added again meanwhile it is queued again,
    /// even during shutdown. Calling `done` for an item that is not being processed does
    /// nothing.
    pub fn done(&self, item: &T) {
        let inner = &*self.inner;
        let mut shard = inner.items.lock(item);
        let Some(s) = shard.get_mut(item) else {
            return;
        };
        if !s.processing {
            // Queued, not handed out: a stray `done`. Leave the item as it was.
            return;
        }
        s.processing = false;
        let requeued = s.dirty;
        if !requeued {
            shard.remove(item);
        }
        if let Some(m) = &inner.metrics {
            let times = shard.times();
            if let Some(t) = times.get_mut(item) {
                if let Some(started) = t.started_at.take() {
                    m.work_duration.observe(started.elapsed().as_secs_f64());
                }
                if t.added_at.is_none() {
                    times.remove(item);
                }
            }
        }
        let wake_worker = requeued && {
            let mut state = inner.state.lock();
            state.queue.push_back(item.clone());
            state.waiters > 0
        };
        drop(shard);
        let wake_drain = inner.processing.fetch_sub(1, Ordering::SeqCst) == 1
            && inner.drain.load(Ordering::SeqCst);
        if wake_worker {
            inner.item_ready.notify_one();
        }
        if wake_drain {
            inner.drained.notify_waiters();
        }
    }

    /// The number of items waiting to be handed out (items being processed are not counted,
    /// unless they were added again).
    pub fn len(&self) -> usize {
        self.inner.state.lock().queue.len()
    }

    /// Whether no item is waiting to be handed out.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stops accepting items. Queued items are still handed out; once the queue is empty,
    /// every [`get`](Self::get) returns `None`. Cancels a pending
    /// [`shut_down_with_drain`](Self::shut_down_with_drain) wait.
    pub fn shut_down(&self) {
        let inner = &*self.inner;
        inner.begin_shut_down(false);
        inner.drained.notify_waiters();
    }

    /// Stops accepting items like [`shut_down`](Self::shut_down), then waits until no item is
    /// being processed. Workers must keep calling `get` and `done`: queued items are still
    /// handed out, and items added again while processing are still queued again by `done`.
    /// As client-go, it returns as soon as nothing is being processed, even if items are still
    /// queued for the workers to take.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: the queue is shut down at the first poll; dropping the future only stops
    /// the waiting.
    pub async fn shut_down_with_drain(&self) {
        let inner = &*self.inner;
        inner.begin_shut_down(true);
        loop {
            // Created before the check: a `done` that counts down to zero after it wakes it.
            let notified = inner.drained.notified();
            if inner.processing.load(Ordering::SeqCst) == 0 || !inner.drain.load(Ordering::SeqCst) {
                return;
            }
            notified.await;
        }
    }

    /// Whether [`shut_down`](Self::shut_down) or
    /// [`shut_down_with_drain`](Self::shut_down_with_drain) was called.
    pub fn is_shutting_down(&self) -> bool {
        self.inner.is_shutting_down()
    }

    /// The queue's name (empty for unnamed queues).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// A token cancelled when the queue shuts down.
    pub(crate) fn shutdown_token(&self) -> &CancellationToken {
        &self.inner.shutdown
    }

    /// Counts one retry in the queue's metrics.
    pub(crate) fn record_retry(&self) {
        if let Some(m) = &self.inner.metrics {
            m.retries.inc();
        }
    }
}

impl<T> Default for Queue<T>
where
    T: Clone + Eq + Hash + Send + Sync + 'static,
{
    fn default() -> Self {
        Self::new()
    }
}

/// Keeps `State::waiters` right when a waiting `get` is dropped.
struct WaiterGuard<'a, T> {
    inner: &'a Inner<T>,
    registered: bool,
}

impl<T> Drop for WaiterGuard<'_, T> {
    fn drop(&mut self) {
        if self.registered {
            self.inner.state.lock().waiters -= 1;
        }
    }
}

/// Refreshes the "unfinished work" gauges until the queue shuts down or is dropped.
async fn update_unfinished_work_loop<T>(inner: Weak<Inner<T>>, shutdown: CancellationToken)
where
    T: Send + Sync + 'static,
{
    let mut ticker = tokio::time::interval(UNFINISHED_WORK_UPDATE_PERIOD);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticker.tick().await;
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            _ = ticker.tick() => {}
        }
        let Some(inner) = inner.upgrade() else { return };
        let Some(m) = &inner.metrics else { return };
        let now = Instant::now();
        let (mut total, mut oldest) = (0.0_f64, 0.0_f64);
        inner.items.for_each(|shard| {
            for started in shard.times.values().filter_map(|t| t.started_at) {
                let age = (now - started).as_secs_f64();
                total += age;
                oldest = oldest.max(age);
            }
        });
        m.unfinished_work_seconds.set(total);
        m.longest_running_processor.set(oldest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<X: Send + Sync + Clone>() {}

    #[test]
    fn queue_handle_is_send_sync_and_clone() {
        assert_send_sync::<Queue<String>>();
    }

    #[tokio::test]
    async fn duplicate_adds_are_handed_out_once() {
        let q = Queue::new();
        q.add(1);
        q.add(2);
        q.add(1);
        assert_eq!(q.len(), 2);
        assert_eq!(q.get().await, Some(1));
        assert_eq!(q.get().await, Some(2));
        assert!(q.is_empty());
    }

    #[tokio::test]
    async fn item_added_while_processing_comes_back_only_after_done() {
        let q = Queue::new();
        q.add(7);
        let item = q.get().await.unwrap();
        q.add(7);
        q.add(7);
        assert_eq!(q.len(), 0, "must not be queued while processing");
        q.done(&item);
        assert_eq!(q.len(), 1);
        assert_eq!(q.get().await, Some(7));
        q.done(&7);
        assert!(q.is_empty());
        q.inner.items.for_each(|shard| assert!(shard.is_empty()));
    }

    #[tokio::test]
    async fn done_for_an_unknown_or_queued_item_changes_nothing() {
        let q = Queue::new();
        q.done(&1);
        q.add(2);
        q.done(&2);
        assert_eq!(q.len(), 1);
        assert_eq!(q.get().await, Some(2));
        assert!(q.is_empty());
    }

    #[tokio::test]
    async fn adds_after_shutdown_are_ignored_and_queue_drains_then_returns_none() {
        let q = Queue::new();
        q.add(1);
        q.add(2);
        q.shut_down();
        q.add(3);
        assert!(q.is_shutting_down());
        assert_eq!(q.get().await, Some(1));
        assert_eq!(q.get().await, Some(2));
        assert_eq!(q.get().await, None);
        assert_eq!(q.get().await, None);
    }

    #[tokio::test]
    async fn done_requeues_a_dirty_item_even_during_shutdown() {
        let q = Queue::new();
        q.add(1);
        let item = q.get().await.unwrap();
        q.add(1);
        q.shut_down();
        q.done(&item);
        assert_eq!(q.get().await, Some(1));
        q.done(&1);
        assert_eq!(q.get().await, None);
    }

    #[tokio::test]
    async fn dropped_get_future_loses_no_item() {
        let q: Queue<u32> = Queue::new();
        {
            let fut = q.get();
            let mut fut = pin!(fut);
            // Poll once so the future registers, then drop it before the item arrives.
            assert!(futures::poll!(fut.as_mut()).is_pending());
            q.add(5);
        }
        assert_eq!(q.get().await, Some(5));
        assert_eq!(q.inner.state.lock().waiters, 0);
    }

    #[tokio::test]
    async fn every_blocked_worker_is_woken_by_its_own_add() {
        let q: Queue<u32> = Queue::new();
        let workers: Vec<_> = (0..3)
            .map(|_| {
                let q = q.clone();
                tokio::spawn(async move { q.get().await })
            })
            .collect();
        tokio::task::yield_now().await;
        assert_eq!(q.inner.state.lock().waiters, 3);
        for i in 0..3 {
            q.add(i);
        }
        let mut got = Vec::new();
        for w in workers {
            got.push(w.await.unwrap().unwrap());
        }
        got.sort_unstable();
        assert_eq!(got, [0, 1, 2]);
        assert_eq!(q.inner.state.lock().waiters, 0);
    }
}
