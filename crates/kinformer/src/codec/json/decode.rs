//! Decoding list bodies so that one bad object is skipped and reported instead of failing the
//! whole list (typed lists in one pass, item by item when an item does not decode); and watch
//! lines one by one, where a bad line is a
//! [`DecodeError`] that ends the watch (the reflector resumes from its last synced version).
//!
//! Two decoders give the same objects and the same errors (only the messages' wording
//! differs): serde_json, and with the `fast-json` feature sonic-rs (SIMD), which is then the
//! one used.

use std::borrow::Cow;
use std::sync::Arc;

use kube_core::ListMeta;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use crate::codec::lazy::raw::RawJson;
use crate::codec::{
    Bookmark, DecodeError, ListWatchError, ObjectList, WatchEvent, Wire, api_status, heap_reserve,
    split_decode,
};

/// Which JSON decoder reads list bodies and watch lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JsonDecoder {
    /// serde_json (with `fast-json`, only the tests use it).
    #[cfg_attr(feature = "fast-json", allow(dead_code))]
    SerdeJson,
    /// sonic-rs (SIMD; the `fast-json` feature).
    #[cfg(feature = "fast-json")]
    SonicRs,
}

impl JsonDecoder {
    /// The decoder [`decode_list`] and [`decode_watch_line`] use.
    #[cfg(feature = "fast-json")]
    pub(crate) const DEFAULT: Self = JsonDecoder::SonicRs;
    /// The decoder [`decode_list`] and [`decode_watch_line`] use.
    #[cfg(not(feature = "fast-json"))]
    pub(crate) const DEFAULT: Self = JsonDecoder::SerdeJson;

    /// Every decoder built in (the tests run each).
    #[cfg(test)]
    pub(crate) const ALL: &'static [Self] = &[
        JsonDecoder::SerdeJson,
        #[cfg(feature = "fast-json")]
        JsonDecoder::SonicRs,
    ];

    /// Decodes `json` as a `T`; the error is the decoder's message.
    fn decode<T: DeserializeOwned>(self, json: &str) -> Result<T, String> {
        match self {
            JsonDecoder::SerdeJson => serde_json::from_str(json).map_err(|e| e.to_string()),
            #[cfg(feature = "fast-json")]
            JsonDecoder::SonicRs => {
                sonic_rs::from_str(json).map_err(|e| crate::codec::lazy::sonic_message(&e))
            }
        }
    }

    /// Splits a list body into its metadata and its items' JSON.
    fn split_list(self, body: &str) -> Result<(ListMeta, Vec<Cow<'_, str>>), String> {
        require_object(body)?;
        match self {
            JsonDecoder::SerdeJson => {
                let raw: RawList<'_> = serde_json::from_str(body).map_err(|e| e.to_string())?;
                let items = raw.items.unwrap_or_default();
                Ok((
                    raw.metadata,
                    items.into_iter().map(|i| Cow::Borrowed(i.get())).collect(),
                ))
            }
            #[cfg(feature = "fast-json")]
            JsonDecoder::SonicRs => {
                let raw: SonicList<'_> =
                    sonic_rs::from_str(body).map_err(|e| crate::codec::lazy::sonic_message(&e))?;
                let items = raw.items.unwrap_or_default();
                Ok((
                    raw.metadata,
                    items.iter().map(sonic_rs::LazyValue::as_raw_cow).collect(),
                ))
            }
        }
    }

    /// Splits a watch line into its event type and its object's JSON.
    fn split_event(self, line: &str) -> Result<(String, Cow<'_, str>), String> {
        require_object(line)?;
        match self {
            JsonDecoder::SerdeJson => serde_json::from_str::<RawEvent<'_>>(line)
                .map(|e| (e.kind, Cow::Borrowed(e.object.get())))
                .map_err(|e| e.to_string()),
            #[cfg(feature = "fast-json")]
            JsonDecoder::SonicRs => sonic_rs::from_str::<SonicEvent<'_>>(line)
                .map(|e| (e.kind, e.object.as_raw_cow()))
                .map_err(|e| crate::codec::lazy::sonic_message(&e)),
        }
    }
}

