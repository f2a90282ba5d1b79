//! The paged list of the kube source over HTTP with the next page's request started before a
//! page is decoded ([`ListerWatcher::list_prefetching`]): the same pages as listing them one
//! by one, the next request reaching the server while a page is being decoded, the next page
//! decoded at the same time on a multi-thread runtime, the pager's
//! fallbacks and errors unchanged, and nothing left running when the pager is dropped.
//!
//! The server runs on a runtime of its own (a thread), so that it serves while a test blocks
//! its own runtime in a decode.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] functions

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::{Metadata, NamespaceResourceScope};
use kinformer::cache::Lazy;
use kinformer::cache::listwatch::{
    ListOptions, ListPager, ListWatchError, ListerWatcher, ObjectList, Page,
};
use kinformer::kube::{KubeListerWatcher, Wire};
use kinformer_apiserver::{ApiServer, Fault, FaultRule, Faults, RequestLog, Store, Target};
use kube::{Api, Client, Resource};
use parking_lot::Mutex;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::json;
use tokio::sync::{oneshot, watch};

/// How long a test waits for what must happen before it fails.
const PATIENCE: Duration = Duration::from_secs(30);

/// An API server on a runtime of its own; stopped when dropped.
struct OwnServer {
    config: kube::Config,
    store: Store,
    faults: Faults,
    requests: RequestLog,
    runtime: tokio::runtime::Handle,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl OwnServer {
    fn start() -> Self {
        let (started_tx, started) = std::sync::mpsc::channel();
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let server = ApiServer::start().await.unwrap();
                server.requests().enable();
                let mut config = server.kube_config().unwrap();
                config.default_retry = false;
                started_tx
                    .send((
                        config,
                        server.store().clone(),
                        server.faults().clone(),
                        server.requests().clone(),
                        tokio::runtime::Handle::current(),
                    ))
                    .unwrap();
                let _ = stopped.await;
            });
        });
        let (config, store, faults, requests, runtime) = started.recv().unwrap();
        Self {
            config,
            store,
            faults,
            requests,
            runtime,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// Config maps `names` in `namespace`.
    fn seed(&self, namespace: &str, names: impl IntoIterator<Item = String>) {
        for name in names {
            let cm = json!({"metadata": {"name": name}, "data": {"k": "v"}});
            self.store.create("configmaps", namespace, cm).unwrap();
        }
    }

    /// Has `requests` remember, on the server's runtime, when a request matching `pred`
    /// arrives: the receiver gets it then.
    fn on_request(
        &self,
        pred: impl FnMut(&str) -> bool + Send + 'static,
    ) -> std::sync::mpsc::Receiver<String> {
        let (tx, rx) = std::sync::mpsc::channel();
        let requests = self.requests.clone();
        self.runtime.spawn(async move {
            let _ = tx.send(requests.wait_for(pred).await);
        });
        rx
    }

    /// The list requests of config maps in `namespace`, in order of arrival.
    fn lists(&self, namespace: &str) -> Vec<String> {
        let path = format!("GET /api/v1/namespaces/{namespace}/configmaps?");
        self.requests
            .requests()
            .into_iter()
            .filter(|r| r.starts_with(&path) && !r.contains("watch="))
            .collect()
    }
}

impl Drop for OwnServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn names<K: Resource>(list: &ObjectList<K>) -> Vec<String> {
    list.items
        .iter()
        .map(|o| o.meta().name.clone().unwrap_or_default())
        .collect()
}

/// The pages listed one by one with [`ListerWatcher::list`]: each page's names.
async fn pages_one_by_one<K, L: ListerWatcher<K>>(lw: &L, limit: u32) -> Vec<Vec<String>>
where
    K: Resource,
{
    let mut options = ListOptions {
        limit: Some(limit),
        ..ListOptions::default()
    };
    let mut pages = Vec::new();
    loop {
        let page = lw.list(&options).await.unwrap();
        pages.push(names(&page));
        match page.continue_token {
            Some(token) => options = options.next_page(&token),
            None => return pages,
        }
    }
}

/// The pages the pager hands over: each page's names.
async fn pages_of_the_pager<K, L: ListerWatcher<K>>(lw: &L, limit: u32) -> Vec<Vec<String>>
where
    K: Resource,
{
    let mut pages = ListPager::new(limit).pages(lw, ListOptions::default());
    let mut out = Vec::new();
    while let Some(page) = pages.next().await.unwrap() {
        match page {
            Page::Items(list) => out.push(names(&list)),
            Page::Part(_) => panic!("a page this small does not stream"),
            Page::Restart => panic!("unexpected restart"),
        }
    }
    out
}

