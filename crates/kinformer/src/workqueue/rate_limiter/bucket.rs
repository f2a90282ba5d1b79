//! An overall token bucket.

use std::fmt;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use super::RateLimiter;
use crate::workqueue::WorkqueueError;

/// A token bucket shared by all items: `qps` tokens per second, holding at most `burst`, full
/// at the start. Each [`when`](RateLimiter::when) reserves one token and returns how long until
/// that token exists (zero while tokens are left). It never blocks; reservations made ahead of
/// time push later ones further out. Time is [`tokio::time::Instant`], so the paused clock
/// works in tests. `forget` does nothing and `num_requeues` is always 0.
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), kinformer::workqueue::WorkqueueError> {
/// use std::time::Duration;
/// use kinformer::workqueue::{Bucket, RateLimiter};
///
/// let bucket = Bucket::new(10.0, 2)?;
/// assert_eq!(RateLimiter::<&str>::when(&bucket, &"a"), Duration::ZERO);
/// assert_eq!(RateLimiter::<&str>::when(&bucket, &"b"), Duration::ZERO);
/// // Out of tokens: one more token comes every 100 ms.
/// assert_eq!(RateLimiter::<&str>::when(&bucket, &"c"), Duration::from_millis(100));
/// assert_eq!(RateLimiter::<&str>::when(&bucket, &"d"), Duration::from_millis(200));
/// # Ok(())
/// # }
/// ```
pub struct Bucket {
    qps: f64,
    burst: u32,
    state: Mutex<BucketState>,
}

#[derive(Debug)]
struct BucketState {
    /// Tokens available at `last`; negative when tokens are reserved ahead.
    tokens: f64,
    last: Instant,
}

impl fmt::Debug for Bucket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bucket")
            .field("qps", &self.qps)
            .field("burst", &self.burst)
            .finish_non_exhaustive()
    }
}

impl Bucket {
    /// A bucket refilled at `qps` tokens per second, holding up to `burst` tokens.
    ///
    /// # Errors
    ///
    /// [`WorkqueueError::InvalidParameter`] if `qps` is not a positive finite number or
    /// `burst` is zero.
    pub fn new(qps: f64, burst: u32) -> Result<Self, WorkqueueError> {
        if !(qps.is_finite() && qps > 0.0) {
            return Err(WorkqueueError::InvalidParameter {
                name: "qps",
                reason: format!("{qps} is not a positive finite number"),
            });
        }
        if burst == 0 {
            return Err(WorkqueueError::InvalidParameter {
                name: "burst",
                reason: "must be at least 1".into(),
            });
        }
        Ok(Self::new_unchecked(qps, burst))
    }

    pub(crate) fn new_unchecked(qps: f64, burst: u32) -> Self {
        Self {
            qps,
            burst,
            state: Mutex::new(BucketState {
                tokens: f64::from(burst),
                last: Instant::now(),
            }),
        }
    }

    /// Reserves one token; returns the wait until it is available.
    fn reserve(&self) -> Duration {
        let now = Instant::now();
        let mut state = self.state.lock();
        let elapsed = now.saturating_duration_since(state.last).as_secs_f64();
        state.tokens = (state.tokens + elapsed * self.qps).min(f64::from(self.burst));
        state.last = now.max(state.last);
        state.tokens -= 1.0;
        if state.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::try_from_secs_f64(-state.tokens / self.qps).unwrap_or(Duration::MAX)
        }
    }
}

impl<T> RateLimiter<T> for Bucket {
    fn when(&self, _: &T) -> Duration {
        self.reserve()
    }
    fn forget(&self, _: &T) {}
    fn num_requeues(&self, _: &T) -> usize {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn when(b: &Bucket) -> Duration {
        RateLimiter::<u8>::when(b, &0)
    }

    #[tokio::test(start_paused = true)]
    async fn burst_then_spacing_then_refill() {
        let b = Bucket::new(10.0, 3).unwrap();
        let got: Vec<_> = (0..6).map(|_| when(&b).as_millis()).collect();
        assert_eq!(got, [0, 0, 0, 100, 200, 300]);
        // 300 ms later the three reserved tokens exist; the next one is 100 ms out.
        tokio::time::advance(Duration::from_millis(300)).await;
        assert_eq!(when(&b).as_millis(), 100);
        // A long idle time refills only up to the burst.
        tokio::time::advance(Duration::from_secs(60)).await;
        let got: Vec<_> = (0..4).map(|_| when(&b).as_millis()).collect();
        assert_eq!(got, [0, 0, 0, 100]);
        assert_eq!(RateLimiter::<u8>::num_requeues(&b, &0), 0);
    }

    #[test]
    fn invalid_parameters_are_rejected() {
        assert!(Bucket::new(0.0, 1).is_err());
        assert!(Bucket::new(-1.0, 1).is_err());
        assert!(Bucket::new(f64::NAN, 1).is_err());
        assert!(Bucket::new(f64::INFINITY, 1).is_err());
        assert!(Bucket::new(1.0, 0).is_err());
    }
}
