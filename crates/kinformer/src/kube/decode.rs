//! Decoding list bodies object by object, so that one bad object is skipped and reported
//! instead of failing the whole list; and watch lines one by one, where a bad line is a
//! [`DecodeError`] that ends the watch (the reflector resumes from its last synced version).

use std::sync::Arc;
use std::time::Duration;

use kube_core::ListMeta;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use crate::cache::listwatch::{
    ApiStatus, Bookmark, DecodeError, ListWatchError, ObjectList, StatusCause, WatchEvent,
};

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

fn decode_object<K: DeserializeOwned>(raw: &RawValue) -> Result<K, DecodeError> {
    serde_json::from_str::<K>(raw.get()).map_err(|e| DecodeError {
        name: serde_json::from_str::<NameOnly>(raw.get())
            .ok()
            .and_then(|n| n.metadata)
            .and_then(|m| m.name),
        message: e.to_string(),
    })
}

/// Decodes a list response body (JSON) as the [`KubeListerWatcher`](super::KubeListerWatcher)
/// does: items that do not decode as `K` go to [`ObjectList::undecodable`].
///
/// # Errors
/// [`ListWatchError::Decode`] when the body itself is not a list.
pub fn decode_list<K: DeserializeOwned>(body: &str) -> Result<ObjectList<K>, ListWatchError> {
    let raw: RawList<'_> = serde_json::from_str(body)
        .map_err(|e| DecodeError::new(format!("list response is not a list: {e}")))?;
    let mut list = ObjectList {
        resource_version: raw.metadata.resource_version.unwrap_or_default(),
        continue_token: raw.metadata.continue_.filter(|c| !c.is_empty()),
        remaining_item_count: raw.metadata.remaining_item_count,
        ..ObjectList::default()
    };
    let items = raw.items.unwrap_or_default();
    list.items.reserve(items.len());
    for item in items {
        match decode_object::<K>(item) {
            Ok(o) => list.items.push(Arc::new(o)),
            Err(e) => list.undecodable.push(e),
        }
    }
    Ok(list)
}

/// Converts a `metav1.Status` into an [`ApiStatus`].
pub(crate) fn api_status(s: &kube_core::Status) -> ApiStatus {
    let (causes, retry_after) = match &s.details {
        Some(d) => (
            d.causes
                .iter()
                .map(|c| StatusCause {
                    reason: c.reason.clone(),
                    message: c.message.clone(),
                    field: c.field.clone(),
                })
                .collect(),
            (d.retry_after_seconds > 0)
                .then(|| Duration::from_secs(u64::from(d.retry_after_seconds))),
        ),
        None => (Vec::new(), None),
    };
    ApiStatus {
        code: s.code,
        reason: s.reason.clone(),
        message: s.message.clone(),
        causes,
        retry_after,
    }
}

