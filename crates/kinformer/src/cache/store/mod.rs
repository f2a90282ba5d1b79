//! The thread-safe indexed store: client-go's `Indexer` (`cache` over `threadSafeMap`).
//!
//! Its properties and invariants are documented on [`Indexer`].

use std::fmt;
use std::sync::Arc;

use kube_core::Resource;
use parking_lot::{Mutex, RwLock};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::compact::{Blob, CodecError, CompactOptions, HotObjects, ObjectCodec, TypedCodec};
use super::index::{
    EntrySet, FastMap, FastSet, FastState, Index, IndexFunc, IndexFuncError, IndexValues, Indexers,
};
use super::transform::TransformFunc;
use super::{KeyError, ObjectKey, meta_namespace_key};

mod entries;
mod previous;
mod relist;

use entries::{ByKey, KeyLike};

pub use previous::PreviousItems;
use previous::{OldBlobs, Previous};

/// An error from the [`Indexer`]. None is retryable: they describe bad objects or misuse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IndexerError {
    /// The object has no usable key.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// No index of that name exists.
    #[error("index with name {0} does not exist")]
    UnknownIndex(String),
    /// `add_indexers` was given a name that is already an index.
    #[error("indexer conflict: {0}")]
    IndexerConflict(String),
    /// An index function failed; the store was left unchanged.
    #[error("index function {index:?} failed for {key}: {source}")]
    IndexFunc {
        /// The index name.
        index: String,
        /// The object's key.
        key: ObjectKey,
        /// The function's error.
        source: IndexFuncError,
    },
    /// Compact mode: the object could not be encoded; the store was left unchanged.
    #[error("cannot store {key} compactly: {source}")]
    Encode {
        /// The object's key.
        key: ObjectKey,
        /// The codec's error.
        source: CodecError,
    },
    /// Compact mode: the bytes stored under `key` could not be decoded (corrupt, or not the
    /// stored type). A write that needed the old object left the store unchanged.
    #[error("cannot decode the object stored under {key}: {source}")]
    Decode {
        /// The key.
        key: ObjectKey,
        /// The codec's error.
        source: CodecError,
    },
    /// Compact mode could not be set up (e.g. an unusable dictionary).
    #[error("compact store: {0}")]
    Compact(CodecError),
}

/// What one storage mode keeps per object, and the entry sets of its indices.
trait Stored: Clone + Sized {
    /// Typed mode: the objects themselves, hashed by their key (see `entries`). Compact
    /// mode: key → encoding. (An [`EntrySet`] of `Self` wherever objects are `Resource`s.)
    type Set;
}

impl<K> Stored for Arc<K> {
    type Set = FastSet<ByKey<K>>;
}

impl Stored for Blob {
    type Set = FastMap<ObjectKey, Blob>;
}

/// The item map and the indices of one storage mode; `V` is what is stored per object.
struct Tables<V: Stored> {
    items: FastMap<ObjectKey, V>,
    /// Invariant: `indices.len() == indexers.len()`, and every index reflects every item.
    indices: Vec<Index<V::Set>>,
}

impl<V: Stored> Tables<V> {
    fn new(indices: usize, capacity: usize) -> Self {
        Tables {
            items: FastMap::with_capacity_and_hasher(capacity, FastState::default()),
            indices: (0..indices).map(|_| Index::default()).collect(),
        }
    }
}

impl<V: Stored> Tables<V>
where
    V::Set: EntrySet<Entry = V>,
{
    /// Stores `v` under `key`, moving the key from `old` to `new` index values.
    fn put(&mut self, key: &ObjectKey, v: &V, old: Option<&IndexValues>, new: &mut IndexValues) {
        for (i, index) in self.indices.iter_mut().enumerate() {
            let old = old.map(|o| o.get(i)).unwrap_or(&[]);
            index.update(key, v, old, new.get_mut(i));
        }
        self.items.insert(key.clone(), v.clone());
    }

    /// Removes `key` (whose stored object `v` has index values `old`).
    fn take(&mut self, key: &ObjectKey, v: &V, old: &IndexValues) {
        for (i, index) in self.indices.iter_mut().enumerate() {
            index.update(key, v, old.get(i), &mut []);
        }
        self.items.remove(key.as_str());
    }
}

impl<K: Resource> Tables<Arc<K>> {
    /// The stored objects having `value` in index `i`.
    fn by_index(&self, i: usize, value: &str) -> Vec<Arc<K>> {
        match self.indices[i].map.get(value) {
            Some(set) => set.iter().map(|e| Arc::clone(&e.obj)).collect(),
            None => Vec::new(),
        }
    }

    /// The stored objects sharing any of `values` in index `i`, once each.
    fn matching(&self, i: usize, values: &[String]) -> Vec<Arc<K>> {
        let mut found: FastSet<&ByKey<K>> = FastSet::default();
        for v in values {
            if let Some(set) = self.indices[i].map.get(v.as_str()) {
                found.extend(set.iter());
            }
        }
        found.into_iter().map(|e| Arc::clone(&e.obj)).collect()
    }

    /// The keys having `value` in index `i`.
    fn index_keys(&self, i: usize, value: &str) -> Vec<ObjectKey> {
        match self.indices[i].map.get(value) {
            Some(set) => set
                .iter()
                .map(|e| {
                    let (ns, name) = e.key_parts();
                    ObjectKey::new(Some(ns), name)
                })
                .collect(),
            None => Vec::new(),
        }
    }
}

impl Tables<Blob> {
    /// The stored encodings sharing any of `values` in index `i`, once each.
    fn matching(&self, i: usize, values: &[String]) -> Vec<(ObjectKey, Blob)> {
        let mut found: FastMap<&ObjectKey, &Blob> = FastMap::default();
        for v in values {
            if let Some(set) = self.indices[i].map.get(v.as_str()) {
                found.extend(set.iter());
            }
        }
        found
            .into_iter()
            .map(|(k, b)| (k.clone(), Arc::clone(b)))
            .collect()
    }

    /// Re-encodes every blob the codec wants to change (after a dictionary was trained), in
    /// the item map and in every index entry.
    fn recompress<K>(&mut self, codec: &dyn ObjectCodec<K>) -> Result<(), IndexerError> {
        let mut changed: FastMap<ObjectKey, Blob> = FastMap::default();
        for (key, blob) in &self.items {
            match codec.core().recompress(blob) {
                Ok(Some(b)) => {
                    changed.insert(key.clone(), b);
                }
                Ok(None) => {}
                Err(source) => {
                    return Err(IndexerError::Encode {
                        key: key.clone(),
                        source,
                    });
                }
            }
        }
        for (key, blob) in self.items.iter_mut() {
            if let Some(b) = changed.get(key.as_str()) {
                *blob = Arc::clone(b);
            }
        }
        for index in &mut self.indices {
            for set in index.map.values_mut() {
                for (key, blob) in set.iter_mut() {
                    if let Some(b) = changed.get(key.as_str()) {
                        *blob = Arc::clone(b);
                    }
                }
            }
        }
        Ok(())
    }
}

/// The index functions in a fixed order; `indices[i]` belongs to `funcs[i]`.
type IndexerList<K> = Arc<Vec<(String, IndexFunc<K>)>>;

/// The state under the lock. Only the tables of the indexer's mode are used (the other stay
/// empty): `typed` without a codec, `compact` with one.
struct State<K> {
    typed: Tables<Arc<K>>,
    compact: Tables<Blob>,
    indexers: IndexerList<K>,
}

