//! The item map and indices of one storage mode, and the index bookkeeping both modes share.

use std::sync::Arc;

use kube_core::Resource;

use super::entries::{ByKey, KeyLike};
use super::error::IndexerError;
use super::{
    Blob, EntrySet, FastMap, FastSet, FastState, Index, IndexFunc, IndexValues, Indexers,
    ObjectCodec,
};
use crate::cache::meta::ObjectKey;

/// What one storage mode keeps per object, and the entry sets of its indices.
pub(super) trait Stored: Clone + Sized {
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
pub(super) struct Tables<V: Stored> {
    pub(super) items: FastMap<ObjectKey, V>,
    /// Invariant: `indices.len() == indexers.len()`, and every index reflects every item.
    pub(super) indices: Vec<Index<V::Set>>,
}

impl<V: Stored> Tables<V> {
    pub(super) fn new(indices: usize, capacity: usize) -> Self {
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
    pub(super) fn put(
        &mut self,
        key: &ObjectKey,
        v: &V,
        old: Option<&IndexValues>,
        new: &mut IndexValues,
    ) {
        for (i, index) in self.indices.iter_mut().enumerate() {
            let old = old.map(|o| o.get(i)).unwrap_or(&[]);
            index.update(key, v, old, new.get_mut(i));
        }
        self.items.insert(key.clone(), v.clone());
    }

    /// Removes `key` (whose stored object `v` has index values `old`).
    pub(super) fn take(&mut self, key: &ObjectKey, v: &V, old: &IndexValues) {
        for (i, index) in self.indices.iter_mut().enumerate() {
            index.update(key, v, old.get(i), &mut []);
        }
        self.items.remove(key.as_str());
    }
}

impl<K: Resource> Tables<Arc<K>> {
    /// The stored objects having `value` in index `i`.
    pub(super) fn by_index(&self, i: usize, value: &str) -> Vec<Arc<K>> {
        match self.indices[i].map.get(value) {
            Some(set) => set.iter().map(|e| Arc::clone(&e.obj)).collect(),
            None => Vec::new(),
        }
    }

    /// The stored objects sharing any of `values` in index `i`, once each.
    pub(super) fn matching(&self, i: usize, values: &[String]) -> Vec<Arc<K>> {
        let mut found: FastSet<&ByKey<K>> = FastSet::default();
        for v in values {
            if let Some(set) = self.indices[i].map.get(v.as_str()) {
                found.extend(set.iter());
            }
        }
        found.into_iter().map(|e| Arc::clone(&e.obj)).collect()
    }

    /// The keys having `value` in index `i`.
    pub(super) fn index_keys(&self, i: usize, value: &str) -> Vec<ObjectKey> {
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
    pub(super) fn matching(&self, i: usize, values: &[String]) -> Vec<(ObjectKey, Blob)> {
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
    pub(super) fn recompress<K>(&mut self, codec: &dyn ObjectCodec<K>) -> Result<(), IndexerError> {
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
pub(super) type IndexerList<K> = Arc<Vec<(String, IndexFunc<K>)>>;

/// The state under the lock. Only the tables of the indexer's mode are used (the other stay
/// empty): `typed` without a codec, `compact` with one.
pub(super) struct State<K> {
    pub(super) typed: Tables<Arc<K>>,
    pub(super) compact: Tables<Blob>,
    pub(super) indexers: IndexerList<K>,
}

impl<K> State<K> {
    pub(super) fn len(&self, compact: bool) -> usize {
        if compact {
            self.compact.items.len()
        } else {
            self.typed.items.len()
        }
    }
}

pub(super) fn compute_values<K: Resource>(
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

pub(super) fn sorted<K>(indexers: Indexers<K>) -> Vec<(String, IndexFunc<K>)> {
    let mut list: Vec<_> = indexers.into_iter().collect();
    list.sort_by(|a, b| a.0.cmp(&b.0));
    list
}

/// `n` empty indices.
pub(super) fn empty_indices<S>(n: usize) -> Vec<Index<S>> {
    (0..n).map(|_| Index::default()).collect()
}

/// New indices for `funcs`, filled from the stored `items` (`object` gives the object a stored
/// value stands for).
pub(super) fn back_fill<K: Resource, V: Stored>(
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
