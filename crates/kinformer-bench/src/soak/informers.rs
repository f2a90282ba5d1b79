//! The soak's two informers over the embedded server's pods, and the handler the bench row
//! watches them with.
//!
//! - typed: `SharedIndexInformer<Pod>`, JSON on the wire, list + watch (paged lists);
//! - lean: `SharedIndexInformer<Lazy<Pod>>` in compact storage, protobuf on the wire,
//!   watch-list first.
//!
//! Both index pods by namespace and by the `soak` label, which the writer's patches set to a
//! new value each time: index values come and go all the time, so index slots that were not
//! reused would show as growth.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use k8s_openapi::api::core::v1::Pod;
use kinformer::cache::store::{
    CompactOptions, NAMESPACE_INDEX, label_index_func, namespace_index_func,
};
use kinformer::cache::{
    DeletedObject, InformerOptions, Lazy, ResourceEventHandler, SharedIndexInformer, Storage,
};
use kinformer::kube::{KubeListerWatcher, Wire};
use kinformer::wait::BackoffManager;
use kube::{Api, Client, Resource};
use parking_lot::Mutex;
use tokio::sync::Notify;

pub use super::churn::SOAK_LABEL;
use super::driver::{KeyVersions, Subject, cache_versions, key_of, version_of};

/// The index by [`SOAK_LABEL`].
pub const SOAK_INDEX: &str = "by-soak";

/// Builds a reflector backoff manager (once per informer run).
pub type MakeBackoff = fn() -> Box<dyn BackoffManager>;

/// The typed informer: `Pod`, JSON, list + watch.
pub fn typed_informer(client: Client, backoff: MakeBackoff) -> SharedIndexInformer<Pod> {
    SharedIndexInformer::new(
        KubeListerWatcher::new(Api::<Pod>::all(client)).with_wire(Wire::Json),
        InformerOptions::new("soak-typed")
            .with_indexer(NAMESPACE_INDEX, namespace_index_func())
            .with_indexer(SOAK_INDEX, label_index_func(SOAK_LABEL))
            .with_watch_list(false)
            .with_backoff(backoff),
    )
}

/// The lean informer: `Lazy<Pod>` in compact storage, protobuf, watch-list first.
pub fn lean_informer(client: Client, backoff: MakeBackoff) -> SharedIndexInformer<Lazy<Pod>> {
    SharedIndexInformer::new(
        KubeListerWatcher::new(Api::<Lazy<Pod>>::all(client)).with_wire(Wire::Protobuf),
        InformerOptions::new("soak-lean")
            .with_indexer(NAMESPACE_INDEX, namespace_index_func())
            .with_indexer(SOAK_INDEX, label_index_func(SOAK_LABEL))
            .with_storage(Storage::compact(CompactOptions::default()))
            .with_backoff(backoff),
    )
}

/// A handler keeping its own view of the cache (key → resourceVersion, from metadata only)
/// and counting its notifications.
#[derive(Debug, Default)]
pub struct ViewHandler {
    view: Mutex<KeyVersions>,
    notifications: AtomicU64,
    changed: Arc<Notify>,
}

impl ViewHandler {
    fn record(&self, key: String, version: Option<u64>) {
        {
            let mut view = self.view.lock();
            match version {
                Some(v) => view.insert(key, v),
                None => view.remove(&key),
            };
        }
        self.notifications.fetch_add(1, Ordering::Relaxed);
        self.changed.notify_one();
    }

    /// The driver's view of `informer`, with this handler (registered on it) as its handler.
    pub fn subject<K: Resource + Send + Sync + 'static>(
        self: &Arc<Self>,
        name: &str,
        informer: &SharedIndexInformer<K>,
    ) -> Subject {
        let (cache, view, count) = (informer.get_indexer(), Arc::clone(self), Arc::clone(self));
        Subject {
            name: name.to_string(),
            cache: Box::new(move || cache_versions(&cache)),
            handler: Box::new(move || view.view.lock().clone()),
            notifications: Box::new(move || count.notifications.load(Ordering::Relaxed)),
            changed: Arc::clone(&self.changed),
        }
    }
}

impl<K: Resource + Send + Sync + 'static> ResourceEventHandler<K> for ViewHandler {
    fn on_add(&self, obj: &Arc<K>, _: bool) {
        self.record(key_of(obj.as_ref()), Some(version_of(obj.as_ref())));
    }

    fn on_update(&self, _: &Arc<K>, new: &Arc<K>) {
        self.record(key_of(new.as_ref()), Some(version_of(new.as_ref())));
    }

    fn on_delete(&self, obj: &DeletedObject<K>) {
        let key = match obj {
            DeletedObject::Live(o) => key_of(o.as_ref()),
            DeletedObject::Tombstone(t) => key_of(t.obj.as_ref()),
        };
        self.record(key, None);
    }
}
