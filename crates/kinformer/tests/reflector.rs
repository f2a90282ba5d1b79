//! Reflector behaviour against the in-memory FakeListerWatcher, on tokio's paused clock.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kinformer::cache::CacheError;
use kinformer::cache::fifo::ReflectorSink;
use kinformer::cache::listwatch::StatusCause;
use kinformer::cache::listwatch::{
    ApiStatus, Bookmark, DecodeError, ListOptions, ListWatchError, ListerWatcher, ObjectList,
    WatchEvent, WatchOptions, WatchStream,
};
use kinformer::cache::reflector::{Reflector, ReflectorError, ReflectorOptions};
use kinformer::cache::testing::{FakeListerWatcher, WatchStep};
use kinformer::wait::BackoffManager;
use kube_core::ObjectMeta;
use parking_lot::Mutex;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

// ---------------------------------------------------------------- helpers

fn cm(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ns".into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn cm_at(name: &str, rv: &str) -> Arc<ConfigMap> {
    let mut c = cm(name);
    c.metadata.resource_version = Some(rv.into());
    Arc::new(c)
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Op {
    Add(String),
    Update(String),
    Delete(String),
    Replace(Vec<String>, String),
    Resync,
    Bookmark(String),
    Page(Vec<String>),
    SizeHint(usize),
    FinishPaged(String),
}

#[derive(Debug, Default)]
struct Recorder {
    ops: Mutex<Vec<Op>>,
    /// Takes lists page by page (as the delta queues take their first one).
    paged: bool,
}

fn name(o: &ConfigMap) -> String {
    o.metadata.name.clone().unwrap_or_default()
}

impl ReflectorSink<ConfigMap> for Recorder {
    fn add(&self, obj: Arc<ConfigMap>) -> Result<(), CacheError> {
        self.ops.lock().push(Op::Add(name(&obj)));
        Ok(())
    }
    fn update(&self, obj: Arc<ConfigMap>) -> Result<(), CacheError> {
        self.ops.lock().push(Op::Update(name(&obj)));
        Ok(())
    }
    fn delete(&self, obj: Arc<ConfigMap>) -> Result<(), CacheError> {
        self.ops.lock().push(Op::Delete(name(&obj)));
        Ok(())
    }
    fn replace(&self, objs: Vec<Arc<ConfigMap>>, rv: &str) -> Result<(), CacheError> {
        self.ops.lock().push(Op::Replace(
            objs.iter().map(|o| name(o)).collect(),
            rv.to_owned(),
        ));
        Ok(())
    }
    fn resync(&self) -> Result<(), CacheError> {
        self.ops.lock().push(Op::Resync);
        Ok(())
    }
    fn bookmark(&self, rv: &str) -> Result<(), CacheError> {
        self.ops.lock().push(Op::Bookmark(rv.to_owned()));
        Ok(())
    }
    fn begin_paged_replace(&self) -> bool {
        self.paged
    }
    fn replace_page(&self, objs: Vec<Arc<ConfigMap>>) -> Result<(), CacheError> {
        let names = objs.iter().map(|o| name(o)).collect();
        self.ops.lock().push(Op::Page(names));
        Ok(())
    }
    fn list_size_hint(&self, objects: usize) {
        self.ops.lock().push(Op::SizeHint(objects));
    }
    fn finish_paged_replace(&self, rv: &str) -> Result<(), CacheError> {
        self.ops.lock().push(Op::FinishPaged(rv.to_owned()));
        Ok(())
    }
}

impl Recorder {
    /// A recorder that takes lists page by page.
    fn paged() -> Self {
        Self {
            paged: true,
            ..Self::default()
        }
    }
    fn ops(&self) -> Vec<Op> {
        self.ops.lock().clone()
    }
    fn count(&self, f: impl Fn(&Op) -> bool) -> usize {
        self.ops.lock().iter().filter(|o| f(o)).count()
    }
}

/// A deterministic backoff: 1 s, 2 s, 3 s, ... and records each call's time.
#[derive(Debug, Default)]
struct Steps {
    calls: Arc<Mutex<Vec<Instant>>>,
}

impl BackoffManager for Steps {
    fn backoff(&mut self) -> Duration {
        let mut calls = self.calls.lock();
        calls.push(Instant::now());
        Duration::from_secs(calls.len() as u64)
    }
}

/// Records the time of every call of the wrapped ListerWatcher.
#[derive(Debug, Clone)]
struct Timed<L> {
    inner: L,
    lists: Arc<Mutex<Vec<Instant>>>,
    watches: Arc<Mutex<Vec<Instant>>>,
}

impl<L> Timed<L> {
    fn new(inner: L) -> Self {
        Self {
            inner,
            lists: Arc::default(),
            watches: Arc::default(),
        }
    }
}

impl<L: ListerWatcher<ConfigMap>> ListerWatcher<ConfigMap> for Timed<L> {
    fn list(
        &self,
        options: &ListOptions,
    ) -> impl Future<Output = Result<ObjectList<ConfigMap>, ListWatchError>> + Send {
        self.lists.lock().push(Instant::now());
        self.inner.list(options)
    }
    fn watch(
        &self,
        options: &WatchOptions,
    ) -> impl Future<Output = Result<WatchStream<ConfigMap>, ListWatchError>> + Send {
        self.watches.lock().push(Instant::now());
        self.inner.watch(options)
    }
}

fn list_watch_options() -> ReflectorOptions {
    ReflectorOptions {
        use_watch_list: false,
        ..ReflectorOptions::default()
    }
}

struct Running<L> {
    reflector: Arc<Reflector<ConfigMap, L>>,
    sink: Arc<Recorder>,
    errors: Arc<Mutex<Vec<String>>>,
    cancel: CancellationToken,
    task: JoinHandle<Result<(), ReflectorError>>,
}

fn start<L: ListerWatcher<ConfigMap>>(
    lw: L,
    options: ReflectorOptions,
    backoff: Option<Box<dyn BackoffManager>>,
) -> Running<L> {
    start_with(lw, Recorder::default(), options, backoff)
}

/// [`start`] with the given recorder.
fn start_with<L: ListerWatcher<ConfigMap>>(
    lw: L,
    sink: Recorder,
    options: ReflectorOptions,
    backoff: Option<Box<dyn BackoffManager>>,
) -> Running<L> {
    let sink = Arc::new(sink);
    let errors: Arc<Mutex<Vec<String>>> = Arc::default();
    let mut r = Reflector::new(
        lw,
        sink.clone() as Arc<dyn ReflectorSink<ConfigMap>>,
        options,
    )
    .with_watch_error_handler({
        let errors = errors.clone();
        move |e| errors.lock().push(e.to_string())
    });
    if let Some(b) = backoff {
        r = r.with_backoff_manager(b);
    }
    let reflector = Arc::new(r);
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (r, c) = (reflector.clone(), cancel.clone());
        async move { r.run(c).await }
    });
    Running {
        reflector,
        sink,
        errors,
        cancel,
        task,
    }
}

