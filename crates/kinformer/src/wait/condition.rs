//! [`ConditionResult`]: what a `poll*` / `exponential_backoff*` condition may return.

use std::convert::Infallible;

/// The outcome of one condition call: done (`true`), not yet (`false`), or an error that
/// stops the wait (client-go's `ConditionFunc` returning `(bool, error)`).
///
/// Implemented for `bool` (a condition that cannot fail) and `Result<bool, E>`.
///
/// # Examples
///
/// ```
/// use kinformer::wait::ConditionResult;
///
/// assert_eq!(true.into_result(), Ok(true));
/// assert_eq!(Err::<bool, &str>("no").into_result(), Err("no"));
/// ```
pub trait ConditionResult {
    /// The error a failing condition hands back, wrapped in
    /// [`WaitError::Condition`](super::WaitError::Condition).
    type Error;

    /// `Ok(true)`: done; `Ok(false)`: try again; `Err`: stop with this error.
    ///
    /// # Errors
    ///
    /// The condition's own error.
    fn into_result(self) -> Result<bool, Self::Error>;
}

impl ConditionResult for bool {
    type Error = Infallible;

    fn into_result(self) -> Result<bool, Infallible> {
        Ok(self)
    }
}

impl<E> ConditionResult for Result<bool, E> {
    type Error = E;

    fn into_result(self) -> Result<bool, E> {
        self
    }
}
