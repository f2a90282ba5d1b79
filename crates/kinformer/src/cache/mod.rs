//! The informer cache: keys and objects, delta queues, the indexed store, reflector and informer.
//!
//! Flow: `ListerWatcher` → `Reflector` → [`ReflectorSink`] (a delta queue) → process loop →
//! `Indexer` + handlers.

mod delta;
mod delta_fifo;
mod error;
mod index;
mod lister;
mod notification;
mod object;
mod process;
mod queue;
mod real_fifo;
mod selector;
mod sink;
mod store;
#[cfg(test)]
mod test_util;
mod transform;

pub use delta::{Delta, DeltaType};
pub use delta_fifo::DeltaFifo;
pub use error::CacheError;
pub use index::{
    IndexFunc, IndexFuncError, Indexers, NAMESPACE_INDEX, label_index_func, namespace_index_func,
};
pub use lister::{Lister, NamespaceLister};
pub use notification::Notification;
pub use object::{
    DeletedFinalStateUnknown, DeletedObject, KeyError, ObjectKey, meta_namespace_key, split_key,
};
pub use process::process_deltas;
pub use queue::{KnownObjects, PopFuture, Popped, ProcessFn, Queue};
pub use real_fifo::{DEFAULT_MAX_BATCH, RealFifo};
pub use selector::{Operator, Requirement, Selector, SelectorParseError};
pub use sink::ReflectorSink;
pub use store::{Indexer, IndexerError, PreviousItems, Upserted};
pub use transform::{TransformFunc, strip_managed_fields, strip_managed_fields_transform};
