//! Queue metrics after a scripted sequence, recorded by a test provider.

use std::sync::Arc;
use std::time::Duration;

use kinformer::workqueue::{
    CounterMetric, DelayingQueue, GaugeMetric, HistogramMetric, MetricsProvider, Queue,
    QueueConfig, SettableGaugeMetric,
};
use parking_lot::Mutex;

#[derive(Debug, Clone, PartialEq)]
enum Event {
    Inc,
    Dec,
    Set(f64),
    Observe(f64),
}

/// Records every metric event as `(queue name, metric, event)`.
#[derive(Default)]
struct Recorder {
    events: Mutex<Vec<(String, &'static str, Event)>>,
}

struct Metric {
    recorder: Arc<Recorder>,
    queue: String,
    metric: &'static str,
}

impl Metric {
    fn record(&self, e: Event) {
        self.recorder
            .events
            .lock()
            .push((self.queue.clone(), self.metric, e));
    }
}

impl GaugeMetric for Metric {
    fn inc(&self) {
        self.record(Event::Inc);
    }
    fn dec(&self) {
        self.record(Event::Dec);
    }
}
impl CounterMetric for Metric {
    fn inc(&self) {
        self.record(Event::Inc);
    }
}
impl SettableGaugeMetric for Metric {
    fn set(&self, v: f64) {
        self.record(Event::Set(v));
    }
}
impl HistogramMetric for Metric {
    fn observe(&self, v: f64) {
        self.record(Event::Observe(v));
    }
}

struct Provider(Arc<Recorder>);

impl Provider {
    fn metric(&self, queue: &str, metric: &'static str) -> Arc<Metric> {
        Arc::new(Metric {
            recorder: self.0.clone(),
            queue: queue.to_string(),
            metric,
        })
    }
}

impl MetricsProvider for Provider {
    fn new_depth_metric(&self, name: &str) -> Arc<dyn GaugeMetric> {
        self.metric(name, "depth")
    }
    fn new_adds_metric(&self, name: &str) -> Arc<dyn CounterMetric> {
        self.metric(name, "adds")
    }
    fn new_latency_metric(&self, name: &str) -> Arc<dyn HistogramMetric> {
        self.metric(name, "latency")
    }
    fn new_work_duration_metric(&self, name: &str) -> Arc<dyn HistogramMetric> {
        self.metric(name, "work_duration")
    }
    fn new_unfinished_work_seconds_metric(&self, name: &str) -> Arc<dyn SettableGaugeMetric> {
        self.metric(name, "unfinished")
    }
    fn new_longest_running_processor_seconds_metric(
        &self,
        name: &str,
    ) -> Arc<dyn SettableGaugeMetric> {
        self.metric(name, "longest")
    }
    fn new_retries_metric(&self, name: &str) -> Arc<dyn CounterMetric> {
        self.metric(name, "retries")
    }
}

/// The events of one metric.
fn events(r: &Recorder, metric: &str) -> Vec<Event> {
    r.events
        .lock()
        .iter()
        .filter(|(_, m, _)| *m == metric)
        .map(|(_, _, e)| e.clone())
        .collect()
}

fn count(r: &Recorder, metric: &str) -> i64 {
    events(r, metric)
        .iter()
        .map(|e| match e {
            Event::Inc => 1,
            Event::Dec => -1,
            _ => 0,
        })
        .sum()
}

fn observations(r: &Recorder, metric: &str) -> Vec<f64> {
    events(r, metric)
        .into_iter()
        .filter_map(|e| match e {
            Event::Observe(v) => Some(v),
            _ => None,
        })
        .collect()
}

fn last_set(r: &Recorder, metric: &str) -> Option<f64> {
    events(r, metric).into_iter().rev().find_map(|e| match e {
        Event::Set(v) => Some(v),
        _ => None,
    })
}

fn assert_close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() < 1e-9, "{got:?} vs {want:?}");
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[tokio::test(start_paused = true)]
async fn named_queue_reports_client_go_metrics_for_a_scripted_sequence() {
    let recorder = Arc::new(Recorder::default());
    let q = Queue::with_config(QueueConfig::named(
        "test",
        Arc::new(Provider(recorder.clone())),
    ));

    q.add("a");
    q.add("b");
    q.add("a"); // deduplicated: not counted
    assert_eq!(count(&recorder, "adds"), 2);
    assert_eq!(count(&recorder, "depth"), 2);

    tokio::time::sleep(ms(100)).await;
    let a = q.get().await.unwrap();
    assert_eq!(count(&recorder, "depth"), 1);
    assert_close(&observations(&recorder, "latency"), &[0.1]);

    tokio::time::sleep(ms(50)).await;
    q.add("a"); // while processing: counted, depth up, comes back after done
    assert_eq!(count(&recorder, "adds"), 3);
    assert_eq!(count(&recorder, "depth"), 2);

    tokio::time::sleep(ms(50)).await;
    q.done(&a); // 200 ms after start, 100 ms of work
    assert_close(&observations(&recorder, "work_duration"), &[0.1]);

    let b = q.get().await.unwrap(); // waited 200 ms
    let a2 = q.get().await.unwrap(); // re-added 50 ms ago
    assert_eq!((b, a2), ("b", "a"));
    assert_eq!(count(&recorder, "depth"), 0);
    assert_close(&observations(&recorder, "latency"), &[0.1, 0.2, 0.05]);

    // The unfinished-work gauges refresh every 500 ms: at t = 500 ms both items have been
    // processing for 300 ms.
    tokio::time::sleep(ms(301)).await;
    assert_close(&[last_set(&recorder, "unfinished").unwrap()], &[0.6]);
    assert_close(&[last_set(&recorder, "longest").unwrap()], &[0.3]);

    q.done(&b);
    q.done(&a2);
    assert_close(
        &observations(&recorder, "work_duration"),
        &[0.1, 0.301, 0.301],
    );
    tokio::time::sleep(ms(500)).await;
    assert_eq!(last_set(&recorder, "unfinished"), Some(0.0));
    assert_eq!(last_set(&recorder, "longest"), Some(0.0));
    assert_eq!(count(&recorder, "retries"), 0);
    assert!(
        recorder
            .events
            .lock()
            .iter()
            .all(|(name, _, _)| name == "test"),
        "every metric carries the queue's name"
    );
}

