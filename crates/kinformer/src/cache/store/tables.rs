//! The item map and indices of one storage, and the index bookkeeping both storages share.

use std::collections::hash_map::Entry;
use std::sync::Arc;

use kube_core::Resource;

use super::entries::Loc;
use super::error::IndexerError;
use super::index::group;
use super::value_ids::ValueIds;
use super::{FastMap, FastState, Index, IndexFunc, IndexValues, Indexers};
use crate::cache::meta::ObjectKey;

/// What one storage keeps per object.
pub(super) trait Stored: Clone + Sized {
    /// What a reader copies out of the tables under the lock, to make the object of after
    /// releasing it, and what an index entry holds (see `entries`). Typed: the object.
    /// Compact: the key and the encoding.
    type Raw: Clone;
    /// The raw value of `v`, stored under `key`.
    fn raw(key: &ObjectKey, v: &Self) -> Self::Raw;
}

impl<K> Stored for Arc<K> {
    type Raw = Arc<K>;
    fn raw(_key: &ObjectKey, v: &Self) -> Arc<K> {
        Arc::clone(v)
    }
}

/// What the item map keeps per key: the stored value and the places of its index entries, so
/// a write finds the entries of the object it replaces or deletes without reading it.
#[derive(Debug, Clone)]
pub(super) struct Item<V> {
    pub(super) v: V,
    pub(super) ids: ValueIds,
}

/// The most items [`Tables::reserve`] makes room for at once.
const MAX_RESERVED_ITEMS: usize = 1 << 20;

/// The item map and the indices of one storage; `V` is what is stored per object.
pub(super) struct Tables<V: Stored> {
    pub(super) items: FastMap<ObjectKey, Item<V>>,
    /// Invariant: `indices.len() == indexers.len()`, every index reflects every item, and an
    /// item's ids are those of its values in each index.
    pub(super) indices: Vec<Index<V::Raw>>,
}

impl<V: Stored> Tables<V> {
    pub(super) fn new(indices: usize, capacity: usize) -> Self {
        Tables {
            items: FastMap::with_capacity_and_hasher(capacity, FastState::default()),
            indices: empty_indices(indices),
        }
    }

    /// Makes room for `total` items in all, so that filling the map up to that many does not
    /// grow it step by step (each step rehashes every item, on the writer's path). At most
    /// [`MAX_RESERVED_ITEMS`]: the number usually comes from the server
    /// (`remainingItemCount`); a larger or failed reservation leaves the map to grow as usual.
    pub(super) fn reserve(&mut self, total: usize) {
        let wanted = total.min(MAX_RESERVED_ITEMS);
        if wanted > self.items.capacity() {
            let _ = self.items.try_reserve(wanted - self.items.len());
        }
    }

    /// The stored `(key, value)` pairs.
    pub(super) fn snapshot(&self) -> Vec<(ObjectKey, V)> {
        self.items
            .iter()
            .map(|(k, i)| (k.clone(), i.v.clone()))
            .collect()
    }

    /// The value stored under `key`, with the stored key.
    pub(super) fn stored(&self, key: &str) -> Option<(ObjectKey, V)> {
        self.items
            .get_key_value(key)
            .map(|(k, i)| (k.clone(), i.v.clone()))
    }
}

impl<V: Stored> Tables<V> {
    /// Stores `v` under `key` with the index values `new` (one group per index), and returns
    /// the value stored before. An index whose values did not change only has its entries
    /// refreshed (they must hold `v`); only changed values move the key between sets. The
    /// entries of the value stored before go to `displaced`: neither they nor the value are
    /// dropped here, so a typed write can leave the old object untouched on its thread.
    pub(super) fn put<S: AsRef<str>>(
        &mut self,
        key: &ObjectKey,
        v: V,
        new: &mut IndexValues<S>,
        displaced: &mut Vec<V::Raw>,
    ) -> Option<V> {
        let entry = V::raw(key, &v);
        let IndexValues { values, ends, ids } = new;
        ids.clear();
        // One probe of the item map, whether the key is new or stored.
        let mut stored = match self.items.entry(key.clone()) {
            Entry::Vacant(slot) => {
                let ids = insert(&mut self.indices, entry, values, ends, ids);
                slot.insert(Item { v, ids });
                return None;
            }
            Entry::Occupied(stored) => stored,
        };
        let stored = stored.get_mut();
        for (i, index) in self.indices.iter_mut().enumerate() {
            let old = stored.ids.get(i);
            index.update(old, &entry, group(values, ends, i), ids, displaced);
        }
        stored.ids = ValueIds::new(ids, ends);
        Some(std::mem::replace(&mut stored.v, v))
    }

    /// Frees the index entries of `key` for values it no longer has in `new` (one group per
    /// index), keeping those of values it keeps; a later [`put`](Self::put) with the same
    /// values refreshes the kept entries and places the new ones. A write of many objects that
    /// releases them all before putting any fills the slots it freed instead of growing sets.
    #[cfg(feature = "compact")]
    pub(super) fn release<S: AsRef<str>>(&mut self, key: &str, new: &mut IndexValues<S>) {
        let Some(stored) = self.items.get_mut(key) else {
            return;
        };
        let IndexValues {
            values, ends, ids, ..
        } = new;
        ids.clear();
        let mut kept_ends = Vec::with_capacity(self.indices.len());
        for (i, index) in self.indices.iter_mut().enumerate() {
            let wanted = group(values, ends, i);
            for &loc in stored.ids.get(i) {
                if index.keeps(loc, wanted) {
                    ids.push(loc);
                } else {
                    drop(index.remove(loc));
                }
            }
            kept_ends.push(ids.len());
        }
        stored.ids = ValueIds::new(ids, &kept_ends);
    }

