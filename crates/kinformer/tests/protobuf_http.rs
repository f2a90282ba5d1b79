//! Protobuf on the wire, end to end: an informer over `KubeListerWatcher` in its default
//! configuration lists and watches pods from the embedded API server in Kubernetes protobuf
//! (the responses' content types are recorded by a layer in the client) and converges to the
//! server's state; with `Wire::Json` it talks JSON.

#![cfg(feature = "protobuf")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] functions

mod support;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kinformer::cache::{HasSynced, InformerOptions, SharedIndexInformer};
use kinformer::kube::{KubeListerWatcher, Wire};
use kinformer_apiserver::{ApiServer, ServerConfig, TestServer};
use kube::{Api, Client};
use parking_lot::Mutex;
use serde_json::json;
use support::{Tracker, cache_pods, server_pods, small_pod, wait_converged};
use tokio::time::timeout;
use tokio_util::sync::CancellationToken;

/// The `Content-Type` of a request or response (empty without one).
fn content_type(headers: &http::HeaderMap) -> String {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned()
}

/// The server's client configuration, without kube's retries (a test sees every answer).
fn test_config(server: &ApiServer) -> kube::Config {
    let mut config = server.kube_config().unwrap();
    config.default_retry = false;
    config
}

/// A client that records the `Content-Type` of every response.
fn recording_client(server: &ApiServer) -> (Client, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let recorded = Arc::clone(&seen);
    let client = kube::client::ClientBuilder::try_from(test_config(server))
        .unwrap()
        .with_layer(&tower::util::MapResponseLayer::new(
            move |res: http::Response<_>| {
                recorded.lock().push(content_type(res.headers()));
                res
            },
        ))
        .build();
    (client, seen)
}

