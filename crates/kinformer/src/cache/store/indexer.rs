//! The [`Indexer`]: one front over the storage it was built with. Every method dispatches
//! to the same generic code (`core`, `reads`, `indices`, `replace`), instantiated per storage.

use std::fmt;
use std::sync::Arc;

use kube_core::Resource;
#[cfg(feature = "compact")]
use serde::Serialize;
#[cfg(feature = "compact")]
use serde::de::DeserializeOwned;

use super::backend::{ReadError, Replaced};
#[cfg(feature = "compact")]
use super::compact::CompactBackend;
use super::core::{Core, Discarded};
use super::error::IndexerError;
use super::retire::{retire_unread, retire_unread_also};
use super::typed::TypedBackend;
#[cfg(feature = "compact")]
use super::{CompactOptions, HotObjects, TypedCodec};
use super::{Indexers, PreviousItems, TransformFunc};
use crate::cache::meta::{ObjectKey, meta_namespace_key};

/// What an insert did: the previous object (if any) and the object as stored (transformed).
#[derive(Debug)]
pub struct Upserted<K> {
    /// The object stored before under the same key.
    pub old: Option<Arc<K>>,
    /// The object now stored (after the transform, if any).
    pub new: Arc<K>,
    /// `old` carries `new`'s resourceVersion (decided without decoding `old` in compact
    /// storage, which keeps each object's resourceVersion beside its bytes).
    pub(crate) same_version: bool,
}

impl<K> Upserted<K> {
    /// True if there was an old object and it carries the same resourceVersion as the new
    /// one (both absent counts as equal, as client-go compares empty strings): the update is
    /// a *sync* (a resync, or a relist that found the object unchanged), which the shared
    /// processor hands only to the listeners due for a resync.
    pub fn is_sync(&self) -> bool {
        self.same_version
    }
}

/// A thread-safe, indexed object cache keyed by `namespace/name`: client-go's `Indexer`.
///
/// # Properties
///
/// - Readers (`get`, `list`, `by_index`, …) take a shared lock for as long as it takes to copy
///   out `Arc`s (compact storage: encodings); they never wait for user code (nor, in compact
///   storage, for decoding).
/// - No user code (index functions, the transform) runs under the state lock: a write computes
///   the key, the transform and all index values first, then takes the write lock only to swap
///   map entries.
/// - Writers are serialised by a separate writer mutex (taken before the state lock), so the
///   old object a write reads is still current when it applies — lock order: `writer` → `state`.
/// - Index values whose key set becomes empty are removed.
/// - Each stored object's index entries are kept beside it as places (the id of the value,
///   which each index interns, and the entry's position in the value's set): a write computes
///   only the new object's values, overwrites the entries of values that did not change where
///   they are, and frees or adds only those of values that changed; a delete or replace
///   finds the old entries by the kept places. No write re-reads (typed) or decodes (compact)
///   the object it replaces or deletes, nor hashes a key, to find its index entries. A freed
///   entry's slot is the next one filled, so updates that move objects between values do not
///   grow or rehash the sets.
/// - An object that [`add`](Self::add) or [`update`](Self::update) replaces is released on a
///   background thread (a bounded number of references wait for it; past that the writer
///   releases them itself), so a writer does not free large objects piece by piece. In typed
///   storage the writer hands over the references it takes out of its tables (the stored
///   object and its index entries) without reading the object: it tells an unchanged object
///   by address, and skips the resourceVersion comparison nobody asked for.
/// - `replace` is atomic: readers see the old content or the new one, never a mix. Typed
///   storage builds new tables and swaps them in; compact storage stages the differences
///   without the lock and applies them under it, so a relist holds only the changed objects
///   twice.
/// - Memory: per object, one key string, held by the item map, and the places of its index
///   entries (24 bytes inline for up to two indices with one value each). In typed storage an
///   index entry is the object's `Arc` (8 bytes), so `by_index` needs no second lookup. In
///   compact storage an entry is the shared key and the encoding (32 bytes). (Measured
///   bytes per object, against client-go's: `docs/benchmarks.md`, W4.) A value's set keeps room for as many entries as it once held
///   until it is empty (as a Go map keeps its buckets).
///
/// Two storages, chosen at construction, behind the same API and semantics:
/// - typed ([`Indexer::new`]): objects kept as `Arc<K>`. Reads cannot fail: the `try_`
///   readers always return `Ok`, and the plain ones lose nothing;
/// - compact (`Indexer::compact`, feature `compact`, on by default): objects kept encoded
///   (`CompactOptions`), index values computed once from the decoded object on write, reads
///   decode on demand (lists past the hot-object cache). A stored object that cannot be
///   decoded is an error from the `try_` readers (and from `by_index`, `index` and writes that
///   need the old object); the plain readers log it and leave it out.
///
/// Share it with `Arc<Indexer<K>>`; all methods take `&self`.
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::Pod;
/// use kinformer::cache::store::{Indexer, label_index_func};
///
/// let indexer = Indexer::<Pod>::new([("app".to_string(), label_index_func("app"))].into());
/// let mut pod = Pod::default();
/// pod.metadata.name = Some("web-0".into());
/// pod.metadata.namespace = Some("default".into());
/// pod.metadata.labels = Some([("app".to_string(), "web".to_string())].into());
/// indexer.add(Arc::new(pod)).unwrap();
///
/// assert!(indexer.get_by_key("default/web-0").is_some());
/// assert_eq!(indexer.index_keys("app", "web").unwrap()[0].as_str(), "default/web-0");
/// assert!(indexer.by_index("nope", "web").is_err());
/// ```
pub struct Indexer<K> {
    pub(super) mode: Mode<K>,
}

