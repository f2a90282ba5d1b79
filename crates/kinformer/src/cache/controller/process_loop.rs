//! The informer's engine: the sink wrapper that notices the initial sync, and the process loop
//! that pops deltas, applies them to the indexer and hands notifications to the processor.

use std::sync::Arc;

use kube_core::Resource;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::cache::controller::apply_deltas;
use crate::cache::fifo::{DeltaQueue, Popped, ReflectorSink};
use crate::cache::give_way::give_way;
use crate::cache::meta::CacheError;
use crate::cache::processor::SharedProcessor;
use crate::cache::store::Indexer;
use crate::cache::sync::SyncedFlag;

/// Forwards the reflector's writes to the queue and sets `synced` as soon as the queue has
/// synced without a pop (an empty first list on a DeltaFIFO queues nothing).
pub(crate) struct SyncingSink<K> {
    pub(crate) queue: Arc<dyn DeltaQueue<K>>,
    pub(crate) synced: Arc<SyncedFlag>,
}

impl<K: 'static> SyncingSink<K> {
    fn check(&self) {
        if !self.synced.is_set() && self.queue.has_synced() {
            self.synced.set();
        }
    }
}

impl<K: Send + Sync + 'static> ReflectorSink<K> for SyncingSink<K> {
    fn add(&self, obj: Arc<K>) -> Result<(), CacheError> {
        self.queue.add(obj)
    }
    fn update(&self, obj: Arc<K>) -> Result<(), CacheError> {
        self.queue.update(obj)
    }
    fn delete(&self, obj: Arc<K>) -> Result<(), CacheError> {
        self.queue.delete(obj)
    }
    fn replace(&self, objs: Vec<Arc<K>>, resource_version: &str) -> Result<(), CacheError> {
        let r = self.queue.replace(objs, resource_version);
        self.check();
        r
    }
    fn begin_paged_replace(&self) -> bool {
        self.queue.begin_paged_replace()
    }
    fn replace_page(&self, objs: Vec<Arc<K>>) -> Result<(), CacheError> {
        self.queue.replace_page(objs)
    }
    fn room_for_page(
        &self,
        limit: usize,
    ) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        // The process loop pops this queue.
        self.queue.room_for(limit)
    }
    fn finish_paged_replace(&self, resource_version: &str) -> Result<(), CacheError> {
        let r = self.queue.finish_paged_replace(resource_version);
        self.check();
        r
    }
    fn resync(&self) -> Result<(), CacheError> {
        self.queue.resync()
    }
    fn bookmark(&self, resource_version: &str) -> Result<(), CacheError> {
        self.queue.bookmark(resource_version)
    }
}

/// What the process loop works on.
pub(crate) struct ProcessLoop<K> {
    pub(crate) queue: Arc<dyn DeltaQueue<K>>,
    pub(crate) indexer: Arc<Indexer<K>>,
    pub(crate) processor: Arc<SharedProcessor<K>>,
    /// Held while one popped item is applied and distributed; a handler added after the start
    /// takes it to register and replay the store atomically with respect to deltas.
    pub(crate) block_deltas: Arc<Mutex<()>>,
    pub(crate) synced: Arc<SyncedFlag>,
}

impl<K: Resource + Send + Sync + 'static> ProcessLoop<K> {
    /// Pops until `cancel` fires or the queue is closed and empty. Items still queued at
    /// cancellation are dropped (the informer is stopping).
    pub(crate) async fn run(self, cancel: CancellationToken) {
        let Self {
            queue,
            indexer,
            processor,
            block_deltas,
            synced,
        } = self;
        let mut process = |popped: Popped<K>| {
            let _blocked = block_deltas.lock();
            // The batch's notifications reach each listener together: one wake-up per batch.
            let mut notifications = Vec::with_capacity(popped.deltas.len());
            let res = apply_deltas(
                &indexer,
                popped.deltas,
                popped.is_in_initial_list,
                &mut |n, sync| notifications.push((n, sync)),
            );
            processor.distribute_marked(notifications);
            if let Err(e) = res {
                tracing::warn!(error = %e, "informer: a delta could not be applied; skipped");
            }
        };
        loop {
            let popped = tokio::select! {
                biased;
                () = cancel.cancelled() => break,
                r = queue.pop(&mut process) => r,
            };
            match popped {
                Ok(()) => {
                    if !synced.is_set() && queue.has_synced() {
                        synced.set();
                    }
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
                Err(CacheError::Closed) => break,
                Err(e) => {
                    tracing::error!(error = %e, "informer: pop failed; the process loop stops");
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use futures::FutureExt;
    use k8s_openapi::api::core::v1::Pod;

    use super::*;
    use crate::cache::fifo::RealFifo;
    use crate::cache::handler::ResourceEventHandlerFuncs;
    use crate::cache::processor::ResyncPeriods;
    use crate::cache::store::Indexers;
    use crate::cache::test_util::pod_rv;

    /// Runs a process loop over `queue` on a task of its own; cancel the token to stop it.
    fn spawn_loop(
        queue: &Arc<dyn DeltaQueue<Pod>>,
        indexer: Arc<Indexer<Pod>>,
        processor: &Arc<SharedProcessor<Pod>>,
        synced: Arc<SyncedFlag>,
    ) -> (CancellationToken, tokio::task::JoinHandle<()>) {
        let cancel = CancellationToken::new();
        let run = tokio::spawn(
            ProcessLoop {
                queue: Arc::clone(queue),
                indexer,
                processor: Arc::clone(processor),
                block_deltas: Arc::new(Mutex::new(())),
                synced,
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
        let (cancel, run) = spawn_loop(&queue, indexer, &processor, synced);
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
        let sink = SyncingSink {
            queue: Arc::clone(&queue),
            synced: Arc::clone(&synced),
        };
        assert!(sink.begin_paged_replace());
        for page in 0..3 {
            let pods = (page * BATCH..(page + 1) * BATCH)
                .map(|i| pod_rv("ns", &format!("p-{i}"), "1"))
                .collect();
            sink.replace_page(pods).unwrap();
        }
        sink.finish_paged_replace("1").unwrap();
        let (cancel, run) = spawn_loop(&queue, indexer, &processor, Arc::clone(&synced));
        tokio::time::timeout(std::time::Duration::from_secs(30), done_rx.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(seen_at_second_batch.load(SeqCst), BATCH);
        cancel.cancel();
        run.await.unwrap();
        processor.shutdown().await;
    }

    /// The informer's sink hands a paged initial list through to its queue, waits for room
    /// on it, and notices the sync at the finish.
    #[tokio::test]
    async fn the_syncing_sink_passes_a_paged_list_through_and_waits_on_its_queue() {
        let queue: Arc<dyn DeltaQueue<Pod>> = Arc::new(RealFifo::new());
        let sink = SyncingSink {
            queue: Arc::clone(&queue),
            synced: Arc::new(SyncedFlag::new()),
        };
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
