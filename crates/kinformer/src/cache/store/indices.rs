//! Index queries and adding index functions to a populated indexer.

use std::sync::Arc;

use kube_core::Resource;

use super::backend::{Backend, Entries, ReadError, SetOf, Via};
use super::core::Core;
use super::error::IndexerError;
use super::tables::{State, Stored, compute_values_into, empty_indices, insert, sorted};
use super::{IndexFunc, IndexValues, Indexers};
use crate::cache::meta::{ObjectKey, meta_namespace_key};

impl<K, B: Backend<K>> Core<K, B> {
    pub(super) fn index_position(s: &State<K, B::V>, name: &str) -> Result<usize, IndexerError> {
        s.indexers
            .iter()
            .position(|(n, _)| n == name)
            .ok_or_else(|| IndexerError::UnknownIndex(name.to_owned()))
    }

    /// True if an index named `name` exists.
    pub(super) fn has_index(&self, name: &str) -> bool {
        Self::index_position(&self.state.read(), name).is_ok()
    }

    /// Every value present in index `name` (empty for an unknown index, as client-go).
    pub(super) fn list_index_func_values(&self, name: &str) -> Vec<String> {
        let s = self.state.read();
        match Self::index_position(&s, name) {
            Ok(i) => s.tables.indices[i].values().map(str::to_owned).collect(),
            Err(_) => Vec::new(),
        }
    }
}

impl<K: Resource, B: Backend<K>> Core<K, B>
where
    SetOf<K, B>: Entries<B::V>,
{
    /// See [`Indexer::index`](super::Indexer::index).
    pub(super) fn index(&self, name: &str, obj: &K) -> Result<Vec<Arc<K>>, IndexerError> {
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
        let raws = {
            let s = self.state.read();
            let i = Self::index_position(&s, name)?;
            let index = &s.tables.indices[i];
            Entries::union(values.iter().filter_map(|v| index.get(v)))
        };
        self.objects(raws, Via::Cache)
            .map_err(ReadError::into_indexer)
    }

    /// The keys whose objects have `value` in index `name`, sorted.
    pub(super) fn index_keys(
        &self,
        name: &str,
        value: &str,
    ) -> Result<Vec<ObjectKey>, IndexerError> {
        let mut keys = Vec::new();
        {
            let s = self.state.read();
            let i = Self::index_position(&s, name)?;
            if let Some(set) = s.tables.indices[i].get(value) {
                set.keys(&mut keys);
            }
        }
        keys.sort_unstable();
        Ok(keys)
    }

    /// See [`Indexer::by_index`](super::Indexer::by_index).
    pub(super) fn by_index(&self, name: &str, value: &str) -> Result<Vec<Arc<K>>, IndexerError> {
        let mut raws = Vec::new();
        {
            let s = self.state.read();
            let i = Self::index_position(&s, name)?;
            if let Some(set) = s.tables.indices[i].get(value) {
                set.copy_out(&mut raws);
            }
        }
        self.objects(raws, Via::Cache)
            .map_err(ReadError::into_indexer)
    }

    /// See [`Indexer::add_indexers`](super::Indexer::add_indexers).
    pub(super) fn add_indexers(&self, new: Indexers<K>) -> Result<(), IndexerError> {
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
        // Back-fill the new indices from the stored objects, without the lock; the writer
        // lock keeps the items as they are until the new ids are appended to theirs.
        let items = self.state.read().tables.snapshot();
        let mut added = empty_indices(new.len());
        let mut added_ids = Vec::with_capacity(items.len());
        let mut vals = IndexValues::default();
        for (key, v) in &items {
            let obj = self.object_of(key, v, Via::Direct)?;
            compute_values_into(&new, key, &obj, &mut vals)?;
            let entry = B::V::raw(key, v);
            let IndexValues { values, ends, ids } = &mut vals;
            added_ids.push(insert(&mut added, entry, values, ends, ids));
        }
        let (n, m) = (funcs.len(), new.len());
        let mut list: Vec<(String, IndexFunc<K>)> = funcs.iter().cloned().collect();
        list.extend(new);
        let mut s = self.state.write();
        for ((key, _), more) in items.iter().zip(&added_ids) {
            if let Some(item) = s.tables.items.get_mut(key.as_str()) {
                item.ids = item.ids.append(n, more, m);
            }
        }
        s.tables.indices.extend(added);
        s.indexers = Arc::new(list);
        drop(s);
        drop(items);
        Ok(())
    }
}
