//! Settings of a shared informer: resync, indexers, transform, queue kind, list/watch knobs.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::cache::informer::Storage;
use crate::cache::reflector::ReflectorOptions;
use crate::cache::store::{Indexers, TransformFunc};
use crate::wait::BackoffManager;

/// Builds the reflector's backoff manager each time the informer runs.
pub type BackoffFactory = Arc<dyn Fn() -> Box<dyn BackoffManager> + Send + Sync>;

/// Which delta queue the informer's consumer stage orders its changes in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum QueueKind {
    /// [`RealFifo`](crate::cache::fifo::RealFifo) with atomic replace and resync: every delta in
    /// arrival order, one `ReplacedAll` per relist (client-go's current default).
    #[default]
    RealFifo,
    /// [`DeltaFifo`](crate::cache::fifo::DeltaFifo): one slot per key with its deltas, relist
    /// objects as `Replaced` (client-go's legacy queue).
    DeltaFifo,
}

/// How to build a [`SharedIndexInformer`](super::SharedIndexInformer): the cache's and the
/// queue's settings, and the reflector's list/watch settings embedded as
/// [`reflector`](Self::reflector).
///
/// Selectors usually belong to the
/// [`ListerWatcher`](crate::cache::listwatch::ListerWatcher) (e.g.
/// [`KubeListerWatcher::labels`](crate::kube::KubeListerWatcher::labels));
/// `reflector.selectors`, when set, are asked for in every list and watch (a
/// `KubeListerWatcher` lets them override its own).
///
/// ```
/// use std::time::Duration;
/// use k8s_openapi::api::core::v1::Pod;
/// use kinformer::cache::{InformerOptions, QueueKind};
/// use kinformer::cache::store::{NAMESPACE_INDEX, namespace_index_func};
///
/// let options = InformerOptions::<Pod>::new("pods")
///     .with_resync_period(Duration::from_secs(30))
///     .with_indexer(NAMESPACE_INDEX, namespace_index_func())
///     .with_queue(QueueKind::DeltaFifo)
///     .with_watch_list(false);
/// assert_eq!(options.resync_period, Duration::from_secs(30));
/// ```
pub struct InformerOptions<K> {
    /// Name used in logs (and by the reflector).
    pub name: String,
    /// The default handler resync period, which is also the resync check period; zero (the
    /// default) disables resync unless a handler asks for one before the start.
    pub resync_period: Duration,
    /// Index functions the indexer starts with.
    pub indexers: Indexers<K>,
    /// Transform applied once to every incoming object before it is queued and stored.
    pub transform: Option<TransformFunc<K>>,
    /// How the cache keeps objects: typed (the default) or compact.
    pub storage: Storage<K>,
    /// The delta queue.
    pub queue: QueueKind,
    /// The reflector's list/watch settings: watch-list (default on), page size (client-go's
    /// rules by default), minimum watch timeout, selectors, internal-error retries. The
    /// informer sets their `name` to [`name`](Self::name) and their `resync_period` to its
    /// resync check period (computed from its handlers' periods), whatever they hold.
    pub reflector: ReflectorOptions,
    /// `false` (the default): a relist streams into the cache as the first list does: each
    /// page (or part of a response that streams in) is applied as it arrives, new and changed
    /// objects at once, and what the list no longer holds is deleted at its end; the informer
    /// holds its cache and a window of the list, never a second copy of it. Handlers get the
    /// same notifications as with an atomic relist; the deletes come after the list's updates
    /// instead of before them, and readers of the cache can see a mix of old and new objects
    /// while the relist runs (each object is one or the other). A relist that fails midway
    /// leaves what it applied; the next list deletes whatever it does not list again.
    ///
    /// `true`: a relist is gathered whole and applied in one atomic replace (client-go's
    /// behaviour; with [`QueueKind::RealFifo`] one `ReplacedAll`): readers see the old
    /// content or the new, never a mix, at the cost of holding the whole list beside the
    /// cache while it arrives.
    pub atomic_relists: bool,
    /// The reflector's backoff between failed list/watch attempts; `None` (the default) is
    /// client-go's 800 ms doubling to 30 s, reset after 2 minutes of quiet. Set it to retry
    /// sooner against a local server, or to back off further from a struggling one.
    pub backoff: Option<BackoffFactory>,
}

