//! [`ListerWatcher`] over the `kube` client (feature `kube`).
//!
//! [`KubeListerWatcher`] turns the reflector's [`ListOptions`] / [`WatchOptions`] into the
//! query strings the API server expects and decodes responses object by object, so that one
//! undecodable object is skipped and reported instead of failing a list. In a watch, an
//! undecodable line ends the stream with a [`DecodeError`](crate::cache::listwatch::DecodeError) item:
//! nothing after it is delivered, so no event is skipped (the reflector resumes from its last
//! synced version).
//! It works for typed resources (`k8s-openapi`, custom resources), `DynamicObject`, and
//! metadata-only objects ([`KubeListerWatcher::metadata`] → `PartialObjectMeta<K>`).
//!
//! This module is the transport: the requests (query strings, `Accept`, the choice of decoder
//! by the response's `Content-Type`), what is learnt of the server ([`ServerCapabilities`]),
//! `kube::Error` mapped onto [`ListWatchError`],
//! list bodies read as they arrive (and their batches decoded on tasks of their own), writes,
//! and the factory's constructors. The decoders themselves (JSON and protobuf, lists and
//! watch events) are the crate's codec layer, below the cache; [`decode_list`],
//! [`decode_watch_line`], `decode_protobuf_list` and [`Wire`] are re-exported here.
//!
//! Differences from `kube::Api`, on purpose:
//! - a list at `resourceVersion=0` with a `limit` still sends `resourceVersion=0` (kube drops
//!   it when a limit is set; client-go sends both, and the reflector's page-size rules assume
//!   it);
//! - a watch that stays silent past `timeoutSeconds` + 30 s ends (cleanly), so that a silently
//!   dropped connection is noticed and re-watched;
//! - a list that has not completed (a list that streams in: whose next bytes have not
//!   arrived), or a watch whose response has not begun, within the request timeout (default
//!   60 s, [`KubeListerWatcher::with_request_timeout`]) fails with a
//!   transport error, so the reflector backs off and retries. Without it a request can wait
//!   forever: when the server closes a keep-alive connection just as the client queues a
//!   request on it, the HTTP client can lose the request without completing or failing it.
//!
//! **Paged lists overlap** ([`ListerWatcher::list_prefetching`], which the
//! [`ListPager`](crate::cache::listwatch::ListPager) uses): once a page's body has arrived, the
//! continue token is read from the list's metadata without decoding the items (in JSON, when
//! `metadata` comes before `items`, as API servers write it; in protobuf, `ListMeta` is field
//! 1), the request for the next page is started on a task of its own, and the page is decoded
//! while the server works on the next one. That task also decodes the next page, at the same
//! time as the caller decodes this one (and only starts the request for the page after it,
//! which the caller decodes in turn): on a multi-thread runtime a paged list decodes on two
//! cores, at most one page ahead of the caller.
//!
//! **Large lists stream** ([`KubeListerWatcher::with_stream_lists_above`], 4 MiB by default):
//! a real API server answers a list at `resourceVersion=0` from its watch cache in one
//! response, whatever `limit` says. A response that grows past the threshold is not read whole:
//! its items are split off as its bytes arrive, decoded in batches of up to 500 on tasks of
//! their own, and handed to the pager (and so to the reflector and the cache) part by part,
//! the list's version and continue token with the last part. A lean informer then holds its
//! cache and a window of a few MiB, not the list. A response cut off, malformed, stalled for
//! the request timeout, or holding an item over [`KubeListerWatcher::with_max_item_bytes`]
//! fails the list with an error naming the item's position and byte offset.
//!
//! Retry-After comes from the status body's `details.retryAfterSeconds`: kube does not expose
//! response headers; the API server sets both to the same value.
//!
//! **Wire format** ([`Wire`], [`KubeListerWatcher::with_wire`]): by default lists and watches of
//! built-in kinds ask for Kubernetes protobuf with JSON as the fallback (`Accept:
//! application/vnd.kubernetes.protobuf, application/json`), as client-go does; custom
//! resources and metadata-only lists ask for JSON. The response's `Content-Type` decides how
//! it is decoded, object by object either way.
//!
//! **Writes** ([`create`], [`replace`]) send built-in kinds in protobuf too, as client-go does;
//! the library's own writes (leader election's lease) go through them.
//!
//! **Learnt once per client** ([`ServerCapabilities`], shared by the sources of one
//! [`SharedInformerFactory`](crate::cache::SharedInformerFactory) or given with
//! [`KubeListerWatcher::with_capabilities`]): a server that refuses watch-list requests
//! (Kubernetes 1.26–1.31 by default) is listed and watched from then on; an API group that
//! answers a protobuf request with JSON, 406 or 415 is asked for JSON from then on (a 406 or
//! 415 is retried at once in JSON). Each is logged once, at `info`.
//!
//! **Build the client with `Config::default_retry = false`.** kube 5 retries 429, 503 and 504
//! inside the client by default (up to 15 times); that hides throttling from the reflector's
//! backoff and delays its reaction to a too-large resource version (a 504), which should be a
//! relist from `""` at once. With the default left on everything still converges, only more
//! slowly under those errors.

