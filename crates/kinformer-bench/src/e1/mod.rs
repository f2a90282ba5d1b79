//! The `informer` bench group: W6 (in process, see `informer`), and over HTTP against
//! the embedded API server running in its own process: E1 (kinformer's shared informer, typed,
//! JSON), E1P (the same over protobuf), E1C (kinformer's lean informer: `Lazy<Pod>` in compact
//! storage, JSON), E1PC (E1P with compact storage: the lean informer over protobuf, keeping the
//! protobuf bytes), E1PC-typed (typed pods from protobuf in compact storage: each object
//! decoded in full, then re-encoded), E1-kube-runtime (kube-runtime's `watcher` +
//! `reflector` on the same work), L0 (decoding the served list with serde_json), L0-fast (the
//! same with sonic-rs, the decoder of kinformer's `fast-json` feature), L0P (decoding it from
//! protobuf as the kube source decodes a list that comes in one body: on up to 4 threads),
//! L0P-1 (the same decode on one thread), F0 (fetching every page of the list without decoding: the floor over
//! HTTP), E1R / E1R-kube-runtime (E1C and kube-runtime with 100,000 realistic pods), and
//! E1W, E1CW, E1RW (E1, E1C, E1R against a server that answers the first list, at
//! resourceVersion "0", in one response as a real API server's watch cache does; E1CW then
//! ends the watch with 410 Gone and reports `rss_before_relist_mib` and `relist_peak_mib`, the
//! peak RSS while the relist that follows runs), and E1W-cli (`kinformer watch pods --store
//! compact -o json` against E1CW's server: time to its `synced:` line and its peak RSS) and
//! E1WL-cli (the same against a server that serves watch-lists).
//!
//! # The server process
//!
//! Each run spawns `kinformer-bench server --pods 100000 [--realistic]` (a hidden subcommand): it
//! seeds 100,000 bench pods (or realistic pods), prints `url <url>`, then obeys commands on its stdin: `update <n>`
//! replaces pods `0..n` once each, in order, directly in the server's store (the same
//! revisions and watch events as an HTTP write, without an HTTP client in the way), and prints
//! `updated <n> <ms>`. It exits at the end of its stdin, i.e. when the bench process ends.
//! The first round's objects are built before the server announces itself. With bench pods
//! (`--protobuf`) the server keeps each object in JSON and in protobuf, both encoded at the
//! write (`StoreConfig::encode_protobuf`), whichever format the row's client reads: lists and
//! watches in either format then only copy bytes, and every bench-pod row (E1, E1C,
//! E1-kube-runtime, E1P, E1PC, …) runs against a server doing the same work per write, so the
//! rows differ by their client only. Until 2026-12-06 only the protobuf rows' server encoded
//! both forms; its writer was then slower and took more of the two cores, and the burst
//! percentiles compared servers as much as clients (four alternated triples: E1's burst p99
//! 5.6–8.2 ms, median 7.2, with its writer at 2.7–3.0 s per 100,000 writes; the same E1
//! client against a server encoding both forms 8.0–10.7, median 8.9, writer 3.2–3.9 s; E1P
//! 7.9–10.3, median 8.6, writer 3.4–3.8 s). The realistic-pod rows have no protobuf client, and
//! their server encodes JSON only.
//!
//! Why in-store writes: 100,000 HTTP PUTs from one client run at a few thousand per second on
//! this machine, so an HTTP writer would dominate. The in-store writer is faster (about
//! 30,000–37,000 updates/s on a quiet 2-core machine, each a full replace of the pod), but it
//! is still what bounds `updates_per_s` (100,000 / time from the first write to the 100,000th
//! update delivered): both peers keep pace with it (p50 delivery of a few ms), so that figure
//! mostly measures the server, and the delivery percentiles are the discriminating ones.
//! Every update carries its write time (`kinformer.bench/written-us`, wall clock in µs) in an
//! annotation; the delivery time of an update is the handler's wall clock minus that stamp.
//!
//! The burst's delivery percentiles depend on the load as much as on the client: the writer
//! shares two cores with the server's workers and the client, so a client that spends less
//! CPU per update lets it write faster and is then measured under a denser stream (E1C took
//! in 30,000–46,000 updates/s where kube-runtime took in 25,600–37,000, same sessions). A
//! second, paced round makes the load the same for every peer: `update <n> <per_s>` writes
//! pods `0..n` at a fixed pace, here 50,000 updates at 10,000/s (realistic pods: 5,000 at
//! 1,000/s, as the server writes those ten times slower; every peer keeps up), and
//! `paced_p50_delivery_ms` / `paced_p99_delivery_ms` are their delivery percentiles.
//!
//! # Timing
//!
//! - `synced_ms`: from starting the informer (kinformer: `run`; kube-runtime: polling the
//!   reflector stream) to synced (kinformer: `has_synced`; kube-runtime: `InitDone`). The
//!   list is paged by 500 in both (kinformer with watch-list off).
//! - `peak_rss_mib`: VmHWM of the bench process (the informer's), not of the server. L0 also
//!   reports it (not a BENCHMARKS.md metric): the fetched body plus the decoded pods.
//! - `stored_bytes_per_pod` (kinformer rows with compact storage only): the store's payload
//!   bytes per pod at sync (`ReadOnlyIndexer::compact_stored_bytes`), before the updates add
//!   the bench's annotation; `stored_bytes_per_pod_updated` the same after both rounds of
//!   updates (every pod updated at least once, carrying the annotation the dictionary trained
//!   at sync has not seen; see `CompactOptions::retrain`), and `dictionaries` the number of
//!   dictionaries the store made by then.
//!
//! # Diagnostics
//!
//! - `KINFORMER_BENCH_WHOLE_LISTS=1`: kinformer's informers read each list response whole
//!   before decoding it and apply relists atomically (`with_stream_lists_above(usize::MAX)`,
//!   `with_atomic_relists(true)`), as they did before lists streamed: E1CW's and E1W's memory
//!   figures then show what streaming saves.
//! - `KINFORMER_BENCH_SYNC_ONLY=1`: the E1 rows end at the sync and report `synced_ms`,
//!   `peak_rss_mib` and (kinformer) `listed`, the objects its lists handed over, so that a
//!   sync can be profiled on its own (`perf record` of the bench process; the server is a
//!   child process of its own).
//! - `KINFORMER_BENCH_TRACE=1`: the client's peak RSS and CPU time at sync and its CPU time
//!   after the update burst, the server's write time, and the delivery delays per 250 ms of
//!   write time (count, mean, max), which show whether a high p99 comes from a few stalls or
//!   from whole stretches of lag; and per round how the server cut the watch's events into
//!   chunks (`chunks`, a hidden server command: [`ApiServer::watch_chunks`]). A client that
//!   keeps up gets one event per chunk; one that reads late gets every event written
//!   meanwhile in one chunk, and that chunk's first events wait for it. In E1C's burst
//!   (2026-12-03) 27–28 % of the events went out alone and 35 % in chunks of 64 or more,
//!   against kube-runtime's 55–64 % and 19–25 % in the same stretch (E1C's burst p50 1.9–2.1
//!   ms, kube-runtime's 0.13–0.22); with one client worker (`TOKIO_WORKER_THREADS=1`) E1C
//!   sent 75–77 % alone, burst p50 0.12 ms, p99 7.4–7.5 ms like kube-runtime's 7.1–7.5, but
//!   synced in 1,130–1,200 ms instead of 730–750. So E1C's burst delay is the client reading
//!   the watch late when its tasks (the HTTP connection, reflector, process loop, listener)
//!   spread over both workers, not its CPU per update (kube-runtime's client used as much
//!   CPU in that burst: 2,600 ms against E1C's 2,570 in one traced pair). A temporary probe
//!   at the reflector found three quarters of E1C's median delivery delay and 85–90 % of its
//!   p99 already there, before the process loop and the listener. Since 2026-12-04 the
//!   informer applies live events on the watch's task and the bench's handler is registered as
//!   non-blocking (`HandlerOptions::nonblocking`), so a live event wakes no task but the
//!   connection: E1C's burst p50 0.08 ms, p99 7.1 ms against kube-runtime's 8.1 in one run.
//! - `KINFORMER_BENCH_SERVER_WORKERS=<n>`: the server process's runtime gets `n` worker
//!   threads (default: one per core). Its update writer is a thread of its own besides them,
//!   so on a 2-core machine the default runs the writer, two server workers and the client's
//!   threads on two cores, and both peers' delivery delays are mostly waits for a core
//!   (E1C p50 about 2 ms; with `n = 1`, 0.07–0.10 ms). The benchmark's figures use the
//!   default. The server ignores the client's `TOKIO_WORKER_THREADS`.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use futures::future::{FutureExt as _, LocalBoxFuture};
use k8s_openapi::api::core::v1::Pod;
use kinformer::cache::store::CompactOptions;
use kinformer::cache::{HandlerOptions, InformerOptions, Lazy, SharedIndexInformer, Storage};
use kinformer::kube::{KubeListerWatcher, Wire};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::group::rows_to_metrics;
use crate::group::{BenchError, Group, Metrics};
use crate::proc_status::{own_mib, peak_rss_mib, status_mib};
use crate::run_informer::run_until_synced;

