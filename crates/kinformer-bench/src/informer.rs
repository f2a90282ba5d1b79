//! Informer workload (BENCHMARKS.md): W6, a shared informer end to end in process over the
//! in-memory `FakeListerWatcher`. Self-contained: `run("W6")` returns `(metric, value, unit)`
//! rows.
//!
//! Timing: the source is seeded with 100,000 bench pods (and its change log compacted) before
//! the clock starts; `run_to_hassynced_ms` and `run_to_all_adds_ms` count from the call to
//! `run`; `modify_to_all_updates_ms` from the first of 100,000 modifications (objects built
//! beforehand) to the handler's 100,000th update.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use k8s_openapi::api::core::v1::Pod;
use kinformer::cache::testing::FakeListerWatcher;
use kinformer::cache::{HasSynced, InformerOptions, ResourceEventHandler, SharedIndexInformer};
use kinformer_apiserver::BenchPod;

use crate::proc_status::peak_rss_mib;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// The workloads this module runs.
pub const WORKLOADS: &[&str] = &["W6"];

/// One result row: metric name, value, unit.
type Row = (String, f64, String);

const W6_PODS: usize = 100_000;

/// Runs one workload.
///
/// # Errors
/// An unknown workload name, or a failure during the run.
pub fn run(workload: &str) -> Result<Vec<Row>, String> {
    match workload {
        "W6" => w6(),
        other => Err(format!(
            "unknown informer workload {other:?} (known: {WORKLOADS:?})"
        )),
    }
}

/// The bench pod for index `i` (BENCHMARKS.md), with environment `MODE=<mode>`.
fn bench_pod(i: usize, mode: &str) -> Pod {
    BenchPod::new(i).mode(mode).typed()
}

fn row(name: &str, value: f64, unit: &str) -> Row {
    (name.to_string(), value, unit.to_string())
}

/// Counts adds and updates; wakes the waiter when a target is reached.
#[derive(Debug)]
struct Counter {
    adds: AtomicU64,
    updates: AtomicU64,
    target: u64,
    all_adds: Notify,
    all_updates: Notify,
}

impl ResourceEventHandler<Pod> for Counter {
    fn on_add(&self, _: &Arc<Pod>, _: bool) {
        if self.adds.fetch_add(1, Ordering::Relaxed) + 1 == self.target {
            self.all_adds.notify_one();
        }
    }
    fn on_update(&self, _: &Arc<Pod>, _: &Arc<Pod>) {
        if self.updates.fetch_add(1, Ordering::Relaxed) + 1 == self.target {
            self.all_updates.notify_one();
        }
    }
}

/// With `KINFORMER_BENCH_TRACE` set, prints the peak RSS at a phase boundary to stderr.
fn trace_phase(phase: &str) {
    if std::env::var_os("KINFORMER_BENCH_TRACE").is_some() {
        eprintln!(
            "W6 {phase}: peak_rss_mib {:.1}",
            peak_rss_mib().unwrap_or(0.0)
        );
    }
}

fn w6() -> Result<Vec<Row>, String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("building the runtime: {e}"))?;
    rt.block_on(w6_async())
}

async fn w6_async() -> Result<Vec<Row>, String> {
    let lw = FakeListerWatcher::<Pod>::new();
    for i in 0..W6_PODS {
        lw.add(bench_pod(i, "bench")).map_err(|e| e.to_string())?;
    }
    lw.reset_change_log();
    trace_phase("seeded");
    // Shared pointers, handed over as they are (the source keeps each without a copy, as
    // client-go's fake source keeps the pointer it is given).
    let modified: Vec<Arc<Pod>> = (0..W6_PODS)
        .map(|i| Arc::new(bench_pod(i, "modified")))
        .collect();
    trace_phase("built modifications");
    let target = u64::try_from(W6_PODS).map_err(|e| e.to_string())?;
    let counter = Arc::new(Counter {
        adds: AtomicU64::new(0),
        updates: AtomicU64::new(0),
        target,
        all_adds: Notify::new(),
        all_updates: Notify::new(),
    });
    let informer = SharedIndexInformer::new(lw.clone(), InformerOptions::new("w6-pods"));
    informer
        .add_event_handler(Arc::clone(&counter))
        .map_err(|e| e.to_string())?;

    let cancel = CancellationToken::new();
    let start = Instant::now();
    let run = tokio::spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });
    informer.wait_synced().await;
    let synced_ms = start.elapsed().as_secs_f64() * 1e3;
    counter.all_adds.notified().await;
    let adds_ms = start.elapsed().as_secs_f64() * 1e3;

    trace_phase("all adds");
    let modify_start = Instant::now();
    for pod in modified {
        lw.update(pod).map_err(|e| e.to_string())?;
    }
    counter.all_updates.notified().await;
    let updates_ms = modify_start.elapsed().as_secs_f64() * 1e3;

    cancel.cancel();
    run.await
        .map_err(|e| format!("informer task: {e}"))?
        .map_err(|e| e.to_string())?;
    if informer.get_indexer().len() != W6_PODS {
        return Err(format!(
            "cache holds {} objects, expected {W6_PODS}",
            informer.get_indexer().len()
        ));
    }
    Ok(vec![
        row("run_to_hassynced_ms", synced_ms, "ms"),
        row("run_to_all_adds_ms", adds_ms, "ms"),
        row("modify_to_all_updates_ms", updates_ms, "ms"),
        row("peak_rss_mib", peak_rss_mib()?, "MiB"),
    ])
}
