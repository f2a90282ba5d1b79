//! An enveloped list split into its items as its bytes arrive, for a reader that decodes a list
//! response while it streams in instead of holding the whole body.
//!
//! - Bytes go in with [`ListSplitter::push`] in pieces of any size; complete items collect in a
//!   batch, which [`ListSplitter::take_batch`] hands out as an enveloped list of its own (the
//!   list's `apiVersion` and kind, no metadata), so every list decoder reads it.
//! - The splitter holds the batch, the one item being received and nothing else: the body's
//!   other bytes are dropped as soon as they are read.
//! - The list's metadata (`ListMeta`, field 1 of the list) is kept wherever it comes;
//!   [`ListSplitter::finish`] returns it once the body is complete, and fails for a body that
//!   ends inside the envelope, the list or an item.
//! - An item longer than the cap fails the split (naming the item and its byte offset) as soon
//!   as its length is read, before its bytes arrive.

use crate::envelope::{Envelope, MAGIC};
use crate::error::Error;
use crate::list::ListMeta;
use crate::wire::{self, Reader, Value};

/// Items of a list in one piece, as [`ListSplitter::take_batch`] hands them out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListBatch {
    /// An enveloped list of the items (the list's `apiVersion` and kind, empty metadata).
    pub body: Vec<u8>,
    /// How many items it holds.
    pub items: usize,
    /// The position of its first item in the whole list (0 for the list's first item).
    pub first_index: usize,
    /// The byte offset of its first item's field in the whole body.
    pub first_offset: u64,
}

/// Where the splitter is in the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the four magic bytes.
    Magic,
    /// Among the envelope's fields (`typeMeta`, `raw`, `contentEncoding`, `contentType`).
    Envelope,
    /// Inside `raw`, the list message, with this many of its bytes still to come.
    List { left: u64 },
}

/// Splits an enveloped Kubernetes protobuf list into batches of items as its bytes arrive.
///
/// ```
/// use kinformer_protobuf::{ListBuilder, ListMeta, ListSplitter, RawList};
/// use serde_json::json;
///
/// let meta = ListMeta { resource_version: Some("7".into()), ..ListMeta::default() };
/// let mut list = ListBuilder::new("v1", "PodList", &meta).unwrap();
/// for name in ["a", "b", "c"] {
///     list.push(&json!({"metadata": {"name": name}})).unwrap();
/// }
/// let body = list.finish();
/// let mut split = ListSplitter::new(1 << 20);
/// let mut names = Vec::new();
/// for piece in body.chunks(7) {
///     split.push(piece).unwrap();
///     if let Some(batch) = split.take_batch() {
///         let raw = RawList::parse(&batch.body).unwrap();
///         names.extend(raw.items().iter().map(|i| kinformer_protobuf::object_name(i).unwrap().to_owned()));
///     }
/// }
/// assert_eq!(split.finish().unwrap(), meta);
/// assert_eq!(names, ["a", "b", "c"]);
/// ```
#[derive(Debug)]
pub struct ListSplitter {
    state: State,
    /// Bytes received; those from `start` on are not consumed yet (part of one field, and
    /// what waits for the batch to be taken).
    pending: Vec<u8>,
    /// Where the bytes not consumed yet begin in `pending` (the consumed ones are dropped
    /// once they are half of it, so that each byte is moved a bounded number of times).
    start: usize,
    /// The body offset of `pending[0]`.
    offset: u64,
    max_item: usize,
    api_version: String,
    kind: String,
    metadata: ListMeta,
    /// Items seen so far.
    items: usize,
    /// The `items` fields of the batch being collected, as they were on the wire.
    batch: Vec<u8>,
    batch_items: usize,
    batch_first: (usize, u64),
    /// Splitting pauses once the batch holds this many items.
    batch_limit: usize,
}

impl ListSplitter {
    /// A splitter refusing items (and other fields) longer than `max_item` bytes.
    pub fn new(max_item: usize) -> Self {
        Self {
            state: State::Magic,
            pending: Vec::new(),
            start: 0,
            offset: 0,
            max_item,
            api_version: String::new(),
            kind: String::new(),
            metadata: ListMeta::default(),
            items: 0,
            batch: Vec::new(),
            batch_items: 0,
            batch_first: (0, 0),
            batch_limit: usize::MAX,
        }
    }

