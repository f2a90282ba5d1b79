//! One handler's listener: a growing buffer in front of the handler, drained by its own task.
//!
//! Properties:
//! - [`add`](ProcessorListener::add) never blocks and never waits for the handler: it appends
//!   to a ring buffer (a `VecDeque`) that starts at [`INITIAL_BUFFER_SIZE`] slots, doubles when
//!   full and never shrinks — as client-go's `buffer.RingGrowing`. A slow handler only grows its
//!   own buffer; the registration's `pending` and `buffer_capacity` make that visible.
//! - A listener delivers to a handler (called on its task) or into a bounded channel (an
//!   informer's event stream): it then waits while the channel is full, so a slow stream
//!   consumer, like a slow handler, grows only this listener's buffer.
//! - Notifications reach the handler in the order they were added, one at a time.
//! - The task delivers in turns: each turn delivers what was buffered when it began (for at
//!   most about 2 ms), then yields its worker thread. So a listener keeps pace with a
//!   producer that buffers a whole batch per turn, and a long backlog does not hog a thread.
//! - A panicking handler is caught and logged; the listener goes on with the next
//!   notification. (An initial add counts as delivered even if the handler panicked on it.)
//! - Once delivered, an update's old object and a deleted object go to the indexer's dropping
//!   thread (dropped there if nothing else holds them), so freeing a large object does not
//!   hold up the next notification.
//! - Once closed (handler removed, processor stopped) the buffer is dropped: notifications not
//!   yet delivered are discarded, as in client-go. The task exits after the handler's current
//!   call returns.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::{Notify, mpsc};
use tokio::time::Instant;

use crate::cache::give_way::give_way;
use crate::cache::handler::ResourceEventHandler;
use crate::cache::processor::Notification;
use crate::cache::processor::ResyncPeriods;
use crate::cache::sync::{HasSynced, SingleFileTracker, SyncedFlag};

/// Where a listener delivers its notifications.
pub(crate) enum Consumer<K> {
    /// A handler, called on the listener's task.
    Handler(Arc<dyn ResourceEventHandler<K>>),
    /// A bounded channel (an informer's event stream), sent into from the listener's task.
    Channel(mpsc::Sender<Notification<K>>),
}

fn is_initial<K>(notification: &Notification<K>) -> bool {
    matches!(
        notification,
        Notification::Add {
            is_in_initial_list: true,
            ..
        }
    )
}

/// Slots a listener's buffer starts with (client-go's `initialBufferSize`).
pub const INITIAL_BUFFER_SIZE: usize = 1024;

static NEXT_LISTENER_ID: AtomicU64 = AtomicU64::new(1);

/// The part of a listener a registration keeps: identity, sync tracking and metrics. Free of
/// the object type, so registrations are not generic.
#[derive(Debug)]
pub(crate) struct ListenerShared {
    pub(crate) id: u64,
    pub(crate) tracker: SingleFileTracker,
    /// Mirrors the buffer length (updated under the buffer lock).
    pending: AtomicUsize,
    /// Mirrors the buffer capacity (updated under the buffer lock).
    capacity: AtomicUsize,
    /// Notifications handed to the handler so far.
    delivered: AtomicU64,
    /// Set once the listener is closed.
    closed: AtomicBool,
    /// Set once the listener's task has exited (or at close, if it never had one).
    pub(crate) stopped: SyncedFlag,
}

impl ListenerShared {
    pub(crate) fn pending(&self) -> usize {
        self.pending.load(Ordering::Relaxed)
    }

    pub(crate) fn capacity(&self) -> usize {
        self.capacity.load(Ordering::Relaxed)
    }

    pub(crate) fn delivered(&self) -> u64 {
        self.delivered.load(Ordering::Relaxed)
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }
}

#[derive(Debug)]
struct Buffer<K> {
    /// Invariant: empty once `closed`.
    queue: VecDeque<Notification<K>>,
    closed: bool,
    /// True once a task was spawned for this listener; at most one ever is.
    task_spawned: bool,
}

#[derive(Debug)]
struct ResyncState {
    periods: ResyncPeriods,
    next_resync: Instant,
}

/// Sets the flag when dropped: the task has ended, however it ended.
struct MarkStopped<'a>(&'a SyncedFlag);

impl Drop for MarkStopped<'_> {
    fn drop(&mut self) {
        self.0.set();
    }
}

