//! client-go's `retryWithDeadline`, for the reflector's `MaxInternalErrorRetryDuration`: a
//! watch that ends in an internal error is re-opened at once from the last synced version for
//! at most that long after the first such error, then the reflector relists.

use std::time::Duration;

use tokio::time::Instant;

/// Errors further apart than this start a new retry window (client-go: one minute).
const MIN_RESET_PERIOD: Duration = Duration::from_secs(60);

/// The retry window over consecutive internal errors.
#[derive(Debug, Clone)]
pub(crate) struct RetryWithDeadline {
    max: Duration,
    first: Option<Instant>,
    last: Option<Instant>,
}

impl RetryWithDeadline {
    /// Retries for at most `max` (zero: never).
    pub(crate) fn new(max: Duration) -> Self {
        Self {
            max,
            first: None,
            last: None,
        }
    }

    /// Records how a watch ended at `now`: with a retryable (internal) error or not.
    pub(crate) fn after(&mut self, retryable: bool, now: Instant) {
        if !retryable {
            self.reset();
            return;
        }
        if self
            .last
            .is_some_and(|last| now.saturating_duration_since(last) > MIN_RESET_PERIOD)
        {
            self.reset();
        }
        self.first.get_or_insert(now);
        self.last = Some(now);
    }

    /// True while within `max` of the first error of the window; false (and a fresh window)
    /// afterwards.
    pub(crate) fn should_retry(&mut self, now: Instant) -> bool {
        if self.max.is_zero() {
            return false;
        }
        match self.first {
            Some(first) if now.saturating_duration_since(first) <= self.max => true,
            _ => {
                self.reset();
                false
            }
        }
    }

    fn reset(&mut self) {
        self.first = None;
        self.last = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_within_the_window_then_gives_up_and_starts_over() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut r = RetryWithDeadline::new(Duration::from_secs(10));
        r.after(true, at(0));
        assert!(r.should_retry(at(0)));
        r.after(true, at(10));
        assert!(r.should_retry(at(10)), "exactly at the limit still retries");
        r.after(true, at(11));
        assert!(!r.should_retry(at(11)));
        // A new window after giving up.
        r.after(true, at(12));
        assert!(r.should_retry(at(12)));
        // Any other ending resets the window.
        r.after(false, at(13));
        r.after(true, at(30));
        assert!(r.should_retry(at(30)));
        // Errors more than a minute apart do not share a window.
        r.after(true, at(100));
        assert!(r.should_retry(at(100)));
    }

    #[test]
    fn zero_never_retries() {
        let mut r = RetryWithDeadline::new(Duration::ZERO);
        r.after(true, Instant::now());
        assert!(!r.should_retry(Instant::now()));
    }
}
