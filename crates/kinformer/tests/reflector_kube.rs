//! KubeListerWatcher over a real HTTP connection to a tiny scripted server (one canned
//! response per connection), checking the query strings sent and the per-object decoding.

#![cfg(feature = "kube")]
#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kinformer::cache::fifo::ReflectorSink;
use kinformer::cache::listwatch::{
    ListOptions, ListWatchError, ListerWatcher, WatchEvent, WatchOptions,
};
use kinformer::cache::reflector::{Reflector, ReflectorOptions};
use kinformer::kube::KubeListerWatcher;
use kube::{Api, Client, Config};
use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Serves `responses` in order, one per connection; records each request line.
async fn serve(responses: Vec<String>) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = seen.clone();
    tokio::spawn(async move {
        for response in responses {
            let (mut sock, _) = listener.accept().await.unwrap();
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = sock.read(&mut chunk).await.unwrap();
                if n == 0 {
                    break;
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            let head = String::from_utf8_lossy(&buf).to_string();
            log.lock()
                .push(head.lines().next().unwrap_or_default().to_owned());
            sock.write_all(response.as_bytes()).await.unwrap();
            sock.shutdown().await.unwrap();
        }
    });
    (format!("http://{addr}"), seen)
}

fn ok(body: &str) -> String {
    format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{body}")
}

fn status(code: u16, body: &str) -> String {
    format!(
        "HTTP/1.1 {code} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

fn lw(url: &str) -> KubeListerWatcher<ConfigMap> {
    let mut config = Config::new(url.parse().unwrap());
    // Let 429 / 504 reach the reflector instead of kube's own retry layer.
    config.default_retry = false;
    let client = Client::try_from(config).unwrap();
    KubeListerWatcher::new(Api::<ConfigMap>::namespaced(client, "ns"))
}

const LIST: &str = r#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"10"},"items":[
{"metadata":{"name":"a","namespace":"ns","resourceVersion":"4"}},
{"metadata":{"name":"bad","namespace":"ns"},"data":["not","a","map"]},
{"metadata":{"name":"c","namespace":"ns","resourceVersion":"9"}}]}"#;

const WATCH: &str = concat!(
    r#"{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"d","namespace":"ns","resourceVersion":"11"}}}"#,
    "\n",
    r#"{"type":"MODIFIED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"bad","namespace":"ns","resourceVersion":"12"},"data":7}}"#,
    "\n",
    r#"{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"13"}}}"#,
    "\n",
);

#[tokio::test]
async fn list_keeps_good_items_reports_bad_ones_and_sends_version_zero_with_limit() {
    let (url, seen) = serve(vec![ok(LIST)]).await;
    let list = lw(&url)
        .list(&ListOptions {
            resource_version: Some("0".into()),
            limit: Some(500),
            ..ListOptions::default()
        })
        .await
        .unwrap();
    assert_eq!(list.resource_version, "10");
    assert_eq!(list.items.len(), 2);
    assert_eq!(list.undecodable.len(), 1);
    let line = seen.lock()[0].clone();
    assert!(
        line.starts_with("GET /api/v1/namespaces/ns/configmaps?"),
        "{line}"
    );
    assert!(
        line.contains("limit=500") && line.contains("resourceVersion=0"),
        "{line}"
    );
}

#[tokio::test]
async fn watch_streams_events_and_ends_at_an_undecodable_one() {
    let (url, seen) = serve(vec![ok(WATCH)]).await;
    let stream = lw(&url)
        .watch(&WatchOptions {
            resource_version: Some("10".into()),
            timeout: Some(Duration::from_secs(300)),
            allow_bookmarks: true,
            ..WatchOptions::default()
        })
        .await
        .unwrap();
    let items: Vec<_> = stream.collect().await;
    // Nothing after the bad event is delivered (the bookmark behind it is not).
    assert_eq!(items.len(), 2, "{items:?}");
    assert!(
        matches!(&items[0], Ok(WatchEvent::Added(o)) if o.metadata.name.as_deref() == Some("d"))
    );
    assert!(
        matches!(&items[1], Err(ListWatchError::Decode(d)) if d.name.as_deref() == Some("bad"))
    );
    let line = seen.lock()[0].clone();
    for part in [
        "watch=true",
        "resourceVersion=10",
        "timeoutSeconds=300",
        "allowWatchBookmarks=true",
    ] {
        assert!(line.contains(part), "{part} missing: {line}");
    }
}

#[tokio::test]
async fn api_errors_keep_code_reason_and_retry_after() {
    let throttled = r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"slow down","reason":"TooManyRequests","code":429,"details":{"retryAfterSeconds":3}}"#;
    let expired = r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version","reason":"Expired","code":410}"#;
    let (url, _) = serve(vec![status(429, throttled), status(410, expired)]).await;
    let lw = lw(&url);
    let err = lw.watch(&WatchOptions::default()).await.err().unwrap();
    assert!(err.is_too_many_requests(), "{err:?}");
    assert_eq!(err.retry_after(), Some(Duration::from_secs(3)));
    let err = lw.list(&ListOptions::default()).await.unwrap_err();
    assert!(err.is_expired() && err.is_gone());
    assert_eq!(err.code(), Some(410));
}