/// Buffers notifications for one handler and delivers them from its own task; client-go's
/// `processorListener`.
///
/// Usually created by `SharedProcessor::add_listener`; usable alone:
///
/// ```text
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use std::sync::{Arc, Mutex};
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kinformer::cache::{Notification, ProcessorListener, ResourceEventHandlerFuncs, ResyncPeriods, SyncedFlag};
///
/// let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
/// let handler = ResourceEventHandlerFuncs::<ConfigMap>::new()
///     .on_add(move |obj, _| { let _ = tx.send(Arc::clone(obj)); });
/// let listener = Arc::new(ProcessorListener::new(
///     Arc::new(handler), ResyncPeriods::NEVER, Arc::new(SyncedFlag::new_set()),
/// ));
/// listener.add(Notification::Add { obj: Arc::new(ConfigMap::default()), is_in_initial_list: true });
/// assert_eq!(listener.pending(), 1);
/// let task = tokio::spawn(Arc::clone(&listener).run());
/// rx.recv().await.unwrap();
/// listener.close();
/// task.await.unwrap();
/// # }
/// ```
pub struct ProcessorListener<K> {
    consumer: Consumer<K>,
    buffer: Mutex<Buffer<K>>,
    /// Wakes the task after an add or a close (`notify_one` keeps a permit if it is busy).
    wake: Notify,
    shared: Arc<ListenerShared>,
    resync: Mutex<ResyncState>,
    /// Whether the current resync round includes this listener (see
    /// `SharedProcessor::should_resync`).
    syncing: AtomicBool,
}

impl<K> std::fmt::Debug for ProcessorListener<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessorListener")
            .field("id", &self.shared.id)
            .field("pending", &self.shared.pending())
            .field("buffer_capacity", &self.shared.capacity())
            .field("closed", &self.shared.is_closed())
            .finish_non_exhaustive()
    }
}

impl<K> ProcessorListener<K> {
    /// A listener for `handler` with the given resync periods; `upstream` is what its
    /// registration's `has_synced` waits for besides the initial adds (the informer).
    ///
    /// The first resync falls due one effective period from now.
    pub fn new(
        consumer: Consumer<K>,
        periods: ResyncPeriods,
        upstream: Arc<dyn HasSynced>,
    ) -> Self {
        let queue = VecDeque::with_capacity(INITIAL_BUFFER_SIZE);
        let shared = Arc::new(ListenerShared {
            id: NEXT_LISTENER_ID.fetch_add(1, Ordering::Relaxed),
            tracker: SingleFileTracker::new(upstream),
            pending: AtomicUsize::new(0),
            capacity: AtomicUsize::new(queue.capacity()),
            delivered: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            stopped: SyncedFlag::new(),
        });
        Self {
            consumer,
            buffer: Mutex::new(Buffer {
                queue,
                closed: false,
                task_spawned: false,
            }),
            wake: Notify::new(),
            shared,
            resync: Mutex::new(ResyncState {
                periods,
                next_resync: Instant::now() + periods.effective,
            }),
            syncing: AtomicBool::new(false),
        }
    }

    pub(crate) fn shared(&self) -> &Arc<ListenerShared> {
        &self.shared
    }

    /// Buffers `notification` for the handler. Never blocks on the handler; a no-op once the
    /// listener is closed. An initial add (`is_in_initial_list`) is counted as pending for
    /// `has_synced` until the handler returns from it.
    pub fn add(&self, notification: Notification<K>) {
        self.add_all(std::iter::once(notification));
    }

    /// Buffers `notifications` in order, as [`add`](Self::add) would one by one, under one
    /// lock and with one wake-up of the handler's task.
    pub fn add_all(&self, notifications: impl IntoIterator<Item = Notification<K>>) {
        {
            let mut buf = self.buffer.lock();
            if buf.closed {
                return;
            }
            let mut added = false;
            for notification in notifications {
                added = true;
                self.push(&mut buf, notification);
            }
            if !added {
                return;
            }
            self.shared
                .pending
                .store(buf.queue.len(), Ordering::Relaxed);
        }
        self.wake.notify_one();
    }

    /// Appends one notification to the open buffer.
    fn push(&self, buf: &mut Buffer<K>, notification: Notification<K>) {
        {
            if matches!(
                notification,
                Notification::Add {
                    is_in_initial_list: true,
                    ..
                }
            ) {
                self.shared.tracker.start();
            }
            if buf.queue.len() == buf.queue.capacity() {
                // Double, as a growing ring buffer does; the buffer never shrinks.
                let grow = buf.queue.capacity().max(1);
                buf.queue.reserve_exact(grow);
                self.shared
                    .capacity
                    .store(buf.queue.capacity(), Ordering::Relaxed);
            }
            buf.queue.push_back(notification);
        }
    }

    /// Closes the listener: buffered notifications are dropped, later adds ignored, and the
    /// task (if running) exits once the handler's current call returns. Idempotent.
    pub fn close(&self) {
        {
            let mut buf = self.buffer.lock();
            if buf.closed {
                return;
            }
            buf.closed = true;
            buf.queue = VecDeque::new();
            self.shared.pending.store(0, Ordering::Relaxed);
            self.shared.closed.store(true, Ordering::Release);
            if !buf.task_spawned {
                self.shared.stopped.set();
            }
        }
        self.wake.notify_one();
    }

    /// Claims the right to run the task; false if closed or already claimed.
    fn claim_task(&self) -> bool {
        let mut buf = self.buffer.lock();
        if buf.closed || buf.task_spawned {
            return false;
        }
        buf.task_spawned = true;
        true
    }

