//! The informer's engine: the sink wrapper that notices the initial sync, and the process loop
//! that pops deltas, applies them to the indexer and hands notifications to the processor.

use std::sync::Arc;

use kube_core::Resource;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::cache::controller::process_deltas;
use crate::cache::fifo::{DeltaQueue, Popped, ReflectorSink};
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
            let res = process_deltas(
                &indexer,
                popped.deltas,
                popped.is_in_initial_list,
                &mut |n| notifications.push(n),
            );
            processor.distribute_all(notifications);
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
    use crate::cache::test_util::pod_rv;

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
