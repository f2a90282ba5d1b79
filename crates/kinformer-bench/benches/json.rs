//! JSON decoders compared on the served 100,000-bench-pod list body and on watch lines:
//! serde_json, sonic-rs and simd-json, decoding typed `Pod`s and metadata only (the shape of
//! `Lazy`'s parse: `metadata` decoded, the rest of each object skipped but validated).
//! Typed lists three ways: the whole body into a `Vec<Pod>` (as L0 decodes), in one pass with
//! each item moved into its own `Arc` (the library's typed list path), and split into raw items
//! first, then each item decoded (the library's fallback for a page with a bad item).
//!
//! Not a criterion bench: the cases run alternating, round after round, in one process, so
//! that a machine busy with other work slows them alike; each case prints its median µs per
//! object and the median of its per-round ratio to serde_json on the same input.
//!
//! `cargo bench -p kinformer-bench --bench json` (`JSON_BENCH_ROUNDS`, default 5;
//! `JSON_BENCH_WATCH_LINES`, default 20,000).
//!
//! simd-json parses in place, so it gets a mutable copy of its input: of the whole body
//! outside the timed part, of each watch line inside it (the library gets `&str` lines).

use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kinformer_apiserver::{ApiServer, ServerConfig, seed_bench_pods};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

const PODS: usize = 100_000;

#[derive(Deserialize)]
struct Items<T> {
    items: Vec<T>,
}

/// A pod decoded straight into its `Arc`, as the library's typed list items are.
struct ArcPod(#[allow(dead_code)] Arc<Pod>);

impl<'de> Deserialize<'de> for ArcPod {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Pod::deserialize(d).map(|p| ArcPod(Arc::new(p)))
    }
}

/// The metadata-level parse: `metadata` decoded, every other field skipped.
#[derive(Deserialize)]
struct MetaOnly {
    #[serde(default)]
    #[allow(dead_code)]
    metadata: ObjectMeta,
}

#[derive(Deserialize)]
struct Event<T> {
    #[serde(rename = "type")]
    #[allow(dead_code)]
    kind: String,
    #[allow(dead_code)]
    object: T,
}

#[derive(Deserialize)]
struct RawItems<'a> {
    #[serde(borrow)]
    items: Vec<&'a RawValue>,
}

#[derive(Deserialize)]
struct SonicItems<'a> {
    #[serde(borrow)]
    items: Vec<sonic_rs::LazyValue<'a>>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Decoder {
    SerdeJson,
    SonicRs,
    SimdJson,
}

const DECODERS: [Decoder; 3] = [Decoder::SerdeJson, Decoder::SonicRs, Decoder::SimdJson];

impl Decoder {
    fn name(self) -> &'static str {
        match self {
            Decoder::SerdeJson => "serde_json",
            Decoder::SonicRs => "sonic-rs",
            Decoder::SimdJson => "simd-json",
        }
    }

    /// Decodes `json`; simd-json works on `scratch`, a copy of it made before.
    fn decode<T: DeserializeOwned>(self, json: &[u8], scratch: &mut [u8]) -> Result<T, String> {
        match self {
            Decoder::SerdeJson => serde_json::from_slice(json).map_err(|e| e.to_string()),
            Decoder::SonicRs => sonic_rs::from_slice(json).map_err(|e| e.to_string()),
            Decoder::SimdJson => simd_json::serde::from_slice(scratch).map_err(|e| e.to_string()),
        }
    }

    /// Decodes one line, copying it first for simd-json.
    fn decode_line<T: DeserializeOwned>(self, line: &str) -> Result<T, String> {
        match self {
            Decoder::SimdJson => {
                let mut copy = line.as_bytes().to_vec();
                simd_json::serde::from_slice(&mut copy).map_err(|e| e.to_string())
            }
            other => other.decode(line.as_bytes(), &mut []),
        }
    }
}

/// The list body as the server sends it.
fn served_body() -> Result<Vec<u8>, String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(async {
        let server = ApiServer::start_with(ServerConfig::default())
            .await
            .map_err(|e| e.to_string())?;
        seed_bench_pods(server.store(), PODS).map_err(|e| e.to_string())?;
        let uri = server.url().parse().map_err(|e| format!("{e}"))?;
        let client = kube::Client::try_from(kube::Config::new(uri)).map_err(|e| e.to_string())?;
        kinformer_bench::pod_list_json(&client).await
    })
}

