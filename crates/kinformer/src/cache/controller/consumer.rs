//! The informer's one consumer of its delta queue: pops an item, applies it to the indexer and
//! hands the notifications to the processor — on the process loop's task until the initial
//! sync, and from then on on the task that queued the item (the watch's), so a live event
//! reaches the cache and the non-blocking handlers without waking another task.
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

use std::sync::Arc;

use futures::FutureExt;
use kube_core::Resource;
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::cache::controller::apply_deltas;
use crate::cache::fifo::{DeltaQueue, Popped};
use crate::cache::meta::CacheError;
use crate::cache::processor::{ProcessorListener, SharedProcessor};
use crate::cache::store::Indexer;

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

/// Pops, applies and distributes (see the module).
pub(crate) struct DeltaConsumer<K> {
    pub(crate) queue: Arc<dyn DeltaQueue<K>>,
    indexer: Arc<Indexer<K>>,
    processor: Arc<SharedProcessor<K>>,
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
    ) -> Self {
        Self {
            queue,
            indexer,
            processor,
            block_deltas,
            live: Mutex::new(false),
            backlog: Notify::new(),
        }
    }

    /// Makes room in the indexer for a list of `total` objects (a hint, see
    /// [`ReflectorSink::list_size_hint`](crate::cache::fifo::ReflectorSink::list_size_hint)).
    pub(crate) fn reserve(&self, total: usize) {
        self.indexer.reserve(total);
    }

    /// Applies `popped` and distributes its notifications (one buffer lock and at most one
    /// wake-up per listener for the batch). With `offer`, non-blocking handlers may be
    /// delivered to on this task: the listeners to help are returned, to be helped once no
    /// lock is held.
    pub(crate) fn process(&self, popped: Popped<K>, offer: bool) -> Vec<Arc<ProcessorListener<K>>> {
        let _blocked = self.block_deltas.lock();
        let mut notifications = Vec::with_capacity(popped.deltas.len());
        let res = apply_deltas(
            &self.indexer,
            popped.deltas,
            popped.is_in_initial_list,
            &mut |n, sync| notifications.push((n, sync)),
        );
        let helped = self.processor.distribute_marked(notifications, offer);
        if let Err(e) = res {
            tracing::warn!(error = %e, "informer: a delta could not be applied; skipped");
        }
        helped
    }

    /// Pops and processes one queued item without waiting, under the consumer lock. `offer`
    /// as in [`process`](Self::process); helping happens before the lock is released.
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
        let mut helped = Vec::new();
        let mut process = |popped: Popped<K>| helped = self.process(popped, offer);
        // Something is queued and only consumers pop, under this lock: the pop completes at
        // its first poll.
        let res = self.queue.pop(&mut process).now_or_never();
        for listener in helped {
            listener.help();
        }
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

    /// Called by the sink after each write: once live processing was handed over, processes
    /// what is queued on this task (non-blocking handlers included) for at most about
    /// [`WRITER_SLICE`], and wakes the process loop for the rest.
    pub(crate) fn after_write(&self) {
        let consumer = self.live.lock();
        if !*consumer {
            return;
        }
        let started = std::time::Instant::now();
        while self.pop_locked(true) == PopNow::Processed {
            if started.elapsed() > WRITER_SLICE && !self.queue.is_empty() {
                drop(consumer);
                self.backlog.notify_one();
                return;
            }
        }
    }

    /// Resolves when a write left a backlog for the process loop.
    pub(crate) async fn backlog(&self) {
        self.backlog.notified().await;
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;
    use tokio::sync::mpsc::unbounded_channel;

    use super::*;
    use crate::cache::controller::SyncingSink;
    use crate::cache::fifo::{RealFifo, ReflectorSink};
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
        ));
        let sink = SyncingSink {
            queue: Arc::clone(&queue),
            synced: Arc::clone(&synced),
            consumer: Some(Arc::clone(&consumer)),
        };
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
        let processor = Arc::new(SharedProcessor::new(synced as Arc<dyn HasSynced>));
        let consumer = DeltaConsumer::new(
            Arc::clone(&queue),
            Arc::new(Indexer::default()),
            processor,
            Arc::new(Mutex::new(())),
        );
        assert_eq!(consumer.pop_now(true), PopNow::Empty);
        queue.add(pod_rv("ns", "a", "1")).unwrap();
        queue.close();
        assert_eq!(consumer.pop_now(true), PopNow::Processed);
        assert_eq!(consumer.pop_now(true), PopNow::Closed);
    }
}
