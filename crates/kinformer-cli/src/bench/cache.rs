//! Cache workloads (BENCHMARKS.md): W4 (indexer) and W5 (delta queues as an informer drives
//! them). Self-contained: `run("W4")` / `run("W5")` return `(metric, value, unit)` rows.
//!
//! Heap figures need [`super::alloc::CountingAlloc`] installed as the global allocator.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::api::core::v1::{Container, EnvVar, Pod, PodSpec};
use kinformer::cache::{
    CacheError, DeltaFifo, Indexer, NAMESPACE_INDEX, Queue, RealFifo, label_index_func,
    namespace_index_func, process_deltas,
};

use super::alloc::live_bytes;

/// The workloads this module runs.
pub const WORKLOADS: &[&str] = &["W4", "W5"];

/// One result row: metric name, value, unit.
type Row = (String, f64, String);

const W4_PODS: usize = 100_000;
const W4_BY_INDEX_CALLS: usize = 1_000;
const W5_PODS: usize = 100_000;
const W5_UPDATES: usize = 1_000_000;
const W5_HOT_SET: usize = 10_000;

/// Runs one workload.
///
/// # Errors
/// An unknown workload name, or a cache error during the run.
pub fn run(workload: &str) -> Result<Vec<Row>, String> {
    match workload {
        "W4" => w4(),
        "W5" => w5(),
        other => Err(format!(
            "unknown cache workload {other:?} (known: {WORKLOADS:?})"
        )),
    }
}

/// The bench pod for index `i`, with label `app = a<app>`.
pub fn bench_pod(i: usize, app: usize) -> Pod {
    let mut pod = Pod::default();
    let m = &mut pod.metadata;
    m.name = Some(format!("pod-{i}"));
    m.namespace = Some(format!("ns-{}", i % 100));
    m.resource_version = Some((i + 1).to_string());
    m.labels = Some(BTreeMap::from([
        ("app".to_string(), format!("a{}", app % 1000)),
        ("tier".to_string(), format!("t{}", i % 3)),
    ]));
    pod.spec = Some(PodSpec {
        containers: vec![Container {
            name: "app".into(),
            image: Some(format!("registry.example/app:1.{}", i % 10)),
            env: Some(vec![
                EnvVar {
                    name: "POD_INDEX".into(),
                    value: Some(i.to_string()),
                    ..Default::default()
                },
                EnvVar {
                    name: "MODE".into(),
                    value: Some("bench".into()),
                    ..Default::default()
                },
            ]),
            ..Default::default()
        }],
        ..Default::default()
    });
    pod
}

/// Nanoseconds the current thread has spent on a CPU (Linux `schedstat`), if available.
fn thread_cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

/// Times a phase by wall clock and, on Linux, by the thread's CPU time: on a shared machine
/// the CPU time shows the cost without the time spent waiting for a core.
struct PhaseTimer {
    wall: Instant,
    cpu: Option<u64>,
}

impl PhaseTimer {
    fn start() -> Self {
        PhaseTimer {
            wall: Instant::now(),
            cpu: thread_cpu_ns(),
        }
    }

    /// (wall ns, cpu ns) since start.
    fn stop(&self) -> (f64, Option<f64>) {
        let wall = self.wall.elapsed().as_nanos() as f64;
        let cpu = match (self.cpu, thread_cpu_ns()) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a) as f64),
            _ => None,
        };
        (wall, cpu)
    }
}

/// With `KINFORMER_BENCH_CPU=1`, W4 also prints `<metric>_cpu` rows (thread CPU time).
fn cpu_rows_wanted() -> bool {
    std::env::var("KINFORMER_BENCH_CPU").is_ok_and(|v| v == "1")
}

fn row(name: &str, value: f64, unit: &str) -> Row {
    (name.to_string(), value, unit.to_string())
}

fn w4_indexer() -> Indexer<Pod> {
    Indexer::new(
        [
            (NAMESPACE_INDEX.to_string(), namespace_index_func()),
            ("app".to_string(), label_index_func("app")),
        ]
        .into(),
    )
}

