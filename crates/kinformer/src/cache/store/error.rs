//! What the indexer reports.

use super::IndexFuncError;
use crate::cache::meta::{KeyError, ObjectKey};

/// An error from the [`Indexer`](super::Indexer). None is retryable: they describe bad objects or misuse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IndexerError {
    /// The object has no usable key.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// No index of that name exists.
    #[error("index with name {0} does not exist")]
    UnknownIndex(String),
    /// `add_indexers` was given a name that is already an index.
    #[error("indexer conflict: {0}")]
    IndexerConflict(String),
    /// An index function failed; the store was left unchanged.
    #[error("index function {index:?} failed for {key}: {source}")]
    IndexFunc {
        /// The index name.
        index: String,
        /// The object's key.
        key: ObjectKey,
        /// The function's error.
        source: IndexFuncError,
    },
    /// Compact storage: the object could not be encoded; the store was left unchanged.
    #[error("cannot store {key} compactly: {source}")]
    Encode {
        /// The object's key.
        key: ObjectKey,
        /// The codec's error.
        source: CodecError,
    },
    /// Compact storage: the bytes stored under `key` could not be decoded (corrupt, or not the
    /// stored type). A write that needed the old object left the store unchanged.
    #[error("cannot decode the object stored under {key}: {source}")]
    Decode {
        /// The key.
        key: ObjectKey,
        /// The codec's error.
        source: CodecError,
    },
    /// Compact storage could not be set up (e.g. an unusable dictionary).
    #[error("compact store: {0}")]
    Compact(CodecError),
}

/// Why an object could not be encoded, or stored bytes could not be decoded (compact
/// storage, feature `compact`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    /// The object could not be serialized.
    #[error("cannot encode object: {0}")]
    Encode(String),
    /// Stored bytes are corrupt or not decodable as the object type.
    #[error("cannot decode stored object: {0}")]
    Decode(String),
    /// The dictionary could not be trained or loaded.
    #[error("dictionary: {0}")]
    Dictionary(String),
}