/// The storage an indexer was built with.
pub(super) enum Mode<K> {
    Typed(Core<K, TypedBackend>),
    /// Boxed: the typed indexer stays small.
    #[cfg(feature = "compact")]
    Compact(Box<Core<K, CompactBackend<K>>>),
}

/// Runs `$body` with `$core` bound to the indexer's core, whichever its storage.
macro_rules! dispatch {
    ($self:expr, $core:ident => $body:expr) => {
        match $self {
            Mode::Typed($core) => $body,
            #[cfg(feature = "compact")]
            Mode::Compact($core) => $body,
        }
    };
}

impl<K> fmt::Debug for Indexer<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Indexer");
        d.field("compact", &self.is_compact());
        #[cfg(feature = "compact")]
        if let Mode::Compact(c) = &self.mode {
            d.field("hot_objects", &c.backend.hot.as_ref().map(|h| h.len()));
        }
        dispatch!(&self.mode, c => d.field("items", &c.len()).field("indexers", &c.indexer_names()));
        d.finish()
    }
}

impl<K: Resource> Default for Indexer<K> {
    fn default() -> Self {
        Self::new(Indexers::new())
    }
}

#[cfg(feature = "compact")]
#[cfg_attr(docsrs, doc(cfg(feature = "compact")))]
impl<K: Resource + Serialize + DeserializeOwned + 'static> Indexer<K> {
    /// An empty indexer with compact storage: objects are kept encoded (see
    /// [`CompactOptions`]) and decoded on every read, in exchange for a fraction of the memory
    /// of typed objects. Same API and semantics as [`new`](Self::new); reads return freshly
    /// decoded objects (equal to what was stored, not the same `Arc`). Needs the `compact`
    /// feature (on by default).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::Pod;
    /// use kinformer::cache::store::{CompactOptions, Indexer, NAMESPACE_INDEX, namespace_index_func};
    ///
    /// let indexer = Indexer::<Pod>::compact(
    ///     [(NAMESPACE_INDEX.to_string(), namespace_index_func())].into(),
    ///     CompactOptions::default(),
    /// )
    /// .unwrap();
    /// let mut pod = Pod::default();
    /// pod.metadata.name = Some("web-0".into());
    /// pod.metadata.namespace = Some("default".into());
    /// indexer.add(Arc::new(pod.clone())).unwrap();
    /// assert_eq!(*indexer.get_by_key("default/web-0").unwrap(), pod);
    /// assert_eq!(indexer.by_index(NAMESPACE_INDEX, "default").unwrap().len(), 1);
    /// ```
    ///
    /// # Errors
    /// [`IndexerError::Compact`] if a given dictionary is unusable.
    pub fn compact(indexers: Indexers<K>, options: CompactOptions) -> Result<Self, IndexerError> {
        let codec = TypedCodec::<K>::new(&options).map_err(IndexerError::Compact)?;
        let backend = CompactBackend {
            codec: Arc::new(codec),
            hot: (options.hot_objects > 0).then(|| HotObjects::new(options.hot_objects)),
        };
        Ok(Indexer {
            mode: Mode::Compact(Box::new(Core::new(indexers, backend))),
        })
    }
}

