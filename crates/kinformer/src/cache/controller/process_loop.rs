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
            let res = process_deltas(
                &indexer,
                popped.deltas,
                popped.is_in_initial_list,
                &mut |n| processor.distribute(n),
            );
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
