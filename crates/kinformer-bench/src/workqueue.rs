//! The workqueue workloads W1–W3 of BENCHMARKS.md, their sizes as parameters: the runner runs
//! them at BENCHMARKS.md's sizes ([`Contention::W1`], [`Sequential::W2`], [`Delaying::W3`]) and
//! times them itself; this crate's criterion benches (`benches/workqueue.rs`) run the same code
//! scaled down, so that one iteration is short.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use kinformer::workqueue::{DelayingQueue, Queue};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tokio::time::Instant;

use crate::group::{BenchError, Group, Metrics};

/// The workqueue group.
pub(crate) const GROUP: Group = Group {
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

/// W1's shape: producers adding string keys `ns-<k % 100>/pod-<k>`, k uniform in [0, 10,000),
/// workers getting and marking them done, then `shut_down_with_drain` after the producers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Contention {
    /// Producer tasks.
    pub producers: usize,
    /// Adds per producer.
    pub adds: usize,
    /// Worker tasks.
    pub workers: usize,
}

impl Contention {
    /// W1: 4 producers × 250,000 adds, 4 workers.
    pub const W1: Contention = Contention {
        producers: 4,
        adds: 250_000,
        workers: 4,
    };

    /// Every producer's keys, from one generator seeded with 1 (generated before timing).
    pub fn keys(&self) -> Vec<Vec<String>> {
        let mut rng = SmallRng::seed_from_u64(1);
        (0..self.producers)
            .map(|_| {
                (0..self.adds)
                    .map(|_| {
                        let k = rng.random_range(0..10_000u32);
                        format!("ns-{}/pod-{k}", k % 100)
                    })
                    .collect()
            })
            .collect()
    }

    /// Runs the workload on the current runtime with `keys` (one list per producer) until every
    /// worker saw the shutdown; returns the number of gets.
    ///
    /// # Errors
    /// A producer or worker task that panicked.
    pub async fn run(&self, keys: Vec<Vec<String>>) -> Result<usize, BenchError> {
        let queue: Queue<String> = Queue::new();
        let gets = Arc::new(AtomicUsize::new(0));
        let workers: Vec<_> = (0..self.workers)
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
                .map_err(|e| BenchError::Workload("W1".into(), e.to_string()))?;
        }
        queue.shut_down_with_drain().await;
        for w in workers {
            w.await
                .map_err(|e| BenchError::Workload("W1".into(), e.to_string()))?;
        }
        Ok(gets.load(Ordering::Relaxed))
    }
}

/// W2's shape: add distinct integers, then get + done all of them, on one task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sequential {
    /// Items added.
    pub items: u64,
}

impl Sequential {
    /// W2: 1,000,000 items.
    pub const W2: Sequential = Sequential { items: 1_000_000 };

    /// Runs the workload on the current task.
    pub async fn run(&self) {
        let queue: Queue<u64> = Queue::new();
        for i in 0..self.items {
            queue.add(i);
        }
        for _ in 0..self.items {
            if let Some(i) = queue.get().await {
                queue.done(&i);
            }
        }
    }
}

/// W3's shape: `add_after` of distinct integers with delays uniform in [0, `max_delay`] (seed
/// 42), one consumer; lateness = dequeue time − (clock just before the call + delay).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delaying {
    /// Items added.
    pub items: usize,
    /// The largest delay.
    pub max_delay: Duration,
}

/// What a [`Delaying`] run observed.
#[derive(Debug, Clone, PartialEq)]
pub struct DelayingRun {
    /// Every item's lateness in ms, in dequeue order.
    pub lateness_ms: Vec<f64>,
    /// The last dequeue, from the start of the run.
    pub last: Duration,
}

impl Delaying {
    /// W3: 100,000 items, delays up to 1 s.
    pub const W3: Delaying = Delaying {
        items: 100_000,
        max_delay: Duration::from_secs(1),
    };

    /// Every item's delay (generated before timing).
    pub fn delays(&self) -> Vec<Duration> {
        let mut rng = SmallRng::seed_from_u64(42);
        let max = u64::try_from(self.max_delay.as_nanos()).unwrap_or(u64::MAX);
        (0..self.items)
            .map(|_| Duration::from_nanos(rng.random_range(0..=max)))
            .collect()
    }

