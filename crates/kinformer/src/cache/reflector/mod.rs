//! The reflector: keeps a [`ReflectorSink`] in step with the API server by list & watch.
//!
//! - **Resource versions** as client-go: the first list at `"0"` (served from the watch cache),
//!   relists at the last synced version, `""` (a consistent read) after a 410 Expired/Gone or a
//!   too-large version; watches from the last synced version, which every event and bookmark
//!   advances.
//! - **Paging**: pages of 500 by default, unpaginated at a specific version unless the server
//!   paged an earlier `"0"` list; an explicit page size wins.
//! - **The initial list goes through page by page** when the sink takes it that way
//!   ([`ReflectorSink::begin_paged_replace`]; the delta queues do until their first replace
//!   completes): each page is queued as it arrives, and in an informer the next page is
//!   fetched only once fewer than two pages wait in the queue, so decoding overlaps the
//!   store's work and at most a few pages are held decoded instead of the whole list.
//!   A response that streams in (a source's answer to a list too large to hold whole) goes
//!   through the same way, part by part. Relists go page by page too when the sink takes them
//!   that way (informers' queues do unless their relists are atomic); else a relist is
//!   joined and handed over in one `replace` (`reflector/list.rs`).
//! - **Watches** ask for bookmarks and a `timeoutSeconds` uniform in `[min, 2·min)` (min 5 min).
//!   A clean close re-watches without a relist; a watch closed within 1 s without events, an
//!   `ERROR` event or a stream error relists after a backoff; 429 and connection refused back
//!   off (honouring Retry-After) and re-watch.
//! - **Backoff** between attempts and on throttling: 800 ms doubling to 30 s, jitter 1.0, reset
//!   after 2 min of quiet (replaceable for tests).
//! - **Watch-list** (`sendInitialEvents`), on by default (`reflector/watch_list.rs`): the
//!   initial state goes to the sink page by page as it arrives when the sink takes a paged
//!   replace (else it is gathered and replaced at the end bookmark); any failure other than
//!   429 or an expired version falls back to list + watch for that attempt. A server without
//!   watch-list (Kubernetes 1.26–1.31 by default: `422 Invalid`,
//!   [`ListWatchError::is_watch_list_unsupported`]) is learnt once: the reflector tells its
//!   [`ListerWatcher`]'s [`WatchListSupport`] (a `KubeListerWatcher` shares one with every
//!   source of its client, and while nothing is known only one watch-list request is out at a
//!   time), logs one `info` line, and lists and watches from then on, without a warning or a
//!   further watch-list request.
//! - **Resync**: during the watch phase, `sink.resync()` every resync period (0 = off).
//! - **No watch event is skipped**: an undecodable watch event (garbage, an unknown event type,
//!   an object of the wrong shape) ends the watch with [`ReflectorError::WatchUndecodable`];
//!   the reflector backs off and resumes watching from the last synced version, and relists if
//!   the resumed watch fails the same way before the version moves. In a watch-list's initial
//!   state it falls back to list + watch.
//! - **Lists** skip and report undecodable items ([`ReflectorError::Undecodable`]) instead of
//!   failing the whole list as client-go does (one bad object would otherwise stall the
//!   informer). Objects without a name are skipped and reported, in lists and watches.
//! - **Retry-After** is honoured up to [`MAX_RETRY_AFTER`] (30 s, the backoff ceiling): a
//!   larger value from a server cannot stall the informer for longer.
//!
//! The decisions live in the pure state machine `ReflectorMachine` (`reflector/state/`); [`Reflector::run`]
//! performs its actions.

mod error;
mod list;
mod retry;
mod state;
mod stats;
mod watch_list;

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::StreamExt;
use kube_core::Resource;
use parking_lot::Mutex;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, info, warn};

pub use error::ReflectorError;
pub(crate) use state::{Action, ErrorClass, Input, ReflectorMachine, WatchEnd, watch_timeout};
pub use stats::ReflectorMetrics;
pub(crate) use stats::ReflectorStats;

