//! The item map and indices of one storage, and the index bookkeeping both storages share.

use std::sync::Arc;

use kube_core::Resource;

use super::entries::ByKey;
use super::error::IndexerError;
use super::{EntrySet, FastMap, FastSet, FastState, Index, IndexFunc, IndexValues, Indexers};
use crate::cache::meta::ObjectKey;

/// What one storage keeps per object.
pub(super) trait Stored: Clone + Sized {
    /// The entry set of an index value. Typed: the objects themselves, hashed by their key
    /// (see `entries`). Compact: key → encoding.
    type Set;
    /// What a reader copies out of the tables under the lock, to make the object of after
    /// releasing it. Typed: the object. Compact: the key and the encoding.
    type Raw;
    /// The raw value of `v`, stored under `key`.
    fn raw(key: &ObjectKey, v: &Self) -> Self::Raw;
}

impl<K> Stored for Arc<K> {
    type Set = FastSet<ByKey<K>>;
    type Raw = Arc<K>;
    fn raw(_key: &ObjectKey, v: &Self) -> Arc<K> {
        Arc::clone(v)
    }
}

/// The item map and the indices of one storage; `V` is what is stored per object.
pub(super) struct Tables<V: Stored> {
    pub(super) items: FastMap<ObjectKey, V>,
    /// Invariant: `indices.len() == indexers.len()`, and every index reflects every item.
    pub(super) indices: Vec<Index<V::Set>>,
}

impl<V: Stored> Tables<V> {
    pub(super) fn new(indices: usize, capacity: usize) -> Self {
        Tables {
            items: FastMap::with_capacity_and_hasher(capacity, FastState::default()),
            indices: empty_indices(indices),
        }
    }

    /// The stored `(key, value)` pairs.
    pub(super) fn snapshot(&self) -> Vec<(ObjectKey, V)> {
        self.items
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
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
        let item = V::Set::item(key, v);
        let prev = self.items.insert(key.clone(), v.clone());
        let prev_item = prev.as_ref().and_then(|p| V::Set::old_item(&item, p));
        for (i, index) in self.indices.iter_mut().enumerate() {
            let old = old.map(|o| o.get(i)).unwrap_or(&[]);
            index.update(&item, prev_item.as_ref(), old, new.get_mut(i));
        }
    }

    /// Removes `key` (whose stored object `v` has index values `old`).
    pub(super) fn take(&mut self, key: &ObjectKey, v: &V, old: &IndexValues) {
        let item = V::Set::item(key, v);
        for (i, index) in self.indices.iter_mut().enumerate() {
            index.update(&item, None, old.get(i), &mut []);
        }
        self.items.remove(key.as_str());
    }
}

/// The index functions in a fixed order; `indices[i]` belongs to `funcs[i]`.
pub(super) type IndexerList<K> = Arc<Vec<(String, IndexFunc<K>)>>;

/// The state under the lock: one storage's tables and the index functions.
pub(super) struct State<K, V: Stored> {
    pub(super) tables: Tables<V>,
    pub(super) indexers: IndexerList<K>,
}

/// The index values of `obj` (stored under `key`) for every index function.
pub(super) fn compute_values<K: Resource>(
    funcs: &[(String, IndexFunc<K>)],
    key: &ObjectKey,
    obj: &K,
) -> Result<IndexValues, IndexerError> {
    let mut out = IndexValues {
        values: Vec::new(),
        ends: Vec::with_capacity(funcs.len()),
    };
    compute_values_into(funcs, key, obj, &mut out)?;
    Ok(out)
}

/// As [`compute_values`], into `out` (cleared first, its buffers reused).
pub(super) fn compute_values_into<K: Resource>(
    funcs: &[(String, IndexFunc<K>)],
    key: &ObjectKey,
    obj: &K,
    out: &mut IndexValues,
) -> Result<(), IndexerError> {
    out.clear();
    for (name, f) in funcs {
        f(obj, &mut out.values).map_err(|source| IndexerError::IndexFunc {
            index: name.clone(),
            key: key.clone(),
            source,
        })?;
        out.ends.push(out.values.len());
    }
    Ok(())
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
