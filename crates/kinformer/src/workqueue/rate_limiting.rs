//! The rate-limiting queue: a [`DelayingQueue`] that asks a [`RateLimiter`] for the delay.

use std::fmt;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use super::delaying::DelayingQueue;
use super::queue::{Queue, QueueConfig};
use super::rate_limiter::RateLimiter;

/// A [`DelayingQueue`] with per-item retry delays from a [`RateLimiter`]: the queue of a
/// controller. Call [`add_rate_limited`](Self::add_rate_limited) when processing an item
/// failed and [`forget`](Self::forget) when it succeeded.
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
/// use kinformer::workqueue::{RateLimitingQueue, default_controller_rate_limiter};
///
/// let queue = RateLimitingQueue::new(default_controller_rate_limiter());
/// queue.add("ns/a".to_string());
/// while let Some(key) = queue.get().await {
///     let failed = queue.num_requeues(&key) < 2; // pretend the first two attempts fail
///     if failed {
///         queue.add_rate_limited(key.clone());
///     } else {
///         queue.forget(&key);
///         queue.shut_down();
///     }
///     queue.done(&key);
/// }
/// # }
/// ```
pub struct RateLimitingQueue<T> {
    delaying: DelayingQueue<T>,
    limiter: Arc<dyn RateLimiter<T>>,
}

impl<T> Clone for RateLimitingQueue<T> {
    fn clone(&self) -> Self {
        Self {
            delaying: self.delaying.clone(),
            limiter: Arc::clone(&self.limiter),
        }
    }
}

impl<T> fmt::Debug for RateLimitingQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitingQueue")
            .field("delaying", &self.delaying)
            .finish_non_exhaustive()
    }
}

impl<T> RateLimitingQueue<T>
where
    T: Clone + Eq + Hash + Send + Sync + 'static,
{
    /// An unnamed queue using `limiter`.
    pub fn new(limiter: impl RateLimiter<T> + 'static) -> Self {
        Self::with_config(QueueConfig::default(), limiter)
    }

    /// A queue built from `config` (see [`Queue::with_config`]) using `limiter`.
    pub fn with_config(config: QueueConfig, limiter: impl RateLimiter<T> + 'static) -> Self {
        Self {
            delaying: DelayingQueue::with_config(config),
            limiter: Arc::new(limiter),
        }
    }

    /// Adds `item` after the delay the limiter gives it (which records one failure).
    pub fn add_rate_limited(&self, item: T) {
        if self.delaying.is_shutting_down() {
            return;
        }
        let delay = self.limiter.when(&item);
        self.delaying.add_after(item, delay);
    }

    /// Clears the limiter's history of `item`. It does not remove the item from the queue.
    pub fn forget(&self, item: &T) {
        self.limiter.forget(item);
    }

    /// How many failures the limiter has on record for `item`.
    pub fn num_requeues(&self, item: &T) -> usize {
        self.limiter.num_requeues(item)
    }

    /// See [`DelayingQueue::add_after`].
    pub fn add_after(&self, item: T, delay: Duration) {
        self.delaying.add_after(item, delay);
    }

    /// See [`Queue::add`].
    pub fn add(&self, item: T) {
        self.delaying.add(item);
    }

    /// See [`Queue::get`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as [`Queue::get`].
    pub async fn get(&self) -> Option<T> {
        self.delaying.get().await
    }

    /// See [`Queue::done`].
    pub fn done(&self, item: &T) {
        self.delaying.done(item);
    }

    /// See [`Queue::len`].
    pub fn len(&self) -> usize {
        self.delaying.len()
    }

    /// See [`Queue::is_empty`].
    pub fn is_empty(&self) -> bool {
        self.delaying.is_empty()
    }

    /// See [`DelayingQueue::num_waiting`].
    pub fn num_waiting(&self) -> usize {
        self.delaying.num_waiting()
    }

    /// See [`DelayingQueue::shut_down`].
    pub fn shut_down(&self) {
        self.delaying.shut_down();
    }

    /// See [`Queue::shut_down_with_drain`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as [`Queue::shut_down_with_drain`].
    pub async fn shut_down_with_drain(&self) {
        self.delaying.shut_down_with_drain().await;
    }

    /// See [`Queue::is_shutting_down`].
    pub fn is_shutting_down(&self) -> bool {
        self.delaying.is_shutting_down()
    }

    /// The underlying delaying queue.
    pub fn delaying_queue(&self) -> &DelayingQueue<T> {
        &self.delaying
    }

    /// The underlying queue.
    pub fn queue(&self) -> &Queue<T> {
        self.delaying.queue()
    }
}
