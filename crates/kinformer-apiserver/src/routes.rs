//! HTTP routing: discovery, resource paths and verbs, fault application.
//!
//! Resource paths: `/api/v1[/namespaces/<ns>]/<plural>[/<name>[/status]]` and
//! `/apis/<group>/<version>[/namespaces/<ns>]/<plural>[/<name>[/status]]`.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{HeaderValue, Method, StatusCode, header};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::audit::{self, WriteAudit};
use crate::config::ServerConfig;
use crate::discovery;
use crate::faults::{Fault, Faults, RequestKind};
use crate::host;
use crate::list;
use crate::media::{self, Format};
use crate::namespaces;
use crate::object::StoredObject;
use crate::openapi;
use crate::query::{Query, RvMatch};
use crate::requests::RequestLog;
use crate::resource::ResourceDef;
use crate::stats::ServerStats;
use crate::status::ApiError;
use crate::store::{PatchType, Store};
use crate::table;
use crate::validate;
use crate::watch::{self, WatchRequest, WatchStart};

/// Shared state of the HTTP layer.
#[derive(Debug, Clone)]
pub(crate) struct AppState {
    pub store: Store,
    pub faults: Faults,
    pub audit: WriteAudit,
    pub requests: RequestLog,
    pub config: Arc<ServerConfig>,
    pub stats: Arc<ServerStats>,
}