#[cfg(feature = "compact")]
#[cfg_attr(docsrs, doc(cfg(feature = "compact")))]
impl<K> Indexer<K> {
    /// Compact storage: the size of the zstd dictionary in use, if one exists yet (`None` for
    /// typed storage). Needs the `compact` feature.
    pub fn compact_dictionary_len(&self) -> Option<usize> {
        match &self.mode {
            Mode::Compact(c) => c.backend.codec.core().dictionary_len(),
            Mode::Typed(_) => None,
        }
    }

    /// Compact storage: the number of dictionaries made so far — the first one, and one more
    /// each time the writes drifted from the one in use ([`CompactOptions::retrain`]); `0`
    /// before the first and for typed storage. Needs the `compact` feature.
    pub fn compact_dictionaries(&self) -> usize {
        match &self.mode {
            Mode::Compact(c) => c.backend.codec.core().dictionaries(),
            Mode::Typed(_) => 0,
        }
    }

    /// Compact storage: the bytes of all stored encodings (payloads only, without map and
    /// index overhead); `0` for typed storage. Needs the `compact` feature.
    pub fn compact_stored_bytes(&self) -> usize {
        match &self.mode {
            Mode::Compact(c) => c
                .state
                .read()
                .tables
                .items
                .values()
                .map(|i| i.v.len())
                .sum(),
            Mode::Typed(_) => 0,
        }
    }
}

impl<K> Indexer<K> {
    /// True if objects are kept encoded (`compact`).
    pub fn is_compact(&self) -> bool {
        match &self.mode {
            Mode::Typed(_) => false,
            #[cfg(feature = "compact")]
            Mode::Compact(_) => true,
        }
    }

    /// Number of stored objects.
    pub fn len(&self) -> usize {
        dispatch!(&self.mode, c => c.len())
    }

    /// Makes room for `total` objects in all, at most about a million: an informer calls it
    /// when the first page of its initial list says how many objects the list holds, so the
    /// item map is not rehashed again and again while the list fills it.
    pub(crate) fn reserve(&self, total: usize) {
        dispatch!(&self.mode, c => c.reserve(total))
    }

    /// True when nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True if an index named `name` exists.
    pub fn has_index(&self, name: &str) -> bool {
        dispatch!(&self.mode, c => c.has_index(name))
    }

    /// Every value present in index `name` (empty for an unknown index, as client-go).
    pub fn list_index_func_values(&self, name: &str) -> Vec<String> {
        dispatch!(&self.mode, c => c.list_index_func_values(name))
    }

    /// The names of the indices.
    pub fn indexer_names(&self) -> Vec<String> {
        dispatch!(&self.mode, c => c.indexer_names())
    }
}

impl<K: Resource> Indexer<K> {
    /// An empty indexer with these index functions, keeping objects typed (`Arc<K>`).
    pub fn new(indexers: Indexers<K>) -> Self {
        Indexer {
            mode: Mode::Typed(Core::new(indexers, TypedBackend)),
        }
    }

    /// Sets a transform applied to every object before it is stored (e.g.
    /// [`strip_managed_fields`](super::strip_managed_fields)).
    pub fn with_transform(mut self, transform: TransformFunc<K>) -> Self {
        dispatch!(&mut self.mode, c => c.transform = Some(transform));
        self
    }

    /// Inserts or replaces `obj`, returning the previous and the stored object. The informer's
    /// consumer stage uses this for "update if present, else add".
    ///
    /// With compact storage the previous object is decoded from its stored bytes; `new` is
    /// the object given (after the transform), not a decoded copy.
    ///
    /// # Errors
    /// A key error, or an index function error (the store is then unchanged); with compact
    /// storage also an encode error, or a decode error for the previous object (store
    /// unchanged).
    pub fn upsert(&self, obj: Arc<K>) -> Result<Upserted<K>, IndexerError> {
        dispatch!(&self.mode, c => c.upsert(obj, true, drop))
    }

