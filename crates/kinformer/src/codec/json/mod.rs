//! JSON list bodies and watch lines, decoded object by object.
//!
//! - `decode`: a list body (one bad item skipped and reported) and one watch line, with
//!   serde_json or (feature `fast-json`) sonic-rs.
//! - `lines`: the lines of a watch body cut from its chunks as they arrive, each decoded as
//!   an event.

mod decode;
pub(crate) mod lines;

pub(crate) use decode::{JsonDecoder, continue_token_ahead, decode_items};
pub use decode::{decode_list, decode_watch_line};
