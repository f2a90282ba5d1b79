//! List responses split into batches of items as their bytes arrive, JSON and protobuf alike.
//!
//! A real API server answers a list at `resourceVersion=0` from its watch cache in one
//! response, whatever `limit` says: hundreds of MB for a large cluster. [`ListSplit`] takes
//! such a body in pieces as they arrive and hands out its items in batches, each a small list
//! body of its own that the ordinary list decoders read; the list's metadata comes at the end
//! ([`ListSplit::finish`]), since a JSON list may carry it after its items.
//!
//! Properties:
//! - **Bounded**: the splitter holds the batch being collected, the one item being received
//!   and the list's few other fields; every other byte is dropped once read.
//! - **Exact**: the items of the batches are the items of the body, in order, byte for byte;
//!   a body that ends early, an item over the cap, or bytes that are not a list fail the split
//!   with a [`SplitError`] naming the item (its position in the list) and its byte offset.
//! - **No decoding**: items are cut out, not parsed; a batch's decoder reports an item that
//!   does not decode, as it would in a whole body.

mod json;

use kube_core::ListMeta;
use serde::de::DeserializeOwned;

use json::JsonListSplitter;

use crate::codec::{DecodeError, ListWatchError, ObjectList};

/// The default cap on one item's bytes.
pub(crate) const DEFAULT_MAX_ITEM: usize = 64 << 20;

/// Items of a list in one piece: a list body of their own, in the list's encoding.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ListBatch {
    /// A list of the items (`{"items":[…]}`, or an enveloped protobuf list without metadata).
    pub(crate) body: Vec<u8>,
    /// How many items it holds.
    pub(crate) items: usize,
    /// The position of its first item in the whole list.
    pub(crate) first_index: usize,
    /// The byte offset of its first item in the whole body.
    pub(crate) first_offset: u64,
    /// JSON only: each item's start and end in `body` and its offset in the whole body.
    pub(crate) json_items: Vec<(usize, usize, u64)>,
}

/// Why a list body could not be split.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SplitError {
    /// The body ended early: inside item `index` (which began at `offset`), or elsewhere
    /// (`index` `None`, `offset` where it ended).
    #[error("{}", truncated(*index, *offset, *items))]
    Truncated {
        /// The item it ended in, if it did.
        index: Option<usize>,
        /// Where that item began, or where the body ended.
        offset: u64,
        /// How many items came complete.
        items: usize,
    },
    /// Item `index`, which began at `offset`, is longer than `limit` bytes.
    #[error("list item {index} (at byte {offset}) is longer than the limit of {limit} bytes")]
    ItemTooLarge {
        /// The item's position in the list.
        index: usize,
        /// Where it began.
        offset: u64,
        /// The cap.
        limit: usize,
    },
    /// The bytes are not a list of this encoding.
    #[error("the list body is malformed at byte {offset}: {message}")]
    Malformed {
        /// Where it was noticed.
        offset: u64,
        /// What is wrong.
        message: String,
    },
}

fn truncated(index: Option<usize>, offset: u64, items: usize) -> String {
    match index {
        Some(index) => format!(
            "the list body ends inside item {index} (which began at byte {offset}); \
             {items} items came complete"
        ),
        None => format!("the list body ends early, at byte {offset}, after {items} complete items"),
    }
}

/// A list's metadata as its complete body gives it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ListEnd {
    /// `metadata.resourceVersion`.
    pub(crate) resource_version: String,
    /// `metadata.continue`, if not empty.
    pub(crate) continue_token: Option<String>,
    /// `metadata.remainingItemCount`.
    pub(crate) remaining_item_count: Option<i64>,
}

/// A list body's encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListFormat {
    /// JSON.
    Json,
    /// Kubernetes protobuf (`k8s\0` + an enveloped list).
    #[cfg(feature = "protobuf")]
    Protobuf,
}

/// Splits a list body into batches of items as its bytes arrive (see the module docs).
#[derive(Debug)]
pub(crate) enum ListSplit {
    /// A JSON body.
    Json(JsonListSplitter),
    /// A protobuf body.
    #[cfg(feature = "protobuf")]
    Protobuf(kinformer_protobuf::ListSplitter),
}