mod capabilities;
mod error;
mod factory;
mod list_stream;
mod response;
mod wire;
mod writes;

pub use capabilities::ServerCapabilities;
pub use factory::KubeClient;
use response::{KubeReadError, continue_token_ahead, decode_whole, watch_events};
pub use writes::{create, create_with, replace, replace_with};

pub use crate::codec::Wire;
pub use crate::codec::json::{decode_list, decode_watch_line};
#[cfg(feature = "protobuf")]
#[cfg_attr(docsrs, doc(cfg(feature = "protobuf")))]
pub use crate::codec::protobuf::decode_list as decode_protobuf_list;

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::time::Duration;

use ::kube::api::{ListParams, VersionMatch, WatchParams};
use ::kube::{Api, Client};
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt, TryStreamExt};
use http_body_util::BodyExt as _;
use kube_core::{PartialObjectMeta, Request, Resource};
use serde::de::DeserializeOwned;

use list_stream::ListBody;

use crate::codec::json::lines;
#[cfg(feature = "protobuf")]
use crate::codec::protobuf;

use crate::cache::listwatch::{
    ListOptions, ListWatchError, ListerWatcher, NextPage, ObjectList, PrefetchedPage,
    ResourceVersionMatch, Selectors, TransportErrorKind, WatchListSupport, WatchOptions,
    WatchStream,
};

/// How long past its `timeoutSeconds` a silent watch is kept open.
const WATCH_GRACE: Duration = Duration::from_secs(30);

/// The default [`KubeListerWatcher::with_request_timeout`].
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// The default [`KubeListerWatcher::with_stream_lists_above`]: 4 MiB.
pub const DEFAULT_STREAM_LISTS_ABOVE: usize = 4 << 20;

/// The default [`KubeListerWatcher::with_max_item_bytes`]: 64 MiB.
pub const DEFAULT_MAX_ITEM_BYTES: usize = crate::codec::list_stream::DEFAULT_MAX_ITEM;

/// A [`ListerWatcher`] over a `kube::Api`.
///
/// ```
/// use k8s_openapi::api::core::v1::{ConfigMap, Pod};
/// use kinformer::kube::KubeListerWatcher;
/// use kube::{Api, Client, Config};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let mut config = Config::new("http://127.0.0.1:6443".parse().unwrap());
/// config.default_retry = false; // the reflector retries (see the module docs)
/// let client = Client::try_from(config).unwrap();
/// // Every pod in the cluster with label app=web:
/// let pods = KubeListerWatcher::new(Api::<Pod>::all(client.clone())).labels("app=web");
/// // Only the metadata of config maps in one namespace:
/// let cms = KubeListerWatcher::metadata(Api::<ConfigMap>::namespaced(client, "default"));
/// # let _ = (pods, cms);
/// # });
/// ```
pub struct KubeListerWatcher<K> {
    client: Client,
    request: Request,
    metadata: bool,
    selectors: Selectors,
    request_timeout: Duration,
    max_item_bytes: usize,
    stream_above: usize,
    wire: Wire,
    capabilities: ServerCapabilities,
    _k: PhantomData<fn() -> K>,
}

