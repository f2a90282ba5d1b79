//! The error type of the workqueue module.

use std::time::Duration;

/// Errors returned by workqueue constructors.
///
/// None of these is retryable: they describe a parameter that can never work, so the caller has
/// to change the value it passes.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WorkqueueError {
    /// A rate limiter was given a parameter outside its valid range.
    #[error("invalid rate limiter parameter `{name}`: {reason}")]
    InvalidParameter {
        /// The parameter's name, as in the constructor.
        name: &'static str,
        /// Why the value was refused.
        reason: String,
    },
    /// A per-item limiter's cap is smaller than its starting delay.
    #[error("max delay {max:?} is smaller than base delay {base:?}")]
    MaxBelowBase {
        /// The starting delay that was given.
        base: Duration,
        /// The cap that was given.
        max: Duration,
    },
}