    /// Pauses splitting once the batch holds `items` items: [`push`](Self::push) keeps the
    /// rest of its bytes, and the next `push` (with more bytes, or none) goes on once the
    /// batch was taken. Unlimited by default.
    #[must_use]
    pub fn with_batch_limit(mut self, items: usize) -> Self {
        self.batch_limit = items.max(1);
        self
    }

    /// True when the batch holds as many items as [`with_batch_limit`](Self::with_batch_limit)
    /// allows: take it before pushing on.
    pub fn is_full(&self) -> bool {
        self.batch_items >= self.batch_limit
    }

    /// Takes the next bytes of the body and splits off every item they complete (up to the
    /// batch limit; the bytes beyond wait for the next call).
    ///
    /// # Errors
    /// Bytes that are not an enveloped list, a field over the cap, broken framing. The
    /// splitter is of no further use after an error.
    pub fn push(&mut self, bytes: &[u8]) -> Result<(), Error> {
        if self.start > 0 && self.start >= self.pending.len() / 2 {
            self.pending.drain(..self.start);
            self.offset += self.start as u64;
            self.start = 0;
        }
        self.pending.extend_from_slice(bytes);
        let mut pos = self.start;
        let result = loop {
            if self.is_full() {
                break Ok(());
            }
            match self.step(pos) {
                Ok(Some(next)) => pos = next,
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            }
        };
        self.start = pos;
        result
    }

    /// Consumes one field (or the magic) at `pos` of `pending` if it is complete: the position
    /// after it, or `None` if more bytes are needed.
    fn step(&mut self, pos: usize) -> Result<Option<usize>, Error> {
        let rest = &self.pending[pos..];
        match self.state {
            State::Magic => {
                if rest.len() < MAGIC.len() {
                    return if MAGIC.starts_with(rest) {
                        Ok(None)
                    } else {
                        Err(Error::MissingMagic)
                    };
                }
                if rest[..MAGIC.len()] != MAGIC {
                    return Err(Error::MissingMagic);
                }
                self.state = State::Envelope;
                Ok(Some(pos + MAGIC.len()))
            }
            State::Envelope => {
                let Some((number, wire_type, header)) = key(rest)? else {
                    return Ok(None);
                };
                if number == 2 {
                    let Some((len, n)) = length(rest, header, wire_type)? else {
                        return Ok(None);
                    };
                    self.state = State::List { left: len };
                    return Ok(Some(pos + header + n));
                }
                let Some(field) = self.whole_field(rest, header, wire_type, "envelope field")?
                else {
                    return Ok(None);
                };
                if number == 1 {
                    let Value::Bytes(type_meta) = Reader::new(&rest[..field]).field()?.1 else {
                        return Err(Error::Invalid("typeMeta of the wrong wire type".into()));
                    };
                    let (api_version, kind) = Envelope::parse_type_meta(type_meta)?;
                    self.api_version = api_version.to_owned();
                    self.kind = kind.to_owned();
                }
                Ok(Some(pos + field))
            }
            State::List { left: 0 } => {
                self.state = State::Envelope;
                Ok(Some(pos))
            }
            State::List { left } => {
                let Some((number, wire_type, header)) = key(rest)? else {
                    return Ok(None);
                };
                let field = if number == 2 {
                    let Some((len, n)) = length(rest, header, wire_type)? else {
                        return Ok(None);
                    };
                    if len > self.max_item as u64 {
                        return Err(Error::Invalid(format!(
                            "list item {} at byte {} is {len} bytes, over the limit of {} bytes",
                            self.items,
                            self.offset + pos as u64,
                            self.max_item
                        )));
                    }
                    let field = header + n + len as usize;
                    if rest.len() < field {
                        return Ok(None);
                    }
                    if self.batch_items == 0 {
                        self.batch_first = (self.items, self.offset + pos as u64);
                    }
                    self.batch.extend_from_slice(&rest[..field]);
                    self.batch_items += 1;
                    self.items += 1;
                    field
                } else {
                    let Some(field) = self.whole_field(rest, header, wire_type, "list field")?
                    else {
                        return Ok(None);
                    };
                    if number == 1 {
                        let Value::Bytes(meta) = Reader::new(&rest[..field]).field()?.1 else {
                            return Err(Error::Invalid(
                                "list metadata of the wrong wire type".into(),
                            ));
                        };
                        self.metadata = crate::raw_list::list_meta(meta)?;
                    }
                    field
                };
                let left = left.checked_sub(field as u64).ok_or_else(|| {
                    Error::Invalid(format!(
                        "list field at byte {} runs past the end of the list",
                        self.offset + pos as u64
                    ))
                })?;
                self.state = State::List { left };
                Ok(Some(pos + field))
            }
        }
    }