impl<K> State<K> {
    fn len(&self, compact: bool) -> usize {
        if compact {
            self.compact.items.len()
        } else {
            self.typed.items.len()
        }
    }
}

/// What an insert did: the previous object (if any) and the object as stored (transformed).
#[derive(Debug)]
pub struct Upserted<K> {
    /// The object stored before under the same key.
    pub old: Option<Arc<K>>,
    /// The object now stored (after the transform, if any).
    pub new: Arc<K>,
}

fn decode_arc<K>(
    codec: &dyn ObjectCodec<K>,
    key: &str,
    blob: &[u8],
) -> Result<Arc<K>, IndexerError> {
    codec
        .decode(blob)
        .map(Arc::new)
        .map_err(|source| IndexerError::Decode {
            key: ObjectKey::from_raw(key),
            source,
        })
}

/// Logs a decode error for read APIs that cannot return one.
fn log_decode_error(e: &IndexerError) {
    tracing::error!(error = %e, "compact indexer: stored object skipped");
}

/// A thread-safe, indexed object cache keyed by `namespace/name`: client-go's `Indexer`.
///
/// # Properties
///
/// - Readers (`get`, `list`, `by_index`, …) take a shared lock for as long as it takes to copy
///   out `Arc`s; they never wait for user code (nor, in compact mode, for decoding).
/// - No user code (index functions, the transform) runs under the state lock: a write computes
///   the key, the transform and all index values first, then takes the write lock only to swap
///   map entries.
/// - Writers are serialised by a separate writer mutex (taken before the state lock), so the
///   old object a write reads is still current when it applies — lock order: `writer` → `state`.
/// - Index values whose key set becomes empty are removed.
/// - `replace` is atomic: readers see the old content or the new one, never a mix. Typed mode
///   builds new tables and swaps them in; compact mode stages the differences without the
///   lock and applies them under it, so a relist holds only the changed objects twice.
/// - Memory: per object, one key string, held by the item map. In typed mode an index entry
///   is the object's `Arc` with the hash of its key (16 bytes), compared by the key read from
///   the object, so `by_index` needs no second lookup: ≈ 115 bytes per object for the item map
///   and two indices in the W4 workload, excluding the objects themselves (client-go: 141). In
///   compact mode an entry is the shared key and the encoding (32 bytes).
///
/// Two storage modes, chosen at construction:
/// - typed ([`Indexer::new`]): objects kept as `Arc<K>`;
/// - compact ([`Indexer::compact`]): objects kept encoded (`CompactOptions`), index values
///   computed once from the decoded object on write, reads decode on demand. A compact entry is
///   an `Arc<[u8]>` (16 bytes per reference).
///
/// Share it with `Arc<Indexer<K>>`; all methods take `&self`. Built typed with
/// [`new`](Self::new) or compact with [`compact`](Self::compact); both modes have the same API
/// and semantics.
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::Pod;
/// use kinformer::cache::{Indexer, label_index_func};
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
    writer: Mutex<()>,
    state: RwLock<State<K>>,
    transform: Option<TransformFunc<K>>,
    /// Compact mode when set.
    codec: Option<Arc<dyn ObjectCodec<K>>>,
    /// Compact mode: decoded objects kept for reads ([`CompactOptions::hot_objects`]).
    hot: Option<HotObjects<K>>,
}

impl<K> fmt::Debug for Indexer<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.state.read();
        f.debug_struct("Indexer")
            .field("compact", &self.codec.is_some())
            .field("hot_objects", &self.hot.as_ref().map(|h| h.len()))
            .field("items", &s.len(self.codec.is_some()))
            .field(
                "indexers",
                &s.indexers
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl<K: Resource> Default for Indexer<K> {
    fn default() -> Self {
        Self::new(Indexers::new())
    }
}

fn compute_values<K: Resource>(
    funcs: &[(String, IndexFunc<K>)],
    key: &ObjectKey,
    obj: &K,
) -> Result<IndexValues, IndexerError> {
    let mut out = IndexValues {
        values: Vec::new(),
        ends: Vec::with_capacity(funcs.len()),
    };
    for (name, f) in funcs {
        f(obj, &mut out.values).map_err(|source| IndexerError::IndexFunc {
            index: name.clone(),
            key: key.clone(),
            source,
        })?;
        out.ends.push(out.values.len());
    }
    Ok(out)
}

fn sorted<K>(indexers: Indexers<K>) -> Vec<(String, IndexFunc<K>)> {
    let mut list: Vec<_> = indexers.into_iter().collect();
    list.sort_by(|a, b| a.0.cmp(&b.0));
    list
}

impl<K: Resource + Serialize + DeserializeOwned + 'static> Indexer<K> {
    /// An empty indexer in compact mode: objects are kept encoded (see
    /// [`CompactOptions`]) and decoded on every read, in exchange for a fraction of the memory
    /// of typed objects. Same API and semantics as [`new`](Self::new); reads return freshly
    /// decoded objects (equal to what was stored, not the same `Arc`).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::Pod;
    /// use kinformer::cache::{CompactOptions, Indexer, NAMESPACE_INDEX, namespace_index_func};
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
        let mut idx = Self::new(indexers);
        idx.codec = Some(Arc::new(codec));
        idx.hot = (options.hot_objects > 0).then(|| HotObjects::new(options.hot_objects));
        Ok(idx)
    }
}

impl<K: Resource> Indexer<K> {
    /// An empty indexer with these index functions, keeping objects typed (`Arc<K>`).
    pub fn new(indexers: Indexers<K>) -> Self {
        let list = sorted(indexers);
        Indexer {
            writer: Mutex::new(()),
            state: RwLock::new(State {
                typed: Tables::new(list.len(), 0),
                compact: Tables::new(list.len(), 0),
                indexers: Arc::new(list),
            }),
            transform: None,
            codec: None,
            hot: None,
        }
    }

    /// Sets a transform applied to every object before it is stored (e.g.
    /// [`strip_managed_fields`](super::strip_managed_fields)).
    pub fn with_transform(mut self, transform: TransformFunc<K>) -> Self {
        self.transform = Some(transform);
        self
    }

    /// True if objects are kept encoded ([`compact`](Self::compact)).
    pub fn is_compact(&self) -> bool {
        self.codec.is_some()
    }

    /// Compact mode: the size of the zstd dictionary in use, if one exists yet.
    pub fn compact_dictionary_len(&self) -> Option<usize> {
        self.codec.as_ref().and_then(|c| c.core().dictionary_len())
    }

    /// Compact mode: the bytes of all stored encodings (payloads only, without map and index
    /// overhead); `0` in typed mode.
    pub fn compact_stored_bytes(&self) -> usize {
        self.state
            .read()
            .compact
            .items
            .values()
            .map(|b| b.len())
            .sum()
    }

    fn prepare(&self, obj: Arc<K>) -> Result<(ObjectKey, Arc<K>), IndexerError> {
        let obj = match &self.transform {
            Some(t) => t(obj),
            None => obj,
        };
        let key = meta_namespace_key(obj.as_ref())?;
        Ok((key, obj))
    }

    fn encode(codec: &dyn ObjectCodec<K>, key: &ObjectKey, obj: &K) -> Result<Blob, IndexerError> {
        codec.encode(obj).map_err(|source| IndexerError::Encode {
            key: key.clone(),
            source,
        })
    }

