//! The index values of one stored object, kept beside it as ids into the indices.
//!
//! Each [`Index`](super::Index) interns its values: a value present in the index has a slot
//! id. An item keeps, for every index in the indexers' fixed order, the ids of its values, so
//! a write finds the entries of the object it replaces or deletes without reading (typed) or
//! decoding (compact) that object. In the common shape — at most two indices, at most one
//! value each — the ids are inline (16 bytes, no allocation); any other shape spills into one
//! boxed slice.

/// The id standing for "no value" in [`ValueIds::Pair`]; no slot has it.
pub(super) const NO_ID: u32 = u32::MAX;

/// The ids of one object's index values, index by index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ValueIds {
    /// At most one value for each of at most two indices ([`NO_ID`]: no value).
    Pair([u32; 2]),
    /// Any other shape: the number of indices `n`, the end of each index's ids (counted
    /// from the first id), then the ids.
    Spilled(Box<[u32]>),
}

impl Default for ValueIds {
    fn default() -> Self {
        ValueIds::Pair([NO_ID; 2])
    }
}

impl ValueIds {
    /// The ids `ids`, where index `i`'s end at `ends[i]` (`ends` has one entry per index).
    pub(super) fn new(ids: &[u32], ends: &[usize]) -> Self {
        let mut pair = [NO_ID; 2];
        let mut start = 0;
        let mut fits = ends.len() <= pair.len();
        for (slot, &end) in pair.iter_mut().zip(ends) {
            match end.checked_sub(start) {
                Some(0) => {}
                Some(1) => *slot = ids[start],
                _ => fits = false,
            }
            start = end;
        }
        if fits {
            return ValueIds::Pair(pair);
        }
        let mut out = Vec::with_capacity(1 + ends.len() + ids.len());
        out.push(ends.len() as u32);
        out.extend(ends.iter().map(|&e| e as u32));
        out.extend_from_slice(ids);
        ValueIds::Spilled(out.into_boxed_slice())
    }

    /// The ids of index `i`'s values (empty past the last index).
    pub(super) fn get(&self, i: usize) -> &[u32] {
        match self {
            ValueIds::Pair(pair) => match pair.get(i) {
                Some(id) if *id != NO_ID => std::slice::from_ref(id),
                _ => &[],
            },
            ValueIds::Spilled(s) => {
                let n = s.first().map_or(0, |&n| n as usize);
                if i >= n {
                    return &[];
                }
                let start = if i == 0 { 0 } else { s[i] as usize };
                let end = s[1 + i] as usize;
                s.get(1 + n + start..1 + n + end).unwrap_or(&[])
            }
        }
    }

    /// These ids for `n` indices followed by `more`'s for `m` further indices.
    pub(super) fn append(&self, n: usize, more: &ValueIds, m: usize) -> ValueIds {
        let mut ids = Vec::new();
        let mut ends = Vec::with_capacity(n + m);
        let groups = (0..n)
            .map(|i| self.get(i))
            .chain((0..m).map(|i| more.get(i)));
        for group in groups {
            ids.extend_from_slice(group);
            ends.push(ids.len());
        }
        ValueIds::new(&ids, &ends)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn groups(ids: &ValueIds, n: usize) -> Vec<Vec<u32>> {
        (0..n).map(|i| ids.get(i).to_vec()).collect()
    }

    fn flat(groups: &[Vec<u32>]) -> (Vec<u32>, Vec<usize>) {
        let mut ids = Vec::new();
        let mut ends = Vec::new();
        for g in groups {
            ids.extend_from_slice(g);
            ends.push(ids.len());
        }
        (ids, ends)
    }

    #[test]
    fn the_common_shape_is_inline_and_small() {
        assert_eq!(std::mem::size_of::<ValueIds>(), 16);
        assert!(matches!(
            ValueIds::new(&[3, 7], &[1, 2]),
            ValueIds::Pair([3, 7])
        ));
        assert!(matches!(
            ValueIds::new(&[7], &[0, 1]),
            ValueIds::Pair([NO_ID, 7])
        ));
        assert!(matches!(ValueIds::new(&[], &[]), ValueIds::Pair(_)));
        assert!(matches!(ValueIds::new(&[1, 2], &[2]), ValueIds::Spilled(_)));
        assert!(matches!(
            ValueIds::new(&[1, 2, 3], &[1, 2, 3]),
            ValueIds::Spilled(_)
        ));
    }

    proptest! {
        #[test]
        fn ids_read_back_index_by_index(
            a in prop::collection::vec(prop::collection::vec(0u32..1000, 0..4), 0..5),
            b in prop::collection::vec(prop::collection::vec(0u32..1000, 0..4), 0..3),
        ) {
            let (ids, ends) = flat(&a);
            let v = ValueIds::new(&ids, &ends);
            prop_assert_eq!(groups(&v, a.len()), a.clone());
            prop_assert!(v.get(a.len()).is_empty());
            let (more_ids, more_ends) = flat(&b);
            let more = ValueIds::new(&more_ids, &more_ends);
            let both = v.append(a.len(), &more, b.len());
            let mut all = a.clone();
            all.extend(b.iter().cloned());
            prop_assert_eq!(groups(&both, all.len()), all);
        }
    }
}
