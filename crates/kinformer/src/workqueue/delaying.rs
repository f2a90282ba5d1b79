//! The delaying queue: a [`Queue`] whose items can be added after a delay.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::collections::hash_map::Entry;
use std::fmt;
use std::hash::Hash;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::precise_timer::PreciseTimer;
use super::queue::{Queue, QueueConfig};
use crate::hash::FastMap;

/// How far ahead "never" is, for delays too large to represent as an instant.
const FAR_FUTURE: Duration = Duration::from_secs(86_400 * 365 * 30);

/// A [`Queue`] with [`add_after`](Self::add_after).
///
/// Properties, beyond those of [`Queue`]:
/// - **One waiting entry per item**: adding a waiting item again with an earlier ready time
///   moves it earlier; a later ready time is ignored.
/// - **Ordered**: items become ready in order of ready time (ties in the order they were added).
/// - **No polling**: one background task sleeps until the next ready time. It is started by the
///   first delayed add and stops when the queue shuts down or every handle is dropped; waiting
///   items are then discarded.
/// - **On time to a quarter of a millisecond**: tokio's timer counts whole milliseconds (an
///   item would be up to 1 ms late), so the task also wakes on a precise timer armed for the
///   ready time rounded up to 0.25 ms (one thread per process keeps them).
/// - All time is [`tokio::time`], so tests can use the paused clock.
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
/// use std::time::Duration;
/// use kinformer::workqueue::DelayingQueue;
///
/// let queue = DelayingQueue::new();
/// queue.add_after("b", Duration::from_millis(20));
/// queue.add_after("a", Duration::from_millis(10));
/// queue.add_after("b", Duration::from_millis(5)); // earlier wins
/// assert_eq!(queue.get().await, Some("b"));
/// assert_eq!(queue.get().await, Some("a"));
/// # }
/// ```
pub struct DelayingQueue<T> {
    queue: Queue<T>,
    waiting: Arc<Waiting<T>>,
}

impl<T> Clone for DelayingQueue<T> {
    fn clone(&self) -> Self {
        Self {
            queue: self.queue.clone(),
            waiting: Arc::clone(&self.waiting),
        }
    }
}

impl<T> fmt::Debug for DelayingQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DelayingQueue")
            .field("queue", &self.queue)
            .field("waiting", &self.waiting.state.lock().ready_at.len())
            .finish()
    }
}

/// The waiting items, shared by the handles and (weakly) by the background task.
struct Waiting<T> {
    state: Mutex<WaitState<T>>,
    /// Wakes the background task when the earliest ready time moves earlier.
    wake: Arc<Notify>,
    /// Cancelled when the queue shuts down or the last handle is dropped.
    stop: CancellationToken,
    /// The background task was started.
    started: AtomicBool,
}

