//! Per-item exponential backoff.

use std::fmt;
use std::hash::Hash;
use std::time::Duration;

use parking_lot::Mutex;

use super::RateLimiter;
use crate::hash::FastMap;
use crate::workqueue::WorkqueueError;

/// Per item: `base · 2^failures`, capped at `max`. The computation saturates, so any number of
/// failures yields at most `max`.
///
/// ```
/// use std::time::Duration;
/// use kinformer::workqueue::{ItemExponentialFailure, RateLimiter};
///
/// let limiter = ItemExponentialFailure::new(Duration::from_millis(1), Duration::from_millis(10))?;
/// let delays: Vec<_> = (0..6).map(|_| limiter.when(&"a").as_millis()).collect();
/// assert_eq!(delays, [1, 2, 4, 8, 10, 10]);
/// # Ok::<(), kinformer::workqueue::WorkqueueError>(())
/// ```
pub struct ItemExponentialFailure<T> {
    base: Duration,
    max: Duration,
    failures: Mutex<FastMap<T, u32>>,
}

impl<T> fmt::Debug for ItemExponentialFailure<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemExponentialFailure")
            .field("base", &self.base)
            .field("max", &self.max)
            .field("items", &self.failures.lock().len())
            .finish()
    }
}

impl<T> ItemExponentialFailure<T> {
    /// A limiter starting at `base` and doubling per failure up to `max`.
    ///
    /// # Errors
    ///
    /// [`WorkqueueError::InvalidParameter`] if `base` is zero,
    /// [`WorkqueueError::MaxBelowBase`] if `max < base`.
    pub fn new(base: Duration, max: Duration) -> Result<Self, WorkqueueError> {
        if base.is_zero() {
            return Err(WorkqueueError::InvalidParameter {
                name: "base",
                reason: "must be greater than zero".into(),
            });
        }
        if max < base {
            return Err(WorkqueueError::MaxBelowBase { base, max });
        }
        Ok(Self::new_unchecked(base, max))
    }

    pub(crate) fn new_unchecked(base: Duration, max: Duration) -> Self {
        Self {
            base,
            max,
            failures: Mutex::new(FastMap::default()),
        }
    }

    /// `base · 2^exp`, saturating, capped at `max`.
    fn backoff(&self, exp: u32) -> Duration {
        let max = self.max.as_nanos();
        let nanos = 1u128
            .checked_shl(exp)
            .and_then(|factor| self.base.as_nanos().checked_mul(factor))
            .map_or(max, |n| n.min(max));
        duration_from_nanos(nanos)
    }
}

/// A duration from a nanosecond count that fits a `Duration` (callers cap it first).
pub(super) fn duration_from_nanos(nanos: u128) -> Duration {
    const NANOS_PER_SEC: u128 = 1_000_000_000;
    let secs = u64::try_from(nanos / NANOS_PER_SEC).unwrap_or(u64::MAX);
    // The remainder is below one billion, so it fits a u32.
    let sub = u32::try_from(nanos % NANOS_PER_SEC).unwrap_or(0);
    Duration::new(secs, sub)
}

impl<T: Clone + Eq + Hash + Send + Sync> RateLimiter<T> for ItemExponentialFailure<T> {
    fn when(&self, item: &T) -> Duration {
        let exp = {
            let mut failures = self.failures.lock();
            let count = match failures.get_mut(item) {
                Some(count) => count,
                None => failures.entry(item.clone()).or_insert(0),
            };
            let exp = *count;
            *count = count.saturating_add(1);
            exp
        };
        self.backoff(exp)
    }

    fn forget(&self, item: &T) {
        self.failures.lock().remove(item);
    }

    fn num_requeues(&self, item: &T) -> usize {
        self.failures
            .lock()
            .get(item)
            .map_or(0, |&n| usize::try_from(n).unwrap_or(usize::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_from_base_and_caps_at_max() {
        let l = ItemExponentialFailure::new(Duration::from_millis(1), Duration::from_millis(20))
            .unwrap();
        let got: Vec<u128> = (0..7).map(|_| l.when(&"x").as_millis()).collect();
        assert_eq!(got, [1, 2, 4, 8, 16, 20, 20]);
        assert_eq!(l.num_requeues(&"x"), 7);
        assert_eq!(l.num_requeues(&"y"), 0);
    }

    #[test]
    fn items_are_independent_and_forget_resets() {
        let l =
            ItemExponentialFailure::new(Duration::from_millis(1), Duration::from_secs(1)).unwrap();
        l.when(&1);
        l.when(&1);
        assert_eq!(l.when(&2), Duration::from_millis(1));
        l.forget(&1);
        assert_eq!(l.num_requeues(&1), 0);
        assert_eq!(l.when(&1), Duration::from_millis(1));
    }

    #[test]
    fn many_failures_saturate_at_max_without_overflow() {
        let max = Duration::from_secs(1000);
        let l = ItemExponentialFailure::<u8>::new(Duration::from_millis(5), max).unwrap();
        for exp in [40, 63, 64, 127, 128, 200, u32::MAX] {
            assert_eq!(l.backoff(exp), max, "exp {exp}");
        }
        let huge = ItemExponentialFailure::<u8>::new(Duration::MAX, Duration::MAX).unwrap();
        assert_eq!(huge.backoff(3), Duration::MAX);
    }

    #[test]
    fn invalid_parameters_are_rejected() {
        assert!(ItemExponentialFailure::<u8>::new(Duration::ZERO, Duration::from_secs(1)).is_err());
        assert_eq!(
            ItemExponentialFailure::<u8>::new(Duration::from_secs(2), Duration::from_secs(1))
                .unwrap_err(),
            WorkqueueError::MaxBelowBase {
                base: Duration::from_secs(2),
                max: Duration::from_secs(1)
            }
        );
    }
}
