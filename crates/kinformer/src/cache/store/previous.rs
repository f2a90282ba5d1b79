//! What an indexer held before a replace: [`PreviousItems`].

use std::fmt;
use std::sync::{Arc, OnceLock};

use crate::cache::meta::ObjectKey;
use crate::cache::store::FastMap;
use crate::cache::store::IndexerError;
use crate::cache::store::indexer::{decode_arc, log_decode_error};
use crate::cache::store::staged::Staged;
use crate::cache::store::{Blob, ObjectCodec};

/// The old encodings of a compact indexer.
pub(super) enum OldBlobs {
    /// After a rebuild: the old item map.
    Map(FastMap<ObjectKey, Blob>),
    /// After a staged replace: one entry per listed or vanished key, sorted by key; the blob
    /// is what was stored before (`None` for a key the list added).
    Staged(Vec<Staged>),
}

impl OldBlobs {
    fn position(entries: &[Staged], key: &str) -> Option<usize> {
        entries.binary_search_by(|e| e.key.as_str().cmp(key)).ok()
    }

    fn get(&self, key: &str) -> Option<&Blob> {
        match self {
            OldBlobs::Map(m) => m.get(key),
            OldBlobs::Staged(v) => Self::position(v, key).and_then(|i| v[i].blob.as_ref()),
        }
    }

    fn take(&mut self, key: &str) -> Option<Blob> {
        match self {
            OldBlobs::Map(m) => m.remove(key),
            OldBlobs::Staged(v) => Self::position(v, key).and_then(|i| v[i].blob.take()),
        }
    }

    /// True if the replace stored exactly the bytes that were stored before under `key`.
    fn unchanged(&self, key: &str) -> bool {
        match self {
            OldBlobs::Map(_) => false,
            OldBlobs::Staged(v) => {
                Self::position(v, key).is_some_and(|i| v[i].unchanged() && v[i].blob.is_some())
            }
        }
    }

    fn iter(&self) -> Box<dyn Iterator<Item = (&ObjectKey, &Blob)> + '_> {
        match self {
            OldBlobs::Map(m) => Box::new(m.iter()),
            OldBlobs::Staged(v) => Box::new(
                v.iter()
                    .filter_map(|e| e.blob.as_ref().map(|b| (&e.key, b))),
            ),
        }
    }

    fn len(&self) -> usize {
        match self {
            OldBlobs::Map(m) => m.len(),
            OldBlobs::Staged(v) => v.iter().filter(|e| e.blob.is_some()).count(),
        }
    }
}

pub(super) enum Previous<K> {
    Typed(FastMap<ObjectKey, Arc<K>>),
    Compact {
        old: OldBlobs,
        codec: Arc<dyn ObjectCodec<K>>,
        /// Filled by the first [`PreviousItems::get`]: every object decoded.
        decoded: OnceLock<FastMap<ObjectKey, Arc<K>>>,
    },
}

/// The content an indexer held before a [`Indexer::replace_take_old`](super::Indexer::replace_take_old).
///
/// In compact mode the objects stay encoded and are decoded when asked for:
/// [`get_owned`](Self::get_owned) and [`remove`](Self::remove) decode one object;
/// [`get`](Self::get), which returns a reference, decodes *all* of them on first use (prefer
/// `get_owned`).
pub struct PreviousItems<K>(pub(super) Previous<K>);

impl<K> fmt::Debug for PreviousItems<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreviousItems")
            .field("len", &self.len())
            .finish()
    }
}

impl<K> PreviousItems<K> {
    pub(super) fn compact(old: OldBlobs, codec: &Arc<dyn ObjectCodec<K>>) -> Self {
        PreviousItems(Previous::Compact {
            old,
            codec: Arc::clone(codec),
            decoded: OnceLock::new(),
        })
    }

    /// The object that was stored under `key` (see the type's note on compact mode).
    pub fn get(&self, key: &str) -> Option<&Arc<K>> {
        match &self.0 {
            Previous::Typed(m) => m.get(key),
            Previous::Compact {
                old,
                codec,
                decoded,
            } => decoded
                .get_or_init(|| {
                    old.iter()
                        .filter_map(|(k, b)| match decode_arc(codec.as_ref(), k.as_str(), b) {
                            Ok(o) => Some((k.clone(), o)),
                            Err(e) => {
                                log_decode_error(&e);
                                None
                            }
                        })
                        .collect()
                })
                .get(key),
        }
    }

    /// The object that was stored under `key`, decoded on demand in compact mode.
    ///
    /// # Errors
    /// [`IndexerError::Decode`] if its stored bytes cannot be decoded.
    pub fn try_get(&self, key: &str) -> Result<Option<Arc<K>>, IndexerError> {
        match &self.0 {
            Previous::Typed(m) => Ok(m.get(key).cloned()),
            Previous::Compact { old, codec, .. } => old
                .get(key)
                .map(|b| decode_arc(codec.as_ref(), key, b))
                .transpose(),
        }
    }

    /// As [`try_get`](Self::try_get); an undecodable object is logged and reported absent.
    pub fn get_owned(&self, key: &str) -> Option<Arc<K>> {
        self.try_get(key).unwrap_or_else(|e| {
            log_decode_error(&e);
            None
        })
    }

    /// The object stored under `key` before the replace that stored `new` under it. When the
    /// replace found the very same encoding already stored (compact mode), that is `new`
    /// itself, and nothing is decoded.
    pub(crate) fn old_for(&self, key: &str, new: &Arc<K>) -> Option<Arc<K>> {
        match &self.0 {
            Previous::Compact { old, .. } if old.unchanged(key) => Some(Arc::clone(new)),
            _ => self.get_owned(key),
        }
    }

    /// Takes the object that was stored under `key` (an undecodable object is logged and
    /// reported absent).
    pub fn remove(&mut self, key: &str) -> Option<Arc<K>> {
        match &mut self.0 {
            Previous::Typed(m) => m.remove(key),
            Previous::Compact { old, codec, .. } => {
                let blob = old.take(key)?;
                decode_arc(codec.as_ref(), key, &blob)
                    .map_err(|e| log_decode_error(&e))
                    .ok()
            }
        }
    }

    /// The keys, in no particular order.
    pub fn keys(&self) -> impl Iterator<Item = &ObjectKey> {
        let it: Box<dyn Iterator<Item = &ObjectKey> + '_> = match &self.0 {
            Previous::Typed(m) => Box::new(m.keys()),
            Previous::Compact { old, .. } => Box::new(old.iter().map(|(k, _)| k)),
        };
        it
    }

    /// Number of objects.
    pub fn len(&self) -> usize {
        match &self.0 {
            Previous::Typed(m) => m.len(),
            Previous::Compact { old, .. } => old.len(),
        }
    }

    /// True if the indexer was empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
