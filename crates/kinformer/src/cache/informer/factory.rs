//! [`SharedInformerFactory`]: one shared informer per (type, namespace, selectors), started
//! and stopped together.
//!
//! Properties:
//! - *Shared*: asking twice for the same type, namespace and selectors returns the same
//!   informer, so every controller in a process shares one list/watch and one cache.
//! - *Start is incremental*: [`start`](SharedInformerFactory::start) runs every informer not
//!   yet started; informers asked for later are started by the next call.
//! - *No polling*: [`wait_for_cache_sync`](SharedInformerFactory::wait_for_cache_sync) awaits
//!   the informers' sync notifications.
//! - *Clean shutdown*: [`shutdown`](SharedInformerFactory::shutdown) stops every informer and
//!   waits until each has stopped all its tasks.

use std::any::{Any, TypeId};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::time::Duration;

use futures::future::{BoxFuture, FutureExt};
use kube_core::Resource;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::cache::informer::{InformerError, InformerOptions, SharedIndexInformer, Storage};
use crate::cache::listwatch::Selectors;
use crate::cache::sync::wait_named_for_cache_sync;
use crate::cache::sync::{CacheSyncTimeout, HasSynced};

/// What identifies one shared informer.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct FactoryKey {
    type_id: TypeId,
    resource: String,
    namespace: Option<String>,
    selectors: Selectors,
}

impl FactoryKey {
    /// The key of the informer of type `K` for `resource` in `namespace` with `selectors`.
    pub(crate) fn of<K: 'static>(
        resource: String,
        namespace: Option<String>,
        selectors: Selectors,
    ) -> Self {
        Self {
            type_id: TypeId::of::<K>(),
            resource,
            namespace,
            selectors,
        }
    }
}

/// An informer with its type erased, as the factory runs it.
trait ErasedInformer: HasSynced {
    fn run_boxed(&self, cancel: CancellationToken)
    -> BoxFuture<'static, Result<(), InformerError>>;
    fn clone_erased(&self) -> Box<dyn ErasedInformer>;
}

impl<K: Resource + Send + Sync + 'static> ErasedInformer for SharedIndexInformer<K> {
    fn clone_erased(&self) -> Box<dyn ErasedInformer> {
        Box::new(self.clone())
    }
    fn run_boxed(
        &self,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<(), InformerError>> {
        let me = self.clone();
        async move { me.run(cancel).await }.boxed()
    }
}

struct Entry {
    name: String,
    /// The `SharedIndexInformer<K>` (for typed look-ups).
    typed: Box<dyn Any + Send + Sync>,
    runner: Box<dyn ErasedInformer>,
    started: bool,
}

#[derive(Default)]
struct FactoryState {
    informers: HashMap<FactoryKey, Entry>,
    shutting_down: bool,
}

/// Shares informers between the controllers of one process; client-go's
/// `SharedInformerFactory`.
///
/// The defaults (namespace, resync period, selectors — client-go's `WithNamespace`,
/// `defaultResync`, `WithTweakListOptions`) apply to every informer the factory creates.
///
/// The source is the in-memory `FakeListerWatcher` of the `testing` feature
/// (`kinformer::cache::testing`).
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap().block_on(async {
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kinformer::cache::testing::FakeListerWatcher;
/// use kinformer::cache::{SharedIndexInformer, SharedInformerFactory};
/// use tokio_util::sync::CancellationToken;
///
/// let factory = SharedInformerFactory::without_client();
/// let lw = FakeListerWatcher::<ConfigMap>::new();
/// let a = factory.informer_for("configmaps", |opts| SharedIndexInformer::new(lw.clone(), opts));
/// let b = factory.informer_for("configmaps", |opts| SharedIndexInformer::new(lw.clone(), opts));
/// assert!(a.ptr_eq(&b), "one informer per type and resource");
///
/// let cancel = CancellationToken::new();
/// factory.start(&cancel);
/// let synced = factory.wait_for_cache_sync(&cancel).await;
/// assert!(synced.values().all(|s| *s));
/// factory.shutdown().await;
/// assert!(a.is_stopped());
/// # });
/// ```
pub struct SharedInformerFactory<C> {
    /// What the factory builds list/watch sources from: `()` for a factory whose informers
    /// come only from [`informer_for`](Self::informer_for), a `kube::Client` for one that
    /// builds them itself (`kinformer::kube::KubeClient`, made by `SharedInformerFactory::new`,
    /// feature `kube`).
    client: C,
    namespace: Option<String>,
    default_resync: Duration,
    selectors: Selectors,
    /// Per object type: the `Storage<K>` its informers use (typed when absent).
    storages: HashMap<TypeId, Box<dyn Any + Send + Sync>>,
    state: Mutex<FactoryState>,
    stop: CancellationToken,
    tasks: TaskTracker,
}

impl<C> fmt::Debug for SharedInformerFactory<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.state.lock();
        let names: Vec<&str> = st.informers.values().map(|e| e.name.as_str()).collect();
        f.debug_struct("SharedInformerFactory")
            .field("namespace", &self.namespace)
            .field("default_resync", &self.default_resync)
            .field("selectors", &self.selectors)
            .field("informers", &names)
            .field("shutting_down", &st.shutting_down)
            .finish_non_exhaustive()
    }
}

