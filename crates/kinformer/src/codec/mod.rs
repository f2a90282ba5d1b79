//! Bytes into objects, below the cache and the transport: what both read the wire with.
//!
//! - [`list_stream`]: list bodies split into batches of items as their bytes arrive, so that
//!   a list of any size is decoded within a bounded window (JSON and protobuf).

#[cfg(feature = "kube")]
pub(crate) mod list_stream;
