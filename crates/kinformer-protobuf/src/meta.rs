//! Reading an object's metadata without decoding the object: `ObjectMeta` is field 1 of every
//! top-level Kubernetes message.

use crate::wire::{Reader, Value};

/// The bytes of field `number` (first occurrence) of a message.
fn bytes_field(message: &[u8], number: u32) -> Option<&[u8]> {
    let mut r = Reader::new(message);
    while !r.is_empty() {
        match r.field().ok()? {
            (n, Value::Bytes(b)) if n == number => return Some(b),
            _ => {}
        }
    }
    None
}

/// `metadata.name` of a top-level object's message bytes, if present and valid.
pub(crate) fn object_name(message: &[u8]) -> Option<&str> {
    let meta = bytes_field(message, 1)?;
    std::str::from_utf8(bytes_field(meta, 1)?).ok()
}
