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
//! it exists are then re-encoded with it. Every compressed blob carries a zstd checksum, so
//! corrupt stored bytes are reported as [`IndexerError::Decode`](super::IndexerError::Decode)
//! rather than read back as a different object.
//!
//! # Which mode to pick
//!
//! Measured with `kinformer bench cache` (100,000 pods, counting allocator; heap bytes per
//! object including the indexer with two indices):
//!
//! | | typed | compact |
//! |---|---|---|
//! | bench pod (W4, ≈ 290 B of JSON) | ≈ 6,340 B | ≈ 255 B |
//! | realistic pod (W4R, ≈ 7.1 KB of JSON with managedFields) | ≈ 47,600 B | ≈ 576 B |
//! | `get_by_key` | ≈ 0.5 µs | ≈ 4–6 µs (one decode) |
//! | `by_index`, per object returned | ≈ 0.1 µs | ≈ 4–7 µs (one decode each) |
//! | update | ≈ 1.5–6 µs | ≈ 13–20 µs (encode, decode the old object) |
//!
//! - **Typed** when the program reads the cache much more often than the objects change, or
//!   lists large parts of it on every reconcile, and the memory is affordable. Leaner typed
//!   options first: [`strip_managed_fields`](super::strip_managed_fields), a projection type
//!   with only the fields the controller reads (example `projection`: ≈ 1,260 B per bench
//!   pod), or `PartialObjectMeta<K>` for metadata-only controllers (≈ 1,160 B).
//! - **Compact** for large caches whose objects are read by key now and then (the typical
//!   controller: an event arrives with the object, the cache is consulted for a few related
//!   objects): 25–80× less memory than typed objects, each read paying one decode. Handlers
//!   still receive the objects that came off the watch (`Upserted::new` is not re-decoded).

mod codec;
mod dictionary;
mod options;

pub use codec::CodecError;
pub(crate) use codec::{Blob, ObjectCodec, TypedCodec};
pub use options::{CompactOptions, Format};