use crate::cache::fifo::ReflectorSink;
use crate::cache::listwatch::{
    Gate, ListWatchError, ListerWatcher, Selectors, WatchEvent, WatchListSupport, WatchStream,
};
use crate::cache::meta::{ObjectKey, meta_namespace_key};
use crate::wait::{BackoffManager, ExponentialBackoffManager};
use retry::RetryWithDeadline;

/// client-go's minimum watch timeout; the actual one is uniform in `[min, 2·min)`.
pub const DEFAULT_MIN_WATCH_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// The longest wait a server's Retry-After can impose: the reflector's backoff ceiling, 30 s.
/// client-go's reflector never waits longer than its backoff cap between attempts; a larger
/// Retry-After (say 100 000 s) is cut to this.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);

/// A watch that closes sooner than this without any event counts as an error.
const VERY_SHORT_WATCH: Duration = Duration::from_secs(1);

/// Called with every error the reflector meets (after logging it).
pub type WatchErrorHandler = Box<dyn Fn(&ReflectorError) + Send + Sync>;

/// Asked before each periodic resync; `false` skips that resync.
pub type ShouldResync = Box<dyn Fn() -> bool + Send + Sync>;

/// Settings of a [`Reflector`]: public fields with defaults, and a `with_*` builder for each
/// (the style of every options type in this crate). An informer embeds them as
/// [`InformerOptions::reflector`](crate::cache::InformerOptions::reflector).
///
/// ```
/// use std::time::Duration;
/// use kinformer::cache::reflector::ReflectorOptions;
///
/// let options = ReflectorOptions::new("pods")
///     .with_page_size(100)
///     .with_watch_list(false)
///     .with_max_internal_error_retry_duration(Duration::from_secs(30));
/// assert_eq!(options.page_size, Some(100));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReflectorOptions {
    /// Name used in logs and traces.
    pub name: String,
    /// How often to call [`ReflectorSink::resync`] while watching; zero disables resync.
    pub resync_period: Duration,
    /// Minimum watch timeout; values below 5 minutes are raised to 5 minutes.
    pub min_watch_timeout: Duration,
    /// Explicit list page size (client-go's `WatchListPageSize`); `None` or 0 applies the
    /// client-go rules.
    pub page_size: Option<u32>,
    /// Try watch-list (`sendInitialEvents`) before list + watch; falls back on error.
    pub use_watch_list: bool,
    /// Label and field selectors for every list and watch.
    pub selectors: Selectors,
    /// client-go's `MaxInternalErrorRetryDuration`: when non-zero, a watch that ends in an
    /// internal error (500 `InternalError`) is re-opened at once from the last synced version,
    /// for at most this long after the first such error; then the reflector relists. Zero
    /// (the default, as in client-go) relists after the first one.
    pub max_internal_error_retry_duration: Duration,
}

impl Default for ReflectorOptions {
    fn default() -> Self {
        Self {
            name: "reflector".to_owned(),
            resync_period: Duration::ZERO,
            min_watch_timeout: DEFAULT_MIN_WATCH_TIMEOUT,
            page_size: None,
            use_watch_list: true,
            selectors: Selectors::default(),
            max_internal_error_retry_duration: Duration::ZERO,
        }
    }
}

impl ReflectorOptions {
    /// Default options under `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ..Self::default()
        }
    }

    /// Sets how often the sink is resynced while watching (zero: never).
    #[must_use]
    pub fn with_resync_period(mut self, period: Duration) -> Self {
        self.resync_period = period;
        self
    }

    /// Sets the minimum watch timeout (raised to 5 minutes if lower).
    #[must_use]
    pub fn with_min_watch_timeout(mut self, timeout: Duration) -> Self {
        self.min_watch_timeout = timeout;
        self
    }

    /// Sets an explicit list page size.
    #[must_use]
    pub fn with_page_size(mut self, size: u32) -> Self {
        self.page_size = Some(size);
        self
    }

    /// Turns watch-list on or off.
    #[must_use]
    pub fn with_watch_list(mut self, on: bool) -> Self {
        self.use_watch_list = on;
        self
    }

    /// Sets the label and field selectors of every list and watch.
    #[must_use]
    pub fn with_selectors(mut self, selectors: Selectors) -> Self {
        self.selectors = selectors;
        self
    }

    /// Sets client-go's `MaxInternalErrorRetryDuration` (see
    /// [`max_internal_error_retry_duration`](Self::max_internal_error_retry_duration)).
    #[must_use]
    pub fn with_max_internal_error_retry_duration(mut self, duration: Duration) -> Self {
        self.max_internal_error_retry_duration = duration;
        self
    }
}

