//! Errors of the `wait` module.

/// Why a backoff could not be built: one of its parameters is out of range.
///
/// Returned by [`Backoff::new`](super::Backoff::new) and the backoff-manager constructors.
/// Never retryable: the same parameters are rejected again.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum InvalidBackoff {
    /// The growth factor is negative, NaN or infinite.
    #[error("invalid backoff factor {0}: must be a finite number >= 0")]
    Factor(f64),
    /// The jitter factor is negative, NaN or infinite.
    #[error("invalid backoff jitter {0}: must be a finite number >= 0")]
    Jitter(f64),
}

/// Why a wait (`poll*`, `exponential_backoff*`) ended without its condition being met.
///
/// `E` is the error type of the condition (client-go's `ConditionFunc` returns
/// `(bool, error)`; here a condition returns `Result<bool, E>`). A condition error stops the
/// wait at once and is handed back unchanged in [`WaitError::Condition`]. Conditions that
/// cannot fail use the default `E = Infallible`.
///
/// Retryability: [`Timeout`](WaitError::Timeout) and [`Cancelled`](WaitError::Cancelled)
/// say only that the wait gave up; whether to wait again is the caller's call.
/// [`Condition`](WaitError::Condition) is as retryable as the inner error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WaitError<E = std::convert::Infallible> {
    /// The time or the number of attempts ran out before the condition was met
    /// (client-go's `ErrWaitTimeout`, or `context.DeadlineExceeded` for
    /// [`poll_until_timeout`](super::poll_until_timeout)).
    #[error("timed out waiting for the condition")]
    Timeout,
    /// The cancellation token was cancelled before the condition was met
    /// (client-go's `context.Canceled`).
    #[error("cancelled while waiting for the condition")]
    Cancelled,
    /// The condition returned an error; the wait stopped at once.
    #[error("wait condition failed")]
    Condition(#[source] E),
}

impl<E> WaitError<E> {
    /// True for [`WaitError::Timeout`] (client-go's `wait.Interrupted` covers this and
    /// [`WaitError::Cancelled`]; see [`is_interrupted`](Self::is_interrupted)).
    pub fn is_timeout(&self) -> bool {
        matches!(self, WaitError::Timeout)
    }

    /// True when the wait was cut short by time, attempts or cancellation rather than by a
    /// condition error (client-go's `wait.Interrupted`).
    pub fn is_interrupted(&self) -> bool {
        matches!(self, WaitError::Timeout | WaitError::Cancelled)
    }

    /// The condition's error, if that is what ended the wait.
    pub fn into_condition_error(self) -> Option<E> {
        match self {
            WaitError::Condition(e) => Some(e),
            WaitError::Timeout | WaitError::Cancelled => None,
        }
    }
}
