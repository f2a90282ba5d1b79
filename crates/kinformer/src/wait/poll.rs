//! Poll a condition at a fixed interval until it is met, fails, times out or is cancelled:
//! [`poll`], [`poll_immediate`] (client-go's `Poll`, `PollImmediate`) and
//! [`poll_until_cancelled`], [`poll_until_timeout`] (client-go's `PollUntilContextCancel`,
//! `PollUntilContextTimeout`).
//!
//! The differences between the two pairs are tabled in the [module docs](super).

use std::future::Future;
use std::time::Duration;

use tokio::time::{Instant, sleep_until};
use tokio_util::sync::CancellationToken;

use super::condition::ConditionResult;
use super::crash::run_condition;
use super::error::WaitError;
use super::sleep::deadline_after;
use super::ticker::Ticker;

/// Calls `condition` every `interval` until it returns true or fails, or `timeout` passes
/// (client-go's `Poll`).
///
/// - The first call is one `interval` after the start; calls follow on the ticks
///   `k × interval`. Ticks that pass while the condition runs are dropped.
/// - When `timeout` passes, the condition is called one final time (also when the timeout
///   comes before the first tick, so it always runs at least once); if that call is not
///   done, [`WaitError::Timeout`]. A tick due at the same instant as the timeout is merged
///   into that final call.
/// - `timeout == 0` means no timeout: poll until done or failed.
/// - `interval == 0` calls back to back, yielding to the runtime in between.
/// - A panic in the condition is logged and counts as `false`.
///
/// # Errors
///
/// [`WaitError::Timeout`], or [`WaitError::Condition`] with the condition's error (which
/// stops the polling at once).
///
/// # Cancel safety
///
/// Dropping the future stops the polling; a condition call in progress is dropped at its
/// current `.await`. Nothing else is lost.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use kinformer::wait::{WaitError, poll};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let mut calls = 0;
/// let result = poll(Duration::from_secs(1), Duration::from_millis(3500), || {
///     calls += 1;
///     std::future::ready(false)
/// })
/// .await;
/// assert_eq!(result, Err(WaitError::Timeout));
/// // At 1 s, 2 s, 3 s, and the final call at 3.5 s.
/// assert_eq!(calls, 4);
/// # }
/// ```
pub async fn poll<C, Fut>(
    interval: Duration,
    timeout: Duration,
    condition: C,
) -> Result<(), WaitError<<Fut::Output as ConditionResult>::Error>>
where
    C: FnMut() -> Fut,
    Fut: Future,
    Fut::Output: ConditionResult,
{
    poll_with_final_call(interval, timeout, false, condition).await
}

/// [`poll`], with a first call right away, before any waiting (client-go's `PollImmediate`).
///
/// The interval and the timeout are counted from the end of that first call.
///
/// # Errors
///
/// As [`poll`].
///
/// # Cancel safety
///
/// As [`poll`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use kinformer::wait::poll_immediate;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let start = tokio::time::Instant::now();
/// let result = poll_immediate(Duration::from_secs(1), Duration::from_secs(10), || async {
///     Ok::<_, std::io::Error>(true)
/// })
/// .await;
/// assert!(result.is_ok());
/// assert_eq!(start.elapsed(), Duration::ZERO);
/// # }
/// ```
pub async fn poll_immediate<C, Fut>(
    interval: Duration,
    timeout: Duration,
    condition: C,
) -> Result<(), WaitError<<Fut::Output as ConditionResult>::Error>>
where
    C: FnMut() -> Fut,
    Fut: Future,
    Fut::Output: ConditionResult,
{
    poll_with_final_call(interval, timeout, true, condition).await
}

