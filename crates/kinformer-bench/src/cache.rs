//! Cache workloads (BENCHMARKS.md): W4 (indexer), W4-compact (W4 with a compact indexer),
//! W4R (memory with realistic pods, typed and compact) and W5 (delta queues as an informer
//! drives them). Self-contained: `run("W4")` etc. return `(metric, value, unit)` rows.
//!
//! Heap figures need [`crate::alloc::CountingAlloc`] installed as the global allocator; the
//! W4 workloads start its counting (so their timings include it), W5 runs without it.

use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kinformer::cache::fifo::{DeltaFifo, DeltaQueue, RealFifo};
use kinformer::cache::store::{
    CompactOptions, IndexFunc, Indexer, Indexers, NAMESPACE_INDEX, label_index_func,
    namespace_index_func,
};
use kinformer::cache::{CacheError, process_deltas};
use kinformer_apiserver::BenchPod;
use kube::core::PartialObjectMeta;

use crate::alloc::{live_bytes, peak_bytes, reset_peak};
use crate::realistic::RealisticPods;

/// The workloads this module runs.
pub const WORKLOADS: &[&str] = &["W4", "W4-compact", "W4R", "W4P", "W5"];

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
    if workload.starts_with("W4") {
        crate::alloc::start_counting();
    }
    match workload {
        "W4" => w4(false),
        "W4-compact" => w4(true),
        "W4R" => w4r(),
        "W4P" => w4p(),
        "W5" => w5(),
        other => Err(format!(
            "unknown cache workload {other:?} (known: {WORKLOADS:?})"
        )),
    }
}