async fn converge_through_changes(wire: Wire, watch_list: bool) -> Vec<String> {
    let server = TestServer::start_with(ServerConfig::for_tests())
        .await
        .unwrap();
    let store = server.store();
    let ns = "wire";
    for i in 0..120 {
        store
            .create("pods", ns, small_pod(ns, &format!("p{i}"), 0))
            .unwrap();
    }
    let (client, seen) = recording_client(&server);
    let lw = KubeListerWatcher::new(Api::<Pod>::namespaced(client, ns)).with_wire(wire);
    assert_eq!(lw.asks_for_protobuf(), wire == Wire::Protobuf);
    let informer = SharedIndexInformer::new(
        lw,
        InformerOptions::new(ns)
            .with_watch_list(watch_list)
            .with_page_size(50),
    );
    let tracker = Arc::new(Tracker::default());
    informer.add_event_handler(Arc::clone(&tracker)).unwrap();
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await.unwrap() }
    });
    timeout(Duration::from_secs(20), informer.wait_synced())
        .await
        .expect("synced");
    assert_eq!(
        cache_pods(&informer.get_indexer()),
        server_pods(&server, Some(ns))
    );
    // Changes arrive through the watch: updates (with zero-valued and unicode fields; label
    // values must be valid label values, so the unicode goes into an annotation),
    // creates and deletes.
    for i in 0..40 {
        let name = format!("p{i}");
        let patch = json!({"metadata": {"labels": {"gen": "1"}, "annotations": {"emoji": "✓"}},
                           "spec": {"terminationGracePeriodSeconds": 0}});
        store.patch("pods", ns, &name, &patch).unwrap();
    }
    for i in 40..60 {
        store.delete("pods", ns, &format!("p{i}")).unwrap();
    }
    for i in 200..220 {
        store
            .create("pods", ns, small_pod(ns, &format!("p{i}"), 2))
            .unwrap();
    }
    wait_converged(
        &server,
        Some(ns),
        &informer.get_indexer(),
        &tracker,
        Duration::from_secs(20),
    )
    .await
    .unwrap();
    let cached = informer
        .get_indexer()
        .get_by_key(&format!("{ns}/p3"))
        .unwrap();
    let spec = cached.spec.as_ref().unwrap();
    assert_eq!(spec.termination_grace_period_seconds, Some(0));
    assert_eq!(
        cached
            .metadata
            .annotations
            .as_ref()
            .unwrap()
            .get("emoji")
            .map(String::as_str),
        Some("✓")
    );
    assert!(tracker.state.lock().violations.is_empty());
    cancel.cancel();
    timeout(Duration::from_secs(10), task)
        .await
        .unwrap()
        .unwrap();
    seen.lock().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_informer_lists_and_watches_pods_in_protobuf_by_default() {
    assert_eq!(Wire::default(), Wire::Protobuf);
    let seen = converge_through_changes(Wire::default(), false).await;
    // Paged lists (120 pods by 50), then at least one watch; every response protobuf.
    assert!(
        seen.iter()
            .filter(|ct| *ct == kinformer_protobuf::CONTENT_TYPE)
            .count()
            >= 3,
        "{seen:?}"
    );
    assert!(
        seen.iter()
            .any(|ct| ct == kinformer_protobuf::WATCH_CONTENT_TYPE),
        "{seen:?}"
    );
    assert!(
        seen.iter()
            .all(|ct| ct.starts_with(kinformer_protobuf::CONTENT_TYPE)),
        "{seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_list_sync_in_protobuf() {
    let seen = converge_through_changes(Wire::Protobuf, true).await;
    assert!(
        seen.iter()
            .any(|ct| ct == kinformer_protobuf::WATCH_CONTENT_TYPE),
        "{seen:?}"
    );
    assert!(
        seen.iter()
            .all(|ct| ct.starts_with(kinformer_protobuf::CONTENT_TYPE)),
        "{seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_when_asked() {
    let seen = converge_through_changes(Wire::Json, false).await;
    assert!(
        !seen.is_empty() && seen.iter().all(|ct| ct == "application/json"),
        "{seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creates_and_replaces_of_built_in_kinds_send_protobuf_bodies() {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::PostParams;

    let server = TestServer::start_with(ServerConfig::for_tests())
        .await
        .unwrap();
    let (client, seen) = body_recording_client(&server, false);
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("settings".into());
    cm.data = Some([("mode".to_owned(), "fast".to_owned())].into());
    let created = kinformer::kube::create(&api, &PostParams::default(), &cm)
        .await
        .unwrap();
    assert_eq!(created.data, cm.data);
    assert!(created.metadata.uid.is_some());

    let mut changed = created.clone();
    changed.data = Some([("mode".to_owned(), "slow".to_owned())].into());
    let replaced = kinformer::kube::replace(&api, "settings", &PostParams::default(), &changed)
        .await
        .unwrap();
    assert_eq!(replaced.data, changed.data);
    let stored = server
        .store()
        .get("configmaps", "default", "settings")
        .unwrap()
        .unwrap();
    assert_eq!(stored["data"], json!({"mode": "slow"}));
    assert_eq!(
        *seen.lock(),
        [
            kinformer_protobuf_content_type(),
            kinformer_protobuf_content_type()
        ]
    );
}

fn kinformer_protobuf_content_type() -> String {
    "application/vnd.kubernetes.protobuf".to_owned()
}

/// A client that records the `Content-Type` of every write's body; with `refuse_protobuf`, a
/// layer then turns protobuf into a type the embedded server answers with `415` (a server
/// that refuses protobuf bodies).
fn body_recording_client(
    server: &ApiServer,
    refuse_protobuf: bool,
) -> (Client, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let recorded = Arc::clone(&seen);
    let client = kube::client::ClientBuilder::try_from(test_config(server))
        .unwrap()
        .with_layer(&tower::util::MapRequestLayer::new(
            move |mut req: http::Request<_>| {
                let ct = content_type(req.headers());
                if refuse_protobuf && ct == kinformer_protobuf_content_type() {
                    req.headers_mut().insert(
                        http::header::CONTENT_TYPE,
                        http::HeaderValue::from_static("application/x-refused"),
                    );
                }
                if req.method() != http::Method::GET {
                    recorded.lock().push(ct);
                }
                req
            },
        ))
        .build();
    (client, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_protobuf_body_is_learnt_once_per_client() {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kinformer::kube::{ServerCapabilities, create_with, replace_with};
    use kube::api::PostParams;

    let server = TestServer::start_with(ServerConfig::for_tests())
        .await
        .unwrap();
    let (client, seen) = body_recording_client(&server, true);
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let caps = ServerCapabilities::new();
    let pp = PostParams::default();
    let cm = |name: &str| {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(name.into());
        cm.data = Some([("mode".to_owned(), "fast".to_owned())].into());
        cm
    };
    let a = create_with(&api, &caps, &pp, &cm("a")).await.unwrap();
    assert!(!caps.protobuf_bodies(api.resource_url()));
    create_with(&api, &caps, &pp, &cm("b")).await.unwrap();
    let mut changed = a.clone();
    changed.data = Some([("mode".to_owned(), "slow".to_owned())].into());
    replace_with(&api, &caps, "a", &pp, &changed).await.unwrap();
    let (pb, json) = (kinformer_protobuf_content_type(), "application/json");
    assert_eq!(
        *seen.lock(),
        [pb.as_str(), json, json, json],
        "one refused protobuf body, then JSON at once"
    );
    let stored = server
        .store()
        .get("configmaps", "default", "a")
        .unwrap()
        .unwrap();
    assert_eq!(stored["data"], json!({"mode": "slow"}));

    // Another client's record knows nothing of it (nor does a write without one).
    seen.lock().clear();
    create_with(&api, &ServerCapabilities::new(), &pp, &cm("c"))
        .await
        .unwrap();
    kinformer::kube::create(&api, &pp, &cm("d")).await.unwrap();
    assert_eq!(*seen.lock(), [pb.as_str(), json, pb.as_str(), json]);
}
