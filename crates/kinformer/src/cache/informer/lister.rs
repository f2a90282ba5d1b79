//! Listers: read-only, typed views over an [`Indexer`] for controllers.

use std::fmt;
use std::sync::Arc;

use kube_core::Resource;

use crate::cache::meta::{ObjectKey, Selector};
use crate::cache::store::{Indexer, NAMESPACE_INDEX};

/// Lists and gets objects from an indexer, client-go's generated `XLister`.
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::Pod;
/// use kinformer::cache::store::{Indexer, NAMESPACE_INDEX, namespace_index_func};
/// use kinformer::cache::{Lister, Selector};
///
/// let indexer = Arc::new(Indexer::<Pod>::new(
///     [(NAMESPACE_INDEX.to_string(), namespace_index_func())].into(),
/// ));
/// let mut pod = Pod::default();
/// pod.metadata.name = Some("web-0".into());
/// pod.metadata.namespace = Some("prod".into());
/// pod.metadata.labels = Some([("app".to_string(), "web".to_string())].into());
/// indexer.add(Arc::new(pod)).unwrap();
///
/// let lister = Lister::new(indexer);
/// let web: Selector = "app=web".parse().unwrap();
/// assert_eq!(lister.namespaced("prod").list(&web).len(), 1);
/// assert!(lister.namespaced("prod").get("web-0").is_some());
/// assert!(lister.namespaced("dev").list(&Selector::everything()).is_empty());
/// ```
pub struct Lister<K> {
    indexer: Arc<Indexer<K>>,
}

impl<K> Clone for Lister<K> {
    fn clone(&self) -> Self {
        Lister {
            indexer: Arc::clone(&self.indexer),
        }
    }
}

impl<K> fmt::Debug for Lister<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lister").finish_non_exhaustive()
    }
}

impl<K: Resource> Lister<K> {
    /// A lister over `indexer`.
    pub fn new(indexer: Arc<Indexer<K>>) -> Self {
        Lister { indexer }
    }

    /// Every object whose labels match `selector`.
    pub fn list(&self, selector: &Selector) -> Vec<Arc<K>> {
        let mut all = self.indexer.list();
        if !selector.is_empty() {
            all.retain(|o| selector.matches(o.meta().labels.as_ref()));
        }
        all
    }

    /// The cluster-scoped object `name`.
    pub fn get(&self, name: &str) -> Option<Arc<K>> {
        self.indexer.get_by_key(name)
    }

    /// A view of one namespace.
    pub fn namespaced(&self, namespace: &str) -> NamespaceLister<K> {
        NamespaceLister {
            indexer: Arc::clone(&self.indexer),
            namespace: namespace.to_owned(),
        }
    }
}

/// The objects of one namespace; uses the `namespace` index when the indexer has it.
pub struct NamespaceLister<K> {
    indexer: Arc<Indexer<K>>,
    namespace: String,
}

impl<K> fmt::Debug for NamespaceLister<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NamespaceLister")
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

impl<K: Resource> NamespaceLister<K> {
    /// Every object of the namespace whose labels match `selector`.
    pub fn list(&self, selector: &Selector) -> Vec<Arc<K>> {
        let in_ns = match self.indexer.by_index(NAMESPACE_INDEX, &self.namespace) {
            Ok(objs) => objs,
            Err(_) => {
                let ns = self.namespace.as_str();
                let mut all = self.indexer.list();
                all.retain(|o| o.meta().namespace.as_deref().unwrap_or_default() == ns);
                all
            }
        };
        in_ns
            .into_iter()
            .filter(|o| selector.is_empty() || selector.matches(o.meta().labels.as_ref()))
            .collect()
    }

    /// The object `name` of this namespace.
    pub fn get(&self, name: &str) -> Option<Arc<K>> {
        let key = ObjectKey::new(Some(&self.namespace), name);
        self.indexer.get_by_key(key.as_str())
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;

    use super::*;
    use crate::cache::store::{CompactOptions, Indexers, namespace_index_func};
    use crate::test_support::pod;

    fn fill(idx: &Indexer<Pod>) {
        idx.add(pod("a", "web-0", &[("app", "web")])).unwrap();
        idx.add(pod("a", "db-0", &[("app", "db")])).unwrap();
        idx.add(pod("b", "web-0", &[("app", "web")])).unwrap();
        idx.add(pod("", "node-1", &[])).unwrap();
    }

    #[test]
    fn namespaced_lists_use_or_emulate_the_namespace_index() {
        let ns_index = || [(NAMESPACE_INDEX.to_string(), namespace_index_func())].into();
        let compact = || CompactOptions::default().train_after(2);
        // Typed and compact, each with and without the namespace index.
        let indexers = [
            Indexer::<Pod>::new(ns_index()),
            Indexer::<Pod>::default(),
            Indexer::<Pod>::compact(ns_index(), compact()).unwrap(),
            Indexer::<Pod>::compact(Indexers::new(), compact()).unwrap(),
        ];
        for idx in indexers.map(Arc::new) {
            fill(&idx);
            let lister = Lister::new(idx);
            let web = Selector::parse("app=web").unwrap();
            assert_eq!(lister.list(&web).len(), 2);
            assert_eq!(lister.list(&Selector::everything()).len(), 4);
            assert_eq!(
                lister.namespaced("a").list(&Selector::everything()).len(),
                2
            );
            assert_eq!(lister.namespaced("a").list(&web).len(), 1);
            assert!(lister.namespaced("b").get("web-0").is_some());
            assert!(lister.namespaced("b").get("db-0").is_none());
            assert!(lister.get("node-1").is_some());
            assert!(lister.get("web-0").is_none());
        }
    }
}
