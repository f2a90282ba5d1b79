//! End to end over HTTP: `SharedIndexInformer` (and `SharedInformerFactory`) through
//! `KubeListerWatcher` and a real `kube::Client` against the embedded API server, with the
//! server misbehaving on purpose.
//!
//! After every injected fault the informer's cache and the handler's view must equal the
//! server's state (keys and resourceVersions); every object the handler knew and the server
//! deleted must have reached the handler as a delete or a tombstone; per key, notifications
//! must continue from the version the handler saw last.
//!
//! The randomized suite runs 200 seeds (2,000 with `KINFORMER_LONG_TESTS=1`), a third each with
//! typed pods, typed pods in compact storage and lazy pods in compact storage
//! (`KINFORMER_E2E_SEED=<n>` runs one). Each seed works in its own namespace on one of a few
//! shared servers, one informer per server at a time (faults are per server).

#![cfg(feature = "kube")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] functions

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kinformer::cache::store::CompactOptions;
use kinformer::cache::{
    HandlerOptions, HasSynced, InformerOptions, Lazy, QueueKind, SharedIndexInformer,
    SharedInformerFactory, Storage,
};
use kinformer::kube::KubeListerWatcher;
use kinformer_apiserver::{ApiServer, Fault, ServerConfig, TestServer, seed_bench_pods};
use kube::{Api, Client};
use kube_core::Resource;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::de::DeserializeOwned;
use serde_json::json;
use support::{
    Seen, Tracker, cache_pods, diff, server_pods, short_backoff, small_pod, spawn_informer, stop,
    wait_converged,
};
use tokio::time::{Instant, timeout};
use tokio_util::sync::CancellationToken;

/// Failure guard for one convergence (never reached when things work).
const CONVERGE_LIMIT: Duration = Duration::from_secs(15);

async fn start_server() -> ApiServer {
    TestServer::start_with(ServerConfig::for_tests())
        .await
        .unwrap()
}

/// A lister-watcher with a short request timeout: a request the HTTP client loses when the
/// server closes a connection as it is queued (see `kinformer::kube`) is retried well within
/// the tests' convergence deadlines.
fn lw<K: Resource + DeserializeOwned + Send + Sync + 'static>(api: Api<K>) -> KubeListerWatcher<K> {
    KubeListerWatcher::new(api).with_request_timeout(Duration::from_secs(3))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_pods_sync_over_http_by_watch_list_and_by_paged_list() {
    let server = start_server().await;
    seed_bench_pods(server.store(), 10_000).unwrap();
    let want = server_pods(&server, None);
    let client = server.client_without_retries().unwrap();
    for watch_list in [true, false] {
        let informer = SharedIndexInformer::new(
            lw(Api::<Pod>::all(client.clone())),
            InformerOptions::new("pods")
                .with_watch_list(watch_list)
                .with_backoff(short_backoff),
        );
        let tracker = Arc::new(Tracker::default());
        informer.add_event_handler(Arc::clone(&tracker)).unwrap();
        let started = Instant::now();
        let (cancel, task) = spawn_informer(&informer);
        timeout(Duration::from_secs(60), informer.wait_synced())
            .await
            .expect("synced");
        let synced = started.elapsed();
        assert_eq!(cache_pods(&informer.get_indexer()), want);
        wait_converged(
            &server,
            None,
            &informer.get_indexer(),
            &tracker,
            CONVERGE_LIMIT,
        )
        .await
        .unwrap();
        {
            let st = tracker.state.lock();
            assert_eq!((st.adds, st.initial_adds), (10_000, 10_000));
            assert_eq!((st.updates, st.deletes, st.tombstones), (0, 0, 0));
            assert!(st.violations.is_empty(), "{:?}", st.violations);
        }
        eprintln!("watch_list={watch_list}: 10,000 pods synced in {synced:?}");
        stop(cancel, task).await;
    }
    // The paged list went out in pages of 500.
    assert!(server.faults().total() == 0);
}