/// Calls `condition` every `interval` until it returns true or fails, or `cancel` is
/// cancelled (client-go's `PollUntilContextCancel`).
///
/// - `immediate`: the first call happens at once, even if `cancel` is already cancelled
///   (then [`WaitError::Cancelled`] follows that call unless it is done or fails). Otherwise
///   the first call is one `interval` after the start, and a token cancelled by then means
///   zero calls.
/// - Calls happen on the ticks `k × interval` counted from the start (the immediate call
///   does not shift them). If the condition is slow, one missed tick fires as soon as it
///   returns and the others are dropped.
/// - Cancellation is checked before every call after the first and ends a wait at once;
///   a call in progress is not interrupted.
/// - `interval == 0` calls back to back, yielding to the runtime in between.
/// - A panic in the condition is logged and counts as `false`.
///
/// # Errors
///
/// [`WaitError::Cancelled`], or [`WaitError::Condition`] with the condition's error.
///
/// # Cancel safety
///
/// As [`poll`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use kinformer::wait::{WaitError, poll_until_cancelled};
/// use tokio_util::sync::CancellationToken;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let cancel = CancellationToken::new();
/// cancel.cancel();
/// let mut calls = 0;
/// let result = poll_until_cancelled(&cancel, Duration::from_secs(1), true, || {
///     calls += 1;
///     std::future::ready(false)
/// })
/// .await;
/// // The immediate call still happens.
/// assert_eq!((result, calls), (Err(WaitError::Cancelled), 1));
/// # }
/// ```
pub async fn poll_until_cancelled<C, Fut>(
    cancel: &CancellationToken,
    interval: Duration,
    immediate: bool,
    condition: C,
) -> Result<(), WaitError<<Fut::Output as ConditionResult>::Error>>
where
    C: FnMut() -> Fut,
    Fut: Future,
    Fut::Output: ConditionResult,
{
    poll_until(cancel, None, interval, immediate, condition).await
}

/// [`poll_until_cancelled`] that also gives up `timeout` after the start (client-go's
/// `PollUntilContextTimeout`).
///
/// The timeout acts like a cancellation, checked before every call after the first: no
/// final call is made when it passes, and a tick due at the same instant is not called.
/// `timeout == 0` times out at once (after the `immediate` call, if any).
///
/// # Errors
///
/// [`WaitError::Timeout`] when the timeout passes, [`WaitError::Cancelled`] when `cancel` is
/// cancelled first, or [`WaitError::Condition`] with the condition's error.
///
/// # Cancel safety
///
/// As [`poll`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use kinformer::wait::{WaitError, poll_until_timeout};
/// use tokio_util::sync::CancellationToken;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let cancel = CancellationToken::new();
/// let mut calls = 0;
/// let result = poll_until_timeout(&cancel, Duration::from_secs(1), Duration::from_secs(3), false, || {
///     calls += 1;
///     std::future::ready(false)
/// })
/// .await;
/// // At 1 s and 2 s; the tick at 3 s meets the timeout and is not called.
/// assert_eq!((result, calls), (Err(WaitError::Timeout), 2));
/// # }
/// ```
pub async fn poll_until_timeout<C, Fut>(
    cancel: &CancellationToken,
    interval: Duration,
    timeout: Duration,
    immediate: bool,
    condition: C,
) -> Result<(), WaitError<<Fut::Output as ConditionResult>::Error>>
where
    C: FnMut() -> Fut,
    Fut: Future,
    Fut::Output: ConditionResult,
{
    let deadline = deadline_after(Instant::now(), timeout);
    poll_until(cancel, deadline, interval, immediate, condition).await
}

/// What ends a [`poll_until`] wait first.
enum Wake {
    Tick,
    Cancelled,
    Deadline,
}

