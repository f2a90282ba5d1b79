//! Periodic output that does not catch up: after the process was stopped and resumed
//! (SIGSTOP/SIGCONT, a suspended laptop), the ticks missed meanwhile are skipped, not fired
//! all at once: one tick comes at once, the next a full period after it.

use std::time::Duration;

use tokio::time::{Instant, Interval, MissedTickBehavior};

/// An interval whose first tick comes after `first`, then every `period`; missed ticks are
/// skipped (one late tick, then the schedule starts again from it).
pub(crate) fn every(first: Duration, period: Duration) -> Interval {
    let mut interval = tokio::time::interval_at(Instant::now() + first, period);
    interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
    interval
}
