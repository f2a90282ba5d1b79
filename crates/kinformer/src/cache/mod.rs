//! The informer cache: keys and objects, delta queues, the indexed store, reflector and informer.
//!
//! Flow: `ListerWatcher` → `Reflector` → [`ReflectorSink`] (a delta queue) → process loop →
//! `Indexer` + handlers.

mod cache_sync;
pub mod compact;
mod error;
mod expiration_cache;
mod factory;
mod fake_listwatch;
mod handler;
mod informer;
pub(crate) mod lazy;
pub mod listwatch;
mod notification;
mod object;
mod pager;
mod processor;
pub mod reflector;
mod sink;
mod synctrack;

pub use cache_sync::{
    CacheSyncTimeout, HasSynced, SyncedFlag, wait_for_cache_sync, wait_for_cache_sync_timeout,
    wait_for_named_cache_sync,
};
pub use compact::{CodecError, CompactOptions, Format};
pub use error::CacheError;
pub use factory::{FactoryError, SharedInformerFactory};
pub use fake_listwatch::{FakeListerWatcher, WatchStep};
pub use handler::{FilteringResourceEventHandler, ResourceEventHandler, ResourceEventHandlerFuncs};
mod delta;
mod delta_fifo;
mod fifo_core;
mod index;
mod lister;
mod process;
mod queue;
mod real_fifo;
mod selector;
mod store;
#[cfg(test)]
mod test_util;
mod transform;

pub use delta::{Delta, DeltaType};
pub use delta_fifo::DeltaFifo;
pub use expiration_cache::{ExpirationCache, ExpirationPolicy, TimestampedEntry, TtlPolicy};
pub use index::{
    IndexFunc, IndexFuncError, Indexers, NAMESPACE_INDEX, label_index_func, namespace_index_func,
};
pub use informer::{
    BackoffFactory, InformerError, InformerOptions, InformerWatchErrorHandler, QueueKind,
    ReadOnlyIndexer, SharedIndexInformer, Storage,
};
pub use lazy::{Lazy, full_decodes as lazy_full_decodes};
pub use lister::{Lister, NamespaceLister};
pub use listwatch::{
    ApiStatus, Bookmark, DecodeError, ListOptions, ListWatchError, ListerWatcher, ObjectList,
    ResourceVersionMatch, Selectors, WatchEvent, WatchOptions, WatchStream,
};
pub use notification::Notification;
pub use object::{
    DeletedFinalStateUnknown, DeletedObject, KeyError, ObjectKey, meta_namespace_key, split_key,
};
pub use pager::{DEFAULT_PAGE_SIZE, ListPager, PagedList};
pub use process::process_deltas;
pub use processor::{
    HandlerResync, INITIAL_BUFFER_SIZE, MINIMUM_RESYNC_PERIOD, ProcessorError, ProcessorListener,
    ResourceEventHandlerRegistration, ResyncPeriods, SharedProcessor, determine_resync_period,
    is_sync, plan_handler_resync,
};
pub use queue::{KnownObjects, PopFuture, Popped, ProcessFn, Queue};
pub use real_fifo::{DEFAULT_MAX_BATCH, RealFifo};
pub use reflector::{MAX_RETRY_AFTER, Reflector, ReflectorError, ReflectorOptions};
pub use selector::{Operator, Requirement, Selector, SelectorParseError};
pub use sink::ReflectorSink;
pub use store::{Indexer, IndexerError, PreviousItems, Upserted};
pub use synctrack::SingleFileTracker;
pub use transform::{TransformFunc, strip_managed_fields, strip_managed_fields_transform};