/// The loop of the `poll_until_*` pair: the ticker starts with the call, an optional
/// immediate call, then on each tick: check the stop signals, call.
async fn poll_until<C, Fut>(
    cancel: &CancellationToken,
    deadline: Option<Instant>,
    interval: Duration,
    immediate: bool,
    mut condition: C,
) -> Result<(), WaitError<<Fut::Output as ConditionResult>::Error>>
where
    C: FnMut() -> Fut,
    Fut: Future,
    Fut::Output: ConditionResult,
{
    let mut ticker = Ticker::new(Instant::now(), interval);
    if immediate {
        match run_condition(&mut condition).await {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e) => return Err(WaitError::Condition(e)),
        }
    }
    loop {
        if ticker.is_continuous() {
            tokio::task::yield_now().await;
        }
        let wake = tokio::select! {
            biased;
            () = cancel.cancelled() => Wake::Cancelled,
            () = sleep_until_opt(deadline) => Wake::Deadline,
            () = sleep_until_opt(ticker.next()) => Wake::Tick,
        };
        // Re-check: a stop signal that is due now wins over a tick that is due now.
        let now = Instant::now();
        let wake = match wake {
            Wake::Tick if cancel.is_cancelled() => Wake::Cancelled,
            Wake::Tick if deadline.is_some_and(|d| d <= now) => Wake::Deadline,
            other => other,
        };
        match wake {
            Wake::Cancelled => return Err(WaitError::Cancelled),
            Wake::Deadline => return Err(WaitError::Timeout),
            Wake::Tick => ticker.next_after_wake(now),
        }
        match run_condition(&mut condition).await {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e) => return Err(WaitError::Condition(e)),
        }
    }
}

/// The loop of `poll` / `poll_immediate`: the optional immediate call, then the ticker and
/// the timeout start; each tick calls; the timeout makes one final call.
async fn poll_with_final_call<C, Fut>(
    interval: Duration,
    timeout: Duration,
    immediate: bool,
    mut condition: C,
) -> Result<(), WaitError<<Fut::Output as ConditionResult>::Error>>
where
    C: FnMut() -> Fut,
    Fut: Future,
    Fut::Output: ConditionResult,
{
    if immediate {
        match run_condition(&mut condition).await {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e) => return Err(WaitError::Condition(e)),
        }
    }
    let start = Instant::now();
    let deadline = if timeout.is_zero() {
        None
    } else {
        deadline_after(start, timeout)
    };
    let mut ticker = Ticker::new(start, interval);
    loop {
        if ticker.is_continuous() {
            tokio::task::yield_now().await;
        }
        // The timeout wins a tie with a tick: the final call stands for both.
        let final_call = match (deadline, ticker.next()) {
            (Some(d), Some(t)) => d <= t,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if final_call {
            sleep_until_opt(deadline).await;
        } else {
            sleep_until_opt(ticker.next()).await;
        }
        match run_condition(&mut condition).await {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e) => return Err(WaitError::Condition(e)),
        }
        if final_call {
            return Err(WaitError::Timeout);
        }
        ticker.next_after_call(Instant::now());
    }
}

