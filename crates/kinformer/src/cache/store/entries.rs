//! The entry set of one index value: a slab of entries addressed by position.
//!
//! Each stored object keeps, beside it in the item map, where its entries are: for every
//! index value, the value's id and the entry's position in that value's set (a [`Loc`]). So a
//! write that replaces or deletes an object reaches its entries directly — it overwrites or
//! frees a slot — without hashing or comparing keys, and without reading (typed) or decoding
//! (compact) the old object.
//!
//! A freed slot goes on the set's free list and is the next one filled, so a set whose entries
//! come and go (an update moving objects between index values) neither grows nor rehashes:
//! once a set has held `n` entries it keeps room for `n` until it is empty and dropped (as a
//! Go map keeps its buckets). An entry is what readers copy out: the object's `Arc` in typed
//! storage (8 bytes), the key and the encoding in compact storage (32 bytes).

use std::hash::Hash;

use crate::hash::{FastSet, FastState};

/// Where an object's entry for one index value is: the value's id in its index and the
/// entry's position in the value's set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Loc {
    pub(crate) id: u32,
    pub(crate) pos: u32,
}

/// The entries of one index value (see the module docs).
///
/// Invariants: `free` lists exactly the empty slots of `slots`, each once; `len` counts the
/// filled ones.
#[derive(Debug)]
pub(crate) struct Slab<T> {
    slots: Vec<Option<T>>,
    free: Vec<u32>,
    len: usize,
}

impl<T> Slab<T> {
    /// A set holding only `entry`, at position 0.
    pub(crate) fn with(entry: T) -> Self {
        Slab {
            slots: vec![Some(entry)],
            free: Vec::new(),
            len: 1,
        }
    }

    /// Every entry, in no particular order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        self.slots.iter().flatten()
    }

    /// Every entry, in no particular order.
    #[cfg_attr(not(any(test, feature = "compact")), allow(dead_code))]
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.slots.iter_mut().flatten()
    }

    /// The number of entries.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// True when no entry is left.
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends a clone of every entry to `out`.
    pub(crate) fn copy_out(&self, out: &mut Vec<T>)
    where
        T: Clone,
    {
        out.reserve(self.len);
        out.extend(self.iter().cloned());
    }

    /// A clone of every entry of `sets`, once per `id` (the first met).
    pub(crate) fn union_by<'a, I: Hash + Eq>(
        sets: impl Iterator<Item = &'a Self>,
        id: impl Fn(&'a T) -> I,
    ) -> Vec<T>
    where
        T: Clone + 'a,
    {
        let mut seen: FastSet<I> = FastSet::with_hasher(FastState::default());
        let mut out = Vec::new();
        for set in sets {
            out.extend(set.iter().filter(|e| seen.insert(id(e))).cloned());
        }
        out
    }

    /// Stores `entry` in a free slot (the last one freed) or a new one; returns its position,
    /// or gives `entry` back when no position is left (`u32::MAX` slots).
    pub(crate) fn put(&mut self, entry: T) -> Result<u32, T> {
        if let Some(pos) = self.free.pop()
            && let Some(slot) = self.slots.get_mut(pos as usize)
        {
            *slot = Some(entry);
            self.len += 1;
            return Ok(pos);
        }
        let Ok(pos) = u32::try_from(self.slots.len()) else {
            return Err(entry);
        };
        self.slots.push(Some(entry));
        self.len += 1;
        Ok(pos)
    }

    /// Replaces the entry at `pos` with `entry`, returning the one it held; `None` (and
    /// `entry` dropped) if no entry is there.
    pub(crate) fn set(&mut self, pos: u32, entry: T) -> Option<T> {
        match self.slots.get_mut(pos as usize) {
            Some(slot @ Some(_)) => slot.replace(entry),
            _ => None,
        }
    }

    /// Removes and returns the entry at `pos`, if there is one.
    pub(crate) fn remove(&mut self, pos: u32) -> Option<T> {
        let old = self.slots.get_mut(pos as usize)?.take()?;
        self.free.push(pos);
        self.len -= 1;
        Some(old)
    }

    /// The number of slots, filled or free.
    #[cfg(test)]
    pub(crate) fn slots(&self) -> usize {
        self.slots.len()
    }

    /// The entry at `pos`, if there is one.
    #[cfg(test)]
    pub(crate) fn get(&self, pos: u32) -> Option<&T> {
        self.slots.get(pos as usize)?.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::*;

    #[test]
    fn a_freed_slot_is_filled_next_and_the_set_does_not_grow() {
        let mut s = Slab::with("a");
        let b = s.put("b").unwrap();
        let c = s.put("c").unwrap();
        assert_eq!((b, c), (1, 2));
        assert_eq!(s.remove(b), Some("b"));
        assert_eq!(s.remove(b), None, "a slot is freed once");
        assert_eq!(s.len(), 2);
        assert_eq!(s.put("d").unwrap(), b);
        assert_eq!(s.set(c, "e"), Some("c"));
        assert_eq!(s.set(7, "x"), None);
        let mut all: Vec<_> = s.iter().copied().collect();
        all.sort_unstable();
        assert_eq!(all, ["a", "d", "e"]);
        for _ in 0..100 {
            let p = s.put("f").unwrap();
            s.remove(p);
        }
        assert_eq!(s.slots.len(), 4);
    }

    proptest! {
        /// Against a model (position → entry): any sequence of puts, sets and removes keeps
        /// the same entries at the same positions.
        #[test]
        fn the_slab_behaves_as_a_map_of_positions(ops in prop::collection::vec((0u8..3, 0u32..12, 0u32..1000), 1..200)) {
            let mut s = Slab::with(0u32);
            let mut model: HashMap<u32, u32> = HashMap::from([(0, 0)]);
            for (op, pos, v) in ops {
                match op {
                    0 => {
                        let p = s.put(v).unwrap();
                        prop_assert!(model.insert(p, v).is_none(), "position {} was taken", p);
                    }
                    1 => {
                        prop_assert_eq!(s.set(pos, v), model.get(&pos).copied());
                        if let Some(e) = model.get_mut(&pos) {
                            *e = v;
                        }
                    }
                    _ => prop_assert_eq!(s.remove(pos), model.remove(&pos)),
                }
                prop_assert_eq!(s.len(), model.len());
                for (p, v) in &model {
                    prop_assert_eq!(s.get(*p), Some(v));
                }
            }
        }
    }
}