#[tokio::test(start_paused = true)]
async fn delayed_adds_count_as_retries() {
    let recorder = Arc::new(Recorder::default());
    let q = DelayingQueue::with_config(QueueConfig::named(
        "delayed",
        Arc::new(Provider(recorder.clone())),
    ));
    q.add_after(1, ms(10));
    q.add_after(2, Duration::ZERO);
    q.add(3);
    assert_eq!(count(&recorder, "retries"), 2);
    assert_eq!(count(&recorder, "adds"), 2);
    tokio::time::sleep(ms(11)).await;
    assert_eq!(count(&recorder, "adds"), 3);
    q.shut_down();
    q.add_after(4, ms(1));
    assert_eq!(
        count(&recorder, "retries"),
        2,
        "no retry counted after shutdown"
    );
}

#[tokio::test]
async fn unnamed_queue_records_nothing() {
    let recorder = Arc::new(Recorder::default());
    let q = Queue::with_config(QueueConfig {
        name: String::new(),
        metrics_provider: Some(Arc::new(Provider(recorder.clone()))),
    });
    q.add(1);
    let i = q.get().await.unwrap();
    q.done(&i);
    assert!(recorder.events.lock().is_empty());
}

#[cfg(feature = "prometheus")]
#[tokio::test]
async fn prometheus_provider_exports_every_metric_with_the_queue_name() {
    use kinformer::workqueue::PrometheusMetricsProvider;
    use prometheus_client::registry::Registry;

    let mut registry = Registry::default();
    let provider = Arc::new(PrometheusMetricsProvider::register(&mut registry));
    let q = DelayingQueue::with_config(QueueConfig::named("pods", provider));
    q.add(1);
    q.add_after(2, Duration::ZERO);
    let i = q.get().await.unwrap();
    q.done(&i);

    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    for line in [
        r#"workqueue_depth{name="pods"} 1"#,
        r#"workqueue_adds_total{name="pods"} 2"#,
        r#"workqueue_retries_total{name="pods"} 1"#,
        r#"workqueue_queue_duration_seconds_count{name="pods"} 1"#,
        r#"workqueue_work_duration_seconds_count{name="pods"} 1"#,
        r#"workqueue_unfinished_work_seconds{name="pods"}"#,
        r#"workqueue_longest_running_processor_seconds{name="pods"}"#,
    ] {
        assert!(text.contains(line), "missing {line} in\n{text}");
    }
}

#[tokio::test(start_paused = true)]
async fn unfinished_work_task_ends_on_shutdown_and_on_drop() {
    let metrics = tokio::runtime::Handle::current().metrics();
    let base = metrics.num_alive_tasks();
    let provider = Arc::new(Provider(Arc::new(Recorder::default())));
    let q: Queue<u8> = Queue::with_config(QueueConfig::named("a", provider.clone()));
    assert_eq!(metrics.num_alive_tasks(), base + 1);
    q.shut_down();
    tokio::task::yield_now().await;
    tokio::task::yield_now().await;
    assert_eq!(metrics.num_alive_tasks(), base);

    let q: Queue<u8> = Queue::with_config(QueueConfig::named("b", provider));
    assert_eq!(metrics.num_alive_tasks(), base + 1);
    drop(q);
    tokio::task::yield_now().await;
    tokio::task::yield_now().await;
    assert_eq!(metrics.num_alive_tasks(), base);
}
