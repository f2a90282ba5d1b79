//! Retry a condition with growing delays: [`exponential_backoff`] and
//! [`exponential_backoff_with_cancel`].

use std::future::Future;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::backoff::Backoff;
use super::condition::ConditionResult;
use super::crash::run_condition;
use super::error::WaitError;
use super::sleep::{deadline_after, sleep_until_or_cancelled};

/// Calls `condition` until it is done, at most `backoff.steps` times, sleeping
/// [`backoff.step()`](Backoff::step) between calls (client-go's `ExponentialBackoff`).
///
/// - `Ok(true)` / `true`: done, returns `Ok(())`.
/// - `Ok(false)` / `false`: sleep, then try again.
/// - `Err(e)`: stop at once with [`WaitError::Condition`]`(e)`.
/// - Out of steps: [`WaitError::Timeout`], right after the last call (no sleep after it).
///   With `steps == 0` the condition is never called.
/// - A panic in the condition is logged and counts as `false`.
///
/// As in client-go, a step that reaches the cap sets the steps to zero, which ends the
/// attempts after the sleep that follows it; so with a cap, fewer than `steps` calls may be
/// made.
///
/// # Errors
///
/// [`WaitError::Timeout`] or [`WaitError::Condition`], as above.
///
/// # Cancel safety
///
/// Dropping the future stops the retries; a condition call in progress is dropped at its
/// current `.await`. Nothing else is lost (the backoff is taken by value).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use kinformer::wait::{Backoff, WaitError, exponential_backoff};
/// use tokio::time::Instant;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let backoff = Backoff {
///     duration: Duration::from_secs(1),
///     factor: 2.0,
///     jitter: 0.0,
///     steps: 4,
///     cap: Duration::ZERO,
/// };
/// let start = Instant::now();
/// let mut calls = 0;
/// let result = exponential_backoff(backoff, || {
///     calls += 1;
///     std::future::ready(false)
/// })
/// .await;
/// assert_eq!(result, Err(WaitError::Timeout));
/// // Four calls, at 0 s, 1 s, 3 s and 7 s.
/// assert_eq!(calls, 4);
/// assert_eq!(start.elapsed(), Duration::from_secs(7));
/// # }
/// ```
pub async fn exponential_backoff<C, Fut>(
    backoff: Backoff,
    condition: C,
) -> Result<(), WaitError<<Fut::Output as ConditionResult>::Error>>
where
    C: FnMut() -> Fut,
    Fut: Future,
    Fut::Output: ConditionResult,
{
    // A token nobody cancels: the same loop, which then ends only by the condition or the
    // steps.
    exponential_backoff_with_cancel(&CancellationToken::new(), backoff, condition).await
}

