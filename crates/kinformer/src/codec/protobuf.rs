//! Decoding protobuf list bodies and watch frames object by object, as [`json`](crate::codec::json) does
//! for JSON: one undecodable object is skipped and reported.

use std::sync::Arc;

use futures::{Stream, StreamExt};
use kinformer_protobuf::{FrameReader, Item, List, RawList, WatchEvent as PbEvent};
use serde::de::DeserializeOwned;

use crate::codec::lazy::raw::RawBytes;
use crate::codec::{
    Bookmark, DecodeError, ListWatchError, ObjectList, WatchEvent, Wire, api_status, heap_reserve,
    split_decode,
};

/// True if a response's content type is protobuf (a body or a watch stream).
pub(crate) fn is_protobuf(content_type: &str) -> bool {
    content_type.split(';').next().is_some_and(|base| {
        base.trim()
            .eq_ignore_ascii_case(kinformer_protobuf::CONTENT_TYPE)
    })
}

/// Has the protobuf schema built on a thread of its own, once per process, so that a first
/// protobuf request's answer does not wait for it (the decoders wait for it if it is still
/// being built).
pub(crate) fn prepare_schema() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let spawned = std::thread::Builder::new()
            .name("kinformer-protobuf-schema".into())
            .spawn(|| {
                if let Err(e) = kinformer_protobuf::prepare() {
                    tracing::warn!(error = %e, "the protobuf schema does not load");
                }
            });
        if let Err(e) = spawned {
            // The first decode builds it instead.
            tracing::debug!(error = %e, "no thread to build the protobuf schema on");
        }
    });
}

/// Decodes a Kubernetes protobuf list body (`k8s\0` + an enveloped list) as the
/// [`KubeListerWatcher`](crate::kube::KubeListerWatcher) does: items that do not decode as `K` go
/// to [`ObjectList::undecodable`]; a [`Lazy`](crate::cache::Lazy) item keeps its protobuf
/// bytes and decodes only its metadata. A body of 8 MiB or more (a whole list in one
/// response) is decoded on up to 4 threads (as many as the machine has), with the same items
/// and errors in the same order.
///
/// ```
/// use k8s_openapi::api::core::v1::Pod;
/// use kinformer::cache::Lazy;
/// use kube_core::Resource;
///
/// let meta = kinformer_protobuf::ListMeta { resource_version: Some("7".into()), ..Default::default() };
/// let mut list = kinformer_protobuf::ListBuilder::new("v1", "PodList", &meta).unwrap();
/// list.push(&serde_json::json!({"metadata": {"name": "a", "namespace": "ns"}})).unwrap();
/// let decoded = kinformer::kube::decode_protobuf_list::<Lazy<Pod>>(&list.finish()).unwrap();
/// assert_eq!(decoded.resource_version, "7");
/// assert_eq!(decoded.items[0].meta().name.as_deref(), Some("a"));
/// assert!(decoded.items[0].is_protobuf() && !decoded.items[0].is_decoded());
/// ```
///
/// # Errors
/// [`ListWatchError::Decode`] when the body itself is not a list.
pub fn decode_list<K: DeserializeOwned + Send + Sync + 'static>(
    body: &[u8],
) -> Result<ObjectList<K>, ListWatchError> {
    let not_a_list = |e: kinformer_protobuf::Error| {
        DecodeError::new(format!("list response is not a protobuf list: {e}"))
    };
    if crate::codec::keeps_bytes::<K>() {
        // A `Lazy` keeps each item as an enveloped object of the list's item kind; the list
        // is split without the schema, which a metadata-only informer never needs.
        let list = RawList::parse(body).map_err(not_a_list)?;
        let mut out = object_list(list.metadata(), list.items().len());
        let decode = |item: &&[u8]| {
            let enveloped =
                kinformer_protobuf::Envelope::encode(list.api_version(), list.item_kind(), item);
            K::deserialize(RawBytes(enveloped))
                .map(Arc::new)
                .map_err(|e| e.to_string())
        };
        // `Lazy` objects: no room to reserve (see `heap_reserve`).
        let decoded = split_decode::decode_body_items(body.len(), list.items(), 0, decode);
        for (item, decoded) in list.items().iter().zip(decoded) {
            push(&mut out, decoded, item);
        }
        return Ok(out);
    }
    let list = List::parse(body).map_err(not_a_list)?;
    let mut out = object_list(list.metadata(), list.len());
    let decode = |item: &Item<'_>| {
        item.decode_owned::<K>()
            .map(Arc::new)
            .map_err(|e| e.to_string())
    };
    // A large body (say, a whole list in one response) on several threads.
    let items: Vec<Item<'_>> = list.items().collect();
    let reserve = heap_reserve::per_item::<K>(body.len(), items.len(), Wire::Protobuf);
    let decoded = split_decode::decode_body_items(body.len(), &items, reserve, decode);
    for (item, decoded) in items.iter().zip(decoded) {
        push(&mut out, decoded, item.bytes());
    }
    Ok(out)
}