impl ListSplit {
    /// A splitter for a body in `format`, refusing items over `max_item` bytes, whose batches
    /// hold at most `batch_limit` items.
    pub(crate) fn new(format: ListFormat, max_item: usize, batch_limit: usize) -> Self {
        match format {
            ListFormat::Json => ListSplit::Json(JsonListSplitter::new(max_item, batch_limit)),
            #[cfg(feature = "protobuf")]
            ListFormat::Protobuf => ListSplit::Protobuf(
                kinformer_protobuf::ListSplitter::new(max_item).with_batch_limit(batch_limit),
            ),
        }
    }

    /// Takes the body's next bytes, splitting until the batch is full: returns how many of
    /// them it took. Once the batch is taken, push the rest (or, if all were taken, nothing:
    /// a splitter may keep bytes it took to split later).
    ///
    /// # Errors
    /// See [`SplitError`]; the split is over then.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Result<usize, SplitError> {
        match self {
            ListSplit::Json(s) => s.push(bytes),
            #[cfg(feature = "protobuf")]
            ListSplit::Protobuf(s) => s
                .push(bytes)
                .map(|()| bytes.len())
                .map_err(|e| protobuf_error(s, e)),
        }
    }

    /// The body is complete: splits what waited for more of it (until the batch is full:
    /// take the batch and call again, as long as [`is_full`](Self::is_full) says so).
    ///
    /// # Errors
    /// See [`SplitError`].
    pub(crate) fn end_of_body(&mut self) -> Result<(), SplitError> {
        match self {
            ListSplit::Json(s) => s.end_of_body(),
            #[cfg(feature = "protobuf")]
            ListSplit::Protobuf(s) => s.push(&[]).map_err(|e| protobuf_error(s, e)),
        }
    }

    /// True when the batch holds its limit of items.
    pub(crate) fn is_full(&self) -> bool {
        match self {
            ListSplit::Json(s) => s.is_full(),
            #[cfg(feature = "protobuf")]
            ListSplit::Protobuf(s) => s.is_full(),
        }
    }

    /// Items and bytes waiting in the batch being collected.
    pub(crate) fn batch_size(&self) -> (usize, usize) {
        match self {
            ListSplit::Json(s) => s.batch_size(),
            #[cfg(feature = "protobuf")]
            ListSplit::Protobuf(s) => (s.batch_items(), s.batch_bytes()),
        }
    }

    /// Items split off so far.
    pub(crate) fn items(&self) -> usize {
        match self {
            ListSplit::Json(s) => s.items(),
            #[cfg(feature = "protobuf")]
            ListSplit::Protobuf(s) => s.items(),
        }
    }

    /// The batch collected so far, if it holds an item.
    pub(crate) fn take_batch(&mut self) -> Option<ListBatch> {
        match self {
            ListSplit::Json(s) => s.take_batch(),
            #[cfg(feature = "protobuf")]
            ListSplit::Protobuf(s) => s.take_batch().map(|b| ListBatch {
                body: b.body,
                items: b.items,
                first_index: b.first_index,
                first_offset: b.first_offset,
                json_items: Vec::new(),
            }),
        }
    }

    /// The list's metadata once the body is complete (take the last batch first).
    ///
    /// # Errors
    /// A body that ended early, or whose metadata is malformed.
    pub(crate) fn finish(&self) -> Result<ListEnd, SplitError> {
        match self {
            ListSplit::Json(s) => s.finish().map(|m: ListMeta| ListEnd {
                resource_version: m.resource_version.unwrap_or_default(),
                continue_token: m.continue_.filter(|c| !c.is_empty()),
                remaining_item_count: m.remaining_item_count,
            }),
            #[cfg(feature = "protobuf")]
            ListSplit::Protobuf(s) => s
                .finish()
                .map(|m| ListEnd {
                    resource_version: m.resource_version.unwrap_or_default(),
                    continue_token: m.continue_.filter(|c| !c.is_empty()),
                    remaining_item_count: m.remaining_item_count,
                })
                .map_err(|e| protobuf_error(s, e)),
        }
    }
}

