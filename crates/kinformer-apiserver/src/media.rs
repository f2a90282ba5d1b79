//! Media types: JSON for every resource, Kubernetes protobuf for built-in kinds.
//!
//! A client asks for protobuf with `Accept: application/vnd.kubernetes.protobuf,
//! application/json` (client-go's default for built-in types): the first acceptable range in
//! the client's order wins, protobuf being acceptable only for kinds with a protobuf form, so a
//! custom resource is answered in JSON when the client also takes JSON, and 406 when it takes
//! nothing else. Without protobuf in `Accept`, nothing changes: JSON, as before. Request bodies
//! in protobuf (kubectl's typed `create`) are read for built-in kinds, 415 otherwise. Errors are
//! always JSON `Status` bodies (clients read them by content type).

use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;

use crate::object::StoredObject;
use crate::resource::ResourceDef;
use crate::status::ApiError;

/// The JSON media type.
pub const JSON: &str = "application/json";
/// The protobuf media type.
pub const PROTOBUF: &str = kinformer_protobuf::CONTENT_TYPE;
/// The media type of a protobuf watch stream.
pub const PROTOBUF_WATCH: &str = kinformer_protobuf::WATCH_CONTENT_TYPE;

/// How a response is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// JSON (with `\n`-separated events for a watch).
    Json,
    /// Kubernetes protobuf (length-prefixed frames for a watch). `json_fallback`: the client
    /// also accepts JSON, so an object without a protobuf form can still be sent.
    Protobuf {
        /// The client also accepts JSON.
        json_fallback: bool,
    },
}

/// True if the resource's kind has a protobuf form.
pub fn has_protobuf(def: &ResourceDef) -> bool {
    kinformer_protobuf::has_schema(&def.api_version(), &def.kind)
}

fn media_ranges(accept: &str) -> impl Iterator<Item = (String, bool)> + '_ {
    accept.split(',').map(|range| {
        let mut parts = range.split(';');
        let base = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        // `as=Table`, `as=PartialObjectMetadata`: another kind than the resource's.
        let other_kind = parts.any(|p| p.trim().starts_with("as="));
        (base, other_kind)
    })
}

fn is_json_range(base: &str) -> bool {
    matches!(base, JSON | "*/*" | "application/*")
}

/// The response format for `accept` on a server that speaks JSON only
/// ([`ServerConfig::json_only`](crate::ServerConfig::json_only)): JSON whatever else is asked.
///
/// # Errors
/// 406 when `accept` asks for protobuf and not JSON.
pub fn negotiate_json(accept: Option<&str>) -> Result<Format, ApiError> {
    let accept = accept.unwrap_or("");
    let protobuf = media_ranges(accept).any(|(base, _)| base == PROTOBUF);
    if !protobuf || media_ranges(accept).any(|(base, _)| is_json_range(&base)) {
        return Ok(Format::Json);
    }
    Err(ApiError::new(
        406,
        "NotAcceptable",
        format!("only the following media types are accepted: {JSON}"),
    ))
}

/// The response format for `accept`.
///
/// # Errors
/// 406 when `accept` asks for protobuf and nothing this resource can be sent as.
pub fn negotiate(accept: Option<&str>, def: &ResourceDef) -> Result<Format, ApiError> {
    let accept = accept.unwrap_or("");
    if !media_ranges(accept).any(|(base, _)| base == PROTOBUF) {
        return Ok(Format::Json);
    }
    let json_fallback = media_ranges(accept).any(|(base, _)| is_json_range(&base));
    for (base, other_kind) in media_ranges(accept) {
        if base == PROTOBUF && !other_kind && has_protobuf(def) {
            return Ok(Format::Protobuf { json_fallback });
        }
        if is_json_range(&base) {
            return Ok(Format::Json);
        }
    }
    Err(ApiError::new(
        406,
        "NotAcceptable",
        format!(
            "only the following media types are accepted: {JSON}{}",
            if has_protobuf(def) {
                format!(", {PROTOBUF}")
            } else {
                String::new()
            }
        ),
    ))
}

fn encode_error(def: &ResourceDef, e: &kinformer_protobuf::Error) -> ApiError {
    ApiError::internal(format!(
        "{} {} has no protobuf form: {e}",
        def.api_version(),
        def.kind
    ))
}

