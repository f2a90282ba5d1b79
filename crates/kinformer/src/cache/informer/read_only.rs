//! A read-only view of an informer's indexer.

use std::fmt;
use std::sync::Arc;

use kube_core::Resource;

use crate::cache::meta::ObjectKey;
use crate::cache::store::{Indexer, IndexerError};

/// The informer's cache as its users may see it: reads only, the consumer stage is the one
/// writer. Cheap to clone. client-go returns the full `Indexer` from `GetIndexer`; writing to
/// it there corrupts the cache, so kinformer hands out this view instead.
pub struct ReadOnlyIndexer<K> {
    inner: Arc<Indexer<K>>,
}

impl<K> Clone for ReadOnlyIndexer<K> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<K> fmt::Debug for ReadOnlyIndexer<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ReadOnlyIndexer").field(&self.inner).finish()
    }
}

impl<K: Resource> ReadOnlyIndexer<K> {
    pub(crate) fn new(inner: Arc<Indexer<K>>) -> Self {
        Self { inner }
    }

    /// The object stored under `key` (`namespace/name` or `name`).
    pub fn get_by_key(&self, key: &str) -> Option<Arc<K>> {
        self.inner.get_by_key(key)
    }

    /// The stored object with the same key as `obj`.
    ///
    /// # Errors
    /// `obj` has no name.
    pub fn get(&self, obj: &K) -> Result<Option<Arc<K>>, IndexerError> {
        self.inner.get(obj)
    }

    /// True if `key` is stored.
    pub fn contains_key(&self, key: &str) -> bool {
        self.inner.contains_key(key)
    }

    /// Every stored object.
    pub fn list(&self) -> Vec<Arc<K>> {
        self.inner.list()
    }

    /// Every stored key.
    pub fn list_keys(&self) -> Vec<ObjectKey> {
        self.inner.list_keys()
    }

    /// The number of stored objects.
    pub fn len(&self) -> usize {
        self.inner.len()
    }

    /// True when nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// True if an index with this name exists.
    pub fn has_index(&self, name: &str) -> bool {
        self.inner.has_index(name)
    }

    /// Objects sharing any of `obj`'s values in index `name`.
    ///
    /// # Errors
    /// Unknown index, or the index function failed on `obj`.
    pub fn index(&self, name: &str, obj: &K) -> Result<Vec<Arc<K>>, IndexerError> {
        self.inner.index(name, obj)
    }

    /// Keys with `value` in index `name`, sorted.
    ///
    /// # Errors
    /// Unknown index.
    pub fn index_keys(&self, name: &str, value: &str) -> Result<Vec<ObjectKey>, IndexerError> {
        self.inner.index_keys(name, value)
    }

    /// Objects with `value` in index `name`.
    ///
    /// # Errors
    /// Unknown index.
    pub fn by_index(&self, name: &str, value: &str) -> Result<Vec<Arc<K>>, IndexerError> {
        self.inner.by_index(name, value)
    }

    /// Every value of index `name`.
    pub fn list_index_func_values(&self, name: &str) -> Vec<String> {
        self.inner.list_index_func_values(name)
    }

    /// The names of all indices.
    pub fn indexer_names(&self) -> Vec<String> {
        self.inner.indexer_names()
    }
}

/// What compact storage holds, for an informer's metrics (as
/// [`Indexer::compact_stored_bytes`], [`Indexer::compact_dictionary_len`] and
/// [`Indexer::compact_dictionaries`]).
#[cfg(feature = "compact")]
impl<K> ReadOnlyIndexer<K> {
    /// Compact storage: the size of the zstd dictionary in use, if one exists yet (`None` for
    /// typed storage). Needs the `compact` feature.
    pub fn compact_dictionary_len(&self) -> Option<usize> {
        self.inner.compact_dictionary_len()
    }

    /// Compact storage: the number of dictionaries made so far (see
    /// [`Indexer::compact_dictionaries`]). Needs the `compact` feature.
    pub fn compact_dictionaries(&self) -> usize {
        self.inner.compact_dictionaries()
    }

    /// Compact storage: the bytes of all stored encodings (payloads only, without map and
    /// index overhead); `0` for typed storage. Needs the `compact` feature.
    pub fn compact_stored_bytes(&self) -> usize {
        self.inner.compact_stored_bytes()
    }
}
