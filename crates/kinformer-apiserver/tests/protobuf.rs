//! Kubernetes protobuf for built-in kinds: lists, gets and watches when `Accept` asks for it,
//! protobuf request bodies on create and update; JSON for custom resources when the client
//! takes JSON too, 406/415 when it cannot be had.
// Helpers outside #[test] functions fail the test by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures::StreamExt;
use http::header::{ACCEPT, CONTENT_TYPE};
use http_body_util::BodyExt as _;
use kinformer_apiserver::{
    ApiServer, ResourceDef, ServerConfig, TestServer, bench_pod, seed_bench_pods,
};
use kinformer_protobuf::{
    CONTENT_TYPE as PROTOBUF, FrameReader, List, WATCH_CONTENT_TYPE, WatchEvent,
};
use kube::client::Body;
use serde_json::{Value, json};

const BOTH: &str = "application/vnd.kubernetes.protobuf, application/json";

async fn start() -> ApiServer {
    let def = ResourceDef::new("example.com", "v1", "widgets", "Widget", true);
    TestServer::start_with(ServerConfig::for_tests().with_resource(def))
        .await
        .unwrap()
}

/// Status, content type and body of a request.
async fn call(
    server: &ApiServer,
    method: &str,
    path: &str,
    accept: Option<&str>,
    body: Option<(&str, Vec<u8>)>,
) -> (u16, String, Vec<u8>) {
    let mut req = http::Request::builder().method(method).uri(path);
    if let Some(a) = accept {
        req = req.header(ACCEPT, a);
    }
    let req = match body {
        Some((ct, b)) => req.header(CONTENT_TYPE, ct).body(Body::from(b)).unwrap(),
        None => req.body(Body::empty()).unwrap(),
    };
    let res = server.client().unwrap().send(req).await.unwrap();
    let code = res.status().as_u16();
    let ct = res
        .headers()
        .get(CONTENT_TYPE)
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let body = res.into_body().collect_bytes().await.unwrap().to_vec();
    (code, ct, body)
}

#[tokio::test]
async fn lists_and_gets_of_built_in_kinds_are_protobuf_when_asked() {
    let server = start().await;
    for i in 0..3 {
        server.store().create("pods", "", bench_pod(i)).unwrap();
    }
    let (code, ct, body) = call(&server, "GET", "/api/v1/pods?limit=2", Some(BOTH), None).await;
    assert_eq!((code, ct.as_str()), (200, PROTOBUF));
    let list = List::parse(&body).unwrap();
    assert_eq!(
        (list.api_version(), list.kind(), list.len()),
        ("v1", "PodList", 2)
    );
    assert!(list.metadata().continue_.is_some());
    let first: Value = list.items().next().unwrap().decode().unwrap();
    let (_, stored) = server.store().state("pods").unwrap();
    let mut want = stored[0].clone();
    // List items carry no apiVersion/kind on the wire.
    want.as_object_mut()
        .unwrap()
        .retain(|k, _| k != "apiVersion" && k != "kind");
    assert_eq!(first, want);

    let (code, ct, body) = call(
        &server,
        "GET",
        "/api/v1/namespaces/ns-1/pods/pod-1",
        Some(PROTOBUF),
        None,
    )
    .await;
    assert_eq!((code, ct.as_str()), (200, PROTOBUF));
    let pod: k8s_openapi::api::core::v1::Pod = kinformer_protobuf::from_slice(&body).unwrap();
    assert_eq!(pod.metadata.name.as_deref(), Some("pod-1"));

    // Without protobuf in Accept: the JSON bytes as before.
    let (code, ct, body) = call(
        &server,
        "GET",
        "/api/v1/namespaces/ns-1/pods/pod-1",
        None,
        None,
    )
    .await;
    assert_eq!((code, ct.as_str()), (200, "application/json"));
    let o = server
        .store()
        .get("pods", "ns-1", "pod-1")
        .unwrap()
        .unwrap();
    assert_eq!(serde_json::from_slice::<Value>(&body).unwrap(), o);
    // Errors stay JSON Status bodies.
    let (code, ct, _) = call(
        &server,
        "GET",
        "/api/v1/namespaces/ns-1/pods/nope",
        Some(BOTH),
        None,
    )
    .await;
    assert_eq!((code, ct.as_str()), (404, "application/json"));
}

