//! What an indexer held before a replace: [`PreviousItems`].

use std::fmt;
use std::sync::Arc;
#[cfg(feature = "compact")]
use std::sync::OnceLock;

use crate::cache::meta::ObjectKey;
use crate::cache::store::FastMap;
use crate::cache::store::IndexerError;
use crate::cache::store::backend::ReadError;
use crate::cache::store::tables::Item;
#[cfg(feature = "compact")]
use crate::cache::store::{ObjectCodec, compact::decode_arc, staged::OldBlobs};

pub(super) enum Previous<K> {
    Typed(FastMap<ObjectKey, Item<Arc<K>>>),
    #[cfg(feature = "compact")]
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
    #[cfg(feature = "compact")]
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
            Previous::Typed(m) => m.get(key).map(|i| &i.v),
            #[cfg(feature = "compact")]
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
                                e.log();
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
            Previous::Typed(m) => Ok(m.get(key).map(|i| Arc::clone(&i.v))),
            #[cfg(feature = "compact")]
            Previous::Compact { old, codec, .. } => old
                .get(key)
                .map(|b| decode_arc(codec.as_ref(), key, b))
                .transpose(),
        }
    }

    /// As [`try_get`](Self::try_get); an undecodable object is logged and reported absent.
    pub fn get_owned(&self, key: &str) -> Option<Arc<K>> {
        self.try_get(key).unwrap_or_else(|e| {
            e.log();
            None
        })
    }

    /// The object stored under `key` before the replace that stored `new` under it. When the
    /// replace found the very same encoding already stored (compact mode), that is `new`
    /// itself, and nothing is decoded.
    #[cfg_attr(not(feature = "compact"), allow(unused_variables))]
    pub(crate) fn old_for(&self, key: &str, new: &Arc<K>) -> Option<Arc<K>> {
        match &self.0 {
            #[cfg(feature = "compact")]
            Previous::Compact { old, .. } if old.unchanged(key) => Some(Arc::clone(new)),
            _ => self.get_owned(key),
        }
    }

    /// Takes the object that was stored under `key` (an undecodable object is logged and
    /// reported absent).
    pub fn remove(&mut self, key: &str) -> Option<Arc<K>> {
        match &mut self.0 {
            Previous::Typed(m) => m.remove(key).map(|i| i.v),
            #[cfg(feature = "compact")]
            Previous::Compact { old, codec, .. } => {
                let blob = old.take(key)?;
                decode_arc(codec.as_ref(), key, &blob)
                    .map_err(ReadError::log)
                    .ok()
            }
        }
    }

    /// The keys, in no particular order.
    pub fn keys(&self) -> impl Iterator<Item = &ObjectKey> {
        let it: Box<dyn Iterator<Item = &ObjectKey> + '_> = match &self.0 {
            Previous::Typed(m) => Box::new(m.keys()),
            #[cfg(feature = "compact")]
            Previous::Compact { old, .. } => Box::new(old.iter().map(|(k, _)| k)),
        };
        it
    }

    /// Number of objects.
    pub fn len(&self) -> usize {
        match &self.0 {
            Previous::Typed(m) => m.len(),
            #[cfg(feature = "compact")]
            Previous::Compact { old, .. } => old.len(),
        }
    }

    /// True if the indexer was empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