async fn same_pages<K>(server: &OwnServer, namespace: &str, wire: Wire)
where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    let client = Client::try_from(server.config.clone()).unwrap();
    let lw = KubeListerWatcher::new(Api::<K>::namespaced(client, namespace)).with_wire(wire);
    let before = server.lists(namespace).len();
    let paged = pages_of_the_pager(&lw, 7).await;
    let requests = server.lists(namespace).len() - before;
    let one_by_one = pages_one_by_one(&lw, 7).await;
    assert_eq!(paged, one_by_one, "{namespace} {wire:?}");
    assert_eq!(paged.len(), 8, "{namespace} {wire:?}: 50 in pages of 7");
    assert_eq!(requests, 8, "{namespace} {wire:?}: one request a page");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prefetched_pages_are_the_pages_listed_one_by_one() {
    let server = OwnServer::start();
    let names: Vec<String> = (0..50).map(|i| format!("cm-{i:03}")).collect();
    for ns in ["json", "protobuf", "lazy-json", "lazy-protobuf"] {
        server.seed(ns, names.clone());
    }
    same_pages::<ConfigMap>(&server, "json", Wire::Json).await;
    same_pages::<ConfigMap>(&server, "protobuf", Wire::Protobuf).await;
    same_pages::<Lazy<ConfigMap>>(&server, "lazy-json", Wire::Json).await;
    same_pages::<Lazy<ConfigMap>>(&server, "lazy-protobuf", Wire::Protobuf).await;
    let all: Vec<String> = pages_of_the_pager(
        &KubeListerWatcher::new(Api::<ConfigMap>::namespaced(
            Client::try_from(server.config.clone()).unwrap(),
            "json",
        )),
        7,
    )
    .await
    .concat();
    assert_eq!(all, names);
}

/// A config map whose decoding, for the one named `gate`, waits for the gate of its
/// namespace (in [`GATES`]) to open; decoding the one named `opener` opens the gate its
/// namespace has in [`OPENERS`].
#[derive(Debug, Clone)]
struct Gated(ConfigMap);

/// Per namespace: what the decoding of `gate` waits for.
static GATES: Mutex<BTreeMap<String, std::sync::mpsc::Receiver<String>>> =
    Mutex::new(BTreeMap::new());
/// Per namespace: whether the gate opened in time.
static OPENED: Mutex<BTreeMap<String, bool>> = Mutex::new(BTreeMap::new());
/// Per namespace: what the decoding of `opener` sends to.
static OPENERS: Mutex<BTreeMap<String, std::sync::mpsc::Sender<String>>> =
    Mutex::new(BTreeMap::new());

impl<'de> Deserialize<'de> for Gated {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let cm = ConfigMap::deserialize(d)?;
        let namespace = cm.metadata.namespace.clone().unwrap_or_default();
        match cm.metadata.name.as_deref() {
            Some("gate") => {
                let gate = GATES.lock().remove(&namespace);
                if let Some(gate) = gate {
                    // Blocks the decoding (and its thread) until the gate opens.
                    let opened = gate.recv_timeout(PATIENCE).is_ok();
                    OPENED.lock().insert(namespace, opened);
                }
            }
            Some("opener") => {
                if let Some(opener) = OPENERS.lock().remove(&namespace) {
                    let _ = opener.send("decoded".into());
                }
            }
            _ => {}
        }
        Ok(Gated(cm))
    }
}

/// Whether the gate of `namespace` opened in time.
fn opened(namespace: &str) -> bool {
    OPENED.lock().get(namespace).copied().unwrap_or(false)
}

impl k8s_openapi::Resource for Gated {
    const API_VERSION: &'static str = ConfigMap::API_VERSION;
    const GROUP: &'static str = ConfigMap::GROUP;
    const KIND: &'static str = ConfigMap::KIND;
    const VERSION: &'static str = ConfigMap::VERSION;
    const URL_PATH_SEGMENT: &'static str = ConfigMap::URL_PATH_SEGMENT;
    type Scope = NamespaceResourceScope;
}

