//! Fan-out of notifications to every handler's listener.
//!
//! Lock order: the processor's state lock, then a listener's buffer lock. Handlers run with no
//! lock held, so a handler may add or remove handlers or distribute without deadlocking.

use std::sync::Arc;
use std::time::Duration;

use kube_core::Resource;
use parking_lot::RwLock;
use tokio::runtime::Handle;
use tokio::time::Instant;
#[cfg(test)]
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

#[cfg(test)]
use crate::cache::handler::ResourceEventHandler;
use crate::cache::processor::{
    Consumer, ProcessorError, ProcessorListener, ResourceEventHandlerRegistration, ResyncPeriods,
    determine_resync_period,
};
use crate::cache::processor::{Delivery, Notification};
use crate::cache::sync::HasSynced;

#[derive(Debug)]
struct State<K> {
    /// In registration order.
    listeners: Vec<Arc<ProcessorListener<K>>>,
    /// Set by `start`; listeners added afterwards get their task at once.
    runtime: Option<Handle>,
    /// Set by `shutdown`; final.
    stopped: bool,
}

/// Hands every notification to each handler's [`ProcessorListener`]; client-go's
/// `sharedProcessor`.
///
/// - `distribute` never waits for a handler: it appends to each listener's buffer.
/// - A *sync* notification (an update whose old and new objects have the same
///   resourceVersion) goes only to the listeners that [`should_resync`](Self::should_resync)
///   marked as due; every other notification goes to all listeners.
/// - Each listener runs on its own task from [`start`](Self::start) (or
///   [`run`](Self::run)) until it is removed or the processor shuts down;
///   [`shutdown`](Self::shutdown) waits for every such task.
///
/// ```text
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), kinformer::cache::ProcessorError> {
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kinformer::cache::{
///     HasSynced, Notification, ResourceEventHandlerFuncs, ResyncPeriods, SharedProcessor, SyncedFlag,
/// };
///
/// let informer_synced = Arc::new(SyncedFlag::new());
/// let processor = SharedProcessor::<ConfigMap>::new(informer_synced.clone());
/// let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
/// let handler = ResourceEventHandlerFuncs::new().on_add(move |obj: &Arc<ConfigMap>, _| {
///     let _ = tx.send(Arc::clone(obj));
/// });
/// let registration = processor.add_listener(Arc::new(handler), ResyncPeriods::NEVER)?;
/// processor.start()?;
/// processor.distribute(Notification::Add { obj: Arc::new(ConfigMap::default()), is_in_initial_list: true });
/// informer_synced.set();
/// registration.wait_synced().await;
/// assert!(rx.try_recv().is_ok());
/// processor.shutdown().await;
/// # Ok(()) }
/// ```
pub struct SharedProcessor<K> {
    upstream: Arc<dyn HasSynced>,
    state: RwLock<State<K>>,
    tasks: TaskTracker,
}

impl<K> std::fmt::Debug for SharedProcessor<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = self.state.read();
        f.debug_struct("SharedProcessor")
            .field("listeners", &st.listeners.len())
            .field("started", &st.runtime.is_some())
            .field("stopped", &st.stopped)
            .field("tasks", &self.tasks.len())
            .finish_non_exhaustive()
    }
}