    /// Runs the workload on the current runtime with `delays` (one per item) until the consumer
    /// got every item.
    ///
    /// # Errors
    /// The consumer task panicked, or the queue ended before every item arrived.
    pub async fn run(&self, delays: Vec<Duration>) -> Result<DelayingRun, BenchError> {
        let n = delays.len();
        let ready_ns: Arc<Vec<AtomicU64>> = Arc::new((0..n).map(|_| AtomicU64::new(0)).collect());
        let queue: DelayingQueue<usize> = DelayingQueue::new();
        let base = Instant::now();
        let consumer = {
            let (queue, ready_ns) = (queue.clone(), ready_ns.clone());
            tokio::spawn(async move {
                let mut lateness = Vec::with_capacity(n);
                let mut last = base;
                for _ in 0..n {
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
        let (lateness_ms, last) = consumer
            .await
            .map_err(|e| BenchError::Workload("W3".into(), e.to_string()))?;
        queue.shut_down();
        if lateness_ms.len() != n {
            return Err(BenchError::Workload(
                "W3".into(),
                format!("only {} of {n} items arrived", lateness_ms.len()),
            ));
        }
        Ok(DelayingRun {
            lateness_ms,
            last: last - base,
        })
    }
}

/// W1, timed from the start of the run until every worker saw the shutdown.
async fn w1_contention() -> Result<Metrics, BenchError> {
    let w1 = Contention::W1;
    let keys = w1.keys();
    let start = Instant::now();
    let gets = w1.run(keys).await?;
    let wall = start.elapsed();
    let total = (w1.producers * w1.adds) as f64;
    Ok(vec![
        metric("wall_ms", wall.as_secs_f64() * 1e3),
        metric("adds_per_s", total / wall.as_secs_f64()),
        metric("gets", gets as f64),
    ])
}

/// W2, timed as a whole.
async fn w2_sequential() -> Metrics {
    let w2 = Sequential::W2;
    let start = Instant::now();
    w2.run().await;
    let wall = start.elapsed();
    vec![metric(
        "ns_per_item",
        wall.as_nanos() as f64 / w2.items as f64,
    )]
}

/// W3: the last dequeue's time beyond 1 s, and the lateness's mean and 99th percentile.
async fn w3_delaying() -> Result<Metrics, BenchError> {
    let w3 = Delaying::W3;
    let delays = w3.delays();
    let DelayingRun {
        mut lateness_ms,
        last,
    } = w3.run(delays).await?;
    let n = lateness_ms.len();
    lateness_ms.sort_by(f64::total_cmp);
    let mean = lateness_ms.iter().sum::<f64>() / n as f64;
    let p99 = lateness_ms[(n * 99).div_ceil(100) - 1];
    let last_minus_1s = last.as_secs_f64() * 1e3 - 1000.0;
    Ok(vec![
        metric("last_minus_1s_ms", last_minus_1s),
        metric("mean_lateness_ms", mean),
        metric("p99_lateness_ms", p99),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn scaled_down_workloads_process_every_item() {
        let small = Contention {
            producers: 2,
            adds: 500,
            workers: 2,
        };
        let keys = small.keys();
        let distinct: std::collections::BTreeSet<&String> = keys.iter().flatten().collect();
        let gets = small.run(keys.clone()).await.unwrap();
        assert!(gets >= distinct.len() && gets <= 1_000);
        Sequential { items: 1_000 }.run().await;
        let delaying = Delaying {
            items: 200,
            max_delay: Duration::from_millis(2),
        };
        let run = delaying.run(delaying.delays()).await.unwrap();
        assert_eq!(run.lateness_ms.len(), 200);
    }

    #[test]
    fn w3_delays_stay_within_one_second() {
        let delays = Delaying::W3.delays();
        assert_eq!(delays.len(), 100_000);
        assert!(delays.iter().all(|d| *d <= Duration::from_secs(1)));
    }
}