/// Decodes one line of a JSON watch stream as the
/// [`KubeListerWatcher`](super::KubeListerWatcher) does: `None` for a blank line; a
/// [`ListWatchError::Decode`] for a line that is not an event of a known type with a `K`
/// (which ends the watch); a bare `Status` line is an [`ListWatchError::Api`] error.
pub fn decode_watch_line<K: DeserializeOwned>(
    line: &str,
) -> Option<Result<WatchEvent<K>, ListWatchError>> {
    if line.trim().is_empty() {
        return None;
    }
    let event: RawEvent<'_> = match serde_json::from_str(line) {
        Ok(e) => e,
        Err(e) => {
            // A bare Status line (some servers end a stream this way).
            if let Ok(status) = serde_json::from_str::<kube_core::Status>(line)
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
    let result = match event.kind.as_str() {
        "ADDED" => decode_object(event.object).map(|o| WatchEvent::Added(Arc::new(o))),
        "MODIFIED" => decode_object(event.object).map(|o| WatchEvent::Modified(Arc::new(o))),
        "DELETED" => decode_object(event.object).map(|o| WatchEvent::Deleted(Arc::new(o))),
        "BOOKMARK" => serde_json::from_str::<BookmarkObject>(event.object.get())
            .map(|b| {
                WatchEvent::Bookmark(Bookmark {
                    resource_version: b.metadata.resource_version,
                    annotations: b.metadata.annotations.unwrap_or_default(),
                })
            })
            .map_err(|e| DecodeError::new(format!("undecodable bookmark: {e}"))),
        "ERROR" => serde_json::from_str::<kube_core::Status>(event.object.get())
            .map(|s| WatchEvent::Error(api_status(&s)))
            .map_err(|e| DecodeError::new(format!("undecodable error status: {e}"))),
        other => Err(DecodeError::new(format!(
            "unknown watch event type {other:?}"
        ))),
    };
    Some(result.map_err(ListWatchError::Decode))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;

    #[test]
    fn a_list_with_one_bad_item_keeps_the_others() {
        let body = r#"{"kind":"ConfigMapList","apiVersion":"v1",
            "metadata":{"resourceVersion":"12","continue":"tok","remainingItemCount":3},
            "items":[{"metadata":{"name":"a","namespace":"ns"}},
                     {"metadata":{"name":"bad","namespace":"ns"},"data":{"k":5}},
                     {"metadata":{"name":"c","namespace":"ns"}}]}"#;
        let list = decode_list::<ConfigMap>(body).unwrap();
        assert_eq!(list.items.len(), 2);
        assert_eq!(list.resource_version, "12");
        assert_eq!(list.continue_token.as_deref(), Some("tok"));
        assert_eq!(list.remaining_item_count, Some(3));
        assert_eq!(list.undecodable.len(), 1);
        assert_eq!(list.undecodable[0].name.as_deref(), Some("bad"));
    }

    #[test]
    fn an_empty_list_has_no_items_and_no_token() {
        let list = decode_list::<ConfigMap>(
            r#"{"metadata":{"resourceVersion":"1","continue":""},"items":null}"#,
        )
        .unwrap();
        assert!(list.items.is_empty() && list.continue_token.is_none());
        assert!(
            decode_list::<ConfigMap>(r#"{"items":5}"#)
                .unwrap_err()
                .is_decode()
        );
    }

    #[test]
    fn watch_lines_decode_each_event_type() {
        let added = decode_watch_line::<ConfigMap>(
            r#"{"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"3"}}}"#,
        );
        assert!(
            matches!(added, Some(Ok(WatchEvent::Added(o))) if o.metadata.name.as_deref() == Some("a"))
        );
        // The object before the type: field order does not matter.
        let deleted = decode_watch_line::<ConfigMap>(
            r#"{"object":{"metadata":{"name":"a"}},"type":"DELETED"}"#,
        );
        assert!(matches!(deleted, Some(Ok(WatchEvent::Deleted(_)))));
        let bookmark = decode_watch_line::<ConfigMap>(
            r#"{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"9","annotations":{"k8s.io/initial-events-end":"true"}}}}"#,
        );
        match bookmark {
            Some(Ok(WatchEvent::Bookmark(b))) => {
                assert_eq!(b.resource_version, "9");
                assert!(b.is_initial_events_end());
            }
            other => panic!("{other:?}"),
        }
        let error = decode_watch_line::<ConfigMap>(
            r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}}"#,
        );
        match error {
            Some(Ok(WatchEvent::Error(s))) => {
                assert_eq!((s.code, s.reason.as_str()), (410, "Expired"));
            }
            other => panic!("{other:?}"),
        }
        assert!(decode_watch_line::<ConfigMap>("  ").is_none());
    }

    #[test]
    fn an_undecodable_watch_object_is_a_decode_error_not_an_api_error() {
        let bad = decode_watch_line::<ConfigMap>(
            r#"{"type":"MODIFIED","object":{"metadata":{"name":"x"},"data":{"k":1}}}"#,
        );
        match bad {
            Some(Err(ListWatchError::Decode(d))) => assert_eq!(d.name.as_deref(), Some("x")),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            decode_watch_line::<ConfigMap>("{not json"),
            Some(Err(ListWatchError::Decode(_)))
        ));
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