/// The continue token of a protobuf list body, read from its `ListMeta` (field 1) without
/// decoding its items. `None` without a token, or when the body is not a list (its decode
/// reports that).
pub(crate) fn continue_token_ahead(body: &[u8]) -> Option<String> {
    let list = RawList::parse(body).ok()?;
    list.metadata().continue_.clone().filter(|c| !c.is_empty())
}

/// An empty list of room for `n` items with `meta`'s version and continuation.
fn object_list<K>(meta: &kinformer_protobuf::ListMeta, n: usize) -> ObjectList<K> {
    let mut out = ObjectList {
        resource_version: meta.resource_version.clone().unwrap_or_default(),
        continue_token: meta.continue_.clone().filter(|c| !c.is_empty()),
        remaining_item_count: meta.remaining_item_count,
        ..ObjectList::default()
    };
    out.items.reserve(n);
    out
}

/// Adds a decoded item, or the error naming it (read from its bytes).
fn push<K>(out: &mut ObjectList<K>, decoded: Result<Arc<K>, String>, bytes: &[u8]) {
    match decoded {
        Ok(o) => out.items.push(o),
        Err(message) => out.undecodable.push(DecodeError {
            name: kinformer_protobuf::object_name(bytes).map(str::to_owned),
            message,
        }),
    }
}

fn decode_object<K: DeserializeOwned + 'static>(object: &[u8]) -> Result<K, DecodeError> {
    let decoded = if crate::codec::keeps_bytes::<K>() {
        K::deserialize(RawBytes(object.to_vec())).map_err(|e| e.to_string())
    } else {
        kinformer_protobuf::from_slice_owned::<K>(object).map_err(|e| e.to_string())
    };
    decoded.map_err(|message| DecodeError {
        name: kinformer_protobuf::Envelope::parse(object)
            .ok()
            .and_then(|env| object_name(env.raw)),
        message,
    })
}

fn object_name(raw: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct NameOnly {
        metadata: Option<Meta>,
    }
    #[derive(serde::Deserialize)]
    struct Meta {
        name: Option<String>,
    }
    // Any kind with ObjectMeta as field 1 reads as a ConfigMap's metadata.
    let env = kinformer_protobuf::Envelope::encode("v1", "ConfigMap", raw);
    kinformer_protobuf::from_slice::<NameOnly>(&env)
        .ok()
        .and_then(|n| n.metadata)
        .and_then(|m| m.name)
}

/// Decodes one watch frame's payload.
pub(crate) fn decode_event<K: DeserializeOwned + 'static>(
    frame: &[u8],
) -> Result<WatchEvent<K>, ListWatchError> {
    let event = PbEvent::parse(frame)
        .map_err(|e| DecodeError::new(format!("undecodable watch frame: {e}")))?;
    let result = match event.event_type {
        "ADDED" => decode_object(event.object).map(|o| WatchEvent::Added(Arc::new(o))),
        "MODIFIED" => decode_object(event.object).map(|o| WatchEvent::Modified(Arc::new(o))),
        "DELETED" => decode_object(event.object).map(|o| WatchEvent::Deleted(Arc::new(o))),
        // Read without the schema, as a metadata-only informer reads its objects.
        "BOOKMARK" => kinformer_protobuf::object_meta(event.object)
            .map(|m| {
                WatchEvent::Bookmark(Bookmark {
                    resource_version: m.resource_version.unwrap_or_default().to_owned(),
                    annotations: m
                        .annotations
                        .iter()
                        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                        .collect(),
                })
            })
            .map_err(|e| DecodeError::new(format!("undecodable bookmark: {e}"))),
        "ERROR" => kinformer_protobuf::from_slice::<kube_core::Status>(event.object)
            .map(|s| WatchEvent::Error(api_status(&s)))
            .map_err(|e| DecodeError::new(format!("undecodable error status: {e}"))),
        other => Err(DecodeError::new(format!(
            "unknown watch event type {other:?}"
        ))),
    };
    result.map_err(ListWatchError::Decode)
}