    /// Decodes blobs read under the lock; the first undecodable one is the error.
    fn decode_all(
        &self,
        codec: &dyn ObjectCodec<K>,
        blobs: Vec<(ObjectKey, Blob)>,
    ) -> Result<Vec<Arc<K>>, IndexerError> {
        blobs
            .iter()
            .map(|(k, b)| self.decode_stored(codec, k, b, true))
            .collect()
    }

    /// Compact mode: the object `blob` (stored under `key`) encodes, from the hot-object cache
    /// when it holds that very encoding, else decoded (and, with `remember`, cached).
    fn decode_stored(
        &self,
        codec: &dyn ObjectCodec<K>,
        key: &ObjectKey,
        blob: &Blob,
        remember: bool,
    ) -> Result<Arc<K>, IndexerError> {
        let Some(hot) = &self.hot else {
            return decode_arc(codec, key.as_str(), blob);
        };
        if let Some(obj) = hot.get(key.as_str(), blob) {
            return Ok(obj);
        }
        let obj = decode_arc(codec, key.as_str(), blob)?;
        if remember {
            hot.insert(key, blob, &obj);
        }
        Ok(obj)
    }

    /// Compact mode: trains the dictionary once enough objects are stored, and re-encodes
    /// what was stored before it existed. Called with the writer lock held.
    fn maybe_train(&self, codec: &Arc<dyn ObjectCodec<K>>) -> Result<(), IndexerError> {
        let samples: Vec<Blob> = {
            let s = self.state.read();
            if !codec.core().wants_training(s.compact.items.len()) {
                return Ok(());
            }
            s.compact.items.values().cloned().collect()
        };
        if codec.core().train(&samples) {
            drop(samples);
            self.state.write().compact.recompress(codec.as_ref())?;
        }
        Ok(())
    }

    /// Inserts or replaces `obj`, returning the previous and the stored object. The informer's
    /// process loop uses this for "update if present, else add".
    ///
    /// In compact mode the previous object is decoded from its stored bytes; `new` is the
    /// object given (after the transform), not a decoded copy.
    ///
    /// # Errors
    /// A key error, or an index function error (the store is then unchanged); in compact mode
    /// also an encode error, or a decode error for the previous object (store unchanged).
    pub fn upsert(&self, obj: Arc<K>) -> Result<Upserted<K>, IndexerError> {
        let (key, obj) = self.prepare(obj)?;
        let _w = self.writer.lock();
        if let Some(codec) = &self.codec {
            let blob = Self::encode(codec.as_ref(), &key, &obj)?;
            let (old_blob, funcs) = {
                let s = self.state.read();
                (
                    s.compact.items.get(key.as_str()).cloned(),
                    Arc::clone(&s.indexers),
                )
            };
            if let Some(stored) = old_blob.as_ref().filter(|b| ***b == *blob) {
                // Identical bytes: the stored object equals `obj` (nothing to decode), and so
                // do its index values; nothing to change.
                if let Some(hot) = &self.hot {
                    hot.insert(&key, stored, &obj);
                }
                return Ok(Upserted {
                    old: Some(Arc::clone(&obj)),
                    new: obj,
                });
            }
            let old = match &old_blob {
                Some(b) => Some(self.decode_stored(codec.as_ref(), &key, b, true)?),
                None => None,
            };
            self.put_indexed(&funcs, &key, &obj, old.as_deref(), &blob, |s| {
                &mut s.compact
            })?;
            if let Some(hot) = &self.hot {
                // The object just written is the likeliest to be read (and updated) next.
                hot.insert(&key, &blob, &obj);
            }
            drop(blob);
            self.maybe_train(codec)?;
            return Ok(Upserted { old, new: obj });
        }
        let (old, funcs) = {
            let s = self.state.read();
            (
                s.typed.items.get(key.as_str()).cloned(),
                Arc::clone(&s.indexers),
            )
        };
        if let Some(o) = &old
            && Arc::ptr_eq(o, &obj)
        {
            // The very object already stored (a resync, a repeated delta): index values of
            // the same object cannot differ, so nothing changes.
            return Ok(Upserted { old, new: obj });
        }
        self.put_indexed(&funcs, &key, &obj, old.as_deref(), &obj, |s| &mut s.typed)?;
        Ok(Upserted { old, new: obj })
    }

    /// Computes the index values of `obj` and of the object it replaces (`old`) without the
    /// lock, then stores `stored` under `key` in the tables `tables` picks, under the lock.
    #[allow(clippy::too_many_arguments)]
    fn put_indexed<V: Stored>(
        &self,
        funcs: &[(String, IndexFunc<K>)],
        key: &ObjectKey,
        obj: &K,
        old: Option<&K>,
        stored: &V,
        tables: impl FnOnce(&mut State<K>) -> &mut Tables<V>,
    ) -> Result<(), IndexerError>
    where
        V::Set: EntrySet<Entry = V>,
    {
        let mut new_vals = compute_values(funcs, key, obj)?;
        let old_vals = match old {
            Some(o) => Some(compute_values(funcs, key, o)?),
            None => None,
        };
        let mut s = self.state.write();
        tables(&mut s).put(key, stored, old_vals.as_ref(), &mut new_vals);
        Ok(())
    }

    /// Adds `obj` (replacing any object with the same key).
    ///
    /// # Errors
    /// As [`upsert`](Self::upsert); the store is then unchanged.
    pub fn add(&self, obj: Arc<K>) -> Result<(), IndexerError> {
        self.upsert(obj).map(|_| ())
    }

    /// Updates `obj` (adding it if absent), as client-go.
    ///
    /// # Errors
    /// As [`upsert`](Self::upsert); the store is then unchanged.
    pub fn update(&self, obj: Arc<K>) -> Result<(), IndexerError> {
        self.upsert(obj).map(|_| ())
    }

    /// Deletes the object with `obj`'s key; returns what was stored.
    ///
    /// # Errors
    /// A key error, or an index function error on the stored object (which then stays); in
    /// compact mode a decode error for the stored object (which then stays).
    pub fn delete(&self, obj: &K) -> Result<Option<Arc<K>>, IndexerError> {
        let key = meta_namespace_key(obj)?;
        self.delete_by_key(key.as_str())
    }

    /// Deletes the object stored under `key`; returns it.
    ///
    /// # Errors
    /// An index function error on the stored object (which then stays); in compact mode a
    /// decode error for the stored object (which then stays).
    pub fn delete_by_key(&self, key: &str) -> Result<Option<Arc<K>>, IndexerError> {
        let _w = self.writer.lock();
        let key = ObjectKey::from(key);
        if let Some(codec) = &self.codec {
            let (blob, funcs) = {
                let s = self.state.read();
                (
                    s.compact.items.get(key.as_str()).cloned(),
                    Arc::clone(&s.indexers),
                )
            };
            let Some(blob) = blob else { return Ok(None) };
            let old = self.decode_stored(codec.as_ref(), &key, &blob, true)?;
            let old_vals = compute_values(&funcs, &key, &old)?;
            self.state.write().compact.take(&key, &blob, &old_vals);
            if let Some(hot) = &self.hot {
                hot.remove(key.as_str());
            }
            return Ok(Some(old));
        }
        let (old, funcs) = {
            let s = self.state.read();
            (
                s.typed.items.get(key.as_str()).cloned(),
                Arc::clone(&s.indexers),
            )
        };
        let Some(old) = old else { return Ok(None) };
        let old_vals = compute_values(&funcs, &key, &old)?;
        self.state.write().typed.take(&key, &old, &old_vals);
        Ok(Some(old))
    }