    /// Adds `obj` (replacing any object with the same key). With typed storage the replaced
    /// object is released on a background thread and not even read on the writer's (its
    /// memory is likely cold there); with compact storage it is not decoded at all (so even
    /// undecodable stored bytes are replaced).
    ///
    /// # Errors
    /// A key or index function error, or (compact storage) an encode error; the store is then
    /// unchanged.
    pub fn add(&self, obj: Arc<K>) -> Result<(), IndexerError>
    where
        K: Send + Sync + 'static,
    {
        self.put(obj)
    }

    /// Updates `obj` (adding it if absent), as client-go. As with [`add`](Self::add), the
    /// replaced object is dropped off the writer's path, and not decoded.
    ///
    /// # Errors
    /// As [`add`](Self::add); the store is then unchanged.
    pub fn update(&self, obj: Arc<K>) -> Result<(), IndexerError>
    where
        K: Send + Sync + 'static,
    {
        self.put(obj)
    }

    /// Stores `obj`, discarding the object it replaces: that object is not decoded (compact
    /// storage), and neither read nor dropped on the writer's thread (typed).
    fn put(&self, obj: Arc<K>) -> Result<(), IndexerError>
    where
        K: Send + Sync + 'static,
    {
        // Without `want_old` no old object comes back: the old object's references go to
        // the dropping thread unread (typed), or are dropped as bytes (compact).
        match &self.mode {
            Mode::Typed(c) => c.upsert(obj, false, |d| match d {
                Discarded::Value(o) => retire_unread(o),
                Discarded::Entry(o) => retire_unread_also(o),
            })?,
            #[cfg(feature = "compact")]
            Mode::Compact(c) => c.upsert(obj, false, drop)?,
        };
        Ok(())
    }

    /// Deletes the object with `obj`'s key; returns what was stored.
    ///
    /// # Errors
    /// A key error; with compact storage a decode error for the stored object (which then
    /// stays). No index function runs: the entries are found by the values kept beside it.
    pub fn delete(&self, obj: &K) -> Result<Option<Arc<K>>, IndexerError> {
        let key = meta_namespace_key(obj)?;
        self.delete_by_key(key.as_str())
    }

    /// Deletes the object stored under `key`; returns it.
    ///
    /// # Errors
    /// With compact storage a decode error for the stored object (which then stays).
    pub fn delete_by_key(&self, key: &str) -> Result<Option<Arc<K>>, IndexerError> {
        dispatch!(&self.mode, c => c.delete_by_key(key))
    }

    /// Replaces the whole content with `objs` (atomically) and updates every index.
    ///
    /// # Errors
    /// A key or index function error for any object (with compact storage also an encode
    /// error); the store is then unchanged.
    pub fn replace(&self, objs: Vec<Arc<K>>) -> Result<(), IndexerError> {
        self.replace_take_old(objs).map(|_| ())
    }

    /// As [`replace`](Self::replace), returning the previous content (used to reconcile an
    /// atomic replace: what vanished, what changed).
    ///
    /// # Errors
    /// As [`replace`](Self::replace).
    pub fn replace_take_old(&self, objs: Vec<Arc<K>>) -> Result<PreviousItems<K>, IndexerError> {
        dispatch!(&self.mode, c => c.replace(objs, false)).map(|(old, _)| old)
    }

    /// As [`replace_take_old`](Self::replace_take_old), also returning the objects as stored
    /// (after the transform), in list order: what an informer hands its handlers. With
    /// compact storage these are the given objects, not decoded copies.
    pub(crate) fn replace_returning_stored(
        &self,
        objs: Vec<Arc<K>>,
    ) -> Result<Replaced<K>, IndexerError> {
        dispatch!(&self.mode, c => c.replace(objs, true))
    }

    /// Every stored `(key, object)` pair; with compact storage the first undecodable object
    /// is an error.
    ///
    /// # Errors
    /// [`IndexerError::Decode`] (compact storage only).
    pub fn try_list_with_keys(&self) -> Result<Vec<(ObjectKey, Arc<K>)>, IndexerError> {
        dispatch!(&self.mode, c => c.try_list_with_keys().map_err(ReadError::into_indexer))
    }