/// Refuses JSON that is not an object: serde's derived structs also read arrays, field by field
/// in order, which no Kubernetes list or watch event is (Go's decoder refuses them too).
fn require_object(json: &str) -> Result<(), String> {
    match json.trim_start().as_bytes().first() {
        Some(b'{') => Ok(()),
        _ => Err("expected a JSON object".to_owned()),
    }
}

#[derive(Deserialize)]
struct RawList<'a> {
    #[serde(default)]
    metadata: ListMeta,
    #[serde(borrow, default)]
    items: Option<Vec<&'a RawValue>>,
}

#[derive(Deserialize)]
struct RawEvent<'a> {
    #[serde(rename = "type")]
    kind: String,
    #[serde(borrow)]
    object: &'a RawValue,
}

/// [`RawList`] for sonic-rs, whose raw values are `LazyValue`s.
#[cfg(feature = "fast-json")]
#[derive(Deserialize)]
struct SonicList<'a> {
    #[serde(default)]
    metadata: ListMeta,
    #[serde(borrow, default)]
    items: Option<Vec<sonic_rs::LazyValue<'a>>>,
}

/// [`RawEvent`] for sonic-rs.
#[cfg(feature = "fast-json")]
#[derive(Deserialize)]
struct SonicEvent<'a> {
    #[serde(rename = "type")]
    kind: String,
    #[serde(borrow)]
    object: sonic_rs::LazyValue<'a>,
}

/// Just enough of an object to name it in a decode error.
#[derive(Deserialize)]
struct NameOnly {
    #[serde(default)]
    metadata: Option<NameMeta>,
}

#[derive(Deserialize)]
struct NameMeta {
    #[serde(default)]
    name: Option<String>,
}

/// What a BOOKMARK event's object carries.
#[derive(Deserialize)]
pub(crate) struct BookmarkObject {
    pub(crate) metadata: BookmarkMeta,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BookmarkMeta {
    #[serde(default)]
    pub(crate) resource_version: String,
    #[serde(default)]
    pub(crate) annotations: Option<std::collections::BTreeMap<String, String>>,
}

fn decode_object<K: DeserializeOwned>(decoder: JsonDecoder, raw: &str) -> Result<K, DecodeError> {
    let decoded = if crate::codec::keeps_bytes::<K>() {
        K::deserialize(RawJson(raw)).map_err(|e| e.to_string())
    } else {
        decoder.decode::<K>(raw)
    };
    decoded.map_err(|message| DecodeError {
        name: decoder
            .decode::<NameOnly>(raw)
            .ok()
            .and_then(|n| n.metadata)
            .and_then(|m| m.name),
        message,
    })
}

/// Decodes a list response body (JSON) as the
/// [`KubeListerWatcher`](crate::kube::KubeListerWatcher) does: items that do not decode as `K`
/// go to [`ObjectList::undecodable`].
///
/// With the `fast-json` feature the body is read with sonic-rs, otherwise with serde_json.
/// A body of 8 MiB or more (a whole list in one response) is decoded on up to 4 threads (as
/// many as the machine has), with the same items and errors in the same order.
///
/// # Errors
/// [`ListWatchError::Decode`] when the body itself is not a list.
pub fn decode_list<K: DeserializeOwned + Send + Sync>(
    body: &str,
) -> Result<ObjectList<K>, ListWatchError> {
    decode_list_with(JsonDecoder::DEFAULT, body)
}

/// [`decode_list`] with a given decoder: in one pass when every item decodes (typed
/// objects), else item by item; a large body item by item on several threads (see
/// [`split_decode`]).
pub(crate) fn decode_list_with<K: DeserializeOwned + Send + Sync>(
    decoder: JsonDecoder,
    body: &str,
) -> Result<ObjectList<K>, ListWatchError> {
    if split_decode::is_large(body.len()) {
        return list_item_by_item(decoder, body);
    }
    match whole_list(decoder, body) {
        Some(list) => Ok(list),
        None => list_item_by_item(decoder, body),
    }
}

/// A typed list page read in one pass: the items are decoded as `K` in the same scan that
/// reads the list, instead of first being cut out as raw JSON and then each scanned again
/// (the cut was about a tenth of a typed informer's decoding under `perf`). `None` for
/// `Lazy` objects (which keep their JSON as it arrived), a body that is not an object, or
/// any error at all — one bad item is enough: the item-by-item path then keeps the good
/// items and names the bad ones, so a page with a bad item is read twice, up to the bad
/// item and then item by item.
fn whole_list<K: DeserializeOwned>(decoder: JsonDecoder, body: &str) -> Option<ObjectList<K>> {
    if crate::codec::keeps_bytes::<K>() || require_object(body).is_err() {
        return None;
    }
    // The whole page on this thread: room for all of its objects (only typed ones get here).
    heap_reserve::reserve_for_body::<K>(body.len(), Wire::Json);
    let list = decoder.decode::<WholeList<K>>(body).ok()?;
    Some(ObjectList {
        items: list.items.map(|i| i.0).unwrap_or_default(),
        ..object_list(list.metadata)
    })
}

/// An empty list with `metadata`'s version and continuation.
fn object_list<K>(metadata: ListMeta) -> ObjectList<K> {
    ObjectList {
        resource_version: metadata.resource_version.unwrap_or_default(),
        continue_token: metadata.continue_.filter(|c| !c.is_empty()),
        remaining_item_count: metadata.remaining_item_count,
        ..ObjectList::default()
    }
}

/// A list page with its items decoded (see [`whole_list`]).
#[derive(Deserialize)]
#[serde(bound = "K: DeserializeOwned")]
struct WholeList<K> {
    #[serde(default)]
    metadata: ListMeta,
    #[serde(default)]
    items: Option<Items<K>>,
}

/// A JSON array of objects, each decoded into its own `Arc` as it is read.
struct Items<K>(Vec<Arc<K>>);

impl<'de, K: DeserializeOwned> Deserialize<'de> for Items<K> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<K>(std::marker::PhantomData<K>);
        impl<'de, K: DeserializeOwned> serde::de::Visitor<'de> for Visit<K> {
            type Value = Items<K>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a list of objects")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Items<K>, A::Error> {
                let mut items = Vec::new();
                while let Some(obj) = seq.next_element::<K>()? {
                    items.push(Arc::new(obj));
                }
                Ok(Items(items))
            }
        }
        d.deserialize_seq(Visit(std::marker::PhantomData))
    }
}