impl<T> Drop for Waiting<T> {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Invariant: every item of `ready_at` has exactly one heap entry with the same `(at, seq)`;
/// other heap entries for that item are stale and skipped when popped.
struct WaitState<T> {
    heap: BinaryHeap<HeapEntry<T>>,
    ready_at: FastMap<T, (Instant, u64)>,
    next_seq: u64,
}

struct HeapEntry<T> {
    at: Instant,
    seq: u64,
    item: T,
}

impl<T> PartialEq for HeapEntry<T> {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at && self.seq == other.seq
    }
}
impl<T> Eq for HeapEntry<T> {}
impl<T> PartialOrd for HeapEntry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for HeapEntry<T> {
    /// Reversed, so that the max-heap pops the earliest entry first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

impl<T> DelayingQueue<T>
where
    T: Clone + Eq + Hash + Send + Sync + 'static,
{
    /// An unnamed delaying queue without metrics.
    pub fn new() -> Self {
        Self::with_config(QueueConfig::default())
    }

    /// A delaying queue built from `config` (see [`Queue::with_config`]).
    pub fn with_config(config: QueueConfig) -> Self {
        Self::from_queue(Queue::with_config(config))
    }

    fn from_queue(queue: Queue<T>) -> Self {
        let stop = queue.shutdown_token().child_token();
        Self {
            queue,
            waiting: Arc::new(Waiting {
                state: Mutex::new(WaitState {
                    heap: BinaryHeap::new(),
                    ready_at: FastMap::default(),
                    next_seq: 0,
                }),
                wake: Arc::new(Notify::new()),
                stop,
                started: AtomicBool::new(false),
            }),
        }
    }

    /// Adds `item` once `delay` has passed; a zero delay adds it at once. Ignored while
    /// shutting down. If the item is already waiting, the earlier of the two ready times wins.
    /// Counts one retry in the queue's metrics.
    ///
    /// The background timer task is spawned on the current tokio runtime by the first delayed
    /// add; called outside a runtime with a non-zero delay, the item is added at once and an
    /// error is logged.
    pub fn add_after(&self, item: T, delay: Duration) {
        if self.queue.is_shutting_down() {
            return;
        }
        self.queue.record_retry();
        if delay.is_zero() {
            self.queue.add(item);
            return;
        }
        if !self.ensure_timer_task() {
            self.queue.add(item);
            return;
        }
        let now = Instant::now();
        let at = now
            .checked_add(delay)
            .or_else(|| now.checked_add(FAR_FUTURE))
            .unwrap_or(now);
        let mut state = self.waiting.state.lock();
        let seq = state.next_seq;
        match state.ready_at.entry(item) {
            Entry::Occupied(mut entry) => {
                if entry.get().0 <= at {
                    return;
                }
                let item = entry.key().clone();
                entry.insert((at, seq));
                state.heap.push(HeapEntry { at, seq, item });
            }
            Entry::Vacant(entry) => {
                let item = entry.key().clone();
                entry.insert((at, seq));
                state.heap.push(HeapEntry { at, seq, item });
            }
        }
        state.next_seq += 1;
        let earliest = state.heap.peek().is_some_and(|e| e.seq == seq);
        drop(state);
        if earliest {
            self.waiting.wake.notify_one();
        }
    }

    /// Starts the timer task if needed; false if there is no runtime to start it on.
    fn ensure_timer_task(&self) -> bool {
        if self.waiting.started.load(AtomicOrdering::Acquire) {
            return true;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            tracing::error!(
                queue = %self.queue.name(),
                "add_after outside a tokio runtime: adding the item without delay"
            );
            return false;
        };
        if self
            .waiting
            .started
            .compare_exchange(false, true, AtomicOrdering::AcqRel, AtomicOrdering::Acquire)
            .is_ok()
        {
            handle.spawn(timer_loop(
                Arc::downgrade(&self.waiting),
                self.queue.clone(),
                Arc::clone(&self.waiting.wake),
                self.waiting.stop.clone(),
            ));
        }
        true
    }

    /// The number of items waiting for their ready time (not yet in the queue).
    pub fn num_waiting(&self) -> usize {
        self.waiting.state.lock().ready_at.len()
    }

    /// See [`Queue::add`].
    pub fn add(&self, item: T) {
        self.queue.add(item);
    }

    /// See [`Queue::get`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as [`Queue::get`].
    pub async fn get(&self) -> Option<T> {
        self.queue.get().await
    }

    /// See [`Queue::done`].
    pub fn done(&self, item: &T) {
        self.queue.done(item);
    }

    /// See [`Queue::len`]; waiting items are not counted.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// See [`Queue::is_empty`].
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// See [`Queue::shut_down`]; also stops the timer task and discards waiting items.
    pub fn shut_down(&self) {
        self.queue.shut_down();
    }

    /// See [`Queue::shut_down_with_drain`]; waiting items are discarded.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as [`Queue::shut_down_with_drain`].
    pub async fn shut_down_with_drain(&self) {
        self.queue.shut_down_with_drain().await;
    }

    /// See [`Queue::is_shutting_down`].
    pub fn is_shutting_down(&self) -> bool {
        self.queue.is_shutting_down()
    }

    /// The underlying queue (a clone of the handle).
    pub fn queue(&self) -> &Queue<T> {
        &self.queue
    }
}

impl<T> Default for DelayingQueue<T>
where
    T: Clone + Eq + Hash + Send + Sync + 'static,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Clone + Eq + Hash> WaitState<T> {
    /// Removes the items ready at `now`, in ready order; returns them and the next ready time.
    fn take_ready(&mut self, now: Instant, out: &mut Vec<T>) -> Option<Instant> {
        while let Some(top) = self.heap.peek() {
            if top.at > now {
                return Some(top.at);
            }
            let Some(entry) = self.heap.pop() else { break };
            if self.ready_at.get(&entry.item) == Some(&(entry.at, entry.seq)) {
                self.ready_at.remove(&entry.item);
                out.push(entry.item);
            }
        }
        None
    }
}

/// Moves ready items into the queue, sleeping until the next ready time in between.
async fn timer_loop<T>(
    waiting: Weak<Waiting<T>>,
    queue: Queue<T>,
    wake: Arc<Notify>,
    stop: CancellationToken,
) where
    T: Clone + Eq + Hash + Send + Sync + 'static,
{
    let mut ready = Vec::new();
    let precise = PreciseTimer::new();
    loop {
        let next = {
            let Some(waiting) = waiting.upgrade() else {
                return;
            };
            let mut state = waiting.state.lock();
            state.take_ready(Instant::now(), &mut ready)
        };
        if !ready.is_empty() {
            queue.add_all(&mut ready);
        }
        // Armed for the same time from now as the tokio sleep: under a paused test clock
        // (which runs ahead of the real one) it then fires only after that sleep.
        if let (Some(timer), Some(at)) = (&precise, next) {
            timer.arm(at.saturating_duration_since(Instant::now()));
        }
        // `notify_one` keeps a permit when nobody waits, so an add between `take_ready` and
        // this point still wakes us. Whichever timer fires first wakes the task; the loop
        // then takes what is ready by the clock (a stale firing takes nothing).
        tokio::select! {
            biased;
            () = stop.cancelled() => return,
            () = wake.notified() => {}
            () = sleep_until_some(next) => {}
            () = fired_if_armed(precise.as_ref(), next.is_some()) => {}
        }
    }
}

/// The precise timer's next firing, if there is one and it is armed; else never.
async fn fired_if_armed(timer: Option<&PreciseTimer>, armed: bool) {
    match timer {
        Some(timer) if armed => timer.fired().await,
        _ => std::future::pending().await,
    }
}

async fn sleep_until_some(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn zero_delay_adds_at_once() {
        let q = DelayingQueue::new();
        q.add_after(1, Duration::ZERO);
        assert_eq!(q.len(), 1);
        assert_eq!(q.num_waiting(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn item_becomes_ready_exactly_at_its_time() {
        let q = DelayingQueue::new();
        let start = Instant::now();
        q.add_after(1, Duration::from_millis(50));
        assert_eq!(q.len(), 0);
        assert_eq!(q.get().await, Some(1));
        assert_eq!(start.elapsed(), Duration::from_millis(50));
    }

    #[tokio::test(start_paused = true)]
    async fn shut_down_stops_timer_and_discards_waiting() {
        let q = DelayingQueue::new();
        q.add_after(1, Duration::from_secs(1));
        q.shut_down();
        assert_eq!(q.get().await, None);
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(q.len(), 0);
    }
}