impl<K> Clone for KubeListerWatcher<K> {
    fn clone(&self) -> Self {
        Self {
            client: self.client.clone(),
            request: Request::new(self.request.url_path.clone()),
            metadata: self.metadata,
            selectors: self.selectors.clone(),
            request_timeout: self.request_timeout,
            max_item_bytes: self.max_item_bytes,
            stream_above: self.stream_above,
            wire: self.wire,
            capabilities: self.capabilities.clone(),
            _k: PhantomData,
        }
    }
}

impl<K> fmt::Debug for KubeListerWatcher<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KubeListerWatcher")
            .field("url", &self.request.url_path)
            .field("metadata", &self.metadata)
            .field("selectors", &self.selectors)
            .field("wire", &self.wire)
            .field("capabilities", &self.capabilities)
            .finish_non_exhaustive()
    }
}

impl<K> KubeListerWatcher<K>
where
    K: Resource + DeserializeOwned + Send + Sync + 'static,
{
    /// Lists and watches the objects `api` addresses (all namespaces or one), decoded as `K`:
    /// a typed resource or `DynamicObject`.
    pub fn new(api: Api<K>) -> Self {
        Self::from_parts(api.resource_url().to_owned(), api.into_client(), false)
    }
}

impl<K> KubeListerWatcher<PartialObjectMeta<K>>
where
    K: Resource + Send + Sync + 'static,
    PartialObjectMeta<K>: Resource + DeserializeOwned,
{
    /// Lists and watches only the metadata of the objects `api` addresses (the server sends
    /// `PartialObjectMetadata`; much less memory for big objects).
    pub fn metadata(api: Api<K>) -> Self {
        Self::from_parts(api.resource_url().to_owned(), api.into_client(), true)
    }
}

impl<K> KubeListerWatcher<K> {
    pub(crate) fn from_parts(url_path: String, client: Client, metadata: bool) -> Self {
        Self {
            client,
            request: Request::new(url_path),
            metadata,
            selectors: Selectors::default(),
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            max_item_bytes: DEFAULT_MAX_ITEM_BYTES,
            stream_above: DEFAULT_STREAM_LISTS_ABOVE,
            wire: Wire::default(),
            capabilities: ServerCapabilities::new(),
            _k: PhantomData,
        }
    }

    /// Shares `capabilities` (what is known of the server) with other sources of the same
    /// client, so that a refused watch-list or protobuf request is learnt once for all of
    /// them. Each source has a record of its own by default.
    #[must_use]
    pub fn with_capabilities(mut self, capabilities: ServerCapabilities) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// What this source knows of its server.
    pub fn capabilities(&self) -> &ServerCapabilities {
        &self.capabilities
    }

    /// Which encoding to ask for (default [`Wire::Protobuf`]: protobuf for built-in kinds).
    #[must_use]
    pub fn with_wire(mut self, wire: Wire) -> Self {
        self.wire = wire;
        self
    }

    /// True if requests ask for protobuf: [`Wire::Protobuf`], a built-in kind, full objects
    /// (typed, or [`Lazy`](crate::cache::Lazy), which keeps the protobuf bytes; not
    /// metadata-only), and the API group not known to answer JSON
    /// ([`ServerCapabilities::protobuf`]).
    pub fn asks_for_protobuf(&self) -> bool {
        cfg!(feature = "protobuf")
            && self.wire == Wire::Protobuf
            && !self.metadata
            && wire::is_builtin_url(&self.request.url_path)
            && self.capabilities.protobuf(&self.request.url_path)
    }

    /// How long a list may take to complete, and a watch to begin its response, before the
    /// call fails with a transport error (default [`DEFAULT_REQUEST_TIMEOUT`]). Lists are
    /// paged by the reflector, so one page rarely needs more than a second or two; a list
    /// that streams in (see [`with_stream_lists_above`](Self::with_stream_lists_above)) may
    /// take longer as a whole, but fails when its bytes stop arriving for this long.
    #[must_use]
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// The largest list item accepted, in bytes (default [`DEFAULT_MAX_ITEM_BYTES`], 64 MiB).
    /// A list response that streams in (one larger than 4 MiB, see the module docs) fails with
    /// an error naming the item when one is longer; the reflector then retries the list.
    #[must_use]
    pub fn with_max_item_bytes(mut self, bytes: usize) -> Self {
        self.max_item_bytes = bytes;
        self
    }

