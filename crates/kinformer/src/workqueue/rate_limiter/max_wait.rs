//! Another limiter's delay, capped.

use std::time::Duration;

use super::RateLimiter;

/// Wraps a limiter and caps its delays at `max_wait`.
///
/// ```
/// use std::time::Duration;
/// use kinformer::workqueue::{ItemExponentialFailure, RateLimiter, WithMaxWait};
///
/// let inner = ItemExponentialFailure::new(Duration::from_secs(1), Duration::from_secs(100))?;
/// let limiter = WithMaxWait::new(inner, Duration::from_secs(3));
/// let delays: Vec<_> = (0..4).map(|_| limiter.when(&"a").as_secs()).collect();
/// assert_eq!(delays, [1, 2, 3, 3]);
/// # Ok::<(), kinformer::workqueue::WorkqueueError>(())
/// ```
#[derive(Debug)]
pub struct WithMaxWait<R> {
    limiter: R,
    max_wait: Duration,
}

impl<R> WithMaxWait<R> {
    /// Caps `limiter`'s delays at `max_wait`.
    pub fn new(limiter: R, max_wait: Duration) -> Self {
        Self { limiter, max_wait }
    }

    /// The wrapped limiter.
    pub fn inner(&self) -> &R {
        &self.limiter
    }
}

impl<T, R: RateLimiter<T>> RateLimiter<T> for WithMaxWait<R> {
    fn when(&self, item: &T) -> Duration {
        self.limiter.when(item).min(self.max_wait)
    }
    fn forget(&self, item: &T) {
        self.limiter.forget(item);
    }
    fn num_requeues(&self, item: &T) -> usize {
        self.limiter.num_requeues(item)
    }
}

#[cfg(test)]
mod tests {
    use super::super::ItemFastSlow;
    use super::*;

    #[test]
    fn caps_the_inner_delay_and_passes_forget_through() {
        let inner =
            ItemFastSlow::new(Duration::from_millis(1), Duration::from_secs(60), 1).unwrap();
        let l = WithMaxWait::new(inner, Duration::from_secs(5));
        assert_eq!(l.when(&"a"), Duration::from_millis(1));
        assert_eq!(l.when(&"a"), Duration::from_secs(5));
        assert_eq!(l.num_requeues(&"a"), 2);
        l.forget(&"a");
        assert_eq!(l.num_requeues(&"a"), 0);
    }
}
