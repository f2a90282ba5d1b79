//! How an informer keeps its objects: typed or compact.

use std::fmt;
use std::sync::Arc;

use kube_core::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::cache::store::{CompactOptions, Indexer, IndexerError, Indexers};

type MakeIndexer<K> = Arc<dyn Fn(Indexers<K>) -> Result<Indexer<K>, IndexerError> + Send + Sync>;

/// The storage of an informer's cache, chosen per informer in
/// [`InformerOptions::with_storage`](super::InformerOptions::with_storage) or per type in the
/// [`SharedInformerFactory`](crate::cache::SharedInformerFactory).
///
/// - [`Storage::typed`] (the default): objects as `Arc<K>`; reads are a lookup.
/// - [`Storage::compact`]: objects encoded and compressed ([`CompactOptions`]), decoded on
///   read — a fraction of the memory (see [`CompactOptions`] for figures). Handlers still get
///   the objects that arrived; listers and `get_by_key` decode.
///
/// With [`Lazy<K>`](crate::cache::Lazy) as the informer's object type, compact storage keeps
/// the JSON body as it arrived and a read decodes only the metadata: the leanest informer.
///
/// ```
/// use k8s_openapi::api::core::v1::Pod;
/// use kinformer::cache::store::CompactOptions;
/// use kinformer::cache::{InformerOptions, Lazy, Storage};
///
/// let typed = InformerOptions::<Pod>::new("pods");
/// assert!(!typed.storage.is_compact());
/// let lean = InformerOptions::<Lazy<Pod>>::new("pods")
///     .with_storage(Storage::compact(CompactOptions::default().hot_objects(256)));
/// assert!(lean.storage.is_compact());
/// ```
pub struct Storage<K> {
    /// Builds a compact indexer; `None` is typed storage.
    compact: Option<(CompactOptions, MakeIndexer<K>)>,
}

impl<K> Storage<K> {
    /// Objects kept as `Arc<K>` (the default).
    pub fn typed() -> Self {
        Storage { compact: None }
    }

    /// True for compact storage.
    pub fn is_compact(&self) -> bool {
        self.compact.is_some()
    }

    /// The compact options, for compact storage.
    pub fn compact_options(&self) -> Option<&CompactOptions> {
        self.compact.as_ref().map(|(o, _)| o)
    }
}

impl<K: Resource> Storage<K> {
    /// An empty indexer of this storage with these index functions.
    ///
    /// # Errors
    /// Compact storage that cannot be set up ([`IndexerError::Compact`]).
    pub fn indexer(&self, indexers: Indexers<K>) -> Result<Indexer<K>, IndexerError> {
        match &self.compact {
            None => Ok(Indexer::new(indexers)),
            Some((_, make)) => make(indexers),
        }
    }
}

impl<K: Resource + Serialize + DeserializeOwned + 'static> Storage<K> {
    /// Objects kept encoded and compressed ([`Indexer::compact`]).
    pub fn compact(options: CompactOptions) -> Self {
        let opts = options.clone();
        Storage {
            compact: Some((
                options,
                Arc::new(move |indexers| Indexer::compact(indexers, opts.clone())),
            )),
        }
    }
}

impl<K> Default for Storage<K> {
    fn default() -> Self {
        Self::typed()
    }
}

impl<K> Clone for Storage<K> {
    fn clone(&self) -> Self {
        Storage {
            compact: self.compact.clone(),
        }
    }
}

impl<K> fmt::Debug for Storage<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.compact_options() {
            None => f.write_str("Typed"),
            Some(o) => f.debug_tuple("Compact").field(o).finish(),
        }
    }
}
