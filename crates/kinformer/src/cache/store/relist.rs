//! Compact storage's `replace`: atomic, yet staging only what changed.
//!
//! A relist replaces the whole content at once (readers see the old content or the new one,
//! never a mix) but must not hold two copies of the cache. With the writer lock held
//! throughout, the replace runs in two phases:
//!
//! 1. *Staging*, without the state lock (the transform and the index functions run here):
//!    every listed object is encoded and compared with the bytes stored under its key. An
//!    unchanged object costs one record; a changed or new object keeps its new encoding and its
//!    index values, interned; stored keys missing from the list are staged as deletions. No
//!    stored object is decoded: the index values of what is stored are kept beside it.
//! 2. *Applying*, under the write lock, running no user code: the staged changes go into the
//!    live item map and indices (each key's entries move from its stored values to its new
//!    ones, as any write), and each record takes the encoding that was stored before, so the
//!    records become the [`PreviousItems`].
//!
//! At the peak, only the new encodings of changed objects and the records exist beyond the
//! steady state.

use std::cmp::Reverse;
use std::sync::Arc;

use kube_core::Resource;

use crate::cache::meta::ObjectKey;
use crate::cache::store::backend::{Backend, Replaced, version_of};
use crate::cache::store::compact::CompactBackend;
use crate::cache::store::core::Core;
use crate::cache::store::staged::{
    HAS_OPS, KIND_CHANGED, KIND_UNCHANGED, KIND_VANISHED, OldBlobs, POS_MASK, Staged,
};
use crate::cache::store::tables::{IndexerList, compute_values_into};
use crate::cache::store::{FastMap, IndexValues, IndexerError, PreviousItems};

/// An op (4 bytes): one new index value of a staged key: the end flag, the index (6 bits)
/// and the interned value (24 bits). More indices or values than that are rebuilt instead.
///
/// The last op of a record.
const OP_END: u32 = 1 << 31;
const OP_INDEX_SHIFT: u32 = 24;
const OP_INDEX_MAX: usize = 63;
const OP_VALUE_MASK: u32 = (1 << OP_INDEX_SHIFT) - 1;

/// The new index values of all staged keys: a flat op list over interned values.
struct Ops {
    ops: Vec<u32>,
    ids: FastMap<String, u32>,
}

impl Ops {
    fn intern(&mut self, v: &str) -> Option<u32> {
        if let Some(id) = self.ids.get(v) {
            return Some(*id);
        }
        let id = u32::try_from(self.ids.len())
            .ok()
            .filter(|id| *id <= OP_VALUE_MASK)?;
        self.ids.insert(v.to_owned(), id);
        Some(id)
    }

    /// Records the index values `new` of one key. Returns the first op's position and
    /// `HAS_OPS`, or `(0, 0)` without values; `None` if the ops cannot be represented (then
    /// the caller rebuilds).
    fn push(&mut self, indices: usize, new: &IndexValues) -> Option<(u32, u32)> {
        let start = self.ops.len();
        for i in 0..indices {
            let values = new.get(i);
            if values.is_empty() {
                continue;
            }
            if i > OP_INDEX_MAX {
                return None;
            }
            let index = (i as u32) << OP_INDEX_SHIFT;
            for v in values {
                let op = index | self.intern(v)?;
                self.ops.push(op);
            }
        }
        if self.ops.len() == start {
            return Some((0, 0));
        }
        if let Some(last) = self.ops.last_mut() {
            *last |= OP_END;
        }
        Some((u32::try_from(start).ok()?, HAS_OPS))
    }

    /// The interned values by id.
    fn values(&self) -> Vec<&str> {
        let mut out = vec![""; self.ids.len()];
        for (v, id) in &self.ids {
            out[*id as usize] = v.as_str();
        }
        out
    }

    /// The index values (for `indices` indices) of the record whose ops are `ops` (none
    /// without `HAS_OPS`), into `out`.
    fn read<'v>(ops: &[u32], values: &[&'v str], indices: usize, out: &mut IndexValues<&'v str>) {
        out.clear();
        let mut ops = ops.iter().peekable();
        for i in 0..indices {
            while let Some(&&op) = ops.peek() {
                if ((op >> OP_INDEX_SHIFT) as usize & OP_INDEX_MAX) != i {
                    break;
                }
                out.values.push(values[(op & OP_VALUE_MASK) as usize]);
                ops.next();
                if op & OP_END != 0 {
                    ops = [].iter().peekable();
                }
            }
            out.ends.push(out.values.len());
        }
    }
}

