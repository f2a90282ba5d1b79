//! LIST: resourceVersion semantics, selectors, paging with continue tokens.
//!
//! - `resourceVersion` unset: the current state. `"0"`: any state (served current).
//!   `R` (or `NotOlderThan`): a state at least as new as R — a future R waits briefly, then 504
//!   with cause `ResourceVersionTooLarge`. `Exact` R: the state at revision R, 410 if compacted.
//! - `limit` + `continue`: the token pins the list's revision and the last key; once that
//!   revision is compacted, continuing answers 410 Gone (reason Expired).

use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use serde_json::json;

use crate::object::StoredObject;
use crate::query::{Query, RvMatch};
use crate::resource::ResourceDef;
use crate::selector::{FieldSelector, LabelSelector, lookup_path};
use crate::status::ApiError;
use crate::store::Store;

/// The message kube-apiserver sends for an expired continue token.
pub const CONTINUE_EXPIRED: &str = "The provided continue parameter is too old to display a consistent list result. \
You can start a new list without the continue parameter, or use the continue token in this response to retrieve the \
remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were \
created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

/// Encodes a continue token (opaque to clients): the revision and the last key returned.
pub fn encode_continue(rev: u64, after: &str) -> String {
    let raw = json!({"rv": rev, "start": after}).to_string();
    raw.bytes().map(|b| format!("{b:02x}")).collect()
}

/// Decodes a continue token.
///
/// # Errors
/// 400 BadRequest for a token this server did not issue.
pub fn decode_continue(token: &str) -> Result<(u64, String), ApiError> {
    let bad = || {
        ApiError::bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        )
    };
    if !token.len().is_multiple_of(2) || !token.is_ascii() {
        return Err(bad());
    }
    let bytes: Result<Vec<u8>, _> = (0..token.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&token[i..i + 2], 16))
        .collect();
    let v: serde_json::Value =
        serde_json::from_slice(&bytes.map_err(|_| bad())?).map_err(|_| bad())?;
    let rv = v
        .get("rv")
        .and_then(serde_json::Value::as_u64)
        .ok_or_else(bad)?;
    let start = v
        .get("start")
        .and_then(serde_json::Value::as_str)
        .ok_or_else(bad)?;
    Ok((rv, start.to_string()))
}

/// Whether an object matches label and field selectors.
pub fn selects(label: &LabelSelector, field: &FieldSelector, o: &StoredObject) -> bool {
    if !label.matches(Some(&o.labels)) {
        return false;
    }
    if field.is_empty() {
        return true;
    }
    let mut parsed = None;
    field.matches_with(|p| match p {
        "metadata.name" => Some(o.name.clone()),
        "metadata.namespace" => Some(o.namespace.clone()),
        _ => {
            if parsed.is_none() {
                parsed = o.to_value().ok();
            }
            parsed.as_ref().and_then(|v| lookup_path(v, p))
        }
    })
}

/// Waits (up to `wait`) for `rev` to exist; 504 ResourceVersionTooLarge otherwise.
///
/// # Cancel safety
/// Cancel safe.
pub async fn await_revision(store: &Store, rev: u64, wait: Duration) -> Result<(), ApiError> {
    if store.revision() >= rev || store.wait_for_revision(rev, wait).await {
        Ok(())
    } else {
        Err(ApiError::rv_too_large(rev, store.revision()))
    }
}

/// Serves a LIST and returns the response body.
///
/// # Errors
/// 400/422 for invalid parameter combinations, 410 for expired tokens or compacted exact
/// revisions, 504 for future revisions.
///
/// # Cancel safety
/// Cancel safe: nothing is written.
pub async fn list(
    store: &Store,
    ridx: usize,
    def: &ResourceDef,
    namespace: Option<&str>,
    q: &Query,
    expire_continue: bool,
    rv_wait: Duration,
) -> Result<Bytes, ApiError> {
    let page = list_objects(store, ridx, namespace, q, expire_continue, rv_wait).await?;
    Ok(render_list(
        def,
        page.revision,
        &page.items,
        page.continue_token,
    ))
}

/// One page of a list, before rendering.
#[derive(Debug)]
pub struct ListedPage {
    /// The revision the list was read at.
    pub revision: u64,
    /// The objects, in key order.
    pub items: Vec<Arc<StoredObject>>,
    /// The token for the next page.
    pub continue_token: Option<String>,
}