#[derive(Default)]
struct Count(Mutex<Vec<String>>);

impl ReflectorSink<ConfigMap> for Count {
    fn add(&self, o: Arc<ConfigMap>) -> Result<(), kinformer::cache::CacheError> {
        self.0.lock().push(format!(
            "add {}",
            o.metadata.name.clone().unwrap_or_default()
        ));
        Ok(())
    }
    fn update(&self, _: Arc<ConfigMap>) -> Result<(), kinformer::cache::CacheError> {
        Ok(())
    }
    fn delete(&self, _: Arc<ConfigMap>) -> Result<(), kinformer::cache::CacheError> {
        Ok(())
    }
    fn replace(
        &self,
        objs: Vec<Arc<ConfigMap>>,
        rv: &str,
    ) -> Result<(), kinformer::cache::CacheError> {
        self.0.lock().push(format!("replace {} @{rv}", objs.len()));
        Ok(())
    }
    fn resync(&self) -> Result<(), kinformer::cache::CacheError> {
        Ok(())
    }
}

#[tokio::test]
async fn reflector_over_kube_lists_then_watches_and_resumes_after_a_bad_event() {
    // The watch-list request is refused (as by a server without the feature), so the
    // reflector learns it (no error reported) and lists and watches.
    let invalid = r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"sendInitialEvents is forbidden","reason":"Invalid","code":422}"#;
    // The first watch breaks off at the bad event; the resumed one (from 11) gets it intact.
    let resumed = concat!(
        r#"{"type":"MODIFIED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"bad","namespace":"ns","resourceVersion":"12"}}}"#,
        "\n",
        r#"{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"13"}}}"#,
        "\n",
    );
    let (url, seen) = serve(vec![status(422, invalid), ok(LIST), ok(WATCH), ok(resumed)]).await;
    let sink = Arc::new(Count::default());
    let errors: Arc<Mutex<Vec<String>>> = Arc::default();
    let source = lw(&url);
    let capabilities = source.capabilities().clone();
    let reflector = Arc::new(
        Reflector::new(
            source,
            sink.clone() as Arc<dyn ReflectorSink<ConfigMap>>,
            ReflectorOptions::default(),
        )
        .with_watch_error_handler({
            let errors = errors.clone();
            move |e| errors.lock().push(e.to_string())
        }),
    );
    let cancel = tokio_util::sync::CancellationToken::new();
    let task = tokio::spawn({
        let (r, c) = (reflector.clone(), cancel.clone());
        async move { r.run(c).await }
    });
    for _ in 0..500 {
        if reflector.last_sync_resource_version() == "13" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(reflector.last_sync_resource_version(), "13");
    assert_eq!(*sink.0.lock(), ["replace 2 @10", "add d"]);
    cancel.cancel();
    task.await.unwrap().unwrap();
    let lines = seen.lock().clone();
    assert!(lines[0].contains("sendInitialEvents=true"), "{lines:?}");
    assert!(
        lines[1].contains("resourceVersion=0") && lines[1].contains("limit=500"),
        "{lines:?}"
    );
    assert!(
        lines[2].contains("watch=true") && lines[2].contains("resourceVersion=10"),
        "{lines:?}"
    );
    assert!(
        lines[3].contains("watch=true") && lines[3].contains("resourceVersion=11"),
        "{lines:?}"
    );
    let errors = errors.lock().clone();
    assert!(!errors.iter().any(|e| e.contains("422")), "{errors:?}");
    assert!(!capabilities.watch_list(), "the refusal is remembered");
    assert_eq!(
        errors.iter().filter(|e| e.contains("undecodable")).count(),
        2,
        "{errors:?}"
    );
}

/// A server that accepts connections, reads the requests and never answers.
async fn silent_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((mut sock, _)) = listener.accept().await {
            let mut chunk = [0u8; 4096];
            let _ = sock.read(&mut chunk).await;
            open.push(sock); // keep it open, say nothing
        }
    });
    format!("http://{addr}")
}

#[tokio::test(start_paused = true)]
async fn a_list_or_watch_without_a_response_fails_after_the_request_timeout() {
    let url = silent_server().await;
    let lw = lw(&url).with_request_timeout(Duration::from_secs(5));
    let is_timeout = |e: &ListWatchError| matches!(e, ListWatchError::Transport { message, .. } if message.contains("within 5s"));
    let err = lw.list(&ListOptions::default()).await.unwrap_err();
    assert!(is_timeout(&err), "{err:?}");
    let err = match lw.watch(&WatchOptions::default()).await {
        Err(e) => e,
        Ok(_) => panic!("a watch without a response began"),
    };
    assert!(is_timeout(&err), "{err:?}");
}