mod list_decode;
mod progress;
mod server;

pub use list_decode::pod_list_json;
use list_decode::{JsonDecoder, ProtobufDecode, f0, l0, l0p};
use progress::{Handler, Progress, now_us, update_round};
pub use server::serve_for_bench;
pub(crate) use server::{Encode, ServerProcess, exit_code};

/// The `informer` group.
pub(crate) const GROUP: Group = Group {
    name: "informer",
    workloads: &[
        "W6",
        "E1",
        "E1P",
        "E1PC",
        "E1PC-typed",
        "E1C",
        "E1-kube-runtime",
        "L0",
        "L0-fast",
        "L0P",
        "L0P-1",
        "F0",
        "E1R",
        "E1R-kube-runtime",
        "E1W",
        "E1CW",
        "E1RW",
        "E1W-cli",
        "E1WL-cli",
    ],
    run,
};

/// Pods held by the server, and updates made.
pub(super) const PODS: usize = 100_000;
/// Updates of the paced round and their pace per second, for bench pods and for realistic
/// pods: a fixed load that every peer and the server's writer keep up with on a 2-core
/// machine (the burst reaches 17,000–46,000 bench pods and 3,000–3,700 realistic pods a
/// second), so that its delivery percentiles measure the client's path under the same load
/// for every peer (see the module docs).
const PACED: (usize, f64) = (50_000, 10_000.0);
const PACED_REALISTIC: (usize, f64) = (5_000, 1_000.0);