    /// Every stored `(key, object)` pair; in compact mode the first undecodable object is an
    /// error.
    ///
    /// # Errors
    /// [`IndexerError::Decode`] (compact mode only).
    pub fn try_list_with_keys(&self) -> Result<Vec<(ObjectKey, Arc<K>)>, IndexerError> {
        let s = self.state.read();
        let Some(codec) = &self.codec else {
            return Ok(Self::snapshot(&s.typed));
        };
        let blobs = Self::snapshot(&s.compact);
        drop(s);
        blobs
            .into_iter()
            .map(|(k, b)| decode_arc(codec.as_ref(), k.as_str(), &b).map(|o| (k, o)))
            .collect()
    }

    /// Every stored object; in compact mode the first undecodable object is an error.
    ///
    /// # Errors
    /// [`IndexerError::Decode`] (compact mode only).
    pub fn try_list(&self) -> Result<Vec<Arc<K>>, IndexerError> {
        let s = self.state.read();
        let Some(codec) = &self.codec else {
            return Ok(s.typed.items.values().cloned().collect());
        };
        let blobs = Self::snapshot(&s.compact);
        drop(s);
        self.decode_all(codec.as_ref(), blobs)
    }

    /// Every stored object, in no particular order. In compact mode an undecodable object is
    /// logged and left out (use [`try_list`](Self::try_list) to get the error).
    pub fn list(&self) -> Vec<Arc<K>> {
        match &self.codec {
            None => self.state.read().typed.items.values().cloned().collect(),
            Some(_) => self
                .try_list_with_keys_lossy()
                .into_iter()
                .map(|(_, o)| o)
                .collect(),
        }
    }

    fn try_list_with_keys_lossy(&self) -> Vec<(ObjectKey, Arc<K>)> {
        let Some(codec) = &self.codec else {
            return self.try_list_with_keys().unwrap_or_default();
        };
        let blobs = Self::snapshot(&self.state.read().compact);
        blobs
            .into_iter()
            .filter_map(|(k, b)| match decode_arc(codec.as_ref(), k.as_str(), &b) {
                Ok(o) => Some((k, o)),
                Err(e) => {
                    log_decode_error(&e);
                    None
                }
            })
            .collect()
    }

    /// Every stored key, in no particular order.
    pub fn list_keys(&self) -> Vec<ObjectKey> {
        let s = self.state.read();
        if self.codec.is_some() {
            s.compact.items.keys().cloned().collect()
        } else {
            s.typed.items.keys().cloned().collect()
        }
    }

    /// Every stored `(key, object)` pair. In compact mode an undecodable object is logged and
    /// left out (see [`try_list_with_keys`](Self::try_list_with_keys)).
    pub fn list_with_keys(&self) -> Vec<(ObjectKey, Arc<K>)> {
        self.try_list_with_keys_lossy()
    }

    /// The stored object with `obj`'s key.
    ///
    /// # Errors
    /// A key error; in compact mode a decode error.
    pub fn get(&self, obj: &K) -> Result<Option<Arc<K>>, IndexerError> {
        let key = meta_namespace_key(obj)?;
        self.try_get_by_key(key.as_str())
    }

    /// The object stored under `key`; in compact mode decoded from its stored bytes.
    ///
    /// # Errors
    /// [`IndexerError::Decode`] (compact mode only).
    pub fn try_get_by_key(&self, key: &str) -> Result<Option<Arc<K>>, IndexerError> {
        let Some(codec) = &self.codec else {
            return Ok(self.state.read().typed.items.get(key).cloned());
        };
        let found = self
            .state
            .read()
            .compact
            .items
            .get_key_value(key)
            .map(|(k, b)| (k.clone(), Arc::clone(b)));
        found
            .map(|(k, b)| self.decode_stored(codec.as_ref(), &k, &b, true))
            .transpose()
    }

    /// The object stored under `key`. In compact mode an undecodable object is logged and
    /// reported absent (see [`try_get_by_key`](Self::try_get_by_key)).
    pub fn get_by_key(&self, key: &str) -> Option<Arc<K>> {
        self.try_get_by_key(key).unwrap_or_else(|e| {
            log_decode_error(&e);
            None
        })
    }

    /// True if an object is stored under `key`.
    pub fn contains_key(&self, key: &str) -> bool {
        let s = self.state.read();
        if self.codec.is_some() {
            s.compact.items.contains_key(key)
        } else {
            s.typed.items.contains_key(key)
        }
    }

    /// Number of stored objects.
    pub fn len(&self) -> usize {
        self.state.read().len(self.codec.is_some())
    }

    /// True when nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Replaces the whole content with `objs` (atomically) and updates every index.
    /// `resource_version` is accepted for symmetry with client-go and ignored.
    ///
    /// # Errors
    /// A key or index function error for any object (in compact mode also an encode error);
    /// the store is then unchanged.
    pub fn replace(&self, objs: Vec<Arc<K>>, resource_version: &str) -> Result<(), IndexerError> {
        self.replace_take_old(objs, resource_version).map(|_| ())
    }

    /// As [`replace`](Self::replace), returning the previous content (used to reconcile an
    /// atomic replace: what vanished, what changed).
    ///
    /// # Errors
    /// As [`replace`](Self::replace).
    pub fn replace_take_old(
        &self,
        objs: Vec<Arc<K>>,
        _resource_version: &str,
    ) -> Result<PreviousItems<K>, IndexerError> {
        self.replace_inner(objs, false).map(|(old, _)| old)
    }

    /// As [`replace_take_old`](Self::replace_take_old), also returning the objects as stored
    /// (after the transform), in list order: what an informer hands its handlers. In compact
    /// mode these are the given objects, not decoded copies.
    pub(crate) fn replace_returning_stored(
        &self,
        objs: Vec<Arc<K>>,
    ) -> Result<(PreviousItems<K>, Vec<Arc<K>>), IndexerError> {
        self.replace_inner(objs, true)
    }

    #[allow(clippy::type_complexity)]
    fn replace_inner(
        &self,
        objs: Vec<Arc<K>>,
        keep: bool,
    ) -> Result<(PreviousItems<K>, Vec<Arc<K>>), IndexerError> {
        let _w = self.writer.lock();
        let funcs = Arc::clone(&self.state.read().indexers);
        if let Some(codec) = &self.codec {
            if !codec.core().wants_training(objs.len()) {
                match self.replace_compact_staged(codec, &funcs, &objs, keep) {
                    Err(e @ IndexerError::Decode { .. }) => {
                        // A stored object is undecodable, so its index entries cannot be
                        // found by value: rebuild everything from the list instead.
                        tracing::warn!(error = %e, "compact indexer: replace rebuilds the indices");
                    }
                    Ok(None) => {}
                    Ok(Some(done)) => return Ok(done),
                    Err(e) => return Err(e),
                }
            }
            let mut stored = Vec::with_capacity(if keep { objs.len() } else { 0 });
            let tables = self.build_compact(codec, &funcs, objs, keep.then_some(&mut stored))?;
            let mut s = self.state.write();
            let old = std::mem::replace(&mut s.compact, tables);
            drop(s);
            let Tables { items, indices } = old;
            drop(indices);
            return Ok((PreviousItems::compact(OldBlobs::Map(items), codec), stored));
        }
        let mut stored = Vec::with_capacity(if keep { objs.len() } else { 0 });
        let mut tables: Tables<Arc<K>> = Tables::new(funcs.len(), objs.len());
        for obj in objs {
            let (key, obj) = self.prepare(obj)?;
            let mut vals = compute_values(&funcs, &key, &obj)?;
            if let Some(prev) = tables.items.get(key.as_str()).cloned() {
                // Duplicate key in the list: the later object wins; drop the earlier one's
                // index entries.
                let prev_vals = compute_values(&funcs, &key, &prev)?;
                tables.take(&key, &prev, &prev_vals);
            }
            tables.put(&key, &obj, None, &mut vals);
            if keep {
                stored.push(obj);
            }
        }
        let mut s = self.state.write();
        let old = std::mem::replace(&mut s.typed, tables);
        drop(s);
        let Tables { items, indices } = old;
        drop(indices);
        Ok((PreviousItems(Previous::Typed(items)), stored))
    }