impl<K: Resource> Core<K, CompactBackend<K>> {
    /// Compact storage, once the dictionary question is settled: the staged replace described in
    /// the module docs. With `keep`, also returns the objects as stored (after the transform),
    /// in list order. `Ok(None)` when the list cannot be staged (longer than 2^29 objects, or
    /// more than 64 indices or 2^24 distinct index values); the caller then rebuilds.
    ///
    /// # Errors
    /// A key, encode or index function error (store unchanged).
    pub(super) fn replace_staged(
        &self,
        funcs: &IndexerList<K>,
        objs: &[Arc<K>],
        keep: bool,
    ) -> Result<Option<Replaced<K>>, IndexerError> {
        if objs.len() > POS_MASK as usize {
            return Ok(None);
        }
        let n = funcs.len();
        let mut ops = Ops {
            ops: Vec::new(),
            ids: FastMap::default(),
        };
        let mut vals = IndexValues::default();
        let mut staged: Vec<Staged> = Vec::with_capacity(objs.len());
        let mut stored_objs = Vec::with_capacity(if keep { objs.len() } else { 0 });
        for (pos, obj) in objs.iter().enumerate() {
            let (key, obj) = self.prepare(Arc::clone(obj))?;
            let blob = self.backend.store(&key, &obj, version_of(obj.as_ref()))?;
            let stored = self.state.read().tables.stored(key.as_str());
            let pos = pos as u32;
            let record = match stored {
                Some((stored_key, old)) if *old == *blob => Staged {
                    key: stored_key,
                    blob: None,
                    ops_start: 0,
                    pos_kind: KIND_UNCHANGED | pos,
                },
                stored => {
                    compute_values_into(funcs, &key, &obj, &mut vals)?;
                    let Some((start, has)) = ops.push(n, &vals) else {
                        return Ok(None);
                    };
                    Staged {
                        key: stored.map_or(key, |(stored_key, _)| stored_key),
                        blob: Some(blob),
                        ops_start: start,
                        pos_kind: KIND_CHANGED | has | pos,
                    }
                }
            };
            staged.push(record);
            if keep {
                stored_objs.push(obj);
            }
        }
        // A key listed twice: the later object wins (the earlier one's record is dropped).
        staged.sort_unstable_by(|a, b| {
            a.key
                .cmp(&b.key)
                .then(Reverse(a.pos()).cmp(&Reverse(b.pos())))
        });
        staged.dedup_by(|later, kept| later.key == kept.key);

        let vanished: Vec<ObjectKey> = {
            let s = self.state.read();
            s.tables
                .items
                .keys()
                .filter(|k| {
                    staged
                        .binary_search_by(|e| e.key.as_str().cmp(k.as_str()))
                        .is_err()
                })
                .cloned()
                .collect()
        };
        let listed = staged.len();
        staged.extend(vanished.into_iter().map(|key| Staged {
            key,
            blob: None,
            ops_start: 0,
            pos_kind: KIND_VANISHED,
        }));
        if staged.len() > listed {
            staged.sort_unstable_by(|a, b| a.key.cmp(&b.key));
        }

        let values = ops.values();
        let mut new_vals = IndexValues::default();
        let e_ops = |e: &Staged| {
            if e.pos_kind & HAS_OPS != 0 {
                &ops.ops[e.ops_start as usize..]
            } else {
                &[]
            }
        };
        let mut displaced = Vec::new();
        let mut s = self.state.write();
        let tables = &mut s.tables;
        // First every entry the relist drops is freed, then the new ones are placed: they fill
        // the freed slots, so a relist that moves objects between values grows no set.
        for e in &mut staged {
            match e.kind() {
                KIND_UNCHANGED => {}
                KIND_CHANGED => {
                    Ops::read(e_ops(e), &values, n, &mut new_vals);
                    tables.release(e.key.as_str(), &mut new_vals);
                }
                _ => e.blob = tables.take(e.key.as_str()),
            }
        }
        for e in &mut staged {
            match e.kind() {
                KIND_UNCHANGED => {
                    e.blob = tables.items.get(e.key.as_str()).map(|i| Arc::clone(&i.v))
                }
                KIND_CHANGED => {
                    if let Some(new) = e.blob.take() {
                        Ops::read(e_ops(e), &values, n, &mut new_vals);
                        e.blob = tables.put(&e.key, new, &mut new_vals, &mut displaced);
                        displaced.clear();
                    }
                }
                _ => {}
            }
        }
        drop(s);
        for e in staged.iter().filter(|e| e.kind() == KIND_VANISHED) {
            self.backend.forget(e.key.as_str());
        }
        Ok(Some((
            PreviousItems::compact(OldBlobs::Staged(staged), &self.backend.codec),
            stored_objs,
        )))
    }
}
