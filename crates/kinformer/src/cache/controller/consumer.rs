//! The informer's consumer stage, the reflector's output port: each write the reflector makes
//! is queued, and from the initial sync on it is also popped, applied to the indexer and
//! delivered on the task that wrote it (the watch's), so a live event reaches the cache and the
//! non-blocking handlers without waking another task. Until the sync, and for backlogs, the
//! process loop ([`ProcessLoop`](super::ProcessLoop)) pops the same queue on a task of its own.
//!
//! Why: a live event handled by the process loop's task and a listener's task woke two more
//! tasks per event, which tokio spread over its workers; the watch connection was then read
//! late (over HTTP, a burst of updates reached the handlers milliseconds after it was sent).
//!
//! Properties:
//! - *One consumer at a time*: every pop and its processing happen under the consumer lock, so
//!   items are applied and distributed in queue order whichever task pops them.
//! - *Bounded on the writer's task*: a write drains what it queued for at most about
//!   [`WRITER_SLICE`]; a larger backlog (a resync, a relist's pages) goes to the process loop,
//!   which works through it a batch per turn, yielding between batches, as before the sync.
//! - Handlers that are not registered as non-blocking still run on their own tasks only: a
//!   slow or blocking handler holds up neither the watch nor the cache.

use std::pin::Pin;
use std::sync::Arc;

use futures::FutureExt;
use kube_core::Resource;
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::cache::controller::apply_deltas;
use crate::cache::fifo::{DeltaQueue, Popped, ReflectorSink};
use crate::cache::meta::CacheError;
use crate::cache::processor::{Delivery, SharedProcessor};
use crate::cache::store::Indexer;
use crate::cache::sync::SyncedFlag;

/// Longest a write drains the queue on the writer's task before it leaves the rest to the
/// process loop.
const WRITER_SLICE: std::time::Duration = std::time::Duration::from_millis(2);

/// What one pop found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum PopNow {
    /// An item was applied and distributed.
    Processed,
    /// Nothing was queued.
    Empty,
    /// The queue is closed and empty.
    Closed,
}

/// Queues, pops, applies and delivers (see the module).
pub(crate) struct DeltaConsumer<K> {
    pub(crate) queue: Arc<dyn DeltaQueue<K>>,
    indexer: Arc<Indexer<K>>,
    processor: Arc<SharedProcessor<K>>,
    /// Set as soon as the queue has synced: at a pop, or at the write that completes an empty
    /// first list (which queues nothing on a DeltaFIFO).
    pub(crate) synced: Arc<SyncedFlag>,
    /// Held while one popped item is applied and distributed; a handler added after the start
    /// takes it to register and replay the store atomically with respect to deltas.
    block_deltas: Arc<Mutex<()>>,
    /// The consumer lock; true once live processing moved to the writers' tasks.
    live: Mutex<bool>,
    /// Wakes the process loop when a write left a backlog.
    backlog: Notify,
}

