//! The index entries of one stored object, kept beside it as places in the indices.
//!
//! Each [`Index`](super::Index) interns its values: a value present in the index has a slot
//! id, and each entry a position in the value's set. An item keeps, for every index in the
//! indexers' fixed order, the [`Loc`] (id and position) of each of its entries, so a write
//! reaches the entries of the object it replaces or deletes without reading (typed) or
//! decoding (compact) that object. In the common shape — at most two indices, at most one
//! value each — the places are inline (24 bytes, no allocation); any other shape spills into
//! one boxed slice.

use super::entries::Loc;

/// The id standing for "no value" in [`ValueIds::Pair`]; no slot has it.
pub(super) const NO_ID: u32 = u32::MAX;

/// The place of "no value" in [`ValueIds::Pair`].
const NONE: Loc = Loc { id: NO_ID, pos: 0 };

/// The places of one object's index entries, index by index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ValueIds {
    /// At most one value for each of at most two indices ([`NO_ID`]: no value).
    Pair([Loc; 2]),
    /// Any other shape: `{id: n}` for the number of indices `n`, `{id: end}` for the end of
    /// each index's places (counted from the first place), then the places.
    Spilled(Box<[Loc]>),
}

impl Default for ValueIds {
    fn default() -> Self {
        ValueIds::Pair([NONE; 2])
    }
}

/// A count or an end, as the header of [`ValueIds::Spilled`] keeps it.
fn header(n: usize) -> Loc {
    Loc {
        id: n as u32,
        pos: 0,
    }
}

impl ValueIds {
    /// The places `locs`, where index `i`'s end at `ends[i]` (`ends` has one entry per index).
    pub(super) fn new(locs: &[Loc], ends: &[usize]) -> Self {
        let mut pair = [NONE; 2];
        let mut start = 0;
        let mut fits = ends.len() <= pair.len();
        for (slot, &end) in pair.iter_mut().zip(ends) {
            match end.checked_sub(start) {
                Some(0) => {}
                Some(1) => *slot = locs[start],
                _ => fits = false,
            }
            start = end;
        }
        if fits {
            return ValueIds::Pair(pair);
        }
        let mut out = Vec::with_capacity(1 + ends.len() + locs.len());
        out.push(header(ends.len()));
        out.extend(ends.iter().map(|&e| header(e)));
        out.extend_from_slice(locs);
        ValueIds::Spilled(out.into_boxed_slice())
    }

    /// The places of index `i`'s entries (empty past the last index).
    pub(super) fn get(&self, i: usize) -> &[Loc] {
        match self {
            ValueIds::Pair(pair) => match pair.get(i) {
                Some(loc) if loc.id != NO_ID => std::slice::from_ref(loc),
                _ => &[],
            },
            ValueIds::Spilled(s) => {
                let n = s.first().map_or(0, |h| h.id as usize);
                if i >= n {
                    return &[];
                }
                let start = if i == 0 { 0 } else { s[i].id as usize };
                let end = s[1 + i].id as usize;
                s.get(1 + n + start..1 + n + end).unwrap_or(&[])
            }
        }
    }

    /// These places for `n` indices followed by `more`'s for `m` further indices.
    pub(super) fn append(&self, n: usize, more: &ValueIds, m: usize) -> ValueIds {
        let mut locs = Vec::new();
        let mut ends = Vec::with_capacity(n + m);
        let groups = (0..n)
            .map(|i| self.get(i))
            .chain((0..m).map(|i| more.get(i)));
        for group in groups {
            locs.extend_from_slice(group);
            ends.push(locs.len());
        }
        ValueIds::new(&locs, &ends)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// A place whose position differs from its id.
    fn at(id: u32) -> Loc {
        Loc {
            id,
            pos: id * 3 + 1,
        }
    }

    fn groups(ids: &ValueIds, n: usize) -> Vec<Vec<Loc>> {
        (0..n).map(|i| ids.get(i).to_vec()).collect()
    }

    fn flat(groups: &[Vec<Loc>]) -> (Vec<Loc>, Vec<usize>) {
        let mut locs = Vec::new();
        let mut ends = Vec::new();
        for g in groups {
            locs.extend_from_slice(g);
            ends.push(locs.len());
        }
        (locs, ends)
    }

    #[test]
    fn the_common_shape_is_inline_and_small() {
        assert_eq!(std::mem::size_of::<ValueIds>(), 24);
        assert_eq!(
            ValueIds::new(&[at(3), at(7)], &[1, 2]),
            ValueIds::Pair([at(3), at(7)])
        );
        assert_eq!(
            ValueIds::new(&[at(7)], &[0, 1]),
            ValueIds::Pair([NONE, at(7)])
        );
        assert!(matches!(ValueIds::new(&[], &[]), ValueIds::Pair(_)));
        assert!(matches!(
            ValueIds::new(&[at(1), at(2)], &[2]),
            ValueIds::Spilled(_)
        ));
        assert!(matches!(
            ValueIds::new(&[at(1), at(2), at(3)], &[1, 2, 3]),
            ValueIds::Spilled(_)
        ));
    }

    proptest! {
        #[test]
        fn places_read_back_index_by_index(
            a in prop::collection::vec(prop::collection::vec((0u32..1000).prop_map(at), 0..4), 0..5),
            b in prop::collection::vec(prop::collection::vec((0u32..1000).prop_map(at), 0..4), 0..3),
        ) {
            let (locs, ends) = flat(&a);
            let v = ValueIds::new(&locs, &ends);
            prop_assert_eq!(groups(&v, a.len()), a.clone());
            prop_assert!(v.get(a.len()).is_empty());
            let (more_locs, more_ends) = flat(&b);
            let more = ValueIds::new(&more_locs, &more_ends);
            let both = v.append(a.len(), &more, b.len());
            let mut all = a.clone();
            all.extend(b.iter().cloned());
            prop_assert_eq!(groups(&both, all.len()), all);
        }
    }
}