/// Every item cut out of the list as raw JSON, then decoded on its own: an item that does
/// not decode goes to [`ObjectList::undecodable`], named if it has a name.
fn list_item_by_item<K: DeserializeOwned + Send + Sync>(
    decoder: JsonDecoder,
    body: &str,
) -> Result<ObjectList<K>, ListWatchError> {
    let (metadata, items) = decoder
        .split_list(body)
        .map_err(|e| DecodeError::new(format!("list response is not a list: {e}")))?;
    // Only a large body on several threads: a page (of a lean informer, or with a bad item)
    // is decoded on this one.
    let decoded = decode_items::<K, _>(decoder, body.len(), &items);
    Ok(ObjectList {
        items: decoded.items,
        undecodable: decoded.undecodable,
        ..object_list(metadata)
    })
}

/// Decodes items already cut out of a list and checked to be JSON (a batch of a list that
/// streams in, see [`list_stream`](crate::codec::list_stream)), `bytes` long in all, as
/// [`list_item_by_item`] decodes the items it cuts: one that does not decode as `K` goes to
/// [`ObjectList::undecodable`]. The list's metadata is left empty.
pub(crate) fn decode_items<K: DeserializeOwned + Send + Sync, I: AsRef<str> + Sync>(
    decoder: JsonDecoder,
    bytes: usize,
    items: &[I],
) -> ObjectList<K> {
    let mut list = ObjectList::default();
    list.items.reserve(items.len());
    let reserve = heap_reserve::per_item::<K>(bytes, items.len(), Wire::Json);
    let decoded = split_decode::decode_body_items(bytes, items, reserve, |item| {
        decode_object::<K>(decoder, item.as_ref()).map(Arc::new)
    });
    for item in decoded {
        match item {
            Ok(o) => list.items.push(o),
            Err(e) => list.undecodable.push(e),
        }
    }
    list
}