/// A list longer than `STREAM_LIST_ABOVE` is sent as it is rendered (pieces of a thousand
/// items); a client reads one protobuf list all the same.
#[tokio::test]
async fn a_long_protobuf_list_reads_as_one_list() {
    let server = start().await;
    seed_bench_pods(server.store(), 2_500).unwrap();
    let (code, ct, body) = call(&server, "GET", "/api/v1/pods", Some(BOTH), None).await;
    assert_eq!((code, ct.as_str()), (200, PROTOBUF));
    let list = List::parse(&body).unwrap();
    assert_eq!((list.kind(), list.len()), ("PodList", 2_500));
    assert_eq!(
        list.metadata().resource_version,
        Some(server.store().revision().to_string())
    );
    let (_, stored) = server.store().state("pods").unwrap();
    let names: Vec<String> = list
        .items()
        .map(|i| {
            let v: Value = i.decode().unwrap();
            v["metadata"]["name"].as_str().unwrap().to_owned()
        })
        .collect();
    let want: Vec<String> = stored
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, want);
}

#[tokio::test]
async fn custom_resources_fall_back_to_json_or_406() {
    let server = start().await;
    let (code, ct, _) = call(
        &server,
        "GET",
        "/apis/example.com/v1/widgets",
        Some(BOTH),
        None,
    )
    .await;
    assert_eq!((code, ct.as_str()), (200, "application/json"));
    let (code, _, body) = call(
        &server,
        "GET",
        "/apis/example.com/v1/widgets",
        Some(PROTOBUF),
        None,
    )
    .await;
    assert_eq!(code, 406, "{}", String::from_utf8_lossy(&body));
    let widget =
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}});
    let (code, _, _) = call(
        &server,
        "POST",
        "/apis/example.com/v1/namespaces/a/widgets",
        None,
        Some((PROTOBUF, b"k8s\0".to_vec())),
    )
    .await;
    assert_eq!(code, 415);
    let (code, _, _) = call(
        &server,
        "POST",
        "/apis/example.com/v1/namespaces/a/widgets",
        None,
        Some(("application/json", serde_json::to_vec(&widget).unwrap())),
    )
    .await;
    assert_eq!(code, 201);
}

#[tokio::test]
async fn protobuf_bodies_create_and_update_built_in_objects() {
    let server = start().await;
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "settings", "labels": {"a": "b"}},
                    "data": {"mode": "fast"}, "binaryData": {"blob": "AAEC"}});
    let body = kinformer_protobuf::json_to_vec(&cm).unwrap();
    let (code, ct, out) = call(
        &server,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        Some(BOTH),
        Some((PROTOBUF, body)),
    )
    .await;
    assert_eq!(
        (code, ct.as_str()),
        (201, PROTOBUF),
        "{}",
        String::from_utf8_lossy(&out)
    );
    let created: Value = kinformer_protobuf::from_slice(&out).unwrap();
    assert_eq!(created["data"]["mode"], "fast");
    assert_eq!(created["binaryData"]["blob"], "AAEC");
    let stored = server
        .store()
        .get("configmaps", "default", "settings")
        .unwrap()
        .unwrap();
    assert_eq!(stored["metadata"]["labels"]["a"], "b");
    assert!(stored["metadata"]["uid"].is_string());

    let mut update = stored.clone();
    update["data"]["mode"] = json!("slow");
    let (code, ct, _) = call(
        &server,
        "PUT",
        "/api/v1/namespaces/default/configmaps/settings",
        None,
        Some((PROTOBUF, kinformer_protobuf::json_to_vec(&update).unwrap())),
    )
    .await;
    assert_eq!((code, ct.as_str()), (200, "application/json"));
    let stored = server
        .store()
        .get("configmaps", "default", "settings")
        .unwrap()
        .unwrap();
    assert_eq!(stored["data"]["mode"], "slow");

    // A body of another kind, and garbage, are 400s.
    let pod = kinformer_protobuf::json_to_vec(&bench_pod(1)).unwrap();
    for bad in [pod, b"k8s\0\xff".to_vec(), b"{}".to_vec()] {
        let (code, _, _) = call(
            &server,
            "POST",
            "/api/v1/namespaces/default/configmaps",
            None,
            Some((PROTOBUF, bad)),
        )
        .await;
        assert_eq!(code, 400);
    }
}

