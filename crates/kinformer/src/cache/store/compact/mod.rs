//! Compact storage for the [`Indexer`](super::Indexer) (feature `compact`, on by default): objects kept encoded (MessagePack or
//! JSON, compressed with a zstd dictionary trained on the stored objects) and decoded on read.
//!
//! Chosen when the indexer is built, with [`Indexer::compact`](super::Indexer::compact), or for
//! an informer with [`Storage::compact`](super::Storage::compact); with
//! [`Lazy<K>`](super::Lazy) objects the stored payload is the body as it arrived. The
//! encoding of one object ("blob") is a tag byte, the object's resourceVersion (a length byte
//! and its bytes; length 255: too long, not kept), then the payload:
//! - tag `0`: the serialized object, uncompressed (before a dictionary exists);
//! - tag `1 + g`: the serialized object compressed with zstd and the indexer's dictionary
//!   number `g` (`0` the first one).
//!
//! The resourceVersion beside the bytes tells an update from a sync without decoding the
//! replaced object; with `Lazy<K>` objects the replaced object handed to handlers as `old`
//! stays in its blob, decompressed (and its metadata parsed) only if read.
//!
//! The first dictionary is trained from the first [`CompactOptions::train_after`] stored
//! objects (or given up front with [`CompactOptions::dictionary`]); the objects stored before
//! it exists are then re-encoded with it. When later writes no longer compress as well with it
//! (new annotations, images, workloads), a new dictionary is trained on a window of them, on a
//! thread of its own, and compresses the writes after it if it stores them clearly smaller;
//! stored objects keep the dictionary they were written with ([`CompactOptions::retrain`], at
//! most eight dictionaries). Every
//! compressed blob carries a zstd checksum, so
//! corrupt stored bytes are reported as [`IndexerError::Decode`](super::IndexerError::Decode)
//! rather than read back as a different object.
//!
//! # Which mode to pick
//!
//! Measured with `kinformer-bench cache` (100,000 pods, counting allocator; heap bytes per
//! object including the indexer with two indices):
//!
//! | | typed | compact |
//! |---|---|---|
//! | bench pod (W4, ≈ 290 B of JSON) | ≈ 6,340 B | ≈ 281 B |
//! | realistic pod (W4R, ≈ 7.1 KB of JSON with managedFields) | ≈ 47,500 B | ≈ 573 B |
//! | `get_by_key` | ≈ 0.2 µs | ≈ 2.8 µs (one decode); ≈ 0.1 µs from the hot cache |
//! | `get_by_key`, realistic pod | ≈ 0.2 µs | ≈ 40 µs |
//! | `by_index`, per object returned | ≈ 0.04 µs | ≈ 2.9 µs (one decode each) |
//! | update | ≈ 3 µs | ≈ 4.5 µs (encode; the old object is not decoded) |
//! | relist peak / steady state, unchanged objects | 1.02 | 1.11 |
//! | relist peak / steady state, every object changed | 1.02 | 1.33 |
//!
//! (Typed relists share the objects with the caller's list, so only the new tables count. A
//! compact relist is just as atomic but stages only what changed: unchanged objects keep their
//! bytes and index entries, changed ones exist twice — old and new encoding — until the
//! swap, plus a 40-byte record per listed key and 4 bytes per index entry to write. "Steady state" is
//! the cache after W4's update phase, whose churn grows the index sets; relative to the cache
//! right after loading, the changed-relist peak is ≈ 1.5×.)
//!
//! - **Typed** when the program reads the cache much more often than the objects change, or
//!   lists large parts of it on every reconcile, and the memory is affordable. Leaner typed
//!   options first: [`strip_managed_fields`](super::strip_managed_fields), a projection type
//!   with only the fields the controller reads (example `projection`: ≈ 1,230 B per bench
//!   pod), or `PartialObjectMeta<K>` for metadata-only controllers (≈ 1,130 B).
//! - **Compact** for large caches whose objects are read by key now and then (the typical
//!   controller: an event arrives with the object, the cache is consulted for a few related
//!   objects): 25–80× less memory than typed objects, each read paying one decode. Handlers
//!   still receive the objects that came off the watch or the list (`Upserted::new` is not
//!   re-decoded, nor are relisted objects), and a relisted object whose encoding did not change
//!   is its own old object. With [`CompactOptions::hot_objects`], the objects being worked on
//!   are read (and updated) without decoding.

mod backend;
mod codec;
mod dictionary;
mod drift;
mod hot;
mod options;
mod trial;

pub(crate) use backend::{CompactBackend, decode_arc};
pub(crate) use codec::{Blob, ObjectCodec, TypedCodec};
pub(crate) use hot::HotObjects;
pub use options::{CompactOptions, Format};
