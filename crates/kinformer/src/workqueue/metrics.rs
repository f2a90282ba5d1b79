//! Queue metrics: the [`MetricsProvider`] trait a named queue reports through.
//!
//! A queue built with a non-empty [`QueueConfig::name`](super::QueueConfig::name) and a provider
//! asks the provider for seven metrics, once, at construction:
//!
//! | metric | kind | meaning |
//! |---|---|---|
//! | depth | gauge | items added and not yet handed out by `get` |
//! | adds_total | counter | accepted `add`s (deduplicated adds are not counted) |
//! | queue_duration_seconds | histogram | time an item waited between `add` and `get` |
//! | work_duration_seconds | histogram | time between `get` and `done` |
//! | unfinished_work_seconds | settable gauge | sum of the ages of the items being processed |
//! | longest_running_processor_seconds | settable gauge | age of the oldest item being processed |
//! | retries_total | counter | `add_after` / `add_rate_limited` calls |
//!
//! The two "unfinished" gauges are refreshed every 500 ms by a background task while the queue
//! runs (started when the queue is built inside a tokio runtime).
//!
//! Without a name or provider the queue records nothing and does not even read the clock.

use std::fmt;
use std::sync::Arc;

/// A gauge that goes up and down by one.
pub trait GaugeMetric: Send + Sync {
    /// Adds one.
    fn inc(&self);
    /// Subtracts one.
    fn dec(&self);
}

/// A gauge set to an absolute value.
pub trait SettableGaugeMetric: Send + Sync {
    /// Sets the value.
    fn set(&self, value: f64);
}

/// A monotonically increasing counter.
pub trait CounterMetric: Send + Sync {
    /// Adds one.
    fn inc(&self);
}

/// A distribution of observed values (seconds, for the queue's durations).
pub trait HistogramMetric: Send + Sync {
    /// Records one observation.
    fn observe(&self, value: f64);
}

/// Creates the metrics of one named queue. Each method is called once per queue, with the
/// queue's name; implementations usually put the name in a label.
pub trait MetricsProvider: Send + Sync {
    /// The current depth of the queue.
    fn new_depth_metric(&self, name: &str) -> Arc<dyn GaugeMetric>;
    /// The number of accepted adds.
    fn new_adds_metric(&self, name: &str) -> Arc<dyn CounterMetric>;
    /// How long items wait in the queue before `get` (seconds).
    fn new_latency_metric(&self, name: &str) -> Arc<dyn HistogramMetric>;
    /// How long processing an item takes, `get` to `done` (seconds).
    fn new_work_duration_metric(&self, name: &str) -> Arc<dyn HistogramMetric>;
    /// Seconds of work in progress that has not been observed by `work_duration` yet.
    fn new_unfinished_work_seconds_metric(&self, name: &str) -> Arc<dyn SettableGaugeMetric>;
    /// Seconds the longest-running item has been processing.
    fn new_longest_running_processor_seconds_metric(
        &self,
        name: &str,
    ) -> Arc<dyn SettableGaugeMetric>;
    /// The number of retries (delayed or rate-limited adds).
    fn new_retries_metric(&self, name: &str) -> Arc<dyn CounterMetric>;
}

/// A provider whose metrics discard everything. Queues without a provider behave as if given
/// this one, without the cost.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoopMetricsProvider;

/// The metric type behind [`NoopMetricsProvider`].
#[derive(Debug, Clone, Copy, Default)]
struct Noop;

impl GaugeMetric for Noop {
    fn inc(&self) {}
    fn dec(&self) {}
}
impl SettableGaugeMetric for Noop {
    fn set(&self, _: f64) {}
}
impl CounterMetric for Noop {
    fn inc(&self) {}
}
impl HistogramMetric for Noop {
    fn observe(&self, _: f64) {}
}

impl MetricsProvider for NoopMetricsProvider {
    fn new_depth_metric(&self, _: &str) -> Arc<dyn GaugeMetric> {
        Arc::new(Noop)
    }
    fn new_adds_metric(&self, _: &str) -> Arc<dyn CounterMetric> {
        Arc::new(Noop)
    }
    fn new_latency_metric(&self, _: &str) -> Arc<dyn HistogramMetric> {
        Arc::new(Noop)
    }
    fn new_work_duration_metric(&self, _: &str) -> Arc<dyn HistogramMetric> {
        Arc::new(Noop)
    }
    fn new_unfinished_work_seconds_metric(&self, _: &str) -> Arc<dyn SettableGaugeMetric> {
        Arc::new(Noop)
    }
    fn new_longest_running_processor_seconds_metric(
        &self,
        _: &str,
    ) -> Arc<dyn SettableGaugeMetric> {
        Arc::new(Noop)
    }
    fn new_retries_metric(&self, _: &str) -> Arc<dyn CounterMetric> {
        Arc::new(Noop)
    }
}

/// The metrics of one queue, created once from a provider.
pub(crate) struct QueueMetrics {
    pub(crate) depth: Arc<dyn GaugeMetric>,
    pub(crate) adds: Arc<dyn CounterMetric>,
    pub(crate) latency: Arc<dyn HistogramMetric>,
    pub(crate) work_duration: Arc<dyn HistogramMetric>,
    pub(crate) unfinished_work_seconds: Arc<dyn SettableGaugeMetric>,
    pub(crate) longest_running_processor: Arc<dyn SettableGaugeMetric>,
    pub(crate) retries: Arc<dyn CounterMetric>,
}

impl QueueMetrics {
    pub(crate) fn new(provider: &dyn MetricsProvider, name: &str) -> Self {
        Self {
            depth: provider.new_depth_metric(name),
            adds: provider.new_adds_metric(name),
            latency: provider.new_latency_metric(name),
            work_duration: provider.new_work_duration_metric(name),
            unfinished_work_seconds: provider.new_unfinished_work_seconds_metric(name),
            longest_running_processor: provider.new_longest_running_processor_seconds_metric(name),
            retries: provider.new_retries_metric(name),
        }
    }
}

impl fmt::Debug for QueueMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueMetrics").finish_non_exhaustive()
    }
}