    /// Every stored object; with compact storage the first undecodable object is an error.
    ///
    /// # Errors
    /// [`IndexerError::Decode`] (compact storage only).
    pub fn try_list(&self) -> Result<Vec<Arc<K>>, IndexerError> {
        dispatch!(&self.mode, c => c.try_list().map_err(ReadError::into_indexer))
    }

    /// Every stored object, in no particular order. With compact storage an undecodable
    /// object is logged and left out (use [`try_list`](Self::try_list) to get the error).
    pub fn list(&self) -> Vec<Arc<K>> {
        dispatch!(&self.mode, c => c.list())
    }

    /// Every stored key, in no particular order.
    pub fn list_keys(&self) -> Vec<ObjectKey> {
        dispatch!(&self.mode, c => c.list_keys())
    }

    /// Every stored `(key, object)` pair. With compact storage an undecodable object is
    /// logged and left out (see [`try_list_with_keys`](Self::try_list_with_keys)).
    pub fn list_with_keys(&self) -> Vec<(ObjectKey, Arc<K>)> {
        dispatch!(&self.mode, c => c.list_with_keys())
    }

    /// The stored object with `obj`'s key.
    ///
    /// # Errors
    /// A key error; with compact storage a decode error.
    pub fn get(&self, obj: &K) -> Result<Option<Arc<K>>, IndexerError> {
        let key = meta_namespace_key(obj)?;
        self.try_get_by_key(key.as_str())
    }

    /// The object stored under `key`; with compact storage decoded from its stored bytes.
    ///
    /// # Errors
    /// [`IndexerError::Decode`] (compact storage only).
    pub fn try_get_by_key(&self, key: &str) -> Result<Option<Arc<K>>, IndexerError> {
        dispatch!(&self.mode, c => c.get(key).map_err(ReadError::into_indexer))
    }

    /// The object stored under `key`. With compact storage an undecodable object is logged
    /// and reported absent (see [`try_get_by_key`](Self::try_get_by_key)).
    pub fn get_by_key(&self, key: &str) -> Option<Arc<K>> {
        dispatch!(&self.mode, c => c.get(key).unwrap_or_else(|e| {
            e.log();
            None
        }))
    }

    /// True if an object is stored under `key`.
    pub fn contains_key(&self, key: &str) -> bool {
        dispatch!(&self.mode, c => c.contains_key(key))
    }

    /// The stored objects that share an index value with `obj` in index `name`.
    ///
    /// # Errors
    /// Unknown index, key error or index function error; with compact storage a decode
    /// error.
    pub fn index(&self, name: &str, obj: &K) -> Result<Vec<Arc<K>>, IndexerError> {
        dispatch!(&self.mode, c => c.index(name, obj))
    }

    /// The keys whose objects have `value` in index `name`, sorted.
    ///
    /// # Errors
    /// [`IndexerError::UnknownIndex`].
    pub fn index_keys(&self, name: &str, value: &str) -> Result<Vec<ObjectKey>, IndexerError> {
        dispatch!(&self.mode, c => c.index_keys(name, value))
    }

    /// The objects with `value` in index `name` (empty for an unknown value). With compact
    /// storage they are decoded after the lock is released.
    ///
    /// # Errors
    /// [`IndexerError::UnknownIndex`]; with compact storage [`IndexerError::Decode`] for the
    /// first undecodable object.
    pub fn by_index(&self, name: &str, value: &str) -> Result<Vec<Arc<K>>, IndexerError> {
        dispatch!(&self.mode, c => c.by_index(name, value))
    }

    /// Adds index functions and back-fills them from the stored objects.
    ///
    /// # Errors
    /// [`IndexerError::IndexerConflict`] if a name already exists (nothing is added), or an
    /// index function error during back-fill (nothing is added); with compact storage a
    /// decode error (nothing is added).
    pub fn add_indexers(&self, new: Indexers<K>) -> Result<(), IndexerError> {
        dispatch!(&self.mode, c => c.add_indexers(new))
    }
}