    /// Removes `key` and its index entries (found by the ids stored beside it); returns what
    /// was stored.
    pub(super) fn take(&mut self, key: &str) -> Option<V> {
        let (_, stored) = self.items.remove_entry(key)?;
        for (i, index) in self.indices.iter_mut().enumerate() {
            for &loc in stored.ids.get(i) {
                drop(index.remove(loc));
            }
        }
        Some(stored.v)
    }
}

#[cfg(test)]
impl<V: Stored> Tables<V> {
    /// Asserts the places invariant: every place an item keeps holds an entry, no two items
    /// keep the same place, and the sets hold no other entry.
    pub(super) fn assert_places(&self) {
        for (i, index) in self.indices.iter().enumerate() {
            let mut seen = std::collections::HashSet::new();
            for (key, item) in &self.items {
                for loc in item.ids.get(i) {
                    assert!(seen.insert(*loc), "{key}: place {loc:?} is kept twice");
                    let value = index.value(loc.id);
                    let set = value.and_then(|v| index.get(v));
                    assert!(
                        set.and_then(|s| s.get(loc.pos)).is_some(),
                        "{key}: no entry at {loc:?}"
                    );
                }
            }
            let entries: usize = index.sets().map(|s| s.len()).sum();
            assert_eq!(entries, seen.len(), "index {i} holds entries no item keeps");
        }
    }
}

/// Records `entry` under its values `values` (grouped by `ends`, one group per index) in
/// `indices`; returns the places of its entries (`ids` is the buffer they are collected in).
/// The last value's set takes `entry` itself, the others a clone.
pub(super) fn insert<T: Clone>(
    indices: &mut [Index<T>],
    entry: T,
    values: &[impl AsRef<str>],
    ends: &[usize],
    ids: &mut Vec<Loc>,
) -> ValueIds {
    ids.clear();
    let mut entry = Some(entry);
    let mut left = values.len();
    for (i, index) in indices.iter_mut().enumerate() {
        for value in group(values, ends, i) {
            left -= 1;
            let e = if left == 0 {
                entry.take()
            } else {
                entry.clone()
            };
            if let Some(e) = e {
                ids.push(index.put(value.as_ref(), e));
            }
        }
    }
    ValueIds::new(ids, ends)
}

/// The index functions in a fixed order; `indices[i]` belongs to `funcs[i]`.
pub(super) type IndexerList<K> = Arc<Vec<(String, IndexFunc<K>)>>;

/// The state under the lock: one storage's tables and the index functions.
pub(super) struct State<K, V: Stored> {
    pub(super) tables: Tables<V>,
    pub(super) indexers: IndexerList<K>,
}

/// The index values of `obj` (stored under `key`) for every index function, into `out`
/// (cleared first, its buffers reused). A value an index function gives twice is kept once.
pub(super) fn compute_values_into<K: Resource>(
    funcs: &[(String, IndexFunc<K>)],
    key: &ObjectKey,
    obj: &K,
    out: &mut IndexValues,
) -> Result<(), IndexerError> {
    out.clear();
    for (name, f) in funcs {
        let start = out.values.len();
        f(obj, &mut out.values).map_err(|source| IndexerError::IndexFunc {
            index: name.clone(),
            key: key.clone(),
            source,
        })?;
        dedup_from(&mut out.values, start);
        out.ends.push(out.values.len());
    }
    Ok(())
}

/// Drops repeated values from `values[start..]` (their order is of no consequence).
fn dedup_from(values: &mut Vec<String>, start: usize) {
    if values.len() - start < 2 {
        return;
    }
    values[start..].sort_unstable();
    let mut kept = start + 1;
    for i in start + 1..values.len() {
        if values[i] != values[kept - 1] {
            values.swap(i, kept);
            kept += 1;
        }
    }
    values.truncate(kept);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_values_are_kept_once() {
        let mut v: Vec<String> = ["x", "b", "a", "b", "c", "a"].map(String::from).into();
        dedup_from(&mut v, 1);
        assert_eq!(v, ["x", "a", "b", "c"]);
        let mut one = vec![String::from("a")];
        dedup_from(&mut one, 0);
        assert_eq!(one, ["a"]);
    }

    #[test]
    fn reserve_makes_room_up_to_a_bound_and_never_shrinks() {
        let mut t: Tables<Arc<String>> = Tables::new(0, 0);
        t.reserve(1_000);
        assert!(t.items.capacity() >= 1_000);
        let before = t.items.capacity();
        t.reserve(10);
        assert_eq!(t.items.capacity(), before);
        // A count no server would send is not taken at its word.
        let mut huge: Tables<Arc<String>> = Tables::new(0, 0);
        huge.reserve(usize::MAX);
        assert!(huge.items.capacity() >= MAX_RESERVED_ITEMS);
        assert!(huge.items.capacity() < 2 * MAX_RESERVED_ITEMS);
    }
}
