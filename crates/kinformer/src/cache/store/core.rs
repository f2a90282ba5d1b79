//! One storage's indexer: the state, the lock order and the write path, written once over a
//! [`Backend`].

use std::sync::Arc;

use kube_core::Resource;
use parking_lot::{Mutex, RwLock};

use super::backend::{Backend, Entries, ReadError, SetOf, Via};
use super::error::IndexerError;
use super::scratch::{Scratch, with_scratch};
use super::tables::{State, Stored, Tables, compute_values_into, sorted};
use super::{IndexFunc, Indexers, TransformFunc, Upserted};
use crate::cache::meta::with_key_str;
use crate::cache::meta::{ObjectKey, meta_namespace_key};

/// The indexer over one storage (see [`Indexer`](super::Indexer) for the properties).
pub(super) struct Core<K, B: Backend<K>> {
    /// Serialises writers; taken before `state`.
    pub(super) writer: Mutex<()>,
    pub(super) state: RwLock<State<K, B::V>>,
    pub(super) transform: Option<TransformFunc<K>>,
    pub(super) backend: B,
}

impl<K, B: Backend<K>> Core<K, B> {
    /// An empty indexer with these index functions over `backend`.
    pub(super) fn new(indexers: Indexers<K>, backend: B) -> Self {
        let list = sorted(indexers);
        Core {
            writer: Mutex::new(()),
            state: RwLock::new(State {
                tables: Tables::new(list.len(), 0),
                indexers: Arc::new(list),
            }),
            transform: None,
            backend,
        }
    }

    /// The names of the indices.
    pub(super) fn indexer_names(&self) -> Vec<String> {
        let s = self.state.read();
        s.indexers.iter().map(|(n, _)| n.clone()).collect()
    }

    /// Number of stored objects.
    pub(super) fn len(&self) -> usize {
        self.state.read().tables.items.len()
    }
}

impl<K: Resource, B: Backend<K>> Core<K, B>
where
    SetOf<K, B>: Entries<B::V>,
{
    /// The transformed object and its key.
    pub(super) fn prepare(&self, obj: Arc<K>) -> Result<(ObjectKey, Arc<K>), IndexerError> {
        let obj = match &self.transform {
            Some(t) => t(obj),
            None => obj,
        };
        let key = meta_namespace_key(obj.as_ref())?;
        Ok((key, obj))
    }

    /// The object `v` (stored under `key`) stands for, as the indexer's error.
    pub(super) fn object_of(
        &self,
        key: &ObjectKey,
        v: &B::V,
        via: Via,
    ) -> Result<Arc<K>, IndexerError> {
        self.backend
            .object(B::V::raw(key, v), via)
            .map_err(ReadError::into_indexer)
    }

    /// See [`Indexer::upsert`](super::Indexer::upsert).
    pub(super) fn upsert(&self, obj: Arc<K>) -> Result<Upserted<K>, IndexerError> {
        let obj = match &self.transform {
            Some(t) => t(obj),
            None => obj,
        };
        let _w = self.writer.lock();
        // The key is joined once, on the stack, to look it up: an update reuses the stored
        // key, an add makes its key from the joined string.
        let (found, funcs) = {
            let s = self.state.read();
            let meta = obj.meta();
            let found = match meta.name.as_deref() {
                Some(name) if !name.is_empty() => {
                    Some(with_key_str(meta.namespace.as_deref(), name, |k| {
                        match s.tables.items.get_key_value(k) {
                            Some((key, v)) => (key.clone(), Some(v.clone())),
                            None => (ObjectKey::from(k), None),
                        }
                    }))
                }
                _ => None,
            };
            (found, Arc::clone(&s.indexers))
        };
        let (key, stored) = match found {
            Some(found) => found,
            None => (meta_namespace_key(obj.as_ref())?, None),
        };
        let v = self.backend.store(&key, &obj)?;
        if let Some(stored) = stored.as_ref().filter(|o| B::same(o, &v)) {
            // The stored object is `obj` (typed: the same `Arc`; compact: the same bytes,
            // nothing to decode), and so are its index values: nothing changes.
            self.backend.cache(&key, stored, &obj);
            return Ok(Upserted {
                old: Some(Arc::clone(&obj)),
                new: obj,
            });
        }
        let old = match &stored {
            // On its way out: served by the hot cache if there, not entered (the new one is).
            Some(o) => Some(self.object_of(&key, o, Via::Peek)?),
            None => None,
        };
        with_scratch(|s| self.put_indexed(s, &funcs, &key, &obj, old.as_deref(), &v))?;
        // The object just written is the likeliest to be read (and updated) next.
        self.backend.cache(&key, &v, &obj);
        drop(v);
        self.backend.written(&self.state)?;
        Ok(Upserted { old, new: obj })
    }

    /// Computes the index values of `obj` and of the object it replaces (`old`) without the
    /// lock, then stores `v` under `key`, under the lock.
    fn put_indexed(
        &self,
        scratch: &mut Scratch,
        funcs: &[(String, IndexFunc<K>)],
        key: &ObjectKey,
        obj: &K,
        old: Option<&K>,
        v: &B::V,
    ) -> Result<(), IndexerError> {
        compute_values_into(funcs, key, obj, &mut scratch.new)?;
        let old_vals = match old {
            Some(o) => {
                compute_values_into(funcs, key, o, &mut scratch.old)?;
                Some(&scratch.old)
            }
            None => None,
        };
        let mut s = self.state.write();
        s.tables.put(key, v, old_vals, &mut scratch.new);
        Ok(())
    }

    /// See [`Indexer::delete_by_key`](super::Indexer::delete_by_key).
    pub(super) fn delete_by_key(&self, key: &str) -> Result<Option<Arc<K>>, IndexerError> {
        let _w = self.writer.lock();
        let key = ObjectKey::from(key);
        let (stored, funcs) = {
            let s = self.state.read();
            (
                s.tables.items.get(key.as_str()).cloned(),
                Arc::clone(&s.indexers),
            )
        };
        let Some(stored) = stored else {
            return Ok(None);
        };
        let old = self.object_of(&key, &stored, Via::Peek)?;
        with_scratch(|s| {
            compute_values_into(&funcs, &key, &old, &mut s.old)?;
            self.state.write().tables.take(&key, &stored, &s.old);
            Ok::<_, IndexerError>(())
        })?;
        self.backend.forget(key.as_str());
        Ok(Some(old))
    }
}