impl<K: Send + Sync + 'static> SharedProcessor<K> {
    /// A processor with no listeners; `upstream` is the informer's sync state, which every
    /// registration's `has_synced` includes.
    pub fn new(upstream: Arc<dyn HasSynced>) -> Self {
        Self {
            upstream,
            state: RwLock::new(State {
                listeners: Vec::new(),
                runtime: None,
                stopped: false,
            }),
            tasks: TaskTracker::new(),
        }
    }

    #[cfg(test)]
    /// Adds a listener for `handler` with the given periods (see
    /// [`plan_handler_resync`](super::plan_handler_resync)). If the processor has started,
    /// the listener's task starts at once.
    ///
    /// # Errors
    /// [`ProcessorError::Stopped`] after [`shutdown`](Self::shutdown).
    pub fn add_listener(
        &self,
        handler: Arc<dyn ResourceEventHandler<K>>,
        periods: ResyncPeriods,
    ) -> Result<ResourceEventHandlerRegistration, ProcessorError> {
        self.add_listener_with_initial_list(handler, periods, std::iter::empty())
    }

    #[cfg(test)]
    /// Adds a listener and, before any other notification can reach it, buffers `initial` as
    /// adds with `is_in_initial_list = true`: how an informer that is already running replays
    /// its store to a late handler. The registration's `has_synced` stays false until the
    /// handler has returned from all of them.
    ///
    /// The caller must keep its consumer stage from calling
    /// [`distribute`](Self::distribute) between taking the snapshot `initial` and this call
    /// returning (client-go holds its `blockDeltas` lock).
    ///
    /// # Errors
    /// [`ProcessorError::Stopped`] after [`shutdown`](Self::shutdown).
    pub fn add_listener_with_initial_list(
        &self,
        handler: Arc<dyn ResourceEventHandler<K>>,
        periods: ResyncPeriods,
        initial: impl IntoIterator<Item = Arc<K>>,
    ) -> Result<ResourceEventHandlerRegistration, ProcessorError> {
        self.add_consumer(Consumer::Handler(handler), periods, initial)
    }

    /// [`add_listener_with_initial_list`](Self::add_listener_with_initial_list) for any
    /// [`Consumer`]: a handler or a stream's channel.
    ///
    /// # Errors
    /// [`ProcessorError::Stopped`] after [`shutdown`](Self::shutdown).
    pub(crate) fn add_consumer(
        &self,
        consumer: Consumer<K>,
        periods: ResyncPeriods,
        initial: impl IntoIterator<Item = Arc<K>>,
    ) -> Result<ResourceEventHandlerRegistration, ProcessorError> {
        let mut st = self.state.write();
        if st.stopped {
            return Err(ProcessorError::Stopped);
        }
        let listener = Arc::new(ProcessorListener::new(
            consumer,
            periods,
            Arc::clone(&self.upstream),
        ));
        for obj in initial {
            listener.add(Notification::Add {
                obj,
                is_in_initial_list: true,
            });
        }
        let registration = ResourceEventHandlerRegistration::new(Arc::clone(listener.shared()));
        if let Some(rt) = &st.runtime {
            self.tasks.spawn_on(Arc::clone(&listener).run(), rt);
        }
        st.listeners.push(listener);
        Ok(registration)
    }

    /// Removes the handler of `registration`: nothing more is delivered to it, its buffer is
    /// dropped and its task exits once the current handler call returns (await
    /// [`ResourceEventHandlerRegistration::stopped`] for that). Idempotent: returns false if
    /// it was not (or no longer) registered here.
    pub fn remove_listener(&self, registration: &ResourceEventHandlerRegistration) -> bool {
        let mut st = self.state.write();
        let Some(pos) = st
            .listeners
            .iter()
            .position(|l| l.shared().id == registration.id())
        else {
            return false;
        };
        let listener = st.listeners.remove(pos);
        listener.close();
        true
    }

    /// Number of registered listeners.
    pub fn listener_count(&self) -> usize {
        self.state.read().listeners.len()
    }

    /// Hands `notification` to the listeners; an update with equal old and new
    /// resourceVersions is a sync (see [`is_sync`]) and goes only to the listeners due for a
    /// resync. Never blocks on a handler.
    #[cfg(test)]
    pub fn distribute(&self, notification: Notification<K>)
    where
        K: Resource,
    {
        self.distribute_all(vec![notification]);
    }

    /// Hands `notifications` (in order) to every listener, as [`distribute`](Self::distribute)
    /// would one by one, with one buffer lock and one wake-up per listener: the consumer stage
    /// hands over each popped batch this way (through `distribute_marked`). Sync notifications
    /// go only to the listeners due for a resync.
    #[cfg(test)]
    pub fn distribute_all(&self, notifications: Vec<Notification<K>>)
    where
        K: Resource,
    {
        let delivery = self.distribute_marked(
            notifications
                .into_iter()
                .map(|n| {
                    let sync = is_sync(&n);
                    (n, sync)
                })
                .collect(),
            false,
        );
        debug_assert!(delivery.is_empty(), "nothing was offered");
    }

    /// As [`distribute_all`](Self::distribute_all), with each notification's sync mark
    /// decided by the caller (the consumer stage has it from the indexer, which in compact
    /// storage decides it without reading the old object's metadata).
    ///
    /// With `offer`, the caller offers to deliver to non-blocking handlers on its own task:
    /// the listeners that take the offer are not woken, and the returned [`Delivery`]
    /// delivers to them when the caller runs it, once it holds no lock.
    pub(crate) fn distribute_marked(
        &self,
        batch: Vec<(Notification<K>, bool)>,
        offer: bool,
    ) -> Delivery<K> {
        let mut delivery = Delivery::none();
        if batch.is_empty() {
            return delivery;
        }
        let st = self.state.read();
        let Some((last, rest)) = st.listeners.split_last() else {
            return delivery;
        };
        for listener in rest {
            let syncing = listener.is_syncing();
            let notifications = batch
                .iter()
                .filter(|(_, sync)| syncing || !sync)
                .map(|(n, _)| n.clone());
            if listener.add_all_for(notifications, offer) {
                delivery.push(Arc::clone(listener));
            }
        }
        // The last one takes the originals: one clone fewer per notification.
        let syncing = last.is_syncing();
        let notifications = batch
            .into_iter()
            .filter(|(_, sync)| syncing || !sync)
            .map(|(n, _)| n);
        if last.add_all_for(notifications, offer) {
            delivery.push(Arc::clone(last));
        }
        delivery
    }

    /// Marks which listeners are due for a resync at `now` (client-go's `shouldResync`): due
    /// listeners get the next sync notifications and their next resync is scheduled one
    /// period after `now`; the others are unmarked. Returns true if any listener is due.
    pub fn should_resync(&self, now: Instant) -> bool {
        let st = self.state.write();
        let mut any = false;
        for listener in &st.listeners {
            let due = listener.should_resync(now);
            listener.set_syncing(due);
            if due {
                any = true;
                listener.determine_next_resync(now);
            }
        }
        any
    }

    /// Recomputes every listener's effective period for a new informer check period (after a
    /// handler added before start lowered it).
    pub fn resync_check_period_changed(&self, check_period: Duration) {
        let st = self.state.write();
        for listener in &st.listeners {
            let requested = listener.resync_periods().requested;
            listener.set_effective_resync_period(determine_resync_period(requested, check_period));
        }
    }

    /// Starts every listener's task on the current runtime; listeners added later start at
    /// once. Idempotent while running.
    ///
    /// # Errors
    /// [`ProcessorError::Stopped`] after shutdown; [`ProcessorError::NoRuntime`] outside a
    /// tokio runtime.
    pub fn start(&self) -> Result<(), ProcessorError> {
        let mut st = self.state.write();
        if st.stopped {
            return Err(ProcessorError::Stopped);
        }
        if st.runtime.is_some() {
            return Ok(());
        }
        let rt = Handle::try_current().map_err(|_| ProcessorError::NoRuntime)?;
        for listener in &st.listeners {
            self.tasks.spawn_on(Arc::clone(listener).run(), &rt);
        }
        st.runtime = Some(rt);
        Ok(())
    }

    /// True between [`start`](Self::start) and [`shutdown`](Self::shutdown).
    #[cfg(test)]
    pub fn is_started(&self) -> bool {
        let st = self.state.read();
        st.runtime.is_some() && !st.stopped
    }

    /// True after [`shutdown`](Self::shutdown).
    #[cfg(test)]
    pub fn is_stopped(&self) -> bool {
        self.state.read().stopped
    }

    /// Starts the listeners, waits for `cancel`, then shuts down; client-go's
    /// `sharedProcessor.run`.
    ///
    /// # Errors
    /// As [`start`](Self::start).
    ///
    /// # Cancel safety
    /// Dropping the future before `cancel` fires leaves the listeners running; call
    /// [`shutdown`](Self::shutdown) to stop them.
    #[cfg(test)]
    pub async fn run(&self, cancel: CancellationToken) -> Result<(), ProcessorError> {
        self.start()?;
        cancel.cancelled().await;
        self.shutdown().await;
        Ok(())
    }

    /// Stops for good: closes every listener (undelivered notifications are dropped) and waits
    /// until every listener task has exited, i.e. until each handler's current call returned.
    /// Later `add_listener` and `start` calls fail with [`ProcessorError::Stopped`].
    ///
    /// # Cancel safety
    /// Cancel safe: the listeners are closed at the first poll; a dropped future only stops
    /// waiting, and calling `shutdown` again waits again.
    pub async fn shutdown(&self) {
        {
            let mut st = self.state.write();
            st.stopped = true;
            for listener in st.listeners.drain(..) {
                listener.close();
            }
        }
        self.tasks.close();
        self.tasks.wait().await;
    }

    /// Listener tasks currently alive.
    #[cfg(any(test, feature = "testing"))]
    pub fn running_tasks(&self) -> usize {
        self.tasks.len()
    }
}

impl<K> Drop for SharedProcessor<K> {
    /// Closes every listener so that no task outlives the processor (they exit on their own;
    /// use [`shutdown`](SharedProcessor::shutdown) to wait for them).
    fn drop(&mut self) {
        for listener in self.state.get_mut().listeners.drain(..) {
            listener.close();
        }
    }
}

/// True for an update whose old and new objects carry the same resourceVersion (both absent
/// counts as equal, as client-go compares empty strings): a resync, not a change.
pub fn is_sync<K: Resource>(notification: &Notification<K>) -> bool {
    match notification {
        Notification::Update { old, new } => {
            old.meta().resource_version.as_deref().unwrap_or_default()
                == new.meta().resource_version.as_deref().unwrap_or_default()
        }
        _ => false,
    }
}
