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
    /// Removes `key`'s entry, if any (compact relists).
    #[cfg_attr(not(feature = "compact"), allow(dead_code))]
    fn remove_key(&mut self, key: &ObjectKey);
    /// True when no entry is left.
    fn is_empty(&self) -> bool;
}

/// One index: value → the set of entries of the objects that produced it.
///
/// Invariants: no value maps to an empty set; an entry keeps what is stored under its key in
/// the item map.
#[derive(Debug)]
pub(crate) struct Index<S> {
    pub(crate) map: FastMap<String, S>,
}

impl<S> Default for Index<S> {
    fn default() -> Self {
        Index {
            map: FastMap::default(),
        }
    }
}

impl<S: EntrySet> Index<S> {
    /// Moves `item`'s key from the `old` values to the `new` values, recording its entry (also
    /// under values that did not change). The value strings are moved out of `new` (left
    /// empty). `old_item`, if given, is the entry stored under the `old` values (see
    /// [`EntrySet::old_item`]).
    pub(crate) fn update(
        &mut self,
        item: &S::Item,
        old_item: Option<&S::Item>,
        old: &[String],
        new: &mut [String],
    ) {
        let stored = old_item.unwrap_or(item);
        for o in old {
            if !new.contains(o) {
                self.remove(o, stored);
            }
        }
        for n in new.iter_mut() {
            match (old_item, old.contains(n)) {
                // Unchanged values keep the key; the entry is refreshed in place.
                (Some(prev), true) => match self.map.get_mut(n.as_str()) {
                    Some(set) => set.refresh(prev, item),
                    None => self.put(std::mem::take(n), item),
                },
                _ => self.put(std::mem::take(n), item),
            }
        }
    }

    /// Records `item` under `value` (creating the value's set if needed; an owned `value` is
    /// moved into the map then, a borrowed one copied).
    pub(crate) fn put(&mut self, value: impl AsRef<str> + Into<String>, item: &S::Item) {
        match self.map.get_mut(value.as_ref()) {
            Some(set) => set.put(item),
            None => {
                let mut set = S::with_one();
                set.put(item);
                self.map.insert(value.into(), set);
            }
        }
    }

    /// Removes `item`'s key from `value`'s set, and the set once empty.
    pub(crate) fn remove(&mut self, value: &str, item: &S::Item) {
        self.remove_with(value, |set| set.remove_item(item));
    }

    /// Removes `key` from `value`'s set, and the set once empty (compact relists).
    #[cfg_attr(not(feature = "compact"), allow(dead_code))]
    pub(crate) fn remove_key(&mut self, value: &str, key: &ObjectKey) {
        self.remove_with(value, |set| set.remove_key(key));
    }

    fn remove_with(&mut self, value: &str, remove: impl FnOnce(&mut S)) {
        if let Some(set) = self.map.get_mut(value) {
            remove(set);
            if set.is_empty() {
                self.map.remove(value);
            }
        }
    }
}

/// The index values of one object for every index, in one flat buffer.
#[derive(Debug, Default)]
pub(crate) struct IndexValues {
    pub(crate) values: Vec<String>,
    /// `ends[i]` = end of index i's values in `values`.
    pub(crate) ends: Vec<usize>,
}

impl IndexValues {
    /// Empties it, keeping its buffers for the next object.
    pub(crate) fn clear(&mut self) {
        self.values.clear();
        self.ends.clear();
    }

    /// The values of index `i`.
    pub(crate) fn get(&self, i: usize) -> &[String] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.values[start..self.ends[i]]
    }

    /// The values of index `i`, mutable (so they can be moved into an index).
    pub(crate) fn get_mut(&mut self, i: usize) -> &mut [String] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &mut self.values[start..self.ends[i]]
    }
}
