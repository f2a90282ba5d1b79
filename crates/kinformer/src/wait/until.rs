//! Run a function periodically until a token is cancelled: [`until`], [`non_sliding_until`],
//! [`jitter_until`], [`backoff_until`], [`forever`].
//!
//! All of them are [`backoff_until`] with a particular [`BackoffManager`], as in client-go.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::backoff_manager::{BackoffManager, JitteredBackoffManager};
use super::crash::handle_crash;
use super::sleep::{deadline_after, sleep_until_or_cancelled};

/// Calls `f` every `period` until `cancel` is cancelled (client-go's `Until` /
/// `UntilWithContext`).
///
/// The period is *sliding*: it is measured from the end of one call to the start of the
/// next. Same as [`jitter_until`]`(cancel, f, period, 0.0, true)`; see there for the
/// contract (stop checked before every call, panics logged and survived, a running call is
/// not interrupted).
///
/// # Cancel safety
///
/// Dropping the future stops the loop; a call of `f` in progress is dropped at its current
/// `.await`. Nothing else is lost.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::time::Duration;
/// use tokio_util::sync::CancellationToken;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let calls = Arc::new(AtomicUsize::new(0));
/// let cancel = CancellationToken::new();
/// let stopper = cancel.clone();
/// tokio::spawn(async move {
///     tokio::time::sleep(Duration::from_millis(2500)).await;
///     stopper.cancel();
/// });
/// kinformer::wait::until(
///     &cancel,
///     || {
///         let calls = calls.clone();
///         async move { calls.fetch_add(1, Ordering::SeqCst); }
///     },
///     Duration::from_secs(1),
/// )
/// .await;
/// // Calls at 0 s, 1 s and 2 s; cancelled at 2.5 s.
/// assert_eq!(calls.load(Ordering::SeqCst), 3);
/// # }
/// ```
pub async fn until<F, Fut>(cancel: &CancellationToken, f: F, period: Duration)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    jitter_until(cancel, f, period, 0.0, true).await;
}

/// Calls `f` every `period` until `cancel` is cancelled, the period counted from the
/// *start* of each call (client-go's `NonSlidingUntil` / `NonSlidingUntilWithContext`).
///
/// If a call takes longer than `period`, the next one starts as soon as it returns.
/// Same as [`jitter_until`]`(cancel, f, period, 0.0, false)`.
///
/// # Cancel safety
///
/// As [`until`].
pub async fn non_sliding_until<F, Fut>(cancel: &CancellationToken, f: F, period: Duration)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    jitter_until(cancel, f, period, 0.0, false).await;
}

/// Calls `f` every `period` forever (client-go's `Forever`). Never completes; drop the
/// future (e.g. abort its task) to stop it.
///
/// # Cancel safety
///
/// As [`until`].
pub async fn forever<F, Fut>(f: F, period: Duration)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    until(&CancellationToken::new(), f, period).await;
}

/// Calls `f` every `period`, jittered, until `cancel` is cancelled (client-go's
/// `JitterUntil` / `JitterUntilWithContext`).
///
/// - Cancellation is checked before every call: a token already cancelled means zero calls.
///   It is not checked *during* a call: a running `f` finishes (give it a clone of the
///   token if it should stop early). While waiting between calls, cancellation ends the wait
///   at once.
/// - Each wait is `period`, or [`jitter`](super::jitter)`(period, jitter_factor)` when
///   `jitter_factor > 0` (a factor that is not a positive finite number means no jitter).
/// - `sliding`: the wait starts after `f` returns. Otherwise it starts before `f` is called,
///   so the time `f` takes is part of the period.
/// - A panic in `f` (in the closure or its future) is caught, logged with `tracing` and
///   treated like a normal return; the loop goes on (client-go's `HandleCrash` without
///   re-panicking).
///
/// # Cancel safety
///
/// As [`until`].
pub async fn jitter_until<F, Fut>(
    cancel: &CancellationToken,
    f: F,
    period: Duration,
    jitter_factor: f64,
    sliding: bool,
) where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    let mut manager = JitteredBackoffManager::new(period, jitter_factor)
        .unwrap_or_else(|_| JitteredBackoffManager::constant(period));
    backoff_until(cancel, f, &mut manager, sliding).await;
}