/// The annotation carrying an update's write time.
pub(super) const WRITTEN_AT: &str = "kinformer.bench/written-us";

fn run(workload: &str) -> Result<Metrics, BenchError> {
    if crate::informer::WORKLOADS.contains(&workload) {
        return rows_to_metrics(workload, crate::informer::run(workload));
    }
    let row: LocalBoxFuture<'static, Result<Metrics, String>> = match workload {
        "E1" => e1(Peer::typed(Wire::Json, false), false, Lists::Paged).boxed_local(),
        "E1P" => e1(Peer::typed(Wire::Protobuf, false), false, Lists::Paged).boxed_local(),
        "E1PC" => e1(Peer::KinformerLean(Wire::Protobuf), false, Lists::Paged).boxed_local(),
        "E1PC-typed" => e1(Peer::typed(Wire::Protobuf, true), false, Lists::Paged).boxed_local(),
        "E1C" => e1(Peer::KinformerLean(Wire::Json), false, Lists::Paged).boxed_local(),
        "E1-kube-runtime" => e1(Peer::KubeRuntime, false, Lists::Paged).boxed_local(),
        "E1R" => e1(Peer::KinformerLean(Wire::Json), true, Lists::Paged).boxed_local(),
        "E1R-kube-runtime" => e1(Peer::KubeRuntime, true, Lists::Paged).boxed_local(),
        "E1W" => e1(Peer::typed(Wire::Json, false), false, Lists::WatchCache).boxed_local(),
        "E1CW" => e1(
            Peer::KinformerLean(Wire::Json),
            false,
            Lists::WatchCacheAndRelist,
        )
        .boxed_local(),
        "E1RW" => e1(Peer::KinformerLean(Wire::Json), true, Lists::WatchCache).boxed_local(),
        "E1W-cli" => e1w_cli(false).boxed_local(),
        "E1WL-cli" => e1w_cli(true).boxed_local(),
        "L0" => l0(JsonDecoder::SerdeJson).boxed_local(),
        "L0-fast" => l0(JsonDecoder::SonicRs).boxed_local(),
        "L0P" => l0p(ProtobufDecode::Library).boxed_local(),
        "L0P-1" => l0p(ProtobufDecode::OneThread).boxed_local(),
        "F0" => f0().boxed_local(),
        other => return Err(BenchError::UnknownWorkload(other.to_string())),
    };
    block_on(workload, row)
}

fn block_on(
    id: &str,
    f: impl Future<Output = Result<Metrics, String>>,
) -> Result<Metrics, BenchError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| BenchError::Workload(id.into(), format!("building the runtime: {e}")))?;
    rt.block_on(f)
        .map_err(|e| BenchError::Workload(id.into(), e))
}

