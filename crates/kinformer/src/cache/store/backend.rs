//! What differs between the two storages of an [`Indexer`](super::Indexer), as one trait.
//!
//! The indexer's logic — keys, the transform, index values, the lock order, replace — is
//! written once in `Core` (core.rs) over a [`Backend`]; a backend says what is
//! kept per object and how an object is made from it:
//!
//! - [`TypedBackend`](super::typed::TypedBackend) keeps the `Arc<K>` itself; reading an object
//!   cannot fail ([`ReadError`] is [`Infallible`]), so typed reads carry no error path;
//! - `CompactBackend` (feature `compact`) keeps an encoding, decodes on read (a decode can
//!   fail), caches hot objects and trains its dictionary.

use std::convert::Infallible;
use std::fmt;
use std::sync::Arc;

use kube_core::Resource;
use parking_lot::RwLock;

use super::entries::Slab;
use super::error::IndexerError;
use super::tables::{Item, State, Stored, Tables};
use super::{FastMap, PreviousItems};
use crate::cache::meta::ObjectKey;

/// `obj`'s resourceVersion (empty when absent, as client-go reads it).
pub(super) fn version_of<K: Resource>(obj: &K) -> &str {
    obj.meta().resource_version.as_deref().unwrap_or_default()
}

/// The previous content of a replace and, when asked for, the objects as stored.
pub(super) type Replaced<K> = (PreviousItems<K>, Vec<Arc<K>>);

/// The entry set type of backend `B`'s indices.
pub(super) type SetOf<K, B> = Slab<<<B as Backend<K>>::V as Stored>::Raw>;

/// How a stored object is read back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Via {
    /// A point read: may be served by, and enters, a hot-object cache.
    Cache,
    /// May be served by a hot-object cache, but does not enter it (the object is on its way
    /// out, or part of a bulk operation).
    Peek,
    /// Past any cache (lists, back-fills).
    Direct,
}

/// Why a stored object cannot be read back: [`Infallible`] for typed storage,
/// [`IndexerError::Decode`] for compact storage.
pub(super) trait ReadError: fmt::Debug {
    /// As the indexer's error.
    fn into_indexer(self) -> IndexerError;
    /// Logs it, for read APIs that cannot return it.
    fn log(self);
}

impl ReadError for Infallible {
    fn into_indexer(self) -> IndexerError {
        match self {}
    }
    fn log(self) {
        match self {}
    }
}

impl ReadError for IndexerError {
    fn into_indexer(self) -> IndexerError {
        self
    }
    fn log(self) {
        tracing::error!(error = %self, "compact indexer: stored object skipped");
    }
}

/// The entry set of one index value, with what readers copy out of it.
pub(super) trait Entries<V: Stored> {
    /// The raw values of the entries of all `sets`, each key once.
    fn union<'a>(sets: impl Iterator<Item = &'a Self>) -> Vec<V::Raw>
    where
        Self: 'a;
    /// Appends every entry's key.
    fn keys(&self, out: &mut Vec<ObjectKey>);
}

/// One storage: what the indexer keeps per object and how it gets the object back.
///
/// Hooks run with the writer lock held and never under the state lock unless said so.
pub(super) trait Backend<K>: Sized {
    /// What the item map and the index entries keep per object.
    type V: Stored;
    /// Why a stored object cannot be read back.
    type ReadError: ReadError;
    /// True if a rebuilding replace should share a stored value with the new one when they
    /// are [`same`](Self::same) (compact: keep the stored bytes rather than a copy).
    const SHARE_EQUAL: bool;

    /// The value to keep for `obj`, whose resourceVersion is `version`, under `key`.
    fn store(&self, key: &ObjectKey, obj: &Arc<K>, version: &str) -> Result<Self::V, IndexerError>;

    /// The resourceVersion of the object `v` stands for, if the storage keeps it apart from
    /// the object (compact: in the blob's header), so that it can be compared without a
    /// decode; `None` where reading it from the object is as cheap (typed) or not kept.
    fn stored_version(_v: &Self::V) -> Option<&str> {
        None
    }

    /// True if `stored` stands for the very object `new` does (so writing `new` would change
    /// nothing, index values included).
    fn same(stored: &Self::V, new: &Self::V) -> bool;

    /// Whether `stored` is `obj` itself, when that can be told without making the new value
    /// (typed: the same `Arc`, by address, so the stored object is not read); `None` when only
    /// [`same`](Self::same) on the new value can tell.
    fn is_stored(_stored: &Self::V, _obj: &Arc<K>) -> Option<bool> {
        None
    }

    /// The object a value copied out of the tables stands for.
    fn object(&self, raw: <Self::V as Stored>::Raw, via: Via) -> Result<Arc<K>, Self::ReadError>;

    /// `v`, now stored under `key`, stands for `obj` (a hot-object cache may keep it).
    fn cache(&self, _key: &ObjectKey, _v: &Self::V, _obj: &Arc<K>) {}

    /// After a write changed the tables (compact: trains the dictionary once enough objects
    /// are stored).
    fn written(&self, _state: &RwLock<State<K, Self::V>>) -> Result<(), IndexerError> {
        Ok(())
    }

    /// `key` was deleted or dropped.
    fn forget(&self, _key: &str) {}

    /// A rebuilding replace is about to store its `n`-th object of `total`, or (`n == total`)
    /// has stored them all into `tables`.
    fn rebuilding(
        &self,
        _tables: &mut Tables<Self::V>,
        _n: usize,
        _total: usize,
    ) -> Result<(), IndexerError> {
        Ok(())
    }

    /// What a rebuilding replace hands back of the old item map.
    fn previous(&self, items: FastMap<ObjectKey, Item<Self::V>>) -> PreviousItems<K>;
}