impl<L> Running<L> {
    async fn stop(self) {
        self.cancel.cancel();
        self.task.await.unwrap().unwrap();
    }
}

/// Polls `f` every 10 ms of (paused) time, for at most ten simulated minutes.
async fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    for _ in 0..60_000 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting for: {what}");
}

fn rvs(calls: &[ListOptions]) -> Vec<(Option<&str>, Option<u32>)> {
    calls
        .iter()
        .map(|c| (c.resource_version.as_deref(), c.limit))
        .collect()
}

// ---------------------------------------------------------------- list resource versions

#[tokio::test(start_paused = true)]
async fn first_list_is_at_zero_and_watch_starts_at_the_list_version() {
    let lw = FakeListerWatcher::new();
    lw.add(cm("a")).unwrap();
    lw.add(cm("b")).unwrap();
    let r = start(lw.clone(), list_watch_options(), None);
    eventually("watch", || lw.watch_calls().len() == 1).await;
    assert_eq!(rvs(&lw.list_calls()), [(Some("0"), Some(500))]);
    let w = &lw.watch_calls()[0];
    assert_eq!(w.resource_version.as_deref(), Some("2"));
    assert!(w.allow_bookmarks && !w.send_initial_events);
    assert_eq!(
        r.sink.ops(),
        [Op::Replace(vec!["a".into(), "b".into()], "2".into())]
    );
    assert_eq!(r.reflector.last_sync_resource_version(), "2");
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn relist_uses_the_last_version_then_empty_after_expired() {
    let lw = FakeListerWatcher::new();
    lw.add(cm("a")).unwrap();
    lw.push_list_ok();
    lw.push_list_error(ApiStatus::expired("too old resource version"));
    let r = start(
        lw.clone(),
        list_watch_options(),
        Some(Box::new(Steps::default())),
    );
    eventually("watch", || lw.watch_calls().len() == 1).await;
    lw.add(cm("b")).unwrap();
    eventually("add", || r.sink.ops().contains(&Op::Add("b".into()))).await;
    // The server ends the watch with 410: relist at the last version, which is expired too,
    // so list again at once from "" (a consistent read).
    lw.send_watch_error(ApiStatus::expired("too old resource version"));
    eventually("second watch", || lw.watch_calls().len() == 2).await;
    assert_eq!(
        rvs(&lw.list_calls()),
        [(Some("0"), Some(500)), (Some("2"), None), (None, None)]
    );
    assert_eq!(lw.watch_calls()[1].resource_version.as_deref(), Some("2"));
    assert!(!r.reflector.is_last_sync_resource_version_unavailable());
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn too_large_resource_version_relists_from_empty_version() {
    let lw = FakeListerWatcher::new();
    lw.add(cm("a")).unwrap();
    lw.push_list_error(ApiStatus::too_large_resource_version("0", "1"));
    let r = start(lw.clone(), list_watch_options(), None);
    eventually("watch", || lw.watch_calls().len() == 1).await;
    assert_eq!(
        rvs(&lw.list_calls()),
        [(Some("0"), Some(500)), (None, Some(500))]
    );
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn old_servers_too_large_timeout_message_also_relists_from_empty_version() {
    let lw = FakeListerWatcher::new();
    let mut status = ApiStatus::new(504, "Timeout", "Timeout: Too large resource version: 5");
    status.causes.push(StatusCause::default());
    lw.push_list_error(status);
    let r = start(lw.clone(), list_watch_options(), None);
    eventually("watch", || lw.watch_calls().len() == 1).await;
    assert_eq!(lw.list_calls()[1].resource_version, None);
    r.stop().await;
}

// ---------------------------------------------------------------- paging

#[tokio::test(start_paused = true)]
async fn pages_of_500_and_paging_kept_after_a_paginated_zero_list() {
    let lw = FakeListerWatcher::new();
    for i in 0..1200 {
        lw.add(cm(&format!("cm-{i:04}"))).unwrap();
    }
    let r = start(
        lw.clone(),
        list_watch_options(),
        Some(Box::new(Steps::default())),
    );
    eventually("watch", || lw.watch_calls().len() == 1).await;
    let calls = lw.list_calls();
    assert_eq!(calls.len(), 3);
    assert_eq!(rvs(&calls)[0], (Some("0"), Some(500)));
    // Later pages carry the token and no version.
    assert!(calls[1].continue_token.is_some() && calls[1].resource_version.is_none());
    assert!(calls[2].continue_token.is_some() && calls[2].resource_version.is_none());
    match &r.sink.ops()[0] {
        Op::Replace(names, rv) => {
            assert_eq!(names.len(), 1200);
            assert_eq!(rv, "1200");
        }
        other => panic!("expected replace, got {other:?}"),
    }
    // Relist at a specific version: still pages of 500, since the server pages.
    lw.push_watch_script(vec![]);
    lw.close_watches();
    eventually("relist", || lw.list_calls().len() == 6).await;
    assert_eq!(rvs(&lw.list_calls())[3], (Some("1200"), Some(500)));
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn relist_at_a_specific_version_is_unpaginated_when_the_server_did_not_page() {
    let lw = FakeListerWatcher::new();
    lw.add(cm("a")).unwrap();
    lw.push_watch_script(vec![]); // closes at once: a very short watch, relist
    let r = start(
        lw.clone(),
        list_watch_options(),
        Some(Box::new(Steps::default())),
    );
    eventually("relist", || lw.list_calls().len() == 2).await;
    assert_eq!(
        rvs(&lw.list_calls()),
        [(Some("0"), Some(500)), (Some("1"), None)]
    );
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn explicit_page_size_wins() {
    let lw = FakeListerWatcher::new();
    for i in 0..5 {
        lw.add(cm(&format!("cm-{i}"))).unwrap();
    }
    let options = ReflectorOptions {
        page_size: Some(2),
        ..list_watch_options()
    };
    let r = start(lw.clone(), options, None);
    eventually("watch", || lw.watch_calls().len() == 1).await;
    let limits: Vec<_> = lw.list_calls().iter().map(|c| c.limit).collect();
    assert_eq!(limits, [Some(2), Some(2), Some(2)]);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_paged_list_tells_the_sink_its_size_once_from_the_first_page() {
    let lw = FakeListerWatcher::new();
    for i in 0..5 {
        lw.add(cm(&format!("cm-{i}"))).unwrap();
    }
    let paged = Recorder::paged();
    let options = ReflectorOptions {
        page_size: Some(2),
        ..list_watch_options()
    };
    let r = start_with(lw.clone(), paged, options, None);
    eventually("watch", || lw.watch_calls().len() == 1).await;
    let ops = r.sink.ops();
    // 2 items on the first page and 3 remaining: one hint of 5, before any page is handed
    // over (the first page waits while the second is fetched).
    assert_eq!(
        ops.iter().filter(|o| matches!(o, Op::SizeHint(_))).count(),
        1,
        "{ops:?}"
    );
    assert_eq!(ops[0], Op::SizeHint(5), "{ops:?}");
    let pages: Vec<usize> = ops
        .iter()
        .filter_map(|o| match o {
            Op::Page(names) => Some(names.len()),
            _ => None,
        })
        .collect();
    assert_eq!(pages, [2, 2, 1]);
    assert!(matches!(ops.last(), Some(Op::FinishPaged(_))), "{ops:?}");
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn expired_continue_token_falls_back_to_one_full_list() {
    let lw = FakeListerWatcher::new();
    for i in 0..5 {
        lw.add(cm(&format!("cm-{i}"))).unwrap();
    }
    lw.push_list_ok();
    lw.push_list_error(ApiStatus::expired("continue token expired"));
    let options = ReflectorOptions {
        page_size: Some(2),
        ..list_watch_options()
    };
    let r = start(lw.clone(), options, None);
    eventually("watch", || lw.watch_calls().len() == 1).await;
    let calls = lw.list_calls();
    assert_eq!(calls.len(), 3);
    assert!(calls[1].continue_token.is_some());
    assert_eq!(calls[2].resource_version.as_deref(), Some("0"));
    assert_eq!(calls[2].limit, None);
    assert_eq!(calls[2].continue_token, None);
    match &r.sink.ops()[0] {
        Op::Replace(names, _) => assert_eq!(names.len(), 5),
        other => panic!("expected replace, got {other:?}"),
    }
    r.stop().await;
}

// ---------------------------------------------------------------- backoff

#[tokio::test(start_paused = true)]
async fn backoff_between_failed_lists_follows_the_manager_exactly() {
    let lw = Timed::new(FakeListerWatcher::<ConfigMap>::new());
    for _ in 0..4 {
        lw.inner.push_list_error(ApiStatus::internal_error("boom"));
    }
    let steps = Steps::default();
    let backoff_calls = steps.calls.clone();
    let r = start(lw.clone(), list_watch_options(), Some(Box::new(steps)));
    eventually("watch", || lw.watches.lock().len() == 1).await;
    let lists = lw.lists.lock().clone();
    assert_eq!(lists.len(), 5);
    let gaps: Vec<_> = lists.windows(2).map(|w| w[1] - w[0]).collect();
    let s = Duration::from_secs;
    assert_eq!(gaps, [s(1), s(2), s(3), s(4)]);
    assert_eq!(backoff_calls.lock().len(), 4);
    assert_eq!(r.errors.lock().len(), 4);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn default_backoff_grows_from_800ms_to_30s_with_jitter() {
    let lw = Timed::new(FakeListerWatcher::<ConfigMap>::new());
    for _ in 0..9 {
        lw.inner.push_list_error(ApiStatus::internal_error("boom"));
    }
    let r = start(lw.clone(), list_watch_options(), None);
    eventually("watch", || lw.watches.lock().len() == 1).await;
    let lists = lw.lists.lock().clone();
    let gaps: Vec<_> = lists
        .windows(2)
        .map(|w| (w[1] - w[0]).as_secs_f64())
        .collect();
    let mut base = 0.8_f64;
    for g in gaps {
        assert!(
            g >= base - 0.002 && g <= 2.0 * base + 0.002,
            "gap {g} for base {base}"
        );
        base = (base * 2.0).min(30.0);
    }
    r.stop().await;
}

// ---------------------------------------------------------------- watch

#[tokio::test(start_paused = true)]
async fn watch_timeouts_are_uniform_in_five_to_ten_minutes() {
    let lw = FakeListerWatcher::new();
    lw.add(cm("a")).unwrap();
    let r = start(lw.clone(), list_watch_options(), None);
    for n in 1..=20 {
        eventually("watch", || lw.watch_calls().len() == n).await;
        lw.add(cm(&format!("x{n}"))).unwrap();
        eventually("add", || r.sink.count(|o| matches!(o, Op::Add(_))) == n).await;
        lw.close_watches();
    }
    let timeouts: Vec<u64> = lw
        .watch_calls()
        .iter()
        .map(|w| w.timeout.unwrap().as_secs())
        .collect();
    assert!(
        timeouts.iter().all(|t| (300..600).contains(t)),
        "{timeouts:?}"
    );
    let distinct: std::collections::BTreeSet<_> = timeouts.iter().collect();
    assert!(distinct.len() > 1, "timeouts are randomised: {timeouts:?}");
    // Clean closes re-watch from the last version without a relist.
    assert_eq!(lw.list_calls().len(), 1);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn server_watch_timeout_rewatches_without_relist() {
    let lw = Timed::new(FakeListerWatcher::new());
    lw.inner.add(cm("a")).unwrap();
    let r = start(lw.clone(), list_watch_options(), None);
    // Two timeouts of at most ten minutes each.
    tokio::time::sleep(Duration::from_secs(21 * 60)).await;
    let calls = lw.inner.watch_calls();
    let at = lw.watches.lock().clone();
    assert!(calls.len() >= 3, "{calls:?}");
    for i in 0..2 {
        // The fake ends each watch after its timeout; the re-watch follows at once.
        assert_eq!(at[i + 1] - at[i], calls[i].timeout.unwrap());
        assert_eq!(calls[i + 1].resource_version.as_deref(), Some("1"));
    }
    assert_eq!(lw.inner.list_calls().len(), 1);
    assert!(r.errors.lock().is_empty(), "{:?}", r.errors.lock());
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn clean_close_rewatches_from_the_last_event_version() {
    let lw = FakeListerWatcher::new();
    lw.add(cm("a")).unwrap();
    let r = start(lw.clone(), list_watch_options(), None);
    eventually("watch", || lw.watch_calls().len() == 1).await;
    lw.add(cm("b")).unwrap();
    lw.update(cm("b")).unwrap();
    lw.delete("ns/a");
    eventually("delete", || r.sink.ops().contains(&Op::Delete("a".into()))).await;
    assert_eq!(r.reflector.last_sync_resource_version(), "4");
    lw.close_watches();
    eventually("re-watch", || lw.watch_calls().len() == 2).await;
    assert_eq!(lw.watch_calls()[1].resource_version.as_deref(), Some("4"));
    assert_eq!(lw.list_calls().len(), 1);
    assert_eq!(
        r.sink.ops()[1..],
        [
            Op::Add("b".into()),
            Op::Update("b".into()),
            Op::Delete("a".into())
        ]
    );
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn very_short_watch_relists_after_backoff() {
    let lw = Timed::new(FakeListerWatcher::<ConfigMap>::new());
    lw.inner.push_watch_script(vec![]);
    let r = start(
        lw.clone(),
        list_watch_options(),
        Some(Box::new(Steps::default())),
    );
    eventually("relist", || lw.lists.lock().len() == 2).await;
    let lists = lw.lists.lock().clone();
    assert_eq!(lists[1] - lists[0], Duration::from_secs(1));
    assert!(r.errors.lock()[0].contains("very short watch"));
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn too_many_requests_backs_off_honouring_retry_after_and_rewatches_without_relist() {
    let lw = Timed::new(FakeListerWatcher::<ConfigMap>::new());
    lw.inner.add(cm("a")).unwrap();
    lw.inner
        .push_watch_error(ApiStatus::too_many_requests(Some(Duration::from_secs(7))));
    lw.inner
        .push_watch_error(ListWatchError::connection_refused("connection refused"));
    let r = start(
        lw.clone(),
        list_watch_options(),
        Some(Box::new(Steps::default())),
    );
    eventually("third watch", || lw.watches.lock().len() == 3).await;
    let w = lw.watches.lock().clone();
    // Retry-After 7 s beats the 1 s step; then connection refused waits the 2 s step.
    assert_eq!(w[1] - w[0], Duration::from_secs(7));
    assert_eq!(w[2] - w[1], Duration::from_secs(2));
    assert_eq!(lw.inner.list_calls().len(), 1);
    assert!(
        lw.inner
            .watch_calls()
            .iter()
            .all(|c| c.resource_version.as_deref() == Some("1"))
    );
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn other_watch_start_errors_relist() {
    let lw = FakeListerWatcher::new();
    lw.add(cm("a")).unwrap();
    lw.push_watch_error(ApiStatus::internal_error("boom"));
    let r = start(
        lw.clone(),
        list_watch_options(),
        Some(Box::new(Steps::default())),
    );
    eventually("second watch", || lw.watch_calls().len() == 2).await;
    assert_eq!(
        rvs(&lw.list_calls()),
        [(Some("0"), Some(500)), (Some("1"), None)]
    );
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn compacted_watch_gets_410_and_relists_at_the_last_version() {
    let lw = FakeListerWatcher::new();
    lw.add(cm("a")).unwrap();
    // The first watch is scripted to last (no events) so that the change log can be reset
    // while the reflector is not watching; then the live watch from "1" gets 410.
    lw.push_watch_script(vec![WatchStep::Sleep(Duration::from_secs(2))]);
    let r = start(
        lw.clone(),
        list_watch_options(),
        Some(Box::new(Steps::default())),
    );
    eventually("watch", || lw.watch_calls().len() == 1).await;
    lw.add(cm("b")).unwrap();
    lw.reset_change_log();
    eventually("relist", || lw.list_calls().len() == 2).await;
    assert_eq!(lw.list_calls()[1].resource_version.as_deref(), Some("1"));
    eventually("watch from 2", || {
        lw.watch_calls()
            .last()
            .is_some_and(|w| w.resource_version.as_deref() == Some("2"))
    })
    .await;
    assert!(r.errors.lock().iter().any(|e| e.contains("410")));
    assert_eq!(
        r.sink.ops().last(),
        Some(&Op::Replace(vec!["a".into(), "b".into()], "2".into()))
    );
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn bookmarks_advance_the_resource_version() {
    let lw = FakeListerWatcher::new();
    lw.add(cm("a")).unwrap();
    lw.push_watch_script(vec![
        WatchStep::Event(WatchEvent::Bookmark(Bookmark::new("42"))),
        WatchStep::Pending,
    ]);
    let r = start(lw.clone(), list_watch_options(), None);
    eventually("bookmark", || {
        r.reflector.last_sync_resource_version() == "42"
    })
    .await;
    assert_eq!(r.sink.ops().last(), Some(&Op::Bookmark("42".into())));
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn live_bookmarks_reach_the_sink() {
    let lw = FakeListerWatcher::new();
    lw.add(cm("a")).unwrap();
    let r = start(lw.clone(), list_watch_options(), None);
    eventually("watch", || lw.watch_calls().len() == 1).await;
    lw.send_bookmark();
    eventually("bookmark", || {
        r.sink.ops().contains(&Op::Bookmark("1".into()))
    })
    .await;
    r.stop().await;
}

// ---------------------------------------------------------------- resync

#[tokio::test(start_paused = true)]
async fn resync_runs_every_period_during_the_watch() {
    let lw = FakeListerWatcher::new();
    lw.add(cm("a")).unwrap();
    let options = ReflectorOptions {
        resync_period: Duration::from_secs(30),
        ..list_watch_options()
    };
    let r = start(lw.clone(), options, None);
    eventually("watch", || lw.watch_calls().len() == 1).await;
    let t0 = Instant::now();
    tokio::time::sleep(Duration::from_secs(100)).await;
    assert_eq!(r.sink.count(|o| *o == Op::Resync), 3);
    assert!(t0.elapsed() >= Duration::from_secs(100));
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn zero_resync_period_never_resyncs_and_should_resync_can_veto() {
    let lw = FakeListerWatcher::new();
    lw.add(cm("a")).unwrap();
    let r = start(lw.clone(), list_watch_options(), None);
    tokio::time::sleep(Duration::from_secs(100)).await;
    assert_eq!(r.sink.count(|o| *o == Op::Resync), 0);
    r.stop().await;

    let sink = Arc::new(Recorder::default());
    let reflector = Reflector::new(
        lw.clone(),
        sink.clone() as Arc<dyn ReflectorSink<ConfigMap>>,
        ReflectorOptions {
            resync_period: Duration::from_secs(10),
            ..list_watch_options()
        },
    )
    .with_should_resync(|| false);
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let c = cancel.clone();
        async move { reflector.run(c).await }
    });
    tokio::time::sleep(Duration::from_secs(100)).await;
    assert_eq!(sink.count(|o| *o == Op::Resync), 0);
    cancel.cancel();
    task.await.unwrap().unwrap();
}

// ---------------------------------------------------------------- watch-list

#[tokio::test(start_paused = true)]
async fn watch_list_streams_the_initial_state_then_keeps_watching() {
    let lw = FakeListerWatcher::new();
    lw.add(cm("a")).unwrap();
    lw.add(cm("b")).unwrap();
    let r = start(lw.clone(), ReflectorOptions::default(), None);
    eventually("replace", || !r.sink.ops().is_empty()).await;
    assert_eq!(
        r.sink.ops()[0],
        Op::Replace(vec!["a".into(), "b".into()], "2".into())
    );
    lw.add(cm("c")).unwrap();
    eventually("add", || r.sink.ops().contains(&Op::Add("c".into()))).await;
    assert!(lw.list_calls().is_empty());
    let calls = lw.watch_calls();
    assert_eq!(calls.len(), 1);
    assert!(calls[0].send_initial_events && calls[0].allow_bookmarks);
    assert_eq!(calls[0].resource_version, None);
    assert_eq!(
        calls[0].resource_version_match,
        Some(kinformer::cache::listwatch::ResourceVersionMatch::NotOlderThan)
    );
    assert_eq!(r.reflector.last_sync_resource_version(), "3");
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn watch_list_initial_events_do_not_move_the_version_before_the_end_bookmark() {
    let lw = FakeListerWatcher::new();
    lw.push_watch_script(vec![
        WatchStep::Event(WatchEvent::Added(cm_at("a", "5"))),
        WatchStep::Event(WatchEvent::Added(cm_at("b", "6"))),
        WatchStep::Event(WatchEvent::Deleted(cm_at("a", "7"))),
        WatchStep::Event(WatchEvent::Bookmark(Bookmark::new("7"))),
        WatchStep::Sleep(Duration::from_secs(5)),
        WatchStep::Event(WatchEvent::Bookmark(Bookmark::initial_events_end("8"))),
        WatchStep::Pending,
    ]);
    let r = start(lw.clone(), ReflectorOptions::default(), None);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(r.reflector.last_sync_resource_version(), "");
    assert!(r.sink.ops().is_empty());
    eventually("replace", || !r.sink.ops().is_empty()).await;
    assert_eq!(r.sink.ops(), [Op::Replace(vec!["b".into()], "8".into())]);
    assert_eq!(r.reflector.last_sync_resource_version(), "8");
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn watch_list_hands_its_initial_state_to_a_paged_sink_page_by_page() {
    let lw = FakeListerWatcher::new();
    for i in 0..1_200 {
        lw.add(cm(&format!("cm-{i:04}"))).unwrap();
    }
    let paged = Recorder::paged();
    let r = start_with(lw.clone(), paged, ReflectorOptions::default(), None);
    eventually("finish", || {
        r.sink.count(|o| matches!(o, Op::FinishPaged(_))) == 1
    })
    .await;
    let ops = r.sink.ops();
    let pages: Vec<usize> = ops
        .iter()
        .filter_map(|o| match o {
            Op::Page(names) => Some(names.len()),
            _ => None,
        })
        .collect();
    assert_eq!(pages, [500, 500, 200], "{ops:?}");
    // In arrival order, each object once.
    let names: Vec<String> = ops
        .iter()
        .filter_map(|o| match o {
            Op::Page(names) => Some(names.clone()),
            _ => None,
        })
        .flatten()
        .collect();
    let expected: Vec<String> = (0..1_200).map(|i| format!("cm-{i:04}")).collect();
    assert_eq!(names, expected);
    assert_eq!(ops.last(), Some(&Op::FinishPaged("1200".into())));
    assert!(!ops.iter().any(|o| matches!(o, Op::Replace(..))), "{ops:?}");
    assert!(lw.list_calls().is_empty());
    assert_eq!(r.reflector.last_sync_resource_version(), "1200");
    // It goes on as a watch.
    lw.add(cm("late")).unwrap();
    eventually("add", || r.sink.ops().contains(&Op::Add("late".into()))).await;
    assert_eq!(lw.watch_calls().len(), 1);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_deleted_initial_event_makes_a_paged_sink_list_instead() {
    let lw = FakeListerWatcher::new();
    lw.add(cm("b")).unwrap();
    lw.push_watch_script(vec![
        WatchStep::Event(WatchEvent::Added(cm_at("a", "5"))),
        WatchStep::Event(WatchEvent::Added(cm_at("b", "6"))),
        WatchStep::Event(WatchEvent::Deleted(cm_at("a", "7"))),
        WatchStep::Event(WatchEvent::Bookmark(Bookmark::initial_events_end("8"))),
        WatchStep::Pending,
    ]);
    let paged = Recorder::paged();
    let r = start_with(lw.clone(), paged, ReflectorOptions::default(), None);
    eventually("the fallback list", || {
        r.sink.count(|o| matches!(o, Op::FinishPaged(_))) == 1
    })
    .await;
    assert_eq!(lw.list_calls().len(), 1);
    // Only the list's page went over: nothing of the abandoned initial state.
    assert_eq!(
        r.sink.ops(),
        [Op::Page(vec!["b".into()]), Op::FinishPaged("1".into())]
    );
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn watch_list_rejected_falls_back_to_list_and_watch() {
    let lw = FakeListerWatcher::new();
    lw.add(cm("a")).unwrap();
    lw.push_watch_error(ApiStatus::new(
        422,
        "Invalid",
        "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
    ));
    let r = start(lw.clone(), ReflectorOptions::default(), None);
    eventually("plain watch", || lw.watch_calls().len() == 2).await;
    assert_eq!(rvs(&lw.list_calls()), [(Some("0"), Some(500))]);
    let w = &lw.watch_calls()[1];
    assert!(!w.send_initial_events);
    assert_eq!(w.resource_version.as_deref(), Some("1"));
    assert_eq!(r.sink.ops(), [Op::Replace(vec!["a".into()], "1".into())]);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn watch_list_closed_before_the_end_bookmark_falls_back_to_list() {
    let lw = FakeListerWatcher::new();
    lw.add(cm("a")).unwrap();
    lw.push_watch_script(vec![WatchStep::Event(WatchEvent::Added(cm_at("a", "1")))]);
    let r = start(lw.clone(), ReflectorOptions::default(), None);
    eventually("plain watch", || lw.watch_calls().len() == 2).await;
    assert_eq!(lw.list_calls().len(), 1);
    assert!(r.errors.lock()[0].contains("initial-events-end"));
    r.stop().await;
}

// ---------------------------------------------------------------- bad objects

#[tokio::test(start_paused = true)]
async fn undecodable_list_items_and_nameless_events_are_skipped_and_reported() {
    let lw = FakeListerWatcher::new();
    lw.add(cm("a")).unwrap();
    lw.push_list_undecodable(DecodeError::new("expected ConfigMap, got Secret"));
    let r = start(lw.clone(), list_watch_options(), None);
    eventually("watch", || lw.watch_calls().len() == 1).await;
    assert_eq!(r.sink.ops(), [Op::Replace(vec!["a".into()], "1".into())]);
    let errors = r.errors.lock().clone();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("undecodable"));
    r.stop().await;

    let lw = FakeListerWatcher::new();
    lw.push_watch_script(vec![
        WatchStep::Event(WatchEvent::Added(Arc::new(ConfigMap::default()))),
        WatchStep::Event(WatchEvent::Added(cm_at("ok", "3"))),
        WatchStep::Pending,
    ]);
    let r = start(lw.clone(), list_watch_options(), None);
    eventually("add", || r.sink.ops().contains(&Op::Add("ok".into()))).await;
    assert_eq!(r.sink.count(|o| matches!(o, Op::Add(_))), 1);
    assert!(r.errors.lock()[0].contains("without a name"));
    assert_eq!(r.reflector.last_sync_resource_version(), "3");
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn an_undecodable_watch_event_ends_the_watch_and_nothing_after_it_is_skipped() {
    let lw = Timed::new(FakeListerWatcher::<ConfigMap>::new());
    lw.inner.add(cm("a")).unwrap();
    // The first watch garbles the event that created "b" (rv 2), then delivers "c" (rv 3).
    lw.inner.push_watch_script(vec![
        WatchStep::Sleep(Duration::from_secs(5)),
        WatchStep::Error(DecodeError::new("unknown watch event type \"ADDDED\"").into()),
        WatchStep::Event(WatchEvent::Added(cm_at("c", "3"))),
        WatchStep::Pending,
    ]);
    let errors_seen: Arc<Mutex<Vec<bool>>> = Arc::default();
    let sink = Arc::new(Recorder::default());
    let reflector = Arc::new(
        Reflector::new(
            lw.clone(),
            sink.clone() as Arc<dyn ReflectorSink<ConfigMap>>,
            list_watch_options(),
        )
        .with_backoff_manager(Box::new(Steps::default()))
        .with_watch_error_handler({
            let seen = errors_seen.clone();
            move |e| {
                seen.lock()
                    .push(matches!(e, ReflectorError::WatchUndecodable(_)))
            }
        }),
    );
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (r, c) = (reflector.clone(), cancel.clone());
        async move { r.run(c).await }
    });
    eventually("first watch", || lw.watches.lock().len() == 1).await;
    lw.inner.add(cm("b")).unwrap();
    lw.inner.add(cm("c")).unwrap();
    eventually("b", || sink.ops().contains(&Op::Add("b".into()))).await;
    eventually("c", || sink.ops().contains(&Op::Add("c".into()))).await;
    // The watch ended at the bad event: "c" of the first watch was never applied before "b".
    assert_eq!(sink.ops()[1..], [Op::Add("b".into()), Op::Add("c".into())]);
    // Resumed from the last good version after one backoff step, without a relist.
    let w = lw.watches.lock().clone();
    assert_eq!(w.len(), 2);
    assert_eq!(w[1] - w[0], Duration::from_secs(5 + 1));
    assert_eq!(
        lw.inner.watch_calls()[1].resource_version.as_deref(),
        Some("1")
    );
    assert_eq!(lw.lists.lock().len(), 1);
    assert_eq!(
        *errors_seen.lock(),
        [true],
        "a typed error reached the handler"
    );
    cancel.cancel();
    task.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_watch_that_stays_undecodable_at_the_same_version_relists() {
    let lw = Timed::new(FakeListerWatcher::<ConfigMap>::new());
    lw.inner.add(cm("a")).unwrap();
    let garbage = || {
        vec![
            WatchStep::Sleep(Duration::from_secs(2)),
            WatchStep::Error(DecodeError::new("garbage").into()),
            WatchStep::Pending,
        ]
    };
    lw.inner.push_watch_script(garbage());
    lw.inner.push_watch_script(garbage());
    let r = start(
        lw.clone(),
        list_watch_options(),
        Some(Box::new(Steps::default())),
    );
    eventually("relist", || lw.lists.lock().len() == 2).await;
    let relist = lw.lists.lock()[1];
    let before = lw.watches.lock().iter().filter(|t| **t < relist).count();
    assert_eq!(before, 2, "one resumed watch before the relist");
    assert_eq!(
        rvs(&lw.inner.list_calls()),
        [(Some("0"), Some(500)), (Some("1"), None)]
    );
    let errors = r.errors.lock().clone();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(errors.iter().all(|e| e.contains("undecodable event")));
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn an_undecodable_initial_event_of_a_watch_list_falls_back_to_a_list() {
    let lw = FakeListerWatcher::<ConfigMap>::new();
    lw.add(cm("a")).unwrap();
    lw.add(cm("b")).unwrap();
    let end = Bookmark {
        resource_version: "2".into(),
        annotations: [(
            kinformer::cache::listwatch::INITIAL_EVENTS_END_ANNOTATION.to_owned(),
            "true".to_owned(),
        )]
        .into(),
    };
    lw.push_watch_script(vec![
        WatchStep::Event(WatchEvent::Added(cm_at("a", "1"))),
        WatchStep::Error(DecodeError::new("garbage").into()),
        WatchStep::Event(WatchEvent::Bookmark(end)),
        WatchStep::Pending,
    ]);
    let r = start(lw.clone(), ReflectorOptions::default(), None);
    eventually("list", || lw.list_calls().len() == 1).await;
    eventually("replace", || !r.sink.ops().is_empty()).await;
    assert_eq!(
        r.sink.ops(),
        [Op::Replace(vec!["a".into(), "b".into()], "2".into())]
    );
    assert!(r.errors.lock()[0].contains("undecodable event"));
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn internal_watch_errors_rewatch_at_once_within_the_retry_duration_then_relist() {
    let internal = || {
        vec![
            WatchStep::Sleep(Duration::from_secs(3)),
            WatchStep::Event(WatchEvent::Error(ApiStatus::internal_error("etcd hiccup"))),
            WatchStep::Pending,
        ]
    };
    // Default (zero): the first internal error relists after a backoff step.
    let lw = Timed::new(FakeListerWatcher::<ConfigMap>::new());
    lw.inner.add(cm("a")).unwrap();
    lw.inner.push_watch_script(internal());
    let r = start(
        lw.clone(),
        list_watch_options(),
        Some(Box::new(Steps::default())),
    );
    eventually("relist", || lw.lists.lock().len() == 2).await;
    let relist = lw.lists.lock()[1];
    assert_eq!(lw.watches.lock().iter().filter(|t| **t < relist).count(), 1);
    r.stop().await;

    // 10 s: errors at 3, 6, 9 and 12 s re-watch at once (12 − 3 ≤ 10); the one at 15 s relists.
    let lw = Timed::new(FakeListerWatcher::<ConfigMap>::new());
    lw.inner.add(cm("a")).unwrap();
    for _ in 0..5 {
        lw.inner.push_watch_script(internal());
    }
    let options = ReflectorOptions {
        max_internal_error_retry_duration: Duration::from_secs(10),
        ..list_watch_options()
    };
    let r = start(lw.clone(), options, Some(Box::new(Steps::default())));
    eventually("relist", || lw.lists.lock().len() == 2).await;
    let lists = lw.lists.lock().clone();
    let watches: Vec<Instant> = lw
        .watches
        .lock()
        .iter()
        .copied()
        .filter(|t| *t < lists[1])
        .collect();
    assert_eq!(watches.len(), 5, "five watches before the relist");
    for pair in watches.windows(2) {
        assert_eq!(
            pair[1] - pair[0],
            Duration::from_secs(3),
            "re-watched at once"
        );
    }
    assert_eq!(
        lists[1] - watches[4],
        Duration::from_secs(3 + 1),
        "then a backoff step"
    );
    assert!(
        lw.inner
            .watch_calls()
            .iter()
            .all(|c| c.resource_version.as_deref() == Some("1"))
    );
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_huge_retry_after_is_capped_at_the_backoff_ceiling() {
    let lw = Timed::new(FakeListerWatcher::<ConfigMap>::new());
    lw.inner.add(cm("a")).unwrap();
    lw.inner
        .push_watch_error(ApiStatus::too_many_requests(Some(Duration::from_secs(
            100_000,
        ))));
    let r = start(
        lw.clone(),
        list_watch_options(),
        Some(Box::new(Steps::default())),
    );
    eventually("second watch", || lw.watches.lock().len() == 2).await;
    let w = lw.watches.lock().clone();
    assert_eq!(w[1] - w[0], kinformer::cache::reflector::MAX_RETRY_AFTER);
    assert_eq!(
        kinformer::cache::reflector::MAX_RETRY_AFTER,
        Duration::from_secs(30)
    );
    r.stop().await;
}

// ---------------------------------------------------------------- lifecycle

#[tokio::test(start_paused = true)]
async fn cancel_stops_promptly_while_watching_and_while_backing_off() {
    let lw = FakeListerWatcher::new();
    lw.add(cm("a")).unwrap();
    let r = start(lw.clone(), list_watch_options(), None);
    eventually("watch", || lw.watch_calls().len() == 1).await;
    let t0 = Instant::now();
    r.stop().await;
    assert_eq!(Instant::now(), t0);
    assert_eq!(lw.active_watches(), 0, "the watch was dropped");

    struct Hour;
    impl std::fmt::Debug for Hour {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("Hour")
        }
    }
    impl BackoffManager for Hour {
        fn backoff(&mut self) -> Duration {
            Duration::from_secs(3600)
        }
    }
    let lw = FakeListerWatcher::<ConfigMap>::new();
    lw.push_list_error(ApiStatus::internal_error("boom"));
    let r = start(lw.clone(), list_watch_options(), Some(Box::new(Hour)));
    eventually("failed list", || r.errors.lock().len() == 1).await;
    let t0 = Instant::now();
    r.stop().await;
    assert_eq!(Instant::now(), t0);
}

#[tokio::test(start_paused = true)]
async fn a_second_concurrent_run_is_refused() {
    let lw = FakeListerWatcher::new();
    lw.add(cm("a")).unwrap();
    let r = start(lw.clone(), list_watch_options(), None);
    eventually("watch", || lw.watch_calls().len() == 1).await;
    let second = r.reflector.run(CancellationToken::new()).await;
    assert!(matches!(second, Err(ReflectorError::AlreadyRunning)));
    r.stop().await;
}

/// Refuses the first `replace` and every `add`.
#[derive(Debug, Default)]
struct Grumpy {
    replaces: Mutex<u32>,
    deletes: Mutex<u32>,
}

impl ReflectorSink<ConfigMap> for Grumpy {
    fn add(&self, _: Arc<ConfigMap>) -> Result<(), CacheError> {
        Err(CacheError::Closed)
    }
    fn update(&self, _: Arc<ConfigMap>) -> Result<(), CacheError> {
        Ok(())
    }
    fn delete(&self, _: Arc<ConfigMap>) -> Result<(), CacheError> {
        *self.deletes.lock() += 1;
        Ok(())
    }
    fn replace(&self, _: Vec<Arc<ConfigMap>>, _: &str) -> Result<(), CacheError> {
        let mut n = self.replaces.lock();
        *n += 1;
        if *n == 1 {
            Err(CacheError::Closed)
        } else {
            Ok(())
        }
    }
    fn resync(&self) -> Result<(), CacheError> {
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn sink_errors_are_reported_a_refused_replace_relists_and_a_refused_add_does_not_stop_the_watch()
 {
    let lw = FakeListerWatcher::new();
    lw.add(cm("a")).unwrap();
    let sink = Arc::new(Grumpy::default());
    let errors: Arc<Mutex<Vec<String>>> = Arc::default();
    let reflector = Arc::new(
        Reflector::new(
            lw.clone(),
            sink.clone() as Arc<dyn ReflectorSink<ConfigMap>>,
            list_watch_options(),
        )
        .with_backoff_manager(Box::new(Steps::default()))
        .with_watch_error_handler({
            let errors = errors.clone();
            move |e| errors.lock().push(e.to_string())
        }),
    );
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (r, c) = (reflector.clone(), cancel.clone());
        async move { r.run(c).await }
    });
    eventually("watch", || lw.watch_calls().len() == 1).await;
    assert_eq!(
        lw.list_calls().len(),
        2,
        "the refused replace led to a relist"
    );
    assert_eq!(lw.list_calls()[1].resource_version.as_deref(), Some("0"));
    lw.add(cm("b")).unwrap();
    lw.delete("ns/a");
    eventually("delete", || *sink.deletes.lock() == 1).await;
    assert_eq!(reflector.last_sync_resource_version(), "3");
    let errors = errors.lock().clone();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(
        errors[0].contains("replace") && errors[1].contains("add"),
        "{errors:?}"
    );
    cancel.cancel();
    task.await.unwrap().unwrap();
}

/// Mirrors the sink calls into a map key → resource version.
#[derive(Debug, Default)]
struct Mirror(Mutex<std::collections::BTreeMap<String, String>>);

fn key_rv(o: &ConfigMap) -> (String, String) {
    (
        format!("ns/{}", name(o)),
        o.metadata.resource_version.clone().unwrap_or_default(),
    )
}

impl ReflectorSink<ConfigMap> for Mirror {
    fn add(&self, o: Arc<ConfigMap>) -> Result<(), CacheError> {
        let (k, rv) = key_rv(&o);
        self.0.lock().insert(k, rv);
        Ok(())
    }
    fn update(&self, o: Arc<ConfigMap>) -> Result<(), CacheError> {
        self.add(o)
    }
    fn delete(&self, o: Arc<ConfigMap>) -> Result<(), CacheError> {
        self.0.lock().remove(&key_rv(&o).0);
        Ok(())
    }
    fn replace(&self, objs: Vec<Arc<ConfigMap>>, _: &str) -> Result<(), CacheError> {
        let mut m = self.0.lock();
        m.clear();
        m.extend(objs.iter().map(|o| key_rv(o)));
        Ok(())
    }
    fn resync(&self) -> Result<(), CacheError> {
        Ok(())
    }
}

/// Random changes and random faults (clean closes, compactions with 410s, 429s, failing
/// lists, ERROR events, undecodable objects, bookmarks); afterwards the sink must hold exactly
/// the source's objects at their latest versions.
#[tokio::test(start_paused = true)]
async fn converges_to_the_source_under_random_faults() {
    use rand::{Rng, SeedableRng};
    let seeds: u64 = if std::env::var_os("KINFORMER_LONG_TESTS").is_some() {
        200
    } else {
        12
    };
    let (mut relists, mut rewatches) = (0, 0);
    for seed in 0..seeds {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let lw = FakeListerWatcher::new();
        for i in 0..20 {
            lw.add(cm(&format!("o{i}"))).unwrap();
        }
        let sink = Arc::new(Mirror::default());
        let options = ReflectorOptions {
            use_watch_list: seed % 2 == 0,
            resync_period: Duration::from_secs(rng.random_range(0..3) * 20),
            ..ReflectorOptions::default()
        };
        let reflector = Arc::new(Reflector::new(
            lw.clone(),
            sink.clone() as Arc<dyn ReflectorSink<ConfigMap>>,
            options,
        ));
        let cancel = CancellationToken::new();
        let task = tokio::spawn({
            let (r, c) = (reflector.clone(), cancel.clone());
            async move { r.run(c).await }
        });
        for _ in 0..150 {
            let name = format!("o{}", rng.random_range(0..40));
            match rng.random_range(0..100) {
                0..=29 => {
                    lw.add(cm(&name)).unwrap();
                }
                30..=54 => {
                    lw.update(cm(&name)).unwrap();
                }
                55..=74 => {
                    lw.delete(&format!("ns/{name}"));
                }
                75..=79 => lw.close_watches(),
                80..=82 => {
                    lw.reset_change_log();
                    lw.close_watches();
                }
                83..=85 => lw.push_watch_error(ApiStatus::too_many_requests(None)),
                86..=87 => lw.push_list_error(ApiStatus::internal_error("boom")),
                88..=89 => lw.send_watch_error(ApiStatus::internal_error("boom")),
                90..=92 => lw.send_bookmark(),
                93..=94 => lw.send_undecodable(DecodeError::new("bad")),
                _ => {}
            }
            tokio::time::sleep(Duration::from_millis(rng.random_range(0..3000))).await;
        }
        let want = || {
            lw.objects()
                .iter()
                .map(|o| key_rv(o))
                .collect::<std::collections::BTreeMap<_, _>>()
        };
        // Longer than the longest backoff step (30 s, jittered up to 60 s).
        tokio::time::sleep(Duration::from_secs(61)).await;
        eventually("convergence", || *sink.0.lock() == want()).await;
        assert_eq!(
            reflector.last_sync_resource_version(),
            lw.resource_version(),
            "seed {seed}"
        );
        relists += lw.list_calls().len();
        rewatches += lw.watch_calls().len();
        cancel.cancel();
        task.await.unwrap().unwrap();
    }
    // The faults really happened: many lists and watches per run, not one of each.
    assert!(relists as u64 > 2 * seeds, "{relists} lists");
    assert!(rewatches as u64 > 5 * seeds, "{rewatches} watches");
}

#[tokio::test(start_paused = true)]
async fn a_stopped_reflector_can_run_again_and_relists_from_its_last_version() {
    let lw = FakeListerWatcher::new();
    lw.add(cm("a")).unwrap();
    let r = start(lw.clone(), list_watch_options(), None);
    eventually("watch", || lw.watch_calls().len() == 1).await;
    let reflector = r.reflector.clone();
    r.stop().await;
    lw.add(cm("b")).unwrap();
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (r, c) = (reflector.clone(), cancel.clone());
        async move { r.run(c).await }
    });
    eventually("second watch", || lw.watch_calls().len() == 2).await;
    assert_eq!(
        rvs(&lw.list_calls()),
        [(Some("0"), Some(500)), (Some("1"), None)]
    );
    assert_eq!(reflector.last_sync_resource_version(), "2");
    cancel.cancel();
    task.await.unwrap().unwrap();
}

#[test]
fn reflector_and_fake_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Reflector<ConfigMap, FakeListerWatcher<ConfigMap>>>();
    check::<FakeListerWatcher<ConfigMap>>();
    check::<ListWatchError>();
    check::<ReflectorError>();
}
