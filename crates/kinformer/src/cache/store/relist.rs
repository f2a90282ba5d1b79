//! Compact storage's `replace`: atomic, yet staging only what changed.
//!
//! A relist replaces the whole content at once (readers see the old content or the new one,
//! never a mix) but must not hold two copies of the cache. With the writer lock held
//! throughout, the replace runs in two phases:
//!
//! 1. *Staging*, without the state lock (the transform and the index functions run here):
//!    every listed object is encoded and compared with the bytes stored under its key. An
//!    unchanged object costs one record; a changed or new object keeps its new encoding and its
//!    index changes, as interned values; stored keys missing from the list are staged as
//!    deletions.
//! 2. *Applying*, under the write lock, running no user code: the staged changes go into the
//!    live item map and indices, and each record takes the encoding that was stored before, so
//!    the records become the [`PreviousItems`].
//!
//! At the peak, only the new encodings of changed objects and the records exist beyond the
//! steady state.

use std::cmp::Reverse;
use std::sync::Arc;

use kube_core::Resource;

use crate::cache::meta::ObjectKey;
use crate::cache::store::backend::{Backend, Replaced, Via};
use crate::cache::store::compact::CompactBackend;
use crate::cache::store::core::Core;
use crate::cache::store::staged::{
    HAS_OPS, KIND_CHANGED, KIND_UNCHANGED, KIND_VANISHED, OldBlobs, POS_MASK, Staged,
};
use crate::cache::store::tables::{IndexerList, Tables, compute_values};
use crate::cache::store::{Blob, FastMap, IndexValues, IndexerError, PreviousItems};

/// An op (4 bytes): end and remove flags, the index (6 bits) and the interned value (24 bits).
/// More indices or values than that are rebuilt instead.
///
/// The last op of a record.
const OP_END: u32 = 1 << 31;
/// Remove the key from the value's set (else: put the key with its new encoding).
const OP_REMOVE: u32 = 1 << 30;
const OP_INDEX_SHIFT: u32 = 24;
const OP_INDEX_MAX: usize = 63;
const OP_VALUE_MASK: u32 = (1 << OP_INDEX_SHIFT) - 1;

/// The index changes of all staged keys: a flat op list over interned values.
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

    /// Records the index changes from `old` to `new`: removals of old values the new object
    /// lacks, then every new value (also unchanged ones: their entries must point at the new
    /// encoding). Returns the first op's position and `HAS_OPS`, or `(0, 0)` without ops;
    /// `None` if the ops cannot be represented (then the caller rebuilds).
    fn push(
        &mut self,
        indices: usize,
        old: Option<&IndexValues>,
        new: Option<&IndexValues>,
    ) -> Option<(u32, u32)> {
        let start = self.ops.len();
        for i in 0..indices {
            if i > OP_INDEX_MAX {
                return None;
            }
            let index = (i as u32) << OP_INDEX_SHIFT;
            let new_vals = new.map(|n| n.get(i)).unwrap_or(&[]);
            for o in old.map(|o| o.get(i)).unwrap_or(&[]) {
                if !new_vals.contains(o) {
                    let op = OP_REMOVE | index | self.intern(o)?;
                    self.ops.push(op);
                }
            }
            for v in new_vals {
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
}

/// Applies one record's ops to the indices; `new` is the encoding puts store.
fn apply_ops(
    tables: &mut Tables<Blob>,
    key: &ObjectKey,
    new: Option<&Blob>,
    ops: &[u32],
    values: &[&str],
) {
    for op in ops {
        let index = &mut tables.indices[((op >> OP_INDEX_SHIFT) as usize) & OP_INDEX_MAX];
        let value = values[(op & OP_VALUE_MASK) as usize];
        if op & OP_REMOVE != 0 {
            index.remove_key(value, key);
        } else if let Some(blob) = new {
            index.put(value, &(key.clone(), Arc::clone(blob)));
        }
        if op & OP_END != 0 {
            break;
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
    /// A key, encode or index function error (store unchanged); a decode error for a stored
    /// object (store unchanged; the caller rebuilds).
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
        let mut staged: Vec<Staged> = Vec::with_capacity(objs.len());
        let mut stored_objs = Vec::with_capacity(if keep { objs.len() } else { 0 });
        for (pos, obj) in objs.iter().enumerate() {
            let (key, obj) = self.prepare(Arc::clone(obj))?;
            let blob = self.backend.store(&key, &obj)?;
            let stored = self
                .state
                .read()
                .tables
                .items
                .get_key_value(key.as_str())
                .map(|(k, b)| (k.clone(), Arc::clone(b)));
            let pos = pos as u32;
            let record = match stored {
                Some((stored_key, old)) if *old == *blob => Staged {
                    key: stored_key,
                    blob: None,
                    ops_start: 0,
                    pos_kind: KIND_UNCHANGED | pos,
                },
                stored => {
                    let new_vals = compute_values(funcs, &key, &obj)?;
                    let (key, old_vals) = match stored {
                        Some((stored_key, old)) => {
                            let old_obj = self.backend.object((key.clone(), old), Via::Peek)?;
                            (stored_key, Some(compute_values(funcs, &key, &old_obj)?))
                        }
                        None => (key, None),
                    };
                    let Some((start, has)) = ops.push(n, old_vals.as_ref(), Some(&new_vals)) else {
                        return Ok(None);
                    };
                    Staged {
                        key,
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
        // A key listed twice: the later object wins (its ops were staged against the stored
        // object, like the earlier one's, which are dropped).
        staged.sort_unstable_by(|a, b| {
            a.key
                .cmp(&b.key)
                .then(Reverse(a.pos()).cmp(&Reverse(b.pos())))
        });
        staged.dedup_by(|later, kept| later.key == kept.key);

        let vanished: Vec<(ObjectKey, Blob)> = {
            let s = self.state.read();
            s.tables
                .items
                .iter()
                .filter(|(k, _)| {
                    staged
                        .binary_search_by(|e| e.key.as_str().cmp(k.as_str()))
                        .is_err()
                })
                .map(|(k, b)| (k.clone(), Arc::clone(b)))
                .collect()
        };
        let listed = staged.len();
        for (key, old) in vanished {
            let old_obj = self.backend.object((key.clone(), old), Via::Peek)?;
            let old_vals = compute_values(funcs, &key, &old_obj)?;
            let Some((start, has)) = ops.push(n, Some(&old_vals), None) else {
                return Ok(None);
            };
            staged.push(Staged {
                key,
                blob: None,
                ops_start: start,
                pos_kind: KIND_VANISHED | has,
            });
        }
        if staged.len() > listed {
            staged.sort_unstable_by(|a, b| a.key.cmp(&b.key));
        }

        let values = ops.values();
        let mut s = self.state.write();
        let tables = &mut s.tables;
        for e in &mut staged {
            let e_ops = if e.pos_kind & HAS_OPS != 0 {
                &ops.ops[e.ops_start as usize..]
            } else {
                &[]
            };
            match e.kind() {
                KIND_UNCHANGED => e.blob = tables.items.get(e.key.as_str()).cloned(),
                KIND_CHANGED => {
                    let new = e.blob.take();
                    apply_ops(tables, &e.key, new.as_ref(), e_ops, &values);
                    if let Some(new) = new {
                        e.blob = tables.items.insert(e.key.clone(), new);
                    }
                }
                _ => {
                    apply_ops(tables, &e.key, None, e_ops, &values);
                    e.blob = tables.items.remove(e.key.as_str());
                }
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
