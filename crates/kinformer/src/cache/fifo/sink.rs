//! The write side of a delta queue, as the reflector sees it.

use std::sync::Arc;

use kube_core::Resource;

use crate::cache::meta::CacheError;
use crate::cache::store::ExpirationCache;

/// What a reflector writes into: client-go's `Store` interface as used by `Reflector`.
///
/// Implemented by the delta queues (DeltaFIFO, RealFIFO). Every method is synchronous and must
/// return quickly: it records the change and wakes the consumer, it never runs user code.
pub trait ReflectorSink<K>: Send + Sync + 'static {
    /// An object was added (watch `ADDED`).
    fn add(&self, obj: Arc<K>) -> Result<(), CacheError>;
    /// An object was modified (watch `MODIFIED`).
    fn update(&self, obj: Arc<K>) -> Result<(), CacheError>;
    /// An object was deleted (watch `DELETED`); `obj` is its final state as the server sent it.
    fn delete(&self, obj: Arc<K>) -> Result<(), CacheError>;
    /// A full list at `resource_version` replaces everything: objects missing from `objs` are
    /// deleted (as tombstones when their final state is unknown).
    fn replace(&self, objs: Vec<Arc<K>>, resource_version: &str) -> Result<(), CacheError>;
    /// Periodic resync: re-deliver every known object as a sync.
    fn resync(&self) -> Result<(), CacheError>;
    /// A bookmark advanced the resource version without a change. Queues that deliver
    /// bookmarks as deltas override this; the default ignores it.
    fn bookmark(&self, _resource_version: &str) -> Result<(), CacheError> {
        Ok(())
    }
}

/// A TTL store can be filled by a reflector directly (client-go's `ExpirationCache` as a
/// reflector's `Store`).
impl<K: Resource + Send + Sync + 'static> ReflectorSink<K> for ExpirationCache<K> {
    fn add(&self, obj: Arc<K>) -> Result<(), CacheError> {
        Ok(ExpirationCache::add(self, obj)?)
    }

    fn update(&self, obj: Arc<K>) -> Result<(), CacheError> {
        Ok(ExpirationCache::update(self, obj)?)
    }

    fn delete(&self, obj: Arc<K>) -> Result<(), CacheError> {
        Ok(ExpirationCache::delete(self, &obj)?)
    }

    fn replace(&self, objs: Vec<Arc<K>>, _resource_version: &str) -> Result<(), CacheError> {
        Ok(ExpirationCache::replace(self, objs)?)
    }

    /// Nothing to do (client-go's `Resync` of an expiration cache is a no-op).
    fn resync(&self) -> Result<(), CacheError> {
        Ok(())
    }
}