/// A protobuf splitter's error, with where it stopped.
#[cfg(feature = "protobuf")]
fn protobuf_error(
    s: &kinformer_protobuf::ListSplitter,
    e: kinformer_protobuf::Error,
) -> SplitError {
    SplitError::Malformed {
        offset: s.bytes_read(),
        message: format!("{e} ({} items came complete)", s.items()),
    }
}

/// Decodes one batch as a list page of its own.
pub(crate) fn decode_batch<K: DeserializeOwned + Send + Sync + 'static>(
    format: ListFormat,
    batch: &ListBatch,
) -> Result<ObjectList<K>, ListWatchError> {
    match format {
        #[cfg(feature = "protobuf")]
        ListFormat::Protobuf => crate::codec::protobuf::decode_list::<K>(&batch.body),
        ListFormat::Json => {
            // The splitter checked each item to be JSON: decoded where it lies, without
            // reading the batch as a list again.
            let mut items = Vec::with_capacity(batch.json_items.len());
            for (k, &(start, end, offset)) in batch.json_items.iter().enumerate() {
                let text = batch
                    .body
                    .get(start..end)
                    .and_then(|bytes| std::str::from_utf8(bytes).ok())
                    .ok_or_else(|| {
                        ListWatchError::Decode(DecodeError::new(format!(
                            "list item {} (at byte {offset}) is not UTF-8",
                            batch.first_index + k
                        )))
                    })?;
                items.push(text);
            }
            Ok(crate::codec::json::decode_items::<K, _>(
                crate::codec::json::JsonDecoder::DEFAULT,
                batch.body.len(),
                &items,
            ))
        }
    }
}

#[cfg(all(test, feature = "protobuf"))]
mod tests {
    use super::*;

    #[test]
    fn a_protobuf_body_cut_inside_an_item_names_it() {
        let meta = kinformer_protobuf::ListMeta::default();
        let mut b = kinformer_protobuf::ListBuilder::new("v1", "PodList", &meta).unwrap();
        for name in ["a", "b"] {
            b.push(&serde_json::json!({"metadata": {"name": name}}))
                .unwrap();
        }
        let body = b.finish();
        let mut split = ListSplit::new(ListFormat::Protobuf, 1 << 20, usize::MAX);
        // The envelope's two empty trailing fields (4 bytes) and 3 bytes of the last item.
        split.push(&body[..body.len() - 7]).unwrap();
        assert_eq!(split.take_batch().map(|b| b.items), Some(1));
        let err = split.finish().unwrap_err().to_string();
        assert!(err.contains("inside item 1"), "{err}");
    }

    #[test]
    fn batches_never_exceed_their_limit_whatever_the_pieces() {
        let meta = kinformer_protobuf::ListMeta::default();
        let mut b = kinformer_protobuf::ListBuilder::new("v1", "PodList", &meta).unwrap();
        let mut json = String::from(r#"{"metadata":{},"items":["#);
        for i in 0..23 {
            let item = serde_json::json!({"metadata": {"name": format!("p{i}")}});
            b.push(&item).unwrap();
            if i > 0 {
                json.push(',');
            }
            json.push_str(&item.to_string());
        }
        json.push_str("]}");
        for (format, body) in [
            (ListFormat::Json, json.into_bytes()),
            (ListFormat::Protobuf, b.finish()),
        ] {
            let mut split = ListSplit::new(format, 1 << 20, 5);
            let mut sizes = Vec::new();
            let mut rest = &body[..];
            loop {
                let n = split.push(rest).unwrap();
                rest = &rest[n..];
                if split.is_full() {
                    sizes.push(split.take_batch().unwrap().items);
                    continue;
                }
                if rest.is_empty() {
                    break;
                }
            }
            loop {
                split.end_of_body().unwrap();
                if !split.is_full() {
                    break;
                }
                sizes.push(split.take_batch().unwrap().items);
            }
            sizes.extend(split.take_batch().map(|b| b.items));
            split.finish().unwrap();
            assert_eq!(sizes, [5, 5, 5, 5, 3], "{format:?}");
        }
    }
}
