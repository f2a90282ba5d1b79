//! Index queries and adding index functions to a populated indexer.

use std::sync::Arc;

use kube_core::Resource;

use super::error::IndexerError;
use super::indexer::{Indexer, decode_arc};
use super::tables::*;
use super::{Blob, IndexFunc, Indexers};
use crate::cache::meta::{ObjectKey, meta_namespace_key};

impl<K: Resource> Indexer<K> {
    /// A no-op kept for client-go's `Store` shape: a store has nothing to resync.
    pub fn resync(&self) {}

    pub(super) fn index_position(s: &State<K>, name: &str) -> Result<usize, IndexerError> {
        s.indexers
            .iter()
            .position(|(n, _)| n == name)
            .ok_or_else(|| IndexerError::UnknownIndex(name.to_owned()))
    }

    /// True if an index named `name` exists.
    pub fn has_index(&self, name: &str) -> bool {
        Self::index_position(&self.state.read(), name).is_ok()
    }

    /// The stored objects that share an index value with `obj` in index `name`.
    ///
    /// # Errors
    /// Unknown index, key error or index function error; in compact mode a decode error.
    pub fn index(&self, name: &str, obj: &K) -> Result<Vec<Arc<K>>, IndexerError> {
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
        let s = self.state.read();
        let i = Self::index_position(&s, name)?;
        match &self.codec {
            None => Ok(s.typed.matching(i, &values)),
            Some(codec) => {
                let blobs = s.compact.matching(i, &values);
                drop(s);
                self.decode_all(codec.as_ref(), blobs)
            }
        }
    }

    /// The keys whose objects have `value` in index `name`, sorted.
    ///
    /// # Errors
    /// [`IndexerError::UnknownIndex`].
    pub fn index_keys(&self, name: &str, value: &str) -> Result<Vec<ObjectKey>, IndexerError> {
        let s = self.state.read();
        let i = Self::index_position(&s, name)?;
        let mut keys: Vec<ObjectKey> = if self.codec.is_some() {
            s.compact.indices[i]
                .map
                .get(value)
                .map(|set| set.keys().cloned().collect())
                .unwrap_or_default()
        } else {
            s.typed.index_keys(i, value)
        };
        drop(s);
        keys.sort_unstable();
        Ok(keys)
    }

    /// The objects with `value` in index `name` (empty for an unknown value). In compact mode
    /// they are decoded after the lock is released.
    ///
    /// # Errors
    /// [`IndexerError::UnknownIndex`]; in compact mode [`IndexerError::Decode`] for the first
    /// undecodable object.
    pub fn by_index(&self, name: &str, value: &str) -> Result<Vec<Arc<K>>, IndexerError> {
        let s = self.state.read();
        let i = Self::index_position(&s, name)?;
        let Some(codec) = &self.codec else {
            return Ok(s.typed.by_index(i, value));
        };
        let blobs: Vec<(ObjectKey, Blob)> = match s.compact.indices[i].map.get(value) {
            Some(set) => set
                .iter()
                .map(|(k, b)| (k.clone(), Arc::clone(b)))
                .collect(),
            None => Vec::new(),
        };
        drop(s);
        self.decode_all(codec.as_ref(), blobs)
    }

    /// Every value present in index `name` (empty for an unknown index, as client-go).
    pub fn list_index_func_values(&self, name: &str) -> Vec<String> {
        let s = self.state.read();
        match Self::index_position(&s, name) {
            Ok(i) if self.codec.is_some() => s.compact.indices[i].map.keys().cloned().collect(),
            Ok(i) => s.typed.indices[i].map.keys().cloned().collect(),
            Err(_) => Vec::new(),
        }
    }

    /// The names of the indices.
    pub fn indexer_names(&self) -> Vec<String> {
        self.state
            .read()
            .indexers
            .iter()
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// Adds index functions and back-fills them from the stored objects.
    ///
    /// # Errors
    /// [`IndexerError::IndexerConflict`] if a name already exists (nothing is added), or an
    /// index function error during back-fill (nothing is added); in compact mode a decode
    /// error (nothing is added).
    pub fn add_indexers(&self, new: Indexers<K>) -> Result<(), IndexerError> {
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
        let mut list: Vec<(String, IndexFunc<K>)> = funcs.iter().cloned().collect();
        let (typed, compact) = match &self.codec {
            Some(codec) => {
                let items = Self::snapshot(&self.state.read().compact);
                let decode = |k: &ObjectKey, b: &Blob| decode_arc(codec.as_ref(), k.as_str(), b);
                (empty_indices(new.len()), back_fill(&items, &new, decode)?)
            }
            None => {
                let items = Self::snapshot(&self.state.read().typed);
                (
                    back_fill(&items, &new, |_, o| Ok(Arc::clone(o)))?,
                    empty_indices(new.len()),
                )
            }
        };
        list.extend(new);
        let mut s = self.state.write();
        s.typed.indices.extend(typed);
        s.compact.indices.extend(compact);
        s.indexers = Arc::new(list);
        Ok(())
    }

    /// The stored `(key, value)` pairs of `tables`.
    pub(super) fn snapshot<V: Stored>(tables: &Tables<V>) -> Vec<(ObjectKey, V)> {
        tables
            .items
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}
