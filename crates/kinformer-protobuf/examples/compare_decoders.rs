//! Measures the ways of decoding a 100,000-pod list into Rust values, medians of 5:
//!
//! - `serde_json`: the JSON list into k8s-openapi `Pod`s (the L0 floor);
//! - `kinformer-protobuf`: the protobuf list straight into k8s-openapi `Pod`s, through their
//!   `Deserialize` impls;
//! - `direct-protobuf`: the same with `Item::decode_owned`, which builds pods field by field
//!   (with `--features k8s-openapi`; without it, the same as the previous way);
//! - `k8s-pb (prost)`: the protobuf list into k8s-pb's prost structs only — the first half of
//!   the "prost types + conversion" way, before any conversion into k8s-openapi types.
//!
//! `cargo run --release -p kinformer-protobuf --example compare_decoders [-- NAME...]`, where
//! the names (`serde_json`, `protobuf`, `direct`, `prost`) choose the ways measured (all by default; one
//! alone is what a profiler wants).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use k8s_openapi::api::core::v1::Pod;
use prost::Message;
use serde_json::json;

const PODS: usize = 100_000;

fn pod(i: usize) -> serde_json::Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": format!("pod-{i}"), "namespace": format!("ns-{}", i % 100),
            "labels": {"app": format!("a{}", i % 1000), "tier": format!("t{}", i % 3)},
            "resourceVersion": (i + 1).to_string(),
            "uid": format!("00000000-0000-4000-8000-{i:012}"),
            "creationTimestamp": "2026-11-03T10:15:00Z"
        },
        "spec": {"containers": [{
            "name": "app", "image": format!("registry.example/app:1.{}", i % 10),
            "env": [{"name": "POD_INDEX", "value": i.to_string()}, {"name": "MODE", "value": "bench"}]
        }]}
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// CPU time of this thread in ms (Linux), which a busy machine disturbs less than wall time.
fn cpu_ms() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(f64::NAN, |ns| ns / 1e6)
}

fn time<T>(what: &str, bytes: usize, mut f: impl FnMut() -> T) {
    let chosen: Vec<String> = std::env::args().skip(1).collect();
    let name = what.split_whitespace().next().unwrap_or(what);
    if !chosen.is_empty() && !chosen.iter().any(|c| name.contains(c.as_str())) {
        return;
    }
    let (mut ms, mut cpu) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        let (start, start_cpu) = (Instant::now(), cpu_ms());
        let out = f();
        ms.push(start.elapsed().as_secs_f64() * 1e3);
        cpu.push(cpu_ms() - start_cpu);
        drop(out);
    }
    let (first, first_cpu) = (ms[0], cpu[0]);
    let (m, c) = (median(ms), median(cpu));
    println!(
        "{what:<24} {m:>8.1} ms {:>8.1} MB/s ({bytes} bytes); cpu {c:.1} ms; first run {first:.1} ms, cpu {first_cpu:.1} ms",
        bytes as f64 / 1e6 / (m / 1e3)
    );
}

fn main() {
    // The schema is built once per process, at the first use (before any timing here).
    let start = Instant::now();
    assert!(kinformer_protobuf::has_schema("v1", "Pod"));
    println!(
        "schema built in {:.1} ms",
        start.elapsed().as_secs_f64() * 1e3
    );
    let pods: Vec<serde_json::Value> = (0..PODS).map(pod).collect();
    let json_list = serde_json::to_vec(&json!({
        "apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": "1"}, "items": pods
    }))
    .unwrap();
    let meta = kinformer_protobuf::ListMeta {
        resource_version: Some("1".into()),
        ..Default::default()
    };
    let mut builder = kinformer_protobuf::ListBuilder::new("v1", "PodList", &meta).unwrap();
    for p in &pods {
        builder.push(p).unwrap();
    }
    let pb_list = builder.finish();
    drop(pods);

    #[derive(serde::Deserialize)]
    struct Items {
        items: Vec<Pod>,
    }
    time("serde_json", json_list.len(), || {
        let l: Items = serde_json::from_slice(&json_list).unwrap();
        assert_eq!(l.items.len(), PODS);
        l
    });
    time("kinformer-protobuf", pb_list.len(), || {
        let list = kinformer_protobuf::List::parse(&pb_list).unwrap();
        let pods: Vec<Pod> = list.items().map(|i| i.decode().unwrap()).collect();
        assert_eq!(pods.len(), PODS);
        pods
    });
    time("direct-protobuf", pb_list.len(), || {
        let list = kinformer_protobuf::List::parse(&pb_list).unwrap();
        let pods: Vec<Pod> = list.items().map(|i| i.decode_owned().unwrap()).collect();
        assert_eq!(pods.len(), PODS);
        pods
    });
    let decoded: Vec<Pod> = kinformer_protobuf::List::parse(&pb_list)
        .unwrap()
        .items()
        .map(|i| i.decode().unwrap())
        .collect();
    println!("size_of::<Pod>() = {}", std::mem::size_of::<Pod>());
    time("clone-floor", pb_list.len(), || decoded.clone());
    drop(decoded);
    time("k8s-pb-prost-only", pb_list.len(), || {
        let env = kinformer_protobuf::Envelope::parse(&pb_list).unwrap();
        let l = k8s_pb::api::core::v1::PodList::decode(env.raw).unwrap();
        assert_eq!(l.items.len(), PODS);
        l
    });
}
