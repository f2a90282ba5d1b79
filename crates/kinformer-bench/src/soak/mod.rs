//! The `soak` bench group: S0 — a typed and a lean informer kept busy for minutes over HTTP
//! against the embedded server, under churn and faults, with their caches checked against the
//! server at checkpoints and the process's memory, tasks and file descriptors watched.
//!
//! The driver is public: `crates/kinformer/tests/soak_http.rs` runs the same soak for a
//! minute (or, with `KINFORMER_LONG_TESTS=1`, for `KINFORMER_SOAK_SECS`) with checking
//! handlers of its own.
//!
//! # S0
//!
//! One process: the embedded server, 5,000 bench pods churned at 500 writes a second
//! ([`Churn`]), both informers ([`informers`]) and the driver ([`driver`]: compactions with
//! 410 relists, random watch drops, one simulated restart, checkpoints). The process figures
//! are the whole process's, server included. Duration: `KINFORMER_SOAK_SECS` (default 600).
//!
//! Metrics:
//! - `events_per_s`: notifications delivered to the two informers' handlers per second.
//! - `rss_start_mib`, `rss_end_mib`: median VmRSS of the first and of the last samples of the
//!   run's second half (each window a sixth of that half's samples, see [`sample::growth`]).
//! - `rss_growth_pct`: `(end - start) / start` in per cent.
//! - `tasks_growth`, `fds_growth`: the same medians' difference for live tokio tasks and open
//!   file descriptors.
//! - `cache_mismatches`: checkpoints × informers whose cache or handler still differed from the
//!   server's pods 30 s after the writer was held.
//! - `checkpoints`, `relists`: how many checkpoints ran, and how many lists the two informers
//!   made beyond their first (the compactions' 410s and the restart).
//! - `heap_start_mib`, `heap_end_mib`, `heap_growth_pct`: the same medians for the live heap
//!   (the bench's counting allocator, counting from the run's start): memory in use, without
//!   what the allocator keeps after freeing, which RSS includes.
//!
//! With `KINFORMER_BENCH_TRACE` set, every sample is printed to stderr after the run.

pub mod churn;
pub mod driver;
pub mod informers;
pub mod sample;

use std::sync::Arc;
use std::time::Duration;

use kinformer::wait::{BackoffManager, ExponentialBackoffManager, JitteredBackoffManager};
use kinformer_apiserver::{ServerConfig, TestServer};
use tokio_util::sync::CancellationToken;

pub use churn::Churn;
pub use driver::{SoakConfig, SoakReport, Subject};
use informers::{ViewHandler, lean_informer, typed_informer};

use crate::group::{BenchError, Group, Metrics};
use crate::run_informer::run_until_synced;

/// The longest wait for an informer's first sync.
const SYNC_WITHIN: Duration = Duration::from_secs(60);

/// The `soak` group.
pub(crate) const GROUP: Group = Group {
    name: "soak",
    workloads: &["S0"],
    run,
};

/// Pods kept on the server during S0.
const POPULATION: usize = 5_000;
/// S0's writes per second.
const WRITES_PER_S: u32 = 500;

fn run(workload: &str) -> Result<Metrics, BenchError> {
    match workload {
        "S0" => s0().map_err(|e| BenchError::Workload("S0".into(), e)),
        other => Err(BenchError::UnknownWorkload(other.to_string())),
    }
}

/// The soak's duration: `KINFORMER_SOAK_SECS` if set (and a number), else `default_secs`.
pub fn soak_duration(default_secs: u64) -> Duration {
    Duration::from_secs(
        std::env::var("KINFORMER_SOAK_SECS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default_secs),
    )
}

/// client-go's backoff shortened for a local server: 5 ms doubling to 40 ms.
fn quick_backoff() -> Box<dyn BackoffManager> {
    match ExponentialBackoffManager::new(
        Duration::from_millis(5),
        Duration::from_millis(40),
        Duration::from_secs(120),
        2.0,
        0.5,
    ) {
        Ok(b) => Box::new(b),
        // Not reached: the durations and factors above are valid.
        Err(_) => Box::new(JitteredBackoffManager::constant(Duration::from_millis(20))),
    }
}

fn s0() -> Result<Metrics, String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("building the runtime: {e}"))?;
    rt.block_on(s0_async())
}

