//! A handler that only sees objects passing a filter.

use std::fmt;
use std::sync::Arc;

use crate::cache::handler::ResourceEventHandler;
use crate::cache::meta::DeletedObject;

/// Wraps a handler so it only sees objects for which `filter` returns true; client-go's
/// `FilteringResourceEventHandler`.
///
/// An update is translated by which side passes the filter, so the inner handler sees the
/// filtered set change as adds and deletes:
///
/// | old passes | new passes | inner handler gets          |
/// |------------|------------|-----------------------------|
/// | yes        | yes        | `on_update(old, new)`       |
/// | no         | yes        | `on_add(new, false)`        |
/// | yes        | no         | `on_delete(Live(old))`      |
/// | no         | no         | nothing                     |
///
/// A delete is filtered on the deleted object (the last known state for a tombstone).
///
/// ```
/// use std::sync::{Arc, atomic::{AtomicUsize, Ordering}};
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kinformer::cache::{FilteringResourceEventHandler, ResourceEventHandler, ResourceEventHandlerFuncs};
///
/// let adds = Arc::new(AtomicUsize::new(0));
/// let counter = Arc::clone(&adds);
/// let h = FilteringResourceEventHandler::new(
///     |cm: &ConfigMap| cm.data.is_some(),
///     ResourceEventHandlerFuncs::new().on_add(move |_, _| { counter.fetch_add(1, Ordering::Relaxed); }),
/// );
/// h.on_add(&Arc::new(ConfigMap::default()), false);
/// assert_eq!(adds.load(Ordering::Relaxed), 0);
/// ```
pub struct FilteringResourceEventHandler<F, H> {
    /// The predicate an object must pass.
    pub filter: F,
    /// The handler that receives what passes.
    pub handler: H,
}

impl<F, H: fmt::Debug> fmt::Debug for FilteringResourceEventHandler<F, H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FilteringResourceEventHandler")
            .field("handler", &self.handler)
            .finish_non_exhaustive()
    }
}

impl<F, H> FilteringResourceEventHandler<F, H> {
    /// Wraps `handler` behind `filter`.
    pub fn new(filter: F, handler: H) -> Self {
        Self { filter, handler }
    }
}

impl<K, F, H> ResourceEventHandler<K> for FilteringResourceEventHandler<F, H>
where
    F: Fn(&K) -> bool + Send + Sync,
    H: ResourceEventHandler<K>,
{
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        if (self.filter)(obj) {
            self.handler.on_add(obj, is_in_initial_list);
        }
    }

    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        match ((self.filter)(old), (self.filter)(new)) {
            (true, true) => self.handler.on_update(old, new),
            (false, true) => self.handler.on_add(new, false),
            (true, false) => self
                .handler
                .on_delete(&DeletedObject::Live(Arc::clone(old))),
            (false, false) => {}
        }
    }

    fn on_delete(&self, obj: &DeletedObject<K>) {
        if (self.filter)(obj.object()) {
            self.handler.on_delete(obj);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;
    use crate::cache::meta::{DeletedFinalStateUnknown, ObjectKey};

    #[derive(Default)]
    struct Recorder(Mutex<Vec<String>>);

    fn name(o: &ConfigMap) -> String {
        o.metadata.name.clone().unwrap_or_default()
    }

    impl ResourceEventHandler<ConfigMap> for Recorder {
        fn on_add(&self, obj: &Arc<ConfigMap>, initial: bool) {
            self.0
                .lock()
                .unwrap()
                .push(format!("add {} {initial}", name(obj)));
        }
        fn on_update(&self, old: &Arc<ConfigMap>, new: &Arc<ConfigMap>) {
            self.0
                .lock()
                .unwrap()
                .push(format!("update {} {}", name(old), name(new)));
        }
        fn on_delete(&self, obj: &DeletedObject<ConfigMap>) {
            let kind = if obj.is_tombstone() {
                "tombstone"
            } else {
                "live"
            };
            self.0
                .lock()
                .unwrap()
                .push(format!("delete {} {kind}", name(obj.object())));
        }
    }

    fn cm(name: &str) -> Arc<ConfigMap> {
        Arc::new(ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            ..Default::default()
        })
    }

    /// Objects whose name starts with "in" pass.
    fn filtered() -> FilteringResourceEventHandler<impl Fn(&ConfigMap) -> bool, Arc<Recorder>> {
        FilteringResourceEventHandler::new(
            |o: &ConfigMap| name(o).starts_with("in"),
            Arc::new(Recorder::default()),
        )
    }

    #[test]
    fn update_truth_table() {
        let cases = [
            ("in-a", "in-b", Some("update in-a in-b")),
            ("out-a", "in-b", Some("add in-b false")),
            ("in-a", "out-b", Some("delete in-a live")),
            ("out-a", "out-b", None),
        ];
        for (old, new, want) in cases {
            let h = filtered();
            h.on_update(&cm(old), &cm(new));
            let got = h.handler.0.lock().unwrap().clone();
            assert_eq!(
                got,
                want.into_iter().collect::<Vec<_>>(),
                "old={old} new={new}"
            );
        }
    }

    #[test]
    fn adds_and_deletes_pass_only_when_the_object_passes() {
        let h = filtered();
        h.on_add(&cm("in-1"), true);
        h.on_add(&cm("out-1"), true);
        h.on_delete(&DeletedObject::Live(cm("out-2")));
        h.on_delete(&DeletedObject::Tombstone(DeletedFinalStateUnknown {
            key: ObjectKey::from("in-3"),
            obj: cm("in-3"),
        }));
        assert_eq!(
            *h.handler.0.lock().unwrap(),
            ["add in-1 true", "delete in-3 tombstone"]
        );
    }
}
