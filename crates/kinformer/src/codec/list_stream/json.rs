//! A JSON list body split into its items as its bytes arrive.
//!
//! The splitter follows the body's structure byte by byte (strings and their escapes, nesting),
//! cuts each element of the top-level object's `items` array out as it completes, and keeps
//! everything else of the list (`kind`, `apiVersion`, `metadata`, before or after `items`)
//! with the array emptied, so that the list's metadata is read once the body is complete. It
//! does not parse the items: each batch of them goes to a list decoder as a small list of its
//! own, which reads them and reports any that is not JSON.

use kube_core::ListMeta;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::{ListBatch, SplitError};

/// The most bytes of the list outside its items (its metadata and type) that are kept.
const MAX_HEAD: usize = 1 << 20;

/// Where an element of `items` being received ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Element {
    /// An object or array: when the nesting returns to the array's.
    Container,
    /// A string: when it closes.
    String,
    /// A number, `true`, `false` or `null`: at the next delimiter.
    Bare,
}

/// Splits a JSON list body into batches of items as its bytes arrive (see the module docs).
#[derive(Debug)]
pub(crate) struct JsonListSplitter {
    max_item: usize,
    /// The body offset of the next byte to arrive.
    offset: u64,
    /// Nesting of objects and arrays at the current byte.
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
    /// The value of the current member is the `items` array, and it is open.
    in_items: bool,
    /// The element of `items` being received, if any.
    element: Option<Element>,
    /// The element's bytes received in earlier pushes.
    partial: Vec<u8>,
    /// Where the element began in the body.
    element_offset: u64,
    /// The list without its items' contents.
    head: Vec<u8>,
    /// Items split off so far.
    items: usize,
    batch: ListBatch,
    /// Splitting pauses once the batch holds this many items.
    batch_limit: usize,
}

