//! Work queues: deduplicating, delaying and rate-limited — what a controller's workers drain.
//!
//! Properties of every queue here (see [`Queue`]):
//! - **fair**: items are handed out in the order they were added;
//! - **stingy**: an item added many times before it is handed out is handed out once;
//! - **exclusive**: an item is never processed by two workers at once; added again while being
//!   processed, it comes back after [`done`](Queue::done);
//! - **shutdown and drain**: after shutdown, adds are ignored, queued items still go out, then
//!   [`get`](Queue::get) returns `None`; [`shut_down_with_drain`](Queue::shut_down_with_drain)
//!   also waits for the items being processed.
//!
//! The layers: [`Queue`] → [`DelayingQueue`] (`add_after`) → [`RateLimitingQueue`]
//! (`add_rate_limited`, `forget`, `num_requeues`) with a [`RateLimiter`]. Named queues report
//! [metrics] through a [`MetricsProvider`] (`PrometheusMetricsProvider` with the
//! `prometheus` feature). [`parallelize_until`] runs pieces of work with bounded concurrency.
//!
//! A controller's worker loop:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use kinformer::workqueue::{RateLimitingQueue, default_controller_rate_limiter};
//!
//! fn reconcile(key: &str) -> Result<(), String> { Ok(()) }
//!
//! let queue = RateLimitingQueue::new(default_controller_rate_limiter());
//! queue.add("default/web-0".to_string());
//! queue.shut_down(); // normally on program exit; queued keys still drain
//! while let Some(key) = queue.get().await {
//!     match reconcile(&key) {
//!         Ok(()) => queue.forget(&key),
//!         Err(_) => queue.add_rate_limited(key.clone()),
//!     }
//!     queue.done(&key);
//! }
//! # }
//! ```

mod delaying;
mod error;
mod items;
pub mod metrics;
mod parallelize;
mod precise_timer;
#[cfg(feature = "prometheus")]
mod prometheus;
mod queue;
mod rate_limiter;
mod rate_limiting;

pub use delaying::DelayingQueue;
pub use error::WorkqueueError;
pub use metrics::{
    CounterMetric, GaugeMetric, HistogramMetric, MetricsProvider, NoopMetricsProvider,
    SettableGaugeMetric,
};
pub use parallelize::parallelize_until;
#[cfg(feature = "prometheus")]
#[cfg_attr(docsrs, doc(cfg(feature = "prometheus")))]
pub use prometheus::PrometheusMetricsProvider;
pub use queue::{Queue, QueueConfig};
pub use rate_limiter::{
    Bucket, ItemExponentialFailure, ItemFastSlow, MaxOf, RateLimiter, WithMaxWait,
    default_controller_rate_limiter, default_item_based_rate_limiter,
};
pub use rate_limiting::RateLimitingQueue;
