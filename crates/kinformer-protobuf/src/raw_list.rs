//! A list read without the schema: its metadata and its items' bytes, for a reader that keeps
//! the items as they are (a metadata-only informer) and so never needs the schema.

use crate::envelope::Envelope;
use crate::error::Error;
use crate::list::ListMeta;
use crate::meta::{check_builtin, nonempty};
use crate::wire::{Reader, Value};

/// An enveloped list of a built-in API group (`PodList`, ...) split into its metadata and its
/// items' bytes (bare messages, as [`Item::bytes`](crate::Item::bytes) gives them), without
/// the schema: every Kubernetes list holds `ListMeta` as field 1 and its items as field 2.
///
/// ```
/// use kinformer_protobuf::{ListBuilder, ListMeta, RawList};
/// use serde_json::json;
///
/// let meta = ListMeta { resource_version: Some("9".into()), ..ListMeta::default() };
/// let mut list = ListBuilder::new("v1", "PodList", &meta).unwrap();
/// list.push(&json!({"metadata": {"name": "a"}})).unwrap();
/// let bytes = list.finish();
/// let raw = RawList::parse(&bytes).unwrap();
/// assert_eq!((raw.kind(), raw.item_kind(), raw.items().len()), ("PodList", "Pod", 1));
/// assert_eq!(raw.metadata(), &meta);
/// ```
#[derive(Debug, Clone)]
pub struct RawList<'a> {
    envelope: Envelope<'a>,
    metadata: ListMeta,
    items: Vec<&'a [u8]>,
}

impl<'a> RawList<'a> {
    /// Splits an enveloped list.
    ///
    /// # Errors
    /// The bytes are not an enveloped object of a built-in API group, or its framing or list
    /// metadata is broken.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, Error> {
        let envelope = Envelope::parse(bytes)?;
        check_builtin(&envelope)?;
        let mut metadata = ListMeta::default();
        let mut items = Vec::new();
        let mut r = Reader::new(envelope.raw);
        while !r.is_empty() {
            match r.field()? {
                (1, Value::Bytes(b)) => metadata = list_meta(b)?,
                (2, Value::Bytes(b)) => items.push(b),
                (1 | 2, _) => {
                    return Err(Error::Invalid("list field of the wrong wire type".into()));
                }
                _ => {}
            }
        }
        Ok(RawList {
            envelope,
            metadata,
            items,
        })
    }

    /// The list's `apiVersion`.
    pub fn api_version(&self) -> &'a str {
        self.envelope.api_version
    }

    /// The list's kind (`PodList`).
    pub fn kind(&self) -> &'a str {
        self.envelope.kind
    }

    /// The kind of its items (`Pod`).
    pub fn item_kind(&self) -> &'a str {
        let kind = self.envelope.kind;
        kind.strip_suffix("List").unwrap_or(kind)
    }

    /// The list's metadata.
    pub fn metadata(&self) -> &ListMeta {
        &self.metadata
    }

    /// The items' bytes (bare messages), in order.
    pub fn items(&self) -> &[&'a [u8]] {
        &self.items
    }
}

/// `meta.v1.ListMeta`, as the schema-driven decode gives it: empty strings absent,
/// `remainingItemCount` (a pointer in Go) kept at zero.
pub(crate) fn list_meta(bytes: &[u8]) -> Result<ListMeta, Error> {
    let text = |v: Value<'_>| nonempty(v, "listMeta").map(|s| s.map(str::to_owned));
    let mut m = ListMeta::default();
    let mut r = Reader::new(bytes);
    while !r.is_empty() {
        match r.field()? {
            (2, v) => m.resource_version = text(v)?,
            (3, v) => m.continue_ = text(v)?,
            (4, Value::Varint(n)) => m.remaining_item_count = Some(n as i64),
            (4, _) => return Err(Error::Invalid("remainingItemCount is not a varint".into())),
            _ => {}
        }
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{List, ListBuilder};

    #[test]
    fn agrees_with_the_schema_driven_list() {
        for meta in [
            ListMeta::default(),
            ListMeta {
                resource_version: Some("12".into()),
                continue_: Some("tok".into()),
                remaining_item_count: Some(0),
            },
        ] {
            let mut b = ListBuilder::new("apps/v1", "DeploymentList", &meta).unwrap();
            b.push(&json!({"metadata": {"name": "a"}})).unwrap();
            b.push(&json!({"metadata": {"name": "b"}, "spec": {"replicas": 0}}))
                .unwrap();
            let bytes = b.finish();
            let (raw, list) = (
                RawList::parse(&bytes).unwrap(),
                List::parse(&bytes).unwrap(),
            );
            assert_eq!(raw.metadata(), list.metadata());
            let items: Vec<&[u8]> = list.items().map(|i| i.bytes()).collect();
            assert_eq!(raw.items(), &items[..]);
            assert_eq!(raw.item_kind(), "Deployment");
        }
        let widgets = Envelope::encode("example.com/v1", "WidgetList", &[]);
        assert!(RawList::parse(&widgets).is_err());
        assert!(RawList::parse(b"k8s\0\x12\x05").is_err());
        assert!(RawList::parse(&Envelope::encode("v1", "PodList", &[0x10, 1])).is_err());
    }
}
