//! [`SharedIndexInformer`]: one list/watch, one indexed cache, many handlers.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::{BoxFuture, FutureExt};
use kube_core::Resource;
use parking_lot::Mutex;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::cache::controller::{DeltaConsumer, ProcessLoop};
use crate::cache::fifo::{DeltaFifo, DeltaQueue, INFORMER_MAX_LIVE_BATCH, KnownObjects, RealFifo};
use crate::cache::handler::{HandlerOptions, ResourceEventHandler};
use crate::cache::informer::InformerMetrics;
use crate::cache::informer::Lister;
use crate::cache::informer::boxed_lw::BoxedListerWatcher;
use crate::cache::informer::{InformerError, InformerOptions, QueueKind, ReadOnlyIndexer};
use crate::cache::listwatch::ListerWatcher;
use crate::cache::processor::{
    Consumer, INLINE_BUDGET, ResourceEventHandlerRegistration, SharedProcessor, plan_handler_resync,
};
use crate::cache::reflector::{
    Reflector, ReflectorError, ReflectorMetrics, ReflectorOptions, ReflectorStats,
};
use crate::cache::store::{Indexer, Indexers};
use crate::cache::sync::{HasSynced, SyncedFlag};

/// The watch-error handler type (see [`SharedIndexInformer::set_watch_error_handler`]).
pub type InformerWatchErrorHandler = Arc<dyn Fn(&ReflectorError) + Send + Sync>;

/// Lifecycle and settings that may change until the start.
struct State<K> {
    /// Set by `run`; never cleared.
    started: bool,
    /// Set when `run` finishes (or is abandoned); never cleared.
    stopped: bool,
    /// The resync check period: the reflector's resync timer. May be lowered by handlers
    /// added before the start.
    check_period: Duration,
    watch_error_handler: Option<InformerWatchErrorHandler>,
    /// The running reflector (for `last_sync_resource_version`).
    reflector: Option<Arc<Reflector<K, BoxedListerWatcher<K>>>>,
    /// Version reported once the reflector is gone.
    last_sync_resource_version: String,
    /// The reflector's counters, from the start on (kept after the stop).
    reflector_stats: Option<Arc<ReflectorStats>>,
}

struct Inner<K> {
    name: String,
    lw: BoxedListerWatcher<K>,
    options: InformerOptions<K>,
    indexer: Arc<Indexer<K>>,
    processor: Arc<SharedProcessor<K>>,
    synced: Arc<SyncedFlag>,
    /// The last list/watch error the reflector reported (see `HasSynced::last_error`).
    last_error: Arc<Mutex<Option<String>>>,
    stopped: SyncedFlag,
    /// Taken by the consumer stage around each popped item, and by handler registration and
    /// removal after the start. Lock order: `state` before `block_deltas`.
    block_deltas: Arc<Mutex<()>>,
    state: Mutex<State<K>>,
}

