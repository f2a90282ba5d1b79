//! One storage's indexer: the state, the lock order and the write path, written once over a
//! [`Backend`].

use std::sync::Arc;

use kube_core::Resource;
use parking_lot::{Mutex, RwLock};

use super::backend::{Backend, Entries, ReadError, SetOf, Via, version_of};
use super::error::IndexerError;
use super::scratch::with_scratch;
use super::tables::{State, Stored, Tables, compute_values_into, sorted};
use super::{Indexers, TransformFunc, Upserted};
use crate::cache::meta::with_key_str;
use crate::cache::meta::{ObjectKey, meta_namespace_key};

/// What a write took out of the tables: the value stored before, or one of its index
/// entries. The caller drops it, or hands it to the dropping thread.
pub(super) enum Discarded<V: Stored> {
    /// The value stored before.
    Value(V),
    /// One of the index entries of the value stored before.
    Entry(V::Raw),
}

/// The indexer over one storage (see [`Indexer`](super::Indexer) for the properties).
pub(super) struct Core<K, B: Backend<K>> {
    /// Serialises writers; taken before `state`. Holds (empty between writes) the index
    /// entries a write displaced, so that a write allocates no list for them.
    pub(super) writer: Mutex<Vec<<B::V as Stored>::Raw>>,
    pub(super) state: RwLock<State<K, B::V>>,
    pub(super) transform: Option<TransformFunc<K>>,
    pub(super) backend: B,
}

impl<K, B: Backend<K>> Core<K, B> {
    /// An empty indexer with these index functions over `backend`.
    pub(super) fn new(indexers: Indexers<K>, backend: B) -> Self {
        let list = sorted(indexers);
        Core {
            writer: Mutex::new(Vec::new()),
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

    /// Makes room for `total` objects in all (see `Tables::reserve`); changes no content, so
    /// it does not wait for the writer lock.
    pub(super) fn reserve(&self, total: usize) {
        self.state.write().tables.reserve(total);
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

    /// See [`Indexer::upsert`](super::Indexer::upsert). With `want_old` false (a write that
    /// discards the object it replaces), no old object is returned (but `obj` itself when it
    /// is what is stored): compact storage then decodes nothing, and typed storage does not
    /// touch the old object at all.
    ///
    /// What the write takes out of the tables (the value stored before and its index
    /// entries) goes to `discard`, after the state lock is released.
    pub(super) fn upsert(
        &self,
        obj: Arc<K>,
        want_old: bool,
        mut discard: impl FnMut(Discarded<B::V>),
    ) -> Result<Upserted<K>, IndexerError> {
        let obj = match &self.transform {
            Some(t) => t(obj),
            None => obj,
        };
        let mut displaced = self.writer.lock();
        // The key is joined once, on the stack, to look it up: an update reuses the stored
        // key, an add makes its key from the joined string. The stored value is copied only
        // if it is needed: a typed write that discards it tells by address whether `obj` is
        // already stored, without touching the old object (its memory is cold, and is
        // released on the dropping thread).
        let (found, funcs) = {
            let s = self.state.read();
            let meta = obj.meta();
            let found = match meta.name.as_deref() {
                Some(name) if !name.is_empty() => {
                    Some(with_key_str(meta.namespace.as_deref(), name, |k| {
                        match s.tables.items.get_key_value(k) {
                            Some((key, item)) => {
                                let wanted = want_old || B::is_stored(&item.v, &obj) != Some(false);
                                (key.clone(), wanted.then(|| item.v.clone()))
                            }
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
        let v = self.backend.store(&key, &obj, version_of(obj.as_ref()))?;
        if let Some(stored) = stored.as_ref().filter(|o| B::same(o, &v)) {
            // The stored object is `obj` (typed: the same `Arc`; compact: the same bytes,
            // nothing to decode), and so are its index values: nothing changes.
            self.backend.cache(&key, stored, &obj);
            return Ok(Upserted {
                old: Some(Arc::clone(&obj)),
                new: obj,
                same_version: true,
            });
        }
        let old = match &stored {
            // On its way out: served by the hot cache if there, not entered (the new one is).
            Some(o) if want_old => Some(self.object_of(&key, o, Via::Peek)?),
            _ => None,
        };
        // From the version kept beside the stored object where there is one: in compact
        // storage the old object's metadata is then never parsed.
        let same_version = match (stored.as_ref().and_then(B::stored_version), &old) {
            (Some(version), _) => version == version_of(obj.as_ref()),
            (None, Some(old)) => version_of(old.as_ref()) == version_of(obj.as_ref()),
            (None, None) => false,
        };
        // Only the new object's index values are computed (without the lock); the stored
        // ones are kept beside the old object.
        let replaced = with_scratch(|s| {
            compute_values_into(&funcs, &key, &obj, &mut s.new)?;
            // The object about to be written is the likeliest to be read (and updated) next.
            // Cached first, so that the stored value moves into the tables: a reader that
            // meanwhile finds the old value does not match the cached one.
            self.backend.cache(&key, &v, &obj);
            let mut state = self.state.write();
            Ok::<_, IndexerError>(state.tables.put(&key, v, &mut s.new, &mut displaced))
        })?;
        if let Some(replaced) = replaced {
            discard(Discarded::Value(replaced));
        }
        for entry in displaced.drain(..) {
            discard(Discarded::Entry(entry));
        }
        self.backend.written(&self.state)?;
        Ok(Upserted {
            old,
            new: obj,
            same_version,
        })
    }

    /// See [`Indexer::delete_by_key`](super::Indexer::delete_by_key): its index entries are
    /// found by the ids stored beside it; the object is read only to be returned.
    pub(super) fn delete_by_key(&self, key: &str) -> Result<Option<Arc<K>>, IndexerError> {
        let _w = self.writer.lock();
        let Some((key, stored)) = self.state.read().tables.stored(key) else {
            return Ok(None);
        };
        let old = self.object_of(&key, &stored, Via::Peek)?;
        let taken = self.state.write().tables.take(key.as_str());
        drop(taken);
        self.backend.forget(key.as_str());
        Ok(Some(old))
    }
}
