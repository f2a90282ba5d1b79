//! Timing helpers: jitter, backoff, `until`-style loops and the `poll` family
//! (client-go's `k8s.io/apimachinery/pkg/util/wait`).
//!
//! - [`jitter`] stretches a duration by a random fraction.
//! - [`Backoff`] is a capped, jittered exponential sequence of delays; [`BackoffManager`]
//!   hands out the delay before each attempt ([`ExponentialBackoffManager`],
//!   [`JitteredBackoffManager`]).
//! - [`until`], [`non_sliding_until`], [`jitter_until`], [`backoff_until`] and [`forever`]
//!   call a function periodically until a [`CancellationToken`] is cancelled.
//! - [`exponential_backoff`] and [`exponential_backoff_with_cancel`] retry a condition with
//!   growing delays for a bounded number of attempts.
//! - [`poll`], [`poll_immediate`], [`poll_until_cancelled`] and [`poll_until_timeout`] call a
//!   condition at a fixed interval until it is met, fails, times out or is cancelled.
//!
//! Conditions return a [`ConditionResult`]: `bool`, or `Result<bool, E>` whose error stops
//! the wait and comes back as [`WaitError::Condition`]. [`WaitError`] is generic over `E`
//! (not boxed), so callers get their own error type back unchanged.
//!
//! Properties shared by the loops:
//! - The stop signal is a [`CancellationToken`]; it is checked before every call, so a
//!   token cancelled beforehand means zero calls (the one exception, as in client-go: the
//!   `immediate` call of [`poll_until_cancelled`] / [`poll_until_timeout`] happens anyway).
//!   A call in progress is never interrupted by the token; dropping the returned future
//!   drops it.
//! - A panic in a callback is caught and logged with `tracing`, and the loop goes on
//!   (client-go's `HandleCrash` without re-panicking); a panicking condition counts as
//!   "not done yet".
//! - All time goes through `tokio::time`, so tokio's paused clock drives every wait in tests.
//!   tokio timers have a resolution of 1 ms.
//!
//! The two poll pairs differ as in client-go:
//!
//! | | [`poll`], [`poll_immediate`] | [`poll_until_cancelled`], [`poll_until_timeout`] |
//! |---|---|---|
//! | stop signal | timeout only | token (and timeout) |
//! | at the timeout | one final call, then [`WaitError::Timeout`] | no further call, [`WaitError::Timeout`] |
//! | calls at least once | yes | only with `immediate` (even if already cancelled) |
//! | ticks missed during a slow call | dropped; next call on the next tick | one fires at once, then on schedule |
//! | timeout zero | no timeout | times out at once |
//! | clock starts | after the immediate call | before the immediate call |
//!
//! Callbacks are `FnMut() -> impl Future`. Asynchronous work goes in the future;
//! a synchronous body can run in the closure itself and return a ready future:
//!
//! ```
//! use std::time::Duration;
//! use tokio_util::sync::CancellationToken;
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! let cancel = CancellationToken::new();
//! let mut ticks = 0;
//! kinformer::wait::until(
//!     &cancel,
//!     || {
//!         ticks += 1;
//!         if ticks == 3 {
//!             cancel.cancel();
//!         }
//!         std::future::ready(())
//!     },
//!     Duration::from_secs(1),
//! )
//! .await;
//! assert_eq!(ticks, 3);
//! # }
//! ```
//!
//! [`CancellationToken`]: tokio_util::sync::CancellationToken

mod backoff;
mod backoff_manager;
mod condition;
mod crash;
mod error;
mod exponential_backoff;
mod jitter;
mod poll;
mod sleep;
mod ticker;
mod until;

pub use backoff::Backoff;
pub use backoff_manager::{BackoffManager, ExponentialBackoffManager, JitteredBackoffManager};
pub use condition::ConditionResult;
pub use error::{InvalidBackoff, WaitError};
pub use exponential_backoff::{exponential_backoff, exponential_backoff_with_cancel};
pub use jitter::jitter;
pub use poll::{poll, poll_immediate, poll_until_cancelled, poll_until_timeout};
pub use until::{backoff_until, forever, jitter_until, non_sliding_until, until};
