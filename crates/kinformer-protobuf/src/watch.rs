//! Watch streams: frames of a 4-byte big-endian length and a `meta.v1.WatchEvent`
//! (`type`, `object` = `RawExtension` whose `raw` is an enveloped object).
//!
//! Kubernetes writes the event itself without the envelope (its streaming serializer is the
//! raw one); an enveloped event is accepted too.

use crate::envelope::{Envelope, MAGIC};
use crate::error::Error;
use crate::wire::{self, Reader, Value};

/// The default largest frame [`FrameReader`] accepts: 64 MiB.
pub const DEFAULT_MAX_FRAME: usize = 64 << 20;

/// One watch event, borrowing from its frame.
///
/// ```
/// use kinformer_protobuf::{WatchEvent, to_vec};
/// use serde_json::json;
///
/// let object = to_vec(&json!({"metadata": {"name": "a"}}), "v1", "ConfigMap").unwrap();
/// let frame = WatchEvent::encode_frame("ADDED", &object);
/// let event = WatchEvent::parse(&frame[4..]).unwrap();
/// assert_eq!(event.event_type, "ADDED");
/// let cm: serde_json::Value = kinformer_protobuf::from_slice(event.object).unwrap();
/// assert_eq!(cm["metadata"]["name"], "a");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchEvent<'a> {
    /// `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK` or `ERROR`.
    pub event_type: &'a str,
    /// The object, enveloped (decode it with [`from_slice`](crate::from_slice)); for `ERROR`,
    /// a `Status`.
    pub object: &'a [u8],
}

impl<'a> WatchEvent<'a> {
    /// Parses one frame's payload (without its length prefix).
    ///
    /// # Errors
    /// When the payload is not a watch event.
    pub fn parse(frame: &'a [u8]) -> Result<Self, Error> {
        let body = if frame.starts_with(&MAGIC) {
            Envelope::parse(frame)?.raw
        } else {
            frame
        };
        let mut event_type = None;
        let mut object: &[u8] = &[];
        let mut r = Reader::new(body);
        while !r.is_empty() {
            match r.field()? {
                (1, Value::Bytes(b)) => {
                    event_type = Some(std::str::from_utf8(b).map_err(|e| {
                        Error::Invalid(format!("watch event type is not UTF-8: {e}"))
                    })?);
                }
                (2, Value::Bytes(ext)) => {
                    let mut e = Reader::new(ext);
                    while !e.is_empty() {
                        if let (1, Value::Bytes(raw)) = e.field()? {
                            object = raw;
                        }
                    }
                }
                (1 | 2, _) => {
                    return Err(Error::Invalid(
                        "watch event field of the wrong wire type".into(),
                    ));
                }
                _ => {}
            }
        }
        let event_type =
            event_type.ok_or_else(|| Error::Invalid("watch event without a type".into()))?;
        Ok(WatchEvent { event_type, object })
    }

    /// A whole frame (length prefix included) for an event of `event_type` about `object`
    /// (enveloped, as [`to_vec`](crate::to_vec) makes it).
    pub fn encode_frame(event_type: &str, object: &[u8]) -> Vec<u8> {
        let mut ext = Vec::with_capacity(object.len() + 6);
        wire::put_bytes(&mut ext, 1, object);
        let mut out = Vec::with_capacity(ext.len() + event_type.len() + 16);
        out.extend_from_slice(&[0; 4]);
        wire::put_bytes(&mut out, 1, event_type.as_bytes());
        wire::put_bytes(&mut out, 2, &ext);
        let len = u32::try_from(out.len() - 4).unwrap_or(u32::MAX);
        out[..4].copy_from_slice(&len.to_be_bytes());
        out
    }
}

/// Splits a byte stream into frames, whatever the chunking.
///
/// ```
/// use kinformer_protobuf::FrameReader;
///
/// let mut frames = FrameReader::default();
/// frames.push(&[0, 0, 0, 3, b'a']);
/// assert!(frames.next_frame().is_none()); // incomplete
/// frames.push(b"bc");
/// assert_eq!(frames.next_frame().unwrap().unwrap(), b"abc");
/// assert!(frames.is_empty());
/// ```
#[derive(Debug)]
pub struct FrameReader {
    buf: Vec<u8>,
    start: usize,
    max_frame: usize,
}

impl Default for FrameReader {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_FRAME)
    }
}

impl FrameReader {
    /// A reader refusing frames longer than `max_frame` bytes.
    pub fn new(max_frame: usize) -> Self {
        Self {
            buf: Vec::new(),
            start: 0,
            max_frame,
        }
    }

    /// Appends received bytes.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.start > 0 && self.start * 2 >= self.buf.len() {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// True if no bytes are waiting (the stream ended on a frame boundary).
    pub fn is_empty(&self) -> bool {
        self.start >= self.buf.len()
    }

    /// The next complete frame's payload, if one has arrived, borrowed from the reader's
    /// buffer (no copy per frame).
    ///
    /// # Errors
    /// [`Error::FrameTooLarge`] when a frame announces more than the limit; the reader is then
    /// unusable (the stream cannot be resynchronised).
    pub fn next_frame(&mut self) -> Option<Result<&[u8], Error>> {
        let rest = self.buf.get(self.start..)?;
        let header: [u8; 4] = rest.get(..4)?.try_into().ok()?;
        let len = u32::from_be_bytes(header) as usize;
        if len > self.max_frame {
            return Some(Err(Error::FrameTooLarge {
                len,
                limit: self.max_frame,
            }));
        }
        let frame = rest.get(4..4 + len)?;
        self.start += 4 + len;
        Some(Ok(frame))
    }
}