    /// Compact mode: encodes and indexes `objs` into fresh tables. Trains the dictionary
    /// first if the list is large enough; an encoding identical to the one already stored
    /// under the same key is shared rather than copied.
    fn build_compact(
        &self,
        codec: &Arc<dyn ObjectCodec<K>>,
        funcs: &[(String, IndexFunc<K>)],
        objs: Vec<Arc<K>>,
        mut stored: Option<&mut Vec<Arc<K>>>,
    ) -> Result<Tables<Blob>, IndexerError> {
        let core = codec.core();
        let mut tables: Tables<Blob> = Tables::new(funcs.len(), objs.len());
        let train_at = if core.wants_training(objs.len()) {
            Some(core.train_after())
        } else {
            None
        };
        for (n, obj) in objs.into_iter().enumerate() {
            if train_at == Some(n) {
                let samples: Vec<Blob> = tables.items.values().cloned().collect();
                if core.train(&samples) {
                    drop(samples);
                    tables.recompress(codec.as_ref())?;
                }
            }
            let (key, obj) = self.prepare(obj)?;
            let mut blob = Self::encode(codec.as_ref(), &key, &obj)?;
            if let Some(same) = self
                .state
                .read()
                .compact
                .items
                .get(key.as_str())
                .filter(|b| ***b == *blob)
            {
                blob = Arc::clone(same);
            }
            let mut vals = compute_values(funcs, &key, &obj)?;
            if let Some(prev) = tables.items.get(key.as_str()).cloned() {
                // Duplicate key in the list: the later object wins.
                let prev_obj = decode_arc(codec.as_ref(), key.as_str(), &prev)?;
                let prev_vals = compute_values(funcs, &key, &prev_obj)?;
                tables.take(&key, &prev, &prev_vals);
            }
            tables.put(&key, &blob, None, &mut vals);
            if let Some(stored) = stored.as_deref_mut() {
                stored.push(obj);
            }
        }
        if core.wants_training(tables.items.len()) {
            let samples: Vec<Blob> = tables.items.values().cloned().collect();
            if core.train(&samples) {
                drop(samples);
                tables.recompress(codec.as_ref())?;
            }
        }
        Ok(tables)
    }

    /// A no-op kept for client-go's `Store` shape: a store has nothing to resync.
    pub fn resync(&self) {}

    fn index_position(s: &State<K>, name: &str) -> Result<usize, IndexerError> {
        s.indexers
            .iter()
            .position(|(n, _)| n == name)
            .ok_or_else(|| IndexerError::UnknownIndex(name.to_owned()))
    }

    /// True if an index named `name` exists.
    pub fn has_index(&self, name: &str) -> bool {
        Self::index_position(&self.state.read(), name).is_ok()
    }

    /// The stored objects that share an index value with `obj` in index `name`.
    ///
    /// # Errors
    /// Unknown index, key error or index function error; in compact mode a decode error.
    pub fn index(&self, name: &str, obj: &K) -> Result<Vec<Arc<K>>, IndexerError> {
        let key = meta_namespace_key(obj)?;
        let func = {
            let s = self.state.read();
            let i = Self::index_position(&s, name)?;
            Arc::clone(&s.indexers[i].1)
        };
        let mut values = Vec::new();
        func(obj, &mut values).map_err(|source| IndexerError::IndexFunc {
            index: name.to_owned(),
            key,
            source,
        })?;
        let s = self.state.read();
        let i = Self::index_position(&s, name)?;
        match &self.codec {
            None => Ok(s.typed.matching(i, &values)),
            Some(codec) => {
                let blobs = s.compact.matching(i, &values);
                drop(s);
                self.decode_all(codec.as_ref(), blobs)
            }
        }
    }

    /// The keys whose objects have `value` in index `name`, sorted.
    ///
    /// # Errors
    /// [`IndexerError::UnknownIndex`].
    pub fn index_keys(&self, name: &str, value: &str) -> Result<Vec<ObjectKey>, IndexerError> {
        let s = self.state.read();
        let i = Self::index_position(&s, name)?;
        let mut keys: Vec<ObjectKey> = if self.codec.is_some() {
            s.compact.indices[i]
                .map
                .get(value)
                .map(|set| set.keys().cloned().collect())
                .unwrap_or_default()
        } else {
            s.typed.index_keys(i, value)
        };
        drop(s);
        keys.sort_unstable();
        Ok(keys)
    }

    /// The objects with `value` in index `name` (empty for an unknown value). In compact mode
    /// they are decoded after the lock is released.
    ///
    /// # Errors
    /// [`IndexerError::UnknownIndex`]; in compact mode [`IndexerError::Decode`] for the first
    /// undecodable object.
    pub fn by_index(&self, name: &str, value: &str) -> Result<Vec<Arc<K>>, IndexerError> {
        let s = self.state.read();
        let i = Self::index_position(&s, name)?;
        let Some(codec) = &self.codec else {
            return Ok(s.typed.by_index(i, value));
        };
        let blobs: Vec<(ObjectKey, Blob)> = match s.compact.indices[i].map.get(value) {
            Some(set) => set
                .iter()
                .map(|(k, b)| (k.clone(), Arc::clone(b)))
                .collect(),
            None => Vec::new(),
        };
        drop(s);
        self.decode_all(codec.as_ref(), blobs)
    }

    /// Every value present in index `name` (empty for an unknown index, as client-go).
    pub fn list_index_func_values(&self, name: &str) -> Vec<String> {
        let s = self.state.read();
        match Self::index_position(&s, name) {
            Ok(i) if self.codec.is_some() => s.compact.indices[i].map.keys().cloned().collect(),
            Ok(i) => s.typed.indices[i].map.keys().cloned().collect(),
            Err(_) => Vec::new(),
        }
    }

