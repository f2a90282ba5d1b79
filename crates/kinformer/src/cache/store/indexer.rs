//! The [`Indexer`]: construction, writes and reads by key.

use std::fmt;
use std::sync::Arc;

use kube_core::Resource;
use parking_lot::{Mutex, RwLock};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::error::IndexerError;
use super::tables::*;
use super::{
    Blob, CompactOptions, EntrySet, HotObjects, IndexFunc, Indexers, ObjectCodec, TransformFunc,
    TypedCodec,
};
use crate::cache::meta::{ObjectKey, meta_namespace_key};

/// What an insert did: the previous object (if any) and the object as stored (transformed).
#[derive(Debug)]
pub struct Upserted<K> {
    /// The object stored before under the same key.
    pub old: Option<Arc<K>>,
    /// The object now stored (after the transform, if any).
    pub new: Arc<K>,
}

pub(super) fn decode_arc<K>(
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
pub(super) fn log_decode_error(e: &IndexerError) {
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
    pub(super) writer: Mutex<()>,
    pub(super) state: RwLock<State<K>>,
    pub(super) transform: Option<TransformFunc<K>>,
    /// Compact mode when set.
    pub(super) codec: Option<Arc<dyn ObjectCodec<K>>>,
    /// Compact mode: decoded objects kept for reads ([`CompactOptions::hot_objects`]).
    pub(super) hot: Option<HotObjects<K>>,
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

impl<K: Resource + Serialize + DeserializeOwned + 'static> Indexer<K> {
    /// An empty indexer in compact mode: objects are kept encoded (see
    /// [`CompactOptions`]) and decoded on every read, in exchange for a fraction of the memory
    /// of typed objects. Same API and semantics as [`new`](Self::new); reads return freshly
    /// decoded objects (equal to what was stored, not the same `Arc`).
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

    pub(super) fn prepare(&self, obj: Arc<K>) -> Result<(ObjectKey, Arc<K>), IndexerError> {
        let obj = match &self.transform {
            Some(t) => t(obj),
            None => obj,
        };
        let key = meta_namespace_key(obj.as_ref())?;
        Ok((key, obj))
    }

    pub(super) fn encode(
        codec: &dyn ObjectCodec<K>,
        key: &ObjectKey,
        obj: &K,
    ) -> Result<Blob, IndexerError> {
        codec.encode(obj).map_err(|source| IndexerError::Encode {
            key: key.clone(),
            source,
        })
    }

    /// Decodes blobs read under the lock; the first undecodable one is the error.
    pub(super) fn decode_all(
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
    pub(super) fn decode_stored(
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
    pub(super) fn maybe_train(&self, codec: &Arc<dyn ObjectCodec<K>>) -> Result<(), IndexerError> {
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
    pub(super) fn put_indexed<V: Stored>(
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

    pub(super) fn try_list_with_keys_lossy(&self) -> Vec<(ObjectKey, Arc<K>)> {
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
}