    /// List responses larger than this many bytes are decoded as they stream in, batch by
    /// batch, instead of being read whole first (default [`DEFAULT_STREAM_LISTS_ABOVE`],
    /// 4 MiB: every page of a paged list is read whole, a list that a server answers in one
    /// response streams). At most about this many bytes of a response are held before its
    /// items are handed on.
    #[must_use]
    pub fn with_stream_lists_above(mut self, bytes: usize) -> Self {
        self.stream_above = bytes;
        self
    }

    /// Restricts every list and watch by a label selector (unless the options carry one).
    #[must_use]
    pub fn labels(mut self, selector: &str) -> Self {
        self.selectors.label_selector = Some(selector.to_owned());
        self
    }

    /// Restricts every list and watch by a field selector (unless the options carry one).
    #[must_use]
    pub fn fields(mut self, selector: &str) -> Self {
        self.selectors.field_selector = Some(selector.to_owned());
        self
    }

    /// The resource URL path, e.g. `/api/v1/namespaces/default/pods`.
    pub fn url_path(&self) -> &str {
        &self.request.url_path
    }

    fn selectors_for(&self, requested: &Selectors) -> Selectors {
        Selectors {
            label_selector: requested
                .label_selector
                .clone()
                .or_else(|| self.selectors.label_selector.clone()),
            field_selector: requested
                .field_selector
                .clone()
                .or_else(|| self.selectors.field_selector.clone()),
        }
    }

    #[cfg(test)]
    fn list_request(&self, o: &ListOptions) -> Result<http::Request<Vec<u8>>, ListWatchError> {
        self.list_request_as(o, self.asks_for_protobuf())
    }

    fn list_request_as(
        &self,
        o: &ListOptions,
        protobuf: bool,
    ) -> Result<http::Request<Vec<u8>>, ListWatchError> {
        let selectors = self.selectors_for(&o.selectors);
        let lp = ListParams {
            label_selector: selectors.label_selector,
            field_selector: selectors.field_selector,
            limit: o.limit.filter(|l| *l > 0),
            continue_token: o.continue_token.clone().filter(|t| !t.is_empty()),
            resource_version: o.resource_version.clone().filter(|rv| !rv.is_empty()),
            version_match: o.resource_version_match.map(|m| match m {
                ResourceVersionMatch::NotOlderThan => VersionMatch::NotOlderThan,
                ResourceVersionMatch::Exact => VersionMatch::Exact,
            }),
            ..ListParams::default()
        };
        let mut req = if self.metadata {
            self.request.list_metadata(&lp)
        } else {
            self.request.list(&lp)
        }
        .map_err(|e| ListWatchError::InvalidRequest(e.to_string()))?;
        // kube leaves out resourceVersion=0 when a limit is set; send it as client-go does.
        if lp.continue_token.is_none()
            && lp.limit.is_some()
            && lp.resource_version.as_deref() == Some("0")
        {
            let uri = req.uri().to_string();
            let query_start = uri.find('?').map_or(uri.len(), |i| i + 1);
            let mut query = form_urlencoded::Serializer::for_suffix(uri, query_start);
            query.append_pair("resourceVersion", "0");
            if let Some(m) = o.resource_version_match {
                query.append_pair("resourceVersionMatch", m.as_str());
            }
            *req.uri_mut() = query.finish().parse().map_err(|e: http::uri::InvalidUri| {
                ListWatchError::InvalidRequest(e.to_string())
            })?;
        }
        accept(&mut req, protobuf);
        Ok(req)
    }

    #[cfg(test)]
    fn watch_request(&self, o: &WatchOptions) -> Result<http::Request<Vec<u8>>, ListWatchError> {
        self.watch_request_as(o, self.asks_for_protobuf())
    }

