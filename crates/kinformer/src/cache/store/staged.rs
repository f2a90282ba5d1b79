//! One record of a staged compact replace: what [`relist`](super::relist) stages per listed or
//! vanished key, and what [`PreviousItems`](super::PreviousItems) keeps of it afterwards.

use super::compact::Blob;
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
