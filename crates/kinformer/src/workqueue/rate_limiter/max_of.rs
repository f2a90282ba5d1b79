//! The longest delay of several limiters.

use std::fmt;
use std::time::Duration;

use super::RateLimiter;
use crate::workqueue::WorkqueueError;

/// Asks every limiter (each records the failure) and returns the longest delay;
/// `num_requeues` is the largest count, `forget` forgets in all.
///
/// ```
/// use std::time::Duration;
/// use kinformer::workqueue::{ItemExponentialFailure, ItemFastSlow, MaxOf, RateLimiter};
///
/// let limiter = MaxOf::new(vec![
///     Box::new(ItemExponentialFailure::new(Duration::from_millis(1), Duration::from_secs(1))?),
///     Box::new(ItemFastSlow::new(Duration::from_millis(3), Duration::from_secs(1), 3)?),
/// ])?;
/// let delays: Vec<_> = (0..4).map(|_| limiter.when(&"a").as_millis()).collect();
/// assert_eq!(delays, [3, 3, 4, 1000]);
/// # Ok::<(), kinformer::workqueue::WorkqueueError>(())
/// ```
pub struct MaxOf<T> {
    limiters: Vec<Box<dyn RateLimiter<T>>>,
}

impl<T> fmt::Debug for MaxOf<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MaxOf")
            .field("limiters", &self.limiters.len())
            .finish()
    }
}

impl<T> MaxOf<T> {
    /// The maximum of `limiters`.
    ///
    /// # Errors
    ///
    /// [`WorkqueueError::InvalidParameter`] if `limiters` is empty.
    pub fn new(limiters: Vec<Box<dyn RateLimiter<T>>>) -> Result<Self, WorkqueueError> {
        if limiters.is_empty() {
            return Err(WorkqueueError::InvalidParameter {
                name: "limiters",
                reason: "needs at least one limiter".into(),
            });
        }
        Ok(Self::from_limiters(limiters))
    }

    pub(crate) fn from_limiters(limiters: Vec<Box<dyn RateLimiter<T>>>) -> Self {
        Self { limiters }
    }
}

impl<T> RateLimiter<T> for MaxOf<T> {
    fn when(&self, item: &T) -> Duration {
        self.limiters
            .iter()
            .map(|l| l.when(item))
            .fold(Duration::ZERO, Duration::max)
    }

    fn forget(&self, item: &T) {
        for l in &self.limiters {
            l.forget(item);
        }
    }

    fn num_requeues(&self, item: &T) -> usize {
        self.limiters
            .iter()
            .map(|l| l.num_requeues(item))
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Bucket, ItemExponentialFailure, default_controller_rate_limiter};
    use super::*;

    #[test]
    fn takes_the_longest_delay_and_forgets_in_all() {
        let l = MaxOf::new(vec![
            Box::new(
                ItemExponentialFailure::new(Duration::from_millis(1), Duration::from_secs(1))
                    .unwrap(),
            ),
            Box::new(
                ItemExponentialFailure::new(Duration::from_millis(3), Duration::from_secs(1))
                    .unwrap(),
            ),
        ])
        .unwrap();
        let got: Vec<_> = (0..3).map(|_| l.when(&"a").as_millis()).collect();
        assert_eq!(got, [3, 6, 12]);
        assert_eq!(l.num_requeues(&"a"), 3);
        l.forget(&"a");
        assert_eq!(l.num_requeues(&"a"), 0);
        assert_eq!(l.when(&"a").as_millis(), 3);
    }

    #[test]
    fn empty_list_is_rejected() {
        assert!(MaxOf::<u8>::new(Vec::new()).is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn default_controller_limiter_is_exponential_until_the_bucket_runs_dry() {
        let l = default_controller_rate_limiter::<u32>();
        let got: Vec<_> = (0..5).map(|_| l.when(&1).as_millis()).collect();
        assert_eq!(got, [5, 10, 20, 40, 80]);
        // 95 tokens left: 95 first failures of other items get 5 ms, then the bucket spaces
        // them at 100 ms.
        for i in 0..95 {
            assert_eq!(l.when(&(100 + i)), Duration::from_millis(5));
        }
        assert_eq!(l.when(&1000).as_millis(), 100);
        assert_eq!(l.when(&1001).as_millis(), 200);
        let _ = Bucket::new(1.0, 1).unwrap();
    }
}