/// client-go's reflector backoff: 800 ms initial, ×2, cap 30 s, reset after 2 min, jitter 1.0.
pub fn default_backoff_manager() -> Box<dyn BackoffManager> {
    let m = ExponentialBackoffManager::new(
        Duration::from_millis(800),
        Duration::from_secs(30),
        Duration::from_secs(120),
        2.0,
        1.0,
    );
    match m {
        Ok(m) => Box::new(m),
        // Unreachable: the factor and jitter above are finite and non-negative. Stay safe
        // anyway with a constant one-second delay.
        Err(_) => Box::new(FixedBackoff(Duration::from_secs(1))),
    }
}

#[derive(Debug)]
struct FixedBackoff(Duration);

impl BackoffManager for FixedBackoff {
    fn backoff(&mut self) -> Duration {
        self.0
    }
}

/// Lists and watches one kind of object and writes the changes into a [`ReflectorSink`].
///
/// # Contract
/// - Per object, the sink sees the changes in the order the server made them; nothing is
///   promised across objects.
/// - The sink converges to the server's state (eventual consistency): after a relist, objects
///   deleted meanwhile are removed by `replace`, which turns them into tombstones.
/// - A delete carries the object's final state as the server sent it.
/// - Every sink call is synchronous and must return quickly.
/// - [`run`](Self::run) never gives up: errors are reported (tracing and the watch-error
///   handler) and retried.
///
/// # Example
/// A reflector over the embedded API server, `kinformer_apiserver::ApiServer` (the
/// `kinformer-apiserver` crate, a dev-dependency), writing the names it sees into a channel:
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kinformer::cache::CacheError;
/// use kinformer::cache::fifo::ReflectorSink;
/// use kinformer::cache::reflector::{Reflector, ReflectorOptions};
/// use kinformer::kube::KubeListerWatcher;
/// use kinformer_apiserver::ApiServer;
/// use kube::Api;
/// use serde_json::json;
/// use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};
/// use tokio_util::sync::CancellationToken;
///
/// struct Names(UnboundedSender<String>);
/// impl Names {
///     fn send(&self, o: &ConfigMap) { let _ = self.0.send(o.metadata.name.clone().unwrap_or_default()); }
/// }
/// impl ReflectorSink<ConfigMap> for Names {
///     fn add(&self, o: Arc<ConfigMap>) -> Result<(), CacheError> { self.send(&o); Ok(()) }
///     fn update(&self, _: Arc<ConfigMap>) -> Result<(), CacheError> { Ok(()) }
///     fn delete(&self, _: Arc<ConfigMap>) -> Result<(), CacheError> { Ok(()) }
///     fn replace(&self, objs: Vec<Arc<ConfigMap>>, _: &str) -> Result<(), CacheError> {
///         objs.iter().for_each(|o| self.send(o)); Ok(())
///     }
///     fn resync(&self) -> Result<(), CacheError> { Ok(()) }
/// }
///
/// let server = ApiServer::start().await.unwrap();
/// let cm = |name: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
/// server.store().create("configmaps", "ns", cm("a")).unwrap();
/// let api: Api<ConfigMap> = Api::namespaced(server.client().unwrap(), "ns");
/// let (tx, mut rx) = unbounded_channel();
/// let reflector = Arc::new(Reflector::new(KubeListerWatcher::new(api), Arc::new(Names(tx)), ReflectorOptions::default()));
/// let cancel = CancellationToken::new();
/// let task = tokio::spawn({
///     let (r, c) = (reflector.clone(), cancel.clone());
///     async move { r.run(c).await }
/// });
/// assert_eq!(rx.recv().await.as_deref(), Some("a"), "from the list");
/// server.store().create("configmaps", "ns", cm("b")).unwrap();
/// assert_eq!(rx.recv().await.as_deref(), Some("b"), "from the watch");
/// cancel.cancel();
/// task.await.unwrap().unwrap();
/// assert!(!reflector.last_sync_resource_version().is_empty());
/// # });
/// ```
pub struct Reflector<K, L> {
    name: String,
    lw: L,
    sink: Arc<dyn ReflectorSink<K>>,
    resync_period: Duration,
    min_watch_timeout: Duration,
    machine: Mutex<ReflectorMachine>,
    backoff: Mutex<Box<dyn BackoffManager>>,
    error_handler: Option<WatchErrorHandler>,
    should_resync: Option<ShouldResync>,
    internal_error_retry: Mutex<RetryWithDeadline>,
    /// Whether the watch that just failed ended in an internal error.
    last_watch_internal: AtomicBool,
    running: AtomicBool,
    stats: Arc<ReflectorStats>,
}

