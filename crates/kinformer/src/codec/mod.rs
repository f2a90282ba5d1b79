//! Bytes into objects, below the cache and the transport: what both read the wire with.
//!
//! - [`Lazy`](lazy::Lazy) (`lazy`): an object whose metadata is parsed on arrival and whose
//!   body stays as it arrived (JSON or enveloped protobuf) until it is read; the wire
//!   adapters and compact storage tell it from other types with [`keeps_bytes`].
//! - `member_ahead`: one member of a JSON object read without reading the others (a list's
//!   `metadata` before its `items`, an object's `metadata`).
//! - [`list_stream`]: list bodies split into batches of items as their bytes arrive, so that
//!   a list of any size is decoded within a bounded window (JSON and protobuf).
//! - [`DecodeError`]: an object that could not be decoded.

mod error;
mod event;
#[cfg(feature = "kube")]
pub(crate) mod heap_reserve;
#[cfg(feature = "kube")]
pub(crate) mod json;
pub(crate) mod lazy;
#[cfg(feature = "kube")]
pub(crate) mod list_stream;
mod member_ahead;
#[cfg(feature = "protobuf")]
pub(crate) mod protobuf;
#[cfg(feature = "kube")]
pub(crate) mod split_decode;
#[cfg(feature = "kube")]
mod wire;

#[cfg(feature = "kube")]
pub(crate) use error::api_status;
pub use error::{
    ApiStatus, CAUSE_RESOURCE_VERSION_TOO_LARGE, DecodeError, ListWatchError, StatusCause,
    TransportErrorKind,
};
pub use event::{Bookmark, INITIAL_EVENTS_END_ANNOTATION, ObjectList, WatchEvent};
#[cfg(feature = "kube")]
pub(crate) use lazy::keeps_bytes;
#[cfg(feature = "kube")]
pub(crate) use member_ahead::member_ahead;
pub(crate) use member_ahead::member_ahead_str;
#[cfg(feature = "kube")]
pub use wire::Wire;
