//! Lists that come in one large response, over HTTP: as a real API server's watch cache answers
//! a list at `resourceVersion=0` whatever its `limit`. Such a response is decoded as it streams
//! in and handed to the cache part by part; relists stream too; and a broken body (cut off
//! mid-item, a malformed item, an item over the cap, a body that stops arriving) fails the list
//! with an error naming the item, leaves the informer unsynced, and the next list repairs the
//! cache.

#![cfg(feature = "kube")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] functions

mod support;

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kinformer::cache::listwatch::{ListOptions, ListPager, Page};
use kinformer::cache::store::CompactOptions;
use kinformer::cache::{HasSynced, InformerOptions, Lazy, SharedIndexInformer, Storage};
use kinformer::kube::{KubeListerWatcher, Wire};
use kinformer_apiserver::{ApiServer, Fault, FaultRule, ServerConfig, TestServer, seed_bench_pods};
use kube::{Api, Client};
use kube_core::Resource;
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use support::{
    Tracker, cache_pods, server_pods, short_backoff, spawn_informer, stop, wait_converged,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::timeout;
use tokio_util::sync::CancellationToken;

/// Bench pods on the watch-cache server: a list of a few MB.
const PODS: usize = 10_000;

/// Lists of the watch-cache server stream above this size (the default, 4 MiB, is more than
/// the bench pods' list; the scripted server's bodies stream at the default).
const STREAM_ABOVE: usize = 256 << 10;

async fn watch_cache_server() -> ApiServer {
    let server = TestServer::start_with(ServerConfig::for_tests().with_watch_cache_lists(true))
        .await
        .unwrap();
    seed_bench_pods(server.store(), PODS).unwrap();
    server
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_in_one_response_reaches_the_pager_in_parts_with_the_lists_version_last() {
    let server = watch_cache_server().await;
    let client = server.client_without_retries().unwrap();
    let want = server_pods(&server, None);
    for wire in [Wire::Json, Wire::Protobuf] {
        let lw = KubeListerWatcher::new(Api::<Lazy<Pod>>::all(client.clone()))
            .with_wire(wire)
            .with_stream_lists_above(STREAM_ABOVE);
        let options = ListOptions {
            resource_version: Some("0".into()),
            ..ListOptions::default()
        };
        let mut pages = ListPager::new(500).pages(&lw, options);
        let (mut parts, mut items, mut last) = (0, Vec::new(), None);
        while let Some(page) = pages.next().await.unwrap() {
            match page {
                Page::Part(part) => {
                    assert!(last.is_none(), "a part after the page's end");
                    assert!(part.resource_version.is_empty() && part.continue_token.is_none());
                    assert!(part.items.len() <= 500, "a part is a page's size at most");
                    parts += 1;
                    items.extend(part.items);
                }
                Page::Items(end) => {
                    items.extend(end.items);
                    last = Some(end.resource_version);
                }
                Page::Restart => panic!("no restart expected"),
            }
        }
        assert!(parts >= 10, "{wire:?}: one response in {parts} parts");
        let listed = pages.listed().unwrap();
        assert!(!listed.paginated, "the server answered in one response");
        assert_eq!(last.as_deref(), Some(listed.resource_version.as_str()));
        assert_eq!(
            listed.resource_version,
            server.store().revision().to_string()
        );
        let got: support::KeyVersions = items
            .iter()
            .map(|p| (support::key_of(p.as_ref()), support::rv_of(p.as_ref())))
            .collect();
        assert_eq!(got.len(), PODS, "{wire:?}");
        assert_eq!(got, want, "{wire:?}");
    }
}

/// Registers a [`Tracker`] on `informer`, runs it and waits (at most `limit`) for its sync.
async fn run_synced<K: Resource + Send + Sync + 'static>(
    informer: &SharedIndexInformer<K>,
    limit: Duration,
) -> (Arc<Tracker>, CancellationToken, tokio::task::JoinHandle<()>) {
    let tracker = Arc::new(Tracker::default());
    informer.add_event_handler(Arc::clone(&tracker)).unwrap();
    let (cancel, task) = spawn_informer(informer);
    timeout(limit, informer.wait_synced())
        .await
        .expect("the informer syncs");
    (tracker, cancel, task)
}

async fn syncs_from_one_response<K>(server: &ApiServer, wire: Wire, storage: Storage<K>)
where
    K: Resource<DynamicType = ()> + DeserializeOwned + Send + Sync + 'static,
{
    let client = server.client_without_retries().unwrap();
    let informer = SharedIndexInformer::new(
        KubeListerWatcher::new(Api::<K>::all(client))
            .with_wire(wire)
            .with_stream_lists_above(STREAM_ABOVE),
        InformerOptions::new("pods")
            .with_storage(storage)
            .with_watch_list(false)
            .with_backoff(short_backoff),
    );
    let (tracker, cancel, task) = run_synced(&informer, Duration::from_secs(60)).await;
    assert_eq!(
        cache_pods(&informer.get_indexer()),
        server_pods(server, None)
    );
    let metrics = informer.metrics().reflector;
    assert_eq!((metrics.lists, metrics.list_failures), (1, 0), "{wire:?}");
    {
        let st = tracker.state.lock();
        assert_eq!(st.initial_adds, PODS as u64);
        assert!(st.violations.is_empty(), "{:?}", st.violations);
    }
    stop(cancel, task).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_and_lean_informers_sync_from_one_response_in_json_and_protobuf() {
    let server = watch_cache_server().await;
    for wire in [Wire::Json, Wire::Protobuf] {
        syncs_from_one_response::<Pod>(&server, wire, Storage::typed()).await;
        syncs_from_one_response::<Lazy<Pod>>(
            &server,
            wire,
            Storage::compact(CompactOptions::default()),
        )
        .await;
    }
}

/// A relist after a watch that closed at once is made at the last synced version, without a
/// limit (the server answered the first list in one response): it streams in, and what the
/// server deleted meanwhile reaches the handler at its end. Also with atomic relists.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relist_in_one_response_streams_and_deletes_what_the_list_no_longer_holds() {
    for atomic in [false, true] {
        let server = watch_cache_server().await;
        let client = server.client_without_retries().unwrap();
        let informer = SharedIndexInformer::new(
            KubeListerWatcher::new(Api::<Pod>::all(client))
                .with_stream_lists_above(STREAM_ABOVE)
                .with_request_timeout(Duration::from_secs(5)),
            InformerOptions::new("pods")
                .with_watch_list(false)
                .with_atomic_relists(atomic)
                .with_backoff(short_backoff),
        );
        let (tracker, cancel, task) = run_synced(&informer, Duration::from_secs(60)).await;
        // The next watch closes at once (a relist follows); the current one ends now and the
        // server refuses connections while it changes.
        server
            .faults()
            .add_rule(FaultRule::once(Fault::CloseWatch { after_events: 0 }));
        server
            .faults()
            .inject(Fault::RefuseConnections(Duration::from_millis(300)));
        let store = server.store();
        for i in 0..50 {
            store
                .delete("pods", &format!("ns-{}", i % 100), &format!("pod-{i}"))
                .unwrap();
        }
        for i in 50..80 {
            let patch = serde_json::json!({"metadata": {"labels": {"changed": "yes"}}});
            store
                .patch(
                    "pods",
                    &format!("ns-{}", i % 100),
                    &format!("pod-{i}"),
                    &patch,
                )
                .unwrap();
        }
        wait_converged(
            &server,
            None,
            &informer.get_indexer(),
            &tracker,
            Duration::from_secs(30),
        )
        .await
        .unwrap();
        let metrics = informer.metrics().reflector;
        assert!(
            metrics.lists >= 2,
            "atomic={atomic}: relisted ({metrics:?})"
        );
        {
            let st = tracker.state.lock();
            assert_eq!(
                st.deletes + st.tombstones,
                50,
                "atomic={atomic}: every deleted pod reached the handler"
            );
            assert!(st.violations.is_empty(), "{:?}", st.violations);
        }
        stop(cancel, task).await;
    }
}

/// What a scripted list answer does after its bytes.
enum Then {
    /// Close the connection (the body ends there).
    Close,
    /// Keep the connection open and send nothing more.
    Stall,
}

/// The list answers still to give, in order.
type Script = Arc<Mutex<VecDeque<(Vec<u8>, Then)>>>;

/// A bare HTTP/1.1 server answering list requests from a script (the last answer repeats) and
/// watches with a response that stays open and silent.
struct ScriptedServer {
    url: String,
    lists: Script,
    stop: CancellationToken,
}

impl ScriptedServer {
    async fn start(lists: Vec<(Vec<u8>, Then)>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let lists: Script = Arc::new(Mutex::new(VecDeque::from(lists)));
        let stop = CancellationToken::new();
        tokio::spawn({
            let (lists, stop) = (Arc::clone(&lists), stop.clone());
            async move {
                loop {
                    let conn = tokio::select! {
                        () = stop.cancelled() => return,
                        c = listener.accept() => c,
                    };
                    let Ok((conn, _)) = conn else { return };
                    tokio::spawn(answer(conn, Arc::clone(&lists), stop.clone()));
                }
            }
        });
        Self { url, lists, stop }
    }

    fn client(&self) -> Client {
        let mut config = kube::Config::new(self.url.parse().unwrap());
        config.default_retry = false;
        Client::try_from(config).unwrap()
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn answer(mut conn: TcpStream, lists: Script, stop: CancellationToken) {
    let mut request = Vec::new();
    let mut buf = [0u8; 4096];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        match conn.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    let head = String::from_utf8_lossy(&request);
    if head.lines().next().is_some_and(|l| l.contains("watch=")) {
        let _ = conn
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
            .await;
        stop.cancelled().await;
        return;
    }
    let (body, then) = {
        let mut lists = lists.lock();
        if lists.len() > 1 {
            lists.pop_front().unwrap()
        } else {
            let (body, _) = lists.front().unwrap();
            (body.clone(), Then::Close)
        }
    };
    let head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n";
    if conn.write_all(head).await.is_err() || conn.write_all(&body).await.is_err() {
        return;
    }
    match then {
        Then::Close => {
            let _ = conn.shutdown().await;
        }
        Then::Stall => stop.cancelled().await,
    }
}

/// A pod of about 1 KB as a list item.
fn item(i: usize) -> String {
    format!(
        r#"{{"metadata":{{"name":"pod-{i}","namespace":"ns","resourceVersion":"{}","annotations":{{"pad":"{}"}}}},"spec":{{"containers":[{{"name":"c","image":"registry.example/c:1"}}]}}}}"#,
        i + 1,
        "x".repeat(900)
    )
}

/// The opening of a pod list at version `rv` and its first `n` items (over 4 MiB for
/// 5,000 items, so it streams), ready for one more item.
fn list_head(rv: u64, n: usize) -> Vec<u8> {
    let mut body = format!(
        r#"{{"kind":"PodList","apiVersion":"v1","metadata":{{"resourceVersion":"{rv}"}},"items":["#
    )
    .into_bytes();
    for i in 0..n {
        body.extend_from_slice(item(i).as_bytes());
        body.push(b',');
    }
    body
}

/// A whole, good list of `n` pods.
fn good_list(rv: u64, n: usize) -> Vec<u8> {
    let mut body = list_head(rv, n);
    body.pop();
    body.extend_from_slice(b"]}");
    body
}

/// Lists from a scripted server whose first answer is `bad`: the list fails with an error
/// that contains every one of `expect`, the informer is not synced on it, and the next
/// (good) list syncs it with the good list's pods.
async fn a_broken_body_fails_the_list_and_the_next_list_repairs(
    bad: Vec<u8>,
    then: Then,
    expect: &[&str],
) {
    const GOOD: usize = 20;
    let server =
        ScriptedServer::start(vec![(bad, then), (good_list(9_000, GOOD), Then::Close)]).await;
    let informer = SharedIndexInformer::new(
        KubeListerWatcher::new(Api::<Pod>::all(server.client()))
            .with_wire(Wire::Json)
            .with_request_timeout(Duration::from_secs(1))
            .with_max_item_bytes(64 << 10),
        InformerOptions::new("pods")
            .with_watch_list(false)
            .with_backoff(short_backoff),
    );
    let errors = Arc::new(Mutex::new(Vec::new()));
    informer
        .set_watch_error_handler({
            let errors = Arc::clone(&errors);
            move |e| errors.lock().push(e.to_string())
        })
        .unwrap();
    let (tracker, cancel, task) = run_synced(&informer, Duration::from_secs(30)).await;
    let metrics = informer.metrics().reflector;
    assert_eq!((metrics.lists, metrics.list_failures), (2, 1));
    let errors = errors.lock().clone();
    let first = errors.first().expect("the failed list was reported");
    for part in expect {
        assert!(first.contains(part), "{part:?} not in {first:?}");
    }
    // Nothing of the broken list is left: the cache is the good list, and the handler saw
    // the broken list's pods deleted again if any were applied.
    let cache = cache_pods(&informer.get_indexer());
    assert_eq!(cache.len(), GOOD);
    assert!(cache.keys().all(|k| k.starts_with("ns/pod-")));
    // The handler hears of it too (listeners deliver on their own tasks).
    timeout(Duration::from_secs(10), async {
        loop {
            let changed = tracker.changed.notified();
            if tracker.view() == cache {
                return;
            }
            changed.await;
        }
    })
    .await
    .expect("the handler's view is the cache");
    stop(cancel, task).await;
    assert!(server.lists.lock().len() == 1, "the script was played");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_cut_off_inside_an_item_fails_the_list_naming_the_item() {
    let mut bad = list_head(100, 5_000);
    let offset = bad.len();
    bad.extend_from_slice(&item(5_000).as_bytes()[..300]);
    let at = format!("began at byte {offset}");
    a_broken_body_fails_the_list_and_the_next_list_repairs(
        bad,
        Then::Close,
        &["inside item 5000", &at],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_item_fails_the_list_naming_the_item() {
    let mut bad = list_head(100, 5_000);
    let offset = bad.len();
    bad.extend_from_slice(br#"{"metadata":{"name":"broken"},"spec":tru}"#);
    bad.extend_from_slice(format!(",{}]}}", item(5_001)).as_bytes());
    let at = format!("at byte {offset}");
    a_broken_body_fails_the_list_and_the_next_list_repairs(
        bad,
        Then::Close,
        &["list item 5000", &at, "is not JSON"],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_item_over_the_cap_fails_the_list_naming_the_item() {
    let mut bad = list_head(100, 5_000);
    let offset = bad.len();
    let huge = item(5_000).replace(&"x".repeat(900), &"y".repeat(100_000));
    bad.extend_from_slice(format!("{huge}]}}").as_bytes());
    let at = format!("at byte {offset}");
    a_broken_body_fails_the_list_and_the_next_list_repairs(
        bad,
        Then::Close,
        &[
            "list item 5000",
            &at,
            "longer than the limit of 65536 bytes",
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_stops_arriving_fails_the_list_after_the_request_timeout() {
    let bad = list_head(100, 5_000);
    a_broken_body_fails_the_list_and_the_next_list_repairs(
        bad,
        Then::Stall,
        &["stopped arriving", "after 5000 items"],
    )
    .await;
}
