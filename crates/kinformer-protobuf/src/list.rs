//! Lists (`PodList`, ...): the list metadata, then each item decoded on its own, so that one
//! undecodable item does not fail the list.

use serde::{Deserialize, Serialize};

use crate::de;
use crate::envelope::Envelope;
use crate::error::Error;
use crate::kinds;
use crate::schema::{MessageId, Schema, Ty};
use crate::ser;
use crate::wire;
use crate::wire::{Reader, Value};

/// A list's `metadata` (`meta.v1.ListMeta`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListMeta {
    /// The list's resourceVersion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// The token for the next page, if any.
    #[serde(default, rename = "continue", skip_serializing_if = "Option::is_none")]
    pub continue_: Option<String>,
    /// How many items the next pages hold, when the server knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remaining_item_count: Option<i64>,
}

/// Builds an enveloped list item by item (a server's list response).
///
/// ```
/// use kinformer_protobuf::{List, ListBuilder, ListMeta};
/// use serde_json::json;
///
/// let meta = ListMeta { resource_version: Some("9".into()), ..ListMeta::default() };
/// let mut list = ListBuilder::new("v1", "PodList", &meta).unwrap();
/// list.push(&json!({"metadata": {"name": "a"}})).unwrap();
/// let bytes = list.finish();
/// let parsed = List::parse(&bytes).unwrap();
/// assert_eq!((parsed.kind(), parsed.len()), ("PodList", 1));
/// ```
#[derive(Debug)]
pub struct ListBuilder {
    schema: &'static Schema,
    api_version: String,
    kind: String,
    item: MessageId,
    items_number: u32,
    buf: Vec<u8>,
}

impl ListBuilder {
    /// A list of kind `kind` (e.g. `PodList`) with `metadata`.
    ///
    /// # Errors
    /// When the kind is not a known list.
    pub fn new(api_version: &str, kind: &str, metadata: &ListMeta) -> Result<Self, Error> {
        let schema = Schema::get()?;
        let id =
            kinds::message_for(schema, api_version, kind).ok_or_else(|| Error::UnknownKind {
                api_version: api_version.to_owned(),
                kind: kind.to_owned(),
            })?;
        let desc = schema.message(id);
        let (items, meta) = (desc.field_named("items"), desc.field(1));
        let (Some(items), Some(meta)) = (items, meta) else {
            return Err(Error::Custom(format!("{} is not a list", desc.name)));
        };
        let (Ty::Message(item), Ty::Message(meta_id)) = (items.ty, meta.ty) else {
            return Err(Error::Custom(format!(
                "{} is not a list of objects",
                desc.name
            )));
        };
        let mut buf = Vec::new();
        let meta_bytes = ser::to_message(schema, meta_id, metadata)?;
        wire::put_bytes(&mut buf, 1, &meta_bytes);
        Ok(Self {
            schema,
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
            item,
            items_number: items.number,
            buf,
        })
    }

    /// Appends an item (its `apiVersion` and `kind`, if any, are not encoded).
    ///
    /// # Errors
    /// When the item does not fit the item message; the list is unchanged then.
    pub fn push<T: Serialize + ?Sized>(&mut self, item: &T) -> Result<(), Error> {
        let bytes = ser::to_message(self.schema, self.item, item)?;
        wire::put_bytes(&mut self.buf, self.items_number, &bytes);
        Ok(())
    }

    /// Appends an item already encoded as its bare message (see [`crate::to_message`]), as a
    /// server that keeps its objects encoded does. The bytes are not checked.
    ///
    /// ```
    /// use kinformer_protobuf::{List, ListBuilder, ListMeta, to_message};
    /// use serde_json::json;
    ///
    /// let raw = to_message(&json!({"metadata": {"name": "a"}}), "v1", "Pod").unwrap();
    /// let mut list = ListBuilder::new("v1", "PodList", &ListMeta::default()).unwrap();
    /// list.push_message(&raw);
    /// let bytes = list.finish();
    /// assert_eq!(List::parse(&bytes).unwrap().items().next().unwrap().bytes(), &raw[..]);
    /// ```
    pub fn push_message(&mut self, message: &[u8]) {
        wire::put_bytes(&mut self.buf, self.items_number, message);
    }

    /// Reserves room for `additional` more bytes of items.
    pub fn reserve(&mut self, additional: usize) {
        self.buf.reserve(additional);
    }

    /// The enveloped list.
    pub fn finish(self) -> Vec<u8> {
        Envelope::encode(&self.api_version, &self.kind, &self.buf)
    }

    /// The enveloped list in pieces, for a server that sends a long list as it writes it: the
    /// first piece is the envelope up to and with what was pushed so far (the metadata, and
    /// any items), for a list whose further items are messages of `item_lens` bytes (an
    /// envelope states its list's length before the list); each such item is then written by
    /// [`put_item`](Self::put_item), in the same order, and [`TAIL`](Self::TAIL) ends it. The
    /// pieces joined are the bytes [`finish`](Self::finish) makes of the same items.
    ///
    /// ```
    /// use kinformer_protobuf::{ListBuilder, ListMeta, to_message};
    /// use serde_json::json;
    ///
    /// let items: Vec<Vec<u8>> = ["a", "b"]
    ///     .iter()
    ///     .map(|n| to_message(&json!({"metadata": {"name": n}}), "v1", "Pod").unwrap())
    ///     .collect();
    /// let list = ListBuilder::new("v1", "PodList", &ListMeta::default()).unwrap();
    /// let mut streamed = list.streamed_head(items.iter().map(Vec::len));
    /// for item in &items {
    ///     list.put_item(&mut streamed, item);
    /// }
    /// streamed.extend_from_slice(ListBuilder::TAIL);
    ///
    /// let mut whole = ListBuilder::new("v1", "PodList", &ListMeta::default()).unwrap();
    /// for item in &items {
    ///     whole.push_message(item);
    /// }
    /// assert_eq!(streamed, whole.finish());
    /// ```
    pub fn streamed_head(&self, item_lens: impl IntoIterator<Item = usize>) -> Vec<u8> {
        let key = wire::key_len(self.items_number);
        let items: usize = item_lens
            .into_iter()
            .map(|len| key + prost::encoding::encoded_len_varint(len as u64) + len)
            .sum();
        let mut head = Envelope::head(&self.api_version, &self.kind, self.buf.len() + items);
        head.extend_from_slice(&self.buf);
        head
    }

