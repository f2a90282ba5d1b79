//! A JSON list body split into its items as its bytes arrive.
//!
//! Outside the top-level object's `items` array the splitter follows the body byte by byte
//! (strings and their escapes, nesting) and keeps those bytes (`kind`, `apiVersion`,
//! `metadata`, before or after `items`) with the array emptied, so that the list's metadata is
//! read once the body is complete. Each element of `items` is read by serde_json's validating
//! parser as a raw value, in one pass: its end is found and its syntax checked at once, so the
//! items handed out are JSON (a `Lazy` keeps them as they are and parses only their metadata).
//! An element that has not arrived whole is parsed again once about twice as many of its
//! bytes are there, so the parses of a large item add up to a few times its length.

use kube_core::ListMeta;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::{ListBatch, SplitError};

/// The most bytes of the list outside its items (its metadata and type) that are kept.
const MAX_HEAD: usize = 1 << 20;

/// An element not yet whole is parsed again with every push below this many bytes, and once
/// twice as many bytes are there above it.
const RETRY_DOUBLING_ABOVE: usize = 64 << 10;

/// Splits a JSON list body into batches of items as its bytes arrive (see the module docs).
#[derive(Debug)]
pub(crate) struct JsonListSplitter {
    max_item: usize,
    /// Bytes received; those from `start` on are not consumed yet: the element being
    /// received, and whatever arrived after it or waits for the batch to be taken.
    pending: Vec<u8>,
    /// Where the bytes not consumed yet begin in `pending` (the consumed ones are dropped
    /// once they are half of it, so that each byte is moved a bounded number of times).
    start: usize,
    /// The body offset of `pending[0]`.
    offset: u64,
    /// Parse the element at the start of `pending` again once this many bytes are there.
    retry_at: usize,
    /// Nesting of objects and arrays outside the items.
    depth: u32,
    in_string: bool,
    escape: bool,
    /// The top-level value has begun (with `{`).
    started: bool,
    /// At depth 1, the next string is a key (after `{` or `,`), not a value.
    expect_key: bool,
    /// At depth 1, the current key's first bytes (enough to tell `items`).
    key: Vec<u8>,
    /// Reading the key string at depth 1.
    in_key: bool,
    /// Inside the `items` array, between or at its elements.
    in_items: bool,
    /// The list without its items.
    head: Vec<u8>,
    /// Items split off so far.
    items: usize,
    batch: ListBatch,
    /// Splitting pauses once the batch holds this many items.
    batch_limit: usize,
}

/// What the element at the start of some bytes is.
enum Element {
    /// A whole value, this many bytes long.
    Whole(usize),
    /// Not all there yet.
    Partial,
}

impl JsonListSplitter {
    /// A splitter refusing items longer than `max_item` bytes, pausing once a batch holds
    /// `batch_limit` items.
    pub(crate) fn new(max_item: usize, batch_limit: usize) -> Self {
        Self {
            max_item,
            pending: Vec::new(),
            start: 0,
            offset: 0,
            retry_at: 0,
            depth: 0,
            in_string: false,
            escape: false,
            started: false,
            expect_key: false,
            key: Vec::new(),
            in_key: false,
            in_items: false,
            head: Vec::new(),
            items: 0,
            batch: ListBatch::default(),
            batch_limit: batch_limit.max(1),
        }
    }

    /// Items split off so far.
    pub(crate) fn items(&self) -> usize {
        self.items
    }

    /// Items and bytes waiting in the batch.
    pub(crate) fn batch_size(&self) -> (usize, usize) {
        (self.batch.items, self.batch.body.len())
    }

    /// True when the batch holds its limit of items: take it before pushing on.
    pub(crate) fn is_full(&self) -> bool {
        self.batch.items >= self.batch_limit
    }

