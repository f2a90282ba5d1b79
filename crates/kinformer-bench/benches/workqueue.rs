//! Criterion benches of the workqueue workloads W1–W3 (the definitions in
//! `kinformer_bench::workqueue`), scaled down so that one iteration is short.
//! `kinformer-bench workqueue` runs them at BENCHMARKS.md's sizes.

#![allow(missing_docs, clippy::unwrap_used)] // a bench aborts on a broken setup

use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use kinformer_bench::workqueue::{Contention, Delaying, Sequential};

/// W1 scaled down: 4 producers × 10,000 string adds, 4 workers, drain.
fn contention(c: &mut Criterion) {
    let w1 = Contention {
        adds: 10_000,
        ..Contention::W1
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("workqueue");
    group.throughput(Throughput::Elements((w1.producers * w1.adds) as u64));
    group.bench_function("w1_contention_4x10k", |b| {
        b.to_async(&rt).iter_batched(
            || w1.keys(),
            |keys| async move { w1.run(keys).await.unwrap() },
            BatchSize::SmallInput,
        );
    });
    group.finish();
}

/// W2 scaled down: add 100,000 distinct integers, then get + done all of them on one task.
fn sequential(c: &mut Criterion) {
    let w2 = Sequential { items: 100_000 };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("workqueue");
    group.throughput(Throughput::Elements(w2.items));
    group.bench_function("w2_sequential_100k", |b| {
        b.to_async(&rt).iter(|| w2.run());
    });
    group.finish();
}

/// W3 scaled down: `add_after` 10,000 integers with delays uniform in [0, 2 ms], one consumer.
fn delaying(c: &mut Criterion) {
    let w3 = Delaying {
        items: 10_000,
        max_delay: Duration::from_millis(2),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let delays = w3.delays();
    let mut group = c.benchmark_group("workqueue");
    group.throughput(Throughput::Elements(w3.items as u64));
    group.bench_function("w3_add_after_10k", |b| {
        b.to_async(&rt).iter_batched(
            || delays.clone(),
            |delays| async move { w3.run(delays).await.unwrap() },
            BatchSize::SmallInput,
        );
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).sample_size(20);
    targets = contention, sequential, delaying
}
criterion_main!(benches);
