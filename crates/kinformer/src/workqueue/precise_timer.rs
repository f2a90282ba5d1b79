//! A wake-up finer than tokio's timer, for the delaying queues' timer tasks.
//!
//! tokio's timer wheel counts whole milliseconds: a `sleep_until` fires at the first tick at or
//! after its deadline, so an item would become ready up to 1 ms after its time (0.5 ms on
//! average) — a fifth of client-go's default 5 ms base retry delay. A timer task therefore
//! also arms a [`PreciseTimer`] and wakes at whichever fires first. Precise timers are kept by
//! one thread per process, which sleeps on a condition variable until the earliest deadline
//! (rounded up to a 0.25 ms grid, which bounds the wakes of a dense stream of items) and
//! wakes the timer's task through a [`Notify`]. The task's tokio sleep stays: it is what a
//! paused test clock advances (a precise timer runs on the real clock, armed for the same time
//! from now), and the whole timer if the thread cannot be started.

use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use tokio::sync::Notify;

/// Deadlines are rounded up to a grid of this step. Waking for every item of a dense stream
/// (W3: 100,000 items in a second) cost six times the CPU of tokio's 1 ms ticks, which take
/// ~100 items a wake (measured: 0.6 s against 0.11 s); on this grid an item is at most
/// 0.25 ms late and a queue wakes at most 4,000 times a second (0.25 s of CPU for W3).
const GRID: Duration = Duration::from_micros(250);

/// The process's precise timers and the thread that fires them.
struct Timers {
    /// The grid's origin.
    origin: Instant,
    state: Mutex<State>,
    /// Signalled when a deadline earlier than the one the thread sleeps for is armed.
    earlier: Condvar,
}

#[derive(Default)]
struct State {
    /// One slot per live timer (a dead one's slot is taken by the next new timer).
    slots: Vec<Slot>,
    /// What the thread is doing.
    thread: Thread,
}

/// The timer thread: scanning the deadlines (under the lock), or asleep.
#[derive(Default, Clone, Copy)]
enum Thread {
    #[default]
    Scanning,
    /// Until this deadline.
    SleepsUntil(Instant),
    /// With no deadline at all.
    SleepsIdle,
}

struct Slot {
    task: Weak<Notify>,
    deadline: Option<Instant>,
}

static TIMERS: OnceLock<Option<Arc<Timers>>> = OnceLock::new();

fn timers() -> Option<&'static Arc<Timers>> {
    TIMERS
        .get_or_init(|| {
            let timers = Arc::new(Timers {
                origin: Instant::now(),
                state: Mutex::new(State::default()),
                earlier: Condvar::new(),
            });
            let run = Arc::clone(&timers);
            match std::thread::Builder::new()
                .name("kinformer-timer".into())
                .spawn(move || run.fire_forever())
            {
                Ok(_) => Some(timers),
                Err(e) => {
                    tracing::warn!(error = %e, "delaying queues: no timer thread; tokio's timer alone");
                    None
                }
            }
        })
        .as_ref()
}

impl Timers {
    /// `at` rounded up to the grid.
    fn on_grid(&self, at: Instant) -> Option<Instant> {
        let past = at.saturating_duration_since(self.origin).as_nanos() % GRID.as_nanos();
        if past == 0 {
            return Some(at);
        }
        // `past` is below the step, so it fits.
        at.checked_add(GRID - Duration::from_nanos(u64::try_from(past).ok()?))
    }

    fn fire_forever(&self) {
        let mut state = self.state.lock();
        loop {
            let now = Instant::now();
            let mut next: Option<Instant> = None;
            for slot in &mut state.slots {
                let Some(at) = slot.deadline else { continue };
                if at <= now {
                    slot.deadline = None;
                    if let Some(task) = slot.task.upgrade() {
                        task.notify_one();
                    }
                } else {
                    next = Some(next.map_or(at, |n| n.min(at)));
                }
            }
            match next {
                Some(at) => {
                    state.thread = Thread::SleepsUntil(at);
                    self.earlier.wait_until(&mut state, at);
                }
                None => {
                    state.thread = Thread::SleepsIdle;
                    self.earlier.wait(&mut state);
                }
            }
            state.thread = Thread::Scanning;
        }
    }
}