#[tokio::test]
async fn watches_stream_protobuf_frames_with_bookmarks() {
    let server = start().await;
    server.store().create("pods", "", bench_pod(1)).unwrap();
    let req = http::Request::get(
        "/api/v1/pods?watch=true&resourceVersion=0&allowWatchBookmarks=true&timeoutSeconds=5",
    )
    .header(ACCEPT, BOTH)
    .body(Body::empty())
    .unwrap();
    let res = server.client().unwrap().send(req).await.unwrap();
    assert_eq!(res.headers()[CONTENT_TYPE], WATCH_CONTENT_TYPE);
    let mut body = res.into_body().into_data_stream();
    let mut frames = FrameReader::default();
    let mut next_event = async || loop {
        if let Some(frame) = frames.next_frame() {
            let frame = frame.unwrap();
            let event = WatchEvent::parse(frame).unwrap();
            let object: Value = kinformer_protobuf::from_slice(event.object).unwrap();
            return (event.event_type.to_owned(), object);
        }
        frames.push(&body.next().await.unwrap().unwrap());
    };
    let (t, o) = next_event().await;
    assert_eq!(
        (t.as_str(), o["metadata"]["name"].as_str()),
        ("ADDED", Some("pod-1"))
    );
    server
        .store()
        .patch(
            "pods",
            "ns-1",
            "pod-1",
            &json!({"metadata": {"labels": {"x": "y"}}}),
        )
        .unwrap();
    let (t, o) = next_event().await;
    assert_eq!(
        (t.as_str(), o["metadata"]["labels"]["x"].as_str()),
        ("MODIFIED", Some("y"))
    );
    server.store().delete("pods", "ns-1", "pod-1").unwrap();
    let (t, _) = next_event().await;
    assert_eq!(t, "DELETED");
    // Bookmarks come (ServerConfig::for_tests sends them often); the kind is the resource's.
    let (t, o) = next_event().await;
    assert_eq!((t.as_str(), o["kind"].as_str()), ("BOOKMARK", Some("Pod")));
}

#[tokio::test]
async fn an_expired_watch_is_a_protobuf_error_event() {
    let server = start().await;
    server
        .faults()
        .inject(kinformer_apiserver::Fault::WatchGone);
    let req = http::Request::get("/api/v1/pods?watch=true&resourceVersion=1")
        .header(ACCEPT, BOTH)
        .body(Body::empty())
        .unwrap();
    let res = server.client().unwrap().send(req).await.unwrap();
    let body = res.into_body().collect_bytes().await.unwrap();
    let mut frames = FrameReader::default();
    frames.push(&body);
    let frame = frames.next_frame().unwrap().unwrap();
    let event = WatchEvent::parse(frame).unwrap();
    assert_eq!(event.event_type, "ERROR");
    let status: Value = kinformer_protobuf::from_slice(event.object).unwrap();
    assert_eq!(
        (status["code"].as_i64(), status["reason"].as_str()),
        (Some(410), Some("Expired"))
    );
}
