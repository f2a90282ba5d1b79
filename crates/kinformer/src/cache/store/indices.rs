//! Index queries and adding index functions to a populated indexer.

use std::sync::Arc;

use kube_core::Resource;

use super::backend::{Backend, Entries, ReadError, SetOf, Via};
use super::core::Core;
use super::error::IndexerError;
use super::tables::{State, compute_values, empty_indices, sorted};
use super::{EntrySet, IndexFunc, Indexers};
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
            Ok(i) => s.tables.indices[i].map.keys().cloned().collect(),
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
            let map = &s.tables.indices[i].map;
            Entries::union(values.iter().filter_map(|v| map.get(v.as_str())))
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
            if let Some(set) = s.tables.indices[i].map.get(value) {
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
            if let Some(set) = s.tables.indices[i].map.get(value) {
                set.raws(&mut raws);
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
        // Back-fill the new indices from the stored objects, without the lock.
        let items = self.state.read().tables.snapshot();
        let mut added = empty_indices(new.len());
        for (key, v) in &items {
            let obj = self.object_of(key, v, Via::Direct)?;
            let mut vals = compute_values(&new, key, &obj)?;
            let item = SetOf::<K, B>::item(key, v);
            for (i, index) in added.iter_mut().enumerate() {
                index.update(&item, None, &[], vals.get_mut(i));
            }
        }
        drop(items);
        let mut list: Vec<(String, IndexFunc<K>)> = funcs.iter().cloned().collect();
        list.extend(new);
        let mut s = self.state.write();
        s.tables.indices.extend(added);
        s.indexers = Arc::new(list);
        Ok(())
    }
}
