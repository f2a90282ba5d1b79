//! SharedIndexInformer behaviour against the in-memory FakeListerWatcher, on tokio's paused
//! clock. Every scenario runs once per queue kind (RealFIFO and DeltaFIFO), storage (typed and
//! compact) and handler registration (on the handler's task, or non-blocking).

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kinformer::cache::listwatch::Selectors;
use kinformer::cache::reflector::{ReflectorError, ReflectorOptions};
use kinformer::cache::store::{CompactOptions, label_index_func};
use kinformer::cache::testing::FakeListerWatcher;
use kinformer::cache::{
    DeletedObject, HandlerOptions, HasSynced, InformerError, InformerOptions, QueueKind,
    ResourceEventHandler, SharedIndexInformer, Storage,
};
use kube_core::ObjectMeta;
use parking_lot::Mutex;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

// ---------------------------------------------------------------- helpers

fn cm(name: &str) -> ConfigMap {
    cm_labelled(name, "")
}

fn cm_labelled(name: &str, app: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ns".into()),
            labels: (!app.is_empty()).then(|| [("app".to_string(), app.to_string())].into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn key(o: &ConfigMap) -> String {
    format!(
        "{}/{}",
        o.metadata.namespace.clone().unwrap_or_default(),
        o.metadata.name.clone().unwrap_or_default()
    )
}

fn rv(o: &ConfigMap) -> String {
    o.metadata.resource_version.clone().unwrap_or_default()
}

/// Records every notification as a line: `add ns/a 1 initial`, `update ns/a 1->2`,
/// `sync ns/a 2`, `delete ns/a`, `tombstone ns/a`.
#[derive(Debug, Default)]
struct Recorder {
    events: Mutex<Vec<String>>,
}

impl Recorder {
    fn events(&self) -> Vec<String> {
        self.events.lock().clone()
    }
    fn count(&self, prefix: &str) -> usize {
        self.events
            .lock()
            .iter()
            .filter(|e| e.starts_with(prefix))
            .count()
    }
    fn for_key(&self, k: &str) -> Vec<String> {
        self.events
            .lock()
            .iter()
            .filter(|e| e.split(' ').nth(1) == Some(k))
            .cloned()
            .collect()
    }
}

impl ResourceEventHandler<ConfigMap> for Recorder {
    fn on_add(&self, obj: &Arc<ConfigMap>, is_in_initial_list: bool) {
        let initial = if is_in_initial_list { " initial" } else { "" };
        self.events
            .lock()
            .push(format!("add {} {}{initial}", key(obj), rv(obj)));
    }
    fn on_update(&self, old: &Arc<ConfigMap>, new: &Arc<ConfigMap>) {
        let line = if rv(old) == rv(new) {
            format!("sync {} {}", key(new), rv(new))
        } else {
            format!("update {} {}->{}", key(new), rv(old), rv(new))
        };
        self.events.lock().push(line);
    }
    fn on_delete(&self, obj: &DeletedObject<ConfigMap>) {
        let line = match obj {
            DeletedObject::Live(o) => format!("delete {}", key(o)),
            DeletedObject::Tombstone(t) => format!("tombstone {}", t.key.as_str()),
        };
        self.events.lock().push(line);
    }
}

struct Running {
    informer: SharedIndexInformer<ConfigMap>,
    cancel: CancellationToken,
    task: JoinHandle<Result<(), InformerError>>,
}

impl Running {
    async fn stop(self) -> SharedIndexInformer<ConfigMap> {
        self.cancel.cancel();
        self.task.await.unwrap().unwrap();
        self.informer
    }
}

/// One way to build the informer under test.
#[derive(Debug, Clone, Copy)]
struct Mode {
    queue: QueueKind,
    compact: bool,
    /// Handlers registered as non-blocking (called on the watch task once synced).
    nonblocking: bool,
}

impl Mode {
    /// The informer's defaults (the real-thread tests register their handlers themselves).
    const DEFAULT: Mode = Mode {
        queue: QueueKind::RealFifo,
        compact: false,
        nonblocking: false,
    };

    /// How the scenario's (quick) handlers are registered.
    fn handler(self) -> HandlerOptions {
        HandlerOptions::new().nonblocking(self.nonblocking)
    }
}

fn informer(
    lw: &FakeListerWatcher<ConfigMap>,
    mode: Mode,
    resync: Duration,
) -> SharedIndexInformer<ConfigMap> {
    informer_with(lw, mode, resync, |options| options)
}

/// [`informer`] with further options.
fn informer_with(
    lw: &FakeListerWatcher<ConfigMap>,
    mode: Mode,
    resync: Duration,
    more: impl FnOnce(InformerOptions<ConfigMap>) -> InformerOptions<ConfigMap>,
) -> SharedIndexInformer<ConfigMap> {
    let storage = if mode.compact {
        // A dictionary trained on the first two objects, so compressed blobs are exercised.
        Storage::compact(CompactOptions::default().train_after(2))
    } else {
        Storage::typed()
    };
    let options = InformerOptions::new("test")
        .with_queue(mode.queue)
        .with_storage(storage)
        .with_resync_period(resync);
    SharedIndexInformer::new(lw.clone(), more(options))
}

fn start(informer: &SharedIndexInformer<ConfigMap>) -> Running {
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (i, c) = (informer.clone(), cancel.clone());
        async move { i.run(c).await }
    });
    Running {
        informer: informer.clone(),
        cancel,
        task,
    }
}