impl JsonListSplitter {
    /// A splitter refusing items longer than `max_item` bytes, pausing once a batch holds
    /// `batch_limit` items.
    pub(crate) fn new(max_item: usize, batch_limit: usize) -> Self {
        Self {
            max_item,
            offset: 0,
            depth: 0,
            in_string: false,
            escape: false,
            started: false,
            expect_key: false,
            key: Vec::new(),
            in_key: false,
            in_items: false,
            element: None,
            partial: Vec::new(),
            element_offset: 0,
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

    /// Takes the next bytes of the body and splits off every item they complete, until the
    /// batch is full: returns how many of the bytes it took (all of them unless the batch
    /// filled up; push the rest after taking the batch).
    ///
    /// # Errors
    /// A body that is not a JSON object, an item over the cap, a list head over
    /// [`MAX_HEAD`], broken nesting in `items`. The splitter is of no further use then.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Result<usize, SplitError> {
        // Where the current run of bytes kept for the head, or of the current element,
        // began in `bytes`.
        let mut head_from = (!self.in_items).then_some(0);
        let mut element_from = self.element.map(|_| 0);
        let mut i = 0;
        while i < bytes.len() {
            if self.is_full() {
                break;
            }
            let b = bytes[i];
            if self.in_string {
                if self.escape {
                    self.escape = false;
                    i += 1;
                    continue;
                }
                // Jump to the next quote or backslash.
                let Some(at) = memchr::memchr2(b'"', b'\\', &bytes[i..]) else {
                    if self.in_key {
                        self.note_key(&bytes[i..]);
                    }
                    i = bytes.len();
                    break;
                };
                if self.in_key {
                    self.note_key(&bytes[i..i + at]);
                }
                i += at;
                if bytes[i] == b'\\' {
                    self.escape = true;
                } else {
                    self.in_string = false;
                    self.in_key = false;
                    if self.element == Some(Element::String) {
                        self.end_element(bytes, &mut element_from, i + 1)?;
                    }
                }
                i += 1;
                continue;
            }
            if self.element == Some(Element::Bare)
                && matches!(b, b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r')
            {
                self.end_element(bytes, &mut element_from, i)?;
            }
            if self.in_items && self.depth == 2 && self.element.is_none() {
                // Between elements of `items`.
                match b {
                    b' ' | b'\t' | b'\n' | b'\r' | b',' => {}
                    b']' => {
                        self.depth = 1;
                        self.in_items = false;
                        head_from = Some(i);
                    }
                    b'}' => return Err(self.malformed(i, "'}' inside the items array")),
                    _ => {
                        self.element = Some(match b {
                            b'{' | b'[' => Element::Container,
                            b'"' => Element::String,
                            _ => Element::Bare,
                        });
                        self.element_offset = self.offset + i as u64;
                        element_from = Some(i);
                        match b {
                            b'{' | b'[' => self.depth += 1,
                            b'"' => self.in_string = true,
                            _ => {}
                        }
                    }
                }
                i += 1;
                continue;
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
                        // The items array opens: the head keeps `[`, the elements go.
                        self.in_items = true;
                        if let Some(from) = head_from.take() {
                            self.keep_head(&bytes[from..=i])?;
                        }
                    }
                    self.depth += 1;
                }
                b'}' | b']' => {
                    self.depth = self
                        .depth
                        .checked_sub(1)
                        .ok_or_else(|| self.malformed(i, "unbalanced brackets"))?;
                    if self.element == Some(Element::Container) && self.depth == 2 {
                        self.end_element(bytes, &mut element_from, i + 1)?;
                    }
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
            i += 1;
        }
        let taken = i;
        if let Some(from) = element_from {
            self.partial.extend_from_slice(&bytes[from..taken]);
            if self.partial.len() > self.max_item {
                return Err(SplitError::ItemTooLarge {
                    index: self.items,
                    offset: self.element_offset,
                    limit: self.max_item,
                });
            }
        }
        if let Some(from) = head_from {
            self.keep_head(&bytes[from..taken])?;
        }
        self.offset += taken as u64;
        Ok(taken)
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

    /// The element ends before `end` in `bytes`: it joins the batch.
    fn end_element(
        &mut self,
        bytes: &[u8],
        element_from: &mut Option<usize>,
        end: usize,
    ) -> Result<(), SplitError> {
        let from = element_from.take().unwrap_or(end);
        let len = self.partial.len() + (end - from);
        if len > self.max_item {
            return Err(SplitError::ItemTooLarge {
                index: self.items,
                offset: self.element_offset,
                limit: self.max_item,
            });
        }
        let batch = &mut self.batch;
        if batch.items == 0 {
            batch.body.extend_from_slice(b"{\"items\":[");
            batch.first_index = self.items;
            batch.first_offset = self.element_offset;
        } else {
            batch.body.push(b',');
        }
        let start = batch.body.len();
        batch.body.extend_from_slice(&self.partial);
        batch.body.extend_from_slice(&bytes[from..end]);
        batch
            .json_items
            .push((start, batch.body.len(), self.element_offset));
        batch.items += 1;
        self.partial.clear();
        self.element = None;
        self.items += 1;
        Ok(())
    }

    fn malformed(&self, at: usize, what: &str) -> SplitError {
        SplitError::Malformed {
            offset: self.offset + at as u64,
            message: what.to_owned(),
        }
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
        if self.element.is_some() {
            return Err(SplitError::Truncated {
                index: Some(self.items),
                offset: self.element_offset,
                items: self.items,
            });
        }
        if !self.started || self.depth > 0 || self.in_string {
            return Err(SplitError::Truncated {
                index: None,
                offset: self.offset,
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
    fn a_stray_brace_in_the_items_is_malformed() {
        let mut split = JsonListSplitter::new(64, usize::MAX);
        let err = split.push(br#"{"items":[{"a":1}}"#).unwrap_err();
        assert!(
            matches!(err, SplitError::Malformed { offset: 17, .. }),
            "{err:?}"
        );
    }
}