impl Default for SharedInformerFactory<()> {
    fn default() -> Self {
        Self::without_client()
    }
}

impl SharedInformerFactory<()> {
    /// A factory without a client: informers come from
    /// [`informer_for`](Self::informer_for) with any
    /// [`ListerWatcher`](crate::cache::listwatch::ListerWatcher).
    pub fn without_client() -> Self {
        Self::with_client(())
    }
}

impl<C> SharedInformerFactory<C> {
    /// A factory whose informers are built from `client` (by the constructors of the
    /// client's module, such as `SharedInformerFactory::new` for a `kube::Client`).
    pub(crate) fn with_client(client: C) -> Self {
        Self {
            client,
            namespace: None,
            default_resync: Duration::ZERO,
            selectors: Selectors::default(),
            storages: HashMap::new(),
            state: Mutex::new(FactoryState::default()),
            stop: CancellationToken::new(),
            tasks: TaskTracker::new(),
        }
    }

    /// Restricts namespaced informers to one namespace (default: all).
    #[must_use]
    pub fn with_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// The default resync period of the informers (default: zero, no resync).
    #[must_use]
    pub fn with_default_resync(mut self, period: Duration) -> Self {
        self.default_resync = period;
        self
    }

    /// Label and field selectors for every list and watch (client-go's tweak of the list
    /// options).
    #[must_use]
    pub fn with_selectors(mut self, selectors: Selectors) -> Self {
        self.selectors = selectors;
        self
    }