/// Which client follows the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Peer {
    /// A typed informer (`SharedIndexInformer<Pod>`) with this wire format, in typed or
    /// compact storage.
    Kinformer {
        /// JSON or protobuf.
        wire: Wire,
        /// Compact storage instead of typed.
        compact: bool,
    },
    /// The lean informer: `SharedIndexInformer<Lazy<Pod>>` in compact storage, with this wire
    /// format.
    KinformerLean(Wire),
    KubeRuntime,
}

impl Peer {
    fn typed(wire: Wire, compact: bool) -> Self {
        Peer::Kinformer { wire, compact }
    }
}

/// How the bench server answers the first list, and whether the row forces a relist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lists {
    /// Pages of 500, as asked.
    Paged,
    /// The first list (at resourceVersion "0") in one response, as a watch cache answers it.
    WatchCache,
    /// As `WatchCache`, and after the update rounds the server ends the watch with 410 Gone:
    /// the informer relists, and the row reports its RSS before and its peak during the relist.
    WatchCacheAndRelist,
}

/// Starts a kinformer informer of `K` over `api` (pages of 500, no watch-list) with the
/// bench's handler registered as non-blocking (it only counts and notes delays, as a
/// controller's handler only enqueues keys), and waits for its sync; returns the time to
/// synced, the informer's task, a reader of its compact store's size and one of the objects
/// its lists have handed to the cache so far.
async fn start_kinformer<K>(
    api: Api<K>,
    wire: Wire,
    storage: Storage<K>,
    progress: &Arc<Progress>,
    cancel: &CancellationToken,
    started: Instant,
) -> Result<(f64, tokio::task::JoinHandle<()>, StoredBytes, Listed), String>
where
    K: Resource + DeserializeOwned + Send + Sync + 'static,
{
    // `KINFORMER_BENCH_WHOLE_LISTS=1`: lists read whole before decoding and relists applied
    // atomically, as before lists streamed (for comparison).
    let whole = std::env::var_os("KINFORMER_BENCH_WHOLE_LISTS").is_some();
    let mut lw = KubeListerWatcher::new(api).with_wire(wire);
    if whole {
        lw = lw.with_stream_lists_above(usize::MAX);
    }
    let informer = SharedIndexInformer::new(
        lw,
        InformerOptions::new("pods")
            .with_storage(storage)
            .with_watch_list(false)
            .with_page_size(500)
            .with_atomic_relists(whole),
    );
    informer
        .add_event_handler_with_options(
            Handler(Arc::clone(progress)),
            HandlerOptions::new().nonblocking(true),
        )
        .map_err(|e| e.to_string())?;
    let task = run_until_synced(&informer, cancel, Duration::from_secs(300), "E1").await?;
    let synced_ms = started.elapsed().as_secs_f64() * 1e3;
    let cache = informer.get_indexer();
    let n = cache.len();
    if n != PODS {
        return Err(format!("synced with {n} pods, expected {PODS}"));
    }
    let listed = informer.clone();
    Ok((
        synced_ms,
        task,
        Some(Box::new(move || {
            (cache.compact_stored_bytes(), cache.compact_dictionaries())
        })),
        Some(Box::new(move || listed.metrics().reflector.listed_objects)),
    ))
}

/// The objects a kinformer informer's lists handed to its cache so far (`None` for
/// kube-runtime).
type Listed = Option<Box<dyn Fn() -> u64 + Send>>;

/// The bytes a kinformer informer's compact store holds and the dictionaries it made (`0`
/// for typed storage; `None` for kube-runtime).
type StoredBytes = Option<Box<dyn Fn() -> (usize, usize) + Send>>;

