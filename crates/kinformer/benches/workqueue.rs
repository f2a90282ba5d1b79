//! Criterion benches shaped like the workqueue workloads W1–W3 of BENCHMARKS.md, scaled down
//! so that one iteration is short. `kinformer bench workqueue` runs the full workloads.

#![allow(missing_docs, clippy::unwrap_used)] // a bench aborts on a broken setup

use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use kinformer::workqueue::{DelayingQueue, Queue};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

fn keys(n: usize, seed: u64) -> Vec<String> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let k = rng.random_range(0..10_000u32);
            format!("ns-{}/pod-{k}", k % 100)
        })
        .collect()
}

/// W1-like: 4 producers × 10,000 string adds, 4 workers, drain.
fn contention(c: &mut Criterion) {
    const PRODUCERS: u64 = 4;
    const ADDS: usize = 10_000;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("workqueue");
    group.throughput(Throughput::Elements(PRODUCERS * ADDS as u64));
    group.bench_function("w1_contention_4x10k", |b| {
        b.to_async(&rt).iter_batched(
            || (0..PRODUCERS).map(|p| keys(ADDS, p)).collect::<Vec<_>>(),
            |batches| async move {
                let queue: Queue<String> = Queue::new();
                let workers: Vec<_> = (0..4)
                    .map(|_| {
                        let q = queue.clone();
                        tokio::spawn(async move {
                            while let Some(k) = q.get().await {
                                q.done(&k);
                            }
                        })
                    })
                    .collect();
                let producers: Vec<_> = batches
                    .into_iter()
                    .map(|keys| {
                        let q = queue.clone();
                        tokio::spawn(async move {
                            for k in keys {
                                q.add(k);
                            }
                        })
                    })
                    .collect();
                for p in producers {
                    p.await.unwrap();
                }
                queue.shut_down_with_drain().await;
                for w in workers {
                    w.await.unwrap();
                }
            },
            BatchSize::SmallInput,
        );
    });
    group.finish();
}

/// W2-like: add 100,000 distinct integers, then get + done all of them on one task.
fn sequential(c: &mut Criterion) {
    const N: u64 = 100_000;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("workqueue");
    group.throughput(Throughput::Elements(N));
    group.bench_function("w2_sequential_100k", |b| {
        b.to_async(&rt).iter(|| async {
            let queue: Queue<u64> = Queue::new();
            for i in 0..N {
                queue.add(i);
            }
            for _ in 0..N {
                let i = queue.get().await.unwrap();
                queue.done(&i);
            }
        });
    });
    group.finish();
}

/// W3-like: `add_after` 10,000 integers with delays uniform in [0, 2 ms], one consumer.
fn delaying(c: &mut Criterion) {
    const N: usize = 10_000;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut rng = SmallRng::seed_from_u64(42);
    let delays: Vec<Duration> = (0..N)
        .map(|_| Duration::from_micros(rng.random_range(0..=2_000)))
        .collect();
    let mut group = c.benchmark_group("workqueue");
    group.throughput(Throughput::Elements(N as u64));
    group.bench_function("w3_add_after_10k", |b| {
        b.to_async(&rt).iter(|| {
            let delays = delays.clone();
            async move {
                let queue: DelayingQueue<usize> = DelayingQueue::new();
                let consumer = {
                    let q = queue.clone();
                    tokio::spawn(async move {
                        for _ in 0..N {
                            let i = q.get().await.unwrap();
                            q.done(&i);
                        }
                    })
                };
                for (i, d) in delays.into_iter().enumerate() {
                    queue.add_after(i, d);
                }
                consumer.await.unwrap();
                queue.shut_down();
            }
        });
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).sample_size(20);
    targets = contention, sequential, delaying
}
criterion_main!(benches);