    /// Delivers buffered notifications to the handler until the listener is closed.
    ///
    /// Run it on a task of its own (`SharedProcessor` does). Only the first call runs; later
    /// calls, and calls after [`close`](ProcessorListener::close), return at once.
    ///
    /// # Cancel safety
    /// Dropping the future stops delivery; buffered notifications stay buffered and a new
    /// `run` is refused, so drop only to abandon the listener (close it instead).
    pub async fn run(self: Arc<Self>)
    where
        K: Send + Sync + 'static,
    {
        if !self.claim_task() {
            return;
        }
        let _stopped = MarkStopped(&self.shared.stopped);
        let mut turn = Turn::default();
        loop {
            let next = {
                let mut buf = self.buffer.lock();
                if buf.closed {
                    return;
                }
                turn.begin(buf.queue.len());
                let next = buf.queue.pop_front();
                self.shared
                    .pending
                    .store(buf.queue.len(), Ordering::Relaxed);
                next
            };
            match (next, &self.consumer) {
                (Some(notification), Consumer::Handler(handler)) => {
                    self.dispatch(handler.as_ref(), notification);
                    if turn.delivered() {
                        give_way().await;
                    }
                }
                (Some(notification), Consumer::Channel(tx)) => {
                    let initial = is_initial(&notification);
                    if tx.send(notification).await.is_err() {
                        // The stream is gone: nothing will read again.
                        self.close();
                        return;
                    }
                    self.shared.delivered.fetch_add(1, Ordering::Relaxed);
                    if initial {
                        self.shared.tracker.finish();
                    }
                }
                (None, _) => self.wake.notified().await,
            }
        }
    }

    fn dispatch(&self, handler: &dyn ResourceEventHandler<K>, notification: Notification<K>)
    where
        K: Send + Sync + 'static,
    {
        let initial = is_initial(&notification);
        let outcome = catch_unwind(AssertUnwindSafe(|| match &notification {
            Notification::Add {
                obj,
                is_in_initial_list,
            } => handler.on_add(obj, *is_in_initial_list),
            Notification::Update { old, new } => handler.on_update(old, new),
            Notification::Delete(obj) => handler.on_delete(obj),
        }));
        self.shared.delivered.fetch_add(1, Ordering::Relaxed);
        if let Err(payload) = outcome {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "non-string panic payload".to_owned());
            tracing::error!(
                listener = self.shared.id,
                panic = %message,
                "event handler panicked; the notification is skipped"
            );
        }
        if initial {
            self.shared.tracker.finish();
        }
        notification.retire();
    }

    /// This listener's resync periods.
    pub fn resync_periods(&self) -> ResyncPeriods {
        self.resync.lock().periods
    }

    /// Recomputes the effective period after the informer's check period changed.
    pub(crate) fn set_effective_resync_period(&self, effective: Duration) {
        self.resync.lock().periods.effective = effective;
    }

    /// True if a resync is due at `now` (never for a zero period).
    pub fn should_resync(&self, now: Instant) -> bool {
        let st = self.resync.lock();
        !st.periods.effective.is_zero() && now >= st.next_resync
    }

    /// Schedules the next resync one period after `now`.
    pub fn determine_next_resync(&self, now: Instant) {
        let mut st = self.resync.lock();
        st.next_resync = now + st.periods.effective;
    }

    pub(crate) fn set_syncing(&self, syncing: bool) {
        self.syncing.store(syncing, Ordering::Release);
    }

    pub(crate) fn is_syncing(&self) -> bool {
        self.syncing.load(Ordering::Acquire)
    }
}

/// Longest a listener delivers to its handler before it gives way to other tasks, when
/// notifications keep waiting.
const DELIVERY_SLICE: std::time::Duration = std::time::Duration::from_millis(2);

/// One turn of a listener's task on its worker thread: it delivers what was buffered when the
/// turn began (for at most about [`DELIVERY_SLICE`]), then yields.
///
/// Sized by the backlog, not by tokio's per-task budget (128 operations): the process loop
/// buffers a whole batch (a list page's 500 objects) in each of its own turns, so a listener
/// that yielded after 128 fell further behind with every batch; under an initial list of
/// 100,000 objects nearly all of them were then buffered at once, each holding its object
/// (with compact storage, the only decoded copy).
#[derive(Default)]
struct Turn {
    /// Deliveries left in this turn; 0 between turns.
    left: usize,
    /// Deliveries made in this turn.
    made: usize,
    started: Option<std::time::Instant>,
}

impl Turn {
    /// Called before taking a notification from a buffer of `buffered`: starts a turn if
    /// none is under way and some are buffered.
    fn begin(&mut self, buffered: usize) {
        if self.left == 0 && buffered > 0 {
            *self = Turn {
                left: buffered,
                made: 0,
                started: None,
            };
        }
    }

    /// Counts a delivery; true when the turn is over and the task should yield.
    fn delivered(&mut self) -> bool {
        self.left = self.left.saturating_sub(1);
        self.made += 1;
        // The clock is read every 32 deliveries, not at each.
        if self.made % 32 == 1 {
            let started = *self.started.get_or_insert_with(std::time::Instant::now);
            if started.elapsed() >= DELIVERY_SLICE {
                self.left = 0;
            }
        }
        self.left == 0
    }
}