impl Metadata for Gated {
    type Ty = ObjectMeta;

    fn metadata(&self) -> &ObjectMeta {
        &self.0.metadata
    }

    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.0.metadata
    }
}

/// Page 1 of `namespace` holds `gate`, whose decoding waits until the server has received
/// the request for page 2.
async fn the_next_request_arrives_while_the_page_is_decoded(
    server: &OwnServer,
    namespace: &str,
    wire: Wire,
) {
    server.seed(
        namespace,
        ["a-0", "a-1", "gate", "z-0", "z-1"].map(String::from),
    );
    let continued = format!("/namespaces/{namespace}/configmaps?");
    GATES.lock().insert(
        namespace.to_string(),
        server.on_request(move |r| r.contains(&continued) && r.contains("continue=")),
    );
    let client = Client::try_from(server.config.clone()).unwrap();
    let lw = KubeListerWatcher::new(Api::<Gated>::namespaced(client, namespace)).with_wire(wire);
    let mut pages = ListPager::new(3).pages(&lw, ListOptions::default());
    let Ok(Some(Page::Items(first))) = pages.next().await else {
        panic!("no first page");
    };
    assert_eq!(names(&first), ["a-0", "a-1", "gate"]);
    assert!(
        opened(namespace),
        "{namespace}: page 2 was requested while page 1 was decoded"
    );
    let Ok(Some(Page::Items(second))) = pages.next().await else {
        panic!("no second page");
    };
    assert_eq!(names(&second), ["z-0", "z-1"]);
    assert_eq!(
        server.lists(namespace).len(),
        2,
        "{namespace}: one request a page"
    );
}

#[test]
fn the_next_request_reaches_the_server_while_a_page_is_decoded() {
    let server = Arc::new(OwnServer::start());
    for (flavor, runtime) in [
        (
            "current-thread",
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap(),
        ),
        (
            "multi-thread",
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap(),
        ),
    ] {
        for wire in [Wire::Json, Wire::Protobuf] {
            let namespace = format!("{flavor}-{wire:?}").to_lowercase();
            let server = Arc::clone(&server);
            // On a task, as a reflector lists (on a worker thread of a multi-thread runtime).
            runtime
                .block_on(runtime.spawn(async move {
                    the_next_request_arrives_while_the_page_is_decoded(&server, &namespace, wire)
                        .await;
                }))
                .unwrap();
        }
    }
}

