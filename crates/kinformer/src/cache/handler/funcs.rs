//! A handler made of closures.

use std::fmt;
use std::sync::Arc;

use crate::cache::handler::ResourceEventHandler;
use crate::cache::meta::DeletedObject;

type AddFn<K> = Box<dyn Fn(&Arc<K>, bool) + Send + Sync>;
type UpdateFn<K> = Box<dyn Fn(&Arc<K>, &Arc<K>) + Send + Sync>;
type DeleteFn<K> = Box<dyn Fn(&DeletedObject<K>) + Send + Sync>;

/// A [`ResourceEventHandler`] built from optional closures; client-go's
/// `ResourceEventHandlerFuncs`. A missing closure ignores that kind of event.
///
/// The builder methods share their names with the trait methods; to call the handler
/// directly, go through the trait (`ResourceEventHandler::on_add(&h, ..)`).
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kinformer::cache::{ResourceEventHandler, ResourceEventHandlerFuncs};
///
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let log = Arc::clone(&seen);
/// let h = ResourceEventHandlerFuncs::<ConfigMap>::new()
///     .on_add(move |_obj, initial| log.lock().unwrap().push(format!("add initial={initial}")))
///     .on_update(|_old, _new| {});
/// ResourceEventHandler::on_add(&h, &Arc::new(ConfigMap::default()), false);
/// assert_eq!(*seen.lock().unwrap(), ["add initial=false"]);
/// ```
pub struct ResourceEventHandlerFuncs<K> {
    add: Option<AddFn<K>>,
    update: Option<UpdateFn<K>>,
    delete: Option<DeleteFn<K>>,
}

impl<K> Default for ResourceEventHandlerFuncs<K> {
    fn default() -> Self {
        Self {
            add: None,
            update: None,
            delete: None,
        }
    }
}

impl<K> fmt::Debug for ResourceEventHandlerFuncs<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceEventHandlerFuncs")
            .field("add", &self.add.is_some())
            .field("update", &self.update.is_some())
            .field("delete", &self.delete.is_some())
            .finish()
    }
}

impl<K> ResourceEventHandlerFuncs<K> {
    /// A handler that ignores everything until closures are set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the closure called for adds: `(object, is_in_initial_list)`.
    pub fn on_add(mut self, f: impl Fn(&Arc<K>, bool) + Send + Sync + 'static) -> Self {
        self.add = Some(Box::new(f));
        self
    }

    /// Sets the closure called for updates: `(old, new)`.
    pub fn on_update(mut self, f: impl Fn(&Arc<K>, &Arc<K>) + Send + Sync + 'static) -> Self {
        self.update = Some(Box::new(f));
        self
    }

    /// Sets the closure called for deletes.
    pub fn on_delete(mut self, f: impl Fn(&DeletedObject<K>) + Send + Sync + 'static) -> Self {
        self.delete = Some(Box::new(f));
        self
    }
}

impl<K> ResourceEventHandler<K> for ResourceEventHandlerFuncs<K> {
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        if let Some(f) = &self.add {
            f(obj, is_in_initial_list);
        }
    }

    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        if let Some(f) = &self.update {
            f(old, new);
        }
    }

    fn on_delete(&self, obj: &DeletedObject<K>) {
        if let Some(f) = &self.delete {
            f(obj);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;

    #[test]
    fn each_closure_receives_its_event_and_missing_ones_are_ignored() {
        let seen = Arc::new(Mutex::new(Vec::<String>::new()));
        let (a, u, d) = (seen.clone(), seen.clone(), seen.clone());
        let h = ResourceEventHandlerFuncs::<ConfigMap>::new()
            .on_add(move |_, initial| a.lock().unwrap().push(format!("add {initial}")))
            .on_update(move |_, _| u.lock().unwrap().push("update".into()))
            .on_delete(move |o| {
                d.lock()
                    .unwrap()
                    .push(format!("delete {}", o.is_tombstone()))
            });
        let obj = Arc::new(ConfigMap::default());
        ResourceEventHandler::on_add(&h, &obj, true);
        ResourceEventHandler::on_update(&h, &obj, &obj);
        ResourceEventHandler::on_delete(&h, &DeletedObject::Live(obj.clone()));
        assert_eq!(
            *seen.lock().unwrap(),
            ["add true", "update", "delete false"]
        );

        let empty = ResourceEventHandlerFuncs::<ConfigMap>::new();
        ResourceEventHandler::on_add(&empty, &obj, false);
        assert!(format!("{empty:?}").contains("add: false"));
    }
}
