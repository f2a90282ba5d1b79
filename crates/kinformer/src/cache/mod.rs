//! The informer cache: keys and objects, delta queues, the indexed store, reflector and informer.
//!
//! Flow: `ListerWatcher` → `Reflector` → [`ReflectorSink`] (a delta queue) → process loop →
//! `Indexer` + handlers.

mod error;
mod notification;
mod object;
mod sink;

pub use error::CacheError;
pub use notification::Notification;
pub use object::{
    DeletedFinalStateUnknown, DeletedObject, KeyError, ObjectKey, meta_namespace_key, split_key,
};
pub use sink::ReflectorSink;
