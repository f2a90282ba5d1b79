//! A [`MetricsProvider`] exporting to a `prometheus-client` [`Registry`].

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::{Family, MetricConstructor};
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use super::metrics::{
    CounterMetric, GaugeMetric, HistogramMetric, MetricsProvider, SettableGaugeMetric,
};

/// The label set of every queue metric: `name="<queue name>"`.
type Labels = Vec<(String, String)>;

/// Builds the duration histograms: 10 buckets from 10 ns, growing tenfold (as client-go).
#[derive(Debug, Clone, Copy, Default)]
struct DurationBuckets;

impl MetricConstructor<Histogram> for DurationBuckets {
    fn new_metric(&self) -> Histogram {
        Histogram::new(exponential_buckets(1e-8, 10.0, 10))
    }
}

/// Exports queue metrics as client-go names them, prefixed `workqueue_` and labelled with the
/// queue's name: `workqueue_depth`, `workqueue_adds_total`, `workqueue_queue_duration_seconds`,
/// `workqueue_work_duration_seconds`, `workqueue_unfinished_work_seconds`,
/// `workqueue_longest_running_processor_seconds`, `workqueue_retries_total`.
///
/// ```
/// use std::sync::Arc;
/// use prometheus_client::registry::Registry;
/// use kinformer::workqueue::{PrometheusMetricsProvider, Queue, QueueConfig};
///
/// let mut registry = Registry::default();
/// let provider = Arc::new(PrometheusMetricsProvider::register(&mut registry));
/// let queue = Queue::with_config(QueueConfig::named("pods", provider));
/// queue.add(1);
///
/// let mut text = String::new();
/// prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
/// assert!(text.contains(r#"workqueue_adds_total{name="pods"} 1"#));
/// assert!(text.contains(r#"workqueue_depth{name="pods"} 1"#));
/// ```
#[derive(Debug, Clone)]
pub struct PrometheusMetricsProvider {
    depth: Family<Labels, Gauge>,
    adds: Family<Labels, Counter>,
    latency: Family<Labels, Histogram, DurationBuckets>,
    work_duration: Family<Labels, Histogram, DurationBuckets>,
    unfinished_work_seconds: Family<Labels, Gauge<f64, AtomicU64>>,
    longest_running_processor: Family<Labels, Gauge<f64, AtomicU64>>,
    retries: Family<Labels, Counter>,
}

impl PrometheusMetricsProvider {
    /// Registers the queue metric families in `registry` (under the prefix `workqueue`) and
    /// returns a provider feeding them. Register once per registry; share the provider
    /// (it is cheap to clone) among all queues.
    pub fn register(registry: &mut Registry) -> Self {
        let provider = Self {
            depth: Family::default(),
            adds: Family::default(),
            latency: Family::new_with_constructor(DurationBuckets),
            work_duration: Family::new_with_constructor(DurationBuckets),
            unfinished_work_seconds: Family::default(),
            longest_running_processor: Family::default(),
            retries: Family::default(),
        };
        let r = registry.sub_registry_with_prefix("workqueue");
        r.register(
            "depth",
            "Current depth of workqueue",
            provider.depth.clone(),
        );
        r.register(
            "adds",
            "Total number of adds handled by workqueue",
            provider.adds.clone(),
        );
        r.register(
            "queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            provider.latency.clone(),
        );
        r.register(
            "work_duration_seconds",
            "How long in seconds processing an item from workqueue takes",
            provider.work_duration.clone(),
        );
        r.register(
            "unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been \
             observed by work_duration",
            provider.unfinished_work_seconds.clone(),
        );
        r.register(
            "longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running",
            provider.longest_running_processor.clone(),
        );
        r.register(
            "retries",
            "Total number of retries handled by workqueue",
            provider.retries.clone(),
        );
        provider
    }
}

fn labels(name: &str) -> Labels {
    vec![("name".to_string(), name.to_string())]
}

impl GaugeMetric for Gauge {
    fn inc(&self) {
        Gauge::inc(self);
    }
    fn dec(&self) {
        Gauge::dec(self);
    }
}

impl SettableGaugeMetric for Gauge<f64, AtomicU64> {
    fn set(&self, value: f64) {
        Gauge::set(self, value);
    }
}

impl CounterMetric for Counter {
    fn inc(&self) {
        Counter::inc(self);
    }
}

impl HistogramMetric for Histogram {
    fn observe(&self, value: f64) {
        Histogram::observe(self, value);
    }
}

impl MetricsProvider for PrometheusMetricsProvider {
    fn new_depth_metric(&self, name: &str) -> Arc<dyn GaugeMetric> {
        Arc::new(self.depth.get_or_create_owned(&labels(name)))
    }
    fn new_adds_metric(&self, name: &str) -> Arc<dyn CounterMetric> {
        Arc::new(self.adds.get_or_create_owned(&labels(name)))
    }
    fn new_latency_metric(&self, name: &str) -> Arc<dyn HistogramMetric> {
        Arc::new(self.latency.get_or_create_owned(&labels(name)))
    }
    fn new_work_duration_metric(&self, name: &str) -> Arc<dyn HistogramMetric> {
        Arc::new(self.work_duration.get_or_create_owned(&labels(name)))
    }
    fn new_unfinished_work_seconds_metric(&self, name: &str) -> Arc<dyn SettableGaugeMetric> {
        Arc::new(
            self.unfinished_work_seconds
                .get_or_create_owned(&labels(name)),
        )
    }
    fn new_longest_running_processor_seconds_metric(
        &self,
        name: &str,
    ) -> Arc<dyn SettableGaugeMetric> {
        Arc::new(
            self.longest_running_processor
                .get_or_create_owned(&labels(name)),
        )
    }
    fn new_retries_metric(&self, name: &str) -> Arc<dyn CounterMetric> {
        Arc::new(self.retries.get_or_create_owned(&labels(name)))
    }
}
