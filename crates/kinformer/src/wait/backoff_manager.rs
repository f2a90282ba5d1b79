//! [`BackoffManager`]: what [`backoff_until`](super::backoff_until) asks for the delay before
//! its next attempt, and the two client-go implementations.

use std::time::Duration;

use tokio::time::Instant;

use super::backoff::Backoff;
use super::error::InvalidBackoff;
use super::jitter::jitter;

/// Hands out the delay to wait before the next attempt (client-go's `wait.BackoffManager`).
///
/// client-go's `Backoff()` returns a timer; here [`backoff`](BackoffManager::backoff) returns
/// the [`Duration`] and the caller sleeps with `tokio::time`, so that tokio's paused clock
/// drives every wait.
pub trait BackoffManager: Send + Sync + std::fmt::Debug {
    /// Returns the delay before the next attempt. This records an attempt: implementations
    /// may grow the next delay, so call it once per wait.
    fn backoff(&mut self) -> Duration;
}

impl<B: BackoffManager + ?Sized> BackoffManager for Box<B> {
    fn backoff(&mut self) -> Duration {
        (**self).backoff()
    }
}

/// Exponential backoff that starts over after a quiet period
/// (client-go's `NewExponentialBackoffManager`).
///
/// Delays grow from `initial` by `factor` up to `max`, each jittered by `jitter` (so a delay
/// may reach `max × (1 + jitter)`). If more than `reset_after` passed since the previous call
/// to [`backoff`](BackoffManager::backoff), the sequence starts again from `initial`. Time
/// is read from [`tokio::time::Instant`], so tokio's paused clock applies.
///
/// The reflector uses `(800ms, 30s, 2min, 2.0, 1.0)`.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use kinformer::wait::{BackoffManager, ExponentialBackoffManager};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), kinformer::wait::InvalidBackoff> {
/// let s = Duration::from_secs;
/// let mut m = ExponentialBackoffManager::new(s(1), s(8), s(60), 2.0, 0.0)?;
/// let delays: Vec<_> = (0..5).map(|_| m.backoff().as_secs()).collect();
/// assert_eq!(delays, [1, 2, 4, 8, 8]);
///
/// // After more than a minute of quiet the sequence starts over.
/// tokio::time::advance(s(61)).await;
/// assert_eq!(m.backoff(), s(1));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct ExponentialBackoffManager {
    backoff: Backoff,
    initial: Duration,
    last_backoff_start: Instant,
    reset_after: Duration,
}

impl ExponentialBackoffManager {
    /// Builds the manager; the quiet period is measured from now.
    ///
    /// Works in or out of a tokio runtime; inside one, a paused clock is honoured.
    ///
    /// # Errors
    ///
    /// [`InvalidBackoff`] if `factor` or `jitter` is negative, NaN or infinite.
    pub fn new(
        initial: Duration,
        max: Duration,
        reset_after: Duration,
        factor: f64,
        jitter: f64,
    ) -> Result<Self, InvalidBackoff> {
        let backoff = Backoff::new(initial, factor, jitter, Self::UNLIMITED_STEPS, max)?;
        Ok(ExponentialBackoffManager {
            backoff,
            initial,
            last_backoff_start: Instant::now(),
            reset_after,
        })
    }

    /// client-go sets `math.MaxInt32` steps so that they are never used up in practice; the
    /// cap ends growth instead.
    const UNLIMITED_STEPS: u32 = i32::MAX as u32;
}

impl BackoffManager for ExponentialBackoffManager {
    fn backoff(&mut self) -> Duration {
        let now = Instant::now();
        if now.saturating_duration_since(self.last_backoff_start) > self.reset_after {
            self.backoff.steps = Self::UNLIMITED_STEPS;
            self.backoff.duration = self.initial;
        }
        self.last_backoff_start = now;
        self.backoff.step()
    }
}

/// A constant delay, jittered on each call (client-go's `NewJitteredBackoffManager`).
///
/// Each [`backoff`](BackoffManager::backoff) returns `duration` if `jitter` is `0`, else
/// [`jitter(duration, jitter)`](jitter()). This is what
/// [`jitter_until`](super::jitter_until) waits with.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use kinformer::wait::{BackoffManager, JitteredBackoffManager};
///
/// let mut m = JitteredBackoffManager::new(Duration::from_secs(1), 0.0)?;
/// assert_eq!(m.backoff(), Duration::from_secs(1));
/// # Ok::<(), kinformer::wait::InvalidBackoff>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JitteredBackoffManager {
    duration: Duration,
    jitter: f64,
}

