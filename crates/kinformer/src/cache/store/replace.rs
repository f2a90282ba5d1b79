//! The atomic swap of the whole content (a relist), written once over the backend.

use std::sync::Arc;

use kube_core::Resource;

use super::IndexValues;
use super::backend::{Backend, Entries, Replaced, SetOf, version_of};
use super::core::Core;
use super::error::IndexerError;
use super::tables::{IndexerList, Tables, compute_values_into};

/// How a storage replaces its whole content: by default new tables are built and swapped in;
/// a storage may instead change the live tables in place (compact storage stages only what
/// changed, so a relist does not hold two copies of the cache).
pub(super) trait ReplaceInPlace<K>: Backend<K> {
    /// A replace that changes the live tables in place instead of building new ones;
    /// `Ok(None)` to rebuild (the default).
    fn replace_in_place(
        _core: &Core<K, Self>,
        _funcs: &IndexerList<K>,
        _objs: &[Arc<K>],
        _keep: bool,
    ) -> Result<Option<Replaced<K>>, IndexerError>
    where
        K: Resource,
    {
        Ok(None)
    }
}

impl<K: Resource, B: Backend<K> + ReplaceInPlace<K>> Core<K, B>
where
    SetOf<K, B>: Entries<B::V>,
{
    /// Replaces the whole content with `objs`, atomically; with `keep`, also returns the
    /// objects as stored (after the transform), in list order. The backend may change the
    /// live tables in place ([`ReplaceInPlace::replace_in_place`]); otherwise new tables are built
    /// without the state lock and swapped in.
    pub(super) fn replace(
        &self,
        objs: Vec<Arc<K>>,
        keep: bool,
    ) -> Result<Replaced<K>, IndexerError> {
        let _w = self.writer.lock();
        let funcs = Arc::clone(&self.state.read().indexers);
        if let Some(done) = B::replace_in_place(self, &funcs, &objs, keep)? {
            return Ok(done);
        }
        let mut stored = Vec::with_capacity(if keep { objs.len() } else { 0 });
        let tables = self.build(&funcs, objs, keep.then_some(&mut stored))?;
        let old = std::mem::replace(&mut self.state.write().tables, tables);
        let Tables { items, indices } = old;
        drop(indices);
        Ok((self.backend.previous(items), stored))
    }

    /// Stores and indexes `objs` into fresh tables (a key listed twice: the later object
    /// wins). With [`Backend::SHARE_EQUAL`], a value equal to the one stored under the same
    /// key is shared rather than kept twice.
    fn build(
        &self,
        funcs: &IndexerList<K>,
        objs: Vec<Arc<K>>,
        mut stored: Option<&mut Vec<Arc<K>>>,
    ) -> Result<Tables<B::V>, IndexerError> {
        let total = objs.len();
        let mut tables: Tables<B::V> = Tables::new(funcs.len(), total);
        let mut vals = IndexValues::default();
        let mut displaced = Vec::new();
        for (n, obj) in objs.into_iter().enumerate() {
            self.backend.rebuilding(&mut tables, n, total)?;
            let (key, obj) = self.prepare(obj)?;
            let mut v = self.backend.store(&key, &obj, version_of(obj.as_ref()))?;
            if B::SHARE_EQUAL {
                let s = self.state.read();
                let stored = s.tables.items.get(key.as_str()).map(|i| &i.v);
                if let Some(same) = stored.filter(|o| B::same(o, &v)) {
                    v = same.clone();
                }
            }
            compute_values_into(funcs, &key, &obj, &mut vals)?;
            // A key listed twice replaces the earlier object and its index entries.
            tables.put(&key, v, &mut vals, &mut displaced);
            displaced.clear();
            if let Some(stored) = stored.as_deref_mut() {
                stored.push(obj);
            }
        }
        self.backend.rebuilding(&mut tables, total, total)?;
        Ok(tables)
    }
}
