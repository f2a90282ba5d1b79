//! The process loop: the consumer stage's own task. It pops deltas until the initial sync,
//! then hands live processing over to the writers' tasks and works through the backlogs their
//! writes leave (see [`DeltaConsumer`]).

use std::sync::Arc;

use kube_core::Resource;
use tokio_util::sync::CancellationToken;

use crate::cache::controller::consumer::{DeltaConsumer, PopNow};
use crate::cache::fifo::Popped;
use crate::cache::give_way::give_way;
use crate::cache::meta::CacheError;

/// What the process loop works on.
pub(crate) struct ProcessLoop<K> {
    pub(crate) consumer: Arc<DeltaConsumer<K>>,
}

impl<K: Resource + Send + Sync + 'static> ProcessLoop<K> {
    /// Pops until the informer has synced, then hands live processing over to the writers'
    /// tasks and works through the backlogs they leave, until `cancel` fires or the queue is
    /// closed and empty. Items still queued at cancellation are dropped (the informer is
    /// stopping).
    pub(crate) async fn run(self, cancel: CancellationToken) {
        let Self { consumer } = self;
        let queue = Arc::clone(&consumer.queue);
        let synced = Arc::clone(&consumer.synced);
        let mut process = |popped: Popped<K>| {
            let delivery = consumer.process(popped, false);
            debug_assert!(delivery.is_empty(), "nothing was offered");
        };
        while !synced.is_set() {
            let popped = tokio::select! {
                biased;
                () = cancel.cancelled() => return,
                r = queue.pop(&mut process) => r,
                // An empty first list syncs without a pop.
                () = synced.wait() => continue,
            };
            match popped {
                Ok(()) => {
                    consumer.check_synced();
                    // A pop that finds deltas waiting completes without suspending, and the
                    // listeners this batch woke wait in this worker's slot for the next
                    // suspension: let them run before the next batch (one yield per batch).
                    // The initial list too: else its adds pile up in the listeners' buffers
                    // while its pages are applied, and the handlers are still working through
                    // them, every object held, when the informer reports synced and live
                    // events follow (measured: 100,000 pods, the last add reached the handler
                    // 10–90 ms after synced without the yield, within 3 ms with it, at the
                    // same time to synced).
                    // (`give_way`, not `yield_now`: see its module.)
                    if !queue.is_empty() {
                        give_way().await;
                    }
                }
                Err(CacheError::Closed) => return,
                Err(e) => {
                    tracing::error!(error = %e, "informer: pop failed; the process loop stops");
                    return;
                }
            }
        }
        consumer.hand_over();
        loop {
            // What was queued before the hand-over, or what a write left: a batch per turn.
            loop {
                match consumer.pop_now(false) {
                    PopNow::Processed => give_way().await,
                    PopNow::Empty => break,
                    PopNow::Closed => return,
                }
            }
            tokio::select! {
                biased;
                () = cancel.cancelled() => return,
                () = consumer.backlog() => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use futures::FutureExt;
    use k8s_openapi::api::core::v1::Pod;
    use parking_lot::Mutex;

    use super::*;
    use crate::cache::fifo::{DeltaQueue, RealFifo, ReflectorSink};
    use crate::cache::handler::ResourceEventHandlerFuncs;
    use crate::cache::processor::ResyncPeriods;
    use crate::cache::processor::SharedProcessor;
    use crate::cache::store::{Indexer, Indexers};
    use crate::cache::sync::SyncedFlag;
    use crate::test_support::pod_rv;

    /// The informer's consumer stage over `queue`, not yet handed over.
    fn consumer_over(
        queue: &Arc<dyn DeltaQueue<Pod>>,
        indexer: Arc<Indexer<Pod>>,
        processor: &Arc<SharedProcessor<Pod>>,
        synced: Arc<SyncedFlag>,
    ) -> Arc<DeltaConsumer<Pod>> {
        Arc::new(DeltaConsumer::new(
            Arc::clone(queue),
            indexer,
            Arc::clone(processor),
            Arc::new(Mutex::new(())),
            synced,
        ))
    }

    /// Runs the process loop of `consumer` on a task of its own; cancel the token to stop it.
    fn spawn_loop(
        consumer: &Arc<DeltaConsumer<Pod>>,
    ) -> (CancellationToken, tokio::task::JoinHandle<()>) {
        let cancel = CancellationToken::new();
        let run = tokio::spawn(
            ProcessLoop {
                consumer: Arc::clone(consumer),
            }
            .run(cancel.clone()),
        );
        (cancel, run)
    }

    /// A long run of live updates reaches the handler while it is still being applied: an
    /// index function holds the last object until the handler has seen the first update
    /// (applying the whole run in one batch, or running the next batch before the woken
    /// listener, would never let it go).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_long_live_batch_reaches_the_handler_before_it_is_fully_applied() {
        const N: usize = 300;
        let (seen_tx, seen_rx) = std::sync::mpsc::channel::<()>();
        let seen_rx = Mutex::new(seen_rx);
        let waited = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut indexers: Indexers<Pod> = Indexers::new();
        let w = Arc::clone(&waited);
        indexers.insert(
            "gate".into(),
            Arc::new(move |pod: &Pod, _values: &mut Vec<String>| {
                let last = format!("p-{}", N - 1);
                let live = pod.metadata.resource_version.as_deref() == Some("2");
                if live && pod.metadata.name.as_deref() == Some(last.as_str()) {
                    let got = seen_rx
                        .lock()
                        .recv_timeout(std::time::Duration::from_secs(10));
                    w.store(got.is_ok(), std::sync::atomic::Ordering::SeqCst);
                }
                Ok(())
            }),
        );
        let indexer = Arc::new(Indexer::new(indexers));
        let queue: Arc<dyn DeltaQueue<Pod>> = Arc::new(
            RealFifo::new().with_max_live_batch(crate::cache::fifo::INFORMER_MAX_LIVE_BATCH),
        );
        let synced = Arc::new(SyncedFlag::new());
        let processor = Arc::new(SharedProcessor::new(
            Arc::clone(&synced) as Arc<dyn crate::cache::sync::HasSynced>
        ));
        let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        let seen_tx = Mutex::new(Some(seen_tx));
        processor
            .add_listener(
                Arc::new(
                    ResourceEventHandlerFuncs::<Pod>::new().on_update(move |_old, new| {
                        if let Some(tx) = seen_tx.lock().take() {
                            let _ = tx.send(());
                        }
                        let _ = done_tx.send(new.metadata.name.clone().unwrap_or_default());
                    }),
                ),
                ResyncPeriods::NEVER,
            )
            .unwrap();
        processor.start().unwrap();
        let names: Vec<String> = (0..N).map(|i| format!("p-{i}")).collect();
        for n in &names {
            indexer.add(pod_rv("ns", n, "1")).unwrap();
        }
        // Every update is queued before the loop starts: one pop could take them all.
        for n in &names {
            queue.update(pod_rv("ns", n, "2")).unwrap();
        }
        let (cancel, run) = spawn_loop(&consumer_over(&queue, indexer, &processor, synced));
        for _ in 0..N {
            tokio::time::timeout(std::time::Duration::from_secs(30), done_rx.recv())
                .await
                .unwrap()
                .unwrap();
        }
        assert!(
            waited.load(std::sync::atomic::Ordering::SeqCst),
            "the batch's first update reached the handler only after its last was applied"
        );
        cancel.cancel();
        run.await.unwrap();
        processor.shutdown().await;
    }

    /// The initial list's adds reach the handler batch by batch while the list is applied,
    /// not all after it (when they would still be queued at the sync, ahead of live events):
    /// when the second batch is applied, the handler has seen the first. (Current-thread
    /// runtime: without the yield after each batch the listener runs only once the queue is
    /// empty.)
    #[tokio::test]
    async fn the_initial_lists_adds_reach_the_handler_batch_by_batch() {
        use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
        const BATCH: usize = 100;
        let adds = Arc::new(AtomicUsize::new(0));
        let seen_at_second_batch = Arc::new(AtomicUsize::new(usize::MAX));
        let mut indexers: Indexers<Pod> = Indexers::new();
        let (a, seen) = (Arc::clone(&adds), Arc::clone(&seen_at_second_batch));
        indexers.insert(
            "probe".into(),
            Arc::new(move |pod: &Pod, _values: &mut Vec<String>| {
                if pod.metadata.name.as_deref() == Some("p-100") {
                    seen.store(a.load(SeqCst), SeqCst);
                }
                Ok(())
            }),
        );
        let indexer = Arc::new(Indexer::new(indexers));
        let queue: Arc<dyn DeltaQueue<Pod>> = Arc::new(RealFifo::new().with_max_batch(BATCH));
        let synced = Arc::new(SyncedFlag::new());
        let processor = Arc::new(SharedProcessor::new(
            Arc::clone(&synced) as Arc<dyn crate::cache::sync::HasSynced>
        ));
        let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel::<()>();
        let a = Arc::clone(&adds);
        processor
            .add_listener(
                Arc::new(
                    ResourceEventHandlerFuncs::<Pod>::new().on_add(move |_obj, _| {
                        if a.fetch_add(1, SeqCst) + 1 == 3 * BATCH {
                            let _ = done_tx.send(());
                        }
                    }),
                ),
                ResyncPeriods::NEVER,
            )
            .unwrap();
        processor.start().unwrap();
        // A paged initial list, as the reflector hands one over.
        let sink = consumer_over(&queue, indexer, &processor, Arc::clone(&synced));
        assert!(sink.begin_paged_replace());
        for page in 0..3 {
            let pods = (page * BATCH..(page + 1) * BATCH)
                .map(|i| pod_rv("ns", &format!("p-{i}"), "1"))
                .collect();
            sink.replace_page(pods).unwrap();
        }
        sink.finish_paged_replace("1").unwrap();
        let (cancel, run) = spawn_loop(&sink);
        tokio::time::timeout(std::time::Duration::from_secs(30), done_rx.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(seen_at_second_batch.load(SeqCst), BATCH);
        cancel.cancel();
        run.await.unwrap();
        processor.shutdown().await;
    }

    /// The informer's consumer stage hands a paged initial list through to its queue, waits for room
    /// on it, and notices the sync at the finish.
    #[tokio::test]
    async fn the_consumer_stage_passes_a_paged_list_through_and_waits_on_its_queue() {
        let queue: Arc<dyn DeltaQueue<Pod>> = Arc::new(RealFifo::new());
        let synced = Arc::new(SyncedFlag::new());
        let processor = Arc::new(SharedProcessor::new(
            Arc::clone(&synced) as Arc<dyn crate::cache::sync::HasSynced>
        ));
        let sink = consumer_over(&queue, Arc::new(Indexer::default()), &processor, synced);
        assert!(sink.begin_paged_replace());
        sink.replace_page(vec![pod_rv("ns", "a", "1"), pod_rv("ns", "b", "1")])
            .unwrap();
        assert_eq!(queue.len(), 2);
        assert!(sink.room_for_page(2).now_or_never().is_none());
        let mut drop_all = |_: Popped<Pod>| {};
        queue.pop(&mut drop_all).await.unwrap();
        assert!(sink.room_for_page(2).now_or_never().is_some());
        sink.finish_paged_replace("1").unwrap();
        assert!(
            sink.synced.is_set(),
            "everything was processed by the finish"
        );
    }
}