/// One object, enveloped, from its protobuf form (encoded once, see
/// [`StoredObject::protobuf`]).
///
/// # Errors
/// 500 when the object does not fit the kind's protobuf message.
pub fn object_protobuf(def: &ResourceDef, o: &StoredObject) -> Result<Bytes, ApiError> {
    let api_version = def.api_version();
    let raw = o
        .protobuf(&api_version, &def.kind)
        .map_err(|e| encode_error(def, e))?;
    Ok(Bytes::from(kinformer_protobuf::Envelope::encode(
        &api_version,
        &def.kind,
        raw,
    )))
}

/// A `<Kind>List`, enveloped, from its items' protobuf forms.
///
/// # Errors
/// 500 when an object does not fit the kind's protobuf message.
pub fn list_protobuf(
    def: &ResourceDef,
    rev: u64,
    items: &[Arc<StoredObject>],
    cont: Option<String>,
) -> Result<Bytes, ApiError> {
    let (mut list, messages) = list_parts(def, rev, items, cont)?;
    // Each item is its bytes plus a key and a length of at most 6 bytes.
    list.reserve(messages.iter().map(|m| m.len() + 6).sum());
    for m in &messages {
        list.push_message(m);
    }
    Ok(Bytes::from(list.finish()))
}

/// A list's builder (with its metadata) and its items' protobuf messages, in order.
fn list_parts(
    def: &ResourceDef,
    rev: u64,
    items: &[Arc<StoredObject>],
    cont: Option<String>,
) -> Result<(kinformer_protobuf::ListBuilder, Vec<Bytes>), ApiError> {
    let meta = kinformer_protobuf::ListMeta {
        resource_version: Some(rev.to_string()),
        continue_: cont,
        remaining_item_count: None,
    };
    let api_version = def.api_version();
    let kind = format!("{}List", def.kind);
    let list = kinformer_protobuf::ListBuilder::new(&api_version, &kind, &meta)
        .map_err(|e| encode_error(def, &e))?;
    let mut messages = Vec::with_capacity(items.len());
    for o in items {
        messages.push(
            o.protobuf(&api_version, &def.kind)
                .map_err(|e| encode_error(def, e))?
                .clone(),
        );
    }
    Ok((list, messages))
}

/// [`list_protobuf`]'s bytes in pieces rendered as they are asked for (as
/// [`render_list_pieces`](crate::list::render_list_pieces) sends a JSON list): the envelope
/// and the list's metadata, then [`LIST_CHUNK`](crate::list::LIST_CHUNK) items at a time, then
/// the envelope's end. Every item's message is looked up first (encoded once and kept by its
/// object), since the envelope states the list's length before the list; the whole list is
/// never held as one buffer.
///
/// # Errors
/// As [`list_protobuf`], before the first byte.
pub fn list_protobuf_pieces(
    def: &ResourceDef,
    rev: u64,
    items: &[Arc<StoredObject>],
    cont: Option<String>,
) -> Result<
    impl futures::Stream<Item = Result<Bytes, std::convert::Infallible>> + Send + 'static,
    ApiError,
> {
    let (list, messages) = list_parts(def, rev, items, cont)?;
    let head = Bytes::from(list.streamed_head(messages.iter().map(Bytes::len)));
    let chunk = crate::list::LIST_CHUNK;
    let pieces = (0..messages.len().div_ceil(chunk)).map(move |c| {
        let part = &messages[c * chunk..((c + 1) * chunk).min(messages.len())];
        // Each item is its bytes plus a key and a length of at most 6 bytes.
        let mut b = Vec::with_capacity(part.iter().map(|m| m.len() + 6).sum());
        for m in part {
            list.put_item(&mut b, m);
        }
        Ok(Bytes::from(b))
    });
    Ok(futures::stream::iter(
        std::iter::once(Ok(head))
            .chain(pieces)
            .chain(std::iter::once(Ok(Bytes::from_static(
                kinformer_protobuf::ListBuilder::TAIL,
            )))),
    ))
}

/// True if a request body's content type is protobuf.
pub fn is_protobuf(content_type: &str) -> bool {
    content_type
        .split(';')
        .next()
        .is_some_and(|base| base.trim().eq_ignore_ascii_case(PROTOBUF))
}

