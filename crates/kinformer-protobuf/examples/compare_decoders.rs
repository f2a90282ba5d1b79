//! Measures the ways of decoding a 100,000-pod list into Rust values, medians of 5:
//!
//! - `serde_json`: the JSON list into k8s-openapi `Pod`s (the L0 floor);
//! - `kinformer-protobuf`: the protobuf list straight into k8s-openapi `Pod`s;
//! - `k8s-pb (prost)`: the protobuf list into k8s-pb's prost structs only — the first half of
//!   the "prost types + conversion" way, before any conversion into k8s-openapi types.
//!
//! `cargo run --release -p kinformer-protobuf --example compare_decoders`

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

fn time<T>(what: &str, bytes: usize, mut f: impl FnMut() -> T) {
    let mut ms = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        let out = f();
        ms.push(start.elapsed().as_secs_f64() * 1e3);
        drop(out);
    }
    let m = median(ms);
    println!(
        "{what:<24} {m:>8.1} ms {:>8.1} MB/s ({bytes} bytes)",
        bytes as f64 / 1e6 / (m / 1e3)
    );
}

fn main() {
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
    time("k8s-pb (prost only)", pb_list.len(), || {
        let env = kinformer_protobuf::Envelope::parse(&pb_list).unwrap();
        let l = k8s_pb::api::core::v1::PodList::decode(env.raw).unwrap();
        assert_eq!(l.items.len(), PODS);
        l
    });
}
