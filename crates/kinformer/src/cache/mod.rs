//! The informer cache: keys and objects, delta queues, the indexed store, reflector and informer.
//!
//! Flow: `ListerWatcher` → `Reflector` → [`ReflectorSink`] (a delta queue) → process loop →
//! `Indexer` + handlers.

mod error;
mod fake_listwatch;
pub mod listwatch;
mod notification;
mod object;
mod pager;
pub mod reflector;
mod sink;

pub use error::CacheError;
pub use fake_listwatch::{FakeListerWatcher, WatchStep};
pub use listwatch::{
    ApiStatus, Bookmark, DecodeError, ListOptions, ListWatchError, ListerWatcher, ObjectList,
    ResourceVersionMatch, Selectors, WatchEvent, WatchOptions, WatchStream,
};
pub use notification::Notification;
pub use object::{
    DeletedFinalStateUnknown, DeletedObject, KeyError, ObjectKey, meta_namespace_key, split_key,
};
pub use pager::{DEFAULT_PAGE_SIZE, ListPager, PagedList};
pub use reflector::{Reflector, ReflectorError, ReflectorOptions};
pub use sink::ReflectorSink;