/// An informer: lists and watches one kind of object, keeps an indexed cache of it and tells
/// any number of handlers about every change. client-go's `sharedIndexInformer`.
///
/// Built from a [`ListerWatcher`] and [`InformerOptions`]; [`run`](Self::run) drives a
/// [`Reflector`] into a delta queue ([`RealFifo`] by default, or [`DeltaFifo`]), and a process
/// loop pops the deltas, applies them to the [`Indexer`] and hands the resulting
/// notifications to every handler's listener. Cheap to clone: clones share everything.
///
/// # Contract
/// - **Per object, in order**: a handler sees the changes of one object in the order the
///   cache applied them, a subsequence of the states the server went through (intermediate
///   states may be skipped, e.g. across a relist).
/// - **No order across objects**: nothing is promised between two objects' notifications,
///   nor between two handlers.
/// - **Eventual consistency**: the cache (and a handler that applies every notification)
///   converges to the server's state; a handler may observe the cache ahead of the
///   notification it is processing. Use [`get_indexer`](Self::get_indexer) or a
///   [`lister`](Self::lister) for the current state.
/// - **Handlers must be quick**: they run on their listener's task; a slow handler only
///   grows its own buffer ([`ResourceEventHandlerRegistration::pending`] shows by how much),
///   never delays the cache or the other handlers.
/// - **Non-blocking handlers** ([`HandlerOptions::nonblocking`], opt-in): once synced, each
///   live event is applied to the cache on the watch's task, and handlers registered as
///   non-blocking are called there too when nothing is buffered for them — no task is woken
///   for the event, so a burst reaches them as it is read. A call over half a millisecond
///   moves such a handler back to its own task for a while; one that may block must not opt in.
/// - **Deletes** carry [`DeletedObject::Live`](crate::cache::DeletedObject) with the final
///   state the server sent, or [`DeletedObject::Tombstone`](crate::cache::DeletedObject)
///   (`DeletedFinalStateUnknown`: key and last known state) when the delete was missed and
///   only noticed by a relist.
/// - **Late handlers**: a handler added after the start first receives the current cache as
///   adds with `is_in_initial_list = true`, registered and replayed while delta processing is
///   blocked, so it misses nothing and sees nothing twice.
/// - **Resync**: an update whose old and new `resourceVersion` are equal is a sync; it goes
///   only to handlers whose resync period is due.
///
/// # Example
/// Against the embedded API server, `kinformer_apiserver::ApiServer` (the `kinformer-apiserver`
/// crate, a dev-dependency); a cluster's client works the same way:
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kinformer::cache::{HasSynced, InformerOptions, ResourceEventHandlerFuncs, SharedIndexInformer};
/// use kinformer::kube::KubeListerWatcher;
/// use kinformer_apiserver::ApiServer;
/// use kube::Api;
/// use serde_json::json;
/// use tokio_util::sync::CancellationToken;
///
/// let server = ApiServer::start().await.unwrap();
/// let cm = |name: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
/// server.store().create("configmaps", "ns", cm("a")).unwrap();
///
/// let api: Api<ConfigMap> = Api::namespaced(server.client().unwrap(), "ns");
/// let informer = SharedIndexInformer::new(KubeListerWatcher::new(api), InformerOptions::new("configmaps"));
/// let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
/// let registration = informer
///     .add_event_handler(ResourceEventHandlerFuncs::new().on_add(move |o: &Arc<ConfigMap>, _| {
///         let _ = tx.send(o.metadata.name.clone());
///     }))
///     .unwrap();
/// let cancel = CancellationToken::new();
/// let run = tokio::spawn({
///     let (informer, cancel) = (informer.clone(), cancel.clone());
///     async move { informer.run(cancel).await }
/// });
/// registration.wait_synced().await;
/// assert_eq!(rx.recv().await.unwrap().as_deref(), Some("a"));
/// server.store().create("configmaps", "ns", cm("b")).unwrap();
/// assert_eq!(rx.recv().await.unwrap().as_deref(), Some("b"), "from the watch");
/// assert_eq!(informer.get_indexer().len(), 2);
/// cancel.cancel();
/// run.await.unwrap().unwrap();
/// assert!(informer.is_stopped());
/// # });
/// ```
pub struct SharedIndexInformer<K> {
    inner: Arc<Inner<K>>,
}

impl<K> Clone for SharedIndexInformer<K> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<K> fmt::Debug for SharedIndexInformer<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.inner.state.lock();
        f.debug_struct("SharedIndexInformer")
            .field("name", &self.inner.name)
            .field("started", &st.started)
            .field("stopped", &st.stopped)
            .field("synced", &self.inner.synced.is_set())
            .field("check_period", &st.check_period)
            .field("options", &self.inner.options)
            .finish_non_exhaustive()
    }
}

/// Marks the informer stopped when `run` ends, however it ends.
struct StopGuard<'a, K: Resource + Send + Sync + 'static> {
    inner: &'a Inner<K>,
}

impl<K: Resource + Send + Sync + 'static> Drop for StopGuard<'_, K> {
    fn drop(&mut self) {
        let mut st = self.inner.state.lock();
        st.stopped = true;
        if let Some(r) = st.reflector.take() {
            st.last_sync_resource_version = r.last_sync_resource_version();
        }
        drop(st);
        self.inner.stopped.set();
    }
}

