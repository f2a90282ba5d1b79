//! One record of a staged compact replace: what [`relist`](super::relist) stages per listed or
//! vanished key, and what [`PreviousItems`](super::PreviousItems) keeps of it afterwards.

use super::FastMap;
use super::compact::Blob;
use super::tables::Item;
use crate::cache::meta::ObjectKey;

pub(super) const KIND_UNCHANGED: u32 = 0;
pub(super) const KIND_CHANGED: u32 = 1 << 30;
pub(super) const KIND_VANISHED: u32 = 2 << 30;
pub(super) const KIND_MASK: u32 = 3 << 30;
pub(super) const HAS_OPS: u32 = 1 << 29;
/// List positions are kept in the low bits; longer lists are rebuilt instead.
pub(super) const POS_MASK: u32 = HAS_OPS - 1;

/// One listed or vanished key of a staged replace (40 bytes).
pub(super) struct Staged {
    pub(super) key: ObjectKey,
    /// Before applying: the new encoding of a changed key. After: what was stored before
    /// (`None` for a key the list added).
    pub(super) blob: Option<Blob>,
    /// Start of this key's ops (if `HAS_OPS`).
    pub(super) ops_start: u32,
    /// List position, `HAS_OPS` and the kind.
    pub(super) pos_kind: u32,
}

impl Staged {
    /// True for a listed object whose encoding equals the one stored before.
    pub(super) fn unchanged(&self) -> bool {
        self.kind() == KIND_UNCHANGED
    }

    pub(super) fn kind(&self) -> u32 {
        self.pos_kind & KIND_MASK
    }

    pub(super) fn pos(&self) -> u32 {
        self.pos_kind & POS_MASK
    }
}

/// The old encodings of a compact indexer.
pub(super) enum OldBlobs {
    /// After a rebuild: the old item map.
    Map(FastMap<ObjectKey, Item<Blob>>),
    /// After a staged replace: one entry per listed or vanished key, sorted by key; the blob
    /// is what was stored before (`None` for a key the list added).
    Staged(Vec<Staged>),
}

impl OldBlobs {
    fn position(entries: &[Staged], key: &str) -> Option<usize> {
        entries.binary_search_by(|e| e.key.as_str().cmp(key)).ok()
    }

    pub(super) fn get(&self, key: &str) -> Option<&Blob> {
        match self {
            OldBlobs::Map(m) => m.get(key).map(|i| &i.v),
            OldBlobs::Staged(v) => Self::position(v, key).and_then(|i| v[i].blob.as_ref()),
        }
    }

    pub(super) fn take(&mut self, key: &str) -> Option<Blob> {
        match self {
            OldBlobs::Map(m) => m.remove(key).map(|i| i.v),
            OldBlobs::Staged(v) => Self::position(v, key).and_then(|i| v[i].blob.take()),
        }
    }

    /// True if the replace stored exactly the bytes that were stored before under `key`.
    pub(super) fn unchanged(&self, key: &str) -> bool {
        match self {
            OldBlobs::Map(_) => false,
            OldBlobs::Staged(v) => {
                Self::position(v, key).is_some_and(|i| v[i].unchanged() && v[i].blob.is_some())
            }
        }
    }

    pub(super) fn iter(&self) -> Box<dyn Iterator<Item = (&ObjectKey, &Blob)> + '_> {
        match self {
            OldBlobs::Map(m) => Box::new(m.iter().map(|(k, i)| (k, &i.v))),
            OldBlobs::Staged(v) => Box::new(
                v.iter()
                    .filter_map(|e| e.blob.as_ref().map(|b| (&e.key, b))),
            ),
        }
    }

    pub(super) fn len(&self) -> usize {
        match self {
            OldBlobs::Map(m) => m.len(),
            OldBlobs::Staged(v) => v.iter().filter(|e| e.blob.is_some()).count(),
        }
    }
}