/// Lets the paused clock run (in 1 ms steps) until `cond` holds; fails after 60 s of
/// simulated time.
async fn eventually(what: &str, cond: impl Fn() -> bool) {
    for _ in 0..60_000 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    panic!("timed out waiting for: {what}");
}

/// Runs `scenario` once per queue kind and storage.
async fn for_each_mode<F, Fut>(scenario: F)
where
    F: Fn(Mode) -> Fut,
    Fut: Future<Output = ()>,
{
    for queue in [QueueKind::RealFifo, QueueKind::DeltaFifo] {
        for compact in [false, true] {
            for nonblocking in [false, true] {
                let mode = Mode {
                    queue,
                    compact,
                    nonblocking,
                };
                eprintln!("mode: {mode:?}");
                scenario(mode).await;
            }
        }
    }
}

// ---------------------------------------------------------------- scenarios

#[tokio::test(start_paused = true)]
async fn the_initial_list_arrives_as_adds_marked_initial() {
    for_each_mode(|kind| async move {
        let lw = FakeListerWatcher::new();
        for n in ["a", "b", "c"] {
            lw.add(cm(n)).unwrap();
        }
        let inf = informer(&lw, kind, Duration::ZERO);
        let rec = Arc::new(Recorder::default());
        let reg = inf
            .add_event_handler_with_options(Arc::clone(&rec), kind.handler())
            .unwrap();
        assert!(!inf.has_synced());
        let run = start(&inf);
        reg.wait_synced().await;
        assert!(inf.has_synced());
        let mut events = rec.events();
        events.sort();
        assert_eq!(
            events,
            [
                "add ns/a 1 initial",
                "add ns/b 2 initial",
                "add ns/c 3 initial"
            ]
        );
        assert_eq!(inf.get_indexer().len(), 3);
        assert_eq!(inf.last_sync_resource_version(), "3");
        run.stop().await;
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn an_empty_initial_list_still_syncs() {
    for_each_mode(|kind| async move {
        let lw = FakeListerWatcher::<ConfigMap>::new();
        let inf = informer(&lw, kind, Duration::ZERO);
        let reg = inf
            .add_event_handler_with_options(Recorder::default(), kind.handler())
            .unwrap();
        let run = start(&inf);
        reg.wait_synced().await;
        assert!(inf.has_synced());
        run.stop().await;
    })
    .await;
}

/// The reflector's settings embedded in the informer's options reach the requests: watch-list
/// off (a list, then a watch), the page size, and the selectors in every list and watch.
#[tokio::test(start_paused = true)]
async fn the_embedded_reflector_options_shape_every_list_and_watch() {
    let lw = FakeListerWatcher::<ConfigMap>::new();
    lw.add(cm("a")).unwrap();
    let selectors = Selectors {
        label_selector: Some("app=web".into()),
        field_selector: Some("metadata.name=a".into()),
    };
    let reflector = ReflectorOptions::new("overridden by the informer")
        .with_watch_list(false)
        .with_page_size(7)
        .with_selectors(selectors.clone());
    let inf = SharedIndexInformer::new(
        lw.clone(),
        InformerOptions::<ConfigMap>::new("pods").with_reflector(reflector),
    );
    let run = start(&inf);
    inf.wait_synced().await;
    eventually("a watch", || lw.watch_calls().len() == 1).await;
    let lists = lw.list_calls();
    assert_eq!(lists.len(), 1, "watch-list is off: one list");
    assert_eq!(lists[0].limit, Some(7));
    assert_eq!(lists[0].selectors, selectors);
    let watch = &lw.watch_calls()[0];
    assert!(!watch.send_initial_events);
    assert_eq!(watch.selectors, selectors);
    assert_eq!(inf.get_indexer().len(), 1);
    run.stop().await;
}

#[tokio::test(start_paused = true)]
async fn watch_events_reach_handlers_in_order_per_key() {
    for_each_mode(|kind| async move {
        let lw = FakeListerWatcher::new();
        lw.add(cm("other")).unwrap();
        let inf = informer(&lw, kind, Duration::ZERO);
        let rec = Arc::new(Recorder::default());
        let reg = inf
            .add_event_handler_with_options(Arc::clone(&rec), kind.handler())
            .unwrap();
        let run = start(&inf);
        reg.wait_synced().await;
        lw.add(cm("x")).unwrap(); // 2
        lw.update(cm("other")).unwrap(); // 3
        lw.update(cm("x")).unwrap(); // 4
        lw.update(cm("x")).unwrap(); // 5
        lw.delete("ns/x").unwrap(); // 6
        eventually("all events delivered", || rec.events().len() == 6).await;
        assert_eq!(
            rec.for_key("ns/x"),
            [
                "add ns/x 2",
                "update ns/x 2->4",
                "update ns/x 4->5",
                "delete ns/x"
            ]
        );
        assert_eq!(
            rec.for_key("ns/other"),
            ["add ns/other 1 initial", "update ns/other 1->3"]
        );
        assert!(inf.get_indexer().get_by_key("ns/x").is_none());
        assert_eq!(inf.last_sync_resource_version(), "6");
        run.stop().await;
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_relist_after_410_turns_missed_deletes_into_tombstones() {
    for_each_mode(|kind| async move {
        let lw = FakeListerWatcher::new();
        lw.add(cm("a")).unwrap();
        lw.add(cm("b")).unwrap();
        let inf = informer(&lw, kind, Duration::ZERO);
        let rec = Arc::new(Recorder::default());
        let reg = inf
            .add_event_handler_with_options(Arc::clone(&rec), kind.handler())
            .unwrap();
        let run = start(&inf);
        reg.wait_synced().await;
        eventually("the watch is open", || lw.active_watches() == 1).await;
        // The watch ends; before the reflector re-watches, b is deleted and the history
        // compacted, so the re-watch gets 410 and the delete is only seen by the relist.
        lw.close_watches();
        lw.delete("ns/b").unwrap();
        lw.add(cm("c")).unwrap();
        lw.reset_change_log();
        eventually("the relist is applied", || {
            rec.count("tombstone") == 1 && rec.count("add ns/c") == 1
        })
        .await;
        assert_eq!(
            rec.for_key("ns/b"),
            ["add ns/b 2 initial", "tombstone ns/b"]
        );
        let initial_state_fetches = lw.list_calls().len()
            + lw.watch_calls()
                .iter()
                .filter(|w| w.send_initial_events)
                .count();
        assert!(initial_state_fetches >= 2, "a relist happened");
        let mut keys: Vec<String> = inf
            .get_indexer()
            .list_keys()
            .iter()
            .map(|k| k.as_str().to_owned())
            .collect();
        keys.sort();
        assert_eq!(keys, ["ns/a", "ns/c"]);
        // a did not change: the relist's update of it is a sync, not delivered without resync.
        assert_eq!(rec.for_key("ns/a"), ["add ns/a 1 initial"]);
        run.stop().await;
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_late_handler_gets_the_cache_replayed_without_gaps_or_duplicates() {
    for_each_mode(|kind| async move {
        let lw = FakeListerWatcher::new();
        for i in 0..50 {
            lw.add(cm(&format!("pre-{i}"))).unwrap();
        }
        let inf = informer(&lw, kind, Duration::ZERO);
        let early = Arc::new(Recorder::default());
        let early_reg = inf
            .add_event_handler_with_options(Arc::clone(&early), kind.handler())
            .unwrap();
        let run = start(&inf);
        early_reg.wait_synced().await;
        // Objects keep arriving while the late handler is added.
        let producer = tokio::spawn({
            let lw = lw.clone();
            async move {
                for i in 0..200 {
                    lw.add(cm(&format!("live-{i}"))).unwrap();
                    tokio::task::yield_now().await;
                }
            }
        });
        for _ in 0..40 {
            tokio::task::yield_now().await;
        }
        let late = Arc::new(Recorder::default());
        let late_reg = inf
            .add_event_handler_with_options(Arc::clone(&late), kind.handler())
            .unwrap();
        producer.await.unwrap();
        late_reg.wait_synced().await;
        eventually("every object reached the late handler", || {
            late.events().len() == 250
        })
        .await;
        let mut seen: HashMap<String, usize> = HashMap::new();
        for e in late.events() {
            assert!(e.starts_with("add "), "only adds expected: {e}");
            *seen
                .entry(e.split(' ').nth(1).unwrap().to_owned())
                .or_default() += 1;
        }
        assert_eq!(seen.len(), 250, "no object missed");
        assert!(seen.values().all(|n| *n == 1), "no object twice");
        assert!(
            late.events()
                .iter()
                .all(|e| !e.starts_with("add ns/pre-") || e.ends_with("initial")),
            "the replayed cache is marked initial"
        );
        assert!(late.count("add ns/pre-") == 50);
        assert_eq!(early.events().len(), 250);
        run.stop().await;
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn resync_goes_only_to_handlers_whose_period_is_due() {
    for_each_mode(|kind| async move {
        let lw = FakeListerWatcher::new();
        lw.add(cm("a")).unwrap();
        lw.add(cm("b")).unwrap();
        let inf = informer(&lw, kind, Duration::from_secs(60));
        let fast = Arc::new(Recorder::default());
        let slow = Arc::new(Recorder::default());
        let never = Arc::new(Recorder::default());
        inf.add_event_handler_with_options(
            Arc::clone(&fast),
            kind.handler().resync_period(Duration::from_secs(10)),
        )
        .unwrap();
        inf.add_event_handler_with_options(
            Arc::clone(&slow),
            kind.handler().resync_period(Duration::from_secs(30)),
        )
        .unwrap();
        let reg = inf
            .add_event_handler_with_options(
                Arc::clone(&never),
                kind.handler().resync_period(Duration::ZERO),
            )
            .unwrap();
        assert_eq!(
            inf.resync_check_period(),
            Duration::from_secs(10),
            "a shorter handler period before the start lowers the check period"
        );
        let run = start(&inf);
        reg.wait_synced().await;
        tokio::time::sleep(Duration::from_millis(10_500)).await;
        assert_eq!(fast.count("sync"), 2, "{:?}", fast.events());
        assert_eq!(slow.count("sync"), 0);
        tokio::time::sleep(Duration::from_secs(20)).await;
        assert_eq!(fast.count("sync"), 6, "{:?}", fast.events());
        assert_eq!(slow.count("sync"), 2, "{:?}", slow.events());
        assert_eq!(never.count("sync"), 0);
        // Added after the start with a shorter period: raised to the check period.
        let late = Arc::new(Recorder::default());
        inf.add_event_handler_with_options(
            Arc::clone(&late),
            kind.handler().resync_period(Duration::from_secs(2)),
        )
        .unwrap();
        assert_eq!(inf.resync_check_period(), Duration::from_secs(10));
        run.stop().await;
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_removed_handler_receives_nothing_more() {
    for_each_mode(|kind| async move {
        let lw = FakeListerWatcher::new();
        lw.add(cm("a")).unwrap();
        let inf = informer(&lw, kind, Duration::ZERO);
        let kept = Arc::new(Recorder::default());
        let removed = Arc::new(Recorder::default());
        inf.add_event_handler_with_options(Arc::clone(&kept), kind.handler())
            .unwrap();
        let reg = inf
            .add_event_handler_with_options(Arc::clone(&removed), kind.handler())
            .unwrap();
        let run = start(&inf);
        reg.wait_synced().await;
        assert_eq!(inf.handler_count(), 2);
        assert!(inf.remove_event_handler(&reg));
        assert!(!inf.remove_event_handler(&reg), "removal is idempotent");
        assert!(reg.is_removed());
        assert_eq!(inf.handler_count(), 1);
        lw.add(cm("b")).unwrap();
        eventually("the kept handler sees b", || kept.count("add ns/b") == 1).await;
        assert_eq!(removed.events(), ["add ns/a 1 initial"]);
        reg.stopped().await;
        run.stop().await;
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn indexers_added_after_the_start_are_back_filled() {
    for_each_mode(|kind| async move {
        let lw = FakeListerWatcher::new();
        lw.add(cm_labelled("a", "web")).unwrap();
        lw.add(cm_labelled("b", "db")).unwrap();
        let inf = informer(&lw, kind, Duration::ZERO);
        let reg = inf
            .add_event_handler_with_options(Recorder::default(), kind.handler())
            .unwrap();
        let run = start(&inf);
        reg.wait_synced().await;
        inf.add_indexers([("app".to_string(), label_index_func("app"))].into())
            .unwrap();
        let web = |inf: &SharedIndexInformer<ConfigMap>| {
            inf.get_indexer()
                .index_keys("app", "web")
                .unwrap()
                .iter()
                .map(|k| k.as_str().to_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(web(&inf), ["ns/a"]);
        lw.add(cm_labelled("c", "web")).unwrap();
        eventually("c is indexed", || web(&inf).len() == 2).await;
        assert!(matches!(
            inf.add_indexers([("app".to_string(), label_index_func("app"))].into()),
            Err(InformerError::Indexer(_))
        ));
        assert_eq!(
            inf.lister().namespaced("ns").get("c").map(|o| key(&o)),
            Some("ns/c".into())
        );
        run.stop().await;
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn shutdown_leaves_no_task_and_refuses_new_handlers() {
    for_each_mode(|kind| async move {
        let metrics = tokio::runtime::Handle::current().metrics();
        let before = metrics.num_alive_tasks();
        let lw = FakeListerWatcher::new();
        lw.add(cm("a")).unwrap();
        let inf = informer(&lw, kind, Duration::from_secs(30));
        let reg = inf
            .add_event_handler_with_options(Recorder::default(), kind.handler())
            .unwrap();
        let run = start(&inf);
        reg.wait_synced().await;
        let late = inf
            .add_event_handler_with_options(Recorder::default(), kind.handler())
            .unwrap();
        late.wait_synced().await;
        assert!(inf.running_listener_tasks() >= 2);
        assert!(!inf.is_stopped());
        let inf = run.stop().await;
        assert!(inf.is_stopped());
        inf.stopped().await;
        assert_eq!(inf.running_listener_tasks(), 0);
        assert_eq!(metrics.num_alive_tasks(), before, "every task ended");
        assert_eq!(lw.active_watches(), 0, "the watch was dropped");
        assert!(matches!(
            inf.add_event_handler(Recorder::default()),
            Err(InformerError::Stopped)
        ));
        assert!(matches!(
            inf.run(CancellationToken::new()).await,
            Err(InformerError::Stopped)
        ));
        // The cache stays readable after the stop.
        assert_eq!(inf.get_indexer().len(), 1);
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn transform_applies_and_watch_error_handler_is_set_before_the_start_only() {
    for_each_mode(|kind| async move {
        let lw = FakeListerWatcher::new();
        lw.add(cm("a")).unwrap();
        // The first watch-list fails to start (the reflector reports it and falls back to
        // list + watch).
        lw.push_watch_error(kinformer::cache::listwatch::ApiStatus::internal_error(
            "boom",
        ));
        let inf = informer_with(&lw, kind, Duration::ZERO, |options| {
            options.with_transform(Arc::new(|o: Arc<ConfigMap>| {
                let mut c = (*o).clone();
                c.data = Some([("seen".to_string(), "yes".to_string())].into());
                Arc::new(c)
            }))
        });
        let errors = Arc::new(Mutex::new(Vec::<String>::new()));
        inf.set_watch_error_handler({
            let errors = Arc::clone(&errors);
            move |e: &ReflectorError| errors.lock().push(e.to_string())
        })
        .unwrap();
        let reg = inf
            .add_event_handler_with_options(Recorder::default(), kind.handler())
            .unwrap();
        let run = start(&inf);
        reg.wait_synced().await;
        assert_eq!(
            errors.lock().len(),
            1,
            "the failed first attempt was reported"
        );
        let a = inf.get_indexer().get_by_key("ns/a").unwrap();
        assert_eq!(a.data.as_ref().unwrap()["seen"], "yes");
        assert!(matches!(
            inf.set_watch_error_handler(|_| {}),
            Err(InformerError::AlreadyStarted)
        ));
        assert!(matches!(
            inf.run(CancellationToken::new()).await,
            Err(InformerError::AlreadyStarted)
        ));
        run.stop().await;
    })
    .await;
}

// ---------------------------------------------------------------- real threads

/// A handler that blocks inside `on_add` until released (it occupies a worker thread, so
/// this test uses the multi-thread runtime and real time, bounded by timeouts).
struct Gated {
    gate: Arc<(std::sync::Mutex<bool>, std::sync::Condvar)>,
}

impl ResourceEventHandler<ConfigMap> for Gated {
    fn on_add(&self, _: &Arc<ConfigMap>, _: bool) {
        let (lock, cv) = &*self.gate;
        let mut open = lock.lock().unwrap();
        while !*open {
            open = cv.wait(open).unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn a_slow_handler_delays_neither_the_others_nor_its_own_sync_tracking() {
    for_each_mode(|kind| async move {
        let bound = Duration::from_secs(20);
        let lw = FakeListerWatcher::new();
        lw.add(cm("a")).unwrap();
        let inf = informer(&lw, kind, Duration::ZERO);
        let gate = Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new()));
        let slow_reg = inf
            .add_event_handler(Gated {
                gate: Arc::clone(&gate),
            })
            .unwrap();
        let fast = Arc::new(Recorder::default());
        let fast_reg = inf
            .add_event_handler_with_options(Arc::clone(&fast), kind.handler())
            .unwrap();
        let run = start(&inf);
        tokio::time::timeout(bound, fast_reg.wait_synced())
            .await
            .unwrap();
        tokio::time::timeout(bound, inf.wait_synced())
            .await
            .unwrap();
        assert!(
            !slow_reg.has_synced(),
            "the slow handler has not returned yet"
        );
        for i in 0..100 {
            lw.add(cm(&format!("b{i}"))).unwrap();
        }
        tokio::time::timeout(bound, async {
            while fast.events().len() < 101 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
        .await
        .unwrap();
        assert!(
            slow_reg.pending() >= 100,
            "the slow handler's buffer grew instead"
        );
        assert!(!slow_reg.has_synced());
        {
            let (lock, cv) = &*gate;
            *lock.lock().unwrap() = true;
            cv.notify_all();
        }
        tokio::time::timeout(bound, slow_reg.wait_synced())
            .await
            .unwrap();
        run.stop().await;
    })
    .await;
}

#[test]
fn the_public_handles_are_send_and_sync() {
    fn check<T: Send + Sync + 'static>() {}
    check::<SharedIndexInformer<ConfigMap>>();
    check::<kinformer::cache::ReadOnlyIndexer<ConfigMap>>();
    check::<kinformer::cache::SharedInformerFactory<()>>();
    check::<kinformer::cache::SharedInformerFactory<kinformer::kube::KubeClient>>();
    check::<InformerOptions<ConfigMap>>();
}

#[tokio::test(start_paused = true)]
async fn a_stream_gets_what_a_handler_gets_and_a_full_stream_holds_back_nobody() {
    use futures::StreamExt;
    use kinformer::cache::Notification;

    for_each_mode(|kind| async move {
        let lw = FakeListerWatcher::new();
        lw.add(cm("a")).unwrap();
        let inf = informer(&lw, kind, Duration::ZERO);
        let rec = Arc::new(Recorder::default());
        let reg = inf
            .add_event_handler_with_options(Arc::clone(&rec), kind.handler())
            .unwrap();
        let mut stream = inf.event_stream(1).unwrap();
        let run = start(&inf);
        reg.wait_synced().await;
        for i in 0..20 {
            lw.add(cm(&format!("x{i:02}"))).unwrap();
        }
        // Nobody reads the stream and its one slot is full, yet the handler and the cache get
        // everything: only the stream's own listener waits.
        eventually("the handler saw every add", || rec.count("add") == 21).await;
        assert_eq!(inf.get_indexer().len(), 21);
        let handler_order: Vec<String> = rec
            .events()
            .iter()
            .filter_map(|e| e.split(' ').nth(1).map(str::to_owned))
            .collect();
        let mut streamed = Vec::new();
        while streamed.len() < handler_order.len() {
            match stream.next().await {
                Some(Notification::Add { obj, .. }) => streamed.push(key(&obj)),
                other => panic!("expected an add, got {other:?}"),
            }
        }
        assert_eq!(
            streamed, handler_order,
            "the same notifications in the same order"
        );
        assert!(stream.has_synced());

        // A stream opened on a running informer first gets the cache, marked initial.
        let mut late = inf.event_stream(32).unwrap(); // room for all 21: its sync needs them in
        match late.next().await {
            Some(Notification::Add {
                is_in_initial_list, ..
            }) => assert!(is_in_initial_list),
            other => panic!("expected an initial add, got {other:?}"),
        }
        late.wait_synced().await;
        drop(late);
        drop(stream);
        run.stop().await;
    })
    .await;
}

/// Records, per added object, the id of the task that called the handler.
#[derive(Default)]
struct TaskIds(Mutex<HashMap<String, Option<tokio::task::Id>>>);

impl ResourceEventHandler<ConfigMap> for TaskIds {
    fn on_add(&self, obj: &Arc<ConfigMap>, _: bool) {
        self.0.lock().insert(key(obj), tokio::task::try_id());
    }
}

/// Once synced, a live event reaches the non-blocking handlers on one task (the watch's,
/// which delivered in their place), while each ordinary handler is called on its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_events_reach_nonblocking_handlers_on_the_watch_task_and_others_on_their_own() {
    let lw = FakeListerWatcher::new();
    let inf = informer(&lw, Mode::DEFAULT, Duration::ZERO);
    let handlers: Vec<Arc<TaskIds>> = (0..4).map(|_| Arc::default()).collect();
    let mut regs = Vec::new();
    for (i, h) in handlers.iter().enumerate() {
        // A budget no call overruns, even preempted on a loaded machine (the default's
        // 0.5 ms could move a handler to its task for the rest of the test).
        let options = HandlerOptions::new()
            .nonblocking(i < 2)
            .call_budget(Duration::from_secs(10));
        regs.push(
            inf.add_event_handler_with_options(Arc::clone(h), options)
                .unwrap(),
        );
    }
    let run = start(&inf);
    for reg in &regs {
        tokio::time::timeout(Duration::from_secs(20), reg.wait_synced())
            .await
            .unwrap();
    }
    // Spaced out, so each finds the handlers idle; the first may still meet the process
    // loop handing over.
    let mut shared_task = 0;
    for i in 0..20 {
        let k = format!("ns/live-{i}");
        lw.add(cm(&format!("live-{i}"))).unwrap();
        eventually("all four handlers saw it", || {
            handlers.iter().all(|h| h.0.lock().contains_key(&k))
        })
        .await;
        let ids: Vec<_> = handlers.iter().map(|h| h.0.lock()[&k]).collect();
        assert!(ids.iter().all(Option::is_some), "called on tasks: {ids:?}");
        assert_ne!(ids[2], ids[3], "ordinary handlers run on their own tasks");
        for nonblocking in &ids[..2] {
            assert!(
                *nonblocking != ids[2] && *nonblocking != ids[3],
                "never on an ordinary handler's task"
            );
        }
        if ids[0] == ids[1] {
            shared_task += 1;
        }
    }
    assert!(
        shared_task >= 10,
        "the non-blocking handlers were called on one task for {shared_task} of 20 events"
    );
    run.stop().await;
}

/// A non-blocking handler that turns out slow is moved to its own task: when it then blocks,
/// the watch, the cache and the other handlers go on, and it gets everything in order once it
/// is released.
#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn a_nonblocking_handler_that_turns_slow_holds_up_nobody_once_moved_to_its_task() {
    let lw = FakeListerWatcher::new();
    let inf = informer(&lw, Mode::DEFAULT, Duration::ZERO);
    let gate = Arc::new((std::sync::Mutex::new(true), std::sync::Condvar::new()));
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let slow = {
        let (gate, seen) = (Arc::clone(&gate), Arc::clone(&seen));
        kinformer::cache::ResourceEventHandlerFuncs::new().on_add(move |obj: &Arc<ConfigMap>, _| {
            let name = obj.metadata.name.clone().unwrap_or_default();
            if name == "slow" {
                // The behaviour under test: one call far over the budget.
                std::thread::sleep(Duration::from_millis(20));
            }
            let (lock, cv) = &*gate;
            let mut open = lock.lock().unwrap();
            while !*open {
                open = cv.wait(open).unwrap();
            }
            seen.lock().push(name);
        })
    };
    let slow_reg = inf
        .add_event_handler_with_options(slow, HandlerOptions::new().nonblocking(true))
        .unwrap();
    let fast = Arc::new(Recorder::default());
    inf.add_event_handler_with_options(Arc::clone(&fast), HandlerOptions::new().nonblocking(true))
        .unwrap();
    let run = start(&inf);
    let bound = Duration::from_secs(20);
    tokio::time::timeout(bound, slow_reg.wait_synced())
        .await
        .unwrap();
    lw.add(cm("slow")).unwrap();
    eventually("the slow call returned", || seen.lock().len() == 1).await;
    // Closed: the handler now blocks on every call.
    *gate.0.lock().unwrap() = false;
    for i in 0..50 {
        lw.add(cm(&format!("after-{i:02}"))).unwrap();
    }
    eventually("the other handler and the cache got everything", || {
        fast.count("add ns/after-") == 50 && inf.get_indexer().len() == 51
    })
    .await;
    assert_eq!(seen.lock().len(), 1, "the slow handler is still blocked");
    {
        let (lock, cv) = &*gate;
        *lock.lock().unwrap() = true;
        cv.notify_all();
    }
    eventually("the slow handler caught up", || seen.lock().len() == 51).await;
    let expected: Vec<String> = std::iter::once("slow".to_owned())
        .chain((0..50).map(|i| format!("after-{i:02}")))
        .collect();
    assert_eq!(*seen.lock(), expected, "in order");
    run.stop().await;
}
