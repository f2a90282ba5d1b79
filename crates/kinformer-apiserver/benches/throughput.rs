//! Serving throughput: LIST of 100,000 bench pods in pages of 500, and the fan-out of 10,000
//! updates to 100 watchers; plus the reference figure, serde_json decoding the same list data.
//!
//! Run: `cargo bench -p kinformer-apiserver --bench throughput` (set `KINFORMER_BENCH_PODS` to
//! change the pod count). Output rows: `workload metric value unit`.

// A benchmark binary: a failure aborts the run.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kinformer_apiserver::{
    ServerConfig, Store, StoreConfig, TestServer, bench_pod_update, seed_bench_pods,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const PAGE: usize = 500;
const WATCHERS: usize = 100;
const UPDATES: usize = 10_000;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

async fn list_all(client: &kube::Client) -> (usize, usize, Vec<String>) {
    let (mut items, mut bytes, mut pages) = (0, 0, Vec::new());
    let mut cont: Option<String> = None;
    loop {
        let mut uri = format!("/api/v1/pods?limit={PAGE}");
        if let Some(c) = &cont {
            uri.push_str(&format!("&continue={c}"));
        }
        let req = http::Request::get(uri).body(Vec::new()).unwrap();
        let text = client.request_text(req).await.unwrap();
        bytes += text.len();
        // Cheap extraction of the continue token and the item count, without decoding items.
        items += text.matches("\"kind\":\"Pod\"").count();
        cont = text
            .split("\"continue\":\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .map(str::to_string);
        pages.push(text);
        if cont.is_none() {
            return (items, bytes, pages);
        }
    }
}

/// Opens a raw watch and counts event lines until `want` arrived.
async fn raw_watch(
    addr: std::net::SocketAddr,
    from: u64,
    want: usize,
    ready: tokio::sync::mpsc::Sender<()>,
) -> Duration {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "GET /api/v1/pods?watch=true&resourceVersion={from} HTTP/1.1\r\nHost: {addr}\r\n\r\n"
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut buf = vec![0u8; 256 * 1024];
    let (mut seen, mut prev, mut first) = (0usize, 0u8, true);
    let start = Instant::now();
    while seen < want {
        let n = s.read(&mut buf).await.unwrap();
        assert!(n > 0, "watch closed early");
        if first {
            first = false;
            let _ = ready.send(()).await;
        }
        for &b in &buf[..n] {
            if b == b'\n' && prev == b'}' {
                seen += 1;
            }
            prev = b;
        }
    }
    start.elapsed()
}

fn main() {
    let n: usize = std::env::var("KINFORMER_BENCH_PODS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        // Seeding (what `kinformer serve --seed-pods` does before it is ready).
        let mut seed_ms = Vec::new();
        for _ in 0..3 {
            let store = Store::new(kinformer_apiserver::ResourceDef::builtins(), StoreConfig::default());
            let t = Instant::now();
            seed_bench_pods(&store, n).unwrap();
            seed_ms.push(t.elapsed().as_secs_f64() * 1e3);
        }
        println!("S1  seed_{n}_pods_ms  {:.0}  ms  (min {:.0} max {:.0})", median(seed_ms.clone()), seed_ms.iter().cloned().fold(f64::MAX, f64::min), seed_ms.iter().cloned().fold(0.0, f64::max));

        let server = TestServer::start_with(ServerConfig { store: StoreConfig { max_events: 200_000, ..StoreConfig::default() }, ..ServerConfig::default() }).await.unwrap();
        seed_bench_pods(server.store(), n).unwrap();
        let client = server.client().unwrap();

        // LIST in pages of 500.
        let mut rates = Vec::new();
        let mut mbs = Vec::new();
        let mut pages = Vec::new();
        for _ in 0..5 {
            let t = Instant::now();
            let (items, bytes, p) = list_all(&client).await;
            let s = t.elapsed().as_secs_f64();
            assert_eq!(items, n);
            rates.push(items as f64 / s);
            mbs.push(bytes as f64 / s / 1e6);
            pages = p;
        }
        println!("S2  list_items_per_s  {:.0}  1/s  (pages of {PAGE}, {n} pods)", median(rates));
        println!("S2  list_mb_per_s  {:.1}  MB/s", median(mbs));

        // The reference: serde_json decoding the same pages into typed pods.
        let mut dec = Vec::new();
        let total: usize = pages.iter().map(String::len).sum();
        for _ in 0..3 {
            let t = Instant::now();
            let mut count = 0;
            for p in &pages {
                let l: k8s_openapi::List<Pod> = serde_json::from_str(p).unwrap();
                count += l.items.len();
            }
            assert_eq!(count, n);
            dec.push(total as f64 / t.elapsed().as_secs_f64() / 1e6);
        }
        println!("L0  decode_mb_per_s  {:.1}  MB/s  (serde_json into Vec<Pod>, same bytes)", median(dec));

        // Writes through HTTP: sequential merge patches (one client, one connection).
        let t = Instant::now();
        let writes = 2_000;
        for k in 0..writes {
            let i = k % n;
            let body = format!(r#"{{"metadata":{{"annotations":{{"bench":"{k}"}}}}}}"#).into_bytes();
            let req = http::Request::patch(format!("/api/v1/namespaces/ns-{}/pods/pod-{i}", i % 100))
                .header("Content-Type", "application/merge-patch+json")
                .body(body)
                .unwrap();
            client.request_text(req).await.unwrap();
        }
        println!("S4  http_patches_per_s  {:.0}  1/s  (sequential, one client)", writes as f64 / t.elapsed().as_secs_f64());

        // Watch fan-out: 100 raw watchers, 10,000 updates made directly in the store.
        let from = server.store().revision();
        let (ready_tx, mut ready_rx) = tokio::sync::mpsc::channel(WATCHERS);
        let addr = server.addr();
        let mut handles = Vec::new();
        for _ in 0..WATCHERS {
            handles.push(tokio::spawn(raw_watch(addr, from, UPDATES, ready_tx.clone())));
        }
        // Wait until every watcher has its response headers.
        server.store().update("pods", "", bench_pod_update(0, 0)).unwrap();
        for _ in 0..WATCHERS {
            ready_rx.recv().await.unwrap();
        }
        let t = Instant::now();
        for k in 1..UPDATES {
            server.store().update("pods", "", bench_pod_update(k % n, k as u64)).unwrap();
        }
        let write_s = t.elapsed().as_secs_f64();
        for h in handles {
            h.await.unwrap();
        }
        let s = t.elapsed().as_secs_f64();
        println!("S3  updates_per_s  {:.0}  1/s  (store writes, while {WATCHERS} watchers stream)", UPDATES as f64 / write_s);
        println!("S3  watch_events_per_s  {:.0}  1/s  ({UPDATES} updates x {WATCHERS} watchers, {s:.2} s)", (UPDATES * WATCHERS) as f64 / s);
    });
}