    fn watch_request_as(
        &self,
        o: &WatchOptions,
        protobuf: bool,
    ) -> Result<http::Request<Vec<u8>>, ListWatchError> {
        let selectors = self.selectors_for(&o.selectors);
        let wp = WatchParams {
            label_selector: selectors.label_selector,
            field_selector: selectors.field_selector,
            timeout: o
                .timeout
                .map(|t| u32::try_from(t.as_secs()).unwrap_or(u32::MAX)),
            bookmarks: o.allow_bookmarks || o.send_initial_events,
            send_initial_events: o.send_initial_events,
        };
        let rv = o.resource_version_str();
        let mut req = if self.metadata {
            self.request.watch_metadata(&wp, rv)
        } else {
            self.request.watch(&wp, rv)
        }
        .map_err(|e| ListWatchError::InvalidRequest(e.to_string()))?;
        // One JSON event per line, uncompressed (as kube's own watch does).
        req.headers_mut().insert(
            http::header::ACCEPT_ENCODING,
            http::HeaderValue::from_static("identity"),
        );
        accept(&mut req, protobuf);
        Ok(req)
    }

    fn learner(&self) -> Learner {
        Learner {
            capabilities: self.capabilities.clone(),
            url: self.request.url_path.clone(),
        }
    }

    /// Whether to ask for protobuf; if so, and objects are decoded in full, the schema is
    /// built meanwhile.
    fn protobuf_prepared(&self) -> bool
    where
        K: DeserializeOwned,
    {
        let raw = self.asks_for_protobuf();
        #[cfg(feature = "protobuf")]
        if raw && !crate::codec::keeps_bytes::<K>() {
            protobuf::prepare_schema();
        }
        raw
    }

    /// The body of the list request for `options`: in protobuf first if it
    /// [asks for it](Self::asks_for_protobuf) (learning from the answer), in JSON otherwise or
    /// after a 406 or 415. Within the request timeout; independent of `self` once made.
    fn fetch_list(
        &self,
        options: &ListOptions,
    ) -> impl Future<Output = Result<ListBody, ListWatchError>> + Send + use<K>
    where
        K: DeserializeOwned,
    {
        let raw = self.protobuf_prepared();
        let req = raw.then(|| self.list_request_as(options, true));
        let json_req = self.list_request_as(options, false);
        let learn = self.learner();
        let client = self.client.clone();
        let limit = self.request_timeout;
        let max_item = self.max_item_bytes;
        let stream = list_stream::Streamed {
            above: self.stream_above,
            idle: limit,
            max_item,
        };
        async move {
            if let Some(req) = req {
                match within(limit, "list", fetch_list_body(&client, req?, stream)).await? {
                    Ok(body) => {
                        learn.response(body.content_type());
                        return Ok(body);
                    }
                    Err(e) if refuses_protobuf(&e) => {
                        learn.no_protobuf(&format!("answered {e}"));
                    }
                    Err(e) => return Err(e),
                }
            }
            within(limit, "list", fetch_list_body(&client, json_req?, stream)).await?
        }
    }
}

impl<K> KubeListerWatcher<K>
where
    K: Resource + DeserializeOwned + Send + Sync + 'static,
{
    /// The page listed with `options`, whose body is `body`, decoded where this future runs;
    /// the request for the next page is started (on a task of its own) before the page is
    /// decoded, if its continue token is found without decoding it.
    ///
    /// Pages are decoded two at a time, alternately on the caller's task and on the task of
    /// the next page's request: while the caller decodes a page, the next page's task fetches
    /// and decodes that page (and only starts the request for the page after it, which the
    /// caller decodes in turn). So a paged list decodes on two cores, at most one page ahead
    /// of the caller, where decoding on the caller alone would bound it.
    fn prefetching(
        self,
        options: ListOptions,
        body: ListBody,
        decoded_by: DecodedBy,
    ) -> BoxFuture<'static, Result<PrefetchedPage<K>, ListWatchError>> {
        async move {
            let (content_type, body) = match body {
                ListBody::Streaming(streaming) => {
                    // Too large to hold: its parts are decoded as they are taken.
                    return streaming.into_rest::<K>().next().await;
                }
                ListBody::Whole { content_type, body } => (content_type, body),
            };
            let next = match continue_token_ahead(&content_type, &body) {
                Some(token) => {
                    let options = options.next_page(&token);
                    let fetch = self.fetch_list(&options);
                    Some(match decoded_by {
                        DecodedBy::Caller => {
                            let lw = self.clone();
                            let fetch = async move {
                                lw.prefetching(options, fetch.await?, DecodedBy::Task).await
                            };
                            NextPage::start(token, fetch, std::future::ready).await
                        }
                        DecodedBy::Task => {
                            let then = move |body: Result<ListBody, ListWatchError>| async move {
                                self.prefetching(options, body?, DecodedBy::Caller).await
                            };
                            NextPage::start(token, fetch, then).await
                        }
                    })
                }
                None => None,
            };
            Ok(PrefetchedPage::with_next(
                decode_whole(&content_type, &body)?,
                next,
            ))
        }
        .boxed()
    }
}