    /// The length of the whole field at the start of `rest` (key `header` bytes long) once
    /// all of it is there; `None` before.
    fn whole_field(
        &self,
        rest: &[u8],
        header: usize,
        wire_type: u8,
        what: &str,
    ) -> Result<Option<usize>, Error> {
        let len = match wire_type {
            wire::LEN => {
                let Some((len, n)) = length(rest, header, wire_type)? else {
                    return Ok(None);
                };
                if len > self.max_item as u64 {
                    return Err(Error::Invalid(format!(
                        "{what} at byte {} is {len} bytes, over the limit of {} bytes",
                        self.offset, self.max_item
                    )));
                }
                n + len as usize
            }
            wire::VARINT => match varint(&rest[header..])? {
                Some((_, n)) => n,
                None => return Ok(None),
            },
            wire::FIXED64 => 8,
            wire::FIXED32 => 4,
            w => return Err(Error::Invalid(format!("unsupported wire type {w}"))),
        };
        Ok((rest.len() >= header + len).then_some(header + len))
    }

    /// The items collected since the last batch, if any, as an enveloped list.
    pub fn take_batch(&mut self) -> Option<ListBatch> {
        if self.batch_items == 0 {
            return None;
        }
        let body = Envelope::encode(&self.api_version, &self.kind, &self.batch);
        self.batch.clear();
        let (first_index, first_offset) = self.batch_first;
        Some(ListBatch {
            body,
            items: std::mem::take(&mut self.batch_items),
            first_index,
            first_offset,
        })
    }

    /// How many items wait in the batch.
    pub fn batch_items(&self) -> usize {
        self.batch_items
    }

    /// How many bytes of items wait in the batch.
    pub fn batch_bytes(&self) -> usize {
        self.batch.len()
    }

    /// How many items were split off so far.
    pub fn items(&self) -> usize {
        self.items
    }

    /// How many bytes were read so far.
    pub fn bytes_read(&self) -> u64 {
        self.offset + self.pending.len() as u64
    }

    /// The list's metadata, once the body is complete. Take the last batch first.
    ///
    /// # Errors
    /// A body that ends inside the envelope, the list or an item (naming the item and the
    /// byte offset where it began).
    pub fn finish(&self) -> Result<ListMeta, Error> {
        let unread = self.pending.len() - self.start;
        match self.state {
            State::Envelope if unread == 0 => Ok(self.metadata.clone()),
            State::Magic => Err(Error::Truncated("the body ends before the magic prefix")),
            State::List { left } if left > 0 && unread > 0 => Err(Error::Invalid(format!(
                "the list body ends inside item {} (it began at byte {})",
                self.items,
                self.offset + self.start as u64
            ))),
            _ => Err(Error::Invalid(format!(
                "the list body ends early, at byte {}, after {} items",
                self.bytes_read(),
                self.items
            ))),
        }
    }
}

/// A field key at the start of `bytes`: its number, wire type and length; `None` if more
/// bytes are needed.
fn key(bytes: &[u8]) -> Result<Option<(u32, u8, usize)>, Error> {
    let Some((key, n)) = varint(bytes)? else {
        return Ok(None);
    };
    let number = u32::try_from(key >> 3)
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| Error::Invalid(format!("bad field number in key {key}")))?;
    Ok(Some((number, (key & 7) as u8, n)))
}

