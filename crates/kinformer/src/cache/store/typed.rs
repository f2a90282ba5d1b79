//! Typed storage: the indexer keeps the objects themselves (`Arc<K>`); reads cannot fail.

use std::convert::Infallible;
use std::sync::Arc;

use kube_core::Resource;

use super::FastMap;
use super::backend::{Backend, Entries, Via};
use super::entries::Slab;
use super::error::IndexerError;
use super::previous::{Previous, PreviousItems};
use super::replace::ReplaceInPlace;
use super::tables::Item;
use crate::cache::meta::ObjectKey;

/// Objects kept as `Arc<K>`: storing one is a reference count, reading one a clone.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct TypedBackend;

impl<K> Backend<K> for TypedBackend {
    type V = Arc<K>;
    type ReadError = Infallible;
    /// An equal typed value is the very same `Arc`: nothing to share.
    const SHARE_EQUAL: bool = false;

    fn store(
        &self,
        _key: &ObjectKey,
        obj: &Arc<K>,
        _version: &str,
    ) -> Result<Arc<K>, IndexerError> {
        Ok(Arc::clone(obj))
    }

    /// The very object already stored (a resync, a repeated delta): index values of the same
    /// object cannot differ.
    fn same(stored: &Arc<K>, new: &Arc<K>) -> bool {
        Arc::ptr_eq(stored, new)
    }

    fn is_stored(stored: &Arc<K>, obj: &Arc<K>) -> Option<bool> {
        Some(Arc::ptr_eq(stored, obj))
    }

    fn object(&self, raw: Arc<K>, _via: Via) -> Result<Arc<K>, Infallible> {
        Ok(raw)
    }

    fn previous(&self, items: FastMap<ObjectKey, Item<Arc<K>>>) -> PreviousItems<K> {
        PreviousItems(Previous::Typed(items))
    }
}

/// Typed storage rebuilds on replace: its tables share the listed objects' `Arc`s.
impl<K> ReplaceInPlace<K> for TypedBackend {}

/// Typed entries are the stored objects: an object's `Arc` is the same in every set it is
/// in, so a union tells keys apart by address.
impl<K: Resource> Entries<Arc<K>> for Slab<Arc<K>> {
    fn union<'a>(sets: impl Iterator<Item = &'a Self>) -> Vec<Arc<K>>
    where
        Self: 'a,
    {
        Slab::union_by(sets, Arc::as_ptr)
    }

    fn keys(&self, out: &mut Vec<ObjectKey>) {
        out.extend(self.iter().map(|o| {
            let meta = o.meta();
            ObjectKey::new(
                meta.namespace.as_deref(),
                meta.name.as_deref().unwrap_or(""),
            )
        }));
    }
}