/// Where a list page is decoded (see [`KubeListerWatcher::prefetching`]).
#[derive(Debug, Clone, Copy)]
enum DecodedBy {
    /// The task that asked for the page.
    Caller,
    /// The task that fetched it, started by the page before.
    Task,
}

/// Records in a request's future what its answer says about the server.
struct Learner {
    capabilities: ServerCapabilities,
    url: String,
}

impl Learner {
    /// Learns from a response to a protobuf request: JSON back means the API group does not
    /// speak protobuf.
    fn response(&self, content_type: &str) {
        #[cfg(feature = "protobuf")]
        if !protobuf::is_protobuf(content_type) {
            self.no_protobuf(&format!("answered {content_type:?}"));
        }
        let _ = content_type;
    }

    fn no_protobuf(&self, why: &str) {
        if self.capabilities.set_no_protobuf(&self.url) {
            tracing::info!(
                url = %self.url,
                "the server {why} to a protobuf request; asking this API group for JSON from now on"
            );
        }
    }
}

/// Sets `Accept` for protobuf with the JSON fallback (otherwise kube's JSON default stays).
fn accept(req: &mut http::Request<Vec<u8>>, protobuf: bool) {
    if protobuf {
        req.headers_mut().insert(
            http::header::ACCEPT,
            http::HeaderValue::from_static(wire::PROTOBUF_ACCEPT),
        );
    }
}

/// 406 Not Acceptable or 415 Unsupported Media Type: the server does not take protobuf here.
fn refuses_protobuf(e: &ListWatchError) -> bool {
    matches!(e.code(), Some(406 | 415))
}

