//! [`Indexer::replace`]: the atomic swap of the whole content (a relist).

use std::sync::Arc;

use kube_core::Resource;

use super::error::IndexerError;
use super::indexer::{Indexer, decode_arc};
use super::previous::{OldBlobs, Previous, PreviousItems};
use super::tables::*;
use super::{Blob, IndexFunc, ObjectCodec};

impl<K: Resource> Indexer<K> {
    /// Replaces the whole content with `objs` (atomically) and updates every index.
    /// `resource_version` is accepted for symmetry with client-go and ignored.
    ///
    /// # Errors
    /// A key or index function error for any object (in compact mode also an encode error);
    /// the store is then unchanged.
    pub fn replace(&self, objs: Vec<Arc<K>>, resource_version: &str) -> Result<(), IndexerError> {
        self.replace_take_old(objs, resource_version).map(|_| ())
    }

    /// As [`replace`](Self::replace), returning the previous content (used to reconcile an
    /// atomic replace: what vanished, what changed).
    ///
    /// # Errors
    /// As [`replace`](Self::replace).
    pub fn replace_take_old(
        &self,
        objs: Vec<Arc<K>>,
        _resource_version: &str,
    ) -> Result<PreviousItems<K>, IndexerError> {
        self.replace_inner(objs, false).map(|(old, _)| old)
    }

    /// As [`replace_take_old`](Self::replace_take_old), also returning the objects as stored
    /// (after the transform), in list order: what an informer hands its handlers. In compact
    /// mode these are the given objects, not decoded copies.
    pub(crate) fn replace_returning_stored(
        &self,
        objs: Vec<Arc<K>>,
    ) -> Result<(PreviousItems<K>, Vec<Arc<K>>), IndexerError> {
        self.replace_inner(objs, true)
    }

    #[allow(clippy::type_complexity)]
    pub(super) fn replace_inner(
        &self,
        objs: Vec<Arc<K>>,
        keep: bool,
    ) -> Result<(PreviousItems<K>, Vec<Arc<K>>), IndexerError> {
        let _w = self.writer.lock();
        let funcs = Arc::clone(&self.state.read().indexers);
        if let Some(codec) = &self.codec {
            if !codec.core().wants_training(objs.len()) {
                match self.replace_compact_staged(codec, &funcs, &objs, keep) {
                    Err(e @ IndexerError::Decode { .. }) => {
                        // A stored object is undecodable, so its index entries cannot be
                        // found by value: rebuild everything from the list instead.
                        tracing::warn!(error = %e, "compact indexer: replace rebuilds the indices");
                    }
                    Ok(None) => {}
                    Ok(Some(done)) => return Ok(done),
                    Err(e) => return Err(e),
                }
            }
            let mut stored = Vec::with_capacity(if keep { objs.len() } else { 0 });
            let tables = self.build_compact(codec, &funcs, objs, keep.then_some(&mut stored))?;
            let mut s = self.state.write();
            let old = std::mem::replace(&mut s.compact, tables);
            drop(s);
            let Tables { items, indices } = old;
            drop(indices);
            return Ok((PreviousItems::compact(OldBlobs::Map(items), codec), stored));
        }
        let mut stored = Vec::with_capacity(if keep { objs.len() } else { 0 });
        let mut tables: Tables<Arc<K>> = Tables::new(funcs.len(), objs.len());
        for obj in objs {
            let (key, obj) = self.prepare(obj)?;
            let mut vals = compute_values(&funcs, &key, &obj)?;
            if let Some(prev) = tables.items.get(key.as_str()).cloned() {
                // Duplicate key in the list: the later object wins; drop the earlier one's
                // index entries.
                let prev_vals = compute_values(&funcs, &key, &prev)?;
                tables.take(&key, &prev, &prev_vals);
            }
            tables.put(&key, &obj, None, &mut vals);
            if keep {
                stored.push(obj);
            }
        }
        let mut s = self.state.write();
        let old = std::mem::replace(&mut s.typed, tables);
        drop(s);
        let Tables { items, indices } = old;
        drop(indices);
        Ok((PreviousItems(Previous::Typed(items)), stored))
    }

    /// Compact mode: encodes and indexes `objs` into fresh tables. Trains the dictionary
    /// first if the list is large enough; an encoding identical to the one already stored
    /// under the same key is shared rather than copied.
    pub(super) fn build_compact(
        &self,
        codec: &Arc<dyn ObjectCodec<K>>,
        funcs: &[(String, IndexFunc<K>)],
        objs: Vec<Arc<K>>,
        mut stored: Option<&mut Vec<Arc<K>>>,
    ) -> Result<Tables<Blob>, IndexerError> {
        let core = codec.core();
        let mut tables: Tables<Blob> = Tables::new(funcs.len(), objs.len());
        let train_at = if core.wants_training(objs.len()) {
            Some(core.train_after())
        } else {
            None
        };
        for (n, obj) in objs.into_iter().enumerate() {
            if train_at == Some(n) {
                let samples: Vec<Blob> = tables.items.values().cloned().collect();
                if core.train(&samples) {
                    drop(samples);
                    tables.recompress(codec.as_ref())?;
                }
            }
            let (key, obj) = self.prepare(obj)?;
            let mut blob = Self::encode(codec.as_ref(), &key, &obj)?;
            if let Some(same) = self
                .state
                .read()
                .compact
                .items
                .get(key.as_str())
                .filter(|b| ***b == *blob)
            {
                blob = Arc::clone(same);
            }
            let mut vals = compute_values(funcs, &key, &obj)?;
            if let Some(prev) = tables.items.get(key.as_str()).cloned() {
                // Duplicate key in the list: the later object wins.
                let prev_obj = decode_arc(codec.as_ref(), key.as_str(), &prev)?;
                let prev_vals = compute_values(funcs, &key, &prev_obj)?;
                tables.take(&key, &prev, &prev_vals);
            }
            tables.put(&key, &blob, None, &mut vals);
            if let Some(stored) = stored.as_deref_mut() {
                stored.push(obj);
            }
        }
        if core.wants_training(tables.items.len()) {
            let samples: Vec<Blob> = tables.items.values().cloned().collect();
            if core.train(&samples) {
                drop(samples);
                tables.recompress(codec.as_ref())?;
            }
        }
        Ok(tables)
    }
}