/// The continue token of a JSON list body, read from the list's `metadata` without reading
/// its items: found when `metadata` comes before `items`, as API servers write a list
/// (`{"kind":…,"apiVersion":…,"metadata":{…},"items":[…]}`). `None` without a token, when
/// `items` comes first, or when the body is not a list (its decode reports that).
pub(crate) fn continue_token_ahead(body: &[u8]) -> Option<String> {
    let metadata: ListMeta = crate::codec::member_ahead(body, "metadata", &["items"])
        .ok()
        .flatten()?;
    metadata.continue_.filter(|c| !c.is_empty())
}

/// Decodes one line of a JSON watch stream as the
/// [`KubeListerWatcher`](crate::kube::KubeListerWatcher) does: `None` for a blank line; a
/// [`ListWatchError::Decode`] for a line that is not an event of a known type with a `K`
/// (which ends the watch); a bare `Status` line is an [`ListWatchError::Api`] error.
///
/// With the `fast-json` feature the line is read with sonic-rs, otherwise with serde_json.
pub fn decode_watch_line<K: DeserializeOwned>(
    line: &str,
) -> Option<Result<WatchEvent<K>, ListWatchError>> {
    decode_watch_line_with(JsonDecoder::DEFAULT, line)
}

/// [`decode_watch_line`] with a given decoder.
pub(crate) fn decode_watch_line_with<K: DeserializeOwned>(
    decoder: JsonDecoder,
    line: &str,
) -> Option<Result<WatchEvent<K>, ListWatchError>> {
    if line.trim().is_empty() {
        return None;
    }
    // As API servers write events, the object is cut out without a scan; its own decode then
    // checks that the cut is one JSON value. Anything else takes the general path, which
    // also words the errors.
    if let Some((kind, object)) = server_layout(line)
        && let Ok(event) = event_of(decoder, kind, object)
    {
        return Some(Ok(event));
    }
    let (kind, object) = match decoder.split_event(line) {
        Ok(e) => e,
        Err(e) => {
            // A bare Status line (some servers end a stream this way).
            if let Ok(status) = decoder.decode::<kube_core::Status>(line)
                && status.code != 0
            {
                return Some(Err(ListWatchError::Api(api_status(&status))));
            }
            return Some(Err(DecodeError::new(format!(
                "undecodable watch event: {e}"
            ))
            .into()));
        }
    };
    Some(event_of(decoder, &kind, &object).map_err(ListWatchError::Decode))
}

/// The event types of a watch.
const EVENT_TYPES: [&str; 5] = ["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"];

/// The type and the object's JSON of a line laid out exactly as API servers write one:
/// `{"type":"<TYPE>","object":<OBJECT>}` with no whitespace. The object is everything between
/// `"object":` and the last `}`, which is the object iff it decodes as one JSON value (with
/// another member after it, it would not).
fn server_layout(line: &str) -> Option<(&'static str, &str)> {
    let rest = line.trim_end().strip_prefix("{\"type\":\"")?;
    let kind = EVENT_TYPES.into_iter().find(|k| rest.starts_with(k))?;
    let object = rest
        .get(kind.len()..)?
        .strip_prefix("\",\"object\":")?
        .strip_suffix('}')?;
    Some((kind, object))
}

