//! Compact storage as a [`Backend`]: encodings in the tables, decoded on read, a hot-object
//! cache, and the dictionary trained once enough objects are stored.

use std::sync::Arc;

use kube_core::Resource;
use parking_lot::RwLock;

use crate::cache::meta::ObjectKey;
use crate::cache::store::backend::{Backend, Entries, Replaced, Via};
use crate::cache::store::compact::codec::stored_version;
use crate::cache::store::core::Core;
use crate::cache::store::entries::Slab;
use crate::cache::store::error::IndexerError;
use crate::cache::store::previous::PreviousItems;
use crate::cache::store::replace::ReplaceInPlace;
use crate::cache::store::staged::OldBlobs;
use crate::cache::store::tables::{IndexerList, Item, State, Stored, Tables};
use crate::cache::store::{Blob, FastMap, HotObjects, ObjectCodec};

impl Stored for Blob {
    type Raw = (ObjectKey, Blob);
    fn raw(key: &ObjectKey, v: &Self) -> (ObjectKey, Blob) {
        (key.clone(), Arc::clone(v))
    }
}

impl Entries<Blob> for Slab<(ObjectKey, Blob)> {
    fn union<'a>(sets: impl Iterator<Item = &'a Self>) -> Vec<(ObjectKey, Blob)>
    where
        Self: 'a,
    {
        Slab::union_by(sets, |(key, _)| key)
    }

    fn keys(&self, out: &mut Vec<ObjectKey>) {
        out.extend(self.iter().map(|(k, _)| k.clone()));
    }
}

/// Objects kept encoded by `codec`; `hot` keeps decoded objects for reads
/// ([`CompactOptions::hot_objects`](crate::cache::store::CompactOptions::hot_objects)).
pub(crate) struct CompactBackend<K> {
    pub(crate) codec: Arc<dyn ObjectCodec<K>>,
    pub(crate) hot: Option<HotObjects<K>>,
}

/// Decodes `blob`, stored under `key`.
pub(crate) fn decode_arc<K>(
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

impl<K> CompactBackend<K> {
    /// Trains the dictionary once enough objects are stored, and re-encodes what was stored
    /// before it existed. Called with the writer lock held.
    fn maybe_train(&self, state: &RwLock<State<K, Blob>>) -> Result<(), IndexerError> {
        let samples: Vec<Blob> = {
            let s = state.read();
            if !self.codec.core().wants_training(s.tables.items.len()) {
                return Ok(());
            }
            s.tables.items.values().map(|i| Arc::clone(&i.v)).collect()
        };
        if self.codec.core().train(&samples) {
            drop(samples);
            recompress(&mut state.write().tables, self.codec.as_ref())?;
        }
        Ok(())
    }
}

impl<K> Backend<K> for CompactBackend<K> {
    type V = Blob;
    type ReadError = IndexerError;
    const SHARE_EQUAL: bool = true;

    fn store(&self, key: &ObjectKey, obj: &Arc<K>, version: &str) -> Result<Blob, IndexerError> {
        self.codec
            .encode(obj, version)
            .map_err(|source| IndexerError::Encode {
                key: key.clone(),
                source,
            })
    }

    /// From the blob's header.
    fn stored_version(v: &Blob) -> Option<&str> {
        stored_version(v)
    }

    /// Identical bytes: the stored object equals the new one.
    fn same(stored: &Blob, new: &Blob) -> bool {
        **stored == **new
    }

    /// From the hot-object cache when it holds that very encoding, else decoded (and, via
    /// the cache, remembered). An object on its way out (`Via::Peek`: the one an update or a
    /// delete replaced) that can keep its body in the blob (a `Lazy`) is not decompressed
    /// until read: the handlers of most updates never read `old`.
    fn object(&self, (key, blob): (ObjectKey, Blob), via: Via) -> Result<Arc<K>, IndexerError> {
        let hot = match &self.hot {
            Some(hot) if via != Via::Direct => Some(hot),
            _ => None,
        };
        if let Some(obj) = hot.and_then(|hot| hot.get(key.as_str(), &blob)) {
            return Ok(obj);
        }
        if via == Via::Peek
            && let Some(obj) = self.codec.decode_later(key.as_str(), &blob)
        {
            return Ok(Arc::new(obj));
        }
        let obj = decode_arc(self.codec.as_ref(), key.as_str(), &blob)?;
        if let (Some(hot), Via::Cache) = (hot, via) {
            hot.insert(&key, &blob, &obj);
        }
        Ok(obj)
    }

    fn cache(&self, key: &ObjectKey, v: &Blob, obj: &Arc<K>) {
        if let Some(hot) = &self.hot {
            hot.insert(key, v, obj);
        }
    }

    fn written(&self, state: &RwLock<State<K, Blob>>) -> Result<(), IndexerError> {
        self.maybe_train(state)
    }

    fn forget(&self, key: &str) {
        if let Some(hot) = &self.hot {
            hot.remove(key);
        }
    }

    /// Trains the dictionary on the first objects of a list large enough, and on the whole
    /// list once built if it still wants one.
    fn rebuilding(
        &self,
        tables: &mut Tables<Blob>,
        n: usize,
        total: usize,
    ) -> Result<(), IndexerError> {
        let core = self.codec.core();
        let now = if n < total {
            n == core.train_after() && core.wants_training(total)
        } else {
            core.wants_training(tables.items.len())
        };
        if now {
            let samples: Vec<Blob> = tables.items.values().map(|i| Arc::clone(&i.v)).collect();
            if core.train(&samples) {
                drop(samples);
                recompress(tables, self.codec.as_ref())?;
            }
        }
        Ok(())
    }

    fn previous(&self, items: FastMap<ObjectKey, Item<Blob>>) -> PreviousItems<K> {
        PreviousItems::compact(OldBlobs::Map(items), &self.codec)
    }
}

impl<K> ReplaceInPlace<K> for CompactBackend<K> {
    /// The staged replace (see `relist`) once the dictionary question is settled.
    fn replace_in_place(
        core: &Core<K, Self>,
        funcs: &IndexerList<K>,
        objs: &[Arc<K>],
        keep: bool,
    ) -> Result<Option<Replaced<K>>, IndexerError>
    where
        K: Resource,
    {
        if core.backend.codec.core().wants_training(objs.len()) {
            return Ok(None);
        }
        core.replace_staged(funcs, objs, keep)
    }
}

/// Re-encodes every blob the codec wants to change (after a dictionary was trained), in the
/// item map and in every index entry.
pub(crate) fn recompress<K>(
    tables: &mut Tables<Blob>,
    codec: &dyn ObjectCodec<K>,
) -> Result<(), IndexerError> {
    let mut changed: FastMap<ObjectKey, Blob> = FastMap::default();
    for (key, item) in &tables.items {
        match codec.core().recompress(&item.v) {
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
    for (key, item) in tables.items.iter_mut() {
        if let Some(b) = changed.get(key.as_str()) {
            item.v = Arc::clone(b);
        }
    }
    for index in &mut tables.indices {
        for set in index.sets_mut() {
            for (key, blob) in set.iter_mut() {
                if let Some(b) = changed.get(key.as_str()) {
                    *blob = Arc::clone(b);
                }
            }
        }
    }
    Ok(())
}