    /// The names of the indices.
    pub fn indexer_names(&self) -> Vec<String> {
        self.state
            .read()
            .indexers
            .iter()
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// Adds index functions and back-fills them from the stored objects.
    ///
    /// # Errors
    /// [`IndexerError::IndexerConflict`] if a name already exists (nothing is added), or an
    /// index function error during back-fill (nothing is added); in compact mode a decode
    /// error (nothing is added).
    pub fn add_indexers(&self, new: Indexers<K>) -> Result<(), IndexerError> {
        let _w = self.writer.lock();
        let funcs = Arc::clone(&self.state.read().indexers);
        let new = sorted(new);
        let conflicts: Vec<&str> = new
            .iter()
            .filter(|(n, _)| funcs.iter().any(|(m, _)| m == n))
            .map(|(n, _)| n.as_str())
            .collect();
        if !conflicts.is_empty() {
            return Err(IndexerError::IndexerConflict(conflicts.join(", ")));
        }
        let mut list: Vec<(String, IndexFunc<K>)> = funcs.iter().cloned().collect();
        let (typed, compact) = match &self.codec {
            Some(codec) => {
                let items = Self::snapshot(&self.state.read().compact);
                let decode = |k: &ObjectKey, b: &Blob| decode_arc(codec.as_ref(), k.as_str(), b);
                (empty_indices(new.len()), back_fill(&items, &new, decode)?)
            }
            None => {
                let items = Self::snapshot(&self.state.read().typed);
                (
                    back_fill(&items, &new, |_, o| Ok(Arc::clone(o)))?,
                    empty_indices(new.len()),
                )
            }
        };
        list.extend(new);
        let mut s = self.state.write();
        s.typed.indices.extend(typed);
        s.compact.indices.extend(compact);
        s.indexers = Arc::new(list);
        Ok(())
    }

    /// The stored `(key, value)` pairs of `tables`.
    fn snapshot<V: Stored>(tables: &Tables<V>) -> Vec<(ObjectKey, V)> {
        tables
            .items
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}

/// `n` empty indices.
fn empty_indices<S>(n: usize) -> Vec<Index<S>> {
    (0..n).map(|_| Index::default()).collect()
}

/// New indices for `funcs`, filled from the stored `items` (`object` gives the object a stored
/// value stands for).
fn back_fill<K: Resource, V: Stored>(
    items: &[(ObjectKey, V)],
    funcs: &[(String, IndexFunc<K>)],
    object: impl Fn(&ObjectKey, &V) -> Result<Arc<K>, IndexerError>,
) -> Result<Vec<Index<V::Set>>, IndexerError>
where
    V::Set: EntrySet<Entry = V>,
{
    let mut added: Vec<Index<V::Set>> = empty_indices(funcs.len());
    for (key, v) in items {
        let obj = object(key, v)?;
        let mut vals = compute_values(funcs, key, &obj)?;
        for (i, index) in added.iter_mut().enumerate() {
            index.update(key, v, &[], vals.get_mut(i));
        }
    }
    Ok(added)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, OnceLock};

    use k8s_openapi::api::core::v1::Pod;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;

    use super::super::test_util::pod;
    use super::super::{
        IndexFunc, IndexFuncError, NAMESPACE_INDEX, label_index_func, namespace_index_func,
        strip_managed_fields_transform,
    };
    use super::*;

    /// The storage modes every behaviour test runs in.
    #[derive(Debug, Clone, Copy)]
    pub(crate) enum Mode {
        Typed = 0,
        Compact = 1,
        /// Compact with a hot-object cache of two objects (so tests also evict).
        CompactHot = 2,
    }

    /// An indexer of `mode`; compact indexers train their dictionary early (after 3 objects)
    /// so both raw and compressed entries are exercised.
    pub(crate) fn build(mode: Mode, indexers: Indexers<Pod>) -> Indexer<Pod> {
        match mode {
            Mode::Typed => Indexer::new(indexers),
            Mode::Compact => {
                Indexer::compact(indexers, CompactOptions::default().train_after(3)).unwrap()
            }
            Mode::CompactHot => Indexer::compact(
                indexers,
                CompactOptions::default().train_after(3).hot_objects(2),
            )
            .unwrap(),
        }
    }

    /// Runs each named test function (taking a [`Mode`]) in every mode.
    macro_rules! both_modes {
        ($($name:ident),* $(,)?) => {
            mod typed {
                $( #[test] fn $name() { super::$name(super::Mode::Typed) } )*
            }
            mod compact {
                $( #[test] fn $name() { super::$name(super::Mode::Compact) } )*
            }
            mod compact_hot {
                $( #[test] fn $name() { super::$name(super::Mode::CompactHot) } )*
            }
        };
    }

    both_modes!(
        replace_with_duplicate_keys_keeps_the_later_object,
        add_get_list_delete_round_trip,
        objects_without_a_name_are_refused_with_a_key_error,
        multi_value_index_is_updated_from_old_and_new_values,
        empty_value_sets_are_removed_on_update,
        unknown_index_is_an_error_and_unknown_value_is_empty,
        index_keys_are_sorted,
        index_returns_objects_sharing_any_value,
        add_indexers_back_fills_and_refuses_conflicts,
        index_function_errors_are_typed_and_leave_the_store_unchanged,
        replace_rebuilds_items_and_indices,
        transform_runs_before_storing,
        upsert_reports_the_previous_object,
        index_functions_run_without_the_state_lock,
        by_index_returns_the_current_object_when_index_values_do_not_change
    );

    /// Indexes by the comma-separated `users` label (several values per object).
    fn users_index() -> IndexFunc<Pod> {
        Arc::new(|p: &Pod, out: &mut Vec<String>| {
            if let Some(u) = p.metadata.labels.as_ref().and_then(|l| l.get("users")) {
                out.extend(u.split('.').map(str::to_owned));
            }
            Ok(())
        })
    }

    fn users_indexer(mode: Mode) -> Indexer<Pod> {
        build(mode, [("by_user".to_string(), users_index())].into())
    }

    fn names(objs: Vec<Arc<Pod>>) -> Vec<String> {
        let mut v: Vec<String> = objs
            .iter()
            .map(|p| p.metadata.name.clone().unwrap_or_default())
            .collect();
        v.sort();
        v
    }

    fn add_get_list_delete_round_trip(mode: Mode) {
        let idx = build(mode, Indexers::new());
        idx.add(pod("ns", "a", &[])).unwrap();
        idx.add(pod("", "cluster", &[])).unwrap();
        assert_eq!(idx.len(), 2);
        assert!(idx.get_by_key("ns/a").is_some());
        assert!(idx.get_by_key("cluster").is_some());
        assert!(idx.get(&pod("ns", "a", &[])).unwrap().is_some());
        let mut keys: Vec<String> = idx.list_keys().iter().map(|k| k.to_string()).collect();
        keys.sort();
        assert_eq!(keys, ["cluster", "ns/a"]);
        assert!(idx.delete(&pod("ns", "a", &[])).unwrap().is_some());
        assert!(idx.delete(&pod("ns", "a", &[])).unwrap().is_none());
        assert_eq!(idx.len(), 1);
    }

    fn objects_without_a_name_are_refused_with_a_key_error(mode: Mode) {
        let idx = build(mode, Indexers::new());
        let err = idx.add(Arc::new(Pod::default())).unwrap_err();
        assert!(matches!(err, IndexerError::Key(KeyError::MissingName)));
        assert!(idx.is_empty());
    }

    fn multi_value_index_is_updated_from_old_and_new_values(mode: Mode) {
        let idx = users_indexer(mode);
        idx.add(pod("ns", "one", &[("users", "ernie.bert")]))
            .unwrap();
        idx.add(pod("ns", "two", &[("users", "bert.oscar")]))
            .unwrap();
        idx.add(pod("ns", "tre", &[("users", "ernie.elmo")]))
            .unwrap();
        assert_eq!(
            names(idx.by_index("by_user", "ernie").unwrap()),
            ["one", "tre"]
        );
        assert_eq!(
            names(idx.by_index("by_user", "bert").unwrap()),
            ["one", "two"]
        );

        // "one" moves from ernie,bert to elmo: ernie keeps tre, bert keeps two.
        idx.update(pod("ns", "one", &[("users", "elmo")])).unwrap();
        assert_eq!(names(idx.by_index("by_user", "ernie").unwrap()), ["tre"]);
        assert_eq!(names(idx.by_index("by_user", "bert").unwrap()), ["two"]);
        assert_eq!(
            names(idx.by_index("by_user", "elmo").unwrap()),
            ["one", "tre"]
        );

        // Deleting the last holder of a value removes the value.
        idx.delete(&pod("ns", "two", &[])).unwrap();
        let mut values = idx.list_index_func_values("by_user");
        values.sort();
        assert_eq!(values, ["elmo", "ernie"]);
    }

    fn empty_value_sets_are_removed_on_update(mode: Mode) {
        let idx = users_indexer(mode);
        idx.add(pod("ns", "a", &[("users", "x")])).unwrap();
        idx.update(pod("ns", "a", &[("users", "y")])).unwrap();
        assert_eq!(idx.list_index_func_values("by_user"), ["y"]);
        assert!(idx.by_index("by_user", "x").unwrap().is_empty());
    }

    fn unknown_index_is_an_error_and_unknown_value_is_empty(mode: Mode) {
        let idx = users_indexer(mode);
        idx.add(pod("ns", "a", &[("users", "x")])).unwrap();
        assert!(matches!(
            idx.by_index("nope", "x"),
            Err(IndexerError::UnknownIndex(_))
        ));
        assert!(idx.index_keys("nope", "x").is_err());
        assert!(idx.index("nope", &pod("ns", "a", &[])).is_err());
        assert!(idx.by_index("by_user", "zzz").unwrap().is_empty());
        assert!(idx.list_index_func_values("nope").is_empty());
    }

    fn index_keys_are_sorted(mode: Mode) {
        let idx = build(
            mode,
            [(NAMESPACE_INDEX.to_string(), namespace_index_func())].into(),
        );
        for name in ["d", "b", "a", "c"] {
            idx.add(pod("ns", name, &[])).unwrap();
        }
        let keys: Vec<String> = idx
            .index_keys(NAMESPACE_INDEX, "ns")
            .unwrap()
            .iter()
            .map(|k| k.to_string())
            .collect();
        assert_eq!(keys, ["ns/a", "ns/b", "ns/c", "ns/d"]);
    }

    fn index_returns_objects_sharing_any_value(mode: Mode) {
        let idx = users_indexer(mode);
        idx.add(pod("ns", "one", &[("users", "a.b")])).unwrap();
        idx.add(pod("ns", "two", &[("users", "b")])).unwrap();
        idx.add(pod("ns", "tre", &[("users", "c")])).unwrap();
        let probe = pod("ns", "probe", &[("users", "a.b")]);
        assert_eq!(names(idx.index("by_user", &probe).unwrap()), ["one", "two"]);
    }

    fn add_indexers_back_fills_and_refuses_conflicts(mode: Mode) {
        let idx = build(mode, Indexers::new());
        idx.add(pod("ns1", "a", &[("app", "web")])).unwrap();
        idx.add(pod("ns2", "b", &[("app", "db")])).unwrap();
        idx.add_indexers([("app".to_string(), label_index_func("app"))].into())
            .unwrap();
        assert_eq!(names(idx.by_index("app", "web").unwrap()), ["a"]);
        let err = idx
            .add_indexers(
                [
                    ("app".to_string(), label_index_func("app")),
                    ("ns".to_string(), namespace_index_func()),
                ]
                .into(),
            )
            .unwrap_err();
        assert!(matches!(err, IndexerError::IndexerConflict(ref n) if n == "app"));
        // Nothing of the refused set was added.
        assert!(!idx.has_index("ns"));
        // New writes maintain the back-filled index.
        idx.add(pod("ns3", "c", &[("app", "web")])).unwrap();
        assert_eq!(names(idx.by_index("app", "web").unwrap()), ["a", "c"]);
    }

    fn index_function_errors_are_typed_and_leave_the_store_unchanged(mode: Mode) {
        let failing: IndexFunc<Pod> = Arc::new(|p: &Pod, out: &mut Vec<String>| {
            match p.metadata.labels.as_ref().and_then(|l| l.get("v")) {
                Some(v) => {
                    out.push(v.clone());
                    Ok(())
                }
                None => Err(IndexFuncError("no v label".into())),
            }
        });
        let idx = build(mode, [("v".to_string(), failing)].into());
        idx.add(pod("ns", "a", &[("v", "1")])).unwrap();
        let err = idx.update(pod("ns", "a", &[])).unwrap_err();
        assert!(matches!(err, IndexerError::IndexFunc { ref index, .. } if index == "v"));
        assert_eq!(names(idx.by_index("v", "1").unwrap()), ["a"]);
        let err = idx
            .replace(
                vec![pod("ns", "b", &[("v", "2")]), pod("ns", "c", &[])],
                "5",
            )
            .unwrap_err();
        assert!(matches!(err, IndexerError::IndexFunc { .. }));
        assert_eq!(idx.list_keys().len(), 1);
        assert!(idx.get_by_key("ns/a").is_some());
    }

    fn replace_rebuilds_items_and_indices(mode: Mode) {
        let idx = build(mode, [("app".to_string(), label_index_func("app"))].into());
        idx.add(pod("ns", "a", &[("app", "web")])).unwrap();
        idx.add(pod("ns", "b", &[("app", "web")])).unwrap();
        let old = idx
            .replace_take_old(
                vec![pod("ns", "b", &[("app", "db")]), pod("ns", "c", &[])],
                "9",
            )
            .unwrap();
        assert_eq!(old.len(), 2);
        assert!(idx.get_by_key("ns/a").is_none());
        assert!(idx.by_index("app", "web").unwrap().is_empty());
        assert_eq!(names(idx.by_index("app", "db").unwrap()), ["b"]);
        assert_eq!(idx.list_index_func_values("app"), ["db"]);
        assert_eq!(idx.len(), 2);
    }

    fn transform_runs_before_storing(mode: Mode) {
        let idx = build(mode, Indexers::new()).with_transform(strip_managed_fields_transform());
        let mut p = (*pod("ns", "a", &[])).clone();
        p.metadata.managed_fields = Some(vec![ManagedFieldsEntry::default()]);
        let up = idx.upsert(Arc::new(p)).unwrap();
        assert!(up.new.metadata.managed_fields.is_none());
        let stored = idx.get_by_key("ns/a").unwrap();
        assert!(stored.metadata.managed_fields.is_none());
    }

    fn upsert_reports_the_previous_object(mode: Mode) {
        let idx = build(mode, Indexers::new());
        let first = pod("ns", "a", &[]);
        assert!(idx.upsert(Arc::clone(&first)).unwrap().old.is_none());
        let up = idx.upsert(pod("ns", "a", &[("x", "y")])).unwrap();
        assert_eq!(up.old.as_deref(), Some(&*first));
        if matches!(mode, Mode::Typed) {
            assert!(Arc::ptr_eq(up.old.as_ref().unwrap(), &first));
        }
    }

    fn index_functions_run_without_the_state_lock(mode: Mode) {
        // An index function that reads the indexer would deadlock if it ran under the lock.
        static INDEXER: [OnceLock<Arc<Indexer<Pod>>>; 3] =
            [OnceLock::new(), OnceLock::new(), OnceLock::new()];
        static READS: [AtomicUsize; 3] = [
            AtomicUsize::new(0),
            AtomicUsize::new(0),
            AtomicUsize::new(0),
        ];
        let m = mode as usize;
        let reading: IndexFunc<Pod> = Arc::new(move |_p: &Pod, out: &mut Vec<String>| {
            if let Some(idx) = INDEXER[m].get() {
                let _ = idx.list();
                let _ = idx.by_index("r", "x");
                READS[m].fetch_add(1, Ordering::SeqCst);
            }
            out.push("x".into());
            Ok(())
        });
        let idx =
            INDEXER[m].get_or_init(|| Arc::new(build(mode, [("r".to_string(), reading)].into())));
        idx.add(pod("ns", "a", &[])).unwrap();
        idx.update(pod("ns", "a", &[("v", "2")])).unwrap();
        idx.delete(&pod("ns", "a", &[])).unwrap();
        assert!(READS[m].load(Ordering::SeqCst) >= 3);
    }

    fn by_index_returns_the_current_object_when_index_values_do_not_change(mode: Mode) {
        let idx = build(mode, [("app".to_string(), label_index_func("app"))].into());
        idx.add(pod("ns", "a", &[("app", "web")])).unwrap();
        let newer = pod("ns", "a", &[("app", "web"), ("v", "2")]);
        idx.update(Arc::clone(&newer)).unwrap();
        let got = idx.by_index("app", "web").unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(*got[0], *newer);
        let got = idx.index("app", &newer).unwrap();
        assert_eq!(*got[0], *newer);
        if matches!(mode, Mode::Typed) {
            assert!(Arc::ptr_eq(&got[0], &newer));
        }
    }

    #[test]
    fn hot_objects_serve_repeated_reads_and_never_a_stale_object() {
        let idx = Indexer::<Pod>::compact(
            [("app".to_string(), label_index_func("app"))].into(),
            CompactOptions::default().train_after(0).hot_objects(8),
        )
        .unwrap();
        let app = |p: &Pod| p.metadata.labels.as_ref().unwrap()["app"].clone();
        let first = pod("ns", "a", &[("app", "web")]);
        idx.add(Arc::clone(&first)).unwrap();
        // The object written is the one read back, without a decode.
        assert!(Arc::ptr_eq(&idx.get_by_key("ns/a").unwrap(), &first));
        let newer = pod("ns", "a", &[("app", "db")]);
        let up = idx.upsert(Arc::clone(&newer)).unwrap();
        assert!(Arc::ptr_eq(up.old.as_ref().unwrap(), &first));
        assert!(Arc::ptr_eq(&idx.get_by_key("ns/a").unwrap(), &newer));
        assert!(Arc::ptr_eq(&idx.by_index("app", "db").unwrap()[0], &newer));
        // A relist stores new bytes: the cached object is not served for them.
        idx.replace(vec![pod("ns", "a", &[("app", "x")])], "2")
            .unwrap();
        let now = idx.get_by_key("ns/a").unwrap();
        assert_eq!(app(&now), "x");
        assert!(Arc::ptr_eq(&idx.get_by_key("ns/a").unwrap(), &now));
        idx.delete_by_key("ns/a").unwrap();
        assert!(idx.get_by_key("ns/a").is_none());
        assert_eq!(idx.hot.as_ref().unwrap().len(), 0);
    }

    #[test]
    fn indexer_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Indexer<Pod>>();
    }

    fn replace_with_duplicate_keys_keeps_the_later_object(mode: Mode) {
        let idx = build(mode, [("app".to_string(), label_index_func("app"))].into());
        for i in 0..8 {
            idx.add(pod("ns", &format!("p{i}"), &[("app", "old")]))
                .unwrap();
        }
        // Twice: the first relist may train the dictionary, the second replaces in place.
        for _ in 0..2 {
            idx.replace(
                vec![
                    pod("ns", "p0", &[("app", "x")]),
                    pod("ns", "p1", &[("app", "old")]),
                    pod("ns", "p0", &[("app", "y")]),
                    pod("ns", "p9", &[("app", "x")]),
                ],
                "3",
            )
            .unwrap();
            assert_eq!(names(idx.by_index("app", "x").unwrap()), ["p9"]);
            assert_eq!(names(idx.by_index("app", "y").unwrap()), ["p0"]);
            assert_eq!(names(idx.by_index("app", "old").unwrap()), ["p1"]);
            let mut values = idx.list_index_func_values("app");
            values.sort();
            assert_eq!(values, ["old", "x", "y"]);
            assert_eq!(idx.len(), 3);
        }
    }

    #[test]
    fn corrupt_stored_bytes_are_typed_errors_on_every_read_and_write() {
        let idx = build(
            Mode::Compact,
            [("app".to_string(), label_index_func("app"))].into(),
        );
        for i in 0..5 {
            idx.add(pod("ns", &format!("p{i}"), &[("app", "web")]))
                .unwrap();
        }
        // Corrupt one stored entry, in the item map and the index alike.
        let bad: Blob = Arc::from(&[1u8, 0x28, 0xb5, 0x2f, 0xfd, 9, 9][..]);
        {
            let mut s = idx.state.write();
            s.compact
                .items
                .insert(ObjectKey::from("ns/p1"), Arc::clone(&bad));
            for set in s.compact.indices[0].map.values_mut() {
                if let Some(b) = set.get_mut("ns/p1") {
                    *b = Arc::clone(&bad);
                }
            }
        }
        let is_decode = |e: &IndexerError| matches!(e, IndexerError::Decode { key, .. } if key.as_str() == "ns/p1");
        assert!(is_decode(&idx.try_get_by_key("ns/p1").unwrap_err()));
        assert!(idx.get_by_key("ns/p1").is_none());
        assert!(idx.get_by_key("ns/p2").is_some());
        assert!(is_decode(&idx.by_index("app", "web").unwrap_err()));
        assert!(is_decode(&idx.try_list().unwrap_err()));
        assert_eq!(idx.list().len(), 4);
        assert!(is_decode(
            &idx.update(pod("ns", "p1", &[("app", "db")])).unwrap_err()
        ));
        assert!(is_decode(&idx.delete_by_key("ns/p1").unwrap_err()));
        assert!(idx.contains_key("ns/p1"));
        // A replace drops the corrupt entry; its previous content reports it as an error.
        let old = idx
            .replace_take_old(vec![pod("ns", "p1", &[("app", "db")])], "2")
            .unwrap();
        assert!(is_decode(&old.try_get("ns/p1").unwrap_err()));
        assert_eq!(idx.by_index("app", "db").unwrap().len(), 1);
    }

    #[test]
    fn compact_mode_trains_a_dictionary_and_re_encodes_earlier_objects() {
        let idx = build(
            Mode::Compact,
            [("app".to_string(), label_index_func("app"))].into(),
        );
        let pods: Vec<Arc<Pod>> = (0..50)
            .map(|i| {
                pod(
                    &format!("ns-{}", i % 3),
                    &format!("p{i}"),
                    &[("app", "web")],
                )
            })
            .collect();
        for p in &pods {
            idx.add(Arc::clone(p)).unwrap();
        }
        assert!(idx.compact_dictionary_len().is_some());
        let s = idx.state.read();
        assert!(s.compact.items.values().all(|b| b[0] == 1));
        for set in s.compact.indices[0].map.values() {
            assert!(set.values().all(|b| b[0] == 1));
        }
        drop(s);
        for p in &pods {
            let key = meta_namespace_key(p.as_ref()).unwrap();
            assert_eq!(*idx.get_by_key(key.as_str()).unwrap(), **p);
        }
    }
}
