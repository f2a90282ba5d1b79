//! The informer cache: keys and objects, delta queues, the indexed store, reflector and informer.
//!
//! Flow: `ListerWatcher` → `Reflector` → [`ReflectorSink`] (a delta queue) → process loop →
//! `Indexer` + handlers.

mod cache_sync;
mod error;
mod handler;
mod notification;
mod object;
mod processor;
mod sink;
mod synctrack;

pub use cache_sync::{HasSynced, SyncedFlag, wait_for_cache_sync, wait_for_named_cache_sync};
pub use error::CacheError;
pub use handler::{FilteringResourceEventHandler, ResourceEventHandler, ResourceEventHandlerFuncs};
pub use notification::Notification;
pub use object::{
    DeletedFinalStateUnknown, DeletedObject, KeyError, ObjectKey, meta_namespace_key, split_key,
};
pub use processor::{
    HandlerResync, INITIAL_BUFFER_SIZE, MINIMUM_RESYNC_PERIOD, ProcessorError, ProcessorListener,
    ResourceEventHandlerRegistration, ResyncPeriods, SharedProcessor, determine_resync_period,
    is_sync, plan_handler_resync,
};
pub use sink::ReflectorSink;
pub use synctrack::SingleFileTracker;
