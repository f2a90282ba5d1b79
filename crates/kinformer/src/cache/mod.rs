//! The informer cache, one folder per stage of the flow:
//!
//! ```text
//! listwatch ─▶ reflector ─▶ controller ─▶ processor ─▶ handler
//!                           (the consumer stage: the reflector's output port)
//!                            ├─ fifo: each write is queued, then popped in order
//!                            └─ store (indexer): each popped delta is applied, then delivered
//! informer: the SharedIndexInformer and the factory that assemble the stages; listers read the store
//! meta: object keys, tombstones, label selectors; sync: has_synced and waits
//! ```
//!
//! Until the first list is in, the consumer stage pops on a task of its own (the process
//! loop); from then on a live event is queued, popped, applied and delivered to non-blocking
//! handlers on the reflector's task, in that order, and other handlers' tasks are woken.
//!
//! What a controller author uses is re-exported here. Building blocks for assembling a
//! pipeline of your own live in their stage's module, each under one path:
//! [`listwatch`] (the [`ListerWatcher`](listwatch::ListerWatcher) trait, its options and
//! events, the pager), [`reflector`], [`fifo`] (deltas, `DeltaFifo`, `RealFifo`) and [`store`]
//! (the [`Indexer`](store::Indexer), index functions, compact storage, transforms, the TTL
//! store).

pub(crate) mod controller;
pub mod fifo;
mod give_way;
pub(crate) mod handler;
pub(crate) mod informer;
pub mod listwatch;
pub(crate) mod meta;
pub(crate) mod processor;
pub mod reflector;
pub mod store;
pub(crate) mod sync;
#[cfg(any(test, feature = "testing"))]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod testing;

pub use controller::process_deltas;
pub use handler::{
    FilteringResourceEventHandler, HandlerOptions, ResourceEventHandler, ResourceEventHandlerFuncs,
};
pub use informer::{
    BackoffFactory, EventStream, InformerError, InformerMetrics, InformerOptions,
    InformerWatchErrorHandler, Lister, NamespaceLister, QueueKind, ReadOnlyIndexer,
    SharedIndexInformer, SharedInformerFactory, Storage,
};
pub use meta::{
    CacheError, DeletedFinalStateUnknown, DeletedObject, KeyError, Lazy, ObjectKey, Operator,
    Requirement, Selector, SelectorParseError, lazy_full_decodes, meta_namespace_key, split_key,
};
pub use processor::{Notification, ProcessorError, ResourceEventHandlerRegistration};
pub use sync::{
    CacheSyncTimeout, HasSynced, SyncedFlag, wait_for_cache_sync, wait_for_cache_sync_timeout,
    wait_for_named_cache_sync,
};