/// The event of this type carrying this object's JSON.
fn event_of<K: DeserializeOwned>(
    decoder: JsonDecoder,
    kind: &str,
    object: &str,
) -> Result<WatchEvent<K>, DecodeError> {
    match kind {
        "ADDED" => decode_object(decoder, object).map(|o| WatchEvent::Added(Arc::new(o))),
        "MODIFIED" => decode_object(decoder, object).map(|o| WatchEvent::Modified(Arc::new(o))),
        "DELETED" => decode_object(decoder, object).map(|o| WatchEvent::Deleted(Arc::new(o))),
        "BOOKMARK" => decoder
            .decode::<BookmarkObject>(object)
            .map(|b| {
                WatchEvent::Bookmark(Bookmark {
                    resource_version: b.metadata.resource_version,
                    annotations: b.metadata.annotations.unwrap_or_default(),
                })
            })
            .map_err(|e| DecodeError::new(format!("undecodable bookmark: {e}"))),
        "ERROR" => decoder
            .decode::<kube_core::Status>(object)
            .map(|s| WatchEvent::Error(api_status(&s)))
            .map_err(|e| DecodeError::new(format!("undecodable error status: {e}"))),
        other => Err(DecodeError::new(format!(
            "unknown watch event type {other:?}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use k8s_openapi::api::core::v1::ConfigMap;

    use kube_core::Resource;
    use serde_json::json;

    use super::*;
    use crate::codec::lazy::Lazy;
    use crate::test_support::{config_map_names, item_names};

    #[test]
    fn the_continue_token_is_read_ahead_of_the_items_only_when_the_metadata_comes_first() {
        let ahead = |body: &str| continue_token_ahead(body.as_bytes());
        let first = r#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9",
            "continue":"tok\u0021","remainingItemCount":3},"items":[{"metadata":{"name":"a"}}]}"#;
        assert_eq!(ahead(first).as_deref(), Some("tok!"));
        // Not read: what follows the metadata, even broken.
        assert_eq!(
            ahead(r#"{"metadata":{"continue":"tok"},"items":[nonsense"#).as_deref(),
            Some("tok")
        );
        for none in [
            r#"{"items":[],"metadata":{"continue":"tok"}}"#,
            r#"{"metadata":{"resourceVersion":"9"},"items":[]}"#,
            r#"{"metadata":{"continue":""},"items":[]}"#,
            r#"{"kind":"PodList"}"#,
            r#"{"metadata":{"continue":7}}"#,
            r#"[{"metadata":{"continue":"tok"}}]"#,
            "",
            "\u{ff}",
        ] {
            assert_eq!(ahead(none), None, "{none}");
        }
        // Every decoder agrees on the token of a list it reads ahead.
        for &d in JsonDecoder::ALL {
            let list = decode_list_with::<ConfigMap>(d, first).unwrap();
            assert_eq!(list.continue_token, ahead(first), "{d:?}");
        }
    }

    /// The fields of a list as both paths must give them.
    fn fields(
        list: &ObjectList<ConfigMap>,
    ) -> (Vec<serde_json::Value>, &str, Option<&str>, Option<i64>) {
        (
            list.items
                .iter()
                .map(|o| serde_json::to_value(o.as_ref()).unwrap())
                .collect(),
            &list.resource_version,
            list.continue_token.as_deref(),
            list.remaining_item_count,
        )
    }

    #[test]
    fn a_typed_list_read_in_one_pass_equals_the_list_read_item_by_item() {
        let bodies = [
            r#"{"kind":"ConfigMapList","apiVersion":"v1",
            "metadata":{"resourceVersion":"12","continue":"tok","remainingItemCount":3},
            "items":[{"metadata":{"name":"a","namespace":"ns"},"data":{"k":"v\u00e9\n"}},
                     {"metadata":{"name":"b","namespace":"ns","labels":{"app":"web"}}}]}"#,
            r#"{"items":[{"metadata":{"name":"a"}}],"metadata":{"resourceVersion":"3","continue":""}}"#,
            r#"{"metadata":{"resourceVersion":"4"},"items":[]}"#,
            r#"{"metadata":{"resourceVersion":"5"},"items":null}"#,
            r#"{"metadata":{"resourceVersion":"6"}}"#,
            r#"{}"#,
        ];
        for &d in JsonDecoder::ALL {
            for body in bodies {
                let whole = whole_list::<ConfigMap>(d, body)
                    .unwrap_or_else(|| panic!("{d:?}: not read in one pass: {body}"));
                let by_item = list_item_by_item::<ConfigMap>(d, body).unwrap();
                assert_eq!(fields(&whole), fields(&by_item), "{d:?}: {body}");
                assert!(whole.undecodable.is_empty() && by_item.undecodable.is_empty());
            }
        }
    }

    #[test]
    fn a_realistic_pod_list_reads_the_same_in_one_pass() {
        use k8s_openapi::api::core::v1::Pod;
        let pod: serde_json::Value = serde_json::from_str(include_str!(
            "../../../../kinformer-protobuf/tests/data/realistic-pod.json"
        ))
        .unwrap();
        let mut other = pod.clone();
        other["metadata"]["name"] = "other \u{e9}\"quoted\"".into();
        let body = serde_json::json!({"kind": "PodList", "apiVersion": "v1",
            "metadata": {"resourceVersion": "42"}, "items": [pod, other]})
        .to_string();
        for &d in JsonDecoder::ALL {
            let whole = whole_list::<Pod>(d, &body).expect("read in one pass");
            let by_item = list_item_by_item::<Pod>(d, &body).unwrap();
            assert_eq!(whole.items.len(), 2);
            for (a, b) in whole.items.iter().zip(&by_item.items) {
                assert_eq!(a, b, "{d:?}");
            }
            assert_eq!(whole.resource_version, "42");
        }
    }

    #[test]
    fn a_large_body_is_decoded_on_several_threads_with_the_same_items_and_errors() {
        // 10,000 config maps of about 1 KiB each (more than MIN_SPLIT_BYTES), number 4,321
        // with a data value that is not a string.
        let pad = "x".repeat(1_000);
        let items: Vec<serde_json::Value> = (0..10_000)
            .map(|i| {
                let value = if i == 4_321 { json!(5) } else { json!(pad) };
                json!({"metadata": {"name": format!("cm-{i}"), "namespace": "n"}, "data": {"k": value}})
            })
            .collect();
        let body = json!({"metadata": {"resourceVersion": "9", "continue": "c"}, "items": items})
            .to_string();
        assert!(split_decode::is_large(body.len()));
        for &d in JsonDecoder::ALL {
            let list = decode_list_with::<ConfigMap>(d, &body).unwrap();
            assert_eq!(
                item_names(&list),
                config_map_names(10_000, Some(4_321)),
                "{d:?}"
            );
            assert_eq!(list.undecodable.len(), 1, "{d:?}");
            assert_eq!(list.undecodable[0].name.as_deref(), Some("cm-4321"));
            assert_eq!(list.resource_version, "9");
            assert_eq!(list.continue_token.as_deref(), Some("c"));
            assert!(
                list.items
                    .iter()
                    .all(|o| o.data.as_ref().unwrap()["k"] == pad)
            );
        }
    }

    #[test]
    fn a_list_with_a_bad_item_or_of_lazy_objects_is_read_item_by_item() {
        for &d in JsonDecoder::ALL {
            let bad = r#"{"metadata":{},"items":[{"metadata":{"name":"a"}},
                {"metadata":{"name":"bad"},"data":{"k":5}}]}"#;
            assert!(whole_list::<ConfigMap>(d, bad).is_none(), "{d:?}");
            let list = decode_list_with::<ConfigMap>(d, bad).unwrap();
            assert_eq!((list.items.len(), list.undecodable.len()), (1, 1), "{d:?}");
            let good = r#"{"metadata":{},"items":[{"metadata":{"name":"a"}}]}"#;
            assert!(whole_list::<Lazy<ConfigMap>>(d, good).is_none(), "{d:?}");
            for not_a_list in [r#"[{"metadata":{}}]"#, r#"{"items":{}}"#, "", "{"] {
                assert!(whole_list::<ConfigMap>(d, not_a_list).is_none(), "{d:?}");
                assert!(
                    decode_list_with::<ConfigMap>(d, not_a_list).is_err(),
                    "{d:?}"
                );
            }
        }
    }

    #[test]
    fn a_list_with_one_bad_item_keeps_the_others() {
        for &d in JsonDecoder::ALL {
            let body = r#"{"kind":"ConfigMapList","apiVersion":"v1",
            "metadata":{"resourceVersion":"12","continue":"tok","remainingItemCount":3},
            "items":[{"metadata":{"name":"a","namespace":"ns"}},
                     {"metadata":{"name":"bad","namespace":"ns"},"data":{"k":5}},
                     {"metadata":{"name":"c","namespace":"ns"}}]}"#;
            let list = decode_list_with::<ConfigMap>(d, body).unwrap();
            assert_eq!(list.items.len(), 2, "{d:?}");
            assert_eq!(list.resource_version, "12");
            assert_eq!(list.continue_token.as_deref(), Some("tok"));
            assert_eq!(list.remaining_item_count, Some(3));
            assert_eq!(list.undecodable.len(), 1);
            assert_eq!(list.undecodable[0].name.as_deref(), Some("bad"));
            // One line, saying what was wrong and where.
            let message = &list.undecodable[0].message;
            assert!(
                message.contains("invalid type") && !message.contains('\n'),
                "{d:?}: {message}"
            );
        }
    }

    #[test]
    fn arrays_are_neither_lists_nor_watch_events() {
        for &d in JsonDecoder::ALL {
            // serde's derived structs would read these field by field.
            let list = decode_list_with::<ConfigMap>(d, r#"[{}, [{"metadata":{"name":"a"}}]]"#);
            assert!(list.is_err_and(|e| e.is_decode()), "{d:?}");
            let line = r#"["ADDED", {"metadata":{"name":"a"}}]"#;
            let event = decode_watch_line_with::<ConfigMap>(d, line);
            assert!(matches!(event, Some(Err(e)) if e.is_decode()), "{d:?}");
        }
    }

    #[test]
    fn a_list_of_lazy_objects_keeps_each_body_as_sent() {
        for &d in JsonDecoder::ALL {
            let body = r#"{"metadata":{"resourceVersion":"7"},"items":[
                {"metadata":{"name":"a","labels":{"app":"web"}},"data":{"k":"v\u00e9"}},
                {"metadata":{"name":"bad","labels":5}}]}"#;
            let list = decode_list_with::<Lazy<ConfigMap>>(d, body).unwrap();
            assert_eq!(list.items.len(), 1, "{d:?}");
            let a = &list.items[0];
            assert_eq!(
                a.json().unwrap(),
                r#"{"metadata":{"name":"a","labels":{"app":"web"}},"data":{"k":"v\u00e9"}}"#
            );
            assert_eq!(a.object().unwrap().data.as_ref().unwrap()["k"], "vé");
            assert_eq!(list.undecodable.len(), 1);
            assert_eq!(list.undecodable[0].name.as_deref(), Some("bad"));
            let event = decode_watch_line_with::<Lazy<ConfigMap>>(
                d,
                r#"{"type":"ADDED","object":{"metadata":{"name":"w"}}}"#,
            );
            assert!(
                matches!(event, Some(Ok(WatchEvent::Added(o))) if o.meta().name.as_deref() == Some("w"))
            );
        }
    }

    #[test]
    fn an_empty_list_has_no_items_and_no_token() {
        for &d in JsonDecoder::ALL {
            let list = decode_list_with::<ConfigMap>(
                d,
                r#"{"metadata":{"resourceVersion":"1","continue":""},"items":null}"#,
            )
            .unwrap();
            assert!(list.items.is_empty() && list.continue_token.is_none());
            for bad in [r#"{"items":5}"#, r#"{"items":[{"a":1]}"#, "5", ""] {
                assert!(
                    decode_list_with::<ConfigMap>(d, bad)
                        .unwrap_err()
                        .is_decode(),
                    "{d:?} {bad}"
                );
            }
            // A struct from an array, as serde allows: the decoders agree.
            assert_eq!(
                decode_list_with::<ConfigMap>(d, "[]").is_ok(),
                decode_list_with::<ConfigMap>(JsonDecoder::SerdeJson, "[]").is_ok()
            );
        }
    }

    #[test]
    fn watch_lines_decode_each_event_type() {
        for &d in JsonDecoder::ALL {
            let added = decode_watch_line_with::<ConfigMap>(
                d,
                r#"{"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"3"}}}"#,
            );
            assert!(
                matches!(added, Some(Ok(WatchEvent::Added(o))) if o.metadata.name.as_deref() == Some("a"))
            );
            // The object before the type: field order does not matter.
            let deleted = decode_watch_line_with::<ConfigMap>(
                d,
                r#"{"object":{"metadata":{"name":"a"}},"type":"DELETED"}"#,
            );
            assert!(matches!(deleted, Some(Ok(WatchEvent::Deleted(_)))));
            let bookmark = decode_watch_line_with::<ConfigMap>(
                d,
                r#"{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"9","annotations":{"k8s.io/initial-events-end":"true"}}}}"#,
            );
            match bookmark {
                Some(Ok(WatchEvent::Bookmark(b))) => {
                    assert_eq!(b.resource_version, "9");
                    assert!(b.is_initial_events_end());
                }
                other => panic!("{other:?}"),
            }
            let error = decode_watch_line_with::<ConfigMap>(
                d,
                r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}}"#,
            );
            match error {
                Some(Ok(WatchEvent::Error(s))) => {
                    assert_eq!((s.code, s.reason.as_str()), (410, "Expired"));
                }
                other => panic!("{other:?}"),
            }
            assert!(decode_watch_line_with::<ConfigMap>(d, "  ").is_none());
        }
    }

    /// The server's layout is cut without a scan; a line that only looks like it (another
    /// member after the object, whitespace) decodes as the general path reads it.
    #[test]
    fn lines_in_the_servers_layout_and_lookalikes_decode_the_same() {
        let obj = r#"{"metadata":{"name":"a","labels":{"x":"}"}}}"#;
        assert_eq!(
            server_layout(&format!(r#"{{"type":"MODIFIED","object":{obj}}}"#)),
            Some(("MODIFIED", obj))
        );
        assert_eq!(
            server_layout(&format!(r#"{{"type": "ADDED","object":{obj}}}"#)),
            None
        );
        assert_eq!(server_layout(r#"{"type":"ADDEDX","object":{}}"#), None);
        for &d in JsonDecoder::ALL {
            let name = |line: &str| match decode_watch_line_with::<ConfigMap>(d, line) {
                Some(Ok(WatchEvent::Modified(o))) => o.metadata.name.clone(),
                other => panic!("{line}: {other:?}"),
            };
            assert_eq!(
                name(&format!(r#"{{"type":"MODIFIED","object":{obj}}}"#)).as_deref(),
                Some("a")
            );
            // A member after the object: the cut is not one value, the general path reads it.
            let after = r#"{"type":"MODIFIED","object":{"metadata":{"name":"a"}},"x":{"metadata":{"name":"b"}}}"#;
            assert_eq!(name(after).as_deref(), Some("a"));
            let lazy = decode_watch_line_with::<Lazy<ConfigMap>>(d, after);
            assert!(
                matches!(&lazy, Some(Ok(WatchEvent::Modified(o))) if o.meta().name.as_deref() == Some("a")),
                "{lazy:?}"
            );
            // A bad object in the server's layout is the general path's error.
            let bad = r#"{"type":"MODIFIED","object":{"metadata":{"name":"x"},"data":{"k":1}}}"#;
            match decode_watch_line_with::<ConfigMap>(d, bad) {
                Some(Err(ListWatchError::Decode(e))) => assert_eq!(e.name.as_deref(), Some("x")),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn an_undecodable_watch_object_is_a_decode_error_not_an_api_error() {
        for &d in JsonDecoder::ALL {
            let bad = decode_watch_line_with::<ConfigMap>(
                d,
                r#"{"type":"MODIFIED","object":{"metadata":{"name":"x"},"data":{"k":1}}}"#,
            );
            match bad {
                Some(Err(ListWatchError::Decode(e))) => assert_eq!(e.name.as_deref(), Some("x")),
                other => panic!("{other:?}"),
            }
            assert!(matches!(
                decode_watch_line_with::<ConfigMap>(d, "{not json"),
                Some(Err(ListWatchError::Decode(_)))
            ));
            assert!(matches!(
                decode_watch_line_with::<ConfigMap>(d, r#"{"type":"RENAMED","object":{}}"#),
                Some(Err(ListWatchError::Decode(_)))
            ));
            // A bare Status line is the server's error.
            let status = decode_watch_line_with::<ConfigMap>(
                d,
                r#"{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410}"#,
            );
            assert!(
                matches!(status, Some(Err(ListWatchError::Api(s))) if s.code == 410),
                "{d:?}"
            );
        }
    }

    #[test]
    fn status_details_keep_causes_and_retry_after() {
        let s: kube_core::Status = serde_json::from_str(
            r#"{"code":504,"reason":"Timeout","message":"Too large resource version","details":{"causes":[{"reason":"ResourceVersionTooLarge","message":"Too large resource version"}],"retryAfterSeconds":2}}"#,
        )
        .unwrap();
        let a = api_status(&s);
        assert_eq!(a.retry_after, Some(Duration::from_secs(2)));
        assert!(ListWatchError::Api(a).is_too_large_resource_version());
    }
}