/// Without faults, every create, update and delete reaches the handler once, in the server's
/// order per key, with the server's versions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creates_updates_and_deletes_reach_the_handler_in_order_per_key() {
    let server = start_server().await;
    let store = server.store();
    let ns = "order";
    let mut expected: BTreeMap<String, Vec<Seen>> = BTreeMap::new();
    let mut live: BTreeMap<String, u64> = BTreeMap::new();
    let rv = |v: &serde_json::Value| -> u64 {
        v["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap()
    };
    for i in 0..20 {
        let name = format!("p{i}");
        let created = store.create("pods", ns, small_pod(ns, &name, 0)).unwrap();
        let key = format!("{ns}/{name}");
        expected
            .entry(key.clone())
            .or_default()
            .push(Seen::Add(rv(&created)));
        live.insert(key, rv(&created));
    }
    let client = server.client_without_retries().unwrap();
    let informer = SharedIndexInformer::new(
        lw(Api::<Pod>::namespaced(client, ns)),
        InformerOptions::new(ns).with_backoff(short_backoff),
    );
    let tracker = Arc::new(Tracker::default());
    informer.add_event_handler(Arc::clone(&tracker)).unwrap();
    let (cancel, task) = spawn_informer(&informer);
    timeout(Duration::from_secs(10), informer.wait_synced())
        .await
        .unwrap();

    let mut rng = StdRng::seed_from_u64(11);
    for step in 0..400u64 {
        let i = rng.random_range(0..30);
        let name = format!("p{i}");
        let key = format!("{ns}/{name}");
        let log = expected.entry(key.clone()).or_default();
        match live.get(&key).copied() {
            None => {
                let o = store
                    .create("pods", ns, small_pod(ns, &name, step))
                    .unwrap();
                log.push(Seen::Add(rv(&o)));
                live.insert(key, rv(&o));
            }
            Some(prev) if rng.random_bool(0.2) => {
                let o = store.delete("pods", ns, &name).unwrap();
                log.push(Seen::Delete(rv(&o).max(prev)));
                live.remove(&key);
            }
            Some(prev) => {
                let patch = json!({"metadata": {"labels": {"gen": (step + 1).to_string()}}});
                let o = store.patch("pods", ns, &name, &patch).unwrap();
                log.push(Seen::Update(prev, rv(&o)));
                live.insert(key, rv(&o));
            }
        }
    }
    wait_converged(
        &server,
        Some(ns),
        &informer.get_indexer(),
        &tracker,
        CONVERGE_LIMIT,
    )
    .await
    .unwrap();
    {
        let st = tracker.state.lock();
        assert!(st.violations.is_empty(), "{:?}", st.violations);
        // Live deletes carry the deletion's version (> last seen) or the last one; normalise to
        // compare the order only for deletes, exactly for the rest.
        for (key, want) in &expected {
            let got = st.log.get(key).cloned().unwrap_or_default();
            assert_eq!(got.len(), want.len(), "{key}: {got:?} vs {want:?}");
            for (g, w) in got.iter().zip(want) {
                match (g, w) {
                    (Seen::Delete(_), Seen::Delete(_)) => {}
                    _ => assert_eq!(g, w, "{key}: {got:?} vs {want:?}"),
                }
            }
        }
        assert_eq!(st.tombstones, 0);
    }
    stop(cancel, task).await;
}

/// The shared factory's informer (default settings) follows the server across a 410 on watch
/// and a closed watch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_factory_informer_converges_after_watch_faults() {
    let server = start_server().await;
    let ns = "factory";
    for i in 0..25 {
        server
            .store()
            .create("pods", ns, small_pod(ns, &format!("p{i}"), 0))
            .unwrap();
    }
    let factory =
        SharedInformerFactory::new(server.client_without_retries().unwrap()).with_namespace(ns);
    let informer = factory.informer::<Pod>();
    assert!(informer.ptr_eq(&factory.informer::<Pod>()));
    let tracker = Arc::new(Tracker::default());
    informer.add_event_handler(Arc::clone(&tracker)).unwrap();
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    let synced = timeout(
        Duration::from_secs(10),
        factory.wait_for_cache_sync(&cancel),
    )
    .await
    .unwrap();
    assert!(synced.values().all(|s| *s), "{synced:?}");
    let cache = informer.get_indexer();
    wait_converged(&server, Some(ns), &cache, &tracker, CONVERGE_LIMIT)
        .await
        .unwrap();

    for i in 0..5 {
        server.store().delete("pods", ns, &format!("p{i}")).unwrap();
    }
    server.faults().inject(Fault::WatchGone);
    server.faults().close_all_watches();
    for i in 5..10 {
        server.store().delete("pods", ns, &format!("p{i}")).unwrap();
        server
            .store()
            .patch(
                "pods",
                ns,
                &format!("p{}", i + 10),
                &json!({"metadata": {"labels": {"gen": "1"}}}),
            )
            .unwrap();
    }
    wait_converged(&server, Some(ns), &cache, &tracker, CONVERGE_LIMIT)
        .await
        .unwrap();
    assert!(
        tracker.violations().is_empty(),
        "{:?}",
        tracker.violations()
    );
    let deleted = tracker.deleted_keys();
    for i in 0..10 {
        assert!(deleted.contains(&format!("{ns}/p{i}")), "{deleted:?}");
    }
    cancel.cancel();
    timeout(Duration::from_secs(10), factory.shutdown())
        .await
        .unwrap();
}

