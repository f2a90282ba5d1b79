//! The write side of a delta queue, as the reflector sees it.

use std::pin::Pin;
use std::sync::Arc;

use kube_core::Resource;

use crate::cache::meta::CacheError;
use crate::cache::store::ExpirationCache;

/// What a reflector writes into: client-go's `Store` interface as used by `Reflector`.
///
/// Implemented by the delta queues (DeltaFIFO, RealFIFO), which record the change and wake
/// their consumer, and by the TTL store. Every method is synchronous and returns quickly. (An
/// informer's reflector writes into the informer's consumer stage, which queues the change
/// and, once synced, also applies it and calls the handlers registered as non-blocking, each
/// within its call budget.)
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
    /// Begins (or begins again) a replace whose list arrives page by page through
    /// [`replace_page`](Self::replace_page) and ends with
    /// [`finish_paged_replace`](Self::finish_paged_replace); `false` if this sink wants the
    /// whole list in one [`replace`](Self::replace) instead (the default).
    ///
    /// The delta queues take the *initial* list page by page (until their first replace
    /// completes): nothing has been delivered yet, so handing each page on as it arrives
    /// delivers the same deltas, sooner, and holds a few pages instead of the whole list.
    /// Relists too when the queue is built `with_paged_relists(true)` (as informers build it
    /// unless their relists are atomic): each page's objects are queued as `Replaced` deltas
    /// as the page arrives, and what the relist no longer lists is deleted at its end. If a
    /// paged list fails midway, the pages handed over stay queued; the next list's
    /// `finish_paged_replace` deletes whatever it did not list again.
    fn begin_paged_replace(&self) -> bool {
        false
    }
    /// One page of a paged replace: queues its objects as the replace would.
    ///
    /// # Errors
    /// [`CacheError::NoPagedReplace`] if no paged replace was begun (the default).
    fn replace_page(&self, objs: Vec<Arc<K>>) -> Result<(), CacheError> {
        drop(objs);
        Err(CacheError::NoPagedReplace)
    }
    /// A hint during a paged replace: the list holds about `objects` objects in all (the
    /// server's `remainingItemCount` plus what came before it), so a store may make room for
    /// them at once. Ignored by default.
    fn list_size_hint(&self, objects: usize) {
        let _ = objects;
    }
    /// Resolves once fewer than `limit` objects of the paged replace wait to be consumed (at
    /// once by default), so that the reflector fetches and decodes the next page only when
    /// the consumer is nearly done with the previous ones. The informer's sink waits on its
    /// queue ([`DeltaQueue::room_for`](crate::cache::fifo::DeltaQueue::room_for)); a bare
    /// queue does not wait, since nothing may be popping it yet.
    fn room_for_page(&self, limit: usize) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        let _ = limit;
        Box::pin(std::future::ready(()))
    }
    /// Ends a paged replace at `resource_version`: objects queued or known but in none of its
    /// pages are deleted (as tombstones), and the first population is complete.
    ///
    /// # Errors
    /// [`CacheError::NoPagedReplace`] if no paged replace was begun (the default).
    fn finish_paged_replace(&self, resource_version: &str) -> Result<(), CacheError> {
        let _ = resource_version;
        Err(CacheError::NoPagedReplace)
    }
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
