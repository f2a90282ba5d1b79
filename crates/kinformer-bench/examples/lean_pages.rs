//! The client's CPU work of a lean informer's initial list, without HTTP or the informer
//! around it: 100,000 stored bench pods in pages of 500, JSON or protobuf, decoded into
//! `Lazy<Pod>` (metadata only) and added to a compact indexer. Prints CPU ms (this thread,
//! best of 5) per stage: `split+meta` (decoding the pages into lazy objects), `store` (adding
//! them to compact storage; also at zstd level 1 and uncompressed), and the stored bytes per
//! pod.
//!
//! `cargo run --release -p kinformer-bench --example lean_pages`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kinformer::cache::Lazy;
use kinformer::cache::store::{CompactOptions, Indexer, NAMESPACE_INDEX, namespace_index_func};

const PODS: usize = 100_000;
const PAGE: usize = 500;

/// CPU time of this thread in ms (Linux), which a busy machine disturbs less than wall time.
fn thread_cpu_ms() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(f64::NAN, |ns| ns / 1e6)
}

fn pages() -> (Vec<String>, Vec<Vec<u8>>) {
    let mut json = Vec::new();
    let mut pb = Vec::new();
    for start in (0..PODS).step_by(PAGE) {
        let items: Vec<serde_json::Value> = (start..start + PAGE)
            .map(|i| {
                // As the server stores it: with the fields it sets at a create.
                let mut pod = kinformer_apiserver::bench_pod(i);
                let meta = pod["metadata"].as_object_mut().unwrap();
                meta.insert(
                    "uid".into(),
                    format!("6f1c2d3e-0000-4000-8000-{i:012}").into(),
                );
                meta.insert("resourceVersion".into(), (i + 2).to_string().into());
                meta.insert("creationTimestamp".into(), "2026-12-01T16:00:00Z".into());
                meta.insert("generation".into(), 1.into());
                pod
            })
            .collect();
        let meta = kinformer_protobuf::ListMeta {
            resource_version: Some("100002".into()),
            continue_: Some("token".into()),
            ..Default::default()
        };
        let mut list = kinformer_protobuf::ListBuilder::new("v1", "PodList", &meta).unwrap();
        for item in &items {
            list.push(item).unwrap();
        }
        pb.push(list.finish());
        json.push(
            serde_json::to_string(&serde_json::json!({
                "apiVersion": "v1", "kind": "PodList",
                "metadata": {"resourceVersion": "100002", "continue": "token"},
                "items": items,
            }))
            .unwrap(),
        );
    }
    (json, pb)
}

fn decode_json(pages: &[String]) -> Vec<Arc<Lazy<Pod>>> {
    let mut out = Vec::with_capacity(PODS);
    for page in pages {
        out.extend(
            kinformer::kube::decode_list::<Lazy<Pod>>(page)
                .unwrap()
                .items,
        );
    }
    out
}

fn decode_protobuf(pages: &[Vec<u8>]) -> Vec<Arc<Lazy<Pod>>> {
    let mut out = Vec::with_capacity(PODS);
    for page in pages {
        out.extend(
            kinformer::kube::decode_protobuf_list::<Lazy<Pod>>(page)
                .unwrap()
                .items,
        );
    }
    out
}

fn store(objs: &[Arc<Lazy<Pod>>]) -> Indexer<Lazy<Pod>> {
    store_with(objs, CompactOptions::default())
}

fn store_with(objs: &[Arc<Lazy<Pod>>], opts: CompactOptions) -> Indexer<Lazy<Pod>> {
    let indexer = Indexer::compact(
        [(NAMESPACE_INDEX.to_string(), namespace_index_func())].into(),
        opts,
    )
    .unwrap();
    for o in objs {
        indexer.add(Arc::clone(o)).unwrap();
    }
    indexer
}

fn best(mut f: impl FnMut()) -> f64 {
    (0..5)
        .map(|_| {
            let t = thread_cpu_ms();
            f();
            thread_cpu_ms() - t
        })
        .fold(f64::INFINITY, f64::min)
}

/// This process's resident set size in KiB.
fn rss_kib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
            line.split_whitespace().nth(1)?.parse().ok()
        })
        .unwrap_or(f64::NAN)
}

fn main() {
    // The protobuf schema is built at its first use in a process: what it costs a protobuf
    // informer's first page.
    let (cpu, rss) = (thread_cpu_ms(), rss_kib());
    assert!(kinformer_protobuf::has_schema("v1", "Pod"));
    println!(
        "protobuf schema: built in {:.1} ms CPU, {:.1} MiB resident",
        thread_cpu_ms() - cpu,
        (rss_kib() - rss) / 1024.0
    );
    let (json, pb) = pages();
    let bytes = |n: usize| n as f64 / PODS as f64;
    println!(
        "page bytes per pod: json {:.0}, protobuf {:.0}",
        bytes(json.iter().map(String::len).sum()),
        bytes(pb.iter().map(Vec::len).sum())
    );
    let j = best(|| drop(decode_json(&json)));
    let p = best(|| drop(decode_protobuf(&pb)));
    println!("split+meta ms: json {j:.1}, protobuf {p:.1}");
    let jo = decode_json(&json);
    let po = decode_protobuf(&pb);
    let js = best(|| drop(store(&jo)));
    let ps = best(|| drop(store(&po)));
    println!("store ms: json {js:.1}, protobuf {ps:.1}");
    for (what, opts) in [
        ("level 1", CompactOptions::default().level(1)),
        ("uncompressed", CompactOptions::default().train_after(0)),
    ] {
        let js = best(|| drop(store_with(&jo, opts.clone())));
        let ps = best(|| drop(store_with(&po, opts.clone())));
        let jb = bytes(store_with(&jo, opts.clone()).compact_stored_bytes());
        let pb = bytes(store_with(&po, opts.clone()).compact_stored_bytes());
        println!("store {what} ms: json {js:.1}, protobuf {ps:.1}; bytes per pod {jb:.1}, {pb:.1}");
    }
    println!(
        "stored bytes per pod: json {:.1}, protobuf {:.1}",
        bytes(store(&jo).compact_stored_bytes()),
        bytes(store(&po).compact_stored_bytes())
    );
    println!(
        "total ms: json {:.1}, protobuf {:.1} ({:.2}x)",
        j + js,
        p + ps,
        (p + ps) / (j + js)
    );
}
