//! Timing helpers: jitter, backoff, `until`-style loops and the `poll` family
//! (client-go's `k8s.io/apimachinery/pkg/util/wait`).
//!
//! - [`jitter`] stretches a duration by a random fraction.
//! - [`Backoff`] is a capped, jittered exponential sequence of delays; [`BackoffManager`]
//!   hands out the delay before each attempt ([`ExponentialBackoffManager`],
//!   [`JitteredBackoffManager`]).
//!
//! All time goes through `tokio::time`, so tokio's paused clock drives every wait in tests.

mod backoff;
mod backoff_manager;
mod error;
mod jitter;

pub use backoff::Backoff;
pub use backoff_manager::{BackoffManager, ExponentialBackoffManager, JitteredBackoffManager};
pub use error::{InvalidBackoff, WaitError};
pub use jitter::jitter;
