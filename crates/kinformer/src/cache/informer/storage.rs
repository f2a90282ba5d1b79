//! How an informer keeps its objects: typed or compact.

use std::fmt;
#[cfg(feature = "compact")]
use std::sync::Arc;

use kube_core::Resource;
#[cfg(feature = "compact")]
use serde::Serialize;
#[cfg(feature = "compact")]
use serde::de::DeserializeOwned;

#[cfg(feature = "compact")]
use crate::cache::store::CompactOptions;
use crate::cache::store::{Indexer, IndexerError, Indexers};

#[cfg(feature = "compact")]
type MakeIndexer<K> = Arc<dyn Fn(Indexers<K>) -> Result<Indexer<K>, IndexerError> + Send + Sync>;

/// The storage of an informer's cache, chosen per informer in
/// [`InformerOptions::with_storage`](super::InformerOptions::with_storage) or per type in the
/// [`SharedInformerFactory`](crate::cache::SharedInformerFactory).
///
/// - [`Storage::typed`] (the default): objects as `Arc<K>`; reads are a lookup.
/// - `Storage::compact` (feature `compact`, on by default): objects encoded and compressed
///   (`CompactOptions`), decoded on read — a fraction of the memory (see `CompactOptions`
///   for figures). Handlers still get the objects that arrived; listers and `get_by_key`
///   decode.
///
/// With [`Lazy<K>`](crate::cache::Lazy) as the informer's object type, compact storage keeps
/// the JSON body as it arrived and a read decodes only the metadata: the leanest informer.
///
/// ```
/// use k8s_openapi::api::core::v1::Pod;
/// use kinformer::cache::InformerOptions;
///
/// let typed = InformerOptions::<Pod>::new("pods");
/// assert!(!typed.storage.is_compact());
/// ```
pub struct Storage<K> {
    kind: Kind<K>,
}

enum Kind<K> {
    Typed,
    /// The options, and how to build a compact indexer of `K`.
    #[cfg(feature = "compact")]
    Compact(CompactOptions, MakeIndexer<K>),
    #[cfg(not(feature = "compact"))]
    #[allow(dead_code)]
    Never(
        std::marker::PhantomData<fn() -> K>,
        std::convert::Infallible,
    ),
}

impl<K> Storage<K> {
    /// Objects kept as `Arc<K>` (the default).
    pub fn typed() -> Self {
        Storage { kind: Kind::Typed }
    }

    /// True for compact storage.
    pub fn is_compact(&self) -> bool {
        !matches!(self.kind, Kind::Typed)
    }

    /// The compact options, for compact storage. Needs the `compact` feature.
    #[cfg(feature = "compact")]
    #[cfg_attr(docsrs, doc(cfg(feature = "compact")))]
    pub fn compact_options(&self) -> Option<&CompactOptions> {
        match &self.kind {
            Kind::Compact(o, _) => Some(o),
            Kind::Typed => None,
        }
    }
}

impl<K: Resource> Storage<K> {
    /// An empty indexer of this storage with these index functions.
    ///
    /// # Errors
    /// Compact storage that cannot be set up ([`IndexerError::Compact`]).
    pub fn indexer(&self, indexers: Indexers<K>) -> Result<Indexer<K>, IndexerError> {
        match &self.kind {
            Kind::Typed => Ok(Indexer::new(indexers)),
            #[cfg(feature = "compact")]
            Kind::Compact(_, make) => make(indexers),
            #[cfg(not(feature = "compact"))]
            Kind::Never(_, never) => match *never {},
        }
    }
}

#[cfg(feature = "compact")]
#[cfg_attr(docsrs, doc(cfg(feature = "compact")))]
impl<K: Resource + Serialize + DeserializeOwned + 'static> Storage<K> {
    /// Objects kept encoded and compressed ([`Indexer::compact`]). Needs the `compact`
    /// feature (on by default).
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::Pod;
    /// use kinformer::cache::store::CompactOptions;
    /// use kinformer::cache::{InformerOptions, Lazy, Storage};
    ///
    /// let lean = InformerOptions::<Lazy<Pod>>::new("pods")
    ///     .with_storage(Storage::compact(CompactOptions::default().hot_objects(256)));
    /// assert!(lean.storage.is_compact());
    /// ```
    pub fn compact(options: CompactOptions) -> Self {
        let opts = options.clone();
        Storage {
            kind: Kind::Compact(
                options,
                Arc::new(move |indexers| Indexer::compact(indexers, opts.clone())),
            ),
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
        let kind = match &self.kind {
            Kind::Typed => Kind::Typed,
            #[cfg(feature = "compact")]
            Kind::Compact(o, make) => Kind::Compact(o.clone(), Arc::clone(make)),
            #[cfg(not(feature = "compact"))]
            Kind::Never(_, never) => match *never {},
        };
        Storage { kind }
    }
}

impl<K> fmt::Debug for Storage<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Typed => f.write_str("Typed"),
            #[cfg(feature = "compact")]
            Kind::Compact(o, _) => f.debug_tuple("Compact").field(o).finish(),
            #[cfg(not(feature = "compact"))]
            Kind::Never(_, never) => match *never {},
        }
    }
}