/// Updates unlike the listed pods (annotations and containers the dictionary trained at
/// sync never saw) make a compact informer's store train a new dictionary and use it for the
/// writes after it; the pods stored with the first one (never updated) still read back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compact_informer_makes_a_new_dictionary_when_the_updates_drift() {
    let server = start_server().await;
    let ns = "drift";
    let pods = 400;
    for i in 0..pods {
        server
            .store()
            .create("pods", ns, small_pod(ns, &format!("p{i}"), 0))
            .unwrap();
    }
    let factory = SharedInformerFactory::new(server.client_without_retries().unwrap())
        .with_namespace(ns)
        .with_storage::<Lazy<Pod>>(Storage::compact(CompactOptions::default().train_after(300)));
    let informer = factory.informer::<Lazy<Pod>>();
    let tracker = Arc::new(Tracker::default());
    informer.add_event_handler(Arc::clone(&tracker)).unwrap();
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    timeout(
        Duration::from_secs(10),
        factory.wait_for_cache_sync(&cancel),
    )
    .await
    .unwrap();
    let cache = informer.get_indexer();
    wait_converged(&server, Some(ns), &cache, &tracker, CONVERGE_LIMIT)
        .await
        .unwrap();
    assert_eq!(cache.compact_dictionaries(), 1);
    let listed = cache.compact_stored_bytes();

    // Rounds of updates of the first 300 pods (the last 100 keep the first dictionary's
    // encoding), until the store has loaded a new dictionary. Training runs on a thread of its
    // own and the write after it loads the result, so this takes a few rounds; 40 are far more
    // than that needs.
    let drifted = |i: usize, round: usize| {
        let mut pod = small_pod(ns, &format!("p{i}"), round as u64);
        pod["metadata"]["annotations"] = json!({
            "deployment.kubernetes.io/revision": round.to_string(),
            "checksum/config": "the configuration of the worker fleet, version three",
            "owner": "platform-team@example.com, escalation through the pager rota",
        });
        pod["spec"] = json!({"containers": [{
            "name": "worker",
            "image": format!("registry.example/fleet/worker:2.{}", i % 3),
            "env": [{"name": "QUEUE_URL", "value": "amqp://queue.fleet.svc:5672/work"},
                    {"name": "CACHE_DIRECTORY", "value": "/var/cache/fleet-worker"}],
        }]});
        pod
    };
    // The first round is written with the first dictionary (drift takes two windows of 300
    // writes to tell, and a third to collect samples).
    let mut round = 0;
    let mut before = None;
    while cache.compact_dictionaries() < 2 {
        round += 1;
        assert!(round <= 40, "no new dictionary after {} updates", 300 * 40);
        for i in 0..300 {
            server
                .store()
                .update("pods", ns, drifted(i, round))
                .unwrap();
        }
        wait_converged(&server, Some(ns), &cache, &tracker, CONVERGE_LIMIT)
            .await
            .unwrap();
        before.get_or_insert(cache.compact_stored_bytes());
    }
    let before = before.unwrap();
    assert!(round >= 3, "a new dictionary after {round} rounds");
    // One more round, all of it written with the new dictionary.
    for i in 0..300 {
        server
            .store()
            .update("pods", ns, drifted(i, round + 1))
            .unwrap();
    }
    wait_converged(&server, Some(ns), &cache, &tracker, CONVERGE_LIMIT)
        .await
        .unwrap();
    let after = cache.compact_stored_bytes();
    assert!(
        after * 10 < before * 9,
        "the store with 300 drifted pods: {before} B with the first dictionary, {after} B with the new one (listed: {listed} B)"
    );
    // Every pod reads back, whichever dictionary stored it.
    for i in 0..pods {
        let pod = cache.get_by_key(&format!("{ns}/p{i}")).unwrap();
        let full = pod.object().unwrap();
        let want = if i < 300 { round as u64 + 1 } else { 0 };
        assert_eq!(
            full.metadata.labels.as_ref().and_then(|l| l.get("gen")),
            Some(&want.to_string()),
            "p{i}"
        );
        assert!(full.spec.is_some());
    }
    assert!(
        tracker.violations().is_empty(),
        "{:?}",
        tracker.violations()
    );
    cancel.cancel();
    timeout(Duration::from_secs(10), factory.shutdown())
        .await
        .unwrap();
}

