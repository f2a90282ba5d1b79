//! Micro-benchmarks of the cache: indexer add/update/by_index and a DeltaFIFO / RealFIFO
//! add + pop round trip, on the bench pods of the fixed workloads (W4, W5), which
//! `kinformer-bench cache` runs.

#![allow(clippy::unwrap_used)] // benchmark setup: a failed step aborts the run
#![allow(missing_docs)] // criterion_group! generates an undocumented function

use std::hint::black_box;
use std::sync::Arc;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use k8s_openapi::api::core::v1::Pod;
use kinformer::cache::fifo::{DeltaFifo, RealFifo, ReflectorSink};
use kinformer::cache::store::{Indexer, NAMESPACE_INDEX, label_index_func, namespace_index_func};
use kinformer_apiserver::BenchPod;

/// Bench pod `i` as the cache workloads build it (with a resource version).
fn pod(i: usize) -> Arc<Pod> {
    Arc::new(BenchPod::new(i).resource_version(i as u64 + 1).typed())
}

fn indexer() -> Indexer<Pod> {
    Indexer::new(
        [
            (NAMESPACE_INDEX.to_string(), namespace_index_func()),
            ("app".to_string(), label_index_func("app")),
        ]
        .into(),
    )
}

fn bench_indexer(c: &mut Criterion) {
    let pods: Vec<Arc<Pod>> = (0..10_000).map(pod).collect();
    c.bench_function("indexer_add_10k", |b| {
        b.iter_batched(
            indexer,
            |idx| {
                for p in &pods {
                    idx.add(Arc::clone(p)).unwrap();
                }
                idx
            },
            BatchSize::LargeInput,
        )
    });
    let idx = indexer();
    for p in &pods {
        idx.add(Arc::clone(p)).unwrap();
    }
    c.bench_function("indexer_update_one", |b| {
        let p = pod(42);
        b.iter(|| idx.update(Arc::clone(&p)).unwrap())
    });
    c.bench_function("indexer_by_index_100_items", |b| {
        b.iter(|| black_box(idx.by_index(NAMESPACE_INDEX, "ns-7").unwrap()))
    });
}

fn bench_fifos(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let pods: Vec<Arc<Pod>> = (0..1_000).map(pod).collect();
    c.bench_function("delta_fifo_add_pop_1k", |b| {
        b.iter(|| {
            let f = DeltaFifo::new();
            for p in &pods {
                f.add(Arc::clone(p)).unwrap();
            }
            rt.block_on(async {
                while !f.is_empty() {
                    f.pop_with(|p| black_box(p.deltas.len())).await.unwrap();
                }
            });
        })
    });
    c.bench_function("real_fifo_add_pop_1k", |b| {
        b.iter(|| {
            let f = RealFifo::new();
            for p in &pods {
                f.add(Arc::clone(p)).unwrap();
            }
            rt.block_on(async {
                while !f.is_empty() {
                    f.pop_with(|p| black_box(p.deltas.len())).await.unwrap();
                }
            });
        })
    });
}

criterion_group!(benches, bench_indexer, bench_fifos);
criterion_main!(benches);