async fn e1(peer: Peer, realistic: bool, lists: Lists) -> Result<Metrics, String> {
    // The same server work for every bench-pod row, JSON or protobuf (see the module docs).
    let encode = if realistic {
        Encode::Json
    } else {
        Encode::JsonAndProtobuf
    };
    let watch_cache = lists != Lists::Paged;
    let mut server = ServerProcess::spawn_with(PODS, realistic, encode, watch_cache, !watch_cache)?;
    let client = server.client()?;
    let progress = Arc::new(Progress::new());
    let cancel = CancellationToken::new();
    let started = Instant::now();
    let (synced_ms, task, stored_bytes, listed) = match peer {
        Peer::Kinformer { wire, compact } => {
            let api = Api::<Pod>::all(client);
            let storage = if compact {
                Storage::compact(CompactOptions::default())
            } else {
                Storage::typed()
            };
            start_kinformer(api, wire, storage, &progress, &cancel, started).await?
        }
        Peer::KinformerLean(wire) => {
            let api = Api::<Lazy<Pod>>::all(client);
            let storage = Storage::compact(CompactOptions::default());
            start_kinformer(api, wire, storage, &progress, &cancel, started).await?
        }
        Peer::KubeRuntime => {
            use kube::runtime::{reflector, watcher};
            let api = Api::<Pod>::all(client);
            let (reader, writer) = reflector::store::<Pod>();
            let synced = Arc::new(Notify::new());
            let task = tokio::spawn({
                let (progress, synced, cancel) =
                    (Arc::clone(&progress), Arc::clone(&synced), cancel.clone());
                async move {
                    let stream = reflector(
                        writer,
                        watcher(api, watcher::Config::default().page_size(500)),
                    );
                    let mut stream = std::pin::pin!(stream);
                    loop {
                        let next = tokio::select! {
                            () = cancel.cancelled() => break,
                            next = stream.try_next() => next,
                        };
                        match next {
                            Ok(Some(watcher::Event::InitDone)) => synced.notify_one(),
                            Ok(Some(watcher::Event::InitApply(_))) => {
                                progress.adds.fetch_add(1, Ordering::Relaxed);
                            }
                            Ok(Some(watcher::Event::Apply(pod))) => {
                                progress.update(&pod.metadata);
                            }
                            Ok(Some(_)) => {}
                            Ok(None) => break,
                            Err(e) => eprintln!("E1-kube-runtime: watcher: {e}"),
                        }
                    }
                }
            });
            tokio::time::timeout(Duration::from_secs(300), synced.notified())
                .await
                .map_err(|_| "no sync within 300 s")?;
            let synced_ms = started.elapsed().as_secs_f64() * 1e3;
            let n = reader.state().len();
            if n != PODS {
                return Err(format!("synced with {n} pods, expected {PODS}"));
            }
            (synced_ms, task, None, None)
        }
    };

    // Compact storage only: its payload bytes per pod as listed, and after the updates (which
    // add the bench's own annotation, which the dictionary trained on the list has not seen).
    let per_pod = |bytes: &StoredBytes| {
        bytes
            .as_ref()
            .map(|bytes| (bytes().0 as f64 / PODS as f64, bytes().1 as f64))
            .filter(|(b, _)| *b > 0.0)
    };
    let stored_per_pod = per_pod(&stored_bytes);
    if std::env::var_os("KINFORMER_BENCH_TRACE").is_some() {
        eprintln!(
            "E1: peak RSS at sync {:.1} MiB, CPU time at sync {:.0} ms",
            peak_rss_mib()?,
            cpu_ms()?
        );
    }
    if std::env::var_os("KINFORMER_BENCH_SYNC_ONLY").is_some() {
        cancel.cancel();
        let _ = tokio::time::timeout(Duration::from_secs(30), task).await;
        return Ok(vec![
            ("synced_ms".into(), synced_ms),
            ("peak_rss_mib".into(), peak_rss_mib()?),
            ("listed".into(), listed.as_ref().map_or(0.0, |l| l() as f64)),
        ]);
    }
    let updates_s = update_round(&mut server, &progress, PODS, None).await?;
    let (p50, p99) = progress.percentiles();
    let peak = peak_rss_mib()?;

    let (paced, per_s) = if realistic { PACED_REALISTIC } else { PACED };
    progress.next_round(paced);
    update_round(&mut server, &progress, paced, Some(per_s)).await?;
    let (paced_p50, paced_p99) = progress.percentiles();
    let stored_after = per_pod(&stored_bytes);
    let relist = match (lists, &listed) {
        (Lists::WatchCacheAndRelist, Some(listed)) => Some(relist(&mut server, listed).await?),
        _ => None,
    };
    cancel.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(30), task).await;
    let mut metrics: Metrics = vec![
        ("synced_ms".into(), synced_ms),
        ("updates_per_s".into(), PODS as f64 / updates_s),
        ("p50_delivery_ms".into(), p50),
        ("p99_delivery_ms".into(), p99),
        ("peak_rss_mib".into(), peak),
        ("paced_p50_delivery_ms".into(), paced_p50),
        ("paced_p99_delivery_ms".into(), paced_p99),
    ];
    if let Some((before, peak)) = relist {
        metrics.push(("rss_before_relist_mib".into(), before));
        metrics.push(("relist_peak_mib".into(), peak));
    }
    if let (Some((b, _)), Some((after, dictionaries))) = (stored_per_pod, stored_after) {
        metrics.push(("stored_bytes_per_pod".into(), b));
        metrics.push(("stored_bytes_per_pod_updated".into(), after));
        metrics.push(("dictionaries".into(), dictionaries));
    }
    Ok(metrics)
}