/// Page 1 of `namespace` holds `gate`, whose decoding waits until `opener`, on page 2, has
/// been decoded: the two pages are decoded at the same time.
async fn the_next_page_is_decoded_while_the_page_is_decoded(
    server: &OwnServer,
    namespace: &str,
    wire: Wire,
) {
    server.seed(
        namespace,
        ["a-0", "a-1", "gate", "m-0", "m-1", "opener", "z-0"].map(String::from),
    );
    let (opener, gate) = std::sync::mpsc::channel();
    GATES.lock().insert(namespace.to_string(), gate);
    OPENERS.lock().insert(namespace.to_string(), opener);
    let client = Client::try_from(server.config.clone()).unwrap();
    let lw = KubeListerWatcher::new(Api::<Gated>::namespaced(client, namespace)).with_wire(wire);
    let mut pages = ListPager::new(3).pages(&lw, ListOptions::default());
    let mut got = Vec::new();
    while let Some(page) = pages.next().await.unwrap() {
        let Page::Items(list) = page else {
            panic!("unexpected restart");
        };
        got.push(names(&list));
    }
    assert!(
        opened(namespace),
        "{namespace}: page 2 was decoded while page 1 was"
    );
    assert_eq!(
        got,
        [
            vec!["a-0", "a-1", "gate"],
            vec!["m-0", "m-1", "opener"],
            vec!["z-0"]
        ]
    );
    assert_eq!(
        server.lists(namespace).len(),
        3,
        "{namespace}: one request a page"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_two_workers_two_pages_are_decoded_at_once() {
    let server = Arc::new(OwnServer::start());
    for wire in [Wire::Json, Wire::Protobuf] {
        let namespace = format!("two-at-once-{wire:?}").to_lowercase();
        let server = Arc::clone(&server);
        // On a task, as a reflector lists.
        tokio::spawn(async move {
            the_next_page_is_decoded_while_the_page_is_decoded(&server, &namespace, wire).await;
        })
        .await
        .unwrap();
    }
}

fn pager_source(server: &OwnServer, namespace: &str) -> KubeListerWatcher<ConfigMap> {
    let client = Client::try_from(server.config.clone()).unwrap();
    KubeListerWatcher::new(Api::<ConfigMap>::namespaced(client, namespace))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_continue_token_of_a_prefetched_request_falls_back_to_a_full_list() {
    let server = OwnServer::start();
    server.seed("ns", (0..5).map(|i| format!("cm-{i}")));
    let lw = pager_source(&server, "ns");
    server.faults.inject(Fault::ExpireContinue);
    let mut pages = ListPager::new(2).pages(&lw, ListOptions::default());
    let Ok(Some(Page::Items(first))) = pages.next().await else {
        panic!("no first page");
    };
    assert_eq!(names(&first), ["cm-0", "cm-1"]);
    assert!(matches!(pages.next().await, Ok(Some(Page::Restart))));
    let Ok(Some(Page::Items(full))) = pages.next().await else {
        panic!("no full list");
    };
    assert_eq!(names(&full).len(), 5);
    assert!(pages.next().await.unwrap().is_none());
    assert_eq!(server.faults.counts().get("expire-continue"), Some(&1));
    let lists = server.lists("ns");
    assert_eq!(lists.len(), 3, "{lists:?}");
    assert!(lists[1].contains("continue="), "{lists:?}");
    assert!(
        !lists[2].contains("continue=") && !lists[2].contains("limit="),
        "{lists:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_error_of_a_prefetched_request_is_the_error_of_a_plain_one() {
    let server = OwnServer::start();
    server.seed("ns", (0..5).map(|i| format!("cm-{i}")));
    let lw = pager_source(&server, "ns");
    let broken = || FaultRule::once(Fault::InternalError).on(Target::ListContinue);
    server.faults.add_rule(broken());
    let got: ListWatchError = ListPager::new(2)
        .list(&lw, ListOptions::default())
        .await
        .unwrap_err();
    let first = ListOptions {
        limit: Some(2),
        ..ListOptions::default()
    };
    let token = lw.list(&first).await.unwrap().continue_token.unwrap();
    server.faults.add_rule(broken());
    let expected = lw.list(&first.next_page(&token)).await.unwrap_err();
    assert!(got.is_internal_error(), "{got:?}");
    assert_eq!(got, expected);
}

/// A client whose requests in flight (sent, their response not yet begun) are counted.
fn counting_client(server: &OwnServer) -> (Client, watch::Receiver<usize>) {
    let (count, counted) = watch::channel(0usize);
    let count = Arc::new(count);
    let layer = tower::util::MapFutureLayer::new(move |response| {
        let count = Arc::clone(&count);
        async move {
            count.send_modify(|n| *n += 1);
            let _in_flight = InFlight(Arc::clone(&count));
            response.await
        }
    });
    let client = kube::client::ClientBuilder::try_from(server.config.clone())
        .unwrap()
        .with_layer(&layer)
        .build();
    (client, counted)
}

/// Counts a request out when dropped (answered or abandoned).
struct InFlight(Arc<watch::Sender<usize>>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n -= 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_pager_aborts_the_prefetched_request() {
    let server = OwnServer::start();
    server.seed("ns", (0..5).map(|i| format!("cm-{i}")));
    // The request for page 2 is held at the server for an hour.
    server.faults.add_rule(
        FaultRule::once(Fault::Delay(Duration::from_secs(3600))).on(Target::ListContinue),
    );
    let arrived = server.on_request(|r| r.contains("continue="));
    let (client, mut in_flight) = counting_client(&server);
    let lw = KubeListerWatcher::new(Api::<ConfigMap>::namespaced(client, "ns"));
    let mut pages = ListPager::new(2).pages(&lw, ListOptions::default());
    assert!(matches!(pages.next().await, Ok(Some(Page::Items(_)))));
    tokio::task::spawn_blocking(move || arrived.recv_timeout(PATIENCE))
        .await
        .unwrap()
        .expect("the request for page 2 reached the server");
    assert_eq!(
        *in_flight.borrow(),
        1,
        "the request for page 2 is in flight"
    );
    drop(pages);
    tokio::time::timeout(PATIENCE, in_flight.wait_for(|n| *n == 0))
        .await
        .expect("the request for page 2 was abandoned")
        .unwrap();
}