fn json_response(code: StatusCode, body: Bytes) -> Response {
    let mut r = (code, body).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// A 200 whose body is sent piece by piece as `pieces` renders it.
fn streamed_response(
    pieces: impl futures::Stream<Item = Result<Bytes, std::convert::Infallible>> + Send + 'static,
    content_type: &'static str,
) -> Response {
    let mut r = Body::from_stream(pieces).into_response();
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

fn typed_response(code: StatusCode, body: Bytes, content_type: &'static str) -> Response {
    let mut r = (code, body).into_response();
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

/// An object in the negotiated format (JSON when it has no protobuf form and the client
/// takes JSON too).
fn object_response(
    def: &ResourceDef,
    format: Format,
    code: StatusCode,
    o: &StoredObject,
) -> Result<Response, ApiError> {
    match format {
        Format::Json => Ok(json_response(code, o.bytes.clone())),
        Format::Protobuf { json_fallback } => match media::object_protobuf(def, o) {
            Ok(b) => Ok(typed_response(code, b, media::PROTOBUF)),
            Err(e) if json_fallback => {
                tracing::warn!("answering in JSON: {}", e.message);
                Ok(json_response(code, o.bytes.clone()))
            }
            Err(e) => Err(e),
        },
    }
}

/// A list in the negotiated format. A long JSON list is sent as it is rendered (see
/// [`list::render_list_pieces`]).
fn list_response(
    def: &ResourceDef,
    format: Format,
    rev: u64,
    items: Vec<Arc<StoredObject>>,
    cont: Option<String>,
) -> Result<Response, ApiError> {
    if let Format::Protobuf { json_fallback } = format {
        let rendered = if items.len() > list::STREAM_LIST_ABOVE {
            media::list_protobuf_pieces(def, rev, &items, cont.clone())
                .map(|pieces| streamed_response(pieces, media::PROTOBUF))
        } else {
            media::list_protobuf(def, rev, &items, cont.clone())
                .map(|b| typed_response(StatusCode::OK, b, media::PROTOBUF))
        };
        match rendered {
            Ok(r) => return Ok(r),
            Err(e) if json_fallback => tracing::warn!("answering in JSON: {}", e.message),
            Err(e) => return Err(e),
        }
    }
    if items.len() > list::STREAM_LIST_ABOVE {
        let pieces = list::render_list_pieces(def, rev, items, cont);
        return Ok(streamed_response(pieces, "application/json"));
    }
    Ok(json_response(
        StatusCode::OK,
        list::render_list(def, rev, &items, cont),
    ))
}

fn value_response(v: &Value) -> Response {
    json_response(StatusCode::OK, Bytes::from(v.to_string()))
}

/// The single entry point: every request comes here.
pub(crate) async fn handle(State(st): State<AppState>, req: Request) -> Response {
    if !st.config.allow_remote {
        let host = req
            .headers()
            .get(header::HOST)
            .map(|h| h.to_str().unwrap_or("\u{fffd}"));
        if let Err(e) = host::check(host) {
            return e.into_response();
        }
    }
    match route(&st, req).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

/// A parsed resource path.
#[derive(Debug)]
struct Target {
    ridx: usize,
    def: ResourceDef,
    namespace: Option<String>,
    name: Option<String>,
    status: bool,
}

async fn route(st: &AppState, req: Request) -> Result<Response, ApiError> {
    let path = req.uri().path().to_string();
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let resources = st.store.resources();
    let (group, version, rest) = match segs.as_slice() {
        ["version"] => return Ok(value_response(&discovery::version())),
        ["healthz" | "readyz" | "livez"] => return Ok((StatusCode::OK, "ok").into_response()),
        ["debug", "kinformer", "writes"] => return Ok(value_response(&st.audit.to_json())),
        ["api"] => return Ok(value_response(&discovery::core_versions())),
        ["openapi", "v2"] => {
            let accept = req
                .headers()
                .get(header::ACCEPT)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            return Ok(if accept.contains(openapi::V2_PROTOBUF) {
                typed_response(
                    StatusCode::OK,
                    Bytes::from(openapi::v2_protobuf()),
                    // As kube-apiserver: Go's mime parser refuses the requested type's `@`.
                    "application/octet-stream",
                )
            } else {
                value_response(&openapi::v2_json())
            });
        }
        ["openapi", "v3"] => return Ok(value_response(&openapi::index(&resources))),
        ["openapi", "v3", rest @ ..] => {
            return openapi::document(&resources, rest)
                .map(|v| value_response(&v))
                .ok_or_else(|| ApiError::unknown_path(&path));
        }
        ["api", "v1"] => {
            return discovery::resource_list(&resources, "", "v1")
                .map(|v| value_response(&v))
                .ok_or_else(|| ApiError::unknown_path(&path));
        }
        ["apis"] => return Ok(value_response(&discovery::group_list(&resources))),
        ["apis", g] => {
            return discovery::group(&resources, g)
                .map(|v| value_response(&v))
                .ok_or_else(|| ApiError::unknown_path(&path));
        }
        ["apis", g, v] => {
            return discovery::resource_list(&resources, g, v)
                .map(|v| value_response(&v))
                .ok_or_else(|| ApiError::unknown_path(&path));
        }
        ["api", "v1", rest @ ..] => ("", "v1", rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return Err(ApiError::unknown_path(&path)),
    };
    let target = parse_target(&st.store, group, version, rest)
        .ok_or_else(|| ApiError::unknown_path(&path))?;
    let query = Query::parse(req.uri().query())?;
    validate::field_selector(&target.def, &query.field_selector)?;
    let method = req.method().clone();
    let kind = match (&method, &target.name) {
        (&Method::GET, Some(_)) => RequestKind::Get,
        (&Method::GET, None) if query.watch => RequestKind::Watch,
        (&Method::GET, None) => RequestKind::List {
            continued: query.continue_token.is_some(),
        },
        _ => RequestKind::Write,
    };
    // A watch is subject to every `close_all_watches` made after its request arrived, even one
    // made before its stream starts.
    let closes = st.faults.watch_closes();
    let request = format!("{method} {}", req.uri());
    st.requests.record(&request);
    let faults = st.faults.on_request(kind, &target.def.plural, &request);
    let mut expire_continue = false;
    for f in &faults {
        match f {
            Fault::Delay(d) => tokio::time::sleep(*d).await,
            Fault::TooManyRequests { retry_after_secs } => {
                return Err(ApiError::too_many_requests(*retry_after_secs));
            }
            Fault::InternalError => return Err(ApiError::internal("injected internal error")),
            Fault::ExpireContinue => expire_continue = true,
            _ => {}
        }
    }
    let writer = if st.audit.is_enabled() && kind == RequestKind::Write {
        Some(writer_of(&req))
    } else {
        None
    };
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    if matches!(method, Method::POST | Method::PUT)
        || (method == Method::DELETE && !content_type.is_empty())
    {
        require_json(&content_type)?;
    }
    let accept = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok());
    let format = if st.config.json_only {
        media::negotiate_json(accept)?
    } else {
        media::negotiate(accept, &target.def)?
    };
    // `kubectl get` asks for a server-side Table (reads and watches).
    let table = if method == Method::GET && table::wants_table(accept) {
        Some(table::IncludeObject::parse(req.uri().query())?)
    } else {
        None
    };
    let limit = st.config.max_body_bytes;
    let read = read_body(req.into_body(), limit);
    let body = tokio::time::timeout(st.config.body_read_timeout, read)
        .await
        .map_err(|_| ApiError::body_timeout(st.config.body_read_timeout))??;
    let ns = target.namespace.as_deref();
    let s = &st.store;
    if let Some(name) = &target.name
        && namespaces::is_namespaces(&target.def)
    {
        match method {
            Method::PUT | Method::PATCH => namespaces::materialize(s, target.ridx, name)?,
            Method::DELETE => {
                if let Some(ns) = namespaces::delete_implied(s, target.ridx, name)? {
                    return object_response(&target.def, format, StatusCode::OK, &ns);
                }
            }
            _ => {}
        }
    }
    if let Some(writer) = writer {
        let verb = method.to_string();
        let body_value: Option<Value> = serde_json::from_slice(&body).ok();
        let name = target
            .name
            .clone()
            .or_else(|| {
                body_value
                    .as_ref()
                    .and_then(|v| v["metadata"]["name"].as_str().map(str::to_owned))
            })
            .unwrap_or_default();
        let before = target
            .name
            .as_deref()
            .and_then(|n| s.get_at(target.ridx, ns, n))
            .and_then(|o| o.to_value().ok());
        let result = write(st, method, &target, ns, query, &content_type, &body, format).await;
        let code = match &result {
            Ok(r) => r.status().as_u16(),
            Err(e) => e.code,
        };
        let namespace = ns.map(str::to_owned).unwrap_or_else(|| {
            body_value
                .as_ref()
                .and_then(|v| v["metadata"]["namespace"].as_str().map(str::to_owned))
                .unwrap_or_default()
        });
        st.audit.record(audit::Write {
            writer: &writer,
            verb: &verb,
            kind: &target.def.kind,
            namespace: &namespace,
            name: &name,
            object: body_value
                .as_ref()
                .filter(|v| audit::controller_owner(v).is_some())
                .or(before.as_ref()),
            code,
        });
        return result;
    }
    if method != Method::GET {
        return write(st, method, &target, ns, query, &content_type, &body, format).await;
    }
    match (method, target.name.as_deref()) {
        (Method::GET, Some(name)) => {
            let o = match s.get_at(target.ridx, ns, name) {
                Some(o) => Some(o),
                None if namespaces::is_namespaces(&target.def) => namespaces::get_implied(s, name)?,
                None => None,
            }
            .ok_or_else(|| ApiError::not_found(&target.def.group, &target.def.plural, name))?;
            if let Some(include) = table {
                return Ok(json_response(
                    StatusCode::OK,
                    table::object_table(&target.def, &o, include)?,
                ));
            }
            object_response(&target.def, format, StatusCode::OK, &o)
        }
        (Method::GET, None) if query.watch => {
            start_watch(st, &target, query, faults, closes, format, table).await
        }
        (Method::GET, None) => {
            // A watch cache answers a list at version 0 in one response.
            let whole;
            let query = if st.config.watch_cache_lists
                && query.continue_token.is_none()
                && query.resource_version == Some(0)
                && query.limit > 0
            {
                whole = Query {
                    limit: 0,
                    ..query.clone()
                };
                &whole
            } else {
                &query
            };
            let page = list::list_objects(
                s,
                target.ridx,
                ns,
                query,
                expire_continue,
                st.config.rv_wait,
            )
            .await?;
            let page = if namespaces::is_namespaces(&target.def) {
                namespaces::add_implied(s, query, page)?
            } else {
                page
            };
            if let Some(include) = table {
                return Ok(json_response(
                    StatusCode::OK,
                    table::list_table(
                        &target.def,
                        page.revision,
                        &page.items,
                        page.continue_token,
                        include,
                    )?,
                ));
            }
            list_response(
                &target.def,
                format,
                page.revision,
                page.items,
                page.continue_token,
            )
        }
        _ => Err(ApiError::method_not_allowed()),
    }
}

/// The writer of a request for the audit: `fieldManager`, else `User-Agent`.
fn writer_of(req: &Request) -> String {
    let manager = req.uri().query().and_then(|q| {
        q.split('&')
            .find_map(|kv| kv.strip_prefix("fieldManager="))
            .and_then(|v| crate::query::percent_decode(v).ok())
    });
    manager
        .or_else(|| {
            req.headers()
                .get(header::USER_AGENT)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        })
        .unwrap_or_default()
}

/// The write verbs of a resource path.
#[allow(clippy::too_many_arguments)]
async fn write(
    st: &AppState,
    method: Method,
    target: &Target,
    ns: Option<&str>,
    query: Query,
    content_type: &str,
    body: &[u8],
    format: Format,
) -> Result<Response, ApiError> {
    let s = &st.store;
    let content_type = content_type.to_owned();
    match (method, target.name.as_deref()) {
        (Method::POST, None) => {
            let v = parse_body_as(&target.def, &content_type, body)?;
            let o = s.create_at(target.ridx, ns, v)?;
            object_response(&target.def, format, StatusCode::CREATED, &o)
        }
        (Method::PUT, Some(name)) => {
            let v = parse_body_as(&target.def, &content_type, body)?;
            let o = s.update_at(target.ridx, ns, name, v, target.status)?;
            object_response(&target.def, format, StatusCode::OK, &o)
        }
        (Method::PATCH, Some(name)) => {
            let pt = patch_type(&content_type)?;
            let v: Value = serde_json::from_slice(body).map_err(|e| {
                ApiError::bad_request(format!("the request body is not valid JSON: {e}"))
            })?;
            let o = s.patch_at(target.ridx, ns, name, pt, &v, target.status)?;
            object_response(&target.def, format, StatusCode::OK, &o)
        }
        (Method::DELETE, Some(name)) => {
            let opts = if body.is_empty() {
                Value::Null
            } else {
                parse_body(body)?
            };
            let pre = opts.get("preconditions");
            let rv = pre
                .and_then(|p| p.get("resourceVersion"))
                .and_then(Value::as_str);
            let uid = pre.and_then(|p| p.get("uid")).and_then(Value::as_str);
            let o = s.delete_at(target.ridx, ns, name, rv, uid)?;
            if namespaces::is_namespaces(&target.def) {
                namespaces::delete_contents(s, name)?;
            }
            object_response(&target.def, format, StatusCode::OK, &o)
        }
        (Method::DELETE, None)
            if (target.def.namespaced && ns.is_none())
                || (target.def.group.is_empty() && target.def.plural == "namespaces") =>
        {
            // Kubernetes offers no cluster-wide collection delete of namespaced resources
            // (nor of namespaces).
            Err(ApiError::method_not_allowed())
        }
        (Method::DELETE, None) => {
            let page = s.list_page(target.ridx, ns, None, None, 0, |o| {
                list::selects(&query.label_selector, &query.field_selector, o)
            })?;
            let mut deleted = Vec::new();
            for o in &page.items {
                match s.delete_at(
                    target.ridx,
                    Some(o.namespace.as_str()).filter(|n| !n.is_empty()),
                    &o.name,
                    None,
                    None,
                ) {
                    Ok(d) => deleted.push(d),
                    Err(e) if e.code == 404 => {}
                    Err(e) => return Err(e),
                }
            }
            list_response(&target.def, format, s.revision(), deleted, None)
        }
        _ => Err(ApiError::method_not_allowed()),
    }
}

fn parse_target(store: &Store, group: &str, version: &str, rest: &[&str]) -> Option<Target> {
    let lookup = |plural: &str| store.lookup(group, version, plural);
    let (namespace, rest) = match rest {
        ["namespaces", ns, plural, tail @ ..]
            if lookup(plural).is_some_and(|(_, d)| d.namespaced) =>
        {
            (Some(ns.to_string()), {
                let mut v = vec![*plural];
                v.extend_from_slice(tail);
                v
            })
        }
        _ => (None, rest.to_vec()),
    };
    let (plural, name, sub) = match rest.as_slice() {
        [p] => (*p, None, None),
        [p, n] => (*p, Some(n.to_string()), None),
        [p, n, s] => (*p, Some(n.to_string()), Some(*s)),
        _ => return None,
    };
    let (ridx, def) = lookup(plural)?;
    if !def.namespaced && namespace.is_some() {
        return None;
    }
    let status = match sub {
        None => false,
        Some("status") if def.status_subresource => true,
        Some(_) => return None,
    };
    Some(Target {
        ridx,
        def,
        namespace,
        name,
        status,
    })
}

/// Reads a request body of at most `limit` bytes: 413 beyond, 400 for a body that breaks off
/// or is malformed (a bad chunk size, say).
async fn read_body(body: Body, limit: usize) -> Result<Bytes, ApiError> {
    use futures::StreamExt;
    let mut stream = body.into_data_stream();
    let mut out = bytes::BytesMut::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk
            .map_err(|e| ApiError::bad_request(format!("cannot read the request body: {e}")))?;
        if out.len() + chunk.len() > limit {
            return Err(ApiError::too_large(limit));
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out.freeze())
}

/// 415 unless `ct` is JSON (or empty, which Kubernetes reads as JSON) or Kubernetes protobuf
/// (which the body parser accepts for built-in kinds only). Cross-site form posts
/// (`text/plain`, `application/x-www-form-urlencoded`, `multipart/form-data`) are refused.
fn require_json(ct: &str) -> Result<(), ApiError> {
    let base = ct.split(';').next().unwrap_or("").trim();
    if base.is_empty() || base.eq_ignore_ascii_case("application/json") || media::is_protobuf(base)
    {
        Ok(())
    } else {
        Err(ApiError::unsupported_media_type(base))
    }
}

/// A create or update body: protobuf when its content type says so, JSON otherwise.
fn parse_body_as(def: &ResourceDef, content_type: &str, body: &[u8]) -> Result<Value, ApiError> {
    if media::is_protobuf(content_type) {
        media::protobuf_body(def, body)
    } else {
        parse_body(body)
    }
}

fn parse_body(body: &[u8]) -> Result<Value, ApiError> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("the request body is not valid JSON: {e}")))?;
    if !v.is_object() {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    }
    Ok(v)
}

fn patch_type(ct: &str) -> Result<PatchType, ApiError> {
    let base = ct.split(';').next().unwrap_or("").trim();
    match base {
        "application/merge-patch+json" => Ok(PatchType::Merge),
        "application/json-patch+json" => Ok(PatchType::Json),
        "application/strategic-merge-patch+json" => Ok(PatchType::StrategicMerge),
        "application/apply-patch+yaml" | "application/apply-patch+json" => Ok(PatchType::Apply),
        other => Err(ApiError::unsupported_media_type(other)),
    }
}

async fn start_watch(
    st: &AppState,
    t: &Target,
    q: Query,
    faults: Vec<Fault>,
    closes: tokio::sync::watch::Receiver<u64>,
    format: Format,
    table: Option<table::IncludeObject>,
) -> Result<Response, ApiError> {
    let store = &st.store;
    let protobuf = matches!(format, Format::Protobuf { .. });
    if faults.contains(&Fault::WatchGone) {
        let line = watch::error_event(
            &ApiError::gone("too old resource version: injected"),
            protobuf,
        );
        return Ok(stream_response(one_line(line), protobuf));
    }
    if st.config.no_watch_list && q.send_initial_events == Some(true) {
        st.stats.watch_lists_refused.fetch_add(1, Ordering::Relaxed);
        return Err(watch_list_forbidden());
    }
    let start = match (q.send_initial_events, q.resource_version) {
        (Some(true), rv) => {
            if q.rv_match != Some(RvMatch::NotOlderThan) {
                return Err(ApiError::new(
                    422,
                    "Invalid",
                    "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless resourceVersionMatch is set to NotOlderThan",
                ));
            }
            if !q.allow_bookmarks {
                return Err(ApiError::new(
                    422,
                    "Invalid",
                    "allowWatchBookmarks: Required value: allowWatchBookmarks must be set to true when sendInitialEvents is specified",
                ));
            }
            if let Some(r) = rv.filter(|r| *r > 0) {
                list::await_revision(store, r, st.config.rv_wait).await?;
            }
            WatchStart::Initial { end_bookmark: true }
        }
        (Some(false), None | Some(0)) => WatchStart::After(store.revision()),
        (None, None | Some(0)) => WatchStart::Initial {
            end_bookmark: false,
        },
        (_, Some(r)) => {
            if q.rv_match.is_some() {
                return Err(ApiError::new(
                    422,
                    "Invalid",
                    "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                ));
            }
            list::await_revision(store, r, st.config.rv_wait).await?;
            if r < store.compacted_revision() {
                return Ok(stream_response(
                    one_line(watch::error_event(&ApiError::too_old(r), protobuf)),
                    protobuf,
                ));
            }
            WatchStart::After(r)
        }
    };
    let req = WatchRequest {
        store: store.clone(),
        ridx: t.ridx,
        def: t.def.clone(),
        namespace: t.namespace.clone(),
        label: q.label_selector,
        field: q.field_selector,
        start,
        bookmarks: q.allow_bookmarks.then_some(st.config.bookmark_interval),
        timeout: q
            .timeout
            .unwrap_or(st.config.default_watch_timeout)
            .max(Duration::from_millis(1)),
        faults,
        closes,
        protobuf,
        table,
        chunks: Arc::clone(&st.stats.watch_chunks),
    };
    let (tx, rx) = mpsc::channel::<Bytes>(16);
    tokio::spawn(watch::run(req, tx));
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<_, std::convert::Infallible>(b), rx))
    });
    Ok(stream_response(Body::from_stream(stream), protobuf))
}

/// What Kubernetes 1.26 answers a watch-list request (and 1.27–1.31 with the `WatchList`
/// feature gate off, in other words): `sendInitialEvents` is not a parameter it knows, and
/// `resourceVersionMatch` is forbidden on a watch.
fn watch_list_forbidden() -> ApiError {
    let field = "resourceVersionMatch";
    let body = "Forbidden: resourceVersionMatch is forbidden for watch";
    ApiError::new(
        422,
        "Invalid",
        format!("ListOptions.meta.k8s.io \"\" is invalid: {field}: {body}"),
    )
    .with_details(serde_json::json!({
        "group": "meta.k8s.io",
        "kind": "ListOptions",
        "causes": [{"reason": "FieldValueForbidden", "message": body, "field": field}],
    }))
}

fn stream_response(body: Body, protobuf: bool) -> Response {
    let mut r = Response::new(body);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(if protobuf {
            media::PROTOBUF_WATCH
        } else {
            "application/json"
        }),
    );
    r.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, private"),
    );
    r
}

fn one_line(line: Bytes) -> Body {
    Body::from_stream(futures::stream::once(async move {
        Ok::<_, std::convert::Infallible>(line)
    }))
}
