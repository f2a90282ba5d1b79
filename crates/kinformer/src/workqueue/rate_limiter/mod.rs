//! Rate limiters: how long to wait before an item is retried.
//!
//! A [`RateLimiter`] has three methods: [`when`](RateLimiter::when) records a failure of an item
//! and returns how long to wait before retrying it, [`forget`](RateLimiter::forget) clears an
//! item's history once it succeeded, and [`num_requeues`](RateLimiter::num_requeues) reports how
//! many failures are on record. The limiters:
//!
//! - [`ItemExponentialFailure`]: per item, `base · 2^failures`, capped at `max`;
//! - [`ItemFastSlow`]: per item, `fast` for the first `max_fast` attempts, then `slow`;
//! - [`Bucket`]: a token bucket shared by all items (overall qps with a burst);
//! - [`MaxOf`]: the longest delay of several limiters;
//! - [`WithMaxWait`]: another limiter's delay, capped.
//!
//! Limiters keep state: give each queue its own limiter unless sharing is intended.

mod bucket;
mod exponential;
mod fast_slow;
mod max_of;
mod max_wait;

use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

pub use bucket::Bucket;
pub use exponential::ItemExponentialFailure;
pub use fast_slow::ItemFastSlow;
pub use max_of::MaxOf;
pub use max_wait::WithMaxWait;

/// Decides how long an item waits before it is retried.
pub trait RateLimiter<T>: Send + Sync {
    /// Records a failure of `item` and returns how long to wait before retrying it. This
    /// mutates the limiter: each call counts as one more failure (or takes one token).
    fn when(&self, item: &T) -> Duration;
    /// Clears the failure history of `item` (call it when the item was processed
    /// successfully).
    fn forget(&self, item: &T);
    /// The number of failures on record for `item`.
    fn num_requeues(&self, item: &T) -> usize;
}

impl<T, R: RateLimiter<T> + ?Sized> RateLimiter<T> for Box<R> {
    fn when(&self, item: &T) -> Duration {
        (**self).when(item)
    }
    fn forget(&self, item: &T) {
        (**self).forget(item);
    }
    fn num_requeues(&self, item: &T) -> usize {
        (**self).num_requeues(item)
    }
}

impl<T, R: RateLimiter<T> + ?Sized> RateLimiter<T> for Arc<R> {
    fn when(&self, item: &T) -> Duration {
        (**self).when(item)
    }
    fn forget(&self, item: &T) {
        (**self).forget(item);
    }
    fn num_requeues(&self, item: &T) -> usize {
        (**self).num_requeues(item)
    }
}

/// client-go's default controller limiter: the maximum of a per-item exponential limiter
/// (5 ms doubling up to 1000 s) and an overall token bucket (10 qps, burst 100).
///
/// ```
/// use std::time::Duration;
/// use kinformer::workqueue::{RateLimiter, default_controller_rate_limiter};
///
/// let limiter = default_controller_rate_limiter::<String>();
/// let item = "ns/a".to_string();
/// assert_eq!(limiter.when(&item), Duration::from_millis(5));
/// assert_eq!(limiter.when(&item), Duration::from_millis(10));
/// assert_eq!(limiter.num_requeues(&item), 2);
/// limiter.forget(&item);
/// assert_eq!(limiter.num_requeues(&item), 0);
/// ```
pub fn default_controller_rate_limiter<T>() -> MaxOf<T>
where
    T: Clone + Eq + Hash + Send + Sync + 'static,
{
    MaxOf::from_limiters(vec![
        Box::new(ItemExponentialFailure::new_unchecked(
            Duration::from_millis(5),
            Duration::from_secs(1000),
        )),
        Box::new(Bucket::new_unchecked(10.0, 100)),
    ])
}

/// client-go's default per-item limiter: exponential from 1 ms up to 1000 s.
pub fn default_item_based_rate_limiter<T>() -> ItemExponentialFailure<T>
where
    T: Clone + Eq + Hash + Send + Sync + 'static,
{
    ItemExponentialFailure::new_unchecked(Duration::from_millis(1), Duration::from_secs(1000))
}