/// A one-shot timer on the real clock, re-armed for each deadline.
pub(crate) struct PreciseTimer {
    timers: &'static Timers,
    slot: usize,
    task: Arc<Notify>,
}

impl PreciseTimer {
    /// A new disarmed timer, or `None` if the timer thread could not be started (logged).
    pub(crate) fn new() -> Option<Self> {
        let timers = timers()?;
        let task = Arc::new(Notify::new());
        let mut state = timers.state.lock();
        let fresh = Slot {
            task: Arc::downgrade(&task),
            deadline: None,
        };
        let slot = match state.slots.iter().position(|s| s.task.strong_count() == 0) {
            Some(free) => {
                state.slots[free] = fresh;
                free
            }
            None => {
                state.slots.push(fresh);
                state.slots.len() - 1
            }
        };
        Some(PreciseTimer { timers, slot, task })
    }

    /// Arms the timer to fire `after` from now (rounded up to the grid), replacing any
    /// earlier deadline.
    pub(crate) fn arm(&self, after: Duration) {
        // Beyond the clock's range: never (the tokio sleep covers it).
        let Some(at) = Instant::now()
            .checked_add(after)
            .and_then(|at| self.timers.on_grid(at))
        else {
            return;
        };
        let mut state = self.timers.state.lock();
        state.slots[self.slot].deadline = Some(at);
        // The thread scans every deadline before it sleeps (under the lock): it needs waking
        // only if it already sleeps, for longer than this.
        let sleeps_past_it = match state.thread {
            Thread::Scanning => false,
            Thread::SleepsUntil(until) => at < until,
            Thread::SleepsIdle => true,
        };
        if sleeps_past_it {
            self.timers.earlier.notify_one();
        }
    }

    /// Waits until the timer fires. A firing while nobody waits is kept for the next wait
    /// (so it may be stale: the caller checks the time itself).
    pub(crate) async fn fired(&self) {
        self.task.notified().await;
    }
}

impl Drop for PreciseTimer {
    fn drop(&mut self) {
        self.timers.state.lock().slots[self.slot].deadline = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn fires_once_armed_and_a_new_deadline_replaces_the_old() {
        let timer = PreciseTimer::new().expect("a timer thread");
        timer.arm(Duration::from_millis(2));
        tokio::time::timeout(Duration::from_secs(30), timer.fired())
            .await
            .expect("fired once armed");
        // Armed far ahead, then brought near: the near deadline fires.
        timer.arm(Duration::from_secs(3600));
        timer.arm(Duration::from_micros(200));
        tokio::time::timeout(Duration::from_secs(30), timer.fired())
            .await
            .expect("fired at the replaced deadline");
        // Armed far ahead, it does not fire.
        timer.arm(Duration::from_secs(3600));
        assert!(
            tokio::time::timeout(Duration::from_millis(20), timer.fired())
                .await
                .is_err()
        );
    }

    #[test]
    fn deadlines_round_up_to_the_grid() {
        let timers = timers().expect("a timer thread");
        let at = timers.origin + GRID * 2 + Duration::from_nanos(1);
        assert_eq!(timers.on_grid(at), Some(timers.origin + GRID * 3));
        let on = timers.origin + GRID * 4;
        assert_eq!(timers.on_grid(on), Some(on));
        assert_eq!(timers.on_grid(timers.origin), Some(timers.origin));
    }

    #[tokio::test]
    async fn timers_fire_each_at_their_own_deadline_and_a_live_ones_slot_is_never_reused() {
        let near = PreciseTimer::new().unwrap();
        let far = PreciseTimer::new().unwrap();
        far.arm(Duration::from_secs(3600));
        near.arm(Duration::from_millis(1));
        tokio::time::timeout(Duration::from_secs(30), near.fired())
            .await
            .expect("the near timer fires");
        assert!(
            tokio::time::timeout(Duration::from_millis(20), far.fired())
                .await
                .is_err()
        );
        drop(far);
        // A live timer's slot is never handed out again.
        let again = PreciseTimer::new().unwrap();
        assert_ne!(again.slot, near.slot);
        again.arm(Duration::from_millis(1));
        tokio::time::timeout(Duration::from_secs(30), again.fired())
            .await
            .expect("the new timer fires");
    }
}
