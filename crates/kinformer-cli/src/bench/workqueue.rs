//! The workqueue workloads W1–W3 of BENCHMARKS.md.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use kinformer::workqueue::{DelayingQueue, Queue};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tokio::time::Instant;

use super::{BenchError, Group, Metrics};

/// The workqueue group.
pub(super) const GROUP: Group = Group {
    name: "workqueue",
    workloads: &["W1", "W2", "W3"],
    run,
};

fn run(workload: &str) -> Result<Metrics, BenchError> {
    match workload {
        "W1" => runtime(true)?.block_on(w1_contention()),
        "W2" => Ok(runtime(false)?.block_on(w2_sequential())),
        "W3" => runtime(true)?.block_on(w3_delaying()),
        other => Err(BenchError::UnknownWorkload(other.to_string())),
    }
}

fn runtime(multi_thread: bool) -> Result<tokio::runtime::Runtime, BenchError> {
    let mut builder = if multi_thread {
        tokio::runtime::Builder::new_multi_thread()
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    Ok(builder.enable_all().build()?)
}

fn metric(name: &str, value: f64) -> (String, f64) {
    (name.to_string(), value)
}

/// W1: 4 producers × 250,000 adds of `ns-<k % 100>/pod-<k>`, k uniform in [0, 10,000);
/// 4 workers get/done; `shut_down_with_drain` after the producers; timed until every worker
/// saw the shutdown.
async fn w1_contention() -> Result<Metrics, BenchError> {
    const PRODUCERS: u64 = 4;
    const ADDS: usize = 250_000;
    const WORKERS: usize = 4;
    let mut rng = SmallRng::seed_from_u64(1);
    let keys: Vec<Vec<String>> = (0..PRODUCERS)
        .map(|_| {
            (0..ADDS)
                .map(|_| {
                    let k = rng.random_range(0..10_000u32);
                    format!("ns-{}/pod-{k}", k % 100)
                })
                .collect()
        })
        .collect();

    let queue: Queue<String> = Queue::new();
    let gets = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let workers: Vec<_> = (0..WORKERS)
        .map(|_| {
            let (queue, gets) = (queue.clone(), gets.clone());
            tokio::spawn(async move {
                let mut n = 0;
                while let Some(key) = queue.get().await {
                    queue.done(&key);
                    n += 1;
                }
                gets.fetch_add(n, Ordering::Relaxed);
            })
        })
        .collect();
    let producers: Vec<_> = keys
        .into_iter()
        .map(|keys| {
            let queue = queue.clone();
            tokio::spawn(async move {
                for key in keys {
                    queue.add(key);
                }
            })
        })
        .collect();
    for p in producers {
        p.await
            .map_err(|e| BenchError::Workload("W1", e.to_string()))?;
    }
    queue.shut_down_with_drain().await;
    for w in workers {
        w.await
            .map_err(|e| BenchError::Workload("W1", e.to_string()))?;
    }
    let wall = start.elapsed();
    let total = (PRODUCERS as usize * ADDS) as f64;
    Ok(vec![
        metric("wall_ms", wall.as_secs_f64() * 1e3),
        metric("adds_per_s", total / wall.as_secs_f64()),
        metric("gets", gets.load(Ordering::Relaxed) as f64),
    ])
}

/// W2: add 1,000,000 distinct integers, then get + done all of them, on one task.
async fn w2_sequential() -> Metrics {
    const N: u64 = 1_000_000;
    let queue: Queue<u64> = Queue::new();
    let start = Instant::now();
    for i in 0..N {
        queue.add(i);
    }
    for _ in 0..N {
        if let Some(i) = queue.get().await {
            queue.done(&i);
        }
    }
    let wall = start.elapsed();
    vec![metric("ns_per_item", wall.as_nanos() as f64 / N as f64)]
}

/// W3: `add_after` of 100,000 distinct integers with delays uniform in [0, 1 s] (seed 42),
/// one consumer; lateness = dequeue time − (clock just before the call + delay).
async fn w3_delaying() -> Result<Metrics, BenchError> {
    const N: usize = 100_000;
    let mut rng = SmallRng::seed_from_u64(42);
    let delays: Vec<Duration> = (0..N)
        .map(|_| Duration::from_nanos(rng.random_range(0..=1_000_000_000)))
        .collect();
    let ready_ns: Arc<Vec<AtomicU64>> = Arc::new((0..N).map(|_| AtomicU64::new(0)).collect());

    let queue: DelayingQueue<usize> = DelayingQueue::new();
    let base = Instant::now();
    let consumer = {
        let (queue, ready_ns) = (queue.clone(), ready_ns.clone());
        tokio::spawn(async move {
            let mut lateness = Vec::with_capacity(N);
            let mut last = base;
            for _ in 0..N {
                let Some(i) = queue.get().await else { break };
                last = Instant::now();
                let got = (last - base).as_nanos() as f64;
                let ready = ready_ns[i].load(Ordering::Acquire) as f64;
                lateness.push((got - ready) / 1e6);
                queue.done(&i);
            }
            (lateness, last)
        })
    };
    for (i, delay) in delays.into_iter().enumerate() {
        let now = Instant::now();
        let ready = (now - base + delay).as_nanos();
        ready_ns[i].store(u64::try_from(ready).unwrap_or(u64::MAX), Ordering::Release);
        queue.add_after(i, delay);
    }
    let (mut lateness, last) = consumer
        .await
        .map_err(|e| BenchError::Workload("W3", e.to_string()))?;
    queue.shut_down();
    if lateness.len() != N {
        return Err(BenchError::Workload(
            "W3",
            format!("only {} of {N} items arrived", lateness.len()),
        ));
    }
    lateness.sort_by(f64::total_cmp);
    let mean = lateness.iter().sum::<f64>() / N as f64;
    let p99 = lateness[(N * 99).div_ceil(100) - 1];
    let last_minus_1s = (last - base).as_secs_f64() * 1e3 - 1000.0;
    Ok(vec![
        metric("last_minus_1s_ms", last_minus_1s),
        metric("mean_lateness_ms", mean),
        metric("p99_lateness_ms", p99),
    ])
}
