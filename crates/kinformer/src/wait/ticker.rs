//! The tick schedule of the `poll` family: ticks at `start + k × interval`, `k >= 1`.
//!
//! Two rules for ticks that pass while the condition runs, matching client-go's two pollers:
//! - [`Ticker::next_after_wake`] (Go's `time.Ticker`, one pending tick kept, as used by
//!   `PollUntilContextCancel`): one missed tick fires as soon as the caller waits again,
//!   then the schedule resumes at the next boundary.
//! - [`Ticker::next_after_call`] (the legacy `poller`, which drops ticks nobody is waiting
//!   for): every tick passed during the call is lost; the next is the first boundary at or
//!   after the call's end.

use std::time::Duration;

use tokio::time::Instant;

/// A fixed-interval tick schedule. `next == None` means the next tick is too far in the
/// future to represent: it never fires.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ticker {
    start: Instant,
    interval: Duration,
    next: Option<Instant>,
}

impl Ticker {
    /// The first tick is one `interval` after `start`. A zero interval ticks continuously.
    pub(crate) fn new(start: Instant, interval: Duration) -> Self {
        Ticker {
            start,
            interval,
            next: start.checked_add(interval),
        }
    }

    /// When the next tick fires (`None`: never).
    pub(crate) fn next(&self) -> Option<Instant> {
        self.next
    }

    /// Whether ticks come back to back (zero interval); the caller should yield between them.
    pub(crate) fn is_continuous(&self) -> bool {
        self.interval.is_zero()
    }

    /// The tick was consumed at `woke`: the next one is the first boundary after `woke`.
    pub(crate) fn next_after_wake(&mut self, woke: Instant) {
        if self.next.is_some() {
            self.next = self.boundary(woke, true);
        }
    }

    /// The tick at `self.next` was consumed and the call it started ended at `now`: the next
    /// tick is the first boundary after the consumed one that is not before `now`.
    pub(crate) fn next_after_call(&mut self, now: Instant) {
        let Some(fired) = self.next else { return };
        if self.interval.is_zero() {
            self.next = Some(now);
            return;
        }
        let after_fired = fired.checked_add(self.interval);
        self.next = match after_fired {
            Some(t) if t >= now => Some(t),
            Some(_) => self.boundary(now, false),
            None => None,
        };
    }

    /// The first boundary `start + k × interval` that is `> at` (`strict`) or `>= at`.
    fn boundary(&self, at: Instant, strict: bool) -> Option<Instant> {
        if self.interval.is_zero() {
            return Some(at);
        }
        let elapsed = at.saturating_duration_since(self.start).as_nanos();
        let interval = self.interval.as_nanos();
        let mut k = elapsed / interval;
        if strict || k * interval < elapsed {
            k += 1;
        }
        let offset = u64::try_from(k.checked_mul(interval)?).ok()?;
        self.start.checked_add(Duration::from_nanos(offset))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn schedules_follow_the_two_rules() {
        let start = Instant::now();
        let at = |n| start + ms(n);
        // (consumed at / call ended at, next for the Go ticker rule, next for the poller rule)
        let cases = [
            (100, 200, 200),
            (150, 200, 200),
            (200, 300, 200),
            (350, 400, 400),
            (400, 500, 400),
        ];
        for (t, want_wake, want_call) in cases {
            let mut wake = Ticker::new(start, ms(100));
            wake.next_after_wake(at(t));
            assert_eq!(wake.next(), Some(at(want_wake)), "wake at {t}");

            let mut call = Ticker::new(start, ms(100));
            assert_eq!(call.next(), Some(at(100)));
            call.next_after_call(at(t));
            assert_eq!(call.next(), Some(at(want_call)), "call ended at {t}");
        }
    }

    #[test]
    fn zero_interval_ticks_continuously() {
        let start = Instant::now();
        let mut t = Ticker::new(start, Duration::ZERO);
        assert!(t.is_continuous());
        assert_eq!(t.next(), Some(start));
        t.next_after_call(start + ms(5));
        assert_eq!(t.next(), Some(start + ms(5)));
        t.next_after_wake(start + ms(7));
        assert_eq!(t.next(), Some(start + ms(7)));
    }

    #[test]
    fn an_unrepresentable_interval_never_ticks() {
        let mut t = Ticker::new(Instant::now(), Duration::MAX);
        assert_eq!(t.next(), None);
        t.next_after_call(Instant::now());
        t.next_after_wake(Instant::now());
        assert_eq!(t.next(), None);
    }
}