impl<K: Resource + Send + Sync + 'static> DeltaConsumer<K> {
    /// A consumer whose live processing has not been handed over yet.
    pub(crate) fn new(
        queue: Arc<dyn DeltaQueue<K>>,
        indexer: Arc<Indexer<K>>,
        processor: Arc<SharedProcessor<K>>,
        block_deltas: Arc<Mutex<()>>,
        synced: Arc<SyncedFlag>,
    ) -> Self {
        Self {
            queue,
            indexer,
            processor,
            synced,
            block_deltas,
            live: Mutex::new(false),
            backlog: Notify::new(),
        }
    }

    /// Sets `synced` once the queue has synced.
    pub(crate) fn check_synced(&self) {
        if !self.synced.is_set() && self.queue.has_synced() {
            self.synced.set();
        }
    }

    /// Applies `popped` and distributes its notifications (one buffer lock and at most one
    /// wake-up per listener for the batch). With `offer`, non-blocking handlers may be
    /// delivered to on this task: the returned [`Delivery`] does it once no lock is held.
    pub(crate) fn process(&self, popped: Popped<K>, offer: bool) -> Delivery<K> {
        let _blocked = self.block_deltas.lock();
        let (notifications, res) =
            apply_deltas(&self.indexer, popped.deltas, popped.is_in_initial_list);
        let delivery = self.processor.distribute_marked(notifications, offer);
        if let Err(e) = res {
            tracing::warn!(error = %e, "informer: a delta could not be applied; skipped");
        }
        delivery
    }

    /// Pops and processes one queued item without waiting, under the consumer lock. `offer`
    /// as in [`process`](Self::process); the delivery happens before the lock is released.
    pub(crate) fn pop_now(&self, offer: bool) -> PopNow {
        let _consumer = self.live.lock();
        self.pop_locked(offer)
    }

    fn pop_locked(&self, offer: bool) -> PopNow {
        if self.queue.is_empty() {
            return if self.queue.is_closed() {
                PopNow::Closed
            } else {
                PopNow::Empty
            };
        }
        let mut delivery = Delivery::none();
        let mut process = |popped: Popped<K>| delivery = self.process(popped, offer);
        // Something is queued and only consumers pop, under this lock: the pop completes at
        // its first poll.
        let res = self.queue.pop(&mut process).now_or_never();
        // The pop is over (the queue's lock and the delta lock are released).
        delivery.deliver();
        match res {
            Some(Ok(())) => PopNow::Processed,
            Some(Err(CacheError::Closed)) => PopNow::Closed,
            Some(Err(e)) => {
                tracing::error!(error = %e, "informer: pop failed");
                PopNow::Closed
            }
            None => PopNow::Empty,
        }
    }

    /// Moves live processing to the writers' tasks (the process loop calls it once the
    /// informer has synced).
    pub(crate) fn hand_over(&self) {
        *self.live.lock() = true;
    }

    /// After each write: once live processing was handed over, processes what is queued on
    /// this task (non-blocking handlers included) for at most about [`WRITER_SLICE`], and
    /// wakes the process loop for the rest. Returns the write's result.
    fn written(&self, write: Result<(), CacheError>) -> Result<(), CacheError> {
        let consumer = self.live.lock();
        if !*consumer {
            return write;
        }
        let started = std::time::Instant::now();
        while self.pop_locked(true) == PopNow::Processed {
            if started.elapsed() > WRITER_SLICE && !self.queue.is_empty() {
                drop(consumer);
                self.backlog.notify_one();
                return write;
            }
        }
        write
    }

    /// Resolves when a write left a backlog for the process loop.
    pub(crate) async fn backlog(&self) {
        self.backlog.notified().await;
    }
}

