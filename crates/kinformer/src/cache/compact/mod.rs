//! Compact storage for the [`Indexer`](super::Indexer): objects kept encoded (MessagePack or
//! JSON, compressed with a zstd dictionary trained on the stored objects) and decoded on read.
//!
//! Chosen when the indexer is built, with [`Indexer::compact`](super::Indexer::compact). The
//! encoding of one object ("blob") is a tag byte followed by the payload:
//! - `0`: the serialized object, uncompressed (before a dictionary exists);
//! - `1`: the serialized object compressed with zstd and the indexer's dictionary.
//!
//! The dictionary is trained once, from the first [`CompactOptions::train_after`] stored
//! objects (or given up front with [`CompactOptions::dictionary`]); the objects stored before
//! it exists are then re-encoded with it.

mod codec;
mod dictionary;
mod options;

pub use codec::CodecError;
pub(crate) use codec::{Blob, ObjectCodec, TypedCodec};
pub use options::{CompactOptions, Format};
