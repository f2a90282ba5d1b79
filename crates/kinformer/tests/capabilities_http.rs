//! What informers learn of a server once per client, end to end against the embedded API
//! server: a server without watch-list (`no_watch_list`, as Kubernetes 1.26–1.31) is asked
//! for one in total by two informers of one factory, across a relist, with no warning; a
//! server that answers JSON to protobuf is asked for JSON thereafter; a factory told
//! `Wire::Json` asks JSON. Requests are recorded by a layer in the client, log events by a
//! small tracing layer (each test runs on one thread, so a thread-local subscriber sees the
//! informers' tasks).

#![cfg(feature = "protobuf")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] functions

mod support;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kinformer::cache::{HasSynced, SharedInformerFactory};
use kinformer::kube::Wire;
use kinformer_apiserver::{ApiServer, Fault, FaultRule, ServerConfig, TestServer};
use kube::Client;
use parking_lot::Mutex;
use serde_json::json;
use support::{Tracker, small_pod, wait_converged};
use tokio::sync::watch;
use tokio::time::timeout;
use tokio_util::sync::CancellationToken;
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, SubscriberExt};

/// One request as the client sent it, and the content type of its response.
#[derive(Debug, Clone, Default)]
struct Exchange {
    uri: String,
    accept: String,
}

/// A client that records every request (URI and `Accept`) and every response content type.
struct Recording {
    client: Client,
    requests: watch::Receiver<Vec<Exchange>>,
    content_types: Arc<Mutex<Vec<String>>>,
}

fn recording_client(server: &ApiServer) -> Recording {
    let (tx, requests) = watch::channel(Vec::new());
    let content_types = Arc::new(Mutex::new(Vec::new()));
    let mut config = server.kube_config().unwrap();
    config.default_retry = false;
    let seen = Arc::clone(&content_types);
    let client = kube::client::ClientBuilder::try_from(config)
        .unwrap()
        .with_layer(&tower::util::MapResponseLayer::new(
            move |res: http::Response<_>| {
                let ct = res
                    .headers()
                    .get(http::header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_owned();
                seen.lock().push(ct);
                res
            },
        ))
        .with_layer(&tower::util::MapRequestLayer::new(
            move |req: http::Request<_>| {
                let accept = req
                    .headers()
                    .get(http::header::ACCEPT)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_owned();
                let uri = req.uri().to_string();
                tx.send_modify(|v| v.push(Exchange { uri, accept }));
                req
            },
        ))
        .build();
    Recording {
        client,
        requests,
        content_types,
    }
}

fn is_watch_list(e: &Exchange) -> bool {
    e.uri.contains("sendInitialEvents=true")
}

fn is_pod_list(e: &Exchange) -> bool {
    e.uri.starts_with("/api/v1/namespaces/caps/pods") && !e.uri.contains("watch=true")
}

/// Log events at `info` and above, as text (level, message and fields).
#[derive(Debug, Clone, Default)]
struct Logged(Arc<Mutex<Vec<(tracing::Level, String)>>>);

impl Logged {
    fn install(&self) -> tracing::subscriber::DefaultGuard {
        let subscriber = tracing_subscriber::registry().with(self.clone());
        tracing::subscriber::set_default(subscriber)
    }

    fn at(&self, level: tracing::Level) -> Vec<String> {
        let events = self.0.lock();
        events
            .iter()
            .filter(|(l, _)| *l == level)
            .map(|(_, t)| t.clone())
            .collect()
    }

    fn mentioning(&self, level: tracing::Level, text: &str) -> usize {
        self.at(level).iter().filter(|t| t.contains(text)).count()
    }
}

struct Text(String);

impl Visit for Text {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!(" {}={value:?}", field.name()));
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Logged {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        let level = *event.metadata().level();
        if level <= tracing::Level::INFO {
            let mut text = Text(String::new());
            event.record(&mut text);
            self.0.lock().push((level, text.0));
        }
    }
}

fn seed(server: &ApiServer, n: usize) {
    let store = server.store();
    for i in 0..n {
        store
            .create("pods", "caps", small_pod("caps", &format!("p{i}"), 0))
            .unwrap();
        store
            .create(
                "configmaps",
                "caps",
                json!({"metadata": {"name": format!("cm{i}")}, "data": {"i": i.to_string()}}),
            )
            .unwrap();
    }
}

