//! Event handlers: what an informer calls for each add, update and delete.
//!
//! - [`ResourceEventHandler`]: the trait (client-go's `ResourceEventHandler`).
//! - [`ResourceEventHandlerFuncs`]: a handler built from closures.
//! - [`FilteringResourceEventHandler`]: a handler that only sees objects passing a filter.
//! - [`HandlerOptions`]: how a handler is registered (resync period, non-blocking).
//!
//! Handlers are synchronous and must return quickly: they typically compute a key and add it
//! to a work queue. Each handler runs on its own listener task, so a slow handler only delays
//! itself, but while it runs it occupies a runtime worker thread. A handler registered as
//! [`nonblocking`](HandlerOptions::nonblocking) may instead be called on the informer's watch
//! task, which saves a task wake-up per live event.

use std::sync::Arc;

use crate::cache::meta::DeletedObject;

mod filtering;
mod funcs;
mod options;

pub use filtering::FilteringResourceEventHandler;
pub use funcs::ResourceEventHandlerFuncs;
pub use options::HandlerOptions;

/// Receives the notifications of an informer, in order, one at a time.
///
/// Every method has a no-op default, so a handler implements only what it needs.
///
/// Contract (as client-go's): the handler sees, per object, a subsequence of the object's
/// states in order; there is no order across objects; an update may carry equal old and new
/// objects (a periodic resync); a delete carries the final state or, when the deletion was
/// missed, a tombstone with the last known state.
///
/// ```
/// use std::sync::{Arc, atomic::{AtomicUsize, Ordering}};
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kinformer::cache::ResourceEventHandler;
///
/// struct CountAdds(AtomicUsize);
/// impl ResourceEventHandler<ConfigMap> for CountAdds {
///     fn on_add(&self, _obj: &Arc<ConfigMap>, _is_in_initial_list: bool) {
///         self.0.fetch_add(1, Ordering::Relaxed);
///     }
/// }
/// let h = CountAdds(AtomicUsize::new(0));
/// h.on_add(&Arc::new(ConfigMap::default()), true);
/// assert_eq!(h.0.load(Ordering::Relaxed), 1);
/// ```
pub trait ResourceEventHandler<K>: Send + Sync {
    /// An object entered the cache. `is_in_initial_list` is true for the informer's initial
    /// list and for the replay a handler added late receives.
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        let _ = (obj, is_in_initial_list);
    }

    /// An object changed (or was resynced: then `old` and `new` have the same
    /// resourceVersion).
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        let _ = (old, new);
    }

    /// An object left the cache.
    fn on_delete(&self, obj: &DeletedObject<K>) {
        let _ = obj;
    }
}

impl<K, H: ResourceEventHandler<K> + ?Sized> ResourceEventHandler<K> for Arc<H> {
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        (**self).on_add(obj, is_in_initial_list);
    }

    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        (**self).on_update(old, new);
    }

    fn on_delete(&self, obj: &DeletedObject<K>) {
        (**self).on_delete(obj);
    }
}

impl<K, H: ResourceEventHandler<K> + ?Sized> ResourceEventHandler<K> for Box<H> {
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        (**self).on_add(obj, is_in_initial_list);
    }

    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        (**self).on_update(old, new);
    }

    fn on_delete(&self, obj: &DeletedObject<K>) {
        (**self).on_delete(obj);
    }
}