async fn s0_async() -> Result<Metrics, String> {
    crate::alloc::start_counting();
    let config = SoakConfig {
        live_heap: Some(crate::alloc::live_bytes),
        ..SoakConfig::new(soak_duration(600), WRITES_PER_S)
    };
    let server = TestServer::start_with(ServerConfig::for_tests())
        .await
        .map_err(|e| e.to_string())?;
    let churn = Churn::seed(server.store(), POPULATION, 0x5000)?;
    let client = server.client_without_retries().map_err(|e| e.to_string())?;
    let typed = typed_informer(client.clone(), quick_backoff);
    let lean = lean_informer(client, quick_backoff);
    let (typed_view, lean_view) = (
        Arc::new(ViewHandler::default()),
        Arc::new(ViewHandler::default()),
    );
    typed
        .add_event_handler(Arc::clone(&typed_view))
        .map_err(|e| e.to_string())?;
    lean.add_event_handler(Arc::clone(&lean_view))
        .map_err(|e| e.to_string())?;
    let cancel = CancellationToken::new();
    let tasks = [
        run_until_synced(&typed, &cancel, SYNC_WITHIN, "S0").await?,
        run_until_synced(&lean, &cancel, SYNC_WITHIN, "S0").await?,
    ];
    let subjects = [
        typed_view.subject("typed", &typed),
        lean_view.subject("lean", &lean),
    ];
    let report = driver::run(&server, churn, &subjects, &config).await?;
    cancel.cancel();
    for task in tasks {
        task.await.map_err(|e| format!("informer task: {e}"))?;
    }
    let growth = sample::growth(&report.samples, config.duration)
        .ok_or("too few samples in the run's second half")?;
    // NaN where the counting allocator is not installed (the runner's binary installs it).
    let (heap_start, heap_end) = growth.heap_mib.unwrap_or((f64::NAN, f64::NAN));
    let relists =
        (typed.metrics().reflector.lists + lean.metrics().reflector.lists).saturating_sub(2);
    eprintln!(
        "S0: {:?}, {} writes, faults {:?}, {} checkpoints (slowest catch-up {:?})",
        report.elapsed,
        report.writes.total(),
        report.faults,
        report.checkpoints.len(),
        report
            .checkpoints
            .iter()
            .map(|c| c.waited)
            .max()
            .unwrap_or_default()
    );
    if std::env::var_os("KINFORMER_BENCH_TRACE").is_some() {
        for s in &report.samples {
            eprintln!(
                "S0 sample {:.1} s: rss {:.1} MiB, heap {:.1} MiB, {} tasks, {} fds",
                s.at.as_secs_f64(),
                s.rss_mib,
                s.heap_mib.unwrap_or(f64::NAN),
                s.tasks,
                s.fds
            );
        }
    }
    for c in report
        .checkpoints
        .iter()
        .filter(|c| !c.mismatches.is_empty())
    {
        eprintln!("S0: checkpoint at {:?}: {:?}", c.at, c.mismatches);
    }
    Ok(vec![
        (
            "events_per_s".into(),
            report.notifications as f64 / report.elapsed.as_secs_f64(),
        ),
        ("rss_start_mib".into(), growth.rss_start_mib),
        ("rss_end_mib".into(), growth.rss_end_mib),
        ("rss_growth_pct".into(), growth.rss_growth_pct),
        ("tasks_growth".into(), growth.tasks_growth),
        ("fds_growth".into(), growth.fds_growth),
        ("cache_mismatches".into(), report.mismatches() as f64),
        ("checkpoints".into(), report.checkpoints.len() as f64),
        ("relists".into(), relists as f64),
        ("heap_start_mib".into(), heap_start),
        ("heap_end_mib".into(), heap_end),
        (
            "heap_growth_pct".into(),
            (heap_end - heap_start) / heap_start * 100.0,
        ),
    ])
}
