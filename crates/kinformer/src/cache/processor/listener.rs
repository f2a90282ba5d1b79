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
//! - A handler registered as non-blocking ([`Consumer::Nonblocking`]) may instead be called by
//!   the task that distributes (the informer's watch task, once synced) when nothing is
//!   buffered for it and its task is not delivering: no other task is woken for the event.
//!   Order is kept (whoever calls the handler holds the listener's delivery lock and takes
//!   from the buffer's front). A call that takes longer than [`INLINE_BUDGET`], wherever it
//!   ran, moves the listener back to its own task until [`PROMOTE_AFTER`] calls in a row there
//!   have been quick again.
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
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
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
    /// A handler that returns quickly and never blocks (it enqueues a key, counts, sends on
    /// an unbounded channel): called on the listener's task, or directly by the task that
    /// distributes when nothing is buffered for it (see the module). A call longer than the
    /// budget sends it back to its task for a while.
    Nonblocking(Arc<dyn ResourceEventHandler<K>>, Duration),
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

/// Longest call of a non-blocking handler before the listener goes back to delivering on its
/// own task, unless the registration sets another.
pub(crate) const INLINE_BUDGET: std::time::Duration = std::time::Duration::from_micros(500);

/// Quick calls in a row on its own task after which a listener whose handler overran
/// [`INLINE_BUDGET`] may be called on the distributing task again.
pub(crate) const PROMOTE_AFTER: u32 = 1024;

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
    /// Held by whoever takes a notification from the buffer and hands it to a handler (the
    /// task, or a distributing task delivering in its place), until the handler returns.
    deliver: Mutex<()>,
    /// A non-blocking handler's call overran [`INLINE_BUDGET`]: deliveries go through the
    /// task until `quick_streak` reaches [`PROMOTE_AFTER`].
    demoted: AtomicBool,
    /// Quick calls in a row on the task while demoted (only the task touches it).
    quick_streak: AtomicU32,
    /// A non-blocking handler's budget per call (see [`INLINE_BUDGET`]).
    budget: Duration,
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
        let budget = match &consumer {
            Consumer::Nonblocking(_, budget) => *budget,
            _ => INLINE_BUDGET,
        };
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
            deliver: Mutex::new(()),
            demoted: AtomicBool::new(false),
            quick_streak: AtomicU32::new(0),
            budget,
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
        self.add_all_for(notifications, false);
    }

    /// As [`add_all`](Self::add_all), for a distributing task that offers to deliver in the
    /// listener's place (`offer`): true if it must call [`help`](Self::help) after releasing
    /// its locks, in which case the task was not woken. With `offer` false, or when the
    /// listener cannot take the offer (a blocking handler, a backlog, demoted, not started),
    /// the task is woken and false returned.
    pub(crate) fn add_all_for(
        &self,
        notifications: impl IntoIterator<Item = Notification<K>>,
        offer: bool,
    ) -> bool {
        let take_offer = {
            let mut buf = self.buffer.lock();
            if buf.closed {
                return false;
            }
            let was_empty = buf.queue.is_empty();
            let mut added = false;
            for notification in notifications {
                added = true;
                self.push(&mut buf, notification);
            }
            if !added {
                return false;
            }
            self.shared
                .pending
                .store(buf.queue.len(), Ordering::Relaxed);
            offer
                && was_empty
                && buf.task_spawned
                && matches!(self.consumer, Consumer::Nonblocking(..))
                && !self.demoted.load(Ordering::Relaxed)
        };
        if !take_offer {
            self.wake.notify_one();
        }
        take_offer
    }

    /// Wakes the listener's task (a [`Delivery`](super::Delivery) dropped undelivered).
    pub(super) fn wake(&self) {
        self.wake.notify_one();
    }

    /// Delivers what is buffered on the calling task, in the listener task's place, after
    /// [`add_all_for`](Self::add_all_for) returned true: for at most about
    /// [`DELIVERY_SLICE`], and only while each call stays within [`INLINE_BUDGET`]; what is
    /// left, and everything if the task is delivering, goes to the task.
    pub(crate) fn help(&self)
    where
        K: Send + Sync + 'static,
    {
        let Consumer::Nonblocking(handler, _) = &self.consumer else {
            self.wake.notify_one();
            return;
        };
        {
            let Some(_delivering) = self.deliver.try_lock() else {
                // The task holds it, and looks at the buffer again before it waits; the
                // wake-up covers the moment between.
                self.wake.notify_one();
                return;
            };
            let slice = std::time::Instant::now();
            loop {
                let Some(next) = self.take_next() else {
                    return;
                };
                if !self.dispatch_timed(handler.as_ref(), next) || slice.elapsed() > DELIVERY_SLICE
                {
                    break;
                }
            }
        }
        // Under the buffer lock, which orders this check after any add made meanwhile.
        if !self.buffer.lock().queue.is_empty() {
            self.wake.notify_one();
        }
    }

    /// Dispatches to a non-blocking handler and times the call: false (and the listener
    /// demoted) if it overran the budget.
    fn dispatch_timed(
        &self,
        handler: &dyn ResourceEventHandler<K>,
        notification: Notification<K>,
    ) -> bool
    where
        K: Send + Sync + 'static,
    {
        let call = std::time::Instant::now();
        self.dispatch(handler, notification);
        let quick = call.elapsed() <= self.budget;
        if !quick {
            self.demote();
        }
        quick
    }

    /// A non-blocking handler's call overran [`INLINE_BUDGET`]: deliver on the task until it
    /// has been quick [`PROMOTE_AFTER`] times in a row.
    fn demote(&self) {
        self.quick_streak.store(0, Ordering::Relaxed);
        if !self.demoted.swap(true, Ordering::Relaxed) {
            tracing::debug!(
                listener = self.shared.id,
                "a non-blocking handler's call overran its budget; it is called on its own task for now"
            );
        }
    }

    /// True while a non-blocking handler is kept on its own task (see [`demote`](Self::demote)).
    #[cfg(test)]
    pub(crate) fn is_demoted(&self) -> bool {
        self.demoted.load(Ordering::Relaxed)
    }

    /// Takes the next notification from the buffer; `None` when it is empty or closed.
    fn take_next(&self) -> Option<Notification<K>> {
        self.pop_buffered(&mut self.buffer.lock())
    }

    /// Takes the buffer's front and updates the pending count (the caller holds the lock).
    fn pop_buffered(&self, buf: &mut Buffer<K>) -> Option<Notification<K>> {
        let next = buf.queue.pop_front();
        self.shared
            .pending
            .store(buf.queue.len(), Ordering::Relaxed);
        next
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
            let step = match &self.consumer {
                Consumer::Handler(handler) => self.deliver_one(handler.as_ref(), &mut turn, false),
                Consumer::Nonblocking(handler, _) => {
                    self.deliver_one(handler.as_ref(), &mut turn, true)
                }
                Consumer::Channel(tx) => {
                    let mut buf = self.buffer.lock();
                    if buf.closed {
                        return;
                    }
                    match self.pop_buffered(&mut buf) {
                        Some(n) => Step::Send(tx, n),
                        None => Step::Wait,
                    }
                }
            };
            match step {
                Step::Closed => return,
                Step::Delivered => {
                    if turn.delivered() {
                        give_way().await;
                    }
                }
                Step::Wait => self.wake.notified().await,
                Step::Send(tx, notification) => {
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
            }
        }
    }

    /// The task's delivery of the buffer's next notification to `handler`, under the delivery
    /// lock (a distributing task may hold it, delivering in the task's place: then wait for
    /// the wake-up it sends if it leaves anything). A non-blocking handler's call (`timed`)
    /// is timed: one over [`INLINE_BUDGET`] demotes the listener, and a demoted listener's
    /// quick calls count towards its promotion.
    fn deliver_one<'a>(
        &'a self,
        handler: &dyn ResourceEventHandler<K>,
        turn: &mut Turn,
        timed: bool,
    ) -> Step<'a, K>
    where
        K: Send + Sync + 'static,
    {
        let Some(_delivering) = self.deliver.try_lock() else {
            return Step::Wait;
        };
        let next = {
            let mut buf = self.buffer.lock();
            if buf.closed {
                return Step::Closed;
            }
            turn.begin(buf.queue.len());
            self.pop_buffered(&mut buf)
        };
        let Some(notification) = next else {
            return Step::Wait;
        };
        if timed {
            if self.dispatch_timed(handler, notification)
                && self.demoted.load(Ordering::Relaxed)
                && self.quick_streak.fetch_add(1, Ordering::Relaxed) + 1 >= PROMOTE_AFTER
            {
                self.quick_streak.store(0, Ordering::Relaxed);
                self.demoted.store(false, Ordering::Relaxed);
            }
        } else {
            self.dispatch(handler, notification);
        }
        Step::Delivered
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

/// What the task does next.
enum Step<'a, K> {
    /// The listener is closed: the task ends.
    Closed,
    /// A notification went to the handler.
    Delivered,
    /// Nothing to deliver now (or a distributing task is delivering): wait for a wake-up.
    Wait,
    /// Send this notification into the channel.
    Send(&'a mpsc::Sender<Notification<K>>, Notification<K>),
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