#[tokio::test]
async fn a_server_without_watch_list_is_asked_once_per_factory_without_a_warning() {
    let logged = Logged::default();
    let _guard = logged.install();
    let server = TestServer::start_with(ServerConfig::for_tests().with_no_watch_list(true))
        .await
        .unwrap();
    seed(&server, 5);
    let rec = recording_client(&server);
    let factory = SharedInformerFactory::new(rec.client.clone()).with_namespace("caps");
    let pods = factory.informer::<Pod>();
    let cms = factory.informer::<ConfigMap>();
    let tracker = Arc::new(Tracker::default());
    pods.add_event_handler(Arc::clone(&tracker)).unwrap();
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    factory
        .wait_for_cache_sync_timeout(Duration::from_secs(20))
        .await
        .unwrap();
    assert_eq!(pods.get_indexer().list().len(), 5);
    assert_eq!(cms.get_indexer().list().len(), 5);
    assert_eq!(
        server.watch_lists_refused(),
        1,
        "one refusal for two informers"
    );
    let asked = rec
        .requests
        .borrow()
        .iter()
        .filter(|e| is_watch_list(e))
        .count();
    assert_eq!(asked, 1, "{:#?}", rec.requests.borrow());
    assert!(!factory.capabilities().watch_list());
    assert_eq!(logged.at(tracing::Level::WARN), Vec::<String>::new());
    assert_eq!(
        logged.mentioning(tracing::Level::INFO, "does not support watch-list"),
        1
    );

    // A relist: the pods watch is closed and re-opened into a 410 Gone.
    let lists_before = rec
        .requests
        .borrow()
        .iter()
        .filter(|e| is_pod_list(e))
        .count();
    server
        .faults()
        .add_rule(FaultRule::once(Fault::WatchGone).for_resource("pods"));
    server.faults().close_all_watches();
    let mut requests = rec.requests.clone();
    timeout(
        Duration::from_secs(20),
        requests.wait_for(|r| r.iter().filter(|e| is_pod_list(e)).count() > lists_before),
    )
    .await
    .expect("the pods informer relists")
    .unwrap();
    // A change after the relist arrives: the informer is back to watching.
    server
        .store()
        .create("pods", "caps", small_pod("caps", "late", 0))
        .unwrap();
    wait_converged(
        &server,
        Some("caps"),
        &pods.get_indexer(),
        &tracker,
        Duration::from_secs(20),
    )
    .await
    .unwrap();
    assert!(pods.get_indexer().get_by_key("caps/late").is_some());
    assert!(pods.has_synced());
    assert_eq!(
        server.watch_lists_refused(),
        1,
        "the relist does not ask again"
    );
    let asked = rec
        .requests
        .borrow()
        .iter()
        .filter(|e| is_watch_list(e))
        .count();
    assert_eq!(asked, 1);
    assert_eq!(
        logged.mentioning(tracing::Level::WARN, "watch-list"),
        0,
        "{:?}",
        logged.at(tracing::Level::WARN)
    );
    assert_eq!(
        logged.mentioning(tracing::Level::INFO, "does not support watch-list"),
        1
    );
    cancel.cancel();
    factory.shutdown().await;
}

#[tokio::test]
async fn a_server_with_watch_list_is_asked_by_every_informer() {
    let server = TestServer::start().await.unwrap();
    seed(&server, 3);
    let rec = recording_client(&server);
    let factory = SharedInformerFactory::new(rec.client.clone()).with_namespace("caps");
    let _pods = factory.informer::<Pod>();
    let _cms = factory.informer::<ConfigMap>();
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    factory
        .wait_for_cache_sync_timeout(Duration::from_secs(20))
        .await
        .unwrap();
    let asked = rec
        .requests
        .borrow()
        .iter()
        .filter(|e| is_watch_list(e))
        .count();
    assert_eq!(asked, 2, "{:#?}", rec.requests.borrow());
    assert_eq!(server.watch_lists_refused(), 0);
    assert!(factory.capabilities().watch_list());
    cancel.cancel();
    factory.shutdown().await;
}

/// The requests of a pods informer, then (once it synced) a config-maps informer of the same
/// factory, and the content types of the answers.
async fn requests_of_two_informers(
    wire: Option<Wire>,
    server: &ApiServer,
) -> (Vec<Exchange>, Vec<String>) {
    seed(server, 3);
    let rec = recording_client(server);
    let mut factory = SharedInformerFactory::new(rec.client.clone()).with_namespace("caps");
    if let Some(wire) = wire {
        factory = factory.with_wire(wire);
    }
    assert_eq!(factory.wire(), wire.unwrap_or_default());
    let pods = factory.informer::<Pod>();
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    factory
        .wait_for_cache_sync_timeout(Duration::from_secs(20))
        .await
        .unwrap();
    let cms = factory.informer::<ConfigMap>();
    factory.start(&cancel);
    factory
        .wait_for_cache_sync_timeout(Duration::from_secs(20))
        .await
        .unwrap();
    assert_eq!(pods.get_indexer().list().len(), 3);
    assert_eq!(cms.get_indexer().list().len(), 3);
    cancel.cancel();
    factory.shutdown().await;
    let requests = rec.requests.borrow().clone();
    let content_types = rec.content_types.lock().clone();
    (requests, content_types)
}

#[tokio::test]
async fn a_factory_told_json_asks_json() {
    let server = TestServer::start().await.unwrap();
    let (requests, content_types) = requests_of_two_informers(Some(Wire::Json), &server).await;
    assert!(!requests.is_empty());
    for e in &requests {
        assert!(!e.accept.contains("protobuf"), "{e:?}");
    }
    assert!(
        content_types
            .iter()
            .all(|ct| ct.starts_with("application/json")),
        "{content_types:?}"
    );

    // The default asks protobuf (the control).
    let server = TestServer::start().await.unwrap();
    let (requests, content_types) = requests_of_two_informers(None, &server).await;
    assert!(
        requests.iter().all(|e| e.accept.contains("protobuf")),
        "{requests:#?}"
    );
    assert!(
        content_types.iter().any(|ct| ct.contains("protobuf")),
        "{content_types:?}"
    );
}

#[tokio::test]
async fn a_server_answering_json_to_protobuf_is_asked_json_thereafter() {
    let logged = Logged::default();
    let _guard = logged.install();
    let server = TestServer::start_with(ServerConfig::for_tests().with_json_only(true))
        .await
        .unwrap();
    let (requests, content_types) = requests_of_two_informers(None, &server).await;
    assert!(
        content_types
            .iter()
            .all(|ct| ct.starts_with("application/json")),
        "{content_types:?}"
    );
    let protobuf_asks = requests
        .iter()
        .filter(|e| e.accept.contains("protobuf"))
        .count();
    assert_eq!(protobuf_asks, 1, "{requests:#?}");
    assert!(requests[0].accept.contains("protobuf"), "{requests:#?}");
    assert_eq!(requests.len(), 2, "{requests:#?}");
    assert_eq!(
        logged.mentioning(tracing::Level::INFO, "asking this API group for JSON"),
        1
    );
    assert_eq!(logged.at(tracing::Level::WARN), Vec::<String>::new());
}