/// A `Status` error body in protobuf.
pub(crate) fn decode_status(body: &[u8]) -> Option<kube_core::Status> {
    kinformer_protobuf::from_slice(body).ok()
}

/// The events of a protobuf watch body. A stream that ends inside a frame ends cleanly (a
/// resumable close, as a broken-off JSON line is); a read error is reported, then the stream
/// ends.
pub(crate) fn events<K, S, E>(
    body: S,
) -> impl Stream<Item = Result<WatchEvent<K>, ListWatchError>> + Send
where
    K: DeserializeOwned + Send + 'static,
    S: Stream<Item = Result<bytes::Bytes, E>> + Send + Unpin + 'static,
    E: Into<ListWatchError>,
{
    struct State<S> {
        body: S,
        frames: FrameReader,
        done: bool,
    }
    let state = State {
        body,
        frames: FrameReader::default(),
        done: false,
    };
    futures::stream::unfold(state, |mut st| async move {
        loop {
            if st.done {
                return None;
            }
            match st.frames.next_frame() {
                Some(Ok(frame)) => {
                    let event = decode_event::<K>(frame);
                    return Some((event, st));
                }
                Some(Err(e)) => {
                    st.done = true;
                    return Some((Err(DecodeError::new(e.to_string()).into()), st));
                }
                None => {}
            }
            match st.body.next().await {
                Some(Ok(chunk)) => {
                    // Room for the typed objects of the events this chunk carries.
                    heap_reserve::reserve_for_body::<K>(chunk.len(), Wire::Protobuf);
                    st.frames.push(&chunk)
                }
                Some(Err(e)) => {
                    st.done = true;
                    return Some((Err(e.into()), st));
                }
                None => return None,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use serde_json::json;

    use super::*;
    use crate::test_support::{config_map_names, item_names};

    fn frame(kind: &str, object: &serde_json::Value) -> Vec<u8> {
        let o = kinformer_protobuf::json_to_vec(object).unwrap();
        PbEvent::encode_frame(kind, &o)
    }

    #[test]
    fn a_list_with_one_bad_item_keeps_the_others() {
        // ConfigMapList: metadata {resourceVersion 12, continue tok, remainingItemCount 3},
        // items a (fine), bad (a data value that is not UTF-8), c (fine).
        let mut raw = vec![
            0x0a, 11, 0x12, 2, b'1', b'2', 0x1a, 3, b't', b'o', b'k', 0x20, 3,
        ];
        raw.extend_from_slice(&[0x12, 5, 0x0a, 3, 0x0a, 1, b'a']);
        raw.extend_from_slice(&[0x12, 15, 0x0a, 5, 0x0a, 3, b'b', b'a', b'd']);
        raw.extend_from_slice(&[0x12, 6, 0x0a, 1, b'k', 0x12, 1, 0xff]);
        raw.extend_from_slice(&[0x12, 5, 0x0a, 3, 0x0a, 1, b'c']);
        let bytes = kinformer_protobuf::Envelope::encode("v1", "ConfigMapList", &raw);
        let out = decode_list::<ConfigMap>(&bytes).unwrap();
        let names: Vec<_> = out
            .items
            .iter()
            .map(|o| o.metadata.name.clone().unwrap_or_default())
            .collect();
        assert_eq!(names, ["a", "c"]);
        assert_eq!(out.resource_version, "12");
        assert_eq!(out.continue_token.as_deref(), Some("tok"));
        assert_eq!(out.remaining_item_count, Some(3));
        assert_eq!(out.undecodable.len(), 1);
        assert_eq!(out.undecodable[0].name.as_deref(), Some("bad"));
        assert!(decode_list::<ConfigMap>(b"{}").unwrap_err().is_decode());
        assert_eq!(continue_token_ahead(&bytes).as_deref(), Some("tok"));
        assert_eq!(continue_token_ahead(b"{}"), None);
    }

    #[test]
    fn a_large_list_is_decoded_on_several_threads_with_the_same_items_and_errors() {
        // 10,000 config maps of about 1 KiB each (more than MIN_SPLIT_BYTES); number 4,321's
        // data value is not UTF-8.
        let meta = kinformer_protobuf::ListMeta {
            resource_version: Some("9".into()),
            ..Default::default()
        };
        let pad = "x".repeat(1_000);
        let mut list = kinformer_protobuf::ListBuilder::new("v1", "ConfigMapList", &meta).unwrap();
        for i in 0..10_000 {
            let value = if i == 4_321 { "MARK" } else { pad.as_str() };
            list.push(&json!({"metadata": {"name": format!("cm-{i}")}, "data": {"k": value}}))
                .unwrap();
        }
        let mut bytes = list.finish();
        assert!(split_decode::is_large(bytes.len()));
        // Make the marked value invalid UTF-8 in place (same length).
        let at = bytes.windows(4).position(|w| w == b"MARK").unwrap();
        bytes[at] = 0xff;
        let out = decode_list::<ConfigMap>(&bytes).unwrap();
        assert_eq!(item_names(&out), config_map_names(10_000, Some(4_321)));
        assert_eq!(out.undecodable.len(), 1);
        assert_eq!(out.undecodable[0].name.as_deref(), Some("cm-4321"));
        assert_eq!(out.resource_version, "9");
        assert!(
            out.items
                .iter()
                .all(|o| o.data.as_ref().unwrap()["k"] == pad)
        );

        // Lazy objects read only their metadata: all 10,000, in order.
        let lazy = decode_list::<crate::codec::lazy::Lazy<ConfigMap>>(&bytes).unwrap();
        assert_eq!(item_names(&lazy), config_map_names(10_000, None));
        assert!(lazy.undecodable.is_empty());
    }

    #[test]
    fn lazy_objects_keep_each_item_and_event_object_as_protobuf() {
        use crate::codec::lazy::Lazy;
        use kube_core::Resource;
        let items = [
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "n"}, "data": {"k": "v"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "namespace": "n"}}),
        ];
        let meta = kinformer_protobuf::ListMeta {
            resource_version: Some("4".into()),
            ..Default::default()
        };
        let mut list = kinformer_protobuf::ListBuilder::new("v1", "ConfigMapList", &meta).unwrap();
        for i in &items {
            list.push(i).unwrap();
        }
        let out = decode_list::<Lazy<ConfigMap>>(&list.finish()).unwrap();
        assert_eq!(out.items.len(), 2);
        assert!(out.items.iter().all(|o| o.is_protobuf() && !o.is_decoded()));
        assert_eq!(out.items[1].meta().name.as_deref(), Some("b"));
        let a = out.items[0].object().unwrap();
        assert_eq!(a.data.as_ref().unwrap()["k"], "v");

        // A frame without its 4-byte length, as the frame reader hands it over.
        let event = decode_event::<Lazy<ConfigMap>>(&frame("MODIFIED", &items[0])[4..]).unwrap();
        let WatchEvent::Modified(o) = event else {
            panic!("{event:?}")
        };
        assert!(o.is_protobuf());
        assert_eq!(o.meta().namespace.as_deref(), Some("n"));
        // A broken object in an event is a decode error naming nothing it cannot read.
        let bad = PbEvent::encode_frame("ADDED", b"k8s\0\x01\x02");
        assert!(decode_event::<Lazy<ConfigMap>>(&bad[4..]).is_err());
    }

    #[test]
    fn corrupt_lazy_items_are_skipped_with_their_name_or_fail_when_read() {
        use crate::codec::lazy::Lazy;
        use kube_core::Resource;
        // PodList items: `bad-meta` has a label value that is not UTF-8 (its metadata does not
        // parse: skipped, named); `bad-spec` has a spec that is not a PodSpec (its metadata
        // parses: kept, and reading it in full is an error naming it); `good`.
        let meta = |name: &[u8], extra: &[u8]| {
            let mut m = vec![0x0a, name.len() as u8];
            m.extend_from_slice(name);
            m.extend_from_slice(extra);
            let mut field = vec![0x0a, m.len() as u8];
            field.extend(m);
            field
        };
        let label = [0x5a, 6, 0x0a, 1, b'k', 0x12, 1, 0xff];
        let mut bad_meta = meta(b"bad-meta", &label);
        bad_meta.extend_from_slice(&[0x12, 2, 0x08, 1]); // spec: a varint where a volume is
        let mut bad_spec = meta(b"bad-spec", &[]);
        bad_spec.extend_from_slice(&[0x12, 3, 0x0a, 1, 0xff]);
        let good = meta(b"good", &[]);
        let mut raw = vec![0x0a, 0];
        for item in [&bad_meta, &bad_spec, &good] {
            raw.push(0x12);
            raw.push(item.len() as u8);
            raw.extend_from_slice(item);
        }
        let bytes = kinformer_protobuf::Envelope::encode("v1", "PodList", &raw);
        let out = decode_list::<Lazy<k8s_openapi::api::core::v1::Pod>>(&bytes).unwrap();
        assert_eq!(out.undecodable.len(), 1);
        assert_eq!(out.undecodable[0].name.as_deref(), Some("bad-meta"));
        let names: Vec<_> = out.items.iter().map(|o| o.meta().name.clone()).collect();
        assert_eq!(names, [Some("bad-spec".into()), Some("good".into())]);
        let err = out.items[0].object().unwrap_err();
        assert_eq!(err.name.as_deref(), Some("bad-spec"));
        assert!(out.items[1].object().is_ok());
    }

    #[tokio::test]
    async fn frames_split_anywhere_decode_to_events() {
        let mut body = frame(
            "ADDED",
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}),
        );
        body.extend(frame(
            "BOOKMARK",
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"resourceVersion": "9", "annotations": {"k8s.io/initial-events-end": "true"}}}),
        ));
        body.extend(frame(
            "ERROR",
            &json!({"apiVersion": "v1", "kind": "Status", "status": "Failure", "reason": "Expired", "code": 410, "message": "too old"}),
        ));
        // Cut into 3-byte chunks, and a broken-off frame at the end.
        body.extend_from_slice(&[0, 0, 0, 50, 1]);
        let chunks: Vec<Result<bytes::Bytes, ListWatchError>> = body
            .chunks(3)
            .map(|c| Ok(bytes::Bytes::copy_from_slice(c)))
            .collect();
        let events: Vec<_> = events::<ConfigMap, _, _>(futures::stream::iter(chunks))
            .collect()
            .await;
        assert_eq!(events.len(), 3, "{events:?}");
        assert!(
            matches!(&events[0], Ok(WatchEvent::Added(o)) if o.metadata.name.as_deref() == Some("a"))
        );
        match &events[1] {
            Ok(WatchEvent::Bookmark(b)) => {
                assert_eq!(b.resource_version, "9");
                assert!(b.is_initial_events_end());
            }
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(&events[2], Ok(WatchEvent::Error(s)) if s.code == 410 && s.reason == "Expired")
        );
    }

    #[test]
    fn an_undecodable_object_is_a_decode_error_naming_it() {
        let mut f = frame(
            "MODIFIED",
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}),
        );
        f.push(0xff); // trailing garbage inside the event: a bad field key
        let len = u32::try_from(f.len() - 4).unwrap();
        f[..4].copy_from_slice(&len.to_be_bytes());
        assert!(matches!(
            decode_event::<ConfigMap>(&f[4..]),
            Err(ListWatchError::Decode(_))
        ));
        let pod = frame(
            "ADDED",
            &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}),
        );
        // A Pod where a ConfigMap is expected: the envelope names another kind.
        match decode_event::<ConfigMap>(&pod[4..]) {
            Err(ListWatchError::Decode(d)) => assert_eq!(d.name.as_deref(), Some("p")),
            other => panic!("{other:?}"),
        }
    }
}
