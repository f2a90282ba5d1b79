//! Index functions and the per-index maps (`index value → entries`).
//!
//! An index function maps an object to zero or more *index values*; the indexer keeps, per
//! index, a map from each value to the set of entries of the objects that produced it (see
//! `entries`).
//!
//! Index functions push values into a buffer the indexer provides instead of returning a fresh
//! `Vec`: the indexer computes all indices of an object into one reused buffer, so indexing an
//! object costs one allocation per value (the value's `String`) rather than one extra per index.

use std::collections::HashMap;
use std::sync::Arc;

use kube_core::Resource;

use super::entries::{Loc, Slab};
use super::value_ids::NO_ID;

pub(crate) use crate::hash::{FastMap, FastState};

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

/// One index value and the set of entries of the objects that produced it.
#[derive(Debug)]
struct Slot<T> {
    value: Arc<str>,
    set: Slab<T>,
}

/// One index: value → the set of entries of the objects that produced it.
///
/// Values are interned: each value present has a slot, and each entry a position in the
/// value's set; the items keep both (see [`ValueIds`](super::value_ids::ValueIds)), so a
/// write reaches the entries of the object it replaces by id and position, without hashing
/// the value or a key.
///
/// Invariants: no value maps to an empty set; each stored object has exactly one entry per
/// value it has, at the place its item keeps, holding what is stored under its key in the
/// item map; `ids` maps every value of a live slot to its id, and nothing else.
#[derive(Debug)]
pub(crate) struct Index<T> {
    ids: FastMap<Arc<str>, u32>,
    /// By id; `None` for a free id (listed in `free`).
    slots: Vec<Option<Slot<T>>>,
    free: Vec<u32>,
}

impl<T> Default for Index<T> {
    fn default() -> Self {
        Index {
            ids: FastMap::default(),
            slots: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<T> Index<T> {
    /// The entries of the objects with `value`, if any.
    pub(crate) fn get(&self, value: &str) -> Option<&Slab<T>> {
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
    pub(crate) fn sets_mut(&mut self) -> impl Iterator<Item = &mut Slab<T>> {
        self.slots.iter_mut().flatten().map(|s| &mut s.set)
    }

    /// Every value's set.
    #[cfg(test)]
    pub(crate) fn sets(&self) -> impl Iterator<Item = &Slab<T>> {
        self.slots.iter().flatten().map(|s| &s.set)
    }

    /// True if the entry at `loc` is of one of the values `new`.
    pub(crate) fn keeps(&self, loc: Loc, new: &[impl AsRef<str>]) -> bool {
        self.value(loc.id)
            .is_some_and(|v| new.iter().any(|n| n.as_ref() == v))
    }

    fn slot(&self, id: u32) -> Option<&Slot<T>> {
        self.slots.get(id as usize)?.as_ref()
    }
}

impl<T: Clone> Index<T> {
    /// Records `entry` under `value` (creating the value's slot if needed); returns where.
    ///
    /// # Panics
    /// When the index would hold `u32::MAX` distinct values, or a value `u32::MAX` entries
    /// (a capacity overflow, as a `Vec`'s: each entry is of a stored object).
    pub(crate) fn put(&mut self, value: &str, entry: T) -> Loc {
        if let Some(&id) = self.ids.get(value)
            && let Some(Some(slot)) = self.slots.get_mut(id as usize)
        {
            let Ok(pos) = slot.set.put(entry) else {
                panic!(
                    "capacity overflow: an index value holds {} entries",
                    slot.set.len()
                )
            };
            return Loc { id, pos };
        }
        let value: Arc<str> = Arc::from(value);
        let slot = Some(Slot {
            value: Arc::clone(&value),
            set: Slab::with(entry),
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
        Loc { id, pos: 0 }
    }

    /// Moves an object's entries from the places `old` to the values `new`, with `entry` as
    /// the new entry, pushing the new places onto `out`. The entry of a value in both is
    /// overwritten where it is; the others are freed, or put in their value's set. The
    /// entries taken out go to `displaced` (for the caller to drop where it chooses).
    pub(crate) fn update(
        &mut self,
        old: &[Loc],
        entry: &T,
        new: &[impl AsRef<str>],
        out: &mut Vec<Loc>,
        displaced: &mut Vec<T>,
    ) {
        for &loc in old {
            if !self.keeps(loc, new) {
                displaced.extend(self.remove(loc));
            }
        }
        for value in new {
            let value = value.as_ref();
            let loc = match old.iter().find(|l| self.value(l.id) == Some(value)) {
                Some(&loc) => {
                    if let Some(Some(slot)) = self.slots.get_mut(loc.id as usize) {
                        displaced.extend(slot.set.set(loc.pos, entry.clone()));
                    }
                    loc
                }
                None => self.put(value, entry.clone()),
            };
            out.push(loc);
        }
    }

    /// Removes and returns the entry at `loc`, and drops its value once the value's set is
    /// empty.
    pub(crate) fn remove(&mut self, loc: Loc) -> Option<T> {
        let slot = self.slots.get_mut(loc.id as usize)?.as_mut()?;
        let entry = slot.set.remove(loc.pos);
        if slot.set.is_empty()
            && let Some(slot) = self.slots[loc.id as usize].take()
        {
            self.ids.remove(&*slot.value);
            self.free.push(loc.id);
        }
        entry
    }
}

/// The index values of one object for every index, in one flat buffer, and (once a write has
/// interned them) their ids; `S` is `String` for computed values, `&str` for staged ones.
#[derive(Debug)]
pub(crate) struct IndexValues<S = String> {
    pub(crate) values: Vec<S>,
    /// `ends[i]` = end of index i's values in `values` (and of their ids in `ids`).
    pub(crate) ends: Vec<usize>,
    /// The places of the values' entries, filled by the write that stores them.
    pub(crate) ids: Vec<Loc>,
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