    /// Writes an item already encoded as its bare message to `out`, as one piece of a list
    /// sent in pieces (see [`streamed_head`](Self::streamed_head)).
    pub fn put_item(&self, out: &mut Vec<u8>, message: &[u8]) {
        wire::put_bytes(out, self.items_number, message);
    }

    /// The end of a list sent in pieces: the envelope's fields after the list.
    pub const TAIL: &'static [u8] = Envelope::TAIL;
}

/// A parsed list: its metadata, and its items still as bytes.
///
/// ```
/// use kinformer_protobuf::{List, to_vec};
/// use serde_json::json;
///
/// let bytes = to_vec(
///     &json!({"metadata": {"resourceVersion": "7"},
///             "items": [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}]}),
///     "v1",
///     "ConfigMapList",
/// )
/// .unwrap();
/// let list = List::parse(&bytes).unwrap();
/// assert_eq!(list.metadata().resource_version.as_deref(), Some("7"));
/// let names: Vec<_> = list.items().map(|i| i.name().unwrap_or_default()).collect();
/// assert_eq!(names, ["a", "b"]);
/// let first: serde_json::Value = list.items().next().unwrap().decode().unwrap();
/// assert_eq!(first, json!({"metadata": {"name": "a"}}));
/// ```
#[derive(Debug, Clone)]
pub struct List<'a> {
    envelope: Envelope<'a>,
    metadata: ListMeta,
    schema: &'static Schema,
    item: MessageId,
    items: Vec<&'a [u8]>,
}

impl<'a> List<'a> {
    /// Parses an enveloped list.
    ///
    /// # Errors
    /// When the bytes are not an enveloped list of a known kind, or its metadata is invalid.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, Error> {
        let schema = Schema::get()?;
        let envelope = Envelope::parse(bytes)?;
        let id = envelope.message_id(schema)?;
        let desc = schema.message(id);
        let items_field = desc
            .field_named("items")
            .filter(|f| f.repeated)
            .ok_or_else(|| Error::Custom(format!("{} is not a list", desc.name)))?;
        let Ty::Message(item) = items_field.ty else {
            return Err(Error::Custom(format!(
                "{} is not a list of objects",
                desc.name
            )));
        };
        let mut metadata = ListMeta::default();
        let mut items = Vec::with_capacity(Reader::new(envelope.raw).count(items_field.number));
        let mut r = Reader::new(envelope.raw);
        while !r.is_empty() {
            match r.field()? {
                (n, Value::Bytes(b)) if n == items_field.number => items.push(b),
                (1, Value::Bytes(b)) => {
                    let meta_id = match desc.field(1).map(|f| f.ty) {
                        Some(Ty::Message(m)) => m,
                        _ => {
                            return Err(Error::Custom(format!(
                                "{} has no list metadata",
                                desc.name
                            )));
                        }
                    };
                    metadata = de::from_message(schema, meta_id, b, None)?;
                }
                (n, _) if n == items_field.number || n == 1 => {
                    return Err(Error::Invalid("list field of the wrong wire type".into()));
                }
                _ => {}
            }
        }
        Ok(List {
            envelope,
            metadata,
            schema,
            item,
            items,
        })
    }

    /// The list's `apiVersion`.
    pub fn api_version(&self) -> &'a str {
        self.envelope.api_version
    }

    /// The list's `kind`, e.g. `PodList`.
    pub fn kind(&self) -> &'a str {
        self.envelope.kind
    }

    /// The list's metadata.
    pub fn metadata(&self) -> &ListMeta {
        &self.metadata
    }

    /// The number of items.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// True if the list has no items.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The items, in order.
    pub fn items(&self) -> impl ExactSizeIterator<Item = Item<'a>> + '_ {
        self.items.iter().map(|bytes| Item {
            schema: self.schema,
            id: self.item,
            bytes,
        })
    }
}

/// One item of a [`List`], not decoded yet.
#[derive(Debug, Clone, Copy)]
pub struct Item<'a> {
    schema: &'static Schema,
    id: MessageId,
    bytes: &'a [u8],
}

impl<'a> Item<'a> {
    /// Decodes the item (without `apiVersion` and `kind`: list items carry none on the wire).
    ///
    /// # Errors
    /// When the item does not decode as `T`.
    pub fn decode<T: Deserialize<'a>>(&self) -> Result<T, Error> {
        de::from_message(self.schema, self.id, self.bytes, None)
    }

    /// Decodes the item as [`decode`](Item::decode) does, into an owned type: a k8s-openapi
    /// `Pod` takes the direct path (see [`from_slice_owned`](crate::from_slice_owned)).
    ///
    /// # Errors
    /// As [`decode`](Item::decode).
    pub fn decode_owned<T: serde::de::DeserializeOwned + 'static>(&self) -> Result<T, Error> {
        crate::owned::from_message_owned(self.schema, self.id, self.bytes, None)
    }

    /// The item's message bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// `metadata.name`, read without decoding the item (for naming it in an error).
    pub fn name(&self) -> Option<&'a str> {
        crate::meta::object_name(self.bytes)
    }
}