/// Sleeps until `at`, or forever if `None`.
async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use std::pin::Pin;
    use std::sync::Arc;

    use parking_lot::Mutex;
    use tokio::time::sleep;

    use super::*;

    type Answer = Result<bool, &'static str>;
    type Times = Arc<Mutex<Vec<u64>>>;
    type BoxedAnswer = Pin<Box<dyn Future<Output = Answer> + Send>>;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// A condition that records the time (ms since creation) of each call, works for `busy`,
    /// then answers from `script` (then `Ok(false)`).
    fn scripted(busy: Duration, script: Vec<Answer>) -> (Times, impl FnMut() -> BoxedAnswer) {
        let start = Instant::now();
        let times = Times::default();
        let seen = times.clone();
        let mut script = script.into_iter();
        let condition = move || -> BoxedAnswer {
            seen.lock().push(start.elapsed().as_millis() as u64);
            let answer = script.next().unwrap_or(Ok(false));
            Box::pin(async move {
                sleep(busy).await;
                answer
            })
        };
        (times, condition)
    }

    fn never() -> (Times, impl FnMut() -> BoxedAnswer) {
        scripted(Duration::ZERO, vec![])
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

    fn cancelled() -> CancellationToken {
        let cancel = CancellationToken::new();
        cancel.cancel();
        cancel
    }

    #[tokio::test(start_paused = true)]
    async fn poll_table() {
        struct Case {
            name: &'static str,
            immediate: bool,
            interval: u64,
            timeout: u64,
            busy: u64,
            script: Vec<Answer>,
            want: Result<(), WaitError<&'static str>>,
            times: &'static [u64],
        }
        let cases = [
            Case {
                name: "ticks, then a final call at the timeout",
                immediate: false,
                interval: 1000,
                timeout: 3500,
                busy: 0,
                script: vec![],
                want: Err(WaitError::Timeout),
                times: &[1000, 2000, 3000, 3500],
            },
            Case {
                name: "a tick at the timeout is merged into the final call",
                immediate: false,
                interval: 1000,
                timeout: 3000,
                busy: 0,
                script: vec![],
                want: Err(WaitError::Timeout),
                times: &[1000, 2000, 3000],
            },
            Case {
                name: "timeout before the first tick: still one call",
                immediate: false,
                interval: 1000,
                timeout: 300,
                busy: 0,
                script: vec![],
                want: Err(WaitError::Timeout),
                times: &[300],
            },
            Case {
                name: "the final call may succeed",
                immediate: false,
                interval: 1000,
                timeout: 1500,
                busy: 0,
                script: vec![Ok(false), Ok(true)],
                want: Ok(()),
                times: &[1000, 1500],
            },
            Case {
                name: "done on the second tick",
                immediate: false,
                interval: 1000,
                timeout: 10_000,
                busy: 0,
                script: vec![Ok(false), Ok(true)],
                want: Ok(()),
                times: &[1000, 2000],
            },
            Case {
                name: "an error stops at once",
                immediate: false,
                interval: 1000,
                timeout: 10_000,
                busy: 0,
                script: vec![Ok(false), Err("broken")],
                want: Err(WaitError::Condition("broken")),
                times: &[1000, 2000],
            },
            Case {
                name: "timeout zero means no timeout",
                immediate: false,
                interval: 1000,
                timeout: 0,
                busy: 0,
                script: vec![Ok(false), Ok(false), Ok(false), Ok(false), Ok(true)],
                want: Ok(()),
                times: &[1000, 2000, 3000, 4000, 5000],
            },
            Case {
                name: "ticks passed during a slow call are dropped",
                immediate: false,
                interval: 100,
                timeout: 1000,
                busy: 250,
                script: vec![],
                want: Err(WaitError::Timeout),
                times: &[100, 400, 700, 1000],
            },
            Case {
                name: "a tick due exactly when a call returns is not dropped",
                immediate: false,
                interval: 100,
                timeout: 450,
                busy: 100,
                script: vec![],
                want: Err(WaitError::Timeout),
                times: &[100, 200, 300, 400, 500],
            },
            Case {
                name: "immediate: a call at once, the clock starts after it",
                immediate: true,
                interval: 1000,
                timeout: 2500,
                busy: 300,
                script: vec![],
                want: Err(WaitError::Timeout),
                times: &[0, 1300, 2300, 2800],
            },
            Case {
                name: "immediate success makes one call",
                immediate: true,
                interval: 1000,
                timeout: 2500,
                busy: 0,
                script: vec![Ok(true)],
                want: Ok(()),
                times: &[0],
            },
            Case {
                name: "immediate error makes one call",
                immediate: true,
                interval: 1000,
                timeout: 2500,
                busy: 0,
                script: vec![Err("early")],
                want: Err(WaitError::Condition("early")),
                times: &[0],
            },
        ];
        for case in cases {
            let (times, condition) = scripted(ms(case.busy), case.script);
            let (interval, timeout) = (ms(case.interval), ms(case.timeout));
            let got = if case.immediate {
                poll_immediate(interval, timeout, condition).await
            } else {
                poll(interval, timeout, condition).await
            };
            assert_eq!(got, case.want, "{}", case.name);
            assert_eq!(*times.lock(), case.times, "{}", case.name);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn poll_returns_right_after_the_final_call() {
        let start = Instant::now();
        let (_, condition) = never();
        assert_eq!(
            poll(ms(1000), ms(3500), condition).await,
            Err(WaitError::Timeout)
        );
        assert_eq!(start.elapsed(), ms(3500));
    }

    #[tokio::test(start_paused = true)]
    async fn poll_counts_a_panicking_condition_as_not_done() {
        let mut n = 0;
        let got = poll(ms(10), ms(1000), || {
            n += 1;
            let n = n;
            async move {
                assert!(n >= 3, "condition panic {n}");
                true
            }
        })
        .await;
        assert_eq!(got, Ok(()));
        assert_eq!(n, 3);
    }

    #[tokio::test(start_paused = true)]
    async fn poll_with_zero_interval_calls_back_to_back() {
        let mut n = 0;
        let got = poll(Duration::ZERO, ms(1000), || {
            n += 1;
            std::future::ready(n == 100)
        })
        .await;
        assert_eq!(got, Ok(()));
        assert_eq!(n, 100);
    }

    #[tokio::test(start_paused = true)]
    async fn poll_until_cancelled_with_a_cancelled_token_makes_zero_calls() {
        let (times, condition) = never();
        let got = poll_until_cancelled(&cancelled(), ms(100), false, condition).await;
        assert_eq!(got, Err(WaitError::Cancelled));
        assert!(times.lock().is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn immediate_polls_call_once_even_with_a_cancelled_token() {
        for (script, want) in [
            (vec![], Err(WaitError::Cancelled)),
            (vec![Ok(true)], Ok(())),
            (vec![Err("bad")], Err(WaitError::Condition("bad"))),
        ] {
            let (times, condition) = scripted(Duration::ZERO, script.clone());
            let got = poll_until_cancelled(&cancelled(), ms(100), true, condition).await;
            assert_eq!(got, want);
            assert_eq!(*times.lock(), [0]);

            let (times, condition) = scripted(Duration::ZERO, script);
            let got = poll_until_timeout(&cancelled(), ms(100), ms(1000), true, condition).await;
            assert_eq!(got, want);
            assert_eq!(*times.lock(), [0]);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn poll_until_cancelled_calls_on_each_tick_until_cancelled() {
        let start = Instant::now();
        let (times, condition) = never();
        let got = poll_until_cancelled(&cancel_after(ms(3500)), ms(1000), false, condition).await;
        assert_eq!(got, Err(WaitError::Cancelled));
        assert_eq!(*times.lock(), [1000, 2000, 3000]);
        assert_eq!(start.elapsed(), ms(3500));

        let (times, condition) = never();
        let got = poll_until_cancelled(&cancel_after(ms(3500)), ms(1000), true, condition).await;
        assert_eq!(got, Err(WaitError::Cancelled));
        assert_eq!(*times.lock(), [0, 1000, 2000, 3000]);
    }

    #[tokio::test(start_paused = true)]
    async fn poll_until_cancelled_fires_one_missed_tick_after_a_slow_call() {
        let (times, condition) = scripted(ms(250), vec![]);
        let got = poll_until_cancelled(&cancel_after(ms(1000)), ms(100), false, condition).await;
        assert_eq!(got, Err(WaitError::Cancelled));
        assert_eq!(*times.lock(), [100, 350, 600, 850]);
    }

    #[tokio::test(start_paused = true)]
    async fn poll_until_cancelled_ticks_do_not_shift_after_the_immediate_call() {
        let (times, condition) = scripted(ms(300), vec![]);
        let got = poll_until_cancelled(&cancel_after(ms(2500)), ms(1000), true, condition).await;
        assert_eq!(got, Err(WaitError::Cancelled));
        assert_eq!(*times.lock(), [0, 1000, 2000]);
    }

    #[tokio::test(start_paused = true)]
    async fn poll_until_cancelled_stops_on_success_or_error() {
        let (times, condition) = scripted(Duration::ZERO, vec![Ok(false), Ok(true)]);
        let got = poll_until_cancelled(&CancellationToken::new(), ms(10), false, condition).await;
        assert_eq!(got, Ok(()));
        assert_eq!(*times.lock(), [10, 20]);

        let (times, condition) = scripted(Duration::ZERO, vec![Ok(false), Err("x")]);
        let got = poll_until_cancelled(&CancellationToken::new(), ms(10), true, condition).await;
        assert_eq!(got, Err(WaitError::Condition("x")));
        assert_eq!(*times.lock(), [0, 10]);
    }

    #[tokio::test(start_paused = true)]
    async fn poll_until_cancelled_with_zero_interval_calls_back_to_back() {
        let cancel = CancellationToken::new();
        let mut n = 0;
        let got = poll_until_cancelled(&cancel, Duration::ZERO, false, || {
            n += 1;
            if n == 50 {
                cancel.cancel();
            }
            std::future::ready(false)
        })
        .await;
        assert_eq!(got, Err(WaitError::Cancelled));
        assert_eq!(n, 50);
    }

    #[tokio::test(start_paused = true)]
    async fn poll_until_timeout_table() {
        // (immediate, interval, timeout, expected call times); always Timeout.
        let cases: [(bool, u64, u64, &[u64]); 6] = [
            (false, 1000, 3000, &[1000, 2000]),
            (false, 1000, 3500, &[1000, 2000, 3000]),
            (true, 1000, 3500, &[0, 1000, 2000, 3000]),
            (true, 1000, 0, &[0]),
            (false, 1000, 0, &[]),
            (false, 1000, 500, &[]),
        ];
        for (immediate, interval, timeout, want) in cases {
            let start = Instant::now();
            let (times, condition) = never();
            let cancel = CancellationToken::new();
            let got =
                poll_until_timeout(&cancel, ms(interval), ms(timeout), immediate, condition).await;
            let case = format!("immediate={immediate} interval={interval} timeout={timeout}");
            assert_eq!(got, Err(WaitError::Timeout), "{case}");
            assert_eq!(*times.lock(), want, "{case}");
            assert_eq!(start.elapsed(), ms(timeout), "{case}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn poll_until_timeout_reports_cancellation_before_the_timeout() {
        let (times, condition) = never();
        let got = poll_until_timeout(
            &cancel_after(ms(1500)),
            ms(1000),
            ms(5000),
            false,
            condition,
        )
        .await;
        assert_eq!(got, Err(WaitError::Cancelled));
        assert_eq!(*times.lock(), [1000]);

        // Both stop signals are due at once: cancellation is reported.
        let (times, condition) = never();
        let got =
            poll_until_timeout(&cancelled(), ms(1000), Duration::ZERO, false, condition).await;
        assert_eq!(got, Err(WaitError::Cancelled));
        assert!(times.lock().is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn poll_until_timeout_succeeds_before_the_timeout() {
        let (times, condition) = scripted(Duration::ZERO, vec![Ok(false), Ok(false), Ok(true)]);
        let got = poll_until_timeout(
            &CancellationToken::new(),
            ms(100),
            ms(1000),
            false,
            condition,
        )
        .await;
        assert_eq!(got, Ok(()));
        assert_eq!(*times.lock(), [100, 200, 300]);
    }

    #[tokio::test(start_paused = true)]
    async fn poll_futures_are_send() {
        let task = tokio::spawn(async {
            let cancel = CancellationToken::new();
            let (_, condition) = scripted(Duration::ZERO, vec![Ok(true)]);
            poll_until_timeout(&cancel, ms(10), ms(100), false, condition).await
        });
        assert_eq!(task.await.unwrap(), Ok(()));
    }
}
