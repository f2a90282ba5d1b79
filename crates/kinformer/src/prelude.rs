//! Everything a controller built on kinformer names, in one import:
//!
//! ```
//! use kinformer::prelude::*;
//! ```
//!
//! - the factory and informers: [`SharedInformerFactory`], [`SharedIndexInformer`],
//!   [`InformerOptions`], [`Storage`] (and [`CompactOptions`] with the `compact` feature),
//!   [`Lazy`];
//! - handlers: [`ResourceEventHandlerFuncs`], [`ResourceEventHandler`],
//!   [`FilteringResourceEventHandler`], [`HandlerOptions`], [`DeletedObject`];
//! - reading the cache: [`Lister`], [`NamespaceLister`], [`ReadOnlyIndexer`], index functions
//!   ([`namespace_index_func`], [`label_index_func`], [`controller_uid_index_func`]) and
//!   [`Indexers`];
//! - keys: [`ObjectKey`] (the cache key), [`QueueKey`] (a kind-tagged work-queue key),
//!   [`meta_namespace_key`], [`split_key`];
//! - waiting for the caches: [`wait_for_cache_sync_timeout`] (bounded; its error names the last
//!   list/watch error), [`wait_for_cache_sync`], [`HasSynced`];
//! - the work queue and its workers: [`RateLimitingQueue`], [`default_controller_rate_limiter`],
//!   [`run_workers`], [`Action`], [`ControllerExpectations`];
//! - from other crates, because kinformer's API takes or needs them: `CancellationToken`
//!   (tokio-util; what stops informers and workers), `Resource` (kube's trait: `obj.meta()`),
//!   and `futures::StreamExt` (anonymously, for [`SharedIndexInformer::event_stream`]'s
//!   `.next()`).

#[cfg(feature = "compact")]
#[cfg_attr(docsrs, doc(cfg(feature = "compact")))]
pub use crate::cache::store::CompactOptions;
pub use crate::cache::store::{
    IndexFunc, IndexFuncError, Indexer, Indexers, NAMESPACE_INDEX, label_index_func,
    namespace_index_func,
};
pub use crate::cache::{
    CacheSyncTimeout, DeletedFinalStateUnknown, DeletedObject, FilteringResourceEventHandler,
    HandlerOptions, HasSynced, InformerError, InformerOptions, KeyError, Lazy, Lister,
    NamespaceLister, ObjectKey, ReadOnlyIndexer, ResourceEventHandler, ResourceEventHandlerFuncs,
    ResourceEventHandlerRegistration, Selector, SharedIndexInformer, SharedInformerFactory,
    Storage, meta_namespace_key, split_key, wait_for_cache_sync, wait_for_cache_sync_timeout,
};
pub use crate::controller::{
    Action, CONTROLLER_UID_INDEX, ControllerExpectations, QueueKey, controller_of,
    controller_uid_index_func, controlling_owner_key, run_workers,
};
pub use crate::workqueue::{
    RateLimiter, RateLimitingQueue, WorkqueueError, default_controller_rate_limiter,
};
pub use futures::StreamExt as _;
pub use kube_core::Resource;
pub use tokio_util::sync::CancellationToken;