impl JitteredBackoffManager {
    /// Builds the manager.
    ///
    /// # Errors
    ///
    /// [`InvalidBackoff::Jitter`] if `jitter` is negative, NaN or infinite.
    pub fn new(duration: Duration, jitter: f64) -> Result<Self, InvalidBackoff> {
        if !(jitter.is_finite() && jitter >= 0.0) {
            return Err(InvalidBackoff::Jitter(jitter));
        }
        Ok(JitteredBackoffManager { duration, jitter })
    }

    /// A manager without jitter; cannot fail.
    pub fn constant(duration: Duration) -> Self {
        JitteredBackoffManager {
            duration,
            jitter: 0.0,
        }
    }
}

impl BackoffManager for JitteredBackoffManager {
    fn backoff(&mut self) -> Duration {
        if self.jitter > 0.0 {
            jitter(self.duration, self.jitter)
        } else {
            self.duration
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::time::advance;

    fn s(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[tokio::test(start_paused = true)]
    async fn exponential_manager_grows_caps_and_resets_after_idle() {
        let mut m = ExponentialBackoffManager::new(s(1), s(10), s(30), 2.0, 0.0).unwrap();
        // (advance before the call, expected delay)
        let table = [
            (s(0), s(1)),
            (s(1), s(2)),
            (s(2), s(4)),
            (s(4), s(8)),
            (s(8), s(10)),
            (s(10), s(10)),
            // Exactly reset_after since the last call: not more, so no reset.
            (s(30), s(10)),
            // More than reset_after: start over.
            (s(30) + ms(1), s(1)),
            (s(1), s(2)),
        ];
        for (i, (wait, want)) in table.into_iter().enumerate() {
            advance(wait).await;
            assert_eq!(m.backoff(), want, "call {i}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn exponential_manager_measures_idle_from_the_previous_call() {
        let mut m = ExponentialBackoffManager::new(ms(800), s(30), s(120), 2.0, 0.0).unwrap();
        assert_eq!(m.backoff(), ms(800));
        // Many calls, each within the reset window, keep growing.
        for want in [1600, 3200, 6400, 12800, 25600, 30000, 30000] {
            advance(s(100)).await;
            assert_eq!(m.backoff(), ms(want));
        }
        advance(s(121)).await;
        assert_eq!(m.backoff(), ms(800));
    }

    #[tokio::test(start_paused = true)]
    async fn exponential_manager_quiet_period_counts_from_construction() {
        let mut m = ExponentialBackoffManager::new(s(1), s(10), s(5), 2.0, 0.0).unwrap();
        advance(s(6)).await;
        assert_eq!(m.backoff(), s(1));
        assert_eq!(m.backoff(), s(2));
    }

    #[tokio::test(start_paused = true)]
    async fn exponential_manager_jitter_bounds_as_used_by_the_reflector() {
        let mut m = ExponentialBackoffManager::new(ms(800), s(30), s(120), 2.0, 1.0).unwrap();
        let mut base = ms(800);
        for _ in 0..10 {
            let d = m.backoff();
            assert!(d >= base && d < base * 2, "{d:?} vs base {base:?}");
            base = (base * 2).min(s(30));
        }
    }

    #[test]
    fn exponential_manager_rejects_bad_parameters() {
        assert_eq!(
            ExponentialBackoffManager::new(s(1), s(2), s(3), -2.0, 0.0).unwrap_err(),
            InvalidBackoff::Factor(-2.0)
        );
        assert_eq!(
            ExponentialBackoffManager::new(s(1), s(2), s(3), 2.0, -1.0).unwrap_err(),
            InvalidBackoff::Jitter(-1.0)
        );
    }

    #[test]
    fn jittered_manager_is_constant_without_jitter_and_bounded_with_it() {
        let mut constant = JitteredBackoffManager::constant(s(2));
        assert!((0..10).all(|_| constant.backoff() == s(2)));
        let mut jittered = JitteredBackoffManager::new(s(2), 0.5).unwrap();
        for _ in 0..1000 {
            let d = jittered.backoff();
            assert!(d >= s(2) && d < s(3), "{d:?}");
        }
        assert_eq!(
            JitteredBackoffManager::new(s(1), f64::NEG_INFINITY),
            Err(InvalidBackoff::Jitter(f64::NEG_INFINITY))
        );
    }

    #[test]
    fn managers_work_as_trait_objects() {
        let mut boxed: Box<dyn BackoffManager> = Box::new(JitteredBackoffManager::constant(s(1)));
        assert_eq!(boxed.backoff(), s(1));
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<ExponentialBackoffManager>();
        assert_send_sync::<JitteredBackoffManager>();
        assert_send_sync::<Box<dyn BackoffManager>>();
    }
}