/// Calls `f` repeatedly until `cancel` is cancelled, waiting `backoff.backoff()` between
/// calls (client-go's `BackoffUntil` / `BackoffUntilWithContext`).
///
/// Contract as [`jitter_until`]; with `sliding == false` the delay is asked for (and its
/// clock started) before each call, otherwise after it. The manager is borrowed so that the
/// caller keeps its state, and may be a `&mut dyn BackoffManager`.
///
/// # Cancel safety
///
/// As [`until`]. The manager keeps any steps already taken.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use kinformer::wait::{ExponentialBackoffManager, backoff_until};
/// use tokio::time::Instant;
/// use tokio_util::sync::CancellationToken;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), kinformer::wait::InvalidBackoff> {
/// let s = Duration::from_secs;
/// let mut backoff = ExponentialBackoffManager::new(s(1), s(60), s(300), 2.0, 0.0)?;
/// let cancel = CancellationToken::new();
/// let start = Instant::now();
/// let mut seen = Vec::new();
/// backoff_until(
///     &cancel,
///     || {
///         seen.push(start.elapsed().as_secs());
///         if seen.len() == 4 {
///             cancel.cancel();
///         }
///         std::future::ready(())
///     },
///     &mut backoff,
///     true,
/// )
/// .await;
/// assert_eq!(seen, [0, 1, 3, 7]);
/// # Ok(())
/// # }
/// ```
pub async fn backoff_until<F, Fut, B>(
    cancel: &CancellationToken,
    mut f: F,
    backoff: &mut B,
    sliding: bool,
) where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
    B: BackoffManager + ?Sized,
{
    loop {
        if cancel.is_cancelled() {
            return;
        }
        let mut deadline = None;
        if !sliding {
            deadline = Some(deadline_after(Instant::now(), backoff.backoff()));
        }
        // The output is `()`; a panic has been logged and the loop simply goes on.
        let _ = handle_crash(&mut f).await;
        let deadline = match deadline {
            Some(deadline) => deadline,
            None => deadline_after(Instant::now(), backoff.backoff()),
        };
        if sleep_until_or_cancelled(cancel, deadline).await {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use parking_lot::Mutex;
    use tokio::time::{Instant, sleep};

    use super::*;
    use crate::wait::ExponentialBackoffManager;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// Records the (paused-clock) time of every call, in ms since the recorder was made.
    #[derive(Clone)]
    struct Calls {
        start: Instant,
        at: Arc<Mutex<Vec<u64>>>,
    }

    impl Calls {
        fn new() -> Self {
            Calls {
                start: Instant::now(),
                at: Arc::default(),
            }
        }

        fn record(&self) {
            self.at.lock().push(self.start.elapsed().as_millis() as u64);
        }

        fn times(&self) -> Vec<u64> {
            self.at.lock().clone()
        }

        /// A callback that records its start and then works for `busy`.
        fn callback(
            &self,
            busy: Duration,
        ) -> impl FnMut() -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>> + use<> {
            let calls = self.clone();
            move || {
                calls.record();
                Box::pin(sleep(busy))
            }
        }
    }

    fn cancel_after(delay: Duration) -> CancellationToken {
        let cancel = CancellationToken::new();
        let stopper = cancel.clone();
        tokio::spawn(async move {
            sleep(delay).await;
            stopper.cancel();
        });
        cancel
    }

    #[tokio::test(start_paused = true)]
    async fn a_cancelled_token_means_zero_calls() {
        let cancel = CancellationToken::new();
        cancel.cancel();
        let calls = Calls::new();
        until(&cancel, calls.callback(ms(0)), ms(10)).await;
        non_sliding_until(&cancel, calls.callback(ms(0)), ms(10)).await;
        jitter_until(&cancel, calls.callback(ms(0)), ms(10), 1.0, true).await;
        let mut m = JitteredBackoffManager::constant(ms(10));
        backoff_until(&cancel, calls.callback(ms(0)), &mut m, false).await;
        assert!(calls.times().is_empty());
        assert_eq!(calls.start.elapsed(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn until_slides_the_period_after_each_call() {
        let calls = Calls::new();
        let cancel = cancel_after(ms(4000));
        until(&cancel, calls.callback(ms(500)), ms(1000)).await;
        assert_eq!(calls.times(), [0, 1500, 3000]);
        // Cancellation ends the wait at once.
        assert_eq!(calls.start.elapsed(), ms(4000));
    }

    #[tokio::test(start_paused = true)]
    async fn non_sliding_until_counts_the_call_in_the_period() {
        let calls = Calls::new();
        let cancel = cancel_after(ms(3500));
        non_sliding_until(&cancel, calls.callback(ms(400)), ms(1000)).await;
        assert_eq!(calls.times(), [0, 1000, 2000, 3000]);
    }

    #[tokio::test(start_paused = true)]
    async fn non_sliding_until_runs_at_once_after_an_overlong_call() {
        let calls = Calls::new();
        let cancel = cancel_after(ms(4000));
        non_sliding_until(&cancel, calls.callback(ms(1500)), ms(1000)).await;
        assert_eq!(calls.times(), [0, 1500, 3000]);
        // The call started at 3000 ms finishes at 4500 ms; only then is the token seen.
        assert_eq!(calls.start.elapsed(), ms(4500));
    }

    #[tokio::test(start_paused = true)]
    async fn a_running_call_is_not_interrupted_and_no_call_follows_cancellation() {
        let calls = Calls::new();
        let cancel = cancel_after(ms(100));
        until(&cancel, calls.callback(ms(300)), ms(1000)).await;
        assert_eq!(calls.times(), [0]);
        assert_eq!(calls.start.elapsed(), ms(300));
    }

    #[tokio::test(start_paused = true)]
    async fn jitter_until_waits_between_period_and_period_times_one_plus_factor() {
        let calls = Calls::new();
        let cancel = cancel_after(ms(100_000));
        jitter_until(&cancel, calls.callback(ms(0)), ms(1000), 0.5, true).await;
        let times = calls.times();
        assert!(
            times.len() >= 67 && times.len() <= 101,
            "{} calls",
            times.len()
        );
        for pair in times.windows(2) {
            let gap = pair[1] - pair[0];
            // tokio timers have 1 ms resolution: a jittered delay just under 1500 ms can
            // end on the 1500 ms mark.
            assert!((1000..=1500).contains(&gap), "gap {gap}");
        }
        // Jitter does vary the gaps.
        assert!(times.windows(2).any(|p| p[1] - p[0] != times[1] - times[0]));
    }

    #[tokio::test(start_paused = true)]
    async fn jitter_until_ignores_a_negative_or_nan_factor() {
        for factor in [-1.0, f64::NAN] {
            let calls = Calls::new();
            let cancel = cancel_after(ms(2500));
            jitter_until(&cancel, calls.callback(ms(0)), ms(1000), factor, false).await;
            assert_eq!(calls.times(), [0, 1000, 2000]);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn backoff_until_sliding_waits_the_manager_delays_after_each_call() {
        let calls = Calls::new();
        let cancel = cancel_after(ms(20_000));
        let mut m =
            ExponentialBackoffManager::new(ms(1000), ms(4000), ms(60_000), 2.0, 0.0).unwrap();
        backoff_until(&cancel, calls.callback(ms(100)), &mut m, true).await;
        // Gaps: 100 ms of work + 1 s, 2 s, 4 s, 4 s, 4 s ...
        assert_eq!(calls.times(), [0, 1100, 3200, 7300, 11400, 15500, 19600]);
    }

    #[tokio::test(start_paused = true)]
    async fn backoff_until_non_sliding_starts_the_delay_before_the_call() {
        let calls = Calls::new();
        let cancel = cancel_after(ms(10_000));
        let mut m: Box<dyn BackoffManager> = Box::new(
            ExponentialBackoffManager::new(ms(1000), ms(4000), ms(60_000), 2.0, 0.0).unwrap(),
        );
        backoff_until(&cancel, calls.callback(ms(100)), m.as_mut(), false).await;
        assert_eq!(calls.times(), [0, 1000, 3000, 7000]);
    }

    #[tokio::test(start_paused = true)]
    async fn panics_are_caught_and_the_loop_goes_on() {
        let calls = Calls::new();
        let cancel = cancel_after(ms(3500));
        let recorder = calls.clone();
        let mut n = 0;
        until(
            &cancel,
            move || {
                recorder.record();
                n += 1;
                let n = n;
                if n == 1 {
                    panic!("panic while building the future");
                }
                async move {
                    if n == 2 {
                        panic!("panic inside the future");
                    }
                }
            },
            ms(1000),
        )
        .await;
        assert_eq!(calls.times(), [0, 1000, 2000, 3000]);
    }

    #[tokio::test(start_paused = true)]
    async fn forever_keeps_calling_until_dropped() {
        let calls = Calls::new();
        let run = tokio::time::timeout(ms(2500), forever(calls.callback(ms(0)), ms(1000))).await;
        assert!(run.is_err());
        assert_eq!(calls.times(), [0, 1000, 2000]);
    }

    #[tokio::test(start_paused = true)]
    async fn until_futures_can_be_spawned() {
        let calls = Calls::new();
        let cancel = CancellationToken::new();
        let task = tokio::spawn({
            let cancel = cancel.clone();
            let f = calls.callback(ms(0));
            async move { until(&cancel, f, ms(1000)).await }
        });
        sleep(ms(1500)).await;
        cancel.cancel();
        task.await.unwrap();
        assert_eq!(calls.times(), [0, 1000]);
    }

    #[tokio::test(start_paused = true)]
    async fn backoff_until_with_a_boxed_manager_can_be_spawned() {
        let calls = Calls::new();
        let cancel = cancel_after(ms(2500));
        let f = calls.callback(ms(0));
        let mut m: Box<dyn BackoffManager> = Box::new(JitteredBackoffManager::constant(ms(1000)));
        tokio::spawn(async move { backoff_until(&cancel, f, &mut m, true).await })
            .await
            .unwrap();
        assert_eq!(calls.times(), [0, 1000, 2000]);
    }

    #[tokio::test(start_paused = true)]
    async fn an_unrepresentable_delay_waits_for_cancellation_only() {
        let calls = Calls::new();
        let cancel = cancel_after(ms(5000));
        let mut m = JitteredBackoffManager::constant(Duration::MAX);
        backoff_until(&cancel, calls.callback(ms(0)), &mut m, true).await;
        assert_eq!(calls.times(), [0]);
        assert_eq!(calls.start.elapsed(), ms(5000));
    }
}