    /// Keeps the objects of every informer of type `K` this factory creates in `storage`
    /// (informers of other types stay typed unless given their own).
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::Pod;
    /// use kinformer::cache::store::CompactOptions;
    /// use kinformer::cache::{Lazy, SharedInformerFactory, Storage};
    ///
    /// let factory = SharedInformerFactory::without_client()
    ///     .with_storage::<Lazy<Pod>>(Storage::compact(CompactOptions::default()));
    /// assert!(factory.storage::<Lazy<Pod>>().is_compact());
    /// assert!(!factory.storage::<Pod>().is_compact());
    /// ```
    #[must_use]
    pub fn with_storage<K: Send + Sync + 'static>(mut self, storage: Storage<K>) -> Self {
        self.storages.insert(TypeId::of::<K>(), Box::new(storage));
        self
    }

    /// The storage informers of type `K` get.
    pub fn storage<K: Send + Sync + 'static>(&self) -> Storage<K> {
        self.storages
            .get(&TypeId::of::<K>())
            .and_then(|s| s.downcast_ref::<Storage<K>>())
            .cloned()
            .unwrap_or_default()
    }

    /// The namespace informers are restricted to, if any.
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// The default resync period.
    pub fn default_resync(&self) -> Duration {
        self.default_resync
    }

    /// The selectors applied to every list and watch.
    pub fn selectors(&self) -> &Selectors {
        &self.selectors
    }

    /// The informer of type `K` registered under `resource` (with this factory's namespace
    /// and selectors), created by `make` on first use. `make` receives options named after
    /// `resource` with the default resync period, and builds the informer over its own
    /// [`ListerWatcher`](crate::cache::listwatch::ListerWatcher) (which should apply the factory's namespace and
    /// selectors). client-go's `InformerFor`.
    pub fn informer_for<K>(
        &self,
        resource: &str,
        make: impl FnOnce(InformerOptions<K>) -> SharedIndexInformer<K>,
    ) -> SharedIndexInformer<K>
    where
        K: Resource + Send + Sync + 'static,
    {
        let key = FactoryKey::of::<K>(
            resource.to_owned(),
            self.namespace.clone(),
            self.selectors.clone(),
        );
        self.informer_keyed(key, make)
    }

    /// The client informers are built from.
    #[cfg(feature = "kube")]
    pub(crate) fn client(&self) -> &C {
        &self.client
    }

    /// The client, to change its settings while the factory is being built.
    #[cfg_attr(not(feature = "kube"), allow(dead_code))]
    pub(crate) fn client_mut(&mut self) -> &mut C {
        &mut self.client
    }

    pub(crate) fn informer_keyed<K>(
        &self,
        key: FactoryKey,
        make: impl FnOnce(InformerOptions<K>) -> SharedIndexInformer<K>,
    ) -> SharedIndexInformer<K>
    where
        K: Resource + Send + Sync + 'static,
    {
        let mut st = self.state.lock();
        if let Some(existing) = st
            .informers
            .get(&key)
            .and_then(|e| e.typed.downcast_ref::<SharedIndexInformer<K>>())
        {
            return existing.clone();
        }
        let name = describe(&key);
        let options = InformerOptions::new(name.clone())
            .with_resync_period(self.default_resync)
            .with_storage(self.storage::<K>());
        let informer = make(options);
        st.informers.insert(
            key,
            Entry {
                name,
                typed: Box::new(informer.clone()),
                runner: Box::new(informer.clone()),
                started: false,
            },
        );
        informer
    }

    /// Starts every informer not started yet, each on its own task, until `cancel` fires or
    /// [`shutdown`](Self::shutdown) is called. Does nothing once shutting down.
    pub fn start(&self, cancel: &CancellationToken) {
        let mut st = self.state.lock();
        if st.shutting_down {
            return;
        }
        for entry in st.informers.values_mut().filter(|e| !e.started) {
            entry.started = true;
            let run = entry.runner.run_boxed(self.stop.child_token());
            let (stop, cancel, name) = (self.stop.clone(), cancel.clone(), entry.name.clone());
            self.tasks.spawn(async move {
                // `run` stops when `stop` fires; a cancelled `cancel` triggers it.
                let relay = async {
                    cancel.cancelled().await;
                    stop.cancel();
                };
                tokio::select! {
                    r = run => {
                        if let Err(e) = r {
                            tracing::error!(informer = %name, error = %e, "informer did not run");
                        }
                    }
                    () = relay => {}
                }
            });
        }
    }

    /// Waits until every started informer has synced, or `cancel` fires. Returns each started
    /// informer's name with whether it synced.
    ///
    /// # Cancel safety
    /// Cancel-safe: it only waits.
    pub async fn wait_for_cache_sync(&self, cancel: &CancellationToken) -> BTreeMap<String, bool> {
        let started = self.started_informers();
        let mut out = BTreeMap::new();
        for (name, informer) in started {
            if !cancel.is_cancelled() {
                tokio::select! {
                    biased;
                    () = informer.wait_synced() => {}
                    () = cancel.cancelled() => {}
                }
            }
            out.insert(name, informer.has_synced());
        }
        out
    }

    /// Waits at most `timeout` for every started informer to sync.
    ///
    /// Use it where a program must not hang on an unreachable or refusing server: the error
    /// names the informers that did not sync and the last list/watch error one of them saw.
    ///
    /// # Errors
    /// [`CacheSyncTimeout`] after `timeout`.
    ///
    /// # Cancel safety
    /// Cancel safe: it only waits.
    pub async fn wait_for_cache_sync_timeout(
        &self,
        timeout: Duration,
    ) -> Result<(), CacheSyncTimeout> {
        let started = self.started_informers();
        let named = started
            .iter()
            .map(|(n, i)| {
                let informer: &dyn ErasedInformer = i.as_ref();
                (n.clone(), informer as &dyn HasSynced)
            })
            .collect();
        wait_named_for_cache_sync(timeout, named).await
    }

    /// The informers started so far, with their names.
    fn started_informers(&self) -> Vec<(String, Box<dyn ErasedInformer>)> {
        let st = self.state.lock();
        st.informers
            .values()
            .filter(|e| e.started)
            .map(|e| (e.name.clone(), e.runner.clone_erased()))
            .collect()
    }

    /// Stops every informer and waits until all of them (and their tasks) have ended.
    /// Informers created afterwards are never started.
    ///
    /// # Cancel safety
    /// Dropping the future stops waiting; the informers still stop.
    pub async fn shutdown(&self) {
        self.state.lock().shutting_down = true;
        self.stop.cancel();
        self.tasks.close();
        self.tasks.wait().await;
    }

    /// The names of the informers created so far, sorted.
    pub fn informer_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .state
            .lock()
            .informers
            .values()
            .map(|e| e.name.clone())
            .collect();
        names.sort();
        names
    }
}

fn describe(key: &FactoryKey) -> String {
    let mut name = key.resource.clone();
    if let Some(ns) = &key.namespace
        && !name.contains("/namespaces/")
    {
        name.push_str(&format!(" in {ns}"));
    }
    if let Some(l) = &key.selectors.label_selector {
        name.push_str(&format!(" labels={l}"));
    }
    if let Some(f) = &key.selectors.field_selector {
        name.push_str(&format!(" fields={f}"));
    }
    name
}