    /// Takes the next bytes of the body (all of them: the count is returned) and splits off
    /// every item they complete, until the batch is full; then the rest waits for the next
    /// push (of more bytes, or none) after the batch was taken.
    ///
    /// # Errors
    /// A body that is not a JSON object, an item that is not JSON or is over the cap, a list
    /// head over [`MAX_HEAD`], a stray `}` in `items`. The splitter is of no further use then.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Result<usize, SplitError> {
        if self.start > 0 && self.start >= self.pending.len() / 2 {
            self.pending.drain(..self.start);
            self.offset += self.start as u64;
            self.start = 0;
        }
        self.pending.extend_from_slice(bytes);
        let buf = std::mem::take(&mut self.pending);
        let mut pos = self.start;
        let result = self.split(&buf, &mut pos);
        self.pending = buf;
        self.start = pos;
        result.map(|()| bytes.len())
    }

    /// Splits `buf` from `pos` on, as far as it can; `pos` ends where it stopped.
    fn split(&mut self, buf: &[u8], pos: &mut usize) -> Result<(), SplitError> {
        // Where the current run of head bytes began.
        let mut head_from = (!self.in_items).then_some(*pos);
        let result = loop {
            if *pos >= buf.len() {
                break Ok(());
            }
            if self.in_items {
                match self.items_step(buf, pos) {
                    Ok(true) => {}
                    Ok(false) => break Ok(()),
                    Err(e) => break Err(e),
                }
                if !self.in_items {
                    head_from = Some(*pos - 1);
                }
                continue;
            }
            match self.head_step(buf, pos) {
                Ok(()) => {}
                Err(e) => break Err(e),
            }
            if self.in_items {
                // The items array opened: the head keeps its `[`.
                if let Some(from) = head_from.take()
                    && let Err(e) = self.keep_head(&buf[from..*pos])
                {
                    break Err(e);
                }
            }
        };
        if let Some(from) = head_from
            && !self.in_items
        {
            self.keep_head(&buf[from..*pos])?;
        }
        result
    }

    /// One step between or at the elements of `items`: skips a delimiter, closes the array,
    /// or splits off an element. `false` when it must wait (more bytes, or the batch taken).
    fn items_step(&mut self, buf: &[u8], pos: &mut usize) -> Result<bool, SplitError> {
        let at = self.offset + *pos as u64;
        match buf[*pos] {
            b' ' | b'\t' | b'\n' | b'\r' | b',' => {
                *pos += 1;
                return Ok(true);
            }
            b']' => {
                self.in_items = false;
                self.depth = 1;
                *pos += 1;
                return Ok(true);
            }
            b'}' => {
                return Err(SplitError::Malformed {
                    offset: at,
                    message: "'}' inside the items array".into(),
                });
            }
            _ => {}
        }
        if self.is_full() {
            return Ok(false);
        }
        let available = buf.len() - *pos;
        if available < self.retry_at {
            return Ok(false);
        }
        match self.element(&buf[*pos..], at)? {
            Element::Whole(len) if len > self.max_item => Err(self.too_large(at)),
            Element::Whole(len) => {
                self.emit(&buf[*pos..*pos + len], at);
                *pos += len;
                self.retry_at = 0;
                Ok(true)
            }
            Element::Partial if available > self.max_item => Err(self.too_large(at)),
            Element::Partial => {
                // Small elements are parsed again with the next bytes; large ones once about
                // twice as many bytes are there, so their parses add up to a few times their
                // length (see `end_of_body` for the last one).
                self.retry_at = if available < RETRY_DOUBLING_ABOVE {
                    available + 1
                } else {
                    available.saturating_mul(2)
                };
                Ok(false)
            }
        }
    }

    /// The element at the start of `bytes` (body offset `at`): parsed as a raw JSON value.
    fn element(&self, bytes: &[u8], at: u64) -> Result<Element, SplitError> {
        let mut de = serde_json::Deserializer::from_slice(bytes);
        match <&RawValue>::deserialize(&mut de) {
            Ok(raw) => {
                let len = raw.get().len();
                // A number, `true`, `false` or `null` ending at the end of what arrived may
                // go on in the next bytes.
                let delimited = matches!(bytes[0], b'{' | b'[' | b'"');
                if len == bytes.len() && !delimited {
                    Ok(Element::Partial)
                } else {
                    Ok(Element::Whole(len))
                }
            }
            Err(e) if e.is_eof() => Ok(Element::Partial),
            Err(e) => Err(SplitError::Malformed {
                offset: at,
                message: format!("list item {} is not JSON: {e}", self.items),
            }),
        }
    }

    fn too_large(&self, at: u64) -> SplitError {
        SplitError::ItemTooLarge {
            index: self.items,
            offset: at,
            limit: self.max_item,
        }
    }

    /// Adds an element that began at body offset `at` to the batch.
    fn emit(&mut self, element: &[u8], at: u64) {
        let batch = &mut self.batch;
        if batch.items == 0 {
            batch.body.extend_from_slice(b"{\"items\":[");
            batch.first_index = self.items;
            batch.first_offset = at;
        } else {
            batch.body.push(b',');
        }
        let start = batch.body.len();
        batch.body.extend_from_slice(element);
        batch.json_items.push((start, batch.body.len(), at));
        batch.items += 1;
        self.items += 1;
    }

    /// One step of the list outside its items: a byte, or a run of a string's bytes.
    fn head_step(&mut self, buf: &[u8], pos: &mut usize) -> Result<(), SplitError> {
        let i = *pos;
        let b = buf[i];
        if self.in_string {
            if self.escape {
                self.escape = false;
                *pos += 1;
                return Ok(());
            }
            // Jump to the next quote or backslash.
            let Some(at) = memchr::memchr2(b'"', b'\\', &buf[i..]) else {
                if self.in_key {
                    self.note_key(&buf[i..]);
                }
                *pos = buf.len();
                return Ok(());
            };
            if self.in_key {
                self.note_key(&buf[i..i + at]);
            }
            if buf[i + at] == b'\\' {
                self.escape = true;
            } else {
                self.in_string = false;
                self.in_key = false;
            }
            *pos = i + at + 1;
            return Ok(());
        }
        match b {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.expect_key {
                    self.in_key = true;
                    self.key.clear();
                }
            }
            b'{' | b'[' => {
                if self.depth == 0 {
                    if self.started || b != b'{' {
                        return Err(self.malformed(i, "the list is not one JSON object"));
                    }
                    self.started = true;
                    self.expect_key = true;
                } else if self.depth == 1 && b == b'[' && self.key == b"items" {
                    self.in_items = true;
                }
                self.depth += 1;
            }
            b'}' | b']' => {
                self.depth = self
                    .depth
                    .checked_sub(1)
                    .ok_or_else(|| self.malformed(i, "unbalanced brackets"))?;
            }
            b':' if self.depth == 1 => self.expect_key = false,
            b',' if self.depth == 1 => {
                self.expect_key = true;
                self.key.clear();
            }
            b' ' | b'\t' | b'\n' | b'\r' => {}
            _ if self.depth == 0 => {
                return Err(self.malformed(i, "the list is not one JSON object"));
            }
            _ => {}
        }
        *pos = i + 1;
        Ok(())
    }

    /// Records bytes of the current key (only its first few matter).
    fn note_key(&mut self, bytes: &[u8]) {
        let room = 8usize.saturating_sub(self.key.len());
        self.key.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    fn keep_head(&mut self, bytes: &[u8]) -> Result<(), SplitError> {
        self.head.extend_from_slice(bytes);
        if self.head.len() > MAX_HEAD {
            return Err(SplitError::Malformed {
                offset: self.offset,
                message: format!("the list's fields other than items exceed {MAX_HEAD} bytes"),
            });
        }
        Ok(())
    }

    fn malformed(&self, at: usize, what: &str) -> SplitError {
        SplitError::Malformed {
            offset: self.offset + at as u64,
            message: what.to_owned(),
        }
    }

    /// The body is complete: splits what waited for more bytes (until the batch is full:
    /// take it and call again).
    ///
    /// # Errors
    /// As [`push`](Self::push).
    pub(crate) fn end_of_body(&mut self) -> Result<(), SplitError> {
        self.retry_at = 0;
        self.push(&[]).map(drop)
    }

    /// The items collected since the last batch, if any, as a JSON list of their own.
    pub(crate) fn take_batch(&mut self) -> Option<ListBatch> {
        if self.batch.items == 0 {
            return None;
        }
        let mut batch = std::mem::take(&mut self.batch);
        batch.body.extend_from_slice(b"]}");
        Some(batch)
    }

    /// The list's metadata, once the body is complete. Take the last batch first.
    ///
    /// # Errors
    /// A body that ends inside an item (naming it) or anywhere before the list's end; a list
    /// whose fields other than `items` are not valid JSON.
    pub(crate) fn finish(&self) -> Result<ListMeta, SplitError> {
        let end = self.offset + self.pending.len() as u64;
        if self.in_items {
            let rest = &self.pending[self.start..];
            let element = rest
                .iter()
                .position(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b','));
            return Err(SplitError::Truncated {
                index: element.map(|_| self.items),
                offset: element.map_or(end, |at| self.offset + (self.start + at) as u64),
                items: self.items,
            });
        }
        if !self.started || self.depth > 0 || self.in_string {
            return Err(SplitError::Truncated {
                index: None,
                offset: end,
                items: self.items,
            });
        }
        #[derive(Deserialize)]
        struct Head<'a> {
            #[serde(default)]
            metadata: ListMeta,
            #[serde(borrow, default)]
            items: Option<Vec<&'a RawValue>>,
        }
        let head: Head<'_> =
            serde_json::from_slice(&self.head).map_err(|e| SplitError::Malformed {
                offset: self.offset,
                message: format!("the list's fields other than items: {e}"),
            })?;
        if head.items.is_some_and(|i| !i.is_empty()) {
            // A key spelled with escapes: its items were not split off.
            return Err(SplitError::Malformed {
                offset: self.offset,
                message: "the list's items were not found where they were expected".into(),
            });
        }
        Ok(head.metadata)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn split_all(body: &[u8], piece: usize, batch: usize) -> (Vec<Value>, ListMeta) {
        let mut split = JsonListSplitter::new(1 << 20, usize::MAX);
        let mut items = Vec::new();
        let mut take = |b: ListBatch| {
            let list: Value = serde_json::from_slice(&b.body).unwrap();
            let got = list["items"].as_array().unwrap().clone();
            assert_eq!(got.len(), b.items);
            for (k, (start, end, _)) in b.json_items.iter().enumerate() {
                let one: Value = serde_json::from_slice(&b.body[*start..*end]).unwrap();
                assert_eq!(one, got[k]);
            }
            items.extend(got);
        };
        for chunk in body.chunks(piece) {
            split.push(chunk).unwrap();
            if split.batch_size().0 >= batch {
                take(split.take_batch().unwrap());
            }
        }
        split.end_of_body().unwrap();
        if let Some(b) = split.take_batch() {
            take(b);
        }
        (items, split.finish().unwrap())
    }

    #[test]
    fn items_and_metadata_whatever_the_pieces() {
        let list = json!({
            "kind": "PodList",
            "apiVersion": "v1",
            "metadata": {"resourceVersion": "12", "continue": "tok"},
            "items": [
                {"metadata": {"name": "a", "annotations": {"q": "a \"quoted\" ] } [ {", "e": "\\"}}},
                {"metadata": {"name": "b"}, "spec": {"containers": [{"name": "c", "args": ["x", "]"]}]}},
                "a string item", 7, null, [1, [2]], true
            ]
        });
        let body = serde_json::to_vec_pretty(&list).unwrap();
        for piece in [1, 2, 3, 7, 64, body.len()] {
            for batch in [1, 3, 100] {
                let (items, meta) = split_all(&body, piece, batch);
                assert_eq!(&items, list["items"].as_array().unwrap(), "{piece}/{batch}");
                assert_eq!(meta.resource_version.as_deref(), Some("12"));
                assert_eq!(meta.continue_.as_deref(), Some("tok"));
            }
        }
    }

    #[test]
    fn metadata_after_the_items_is_read_too() {
        let body = br#"{"items":[{"metadata":{"name":"a"}}],"metadata":{"resourceVersion":"9"},"kind":"PodList"}"#;
        let (items, meta) = split_all(body, 5, 10);
        assert_eq!(items.len(), 1);
        assert_eq!(meta.resource_version.as_deref(), Some("9"));
    }

    #[test]
    fn an_items_member_inside_metadata_is_not_the_list() {
        let body = br#"{"metadata":{"items":[1,2],"resourceVersion":"3"},"items":[{"a":1}]}"#;
        let (items, meta) = split_all(body, 4, 10);
        assert_eq!(items, [json!({"a": 1})]);
        assert_eq!(meta.resource_version.as_deref(), Some("3"));
    }

    #[test]
    fn an_empty_or_missing_items_array_is_an_empty_list() {
        for body in [
            &br#"{"metadata":{"resourceVersion":"4"},"items":[]}"#[..],
            br#"{"metadata":{"resourceVersion":"4"}}"#,
            br#"{"metadata":{"resourceVersion":"4"},"items":null}"#,
        ] {
            let (items, meta) = split_all(body, 3, 10);
            assert!(items.is_empty());
            assert_eq!(meta.resource_version.as_deref(), Some("4"));
        }
    }

    #[test]
    fn a_body_cut_inside_an_item_names_the_item_and_its_offset() {
        let body = br#"{"metadata":{},"items":[{"a":1},{"b":"xx"#;
        let mut split = JsonListSplitter::new(1 << 20, usize::MAX);
        split.push(body).unwrap();
        let err = split.finish().unwrap_err();
        assert_eq!(
            err,
            SplitError::Truncated {
                index: Some(1),
                offset: 32,
                items: 1
            }
        );
        assert_eq!(&body[32..33], b"{");
    }

    #[test]
    fn a_body_cut_between_items_or_in_the_head_is_truncated() {
        for body in [
            &br#"{"metadata":{},"items":[{"a":1},"#[..],
            br#"{"metadata":{"resourceV"#,
            b"",
        ] {
            let mut split = JsonListSplitter::new(1 << 20, usize::MAX);
            split.push(body).unwrap();
            assert!(
                matches!(
                    split.finish(),
                    Err(SplitError::Truncated { index: None, .. })
                ),
                "{body:?}"
            );
        }
    }

    #[test]
    fn an_item_over_the_cap_fails_while_it_arrives() {
        let mut split = JsonListSplitter::new(16, usize::MAX);
        split.push(br#"{"items":[{"a":1},{"b":""#).unwrap();
        let err = split.push(&[b'x'; 32]).unwrap_err();
        assert_eq!(
            err,
            SplitError::ItemTooLarge {
                index: 1,
                offset: 18,
                limit: 16
            }
        );
    }

    #[test]
    fn what_is_not_an_object_is_refused_at_once() {
        for body in [&b"[1,2]"[..], b"\"x\"", b"nope", b"{} {}"] {
            let mut split = JsonListSplitter::new(64, usize::MAX);
            let r = split.push(body).and_then(|_| split.finish().map(drop));
            assert!(r.is_err(), "{:?}", String::from_utf8_lossy(body));
        }
    }

    #[test]
    fn an_item_that_is_not_json_fails_naming_it() {
        let mut split = JsonListSplitter::new(64, usize::MAX);
        let err = split
            .push(br#"{"items":[{"a":1}, {"b":tru}]}"#)
            .unwrap_err();
        assert!(
            matches!(&err, SplitError::Malformed { offset: 19, message } if message.contains("list item 1 is not JSON")),
            "{err:?}"
        );
    }

    #[test]
    fn a_stray_brace_in_the_items_is_malformed() {
        let mut split = JsonListSplitter::new(64, usize::MAX);
        let err = split.push(br#"{"items":[{"a":1}}"#).unwrap_err();
        assert!(
            matches!(err, SplitError::Malformed { offset: 17, .. }),
            "{err:?}"
        );
    }
}