/// [`exponential_backoff`] that also stops when `cancel` is cancelled (client-go's
/// `ExponentialBackoffWithContext`).
///
/// Cancellation is checked before every call (a token cancelled beforehand means zero
/// calls) and ends a sleep at once; a call in progress is not interrupted.
///
/// # Errors
///
/// As [`exponential_backoff`], plus [`WaitError::Cancelled`].
///
/// # Cancel safety
///
/// As [`exponential_backoff`].
pub async fn exponential_backoff_with_cancel<C, Fut>(
    cancel: &CancellationToken,
    mut backoff: Backoff,
    mut condition: C,
) -> Result<(), WaitError<<Fut::Output as ConditionResult>::Error>>
where
    C: FnMut() -> Fut,
    Fut: Future,
    Fut::Output: ConditionResult,
{
    while backoff.steps > 0 {
        if cancel.is_cancelled() {
            return Err(WaitError::Cancelled);
        }
        match run_condition(&mut condition).await {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e) => return Err(WaitError::Condition(e)),
        }
        if backoff.steps == 1 {
            break;
        }
        let deadline = deadline_after(Instant::now(), backoff.step());
        if sleep_until_or_cancelled(cancel, deadline).await {
            return Err(WaitError::Cancelled);
        }
    }
    Err(WaitError::Timeout)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use parking_lot::Mutex;
    use tokio::time::sleep;

    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn backoff(steps: u32, cap: u64) -> Backoff {
        Backoff {
            duration: ms(100),
            factor: 2.0,
            jitter: 0.0,
            steps,
            cap: ms(cap),
        }
    }

    /// A condition that records call times and answers from a script (then `Ok(false)`).
    type Answer = Result<bool, &'static str>;
    type Times = Arc<Mutex<Vec<u64>>>;

    fn scripted(script: Vec<Answer>) -> (Times, impl FnMut() -> std::future::Ready<Answer>) {
        let start = Instant::now();
        let times = Arc::new(Mutex::new(Vec::new()));
        let seen = times.clone();
        let mut script = script.into_iter();
        let condition = move || {
            seen.lock().push(start.elapsed().as_millis() as u64);
            std::future::ready(script.next().unwrap_or(Ok(false)))
        };
        (times, condition)
    }

    #[tokio::test(start_paused = true)]
    async fn exponential_backoff_table() {
        struct Case {
            name: &'static str,
            backoff: Backoff,
            script: Vec<Result<bool, &'static str>>,
            want: Result<(), WaitError<&'static str>>,
            times: &'static [u64],
        }
        let cases = [
            Case {
                name: "zero steps: no call",
                backoff: backoff(0, 0),
                script: vec![],
                want: Err(WaitError::Timeout),
                times: &[],
            },
            Case {
                name: "one step: one call, no sleep",
                backoff: backoff(1, 0),
                script: vec![],
                want: Err(WaitError::Timeout),
                times: &[0],
            },
            Case {
                name: "all steps used",
                backoff: backoff(4, 0),
                script: vec![],
                want: Err(WaitError::Timeout),
                times: &[0, 100, 300, 700],
            },
            Case {
                name: "done on the third call",
                backoff: backoff(5, 0),
                script: vec![Ok(false), Ok(false), Ok(true)],
                want: Ok(()),
                times: &[0, 100, 300],
            },
            Case {
                name: "error stops at once",
                backoff: backoff(5, 0),
                script: vec![Ok(false), Err("broken")],
                want: Err(WaitError::Condition("broken")),
                times: &[0, 100],
            },
            Case {
                name: "reaching the cap ends the steps after its sleep",
                backoff: backoff(10, 300),
                script: vec![],
                want: Err(WaitError::Timeout),
                // Sleeps: 100 (next 200), then 200 (next 400 > cap: steps = 0), after which
                // the loop ends without another call.
                times: &[0, 100],
            },
        ];
        for case in cases {
            let (times, condition) = scripted(case.script);
            let got = exponential_backoff(case.backoff, condition).await;
            assert_eq!(got, case.want, "{}", case.name);
            assert_eq!(*times.lock(), case.times, "{}", case.name);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn exponential_backoff_returns_right_after_the_last_call() {
        let start = Instant::now();
        let got = exponential_backoff(backoff(3, 0), || std::future::ready(false)).await;
        assert_eq!(got, Err(WaitError::Timeout));
        assert_eq!(start.elapsed(), ms(300));
    }

    #[tokio::test(start_paused = true)]
    async fn a_panicking_condition_is_retried() {
        let mut n = 0;
        let got = exponential_backoff(backoff(5, 0), || {
            n += 1;
            let n = n;
            async move {
                if n < 3 {
                    panic!("condition panic {n}");
                }
                true
            }
        })
        .await;
        assert_eq!(got, Ok(()));
        assert_eq!(n, 3);
    }

    #[tokio::test(start_paused = true)]
    async fn with_cancel_makes_no_call_on_a_cancelled_token() {
        let cancel = CancellationToken::new();
        cancel.cancel();
        let (times, condition) = scripted(vec![]);
        let got = exponential_backoff_with_cancel(&cancel, backoff(5, 0), condition).await;
        assert_eq!(got, Err(WaitError::Cancelled));
        assert!(times.lock().is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn with_cancel_stops_during_a_sleep() {
        let cancel = CancellationToken::new();
        let stopper = cancel.clone();
        tokio::spawn(async move {
            sleep(ms(250)).await;
            stopper.cancel();
        });
        let start = Instant::now();
        let (times, condition) = scripted(vec![]);
        let got = exponential_backoff_with_cancel(&cancel, backoff(10, 0), condition).await;
        assert_eq!(got, Err(WaitError::Cancelled));
        assert_eq!(*times.lock(), [0, 100]);
        assert_eq!(start.elapsed(), ms(250));
    }

    #[tokio::test(start_paused = true)]
    async fn with_cancel_behaves_as_the_plain_one_otherwise() {
        let cancel = CancellationToken::new();
        let (times, condition) = scripted(vec![Ok(false), Ok(false), Ok(false), Ok(true)]);
        let got = exponential_backoff_with_cancel(&cancel, backoff(4, 0), condition).await;
        assert_eq!(got, Ok(()));
        assert_eq!(*times.lock(), [0, 100, 300, 700]);

        let (_, condition) = scripted(vec![Err("bad")]);
        let got = exponential_backoff_with_cancel(&cancel, backoff(4, 0), condition).await;
        assert_eq!(got, Err(WaitError::Condition("bad")));

        let (times, condition) = scripted(vec![]);
        let got = exponential_backoff_with_cancel(&cancel, backoff(2, 0), condition).await;
        assert_eq!(got, Err(WaitError::Timeout));
        assert_eq!(*times.lock(), [0, 100]);
    }

    #[tokio::test(start_paused = true)]
    async fn exponential_backoff_futures_can_be_spawned() {
        let (_, condition) = scripted(vec![Ok(false), Ok(true)]);
        let plain = tokio::spawn(exponential_backoff(backoff(3, 0), condition));
        let (_, condition) = scripted(vec![]);
        let cancellable = tokio::spawn(async move {
            let cancel = CancellationToken::new();
            exponential_backoff_with_cancel(&cancel, backoff(2, 0), condition).await
        });
        assert_eq!(plain.await.unwrap(), Ok(()));
        assert_eq!(cancellable.await.unwrap(), Err(WaitError::Timeout));
    }
}
