//! Per-item fast-then-slow retries.

use std::fmt;
use std::hash::Hash;
use std::time::Duration;

use parking_lot::Mutex;

use super::RateLimiter;
use crate::hash::FastMap;
use crate::workqueue::WorkqueueError;

/// Per item: `fast` for the first `max_fast` attempts, `slow` after that.
///
/// ```
/// use std::time::Duration;
/// use kinformer::workqueue::{ItemFastSlow, RateLimiter};
///
/// let limiter = ItemFastSlow::new(Duration::from_millis(5), Duration::from_secs(10), 2)?;
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(5));
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(5));
/// assert_eq!(limiter.when(&"a"), Duration::from_secs(10));
/// # Ok::<(), kinformer::workqueue::WorkqueueError>(())
/// ```
pub struct ItemFastSlow<T> {
    fast: Duration,
    slow: Duration,
    max_fast: usize,
    attempts: Mutex<FastMap<T, usize>>,
}

impl<T> fmt::Debug for ItemFastSlow<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemFastSlow")
            .field("fast", &self.fast)
            .field("slow", &self.slow)
            .field("max_fast", &self.max_fast)
            .field("items", &self.attempts.lock().len())
            .finish()
    }
}

impl<T> ItemFastSlow<T> {
    /// A limiter returning `fast` for the first `max_fast` attempts of an item, then `slow`.
    ///
    /// # Errors
    ///
    /// [`WorkqueueError::InvalidParameter`] if `fast > slow`.
    pub fn new(fast: Duration, slow: Duration, max_fast: usize) -> Result<Self, WorkqueueError> {
        if fast > slow {
            return Err(WorkqueueError::InvalidParameter {
                name: "fast",
                reason: format!("{fast:?} is longer than slow delay {slow:?}"),
            });
        }
        Ok(Self {
            fast,
            slow,
            max_fast,
            attempts: Mutex::new(FastMap::default()),
        })
    }
}

impl<T: Clone + Eq + Hash + Send + Sync> RateLimiter<T> for ItemFastSlow<T> {
    fn when(&self, item: &T) -> Duration {
        let attempts = {
            let mut map = self.attempts.lock();
            let count = match map.get_mut(item) {
                Some(count) => count,
                None => map.entry(item.clone()).or_insert(0),
            };
            *count = count.saturating_add(1);
            *count
        };
        if attempts <= self.max_fast {
            self.fast
        } else {
            self.slow
        }
    }

    fn forget(&self, item: &T) {
        self.attempts.lock().remove(item);
    }

    fn num_requeues(&self, item: &T) -> usize {
        self.attempts.lock().get(item).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switches_from_fast_to_slow_after_max_fast_attempts() {
        let l = ItemFastSlow::new(Duration::from_millis(5), Duration::from_secs(10), 3).unwrap();
        let got: Vec<_> = (0..5).map(|_| l.when(&"a")).collect();
        let (f, s) = (Duration::from_millis(5), Duration::from_secs(10));
        assert_eq!(got, [f, f, f, s, s]);
        assert_eq!(l.num_requeues(&"a"), 5);
        assert_eq!(l.when(&"b"), f, "items are independent");
        l.forget(&"a");
        assert_eq!(l.num_requeues(&"a"), 0);
        assert_eq!(l.when(&"a"), f);
    }

    #[test]
    fn zero_max_fast_is_always_slow() {
        let l = ItemFastSlow::new(Duration::from_millis(5), Duration::from_secs(1), 0).unwrap();
        assert_eq!(l.when(&1), Duration::from_secs(1));
    }

    #[test]
    fn fast_longer_than_slow_is_rejected() {
        assert!(
            ItemFastSlow::<u8>::new(Duration::from_secs(2), Duration::from_secs(1), 1).is_err()
        );
    }
}