impl<K, L> fmt::Debug for Reflector<K, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reflector")
            .field("name", &self.name)
            .field("resync_period", &self.resync_period)
            .field("min_watch_timeout", &self.min_watch_timeout)
            .field("machine", &*self.machine.lock())
            .field("running", &self.running.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// Clears the running flag when `run` returns or is dropped.
struct RunningGuard<'a>(&'a AtomicBool);

impl Drop for RunningGuard<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

impl<K, L> Reflector<K, L>
where
    K: Resource + Send + Sync + 'static,
    L: ListerWatcher<K>,
{
    /// A reflector reading from `lw` and writing into `sink`, with client-go's default backoff.
    pub fn new(lw: L, sink: Arc<dyn ReflectorSink<K>>, options: ReflectorOptions) -> Self {
        let machine =
            ReflectorMachine::new(options.page_size, options.use_watch_list, options.selectors);
        Self {
            name: options.name,
            lw,
            sink,
            resync_period: options.resync_period,
            min_watch_timeout: options.min_watch_timeout.max(DEFAULT_MIN_WATCH_TIMEOUT),
            machine: Mutex::new(machine),
            backoff: Mutex::new(default_backoff_manager()),
            error_handler: None,
            should_resync: None,
            internal_error_retry: Mutex::new(RetryWithDeadline::new(
                options.max_internal_error_retry_duration,
            )),
            last_watch_internal: AtomicBool::new(false),
            running: AtomicBool::new(false),
            stats: Arc::default(),
        }
    }

    /// Replaces the backoff manager (one manager paces both attempts and throttled re-watches).
    #[must_use]
    pub fn with_backoff_manager(mut self, manager: Box<dyn BackoffManager>) -> Self {
        self.backoff = Mutex::new(manager);
        self
    }

    /// Installs a handler called with every error, after it is logged.
    #[must_use]
    pub fn with_watch_error_handler(
        mut self,
        handler: impl Fn(&ReflectorError) + Send + Sync + 'static,
    ) -> Self {
        self.error_handler = Some(Box::new(handler));
        self
    }

    /// Installs a check asked before each periodic resync.
    #[must_use]
    pub fn with_should_resync(mut self, should: impl Fn() -> bool + Send + Sync + 'static) -> Self {
        self.should_resync = Some(Box::new(should));
        self
    }

    /// The reflector's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The resource version last synced: from a list, a watch-list's end bookmark, or the last
    /// watch event or bookmark. Empty before the first sync.
    pub fn last_sync_resource_version(&self) -> String {
        self.machine.lock().last_sync_resource_version().to_owned()
    }

    /// True after a 410 / too-large failure until the next successful list.
    pub fn is_last_sync_resource_version_unavailable(&self) -> bool {
        self.machine
            .lock()
            .is_last_sync_resource_version_unavailable()
    }

    /// Lists and watches until `cancel` fires, retrying every failure.
    ///
    /// # Errors
    /// [`ReflectorError::AlreadyRunning`] if another `run` of this reflector is active;
    /// otherwise it returns `Ok(())` once cancelled.
    ///
    /// # Cancel safety
    /// Cancel through the token: `run` returns at its next await point without further sink
    /// writes. Dropping the future is also safe (the open request or watch is dropped; the
    /// sink keeps what it was given).
    pub async fn run(&self, cancel: CancellationToken) -> Result<(), ReflectorError> {
        let span = tracing::info_span!("reflector", reflector = %self.name);
        self.run_inner(cancel).instrument(span).await
    }

    /// The counters of what this reflector has done, with its last synced version.
    pub fn metrics(&self) -> ReflectorMetrics {
        self.stats.snapshot(self.last_sync_resource_version())
    }

    /// The live counters, for an owner that outlives the reflector (the informer).
    pub(crate) fn stats(&self) -> Arc<ReflectorStats> {
        Arc::clone(&self.stats)
    }

    async fn run_inner(&self, cancel: CancellationToken) -> Result<(), ReflectorError> {
        if self.running.swap(true, Ordering::AcqRel) {
            return Err(ReflectorError::AlreadyRunning);
        }
        let _guard = RunningGuard(&self.running);
        info!(reflector = %self.name, "starting reflector");
        self.machine.lock().reset_phase();
        let mut action = self.transition(Input::Start);
        let mut stream: Option<WatchStream<K>> = None;
        let mut resync_at: Option<Instant> = None;
        loop {
            let input = match action {
                Action::List(options) => {
                    resync_at = None;
                    stream = None;
                    let span = tracing::debug_span!("list");
                    match self.list(options, &cancel).instrument(span).await {
                        Some(input) => input,
                        None => break,
                    }
                }
                Action::WatchList(options) => {
                    resync_at = None;
                    let gate = match self.lw.watch_list_support() {
                        None => Gate::Try(None),
                        Some(support) => tokio::select! {
                            biased;
                            () = cancel.cancelled() => break,
                            g = support.acquire() => g,
                        },
                    };
                    let probe = match gate {
                        Gate::Unsupported => {
                            debug!(reflector = %self.name, "the server does not support watch-list: list + watch");
                            action = self.transition(Input::WatchListUnsupported);
                            continue;
                        }
                        Gate::Try(probe) => probe,
                    };
                    let span = tracing::debug_span!("watch_list");
                    ReflectorStats::bump(&self.stats.lists);
                    match self
                        .watch_list(options, probe, &cancel)
                        .instrument(span)
                        .await
                    {
                        Some((input, s)) => {
                            if let Input::WatchListFailed(_) = input {
                                ReflectorStats::bump(&self.stats.list_failures);
                            }
                            stream = s;
                            input
                        }
                        None => break,
                    }
                }
                Action::Watch(mut options) => {
                    options.timeout = Some(watch_timeout(self.min_watch_timeout, rand::random()));
                    let start = Instant::now();
                    let started = tokio::select! {
                        biased;
                        () = cancel.cancelled() => break,
                        r = self.lw.watch(&options) => r,
                    };
                    match started {
                        Err(e) => {
                            ReflectorStats::bump(&self.stats.watch_failures);
                            let class = ErrorClass::of(&e);
                            self.report(ReflectorError::WatchStart(e));
                            Input::WatchFailedToStart(class)
                        }
                        Ok(s) => {
                            ReflectorStats::bump(&self.stats.watches);
                            debug!(reflector = %self.name, ?options, "watch started");
                            self.arm_resync(&mut resync_at);
                            let span = tracing::debug_span!(
                                "watch",
                                resource_version = options.resource_version_str()
                            );
                            match self
                                .handle_watch(s, start, &mut resync_at, &cancel)
                                .instrument(span)
                                .await
                            {
                                Some(end) => Input::WatchEnded(end),
                                None => break,
                            }
                        }
                    }
                }
                Action::KeepWatching => match stream.take() {
                    Some(s) => {
                        // A watch-list's stream goes on as a watch.
                        ReflectorStats::bump(&self.stats.watches);
                        self.arm_resync(&mut resync_at);
                        match self
                            .handle_watch(s, Instant::now(), &mut resync_at, &cancel)
                            .await
                        {
                            Some(end) => Input::WatchEnded(end),
                            None => break,
                        }
                    }
                    None => {
                        Input::WatchEnded(WatchEnd::Failed(ErrorClass::Other { retry_after: None }))
                    }
                },
                Action::Backoff { retry_after } => {
                    let step = self.backoff.lock().backoff();
                    let delay = retry_after.map_or(step, |ra| ra.min(MAX_RETRY_AFTER).max(step));
                    debug!(reflector = %self.name, ?delay, "backing off");
                    tokio::select! {
                        biased;
                        () = cancel.cancelled() => break,
                        () = tokio::time::sleep(delay) => Input::BackoffElapsed,
                    }
                }
            };
            action = self.transition(input);
        }
        info!(reflector = %self.name, "reflector stopped");
        Ok(())
    }

    fn transition(&self, input: Input) -> Action {
        let input = match input {
            Input::WatchEnded(end) => Input::WatchEnded(self.retry_internal_error(end)),
            other => other,
        };
        let mut machine = self.machine.lock();
        if machine.uses_watch_list()
            && self
                .lw
                .watch_list_support()
                .is_some_and(WatchListSupport::is_unsupported)
        {
            debug!(reflector = %self.name, "the server does not support watch-list: list + watch");
            machine.disable_watch_list();
        }
        let action = machine.step(input.clone());
        debug!(
            reflector = %self.name,
            ?input,
            ?action,
            last_sync_resource_version = machine.last_sync_resource_version(),
            "reflector transition"
        );
        action
    }

    /// Turns a watch's internal-error end into [`WatchEnd::InternalErrorRetry`] while within
    /// [`ReflectorOptions::max_internal_error_retry_duration`].
    fn retry_internal_error(&self, end: WatchEnd) -> WatchEnd {
        let internal = matches!(end, WatchEnd::Failed(ErrorClass::Other { .. }))
            && self.last_watch_internal.swap(false, Ordering::AcqRel);
        let now = Instant::now();
        let mut retry = self.internal_error_retry.lock();
        retry.after(internal, now);
        if internal && retry.should_retry(now) {
            WatchEnd::InternalErrorRetry
        } else {
            end
        }
    }

    fn report(&self, err: ReflectorError) {
        ReflectorStats::bump(&self.stats.errors);
        warn!(reflector = %self.name, error = %err, "reflector error");
        if let Some(h) = &self.error_handler {
            h(&err);
        }
    }

    fn arm_resync(&self, resync_at: &mut Option<Instant>) {
        if !self.resync_period.is_zero() && resync_at.is_none() {
            *resync_at = Some(Instant::now() + self.resync_period);
        }
    }

    fn has_key(&self, obj: &K, event: &'static str) -> Option<ObjectKey> {
        match meta_namespace_key(obj) {
            Ok(k) => Some(k),
            Err(_) => {
                self.report(ReflectorError::MissingName { event });
                None
            }
        }
    }

    /// True if the object has a name (so a key); reports and returns false otherwise. Cheaper
    /// than [`has_key`](Self::has_key): no key is built.
    fn is_named(&self, obj: &K, event: &'static str) -> bool {
        let named = obj.meta().name.as_deref().is_some_and(|n| !n.is_empty());
        if !named {
            self.report(ReflectorError::MissingName { event });
        }
        named
    }

    /// Handles one watch until it ends (`Some`) or `cancel` fires (`None`).
    async fn handle_watch(
        &self,
        mut s: WatchStream<K>,
        start: Instant,
        resync_at: &mut Option<Instant>,
        cancel: &CancellationToken,
    ) -> Option<WatchEnd> {
        let mut events: u64 = 0;
        loop {
            let deadline = *resync_at;
            let resync = async move {
                match deadline {
                    Some(t) => tokio::time::sleep_until(t).await,
                    None => futures::future::pending().await,
                }
            };
            let item = tokio::select! {
                biased;
                () = cancel.cancelled() => return None,
                item = s.next() => item,
                () = resync => {
                    *resync_at = Some(Instant::now() + self.resync_period);
                    if self.should_resync.as_ref().is_none_or(|f| f()) {
                        debug!(reflector = %self.name, "resync");
                        if let Err(source) = self.sink.resync() {
                            self.report(ReflectorError::Sink { operation: "resync", source });
                            return Some(WatchEnd::Failed(ErrorClass::Other { retry_after: None }));
                        }
                    }
                    continue;
                }
            };
            let event = match item {
                None => {
                    let elapsed = start.elapsed();
                    if elapsed < VERY_SHORT_WATCH && events == 0 {
                        self.report(ReflectorError::VeryShortWatch { elapsed });
                        return Some(WatchEnd::TooShort);
                    }
                    debug!(reflector = %self.name, events, "watch closed");
                    return Some(WatchEnd::Closed);
                }
                Some(Err(ListWatchError::Decode(d))) => {
                    // The event may have carried a change: never skip it. End the watch and
                    // resume from the last synced version (see `WatchEnd::Undecodable`).
                    self.report(ReflectorError::WatchUndecodable(d));
                    return Some(WatchEnd::Undecodable);
                }
                Some(Err(e)) => return Some(self.watch_failed(e)),
                Some(Ok(event)) => event,
            };
            match event {
                WatchEvent::Error(status) => {
                    return Some(self.watch_failed(ListWatchError::Api(status)));
                }
                event => {
                    if self.apply(event) {
                        events += 1;
                    }
                }
            }
        }
    }

    /// Reports the error that ended a watch and classifies it.
    fn watch_failed(&self, e: ListWatchError) -> WatchEnd {
        let class = ErrorClass::of(&e);
        self.last_watch_internal
            .store(e.is_internal_error(), Ordering::Release);
        self.report(ReflectorError::Watch(e));
        WatchEnd::Failed(class)
    }

    /// Writes one watch event into the sink and advances the version; false if the event was
    /// skipped (an object without a name).
    fn apply(&self, event: WatchEvent<K>) -> bool {
        let type_name = event.type_name();
        if let WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) = &event {
            if !self.is_named(o, type_name) {
                return false;
            }
            // Counted before the write: whoever sees the event's effect (the cache, a
            // handler) then sees it counted.
            ReflectorStats::bump(&self.stats.events);
        }
        let (result, operation, obj) = match event {
            WatchEvent::Bookmark(b) => {
                ReflectorStats::bump(&self.stats.bookmarks);
                let result = self.sink.bookmark(&b.resource_version);
                if let Err(source) = result {
                    self.report(ReflectorError::Sink {
                        operation: "bookmark",
                        source,
                    });
                }
                self.machine
                    .lock()
                    .observe_resource_version(&b.resource_version);
                return true;
            }
            WatchEvent::Error(_) => return false,
            WatchEvent::Added(o) => (self.sink.add(Arc::clone(&o)), "add", o),
            WatchEvent::Modified(o) => (self.sink.update(Arc::clone(&o)), "update", o),
            WatchEvent::Deleted(o) => (self.sink.delete(Arc::clone(&o)), "delete", o),
        };
        if let Err(source) = result {
            self.report(ReflectorError::Sink { operation, source });
        }
        let rv = obj.meta().resource_version.as_deref().unwrap_or("");
        self.machine.lock().observe_resource_version(rv);
        true
    }
}
