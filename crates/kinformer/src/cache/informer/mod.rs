//! The shared informer: one list/watch feeding one indexed cache and many event handlers.
//!
//! - [`SharedIndexInformer`]: built from a [`ListerWatcher`](crate::cache::listwatch::ListerWatcher) and
//!   [`InformerOptions`]; runs a reflector into a delta queue ([`QueueKind`]) and a process
//!   loop that applies deltas to the indexer and fans notifications out to handlers. Its
//!   documentation states the contract (ordering, consistency, deletes, late handlers).
//! - [`Storage`]: typed or compact objects in the cache.
//! - [`ReadOnlyIndexer`]: the cache as users see it.
//! - [`InformerError`]: what the informer refuses.

mod boxed_lw;
mod error;
mod factory;
mod lister;
mod metrics;
mod options;
mod read_only;
mod shared_index_informer;
mod storage;
mod stream;
#[cfg(feature = "kube-runtime")]
mod watcher;

pub use error::InformerError;
#[cfg(feature = "kube")]
pub(crate) use factory::FactoryKey;
pub use factory::SharedInformerFactory;
pub use lister::{Lister, NamespaceLister};
pub use metrics::InformerMetrics;
pub use options::{BackoffFactory, InformerOptions, QueueKind};
pub use read_only::ReadOnlyIndexer;
pub use shared_index_informer::{InformerWatchErrorHandler, SharedIndexInformer};
pub use storage::Storage;
pub use stream::EventStream;
