//! The Kubernetes protobuf envelope: the magic `k8s\0`, then a `runtime.Unknown` holding the
//! object's `apiVersion` and `kind` (`typeMeta`, field 1) and its message bytes (`raw`, 2).

use crate::error::Error;
use crate::kinds;
use crate::schema::{MessageId, Schema};
use crate::wire::{self, Reader, Value};

/// The four bytes every enveloped Kubernetes protobuf object starts with.
pub const MAGIC: [u8; 4] = *b"k8s\0";

/// A parsed envelope, borrowing from the bytes.
///
/// ```
/// use kinformer_protobuf::Envelope;
///
/// let bytes = Envelope::encode("v1", "ConfigMap", b"");
/// let env = Envelope::parse(&bytes).unwrap();
/// assert_eq!((env.api_version, env.kind, env.raw), ("v1", "ConfigMap", &b""[..]));
/// assert!(Envelope::parse(b"{}").is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Envelope<'a> {
    /// `typeMeta.apiVersion`, e.g. `apps/v1`.
    pub api_version: &'a str,
    /// `typeMeta.kind`, e.g. `Deployment`.
    pub kind: &'a str,
    /// The object's message bytes.
    pub raw: &'a [u8],
    /// `contentEncoding`: empty (the identity) in everything Kubernetes sends.
    pub content_encoding: &'a str,
    /// `contentType`: empty, or the protobuf content type.
    pub content_type: &'a str,
}

fn text(v: Value<'_>) -> Result<&str, Error> {
    match v {
        Value::Bytes(b) => std::str::from_utf8(b)
            .map_err(|e| Error::Invalid(format!("envelope string is not UTF-8: {e}"))),
        _ => Err(Error::Invalid(
            "envelope string field of the wrong wire type".into(),
        )),
    }
}

impl<'a> Envelope<'a> {
    /// Parses `k8s\0` + `runtime.Unknown`.
    ///
    /// # Errors
    /// [`Error::MissingMagic`] without the prefix; [`Error::Invalid`] or
    /// [`Error::Truncated`] for malformed bytes.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, Error> {
        let body = bytes.strip_prefix(&MAGIC[..]).ok_or(Error::MissingMagic)?;
        let mut env = Envelope {
            api_version: "",
            kind: "",
            raw: &[],
            content_encoding: "",
            content_type: "",
        };
        let mut r = Reader::new(body);
        while !r.is_empty() {
            match r.field()? {
                (1, Value::Bytes(type_meta)) => {
                    (env.api_version, env.kind) = Self::parse_type_meta(type_meta)?;
                }
                (2, Value::Bytes(raw)) => env.raw = raw,
                (3, v) => env.content_encoding = text(v)?,
                (4, v) => env.content_type = text(v)?,
                (1 | 2, _) => {
                    return Err(Error::Invalid(
                        "envelope field of the wrong wire type".into(),
                    ));
                }
                _ => {}
            }
        }
        Ok(env)
    }

    /// A `typeMeta` message's `apiVersion` and `kind`.
    pub(crate) fn parse_type_meta(type_meta: &'a [u8]) -> Result<(&'a str, &'a str), Error> {
        let (mut api_version, mut kind) = ("", "");
        let mut t = Reader::new(type_meta);
        while !t.is_empty() {
            match t.field()? {
                (1, v) => api_version = text(v)?,
                (2, v) => kind = text(v)?,
                _ => {}
            }
        }
        Ok((api_version, kind))
    }

    /// The envelope around `raw`, an object of `api_version` and `kind`.
    pub fn encode(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
        let mut out = Self::head_with(api_version, kind, raw.len(), raw.len() + Self::TAIL.len());
        out.extend_from_slice(raw);
        out.extend_from_slice(Self::TAIL);
        debug_assert_eq!(out.len(), out.capacity());
        out
    }

    /// What follows the object in an envelope: `contentEncoding` and `contentType`, empty, as
    /// Kubernetes writes them.
    pub(crate) const TAIL: &'static [u8] = &[3 << 3 | wire::LEN, 0, 4 << 3 | wire::LEN, 0];

    /// The envelope up to its object, for an object of `raw_len` bytes that follows it (then
    /// [`TAIL`](Self::TAIL)): for a list written in pieces.
    pub(crate) fn head(api_version: &str, kind: &str, raw_len: usize) -> Vec<u8> {
        Self::head_with(api_version, kind, raw_len, 0)
    }

    /// [`head`](Self::head), with room for `more` bytes after it.
    fn head_with(api_version: &str, kind: &str, raw_len: usize, more: usize) -> Vec<u8> {
        let type_meta =
            wire::bytes_field_len(api_version.len()) + wire::bytes_field_len(kind.len());
        let raw_key = wire::bytes_field_len(raw_len) - raw_len;
        // One allocation of exactly the envelope's size, so that a caller keeping it as a
        // boxed slice does not reallocate it.
        let mut out =
            Vec::with_capacity(MAGIC.len() + wire::bytes_field_len(type_meta) + raw_key + more);
        out.extend_from_slice(&MAGIC);
        wire::put_key(&mut out, 1, wire::LEN);
        wire::put_varint(&mut out, type_meta as u64);
        wire::put_bytes(&mut out, 1, api_version.as_bytes());
        wire::put_bytes(&mut out, 2, kind.as_bytes());
        wire::put_key(&mut out, 2, wire::LEN);
        wire::put_varint(&mut out, raw_len as u64);
        out
    }

    /// The schema message of this envelope's kind.
    pub(crate) fn message_id(&self, schema: &Schema) -> Result<MessageId, Error> {
        if !self.content_encoding.is_empty() {
            return Err(Error::ContentEncoding(self.content_encoding.to_owned()));
        }
        kinds::message_for(schema, self.api_version, self.kind).ok_or_else(|| Error::UnknownKind {
            api_version: self.api_version.to_owned(),
            kind: self.kind.to_owned(),
        })
    }
}
