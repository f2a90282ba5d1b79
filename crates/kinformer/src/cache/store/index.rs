//! Index functions and the per-index maps (`index value → keys`).
//!
//! An index function maps an object to zero or more *index values*; the indexer keeps, per
//! index, a map from each value to the set of keys whose objects produced it.
//!
//! Index functions push values into a buffer the indexer provides instead of returning a fresh
//! `Vec`: the indexer computes all indices of an object into one reused buffer, so indexing an
//! object costs one allocation per value (the value's `String`) rather than one extra per index.

use std::collections::HashMap;
use std::sync::Arc;

use kube_core::Resource;

use super::value_ids::NO_ID;
use crate::cache::meta::ObjectKey;

pub(crate) use crate::hash::{FastMap, FastSet, FastState};

/// Why an index function could not index an object (client-go panics here; kinformer returns
/// this as [`IndexerError::IndexFunc`](super::IndexerError::IndexFunc)).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct IndexFuncError(pub String);

/// An index function: pushes the object's index values into `values` (which the indexer
/// passes in; append only, never clear it).
///
/// It runs without any indexer lock held, but must still be cheap and must not call back into
/// the same indexer's write methods.
pub type IndexFunc<K> =
    Arc<dyn Fn(&K, &mut Vec<String>) -> Result<(), IndexFuncError> + Send + Sync>;

/// Named index functions, client-go's `Indexers`.
pub type Indexers<K> = HashMap<String, IndexFunc<K>>;

/// The name of the namespace index, as client-go's `NamespaceIndex`.
pub const NAMESPACE_INDEX: &str = "namespace";

/// Indexes an object by its namespace (`""` for cluster-scoped objects), as client-go's
/// `MetaNamespaceIndexFunc`.
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::Pod;
/// use kinformer::cache::store::{Indexer, NAMESPACE_INDEX, namespace_index_func};
///
/// let indexer = Indexer::<Pod>::new([(NAMESPACE_INDEX.to_string(), namespace_index_func())].into());
/// let mut pod = Pod::default();
/// pod.metadata.name = Some("a".into());
/// pod.metadata.namespace = Some("ns1".into());
/// indexer.add(Arc::new(pod)).unwrap();
/// assert_eq!(indexer.by_index(NAMESPACE_INDEX, "ns1").unwrap().len(), 1);
/// ```
pub fn namespace_index_func<K: Resource>() -> IndexFunc<K> {
    Arc::new(|obj: &K, values: &mut Vec<String>| {
        values.push(obj.meta().namespace.clone().unwrap_or_default());
        Ok(())
    })
}

/// Indexes an object by the value of its label `label`; objects without the label are not in
/// the index.
pub fn label_index_func<K: Resource>(label: impl Into<String>) -> IndexFunc<K> {
    let label = label.into();
    Arc::new(move |obj: &K, values: &mut Vec<String>| {
        if let Some(v) = obj.meta().labels.as_ref().and_then(|l| l.get(&label)) {
            values.push(v.clone());
        }
        Ok(())
    })
}

/// The set of entries one index value maps to: the keys of the objects that produced it,
/// with whatever the storage mode keeps per entry.
pub(crate) trait EntrySet {
    /// What is stored per key (the object in typed mode, its encoding in compact mode).
    type Entry;
    /// A key with its entry, made once per write for every index value it touches (typed
    /// mode: with the key's hash, so it is hashed once).
    type Item;
    /// The item of `key` with `entry`.
    fn item(key: &ObjectKey, entry: &Self::Entry) -> Self::Item;
    /// An empty set sized for one entry.
    fn with_one() -> Self;
    /// Inserts `item`, replacing an entry with the same key.
    fn put(&mut self, item: &Self::Item);
    /// The item of `item`'s key with the entry `old` that it replaces, if this storage finds
    /// entries faster by it (typed: by the old object's address).
    fn old_item(_item: &Self::Item, _old: &Self::Entry) -> Option<Self::Item> {
        None
    }
    /// Replaces the entry `old` (stored, of the same key as `new`) with `new`.
    fn refresh(&mut self, _old: &Self::Item, new: &Self::Item) {
        self.put(new);
    }
    /// Removes the entry with `item`'s key, if any.
    fn remove_item(&mut self, item: &Self::Item);
    /// True when no entry is left.
    fn is_empty(&self) -> bool;
}

/// One index value and the set of entries of the objects that produced it.
#[derive(Debug)]
struct Slot<S> {
    value: Arc<str>,
    set: S,
}

/// One index: value → the set of entries of the objects that produced it.
///
/// Values are interned: each value present has a slot, whose id the items that have the value
/// keep (see [`ValueIds`](super::value_ids::ValueIds)), so a write reaches the set of a value
/// it already had by id, without hashing the value.
///
/// Invariants: no value maps to an empty set; an entry keeps what is stored under its key in
/// the item map; `ids` maps every value of a live slot to its id, and nothing else.
#[derive(Debug)]
pub(crate) struct Index<S> {
    ids: FastMap<Arc<str>, u32>,
    /// By id; `None` for a free id (listed in `free`).
    slots: Vec<Option<Slot<S>>>,
    free: Vec<u32>,
}