/// E1W-cli: `kinformer watch pods --store compact -o json` (the CLI binary beside this one,
/// output discarded) against E1CW's server (which, as a Kubernetes 1.26 server, refuses the
/// CLI's watch-list request: the CLI lists); the time from starting the command to its
/// `synced:` line on stderr (process start and discovery included), and its peak RSS then.
/// E1WL-cli (`watch_list`): the same against a server that serves the watch-list (as 1.32
/// and 1.34 servers do): the initial state arrives as watch events.
async fn e1w_cli(watch_list: bool) -> Result<Metrics, String> {
    let server = ServerProcess::spawn_with(PODS, false, Encode::JsonAndProtobuf, true, watch_list)?;
    let exe = std::env::current_exe().map_err(|e| format!("current exe: {e}"))?;
    let cli = exe
        .parent()
        .map(|dir| dir.join(format!("kinformer{}", std::env::consts::EXE_SUFFIX)))
        .filter(|p| p.is_file())
        .ok_or("no kinformer binary beside kinformer-bench: build it with `cargo build --release -p kinformer-cli`")?;
    let started = Instant::now();
    let mut child = Command::new(cli)
        .args(["watch", "pods", "--store", "compact", "-o", "json"])
        .args(["--summary-secs", "0", "--server", &server.url])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("spawning kinformer watch: {e}"))?;
    let stderr = child.stderr.take().ok_or("no stderr")?;
    let pid = child.id();
    let synced = tokio::task::spawn_blocking(move || {
        let mut lines = BufReader::new(stderr).lines();
        loop {
            match lines.next() {
                Some(Ok(line)) if line.starts_with("synced:") => return Ok(started.elapsed()),
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(format!("reading kinformer watch: {e}")),
                None => return Err("kinformer watch ended before it synced".to_string()),
            }
        }
    });
    let synced = tokio::time::timeout(Duration::from_secs(300), synced)
        .await
        .map_err(|_| "kinformer watch did not sync within 300 s")?
        .map_err(|e| e.to_string())??;
    let peak = status_mib(&format!("/proc/{pid}/status"), "VmHWM:")?;
    let _ = child.kill();
    let _ = child.wait();
    drop(server);
    Ok(vec![
        ("synced_ms".into(), synced.as_secs_f64() * 1e3),
        ("peak_rss_mib".into(), peak),
    ])
}

/// Has the server end the informer's watch with 410 Gone and waits until the relist that
/// follows has handed every pod to the cache; returns the RSS just before (MiB) and the peak
/// RSS during the relist (the peak is reset first).
async fn relist(
    server: &mut ServerProcess,
    listed: &dyn Fn() -> u64,
) -> Result<(f64, f64), String> {
    let before = own_mib("VmRSS:")?;
    // Writing 5 to clear_refs resets VmHWM to the current RSS.
    std::fs::write("/proc/self/clear_refs", "5")
        .map_err(|e| format!("resetting the peak RSS: {e}"))?;
    let target = listed() + PODS as u64;
    server.command("relist")?;
    let line = server.read_line()?;
    if line.trim() != "relisting" {
        return Err(format!("unexpected server line {line:?}"));
    }
    let deadline = Instant::now() + Duration::from_secs(300);
    while listed() < target {
        if Instant::now() > deadline {
            return Err("no relist within 300 s".into());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok((before, peak_rss_mib()?))
}

/// CPU time (user + system) of this process so far, in ms (from `/proc/self/stat`, in clock
/// ticks of 10 ms).
pub(super) fn cpu_ms() -> Result<f64, String> {
    let stat = std::fs::read_to_string("/proc/self/stat")
        .map_err(|e| format!("reading /proc/self/stat: {e}"))?;
    // The fields after the command name (which is in parentheses and may hold spaces).
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let ticks: Vec<f64> = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|t| t.parse().ok())
        .collect();
    match ticks[..] {
        [user, system] => Ok((user + system) * 10.0),
        _ => Err("no CPU times in /proc/self/stat".into()),
    }
}