/// The length of a length-delimited field whose key is `header` bytes long, and the length's
/// own size; `None` if more bytes are needed.
fn length(bytes: &[u8], header: usize, wire_type: u8) -> Result<Option<(u64, usize)>, Error> {
    if wire_type != wire::LEN {
        return Err(Error::Invalid("a list field of the wrong wire type".into()));
    }
    varint(&bytes[header..])
}

/// A varint at the start of `bytes` and its length; `None` if it is not complete yet.
fn varint(bytes: &[u8]) -> Result<Option<(u64, usize)>, Error> {
    let mut v = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        v |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            return Ok(Some((v, i + 1)));
        }
    }
    if bytes.len() >= 10 {
        return Err(Error::Invalid("varint longer than 10 bytes".into()));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{ListBuilder, RawList};

    fn list(n: usize, meta: &ListMeta) -> Vec<u8> {
        let mut b = ListBuilder::new("v1", "PodList", meta).unwrap();
        for i in 0..n {
            b.push(&json!({"metadata": {"name": format!("pod-{i}")}}))
                .unwrap();
        }
        b.finish()
    }

    fn names(batch: &ListBatch) -> Vec<String> {
        let raw = RawList::parse(&batch.body).unwrap();
        assert_eq!(raw.kind(), "PodList");
        raw.items()
            .iter()
            .map(|i| crate::object_name(i).unwrap().to_owned())
            .collect()
    }

    #[test]
    fn every_piece_size_gives_the_same_items_and_metadata() {
        let meta = ListMeta {
            resource_version: Some("42".into()),
            continue_: Some("tok".into()),
            remaining_item_count: Some(3),
        };
        let body = list(20, &meta);
        for piece in [1, 2, 3, 5, 64, body.len()] {
            let mut split = ListSplitter::new(1 << 20);
            let mut got = Vec::new();
            for chunk in body.chunks(piece) {
                split.push(chunk).unwrap();
                if split.batch_items() >= 6 {
                    got.extend(names(&split.take_batch().unwrap()));
                }
            }
            if let Some(last) = split.take_batch() {
                got.extend(names(&last));
            }
            assert_eq!(split.finish().unwrap(), meta, "pieces of {piece}");
            let want: Vec<String> = (0..20).map(|i| format!("pod-{i}")).collect();
            assert_eq!(got, want, "pieces of {piece}");
        }
    }

    #[test]
    fn a_batch_knows_where_its_first_item_was() {
        let body = list(3, &ListMeta::default());
        let mut split = ListSplitter::new(1 << 20);
        split.push(&body).unwrap();
        let batch = split.take_batch().unwrap();
        assert_eq!((batch.items, batch.first_index), (3, 0));
        let at = batch.first_offset as usize;
        assert_eq!(body[at], 0x12, "the key of field 2, length-delimited");
        assert!(split.take_batch().is_none());
    }

    #[test]
    fn a_body_cut_inside_an_item_names_the_item() {
        let body = list(3, &ListMeta::default());
        let mut split = ListSplitter::new(1 << 20);
        split.push(&body[..body.len() - 12]).unwrap();
        let err = split.finish().unwrap_err().to_string();
        assert!(err.contains("inside item 2"), "{err}");
    }

    #[test]
    fn an_item_over_the_cap_fails_before_its_bytes_arrive() {
        let mut b = ListBuilder::new("v1", "PodList", &ListMeta::default()).unwrap();
        b.push(&json!({"metadata": {"name": "x".repeat(300)}}))
            .unwrap();
        let body = b.finish();
        let mut split = ListSplitter::new(100);
        // The envelope's header and the item's key and length only.
        let err = split.push(&body[..40]).unwrap_err().to_string();
        assert!(
            err.contains("list item 0") && err.contains("over the limit"),
            "{err}"
        );
    }

    #[test]
    fn garbage_is_refused() {
        let mut split = ListSplitter::new(100);
        assert_eq!(split.push(b"{\"items\":[]}"), Err(Error::MissingMagic));
        let split = ListSplitter::new(100);
        assert!(split.finish().is_err(), "an empty body is no list");
    }
}