impl<S> Default for Index<S> {
    fn default() -> Self {
        Index {
            ids: FastMap::default(),
            slots: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<S> Index<S> {
    /// The entries of the objects with `value`, if any.
    pub(crate) fn get(&self, value: &str) -> Option<&S> {
        let id = *self.ids.get(value)?;
        self.slot(id).map(|s| &s.set)
    }

    /// Every value present.
    pub(crate) fn values(&self) -> impl Iterator<Item = &str> {
        self.ids.keys().map(|v| &**v)
    }

    /// The value of slot `id`, if it is live.
    pub(crate) fn value(&self, id: u32) -> Option<&str> {
        self.slot(id).map(|s| &*s.value)
    }

    /// Every value's set.
    #[cfg_attr(not(any(test, feature = "compact")), allow(dead_code))]
    pub(crate) fn sets_mut(&mut self) -> impl Iterator<Item = &mut S> {
        self.slots.iter_mut().flatten().map(|s| &mut s.set)
    }

    /// Every value's set.
    #[cfg(test)]
    pub(crate) fn sets(&self) -> impl Iterator<Item = &S> {
        self.slots.iter().flatten().map(|s| &s.set)
    }

    fn slot(&self, id: u32) -> Option<&Slot<S>> {
        self.slots.get(id as usize)?.as_ref()
    }
}

impl<S: EntrySet> Index<S> {
    /// Records `item` under `value` (creating the value's slot if needed); returns the
    /// value's id.
    ///
    /// # Panics
    /// When the index would hold `u32::MAX` distinct values (a capacity overflow, as a
    /// `Vec`'s: each value's slot holds at least one entry of a stored object).
    pub(crate) fn put(&mut self, value: &str, item: &S::Item) -> u32 {
        if let Some(&id) = self.ids.get(value)
            && let Some(Some(slot)) = self.slots.get_mut(id as usize)
        {
            slot.set.put(item);
            return id;
        }
        let value: Arc<str> = Arc::from(value);
        let mut set = S::with_one();
        set.put(item);
        let slot = Some(Slot {
            value: Arc::clone(&value),
            set,
        });
        let id = match self.free.pop() {
            Some(id) => {
                self.slots[id as usize] = slot;
                id
            }
            None => {
                let id = u32::try_from(self.slots.len())
                    .ok()
                    .filter(|&id| id != NO_ID);
                let Some(id) = id else {
                    panic!(
                        "capacity overflow: an index holds {} values",
                        self.slots.len()
                    )
                };
                self.slots.push(slot);
                id
            }
        };
        self.ids.insert(value, id);
        id
    }

    /// Moves `item`'s key from the values with ids `old` to the values `new`, pushing the
    /// ids of `new` onto `out`. Sets of values in both are refreshed in place (they must hold
    /// the new entry); `stored` is the entry stored under the `old` values (see
    /// [`EntrySet::old_item`]).
    pub(crate) fn update(
        &mut self,
        old: &[u32],
        stored: &S::Item,
        item: &S::Item,
        new: &[impl AsRef<str>],
        out: &mut Vec<u32>,
    ) {
        for &id in old {
            let kept = self
                .value(id)
                .is_some_and(|v| new.iter().any(|n| n.as_ref() == v));
            if !kept {
                self.remove(id, stored);
            }
        }
        for value in new {
            let value = value.as_ref();
            let id = match old.iter().find(|&&id| self.value(id) == Some(value)) {
                Some(&id) => {
                    if let Some(Some(slot)) = self.slots.get_mut(id as usize) {
                        slot.set.refresh(stored, item);
                    }
                    id
                }
                None => self.put(value, item),
            };
            out.push(id);
        }
    }

    /// Removes `item`'s key from the set of the value with `id`, and the value once its set
    /// is empty.
    pub(crate) fn remove(&mut self, id: u32, item: &S::Item) {
        let Some(Some(slot)) = self.slots.get_mut(id as usize) else {
            return;
        };
        slot.set.remove_item(item);
        if slot.set.is_empty()
            && let Some(slot) = self.slots[id as usize].take()
        {
            self.ids.remove(&*slot.value);
            self.free.push(id);
        }
    }
}

/// The index values of one object for every index, in one flat buffer, and (once a write has
/// interned them) their ids; `S` is `String` for computed values, `&str` for staged ones.
#[derive(Debug)]
pub(crate) struct IndexValues<S = String> {
    pub(crate) values: Vec<S>,
    /// `ends[i]` = end of index i's values in `values` (and of their ids in `ids`).
    pub(crate) ends: Vec<usize>,
    /// The values' ids, filled by the write that stores them.
    pub(crate) ids: Vec<u32>,
}

impl<S> Default for IndexValues<S> {
    fn default() -> Self {
        IndexValues {
            values: Vec::new(),
            ends: Vec::new(),
            ids: Vec::new(),
        }
    }
}

impl<S> IndexValues<S> {
    /// Empties it, keeping its buffers for the next object.
    pub(crate) fn clear(&mut self) {
        self.values.clear();
        self.ends.clear();
        self.ids.clear();
    }

    /// The values of index `i` (read by the compact relist).
    #[cfg(feature = "compact")]
    pub(crate) fn get(&self, i: usize) -> &[S] {
        group(&self.values, &self.ends, i)
    }
}

/// Group `i` of `items`, whose groups end at `ends`.
pub(crate) fn group<'a, T>(items: &'a [T], ends: &[usize], i: usize) -> &'a [T] {
    let start = if i == 0 { 0 } else { ends[i - 1] };
    &items[start..ends[i]]
}
