//! Bytes into objects, below the cache and the transport: what both read the wire with. It
//! imports nothing from `cache` or `kube`; `cache::listwatch` re-exports its types and `kube`
//! its public decoders.
//!
//! - The wire types (`event`, `error`): [`ObjectList`], [`WatchEvent`], [`Bookmark`], and
//!   the errors [`ListWatchError`], [`ApiStatus`] and [`DecodeError`] (an object that could
//!   not be decoded).
//! - [`Lazy`](lazy::Lazy) (`lazy`): an object whose metadata is parsed on arrival and whose
//!   body stays as it arrived (JSON or enveloped protobuf) until it is read; the decoders and
//!   compact storage tell it from other types with `keeps_bytes`.
//! - `member_ahead`: one member of a JSON object read without reading the others (a list's
//!   `metadata` before its `items`, an object's `metadata`).
//! - The decoders (feature `kube`), object by object so that one bad object is skipped and
//!   reported: `json` (list bodies, watch lines, and the lines cut from a watch body's
//!   chunks), `protobuf` (feature `protobuf`: list bodies and watch frames), `split_decode`
//!   (a large body's items on several threads), `heap_reserve` (room on the heap for a batch
//!   of typed objects), and `Wire`, the encodings.
//! - `list_stream` (feature `kube`): list bodies split into batches of items as their bytes
//!   arrive, so that a list of any size is decoded within a bounded window (JSON and
//!   protobuf), and a batch's decode.

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