impl<K> ListerWatcher<K> for KubeListerWatcher<K>
where
    K: Resource + DeserializeOwned + Send + Sync + 'static,
{
    fn list(
        &self,
        options: &ListOptions,
    ) -> impl Future<Output = Result<ObjectList<K>, ListWatchError>> + Send {
        let fetch = self.fetch_list(options);
        async move {
            match fetch.await? {
                ListBody::Whole { content_type, body } => decode_whole(&content_type, &body),
                ListBody::Streaming(streaming) => {
                    let first = streaming.into_rest::<K>().next().await?;
                    match first.rest {
                        Some(rest) => rest.join(first.list).await,
                        None => Ok(first.list),
                    }
                }
            }
        }
    }

    /// Once a page's body has arrived, starts the request for the next page on a task of its
    /// own if the continue token is found without decoding the page, then decodes the page.
    fn list_prefetching(
        &self,
        options: &ListOptions,
    ) -> impl Future<Output = Result<PrefetchedPage<K>, ListWatchError>> + Send {
        let fetch = self.fetch_list(options);
        let (lw, options) = (self.clone(), options.clone());
        async move {
            lw.prefetching(options, fetch.await?, DecodedBy::Caller)
                .await
        }
    }

    fn watch(
        &self,
        options: &WatchOptions,
    ) -> impl Future<Output = Result<WatchStream<K>, ListWatchError>> + Send {
        let raw = self.protobuf_prepared();
        let req = raw.then(|| self.watch_request_as(options, true));
        let json_req = self.watch_request_as(options, false);
        let learn = self.learner();
        let client = self.client.clone();
        let deadline = options.timeout.map(|t| t + WATCH_GRACE);
        let limit = self.request_timeout;
        async move {
            let mut events = None;
            if let Some(req) = req {
                match within(limit, "watch", send(&client, req?)).await? {
                    Ok(res) => {
                        let content_type = content_type(&res);
                        learn.response(&content_type);
                        let body = res.into_body().into_data_stream();
                        events = Some(watch_events::<K>(&content_type, body));
                    }
                    Err(e) if refuses_protobuf(&e) => {
                        learn.no_protobuf(&format!("answered {e}"));
                    }
                    Err(e) => return Err(e),
                }
            }
            let events = match events {
                Some(events) => events,
                None => {
                    let res = within(limit, "watch", send(&client, json_req?)).await??;
                    let body = res.into_body().into_data_stream().map_err(KubeReadError);
                    lines::json_events::<K, _, _>(body).boxed()
                }
            };
            let events = events.scan(false, |ended, item| {
                // The first error item is the last item: nothing after a bad line or frame,
                // or a broken stream, is delivered (it would be delivered out of context).
                if *ended {
                    return std::future::ready(None);
                }
                *ended = item.is_err();
                std::future::ready(Some(item))
            });
            let stream: WatchStream<K> = match deadline {
                Some(d) => events.take_until(tokio::time::sleep(d)).boxed(),
                None => events.boxed(),
            };
            Ok(stream)
        }
    }

    fn watch_list_support(&self) -> Option<&WatchListSupport> {
        Some(self.capabilities.watch_list_support())
    }
}

/// Sends a request whose response is read by its content type; error statuses (JSON or
/// protobuf `Status` bodies) become errors, as kube's own requests do.
async fn send(
    client: &Client,
    req: http::Request<Vec<u8>>,
) -> Result<http::Response<::kube::client::Body>, ListWatchError> {
    let res = client
        .send(req.map(::kube::client::Body::from))
        .await
        .map_err(error::from_kube)?;
    let code = res.status();
    if !(code.is_client_error() || code.is_server_error()) {
        return Ok(res);
    }
    let (content_type, body) = read_body(res).await?;
    let status = status_body(&content_type, &body).unwrap_or_else(|| {
        let text = String::from_utf8_lossy(&body);
        kube_core::Status::failure(text.trim(), "Failed to parse error data")
            .with_code(code.as_u16())
    });
    Err(error::from_kube(::kube::Error::Api(status.boxed())))
}

/// An error response's `Status`, JSON or protobuf.
fn status_body(content_type: &str, body: &[u8]) -> Option<kube_core::Status> {
    #[cfg(feature = "protobuf")]
    if protobuf::is_protobuf(content_type) {
        return protobuf::decode_status(body);
    }
    let _ = content_type;
    serde_json::from_slice(body).ok()
}

/// A response's content type and whole body.
async fn read_body(
    res: http::Response<::kube::client::Body>,
) -> Result<(String, bytes::Bytes), ListWatchError> {
    let content_type = content_type(&res);
    let body = res
        .into_body()
        .collect_bytes()
        .await
        .map_err(error::from_kube)?;
    Ok((content_type, body))
}

fn content_type<B>(res: &http::Response<B>) -> String {
    res.headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned()
}

/// Sends a list request and reads its body: whole, or streaming in when it is large (see
/// [`list_stream`]); `idle` bounds each wait for more of a streaming body.
async fn fetch_list_body(
    client: &Client,
    req: http::Request<Vec<u8>>,
    stream: list_stream::Streamed,
) -> Result<ListBody, ListWatchError> {
    let res = send(client, req).await?;
    let content_type = content_type(&res);
    let body = res.into_body().into_data_stream();
    list_stream::read(content_type, body, stream).await
}

