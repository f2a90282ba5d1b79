//! Reads by key and lists: raw values are copied out under the shared lock, objects are made
//! of them after it is released (typed: nothing to do; compact: a decode).

use std::sync::Arc;

use kube_core::Resource;

use super::backend::{Backend, Entries, ReadError, SetOf, Via};
use super::core::Core;
use super::tables::Stored;
use crate::cache::meta::ObjectKey;

type Raw<K, B> = <<B as Backend<K>>::V as Stored>::Raw;

impl<K: Resource, B: Backend<K>> Core<K, B>
where
    SetOf<K, B>: Entries<B::V>,
{
    /// The objects of `raws`; the first that cannot be read is the error.
    pub(super) fn objects(
        &self,
        raws: Vec<Raw<K, B>>,
        via: Via,
    ) -> Result<Vec<Arc<K>>, B::ReadError> {
        raws.into_iter()
            .map(|r| self.backend.object(r, via))
            .collect()
    }

    /// The object stored under `key`.
    pub(super) fn get(&self, key: &str) -> Result<Option<Arc<K>>, B::ReadError> {
        let raw = {
            let s = self.state.read();
            s.tables
                .items
                .get_key_value(key)
                .map(|(k, i)| B::V::raw(k, &i.v))
        };
        raw.map(|r| self.backend.object(r, Via::Cache)).transpose()
    }

    /// True if an object is stored under `key`.
    pub(super) fn contains_key(&self, key: &str) -> bool {
        self.state.read().tables.items.contains_key(key)
    }

    /// Every stored key.
    pub(super) fn list_keys(&self) -> Vec<ObjectKey> {
        self.state.read().tables.items.keys().cloned().collect()
    }

    fn raws(&self) -> Vec<Raw<K, B>> {
        let s = self.state.read();
        s.tables
            .items
            .iter()
            .map(|(k, i)| B::V::raw(k, &i.v))
            .collect()
    }

    fn keyed_raws(&self) -> Vec<(ObjectKey, Raw<K, B>)> {
        let s = self.state.read();
        s.tables
            .items
            .iter()
            .map(|(k, i)| (k.clone(), B::V::raw(k, &i.v)))
            .collect()
    }

    /// Every stored object; the first that cannot be read is the error.
    pub(super) fn try_list(&self) -> Result<Vec<Arc<K>>, B::ReadError> {
        self.objects(self.raws(), Via::Direct)
    }

    /// Every stored object that can be read (the others are logged).
    pub(super) fn list(&self) -> Vec<Arc<K>> {
        self.raws()
            .into_iter()
            .filter_map(|r| {
                self.backend
                    .object(r, Via::Direct)
                    .map_err(ReadError::log)
                    .ok()
            })
            .collect()
    }

    /// Every stored `(key, object)` pair; the first object that cannot be read is the error.
    pub(super) fn try_list_with_keys(&self) -> Result<Vec<(ObjectKey, Arc<K>)>, B::ReadError> {
        self.keyed_raws()
            .into_iter()
            .map(|(k, r)| self.backend.object(r, Via::Direct).map(|o| (k, o)))
            .collect()
    }

    /// Every stored `(key, object)` pair whose object can be read (the others are logged).
    pub(super) fn list_with_keys(&self) -> Vec<(ObjectKey, Arc<K>)> {
        self.keyed_raws()
            .into_iter()
            .filter_map(|(k, r)| match self.backend.object(r, Via::Direct) {
                Ok(o) => Some((k, o)),
                Err(e) => {
                    e.log();
                    None
                }
            })
            .collect()
    }
}