/// The objects [`list`] renders.
///
/// # Errors
/// As [`list`].
///
/// # Cancel safety
/// Cancel safe: nothing is written.
pub async fn list_objects(
    store: &Store,
    ridx: usize,
    namespace: Option<&str>,
    q: &Query,
    expire_continue: bool,
    rv_wait: Duration,
) -> Result<ListedPage, ApiError> {
    let (at, after) = if let Some(token) = &q.continue_token {
        let (rv, after) = decode_continue(token)?;
        if expire_continue || rv < store.compacted_revision() {
            return Err(ApiError::gone(CONTINUE_EXPIRED));
        }
        (Some(rv), Some(after))
    } else {
        let at = match (q.resource_version, q.rv_match) {
            (None | Some(0), Some(RvMatch::Exact)) => {
                return Err(ApiError::new(
                    422,
                    "Invalid",
                    "resourceVersionMatch: Forbidden: resourceVersionMatch \"Exact\" is forbidden for resourceVersion \"0\" or unset",
                ));
            }
            (None, Some(RvMatch::NotOlderThan)) => {
                return Err(ApiError::new(
                    422,
                    "Invalid",
                    "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
                ));
            }
            (Some(r), Some(RvMatch::Exact)) => {
                await_revision(store, r, rv_wait).await?;
                Some(r)
            }
            (Some(r), _) if r > 0 => {
                await_revision(store, r, rv_wait).await?;
                None
            }
            _ => None,
        };
        (at, None)
    };
    let page = store.list_page(ridx, namespace, at, after.as_deref(), q.limit, |o| {
        selects(&q.label_selector, &q.field_selector, o)
    })?;
    Ok(ListedPage {
        revision: page.revision,
        continue_token: page.more_after.map(|k| encode_continue(page.revision, &k)),
        items: page.items,
    })
}

/// Lists longer than this are sent as they are rendered, [`LIST_CHUNK`] objects at a time (JSON:
/// [`render_list_pieces`]; protobuf: [`list_protobuf_pieces`](crate::media::list_protobuf_pieces)).
pub const STREAM_LIST_ABOVE: usize = 2_000;

/// The objects rendered per piece of a list sent as it is rendered.
pub const LIST_CHUNK: usize = 1_000;

/// The opening of a `<Kind>List` up to its items' `[`.
fn list_head(def: &ResourceDef, rev: u64, cont: Option<String>) -> String {
    let mut meta = json!({"resourceVersion": rev.to_string()});
    if let (Some(c), Some(m)) = (cont, meta.as_object_mut()) {
        m.insert("continue".into(), json!(c));
    }
    let mut head = json!({"kind": format!("{}List", def.kind), "apiVersion": def.api_version(), "metadata": meta}).to_string();
    head.pop();
    head.push_str(",\"items\":[");
    head
}

/// The bytes of [`render_list`] as pieces rendered when they are asked for: the opening, then
/// [`LIST_CHUNK`] objects at a time, then the end. As an API server writes a large list, the
/// first bytes go out before the last object is rendered, and the whole list is never held.
pub fn render_list_pieces(
    def: &ResourceDef,
    rev: u64,
    items: Vec<Arc<StoredObject>>,
    cont: Option<String>,
) -> impl futures::Stream<Item = Result<Bytes, std::convert::Infallible>> + Send + 'static {
    let head = Bytes::from(list_head(def, rev, cont));
    let chunks = items.len().div_ceil(LIST_CHUNK);
    let pieces = (0..chunks).map(move |c| {
        let chunk = &items[c * LIST_CHUNK..((c + 1) * LIST_CHUNK).min(items.len())];
        let size: usize = chunk.iter().map(|o| o.bytes.len() + 1).sum();
        let mut b = BytesMut::with_capacity(size);
        for (i, o) in chunk.iter().enumerate() {
            if c > 0 || i > 0 {
                b.put_u8(b',');
            }
            b.put_slice(&o.bytes);
        }
        Ok(b.freeze())
    });
    futures::stream::iter(
        std::iter::once(Ok(head))
            .chain(pieces)
            .chain(std::iter::once(Ok(Bytes::from_static(b"]}")))),
    )
}

/// Renders `<Kind>List` bytes from stored objects without re-serializing them.
pub fn render_list(
    def: &ResourceDef,
    rev: u64,
    items: &[Arc<StoredObject>],
    cont: Option<String>,
) -> Bytes {
    let size: usize = items.iter().map(|o| o.bytes.len() + 1).sum();
    let mut b = BytesMut::with_capacity(size + 256);
    let mut meta = json!({"resourceVersion": rev.to_string()});
    if let (Some(c), Some(m)) = (cont, meta.as_object_mut()) {
        m.insert("continue".into(), json!(c));
    }
    let head = json!({"kind": format!("{}List", def.kind), "apiVersion": def.api_version(), "metadata": meta}).to_string();
    b.put_slice(&head.as_bytes()[..head.len() - 1]);
    b.put_slice(b",\"items\":[");
    for (i, o) in items.iter().enumerate() {
        if i > 0 {
            b.put_u8(b',');
        }
        b.put_slice(&o.bytes);
    }
    b.put_slice(b"]}");
    b.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_tokens_round_trip_and_reject_garbage() {
        let t = encode_continue(42, "ns-1/pod-7");
        assert_eq!(decode_continue(&t).unwrap(), (42, "ns-1/pod-7".to_string()));
        assert_eq!(decode_continue("zz").unwrap_err().code, 400);
        assert_eq!(decode_continue("abc").unwrap_err().code, 400);
    }
}