/// `fut`, failed with a transport error if it has not finished within `limit`.
async fn within<T>(
    limit: Duration,
    what: &str,
    fut: impl Future<Output = T>,
) -> Result<T, ListWatchError> {
    tokio::time::timeout(limit, fut)
        .await
        .map_err(|_| ListWatchError::Transport {
            kind: TransportErrorKind::Other,
            message: format!("no {what} response within {limit:?}"),
        })
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;

    fn lw() -> KubeListerWatcher<ConfigMap> {
        let config = ::kube::Config::new("http://127.0.0.1:1".parse().unwrap());
        let client = Client::try_from(config).unwrap();
        KubeListerWatcher::new(Api::<ConfigMap>::namespaced(client, "ns")).labels("app=web")
    }

    fn query(req: &http::Request<Vec<u8>>) -> String {
        req.uri().to_string()
    }

    #[tokio::test]
    async fn first_page_at_zero_sends_version_and_limit() {
        let lw = lw();
        let req = lw
            .list_request(&ListOptions {
                resource_version: Some("0".into()),
                limit: Some(500),
                ..ListOptions::default()
            })
            .unwrap();
        let q = query(&req);
        assert!(q.starts_with("/api/v1/namespaces/ns/configmaps?"), "{q}");
        assert!(
            q.contains("limit=500") && q.contains("resourceVersion=0"),
            "{q}"
        );
        assert!(q.contains("labelSelector=app%3Dweb"), "{q}");
    }

    #[tokio::test]
    async fn continue_pages_send_the_token_and_no_version() {
        let req = lw()
            .list_request(&ListOptions {
                limit: Some(500),
                continue_token: Some("abc".into()),
                ..ListOptions::default()
            })
            .unwrap();
        let q = query(&req);
        assert!(
            q.contains("continue=abc") && !q.contains("resourceVersion"),
            "{q}"
        );
    }

    #[tokio::test]
    async fn watch_list_sends_initial_events_bookmarks_and_timeout() {
        let req = lw()
            .watch_request(&WatchOptions {
                resource_version: Some("7".into()),
                timeout: Some(Duration::from_secs(420)),
                allow_bookmarks: true,
                send_initial_events: true,
                resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
                selectors: Selectors::default(),
            })
            .unwrap();
        let q = query(&req);
        for part in [
            "watch=true",
            "timeoutSeconds=420",
            "allowWatchBookmarks=true",
            "sendInitialEvents=true",
            "resourceVersionMatch=NotOlderThan",
            "resourceVersion=7",
        ] {
            assert!(q.contains(part), "{part} missing in {q}");
        }
    }

    #[tokio::test]
    async fn metadata_lists_ask_for_partial_object_metadata() {
        let config = ::kube::Config::new("http://127.0.0.1:1".parse().unwrap());
        let client = Client::try_from(config).unwrap();
        let lw = KubeListerWatcher::metadata(Api::<ConfigMap>::all(client));
        let req = lw.list_request(&ListOptions::default()).unwrap();
        let accept = req
            .headers()
            .get(http::header::ACCEPT)
            .unwrap()
            .to_str()
            .unwrap();
        assert!(accept.contains("PartialObjectMetadataList"), "{accept}");
        assert_eq!(lw.url_path(), "/api/v1/configmaps");
    }

    #[tokio::test]
    async fn dynamic_objects_use_the_api_resource_url() {
        use kube_core::{ApiResource, DynamicObject, GroupVersionKind};
        let config = ::kube::Config::new("http://127.0.0.1:1".parse().unwrap());
        let client = Client::try_from(config).unwrap();
        let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("example.com", "v1", "Widget"));
        let lw: KubeListerWatcher<DynamicObject> =
            KubeListerWatcher::new(Api::namespaced_with(client, "ns", &ar));
        assert_eq!(lw.url_path(), "/apis/example.com/v1/namespaces/ns/widgets");
        let req = lw.watch_request(&WatchOptions::default()).unwrap();
        assert!(req.uri().to_string().contains("watch=true"));
    }

    #[tokio::test]
    async fn a_closed_port_is_connection_refused() {
        let err = lw().list(&ListOptions::default()).await.unwrap_err();
        assert!(err.is_connection_refused(), "{err:?}");
        let err = lw().watch(&WatchOptions::default()).await.err().unwrap();
        assert!(err.is_connection_refused(), "{err:?}");
    }
}