/// The reflector writes here: into the queue, then (once live) through to the handlers.
impl<K: Resource + Send + Sync + 'static> ReflectorSink<K> for DeltaConsumer<K> {
    fn add(&self, obj: Arc<K>) -> Result<(), CacheError> {
        self.written(self.queue.add(obj))
    }
    fn update(&self, obj: Arc<K>) -> Result<(), CacheError> {
        self.written(self.queue.update(obj))
    }
    fn delete(&self, obj: Arc<K>) -> Result<(), CacheError> {
        self.written(self.queue.delete(obj))
    }
    fn replace(&self, objs: Vec<Arc<K>>, resource_version: &str) -> Result<(), CacheError> {
        let r = self.queue.replace(objs, resource_version);
        self.check_synced();
        self.written(r)
    }
    fn begin_paged_replace(&self) -> bool {
        self.queue.begin_paged_replace()
    }
    fn replace_page(&self, objs: Vec<Arc<K>>) -> Result<(), CacheError> {
        self.written(self.queue.replace_page(objs))
    }
    fn list_size_hint(&self, objects: usize) {
        // The queue holds a page or two; the indexer takes them all.
        self.indexer.reserve(objects);
    }
    fn room_for_page(&self, limit: usize) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        // The process loop pops this queue.
        self.queue.room_for(limit)
    }
    fn finish_paged_replace(&self, resource_version: &str) -> Result<(), CacheError> {
        let r = self.queue.finish_paged_replace(resource_version);
        self.check_synced();
        self.written(r)
    }
    fn resync(&self) -> Result<(), CacheError> {
        self.written(self.queue.resync())
    }
    fn bookmark(&self, resource_version: &str) -> Result<(), CacheError> {
        self.queue.bookmark(resource_version)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;
    use tokio::sync::mpsc::unbounded_channel;

    use super::*;
    use crate::cache::fifo::RealFifo;
    use crate::cache::handler::ResourceEventHandlerFuncs;
    use crate::cache::processor::{Consumer, ResyncPeriods};
    use crate::cache::sync::{HasSynced, SyncedFlag};
    use crate::test_support::{pod_rv, rv};

    /// Before the hand-over a write only queues; after it, the write returns with the delta
    /// applied to the cache and delivered to the non-blocking handler, while an ordinary
    /// handler's notification waits in its buffer for its task. (Current-thread runtime: the
    /// listeners' tasks run only when the test yields.)
    #[tokio::test(flavor = "current_thread")]
    async fn once_handed_over_a_write_is_applied_and_delivered_on_the_writers_task() {
        let queue: Arc<dyn DeltaQueue<Pod>> = Arc::new(RealFifo::new());
        let indexer = Arc::new(Indexer::default());
        let synced = Arc::new(SyncedFlag::new());
        let processor = Arc::new(SharedProcessor::new(
            Arc::clone(&synced) as Arc<dyn HasSynced>
        ));
        let (tx, mut quick) = unbounded_channel::<String>();
        let handler = ResourceEventHandlerFuncs::<Pod>::new().on_add(move |p, _| {
            let _ = tx.send(format!("add {}", rv(p)));
        });
        processor
            .add_consumer(
                // A budget no call overruns, even preempted on a loaded machine.
                Consumer::Nonblocking(Arc::new(handler), std::time::Duration::from_secs(10)),
                ResyncPeriods::NEVER,
                std::iter::empty(),
            )
            .unwrap();
        let ordinary = processor
            .add_consumer(
                Consumer::Handler(Arc::new(ResourceEventHandlerFuncs::<Pod>::new())),
                ResyncPeriods::NEVER,
                std::iter::empty(),
            )
            .unwrap();
        processor.start().unwrap();
        tokio::task::yield_now().await;
        let consumer = Arc::new(DeltaConsumer::new(
            Arc::clone(&queue),
            Arc::clone(&indexer),
            Arc::clone(&processor),
            Arc::new(Mutex::new(())),
            Arc::clone(&synced),
        ));
        let sink = Arc::clone(&consumer);
        sink.replace(vec![pod_rv("ns", "a", "1")], "1").unwrap();
        assert_eq!(queue.len(), 1, "before the hand-over a write only queues");
        assert!(indexer.get_by_key("ns/a").is_none());
        assert_eq!(consumer.pop_now(false), PopNow::Processed);
        assert!(queue.has_synced());
        synced.set(); // as the process loop does, then hands over
        consumer.hand_over();
        // The initial add went to the listeners' tasks.
        assert!(quick.try_recv().is_err());
        tokio::task::yield_now().await;
        assert_eq!(quick.try_recv().unwrap(), "add 1");
        assert_eq!(ordinary.pending(), 0);

        sink.add(pod_rv("ns", "b", "2")).unwrap();
        assert!(queue.is_empty(), "processed by the write");
        assert_eq!(
            indexer.get_by_key("ns/b").map(|p| rv(&p).to_owned()),
            Some("2".to_owned())
        );
        assert_eq!(quick.try_recv().unwrap(), "add 2", "delivered by the write");
        assert_eq!(ordinary.pending(), 1, "left to the ordinary handler's task");
        tokio::task::yield_now().await;
        assert_eq!(ordinary.pending(), 0);
        processor.shutdown().await;
    }

    /// Items still queued at the hand-over, and after it, are popped one at a time by
    /// whoever holds the consumer lock: `pop_now` reports empty and closed queues.
    #[tokio::test(flavor = "current_thread")]
    async fn pop_now_reports_empty_and_closed_queues() {
        let queue: Arc<dyn DeltaQueue<Pod>> = Arc::new(RealFifo::new());
        let synced = Arc::new(SyncedFlag::new_set());
        let processor = Arc::new(SharedProcessor::new(
            Arc::clone(&synced) as Arc<dyn HasSynced>
        ));
        let consumer = DeltaConsumer::new(
            Arc::clone(&queue),
            Arc::new(Indexer::default()),
            processor,
            Arc::new(Mutex::new(())),
            synced,
        );
        assert_eq!(consumer.pop_now(true), PopNow::Empty);
        queue.add(pod_rv("ns", "a", "1")).unwrap();
        queue.close();
        assert_eq!(consumer.pop_now(true), PopNow::Processed);
        assert_eq!(consumer.pop_now(true), PopNow::Closed);
    }
}