/// One timed case: what it decodes, with which decoder.
struct Case {
    what: &'static str,
    decoder: Decoder,
    objects: usize,
    /// µs per object, one per round.
    times: Vec<f64>,
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<(), String> {
    let rounds: usize = std::env::var("JSON_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
        .max(1);
    let watch_lines: usize = std::env::var("JSON_BENCH_WATCH_LINES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let body = served_body()?;
    let text = std::str::from_utf8(&body).map_err(|e| e.to_string())?;
    let lines: Vec<String> = serde_json::from_str::<RawItems<'_>>(text)
        .map_err(|e| e.to_string())?
        .items
        .iter()
        .take(watch_lines)
        .map(|o| format!(r#"{{"type":"MODIFIED","object":{}}}"#, o.get()))
        .collect();
    eprintln!(
        "body {} bytes ({PODS} pods), {} watch lines; {rounds} rounds",
        body.len(),
        lines.len()
    );
    let whats = [
        "list, typed Pod (whole body)",
        "list, typed Pod (one pass, each an Arc)",
        "list, typed Pod (split, then each item)",
        "list, metadata only",
        "watch lines, typed Pod",
        "watch lines, metadata only",
    ];
    let mut cases: Vec<Case> = Vec::new();
    for what in whats {
        for decoder in DECODERS {
            cases.push(Case {
                what,
                decoder,
                objects: if what.starts_with("watch") {
                    lines.len()
                } else {
                    PODS
                },
                times: Vec::new(),
            });
        }
    }
    let mut scratch = body.clone();
    for round in 0..rounds {
        eprintln!("round {}/{rounds}", round + 1);
        for case in &mut cases {
            scratch.copy_from_slice(&body);
            let d = case.decoder;
            let start = Instant::now();
            let n = match case.what {
                "list, typed Pod (whole body)" => {
                    d.decode::<Items<Pod>>(&body, &mut scratch)?.items.len()
                }
                "list, typed Pod (one pass, each an Arc)" => {
                    d.decode::<Items<ArcPod>>(&body, &mut scratch)?.items.len()
                }
                "list, typed Pod (split, then each item)" => split_typed(d, text)?,
                "list, metadata only" => d
                    .decode::<Items<MetaOnly>>(&body, &mut scratch)?
                    .items
                    .len(),
                "watch lines, typed Pod" => {
                    let mut n = 0;
                    for line in &lines {
                        let _: Event<Pod> = d.decode_line(line)?;
                        n += 1;
                    }
                    n
                }
                _ => {
                    let mut n = 0;
                    for line in &lines {
                        let _: Event<MetaOnly> = d.decode_line(line)?;
                        n += 1;
                    }
                    n
                }
            };
            let secs = start.elapsed().as_secs_f64();
            if n != case.objects {
                return Err(format!("{}: {n} objects", case.what));
            }
            case.times.push(secs * 1e6 / n as f64);
        }
    }
    println!(
        "{:<42} {:<11} {:>10} {:>16}",
        "input", "decoder", "µs/object", "vs serde_json"
    );
    for chunk in cases.chunks(DECODERS.len()) {
        let base = &chunk[0].times;
        for case in chunk {
            let mut ratios: Vec<f64> = case.times.iter().zip(base).map(|(t, b)| t / b).collect();
            let mut times = case.times.clone();
            println!(
                "{:<42} {:<11} {:>10.3} {:>15.2}×",
                case.what,
                case.decoder.name(),
                median(&mut times),
                median(&mut ratios)
            );
        }
    }
    Ok(())
}

/// The library's fallback list path: the items split out as raw JSON, then each decoded on its own
/// (simd-json splits with serde_json and copies each item).
fn split_typed(d: Decoder, text: &str) -> Result<usize, String> {
    // Every pod is kept until the list is read, as an informer keeps them (and as the other
    // list cases do): a pod dropped at once would leave its memory to the next one.
    let mut pods: Vec<Arc<Pod>> = Vec::new();
    match d {
        Decoder::SonicRs => {
            let list: SonicItems<'_> = sonic_rs::from_str(text).map_err(|e| e.to_string())?;
            pods.reserve(list.items.len());
            for item in &list.items {
                pods.push(Arc::new(d.decode_line(item.as_raw_str())?));
            }
        }
        _ => {
            let list: RawItems<'_> = serde_json::from_str(text).map_err(|e| e.to_string())?;
            pods.reserve(list.items.len());
            for item in &list.items {
                pods.push(Arc::new(d.decode_line(item.get())?));
            }
        }
    }
    Ok(pods.len())
}