/// The bench pod for index `i`, with label `app = a<app % 1000>` and resource version `i + 1`.
fn bench_pod(i: usize, app: usize) -> Pod {
    BenchPod::new(i)
        .app(app)
        .resource_version(i as u64 + 1)
        .typed()
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

/// W4's indexer; compact ones use the default options (MessagePack), or JSON with
/// `KINFORMER_COMPACT_FORMAT=json` (to compare the formats).
fn w4_indexer(compact: bool, app_label: &str) -> Result<Indexer<Pod>, String> {
    let indexers: Indexers<Pod> = [
        (NAMESPACE_INDEX.to_string(), namespace_index_func()),
        ("app".to_string(), label_index_func(app_label)),
    ]
    .into();
    if compact {
        let mut opts = CompactOptions::default();
        if std::env::var("KINFORMER_COMPACT_FORMAT").is_ok_and(|v| v == "json") {
            opts = opts.format(kinformer::cache::store::Format::Json);
        }
        Indexer::compact(indexers, opts).map_err(|e| e.to_string())
    } else {
        Ok(Indexer::new(indexers))
    }
}

/// W4 in typed mode (`compact == false`, metric names as BENCHMARKS.md) or compact mode
/// (every metric name with `_compact` appended). Beyond W4's metrics: `get_ns_per_op`
/// (100,000 `get_by_key` in a scattered order) and the relist peak: a `replace` of all
/// 100,000 objects, once with unchanged content (`relist_*`) and once with every object
/// changed (`relist_changed_*`); `*_peak_ratio` = (steady-state cache bytes + the most bytes
/// the replace allocated beyond them) / steady-state cache bytes. The new list itself is the
/// caller's (built before the measurement, kept alive during it, and not counted). Compact
/// mode adds `get_hot_ns_per_op_compact` (see [`hot_gets`]).
fn w4(compact: bool) -> Result<Vec<Row>, String> {
    let mut rows = w4_rows(compact)?;
    if compact {
        for r in &mut rows {
            r.0.push_str("_compact");
        }
    }
    Ok(rows)
}

fn w4_rows(compact: bool) -> Result<Vec<Row>, String> {
    let err = |e: kinformer::cache::store::IndexerError| e.to_string();
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
    let indexer = w4_indexer(compact, "app")?;
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

    // get_by_key in a scattered order.
    let keys: Vec<String> = (0..n)
        .map(|j| {
            let i = (j * 7919) % n;
            format!("ns-{}/pod-{i}", i % 100)
        })
        .collect();
    let (get_wall, get_cpu) = timed_gets(&indexer, &keys)?;
    drop(keys);

    // Relist peak: unchanged content, then every object changed.
    let steady = live_bytes().saturating_sub(base);
    let relist = |app_shift: usize| -> Result<f64, String> {
        let list: Vec<Arc<Pod>> = (0..n)
            .map(|i| Arc::new(bench_pod(i, i + app_shift)))
            .collect();
        // The list stays alive during the replace (as a reflector's list would until the
        // replace returns), so objects freed as the replace consumes it do not mask what the
        // indexer allocates.
        let kept = list.clone();
        let before = live_bytes();
        reset_peak();
        indexer.replace(list).map_err(err)?;
        let extra = peak_bytes().saturating_sub(before);
        drop(kept);
        Ok(((steady + extra) as f64 / steady.max(1) as f64 * 1000.0).round() / 1000.0)
    };
    let relist_ratio = relist(1)?;
    let relist_changed_ratio = relist(2)?;

    let per = |b: usize| b as f64 / n as f64;
    let nf = n as f64;
    let mut rows = vec![
        row("add_ns_per_op", add_wall / nf, "ns"),
        row("byindex_ns_per_item", by_wall / items, "ns"),
        row("update_ns_per_op", up_wall / nf, "ns"),
        row("get_ns_per_op", get_wall / nf, "ns"),
    ];
    if cpu_rows_wanted()
        && let (Some(a), Some(b), Some(u)) = (add_cpu, by_cpu, up_cpu)
    {
        rows.push(row("add_ns_per_op_cpu", a / nf, "ns"));
        rows.push(row("byindex_ns_per_item_cpu", b / items, "ns"));
        rows.push(row("update_ns_per_op_cpu", u / nf, "ns"));
        if let Some(g) = get_cpu {
            rows.push(row("get_ns_per_op_cpu", g / nf, "ns"));
        }
    }
    if base == 0 && live_bytes() == 0 {
        tracing::warn!("counting allocator not installed: heap figures omitted");
    } else {
        rows.push(row("heap_bytes_per_obj_total", per(total), "B"));
        if !compact {
            // In compact mode the indexer does not hold the typed objects, so "objects only"
            // and "indexer only" do not apply.
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
        rows.push(row("heap_bytes_per_obj_steady", per(steady), "B"));
        rows.push(row("relist_peak_ratio", relist_ratio, "x"));
        rows.push(row("relist_changed_peak_ratio", relist_changed_ratio, "x"));
    }
    rows.push(row("json_bytes_per_obj", json_bytes as f64 / 1000.0, "B"));
    if compact {
        drop(indexer);
        rows.push(row("get_hot_ns_per_op", hot_gets()?, "ns"));
    }
    Ok(rows)
}

/// Compact mode with a hot-object cache of 1,024: 10,000 bench pods stored, then 100,000
/// `get_by_key` over 1,000 of them (a controller re-reading the objects it is working on).
/// The heap figures above are without the cache.
fn hot_gets() -> Result<f64, String> {
    let indexers: Indexers<Pod> = [(NAMESPACE_INDEX.to_string(), namespace_index_func())].into();
    let indexer = Indexer::compact(indexers, CompactOptions::default().hot_objects(1_024))
        .map_err(|e| e.to_string())?;
    for i in 0..10_000 {
        indexer
            .add(Arc::new(bench_pod(i, i)))
            .map_err(|e| e.to_string())?;
    }
    let keys: Vec<String> = (0..100_000)
        .map(|j| {
            let i = (j * 7919) % 1_000 * 10;
            format!("ns-{}/pod-{i}", i % 100)
        })
        .collect();
    let (wall, _) = timed_gets(&indexer, &keys)?;
    Ok(wall / keys.len() as f64)
}

/// Times `get_by_key` of every key (wall and CPU time in ns); every key must be found.
fn timed_gets(indexer: &Indexer<Pod>, keys: &[String]) -> Result<(f64, Option<f64>), String> {
    let timer = PhaseTimer::start();
    let mut found = 0usize;
    for k in keys {
        found += usize::from(indexer.get_by_key(k).is_some());
    }
    let times = timer.stop();
    if found != keys.len() {
        return Err(format!("get_by_key found {found} of {}", keys.len()));
    }
    Ok(times)
}

/// W4R: W4's add phase with realistic pods, typed then compact (`_compact` names).
fn w4r() -> Result<Vec<Row>, String> {
    let err = |e: kinformer::cache::store::IndexerError| e.to_string();
    let n = W4_PODS;
    let per = |b: usize| b as f64 / n as f64;
    let app_label = "app.kubernetes.io/name";

    let json_bytes: usize = {
        let mut g = RealisticPods::new();
        (0..1000).map(|i| g.json(i).len()).sum()
    };

    // Typed: objects held in a Vec, then in the indexer alone.
    let base = live_bytes();
    let mut g = RealisticPods::new();
    let pods: Vec<Arc<Pod>> = (0..n)
        .map(|i| g.pod(i).map(Arc::new))
        .collect::<Result<_, _>>()?;
    drop(g);
    let objects_only = live_bytes().saturating_sub(base);
    let indexer = w4_indexer(false, app_label)?;
    for p in &pods {
        indexer.add(Arc::clone(p)).map_err(err)?;
    }
    drop(pods);
    let total = live_bytes().saturating_sub(base);
    drop(indexer);

    // Compact: pods generated one at a time, so only the indexer holds them.
    let base = live_bytes();
    let indexer = w4_indexer(true, app_label)?;
    let mut g = RealisticPods::new();
    for i in 0..n {
        indexer.add(Arc::new(g.pod(i)?)).map_err(err)?;
    }
    drop(g);
    let total_compact = live_bytes().saturating_sub(base);
    let stored = indexer.compact_stored_bytes();
    let timer = PhaseTimer::start();
    let mut found = 0usize;
    for k in indexer.list_keys().iter().take(10_000) {
        found += usize::from(indexer.get_by_key(k.as_str()).is_some());
    }
    let (get_wall, _) = timer.stop();

    Ok(vec![
        row("heap_bytes_per_obj_total_real", per(total), "B"),
        row(
            "heap_bytes_per_obj_objects_only_real",
            per(objects_only),
            "B",
        ),
        row("json_bytes_per_obj_real", json_bytes as f64 / 1000.0, "B"),
        row(
            "heap_bytes_per_obj_total_real_compact",
            per(total_compact),
            "B",
        ),
        row("stored_bytes_per_obj_real_compact", per(stored), "B"),
        row(
            "get_ns_per_op_real_compact",
            get_wall / found.max(1) as f64,
            "ns",
        ),
    ])
}

// W4P's projection: only what a controller reads of a pod; the type of the `projection`
// example (crate `kinformer-examples`), shared with it so that the figures it quotes are of this type.
use crate::pod_lite;

use pod_lite::PodLite;

/// Heap bytes per object of an indexer (W4's two indices) filled with 100,000 bench pods
/// turned into `T` one at a time.
fn lean_total<T: kube::Resource + Send + Sync + 'static>(
    make: impl Fn(Pod) -> T,
    app: impl Fn(&T) -> Option<String> + Send + Sync + 'static,
) -> Result<f64, String> {
    let base = live_bytes();
    let app: IndexFunc<T> = Arc::new(move |o: &T, out: &mut Vec<String>| {
        out.extend(app(o));
        Ok(())
    });
    let indexer = Indexer::<T>::new(
        [
            (NAMESPACE_INDEX.to_string(), namespace_index_func()),
            ("app".to_string(), app),
        ]
        .into(),
    );
    for i in 0..W4_PODS {
        indexer
            .add(Arc::new(make(bench_pod(i, i))))
            .map_err(|e| e.to_string())?;
    }
    let total = live_bytes().saturating_sub(base);
    drop(indexer);
    Ok(total as f64 / W4_PODS as f64)
}

/// W4P: W4's add phase with lean typed objects: a projection type and metadata only
/// (`PartialObjectMeta<Pod>`); heap bytes per object, indexer included.
fn w4p() -> Result<Vec<Row>, String> {
    let label = |m: &ObjectMeta| m.labels.as_ref().and_then(|l| l.get("app").cloned());
    let projection = lean_total(
        |p: Pod| PodLite::from(&p),
        move |p: &PodLite| label(&p.metadata),
    )?;
    let meta_only = lean_total(
        |p: Pod| PartialObjectMeta::<Pod> {
            types: None,
            metadata: p.metadata,
            _phantom: std::marker::PhantomData,
        },
        move |p: &PartialObjectMeta<Pod>| label(&p.metadata),
    )?;
    Ok(vec![
        row("heap_bytes_per_obj_total_projection", projection, "B"),
        row("heap_bytes_per_obj_total_metaonly", meta_only, "B"),
    ])
}

/// Pops until the queue is closed and drained, applying every batch to `indexer`; returns the
/// number of pops.
async fn drain(queue: &dyn DeltaQueue<Pod>, indexer: &Indexer<Pod>) -> Result<u64, String> {
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
async fn pop_all(queue: &dyn DeltaQueue<Pod>, indexer: &Indexer<Pod>) -> Result<(), String> {
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
    make: impl Fn(Arc<Indexer<Pod>>) -> Arc<dyn DeltaQueue<Pod>>,
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