impl<K> SharedIndexInformer<K>
where
    K: Resource + Send + Sync + 'static,
{
    /// An informer over `lw` (which carries the selectors) with these options. Nothing runs
    /// until [`run`](Self::run).
    ///
    /// If compact storage cannot be set up (an unusable
    /// [`CompactOptions::dictionary`](crate::cache::store::CompactOptions::dictionary)), the error is
    /// logged and objects are kept typed; [`try_new`](Self::try_new) returns it instead.
    pub fn new(lw: impl ListerWatcher<K>, options: InformerOptions<K>) -> Self {
        let indexer = options
            .storage
            .indexer(options.indexers.clone())
            .unwrap_or_else(|e| {
                tracing::error!(informer = %options.name, error = %e,
                    "informer: compact storage unavailable, keeping objects typed");
                Indexer::new(options.indexers.clone())
            });
        Self::with_indexer(lw, options, indexer)
    }

    /// As [`new`](Self::new), failing if the storage cannot be set up.
    ///
    /// # Errors
    /// [`InformerError::Indexer`] with [`IndexerError::Compact`](crate::cache::store::IndexerError).
    pub fn try_new(
        lw: impl ListerWatcher<K>,
        options: InformerOptions<K>,
    ) -> Result<Self, InformerError> {
        let indexer = options.storage.indexer(options.indexers.clone())?;
        Ok(Self::with_indexer(lw, options, indexer))
    }

    fn with_indexer(
        lw: impl ListerWatcher<K>,
        options: InformerOptions<K>,
        indexer: Indexer<K>,
    ) -> Self {
        let indexer = Arc::new(indexer);
        let synced = Arc::new(SyncedFlag::new());
        let processor = Arc::new(SharedProcessor::new(
            Arc::clone(&synced) as Arc<dyn HasSynced>
        ));
        let state = State {
            started: false,
            stopped: false,
            check_period: options.resync_period,
            watch_error_handler: None,
            reflector: None,
            last_sync_resource_version: String::new(),
            reflector_stats: None,
        };
        Self {
            inner: Arc::new(Inner {
                name: options.name.clone(),
                lw: BoxedListerWatcher::new(lw),
                options,
                indexer,
                processor,
                synced,
                last_error: Arc::new(Mutex::new(None)),
                stopped: SyncedFlag::new(),
                block_deltas: Arc::new(Mutex::new(())),
                state: Mutex::new(state),
            }),
        }
    }

    /// True if both handles refer to the same informer.
    pub fn ptr_eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// The informer's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Adds a handler with the informer's default resync period. See
    /// [`add_event_handler_with_resync`](Self::add_event_handler_with_resync).
    ///
    /// # Errors
    /// [`InformerError::Stopped`] once the informer has stopped.
    pub fn add_event_handler(
        &self,
        handler: impl ResourceEventHandler<K> + 'static,
    ) -> Result<ResourceEventHandlerRegistration, InformerError> {
        self.add_event_handler_with_options(handler, HandlerOptions::new())
    }

    /// Adds a handler that also wants a resync every `resync_period` (zero: never).
    ///
    /// Period rules (client-go): a non-zero period is raised to at least 1 s. Before the start
    /// a period shorter than the check period lowers the check period; after the start it is
    /// raised to the check period. A handler added after the start first receives the
    /// current cache as adds with `is_in_initial_list = true` (see the contract).
    ///
    /// The returned registration has its own [`has_synced`](HasSynced::has_synced) (the
    /// informer synced and every initial add delivered to this handler) and its buffer
    /// metrics ([`pending`](ResourceEventHandlerRegistration::pending)).
    ///
    /// # Errors
    /// [`InformerError::Stopped`] once the informer has stopped.
    pub fn add_event_handler_with_resync(
        &self,
        handler: impl ResourceEventHandler<K> + 'static,
        resync_period: Duration,
    ) -> Result<ResourceEventHandlerRegistration, InformerError> {
        self.add_event_handler_with_options(
            handler,
            HandlerOptions::new().resync_period(resync_period),
        )
    }

    /// Adds a handler with [`HandlerOptions`]: its resync period (as
    /// [`add_event_handler_with_resync`](Self::add_event_handler_with_resync)) and whether it
    /// is [`nonblocking`](HandlerOptions::nonblocking), to be called on the watch task.
    ///
    /// Runs against the embedded API server, `kinformer_apiserver::ApiServer` (the
    /// `kinformer-apiserver` crate, a dev-dependency); a cluster's client works the same way.
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kinformer::cache::{HandlerOptions, InformerOptions, ResourceEventHandlerFuncs, SharedIndexInformer};
    /// use kinformer::kube::KubeListerWatcher;
    /// use kinformer::workqueue::Queue;
    /// use kinformer_apiserver::ApiServer;
    /// use kube::Api;
    ///
    /// let server = ApiServer::start().await.unwrap();
    /// let api: Api<ConfigMap> = Api::namespaced(server.client().unwrap(), "ns");
    /// let informer = SharedIndexInformer::new(KubeListerWatcher::new(api), InformerOptions::new("configmaps"));
    /// let queue = Arc::new(Queue::<String>::new());
    /// let q = Arc::clone(&queue);
    /// // Enqueueing a key never blocks: the handler may run on the watch task.
    /// informer
    ///     .add_event_handler_with_options(
    ///         ResourceEventHandlerFuncs::new().on_add(move |o: &Arc<ConfigMap>, _| {
    ///             q.add(o.metadata.name.clone().unwrap_or_default());
    ///         }),
    ///         HandlerOptions::new().nonblocking(true),
    ///     )
    ///     .unwrap();
    /// # });
    /// ```
    ///
    /// # Errors
    /// [`InformerError::Stopped`] once the informer has stopped.
    pub fn add_event_handler_with_options(
        &self,
        handler: impl ResourceEventHandler<K> + 'static,
        options: HandlerOptions,
    ) -> Result<ResourceEventHandlerRegistration, InformerError> {
        let handler: Arc<dyn ResourceEventHandler<K>> = Arc::new(handler);
        let consumer = if options.nonblocking {
            Consumer::Nonblocking(handler, options.call_budget.unwrap_or(INLINE_BUDGET))
        } else {
            Consumer::Handler(handler)
        };
        let resync = options.resync.unwrap_or(self.inner.options.resync_period);
        self.add_consumer(consumer, resync)
    }

    pub(crate) fn add_consumer(
        &self,
        consumer: Consumer<K>,
        requested: Duration,
    ) -> Result<ResourceEventHandlerRegistration, InformerError> {
        let inner = &self.inner;
        let mut st = inner.state.lock();
        if st.stopped {
            return Err(InformerError::Stopped);
        }
        let plan = plan_handler_resync(requested, st.check_period, st.started);
        if !st.started {
            if plan.check_period != st.check_period {
                st.check_period = plan.check_period;
                inner
                    .processor
                    .resync_check_period_changed(plan.check_period);
            }
            return Ok(inner
                .processor
                .add_consumer(consumer, plan.periods, std::iter::empty())?);
        }
        let _blocked = inner.block_deltas.lock();
        let current = inner.indexer.list();
        Ok(inner
            .processor
            .add_consumer(consumer, plan.periods, current)?)
    }

    /// Removes a handler: it receives nothing more (notifications still buffered for it are
    /// dropped) and its task ends. Idempotent; returns whether it was registered.
    pub fn remove_event_handler(&self, registration: &ResourceEventHandlerRegistration) -> bool {
        let _blocked = self.inner.block_deltas.lock();
        self.inner.processor.remove_listener(registration)
    }

    /// Installs a function called with every list/watch error (after it is logged); the
    /// reflector retries regardless.
    ///
    /// # Errors
    /// [`InformerError::AlreadyStarted`] after [`run`](Self::run) has been called.
    pub fn set_watch_error_handler(
        &self,
        handler: impl Fn(&ReflectorError) + Send + Sync + 'static,
    ) -> Result<(), InformerError> {
        let mut st = self.inner.state.lock();
        if st.started {
            return Err(InformerError::AlreadyStarted);
        }
        st.watch_error_handler = Some(Arc::new(handler));
        Ok(())
    }

    /// Adds index functions, before or after the start; after it, they are back-filled from
    /// the cache while delta processing is blocked.
    ///
    /// # Errors
    /// [`InformerError::Indexer`] on a name conflict or an index function error (nothing is
    /// added).
    pub fn add_indexers(&self, indexers: Indexers<K>) -> Result<(), InformerError> {
        let _blocked = self.inner.block_deltas.lock();
        Ok(self.inner.indexer.add_indexers(indexers)?)
    }

    /// The cache, read-only.
    pub fn get_indexer(&self) -> ReadOnlyIndexer<K> {
        ReadOnlyIndexer::new(Arc::clone(&self.inner.indexer))
    }

    /// A lister over the cache.
    pub fn lister(&self) -> Lister<K> {
        Lister::new(Arc::clone(&self.inner.indexer))
    }

    /// The resource version of the last list, watch event or bookmark the reflector saw;
    /// empty before the first list.
    pub fn last_sync_resource_version(&self) -> String {
        let st = self.inner.state.lock();
        match &st.reflector {
            Some(r) => r.last_sync_resource_version(),
            None => st.last_sync_resource_version.clone(),
        }
    }

    /// A snapshot of what the informer has done and holds (see [`InformerMetrics`]).
    pub fn metrics(&self) -> InformerMetrics {
        let stats = self.inner.state.lock().reflector_stats.clone();
        let rv = self.last_sync_resource_version();
        let reflector = match stats {
            Some(s) => s.snapshot(rv),
            None => ReflectorMetrics {
                last_sync_resource_version: rv,
                ..ReflectorMetrics::default()
            },
        };
        InformerMetrics {
            reflector,
            cached_objects: self.inner.indexer.len(),
            handlers: self.inner.processor.listener_count(),
            synced: self.has_synced(),
        }
    }

    /// True once [`run`](Self::run) has been called.
    pub fn is_started(&self) -> bool {
        self.inner.state.lock().started
    }

    /// True once [`run`](Self::run) has returned (or was dropped).
    pub fn is_stopped(&self) -> bool {
        self.inner.state.lock().stopped
    }

    /// Waits until [`is_stopped`](Self::is_stopped).
    ///
    /// # Cancel safety
    /// Cancel-safe: it only waits.
    pub async fn stopped(&self) {
        self.inner.stopped.wait().await;
    }

    /// The number of registered handlers.
    pub fn handler_count(&self) -> usize {
        self.inner.processor.listener_count()
    }

    /// The current resync check period (the informer's resync timer; zero: no resync).
    pub fn resync_check_period(&self) -> Duration {
        self.inner.state.lock().check_period
    }

    /// Tasks still running for this informer's handlers (zero once stopped): for tests that
    /// check a stop leaves no task behind. Feature `testing`.
    #[cfg(any(test, feature = "testing"))]
    pub fn running_listener_tasks(&self) -> usize {
        self.inner.processor.running_tasks()
    }

    fn build_queue(&self) -> Arc<dyn DeltaQueue<K>> {
        let transform = self.inner.options.transform.clone();
        let known = Arc::clone(&self.inner.indexer) as Arc<dyn KnownObjects<K>>;
        let paged_relists = !self.inner.options.atomic_relists;
        match self.inner.options.queue {
            QueueKind::RealFifo => {
                let mut q = RealFifo::new()
                    .with_paged_relists(paged_relists)
                    .with_known_objects(known)
                    .with_max_live_batch(INFORMER_MAX_LIVE_BATCH);
                if let Some(t) = transform {
                    q = q.with_transformer(t);
                }
                Arc::new(q)
            }
            QueueKind::DeltaFifo => {
                let mut q = DeltaFifo::new()
                    .with_paged_relists(paged_relists)
                    .with_known_objects(known);
                if let Some(t) = transform {
                    q = q.with_transformer(t);
                }
                Arc::new(q)
            }
        }
    }

    /// Runs the informer until `cancel` fires: starts the handlers' listeners, the reflector
    /// and the process loop, then on cancellation stops them all and waits for every task it
    /// started (reflector, process loop, listeners) before returning. Afterwards the
    /// informer is stopped for good: handlers can no longer be added.
    ///
    /// # Errors
    /// [`InformerError::AlreadyStarted`] if `run` was called before;
    /// [`InformerError::Stopped`] if the informer already stopped.
    ///
    /// # Cancel safety
    /// Stop it through `cancel`. If the future is dropped instead, the tasks it spawned are
    /// told to stop (and do, at their next await point) but are not awaited, and the informer
    /// counts as stopped.
    pub async fn run(&self, cancel: CancellationToken) -> Result<(), InformerError> {
        let inner = &self.inner;
        let (check_period, error_handler) = {
            let mut st = inner.state.lock();
            if st.stopped {
                return Err(InformerError::Stopped);
            }
            if st.started {
                return Err(InformerError::AlreadyStarted);
            }
            st.started = true;
            (st.check_period, st.watch_error_handler.clone())
        };
        let _stop = StopGuard { inner };
        let stop = cancel.child_token();
        let _drop_guard = stop.clone().drop_guard();

        inner.processor.start()?;
        let queue = self.build_queue();
        let consumer = Arc::new(DeltaConsumer::new(
            Arc::clone(&queue),
            Arc::clone(&inner.indexer),
            Arc::clone(&inner.processor),
            Arc::clone(&inner.block_deltas),
            Arc::clone(&inner.synced),
        ));
        let options = ReflectorOptions {
            name: inner.name.clone(),
            resync_period: check_period,
            ..inner.options.reflector.clone()
        };
        let processor = Arc::clone(&inner.processor);
        // The consumer stage is the reflector's output port.
        let mut reflector = Reflector::new(inner.lw.clone(), Arc::clone(&consumer) as _, options)
            .with_should_resync(move || processor.should_resync(Instant::now()));
        let last_error = Arc::clone(&inner.last_error);
        reflector = reflector.with_watch_error_handler(move |e| {
            *last_error.lock() = Some(e.to_string());
            if let Some(h) = &error_handler {
                h(e);
            }
        });
        if let Some(make) = &inner.options.backoff {
            reflector = reflector.with_backoff_manager(make());
        }
        let reflector = Arc::new(reflector);
        {
            let mut st = inner.state.lock();
            st.reflector_stats = Some(reflector.stats());
            st.reflector = Some(Arc::clone(&reflector));
        }

        let tasks = TaskTracker::new();
        let process = ProcessLoop { consumer };
        tasks.spawn(process.run(stop.clone()));
        tasks.spawn({
            let (reflector, stop) = (Arc::clone(&reflector), stop.clone());
            async move {
                if let Err(e) = reflector.run(stop).await {
                    tracing::error!(error = %e, "informer: reflector ended with an error");
                }
            }
        });
        tasks.close();
        tracing::info!(informer = %inner.name, "informer started");

        stop.cancelled().await;
        tasks.wait().await;
        queue.close();
        inner.processor.shutdown().await;
        tracing::info!(informer = %inner.name, "informer stopped");
        Ok(())
    }
}

impl<K> HasSynced for SharedIndexInformer<K>
where
    K: Send + Sync,
{
    /// True once the first list has been applied to the cache and handed to the handlers'
    /// listeners (not necessarily delivered: see the registration's `has_synced`).
    fn has_synced(&self) -> bool {
        self.inner.synced.is_set()
    }

    fn wait_synced(&self) -> BoxFuture<'_, ()> {
        self.inner.synced.wait().boxed()
    }

    /// The last list/watch error the reflector reported (kept after later successes).
    fn last_error(&self) -> Option<String> {
        self.inner.last_error.lock().clone()
    }
}