/// A garbled event or an unknown event type in the middle of a watch stream (the server goes
/// on sending) is never skipped: the watch ends, resumes from the last good version and the
/// change arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_line_mid_watch_loses_no_event() {
    let server = start_server().await;
    // Named in the failure message, should a fault never reach a watch.
    server.requests().enable();
    let ns = "garbled";
    server
        .store()
        .create("pods", ns, small_pod(ns, "p0", 0))
        .unwrap();
    let client = server.client_without_retries().unwrap();
    for (i, fault) in [
        Fault::GarbleWatchEvent { after_events: 0 },
        Fault::UnknownWatchEventType { after_events: 1 },
    ]
    .into_iter()
    .enumerate()
    {
        let informer = SharedIndexInformer::new(
            lw(Api::<Pod>::namespaced(client.clone(), ns)),
            InformerOptions::new(ns)
                .with_watch_list(false)
                .with_backoff(short_backoff),
        );
        let errors = Arc::new(AtomicU64::new(0));
        informer
            .set_watch_error_handler({
                let errors = Arc::clone(&errors);
                move |e| {
                    if matches!(
                        e,
                        kinformer::cache::reflector::ReflectorError::WatchUndecodable(_)
                    ) {
                        errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
            .unwrap();
        let tracker = Arc::new(Tracker::default());
        informer.add_event_handler(Arc::clone(&tracker)).unwrap();
        let (cancel, task) = spawn_informer(&informer);
        timeout(CONVERGE_LIMIT, informer.wait_synced())
            .await
            .expect("synced");
        let cache = informer.get_indexer();
        wait_converged(&server, Some(ns), &cache, &tracker, CONVERGE_LIMIT)
            .await
            .unwrap();
        // The next watch carries the fault; its first (second) event is the bad line. The
        // closes that make the informer open that watch race with it: a close can land on the
        // faulted watch itself before its bad line is sent (the pods then arrive on a clean
        // watch and no error is seen). Each round must converge; some round must see the error.
        for round in 0..5 {
            server.faults().inject(fault.clone());
            let fired = || server.faults().counts().values().sum::<u64>();
            let before = fired();
            timeout(CONVERGE_LIMIT, async {
                // Closed again until the fault fires: a watch the server accepted before the
                // injection but had not yet registered for closing when the first close came
                // would otherwise run on without the fault.
                while fired() == before {
                    server.faults().close_all_watches();
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            })
            .await
            .unwrap_or_else(|_| {
                let requests = server.requests().requests();
                let last = &requests[requests.len().saturating_sub(20)..];
                panic!(
                    "{fault:?}, round {round}: no new watch within {CONVERGE_LIMIT:?}; \
                     informer {:?}, last error {:?}, the server's last requests {last:#?}",
                    informer.metrics(),
                    informer.last_error(),
                )
            });
            for j in 0..3 {
                server
                    .store()
                    .create("pods", ns, small_pod(ns, &format!("x{i}-{round}-{j}"), 0))
                    .unwrap();
            }
            wait_converged(&server, Some(ns), &cache, &tracker, CONVERGE_LIMIT)
                .await
                .unwrap_or_else(|e| panic!("{fault:?}: {e}"));
            if errors.load(Ordering::Relaxed) >= 1 {
                break;
            }
        }
        assert!(
            errors.load(Ordering::Relaxed) >= 1,
            "{fault:?}: no typed error"
        );
        assert!(
            tracker.violations().is_empty(),
            "{:?}",
            tracker.violations()
        );
        stop(cancel, task).await;
    }
}

/// A 429 with `Retry-After: 1` on the watch delays the re-watch by about a second, without a
/// relist.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_after_on_a_throttled_watch_is_honoured_without_a_relist() {
    let server = start_server().await;
    let ns = "throttle";
    for i in 0..5 {
        server
            .store()
            .create("pods", ns, small_pod(ns, &format!("p{i}"), 0))
            .unwrap();
    }
    let client = server.client_without_retries().unwrap();
    let informer = SharedIndexInformer::new(
        lw(Api::<Pod>::namespaced(client, ns)),
        InformerOptions::new(ns)
            .with_watch_list(false)
            .with_backoff(short_backoff),
    );
    let tracker = Arc::new(Tracker::default());
    informer.add_event_handler(Arc::clone(&tracker)).unwrap();
    let errors = Arc::new(AtomicU64::new(0));
    informer
        .set_watch_error_handler({
            let errors = Arc::clone(&errors);
            move |_| {
                errors.fetch_add(1, Ordering::Relaxed);
            }
        })
        .unwrap();
    let (cancel, task) = spawn_informer(&informer);
    timeout(Duration::from_secs(10), informer.wait_synced())
        .await
        .unwrap();
    wait_converged(
        &server,
        Some(ns),
        &informer.get_indexer(),
        &tracker,
        CONVERGE_LIMIT,
    )
    .await
    .unwrap();
    // Let the watch live past the "very short watch" second, so its close is a clean one.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    server.faults().inject(Fault::TooManyRequests {
        retry_after_secs: 1,
    });
    let closed = Instant::now();
    server.faults().close_all_watches();
    // Write only once the re-watch was throttled, so the old watch cannot deliver it.
    timeout(Duration::from_secs(10), async {
        while !server.faults().counts().contains_key("429") {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await
    .expect("the re-watch hit the 429");
    server
        .store()
        .patch(
            "pods",
            ns,
            "p0",
            &json!({"metadata": {"labels": {"gen": "1"}}}),
        )
        .unwrap();
    wait_converged(
        &server,
        Some(ns),
        &informer.get_indexer(),
        &tracker,
        CONVERGE_LIMIT,
    )
    .await
    .unwrap();
    let took = closed.elapsed();
    assert!(took >= Duration::from_millis(950), "{took:?}");
    assert_eq!(server.faults().counts().get("429"), Some(&1));
    {
        let st = tracker.state.lock();
        // Initial adds, then exactly the one update: no relist replayed anything.
        assert_eq!(
            (st.adds, st.updates, st.deletes, st.tombstones),
            (5, 1, 0, 0)
        );
    }
    assert!(errors.load(Ordering::Relaxed) >= 1);
    stop(cancel, task).await;
}

/// One seed's informer configuration, drawn from the seed.
#[derive(Debug, Clone)]
struct SeedConfig {
    queue: QueueKind,
    watch_list: bool,
    page_size: Option<u32>,
    /// The handler is registered as non-blocking (called on the watch task once synced).
    nonblocking: bool,
}

/// What one seed did (for the summary line).
#[derive(Debug, Default)]
struct SeedStats {
    ops: u64,
    faults: BTreeMap<&'static str, u64>,
    tombstones: u64,
}

fn random_fault(rng: &mut StdRng) -> Fault {
    match rng.random_range(0..13) {
        0 => Fault::CloseWatch {
            after_events: rng.random_range(0..4),
        },
        1 => Fault::WatchGone,
        2 => Fault::ExpireContinue,
        3 => Fault::TooManyRequests {
            retry_after_secs: 0,
        },
        4 => Fault::InternalError,
        5 => Fault::RefuseConnections(Duration::from_millis(rng.random_range(20..120))),
        6 => Fault::GarbleWatchFrame {
            after_events: rng.random_range(0..4),
        },
        7 => Fault::TruncateWatchFrame {
            after_events: rng.random_range(0..4),
        },
        8 => Fault::Compact,
        9 => Fault::Delay(Duration::from_millis(rng.random_range(5..40))),
        10 => Fault::GarbleWatchEvent {
            after_events: rng.random_range(0..4),
        },
        11 => Fault::UnknownWatchEventType {
            after_events: rng.random_range(0..4),
        },
        _ => Fault::CloseWatch { after_events: 0 },
    }
}

/// Compact storage with a dictionary trained early, so the seeds exercise compressed objects.
fn small_compact<K: Resource + serde::Serialize + DeserializeOwned + 'static>() -> Storage<K> {
    Storage::compact(CompactOptions::default().train_after(10))
}

/// One seed: a namespace with 20–50 pods, an informer, rounds of random writes and faults, and
/// after each round the checks. The seed picks the informer's objects and storage: typed pods
/// in typed or compact storage, or lazy pods (`Lazy<Pod>`) in compact storage.
async fn run_seed(server: &ApiServer, client: &Client, seed: u64) -> Result<SeedStats, String> {
    match seed % 3 {
        0 => run_seed_with::<Pod>(server, client, seed, Storage::typed()).await,
        1 => run_seed_with::<Pod>(server, client, seed, small_compact()).await,
        _ => run_seed_with::<Lazy<Pod>>(server, client, seed, small_compact()).await,
    }
}

async fn run_seed_with<K>(
    server: &ApiServer,
    client: &Client,
    seed: u64,
    storage: Storage<K>,
) -> Result<SeedStats, String>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    let mut rng = StdRng::seed_from_u64(seed);
    let ns = format!("seed-{seed}");
    let store = server.store();
    let config = SeedConfig {
        queue: if rng.random_bool(0.5) {
            QueueKind::RealFifo
        } else {
            QueueKind::DeltaFifo
        },
        watch_list: rng.random_bool(0.5),
        page_size: rng.random_bool(0.5).then(|| rng.random_range(5..20)),
        // From the seed, not the generator, so each seed's writes and faults stay as they were.
        nonblocking: (seed / 3) % 2 == 1,
    };
    let ctx = |e: String| format!("seed {seed} ({config:?}, {storage:?}): {e}");
    let n0 = rng.random_range(20..=50usize);
    let mut next_name = 0usize;
    let mut names: Vec<String> = Vec::new();
    for _ in 0..n0 {
        let name = format!("p{next_name}");
        next_name += 1;
        store
            .create("pods", &ns, small_pod(&ns, &name, 0))
            .map_err(|e| ctx(e.to_string()))?;
        names.push(name);
    }
    let mut options = InformerOptions::new(ns.clone())
        .with_storage(storage.clone())
        .with_queue(config.queue)
        .with_watch_list(config.watch_list)
        .with_backoff(short_backoff);
    if let Some(size) = config.page_size {
        options = options.with_page_size(size);
    }
    let informer = SharedIndexInformer::new(lw(Api::<K>::namespaced(client.clone(), &ns)), options);
    let tracker = Arc::new(Tracker::default());
    informer
        .add_event_handler_with_options(
            Arc::clone(&tracker),
            HandlerOptions::new().nonblocking(config.nonblocking),
        )
        .map_err(|e| ctx(e.to_string()))?;
    let (cancel, task) = spawn_informer(&informer);
    let cache = informer.get_indexer();
    let mut stats = SeedStats::default();
    let result = async {
        timeout(CONVERGE_LIMIT, informer.wait_synced())
            .await
            .map_err(|_| "no initial sync".to_string())?;
        wait_converged(server, Some(&ns), &cache, &tracker, CONVERGE_LIMIT).await?;
        // Keys the handler has seen and the server then deleted (not re-created since).
        let mut deleted: BTreeSet<String> = BTreeSet::new();
        let rounds = rng.random_range(2..=4);
        for round in 0..rounds {
            let faults: Vec<Fault> = (0..rng.random_range(1..=2))
                .map(|_| random_fault(&mut rng))
                .collect();
            let ops_before = rng.random_range(0..4);
            let ops_after = rng.random_range(1..6);
            for i in 0..(ops_before + ops_after) {
                if i == ops_before {
                    for f in &faults {
                        *stats.faults.entry(f.name()).or_default() += 1;
                        server.faults().inject(f.clone());
                    }
                    // Make the reflector start a new watch, where watch faults apply.
                    if rng.random_bool(0.7) {
                        server.faults().close_all_watches();
                    }
                }
                stats.ops += 1;
                let op = rng.random_range(0..10);
                if op < 3 || names.is_empty() {
                    // Create, sometimes re-using a deleted name.
                    let name = match deleted.iter().next().filter(|_| rng.random_bool(0.3)) {
                        Some(key) => key.split('/').nth(1).unwrap_or_default().to_owned(),
                        None => {
                            next_name += 1;
                            format!("p{next_name}")
                        }
                    };
                    deleted.remove(&format!("{ns}/{name}"));
                    store
                        .create("pods", &ns, small_pod(&ns, &name, round))
                        .map_err(|e| e.to_string())?;
                    names.push(name);
                } else if op < 6 {
                    let name = names.swap_remove(rng.random_range(0..names.len()));
                    store
                        .delete("pods", &ns, &name)
                        .map_err(|e| e.to_string())?;
                    deleted.insert(format!("{ns}/{name}"));
                } else {
                    let name = &names[rng.random_range(0..names.len())];
                    let patch = json!({"metadata": {"labels": {"gen": format!("{round}-{i}")}}});
                    store
                        .patch("pods", &ns, name, &patch)
                        .map_err(|e| e.to_string())?;
                }
            }
            wait_converged(server, Some(&ns), &cache, &tracker, CONVERGE_LIMIT)
                .await
                .map_err(|e| format!("round {round} after {faults:?}: {e}"))?;
            let violations = tracker.violations();
            if !violations.is_empty() {
                return Err(format!("round {round}: violations {violations:?}"));
            }
            let missed = undelivered_deletes(&tracker, &deleted, CONVERGE_LIMIT).await;
            if !missed.is_empty() {
                return Err(format!(
                    "round {round}: deletes never delivered: {missed:?}"
                ));
            }
        }
        Ok::<(), String>(())
    }
    .await;
    server.faults().clear();
    stop(cancel, task).await;
    stats.tombstones = tracker.state.lock().tombstones;
    result.map_err(ctx)?;
    // Final check once more, after the stop: nothing moved.
    let want = server_pods(server, Some(&ns));
    let got = cache_pods(&cache);
    if got != want {
        return Err(ctx(diff("cache after stop", &got, &want)));
    }
    // Keep the shared server small: later seeds' checks read all of its pods.
    for key in want.keys() {
        if let Some((_, name)) = key.split_once('/') {
            store
                .delete("pods", &ns, name)
                .map_err(|e| ctx(e.to_string()))?;
        }
    }
    Ok(stats)
}

/// The keys of `deleted` the handler has seen but not seen deleted, once there are none or
/// `limit` has passed. A create and a delete written last may still be on their way when the
/// cache and the handler already equal the server's pods (neither holds the object), so the
/// handler's add and delete of it can follow the convergence.
async fn undelivered_deletes(
    tracker: &Tracker,
    deleted: &BTreeSet<String>,
    limit: Duration,
) -> Vec<String> {
    let deadline = Instant::now() + limit;
    loop {
        let notified = tracker.changed.notified();
        let seen = tracker.deleted_keys();
        let missed: Vec<String> = {
            let st = tracker.state.lock();
            deleted
                .iter()
                .filter(|k| st.log.contains_key(*k) && !seen.contains(*k))
                .cloned()
                .collect()
        };
        // Each notification of the handler is a chance that a missing delete arrived.
        if missed.is_empty() || tokio::time::timeout_at(deadline, notified).await.is_err() {
            return missed;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn randomized_faults_the_cache_and_handlers_always_converge() {
    let seeds: Vec<u64> = match std::env::var("KINFORMER_E2E_SEED") {
        Ok(s) => vec![s.parse().expect("KINFORMER_E2E_SEED is a number")],
        Err(_) if std::env::var_os("KINFORMER_LONG_TESTS").is_some() => (0..2000).collect(),
        Err(_) => (0..200).collect(),
    };
    const LANES: usize = 4;
    let started = Instant::now();
    let mut lanes = Vec::new();
    for lane in 0..LANES {
        let lane_seeds: Vec<u64> = seeds.iter().copied().skip(lane).step_by(LANES).collect();
        lanes.push(tokio::spawn(async move {
            let server = start_server().await;
            let client = server.client_without_retries().unwrap();
            let mut total = SeedStats::default();
            let mut done = 0u64;
            for seed in lane_seeds {
                let s = run_seed(&server, &client, seed).await?;
                total.ops += s.ops;
                total.tombstones += s.tombstones;
                for (k, v) in s.faults {
                    *total.faults.entry(k).or_default() += v;
                }
                done += 1;
            }
            let fired = server.faults().counts();
            Ok::<_, String>((done, total, fired))
        }));
    }
    let mut failures = Vec::new();
    let (mut seeds_done, mut ops, mut tombstones) = (0, 0, 0);
    let mut injected: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut fired: BTreeMap<&'static str, u64> = BTreeMap::new();
    for lane in lanes {
        match lane.await.unwrap() {
            Ok((done, total, f)) => {
                seeds_done += done;
                ops += total.ops;
                tombstones += total.tombstones;
                for (k, v) in total.faults {
                    *injected.entry(k).or_default() += v;
                }
                for (k, v) in f {
                    *fired.entry(k).or_default() += v;
                }
            }
            Err(e) => failures.push(e),
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
    eprintln!(
        "{seeds_done} seeds, {ops} writes, {tombstones} tombstones in {:?}; injected {injected:?}; fired {fired:?}",
        started.elapsed()
    );
    assert_eq!(seeds_done, seeds.len() as u64);
    // The suite exercises what it claims to: most kinds of faults actually fired.
    if seeds.len() >= 100 {
        for name in [
            "close-watch",
            "watch-gone",
            "429",
            "500",
            "garble",
            "garble-event",
            "unknown-type",
            "refuse",
            "compact",
        ] {
            assert!(
                fired.get(name).copied().unwrap_or(0) > 0,
                "{name} never fired: {fired:?}"
            );
        }
    }
}

/// An informer's metrics count its lists (a relist after a 410 on the watch), watches and
/// events, and its cache and handlers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_lists_relists_watches_and_events() {
    let server = start_server().await;
    let ns = "metrics";
    for i in 0..5 {
        server
            .store()
            .create("pods", ns, small_pod(ns, &format!("p{i}"), 0))
            .unwrap();
    }
    let client = server.client_without_retries().unwrap();
    let informer = SharedIndexInformer::new(
        lw(Api::<Pod>::namespaced(client, ns)),
        InformerOptions::new(ns)
            .with_watch_list(false)
            .with_backoff(short_backoff),
    );
    assert_eq!(
        informer.metrics(),
        kinformer::cache::InformerMetrics::default()
    );
    let tracker = Arc::new(Tracker::default());
    informer.add_event_handler(Arc::clone(&tracker)).unwrap();
    let (cancel, task) = spawn_informer(&informer);
    timeout(CONVERGE_LIMIT, informer.wait_synced())
        .await
        .expect("synced");
    let cache = informer.get_indexer();
    let m = informer.metrics();
    assert_eq!(
        (
            m.reflector.lists,
            m.reflector.listed_objects,
            m.cached_objects,
            m.handlers
        ),
        (1, 5, 5, 1),
        "{m:?}"
    );
    assert!(m.synced && m.reflector.list_failures == 0, "{m:?}");
    server
        .store()
        .create("pods", ns, small_pod(ns, "x", 0))
        .unwrap();
    wait_converged(&server, Some(ns), &cache, &tracker, CONVERGE_LIMIT)
        .await
        .unwrap();
    let m = informer.metrics();
    assert!(m.reflector.watches >= 1 && m.reflector.events >= 1, "{m:?}");
    assert_eq!(m.cached_objects, 6);
    assert!(!m.reflector.last_sync_resource_version.is_empty());
    // The next watch is answered 410 Gone: the reflector relists.
    server.faults().inject(Fault::WatchGone);
    server.faults().close_all_watches();
    timeout(CONVERGE_LIMIT, async {
        while informer.metrics().reflector.lists < 2 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("a relist");
    let m = informer.metrics();
    assert!(m.reflector.errors >= 1, "the 410 was reported: {m:?}");
    stop(cancel, task).await;
    assert_eq!(
        informer.metrics().reflector.lists,
        m.reflector.lists,
        "kept after the stop"
    );
}
