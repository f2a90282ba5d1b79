//! Decoding protobuf list bodies and watch frames object by object, as [`super::decode`] does
//! for JSON: one undecodable object is skipped and reported.

use std::sync::Arc;

use futures::{Stream, StreamExt};
use kinformer_protobuf::{FrameReader, List, WatchEvent as PbEvent};
use serde::de::DeserializeOwned;

use super::decode::{BookmarkObject, api_status};
use crate::cache::listwatch::{Bookmark, DecodeError, ListWatchError, ObjectList, WatchEvent};

/// True if a response's content type is protobuf (a body or a watch stream).
pub(crate) fn is_protobuf(content_type: &str) -> bool {
    content_type.split(';').next().is_some_and(|base| {
        base.trim()
            .eq_ignore_ascii_case(kinformer_protobuf::CONTENT_TYPE)
    })
}

/// Decodes a protobuf list body; undecodable items go to `undecodable`.
///
/// # Errors
/// [`ListWatchError::Decode`] when the body itself is not a list.
pub(crate) fn decode_list<K: DeserializeOwned>(
    body: &[u8],
) -> Result<ObjectList<K>, ListWatchError> {
    let list = List::parse(body)
        .map_err(|e| DecodeError::new(format!("list response is not a protobuf list: {e}")))?;
    let meta = list.metadata();
    let mut out = ObjectList {
        resource_version: meta.resource_version.clone().unwrap_or_default(),
        continue_token: meta.continue_.clone().filter(|c| !c.is_empty()),
        remaining_item_count: meta.remaining_item_count,
        ..ObjectList::default()
    };
    out.items.reserve(list.len());
    for item in list.items() {
        match item.decode::<K>() {
            Ok(o) => out.items.push(Arc::new(o)),
            Err(e) => out.undecodable.push(DecodeError {
                name: item.name().map(str::to_owned),
                message: e.to_string(),
            }),
        }
    }
    Ok(out)
}

fn decode_object<K: DeserializeOwned>(object: &[u8]) -> Result<K, DecodeError> {
    kinformer_protobuf::from_slice::<K>(object).map_err(|e| DecodeError {
        name: kinformer_protobuf::Envelope::parse(object)
            .ok()
            .and_then(|env| object_name(env.raw)),
        message: e.to_string(),
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
pub(crate) fn decode_event<K: DeserializeOwned>(
    frame: &[u8],
) -> Result<WatchEvent<K>, ListWatchError> {
    let event = PbEvent::parse(frame)
        .map_err(|e| DecodeError::new(format!("undecodable watch frame: {e}")))?;
    let result = match event.event_type {
        "ADDED" => decode_object(event.object).map(|o| WatchEvent::Added(Arc::new(o))),
        "MODIFIED" => decode_object(event.object).map(|o| WatchEvent::Modified(Arc::new(o))),
        "DELETED" => decode_object(event.object).map(|o| WatchEvent::Deleted(Arc::new(o))),
        "BOOKMARK" => kinformer_protobuf::from_slice::<BookmarkObject>(event.object)
            .map(|b| {
                WatchEvent::Bookmark(Bookmark {
                    resource_version: b.metadata.resource_version,
                    annotations: b.metadata.annotations.unwrap_or_default(),
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
                Some(Ok(frame)) => return Some((decode_event::<K>(&frame), st)),
                Some(Err(e)) => {
                    st.done = true;
                    return Some((Err(DecodeError::new(e.to_string()).into()), st));
                }
                None => {}
            }
            match st.body.next().await {
                Some(Ok(chunk)) => st.frames.push(&chunk),
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