/// A protobuf request body as the JSON object the store keeps.
///
/// # Errors
/// 415 for a resource without a protobuf form, 400 for a body that is not a protobuf object of
/// the resource's kind.
pub fn protobuf_body(def: &ResourceDef, body: &[u8]) -> Result<Value, ApiError> {
    if !has_protobuf(def) {
        return Err(ApiError::unsupported_media_type(PROTOBUF));
    }
    let env = kinformer_protobuf::Envelope::parse(body)
        .map_err(|e| ApiError::bad_request(format!("the request body is not protobuf: {e}")))?;
    if env.kind != def.kind || env.api_version != def.api_version() {
        return Err(ApiError::bad_request(format!(
            "the request body is a {} {}, not a {} {}",
            env.api_version,
            env.kind,
            def.api_version(),
            def.kind
        )));
    }
    kinformer_protobuf::from_slice(body).map_err(|e| {
        ApiError::bad_request(format!("the request body is not a valid {}: {e}", def.kind))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pods() -> ResourceDef {
        ResourceDef::new("", "v1", "pods", "Pod", true)
    }

    fn widgets() -> ResourceDef {
        ResourceDef::new("example.com", "v1", "widgets", "Widget", true)
    }

    #[test]
    fn negotiation_follows_the_clients_order_and_the_kind() {
        let both = Some("application/vnd.kubernetes.protobuf, application/json");
        assert_eq!(
            negotiate(both, &pods()).unwrap(),
            Format::Protobuf {
                json_fallback: true
            }
        );
        assert_eq!(negotiate(both, &widgets()).unwrap(), Format::Json);
        assert_eq!(
            negotiate(
                Some("application/json, application/vnd.kubernetes.protobuf"),
                &pods()
            )
            .unwrap(),
            Format::Json
        );
        // Unchanged without protobuf in Accept, whatever it says.
        for a in [
            None,
            Some(""),
            Some("application/yaml"),
            Some("application/json;as=Table;v=v1;g=meta.k8s.io, application/json"),
        ] {
            assert_eq!(negotiate(a, &pods()).unwrap(), Format::Json);
        }
        let only = Some("application/vnd.kubernetes.protobuf");
        assert_eq!(
            negotiate(only, &pods()).unwrap(),
            Format::Protobuf {
                json_fallback: false
            }
        );
        assert_eq!(negotiate(only, &widgets()).unwrap_err().code, 406);
        // Protobuf of another kind (metadata-only) is not offered.
        let meta = Some(
            "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json",
        );
        assert_eq!(negotiate(meta, &pods()).unwrap(), Format::Json);
    }

    #[test]
    fn protobuf_bodies_are_read_for_built_in_kinds_only() {
        let cm = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}});
        let bytes = kinformer_protobuf::json_to_vec(&cm).unwrap();
        let def = ResourceDef::new("", "v1", "configmaps", "ConfigMap", true);
        assert_eq!(protobuf_body(&def, &bytes).unwrap(), cm);
        assert_eq!(protobuf_body(&pods(), &bytes).unwrap_err().code, 400);
        assert_eq!(protobuf_body(&def, b"{}").unwrap_err().code, 400);
        assert_eq!(protobuf_body(&widgets(), &bytes).unwrap_err().code, 415);
        assert!(
            is_protobuf("application/vnd.kubernetes.protobuf; charset=x") && !is_protobuf(JSON)
        );
    }

    #[test]
    fn a_list_in_pieces_is_the_list_rendered_whole() {
        use futures::StreamExt as _;
        let def = pods();
        for n in [0, 1, 2_500] {
            let items: Vec<Arc<StoredObject>> = (0..n)
                .map(|i| StoredObject::from_value(&crate::bench_pod(i), 7).unwrap())
                .collect();
            let cont = (n > 0).then(|| "next".to_string());
            let whole = list_protobuf(&def, 7, &items, cont.clone()).unwrap();
            let pieces: Vec<Bytes> = futures::executor::block_on(
                list_protobuf_pieces(&def, 7, &items, cont)
                    .unwrap()
                    .map(|p| p.unwrap())
                    .collect(),
            );
            // The head, a piece per started thousand items, the tail.
            assert_eq!(pieces.len(), 2 + n.div_ceil(crate::list::LIST_CHUNK), "{n}");
            assert_eq!(pieces.concat(), whole.to_vec(), "{n}");
        }
        // A kind without a protobuf form fails before the first byte.
        let widget =
            StoredObject::from_value(&serde_json::json!({"metadata": {"name": "w"}}), 1).unwrap();
        assert!(list_protobuf_pieces(&widgets(), 1, &[widget], None).is_err());
    }
}