impl<K> Default for InformerOptions<K> {
    fn default() -> Self {
        Self {
            name: "informer".to_owned(),
            resync_period: Duration::ZERO,
            indexers: Indexers::new(),
            transform: None,
            storage: Storage::typed(),
            queue: QueueKind::default(),
            reflector: ReflectorOptions::default(),
            atomic_relists: false,
            backoff: None,
        }
    }
}

impl<K> Clone for InformerOptions<K> {
    fn clone(&self) -> Self {
        Self {
            name: self.name.clone(),
            resync_period: self.resync_period,
            indexers: self.indexers.clone(),
            transform: self.transform.clone(),
            storage: self.storage.clone(),
            queue: self.queue,
            reflector: self.reflector.clone(),
            atomic_relists: self.atomic_relists,
            backoff: self.backoff.clone(),
        }
    }
}

impl<K> fmt::Debug for InformerOptions<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<&str> = self.indexers.keys().map(String::as_str).collect();
        names.sort_unstable();
        f.debug_struct("InformerOptions")
            .field("name", &self.name)
            .field("resync_period", &self.resync_period)
            .field("indexers", &names)
            .field("transform", &self.transform.is_some())
            .field("storage", &self.storage)
            .field("queue", &self.queue)
            .field("reflector", &self.reflector)
            .field("atomic_relists", &self.atomic_relists)
            .field("backoff", &self.backoff.is_some())
            .finish()
    }
}

impl<K> InformerOptions<K> {
    /// Defaults with this name.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ..Self::default()
        }
    }

    /// Sets the default handler resync period (and check period).
    #[must_use]
    pub fn with_resync_period(mut self, period: Duration) -> Self {
        self.resync_period = period;
        self
    }

    /// Adds one index function.
    #[must_use]
    pub fn with_indexer(
        mut self,
        name: impl Into<String>,
        f: crate::cache::store::IndexFunc<K>,
    ) -> Self {
        self.indexers.insert(name.into(), f);
        self
    }

    /// Sets the transform.
    #[must_use]
    pub fn with_transform(mut self, transform: TransformFunc<K>) -> Self {
        self.transform = Some(transform);
        self
    }

    /// Selects the cache's storage ([`Storage::typed`] or [`Storage::compact`]).
    #[must_use]
    pub fn with_storage(mut self, storage: Storage<K>) -> Self {
        self.storage = storage;
        self
    }

    /// Selects the delta queue.
    #[must_use]
    pub fn with_queue(mut self, queue: QueueKind) -> Self {
        self.queue = queue;
        self
    }

    /// Replaces the reflector's list/watch settings (see [`reflector`](Self::reflector)).
    #[must_use]
    pub fn with_reflector(mut self, reflector: ReflectorOptions) -> Self {
        self.reflector = reflector;
        self
    }

    /// Turns watch-list on or off (in [`reflector`](Self::reflector)).
    #[must_use]
    pub fn with_watch_list(mut self, on: bool) -> Self {
        self.reflector.use_watch_list = on;
        self
    }

    /// Replaces the reflector's backoff manager (see [`backoff`](Self::backoff)): `make` is
    /// called once per run, e.g. to build an
    /// [`ExponentialBackoffManager`](crate::wait::ExponentialBackoffManager) with other
    /// durations.
    #[must_use]
    pub fn with_backoff(
        mut self,
        make: impl Fn() -> Box<dyn BackoffManager> + Send + Sync + 'static,
    ) -> Self {
        self.backoff = Some(Arc::new(make));
        self
    }

    /// Sets an explicit list page size (in [`reflector`](Self::reflector)).
    #[must_use]
    pub fn with_page_size(mut self, size: u32) -> Self {
        self.reflector.page_size = Some(size);
        self
    }

    /// Makes relists atomic (see [`atomic_relists`](Self::atomic_relists)); they stream by
    /// default.
    #[must_use]
    pub fn with_atomic_relists(mut self, on: bool) -> Self {
        self.atomic_relists = on;
        self
    }
}