fn w4() -> Result<Vec<Row>, String> {
    let err = |e: kinformer::cache::IndexerError| e.to_string();
    let n = W4_PODS;

    // Objects only: the pods held in a plain Vec.
    let base = live_bytes();
    let pods: Vec<Arc<Pod>> = (0..n).map(|i| Arc::new(bench_pod(i, i))).collect();
    let objects_only = live_bytes().saturating_sub(base);
    let json_bytes: usize = pods
        .iter()
        .take(1000)
        .map(|p| serde_json::to_vec(p.as_ref()).map(|v| v.len()).unwrap_or(0))
        .sum();

    // Add.
    let indexer = w4_indexer();
    let timer = PhaseTimer::start();
    for p in &pods {
        indexer.add(Arc::clone(p)).map_err(err)?;
    }
    let (add_wall, add_cpu) = timer.stop();

    // Total: the indexer alone holds the pods.
    drop(pods);
    let total = live_bytes().saturating_sub(base);

    // by_index.
    let values: Vec<String> = (0..W4_BY_INDEX_CALLS)
        .map(|i| format!("ns-{}", i % 100))
        .collect();
    let timer = PhaseTimer::start();
    let mut items = 0usize;
    for v in &values {
        items += indexer.by_index(NAMESPACE_INDEX, v).map_err(err)?.len();
    }
    let (by_wall, by_cpu) = timer.stop();
    let items = items.max(1) as f64;

    // Update every pod, moving it to the next `app` value.
    let updated: Vec<Arc<Pod>> = (0..n).map(|i| Arc::new(bench_pod(i, i + 1))).collect();
    let timer = PhaseTimer::start();
    for p in &updated {
        indexer.update(Arc::clone(p)).map_err(err)?;
    }
    let (up_wall, up_cpu) = timer.stop();
    drop(updated);

    let per = |b: usize| b as f64 / n as f64;
    let nf = n as f64;
    let mut rows = vec![
        row("add_ns_per_op", add_wall / nf, "ns"),
        row("byindex_ns_per_item", by_wall / items, "ns"),
        row("update_ns_per_op", up_wall / nf, "ns"),
    ];
    if cpu_rows_wanted()
        && let (Some(a), Some(b), Some(u)) = (add_cpu, by_cpu, up_cpu)
    {
        rows.push(row("add_ns_per_op_cpu", a / nf, "ns"));
        rows.push(row("byindex_ns_per_item_cpu", b / items, "ns"));
        rows.push(row("update_ns_per_op_cpu", u / nf, "ns"));
    }
    if base == 0 && live_bytes() == 0 {
        tracing::warn!("counting allocator not installed: heap figures omitted");
    } else {
        rows.push(row("heap_bytes_per_obj_total", per(total), "B"));
        rows.push(row(
            "heap_bytes_per_obj_objects_only",
            per(objects_only),
            "B",
        ));
        rows.push(row(
            "heap_bytes_per_obj_indexer_only",
            per(total.saturating_sub(objects_only)),
            "B",
        ));
    }
    rows.push(row("json_bytes_per_obj", json_bytes as f64 / 1000.0, "B"));
    Ok(rows)
}

/// Pops until the queue is closed and drained, applying every batch to `indexer`; returns the
/// number of pops.
async fn drain(queue: &dyn Queue<Pod>, indexer: &Indexer<Pod>) -> Result<u64, String> {
    let mut pops = 0u64;
    let mut failed = None;
    loop {
        let res = queue
            .pop(&mut |p| {
                if let Err(e) =
                    process_deltas(indexer, p.deltas, p.is_in_initial_list, &mut |_n| {})
                {
                    failed = Some(e.to_string());
                }
            })
            .await;
        match res {
            Ok(()) => pops += 1,
            Err(CacheError::Closed) => break,
            Err(e) => return Err(e.to_string()),
        }
    }
    match failed {
        Some(e) => Err(e),
        None => Ok(pops),
    }
}

/// Pops exactly until the queue is empty (phase 1: nothing else is writing).
async fn pop_all(queue: &dyn Queue<Pod>, indexer: &Indexer<Pod>) -> Result<(), String> {
    while !queue.is_empty() {
        queue
            .pop(&mut |p| {
                let _ = process_deltas(indexer, p.deltas, p.is_in_initial_list, &mut |_n| {});
            })
            .await
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn w5_one(
    rt: &tokio::runtime::Runtime,
    make: impl Fn(Arc<Indexer<Pod>>) -> Arc<dyn Queue<Pod>>,
    suffix: &str,
) -> Result<Vec<Row>, String> {
    // Phase 1: replace 100,000 pods, pop everything into the indexer.
    let indexer = Arc::new(Indexer::<Pod>::new(
        [(NAMESPACE_INDEX.to_string(), namespace_index_func())].into(),
    ));
    let queue = make(Arc::clone(&indexer));
    let pods: Vec<Arc<Pod>> = (0..W5_PODS).map(|i| Arc::new(bench_pod(i, i))).collect();
    let start = Instant::now();
    queue.replace(pods, "1").map_err(|e| e.to_string())?;
    rt.block_on(pop_all(queue.as_ref(), &indexer))?;
    let p1_ms = start.elapsed().as_secs_f64() * 1e3;
    if !queue.has_synced() {
        return Err("queue did not sync after phase 1".into());
    }

    // Phase 2: 1,000,000 updates of a 10,000-pod hot set against one concurrent popper.
    let hot: Vec<Arc<Pod>> = (0..W5_HOT_SET)
        .map(|i| Arc::new(bench_pod(i, i + 7)))
        .collect();
    let start = Instant::now();
    let popper = {
        let queue = Arc::clone(&queue);
        let indexer = Arc::clone(&indexer);
        rt.spawn(async move { drain(queue.as_ref(), &indexer).await })
    };
    for i in 0..W5_UPDATES {
        queue
            .update(Arc::clone(&hot[i % W5_HOT_SET]))
            .map_err(|e| e.to_string())?;
    }
    queue.close();
    let pops = rt
        .block_on(popper)
        .map_err(|e| format!("popper task failed: {e}"))??;
    let p2_ms = start.elapsed().as_secs_f64() * 1e3;
    if indexer.len() != W5_PODS {
        return Err(format!(
            "indexer holds {} pods, expected {W5_PODS}",
            indexer.len()
        ));
    }
    Ok(vec![
        row(&format!("p1_replace_plus_pop_all_ms{suffix}"), p1_ms, "ms"),
        row(&format!("p2_wall_ms{suffix}"), p2_ms, "ms"),
        row(&format!("p2_pops{suffix}"), pops as f64, "1"),
    ])
}

fn w5() -> Result<Vec<Row>, String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .build()
        .map_err(|e| e.to_string())?;
    let mut rows = w5_one(
        &rt,
        |idx| Arc::new(DeltaFifo::new().with_known_objects(idx)),
        "",
    )?;
    rows.extend(w5_one(
        &rt,
        |idx| Arc::new(RealFifo::new().with_known_objects(idx)),
        "_realfifo",
    )?);
    Ok(rows)
}
