//! `kinformer demo`: a real ReplicaSet controller converging while the API server misbehaves.
//!
//! 1. Start the embedded API server in this process (or use `--server`/`--kubeconfig`).
//! 2. Create the workload: `--replicasets` ReplicaSets of 5–50 replicas (on a real cluster 10
//!    of 1–3 unless `--replicasets` is given), drawn from `--seed`.
//! 3. Run the [controller] (shared informers, owner index, rate-limited queue, `--workers`
//!    workers) and a stand-in [kubelet] until everything converges.
//! 4. Chaos: scale, add and delete ReplicaSets and kill pods while the server injects faults
//!    (watch drops, 410s, 429s, 500s, compactions, an outage).
//! 5. Stop the faults, wait for convergence, then verify: every ReplicaSet has exactly its
//!    replicas, ready and reported, and the informer caches equal the server's state.
//!    Exit status 1 if not.
//! 6. On a remote server, delete the workload's namespace if the demo created it (unless
//!    `--keep`); Kubernetes removes its objects in the background.

mod backend;
mod chaos;
use chaos::run_chaos;
pub mod connect;
// The controller lives in the crate's library, shared with the `replicaset_controller` example.
pub use kinformer_cli::controller;
mod kubelet;
mod metrics;
mod progress;
mod readiness;
mod scenario;
mod sharded;
mod verify;

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kinformer::cache::SharedInformerFactory;
use kinformer::kube::Wire;
use kinformer::leaderelection::{LeaderElectionConfig, LeaderElector, LeaseLock};
use kinformer::workqueue::{
    QueueConfig, RateLimitingQueue, WithMaxWait, default_controller_rate_limiter,
};
use kinformer_apiserver::{ApiServer, ServerConfig};
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use backend::Backend;
use chaos::ChaosLevel;
use connect::ConnectArgs;
use controller::{ControllerStats, ReplicaSetController};
use kubelet::Kubelet;
use verify::Verification;

use crate::store_mode::StoreMode;

/// Options of `kinformer demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Seed of the workload, the chaos schedule and the faults.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Number of ReplicaSets created at the start [default: 100 of 5–50 pods; on a real
    /// cluster (--kubeconfig/--context) 10 of 1–3 pods].
    #[arg(long)]
    replicasets: Option<usize>,
    /// Controller workers.
    #[arg(long, default_value_t = 4)]
    workers: usize,
    /// How badly the server misbehaves (faults need the embedded server).
    #[arg(long, value_enum, default_value_t = ChaosLevel::High)]
    chaos: ChaosLevel,
    /// Length of the chaos phase, in seconds.
    #[arg(long, default_value_t = 8.0)]
    chaos_secs: f64,
    /// Give up on convergence after this many seconds (per phase).
    #[arg(long, default_value_t = 60.0)]
    deadline_secs: f64,
    /// Serve Prometheus metrics on this address (e.g. 127.0.0.1:9090) at /metrics.
    #[arg(long)]
    metrics_addr: Option<SocketAddr>,
    /// Run the controller under leader election (a Lease); start two demos against one
    /// `kinformer serve` and one leads while the other waits.
    #[arg(long)]
    leader_elect: bool,
    /// Namespace of the workload on a remote server (the embedded one uses four).
    #[arg(long, default_value = "kinformer-demo")]
    namespace: String,
    /// How the Pod informer keeps pods (ReplicaSets stay typed): compact keeps them
    /// encoded and compressed, decoded when read.
    #[arg(long, value_enum, default_value_t = StoreMode::Compact)]
    store: StoreMode,
    /// Print no progress line, only the summary.
    #[arg(long)]
    quiet: bool,
    /// Keep the workload's namespace on a remote server (by default the demo deletes it at
    /// the end if it created it).
    #[arg(long)]
    keep: bool,
    /// Wire format the informers ask for: protobuf (built-in kinds; the default) or json.
    #[arg(long, default_value_t = Wire::Protobuf, value_parser = parse_wire)]
    wire: Wire,
    /// Run this many controller replicas, sharded, each with its own client, informers and
    /// membership Lease; the chaos phase also kills one and later adds one.
    #[arg(long, conflicts_with = "leader_elect", value_parser = clap::value_parser!(u16).range(1..=64))]
    replicas: Option<u16>,
    /// Run the stand-in kubelet (it marks the demo's pods running and ready) on a real
    /// cluster too: for a control plane without nodes (an API server and etcd, as envtest
    /// runs it). Chosen on its own when the cluster has no Node objects; the embedded server
    /// and --server always use it.
    #[arg(long)]
    stand_in_kubelet: bool,
    /// How the replicas share the ReplicaSets (with --replicas): labelled (each replica
    /// watches only its shard, labelled by the elected sharder) or filtered (each watches
    /// everything and syncs what it owns).
    #[arg(long, value_enum, default_value_t = sharded::ShardingMode::Labelled, requires = "replicas")]
    sharding: sharded::ShardingMode,
    #[command(flatten)]
    connect: ConnectArgs,
}

/// Parses `--wire`.
pub(crate) fn parse_wire(s: &str) -> Result<Wire, String> {
    s.parse()
}

/// Runs the demo. Returns the process exit code (0: verified).
pub fn run(args: DemoArgs) -> i32 {
    // The demo injects server errors on purpose and counts them in its summary; the kube
    // client logs each one at ERROR, so its logs are off unless RUST_LOG asks for them.
    crate::args::init_logging("error,kube_client=off");
    crate::args::run_to_exit_code(demo(args))
}

/// Why the demo could not run at all.
#[derive(Debug, thiserror::Error)]
enum DemoError {
    #[error(transparent)]
    Server(#[from] kinformer_apiserver::ServerError),
    #[error(transparent)]
    Connect(#[from] connect::ConnectError),
    #[error("cannot build a client: {0}")]
    Client(#[from] kube::Error),
    #[error(transparent)]
    Controller(#[from] controller::ControllerError),
    #[error(transparent)]
    Informer(#[from] kinformer::cache::InformerError),
    #[error(transparent)]
    Backend(#[from] backend::BackendError),
    #[error(transparent)]
    LeaderElection(#[from] kinformer::leaderelection::LeaderElectionError),
    #[error(transparent)]
    Sharding(#[from] kinformer::sharding::ShardingError),
    #[error("metrics server: {0}")]
    Metrics(std::io::Error),
}

/// Prints a line, clearing a progress line drawn in place.
fn say(line: &str) {
    if std::io::stdout().is_terminal() {
        println!("\r{line}\x1b[K");
    } else {
        println!("{line}");
    }
}

/// The longest a failed key waits before its next try.
const MAX_RETRY_WAIT: Duration = Duration::from_secs(2);

/// Decoded pods a compact Pod cache keeps for the workers' reads (`--store compact`).
const POD_HOT_OBJECTS: usize = 4_096;

const EMBEDDED_NAMESPACES: [&str; 4] = ["demo-a", "demo-b", "demo-c", "demo-d"];

/// Where the demo runs: the backend, a kube config for it, the workload's namespaces.
struct Setup {
    backend: Backend,
    config: kube::Config,
    namespaces: Vec<String>,
    /// The namespace the demo created on a remote server (deleted at the end).
    created_namespace: Option<(Api<Namespace>, String)>,
    /// A description of the server, for the first line.
    where_: String,
}

/// Starts the embedded server (or connects to the one named) and prepares the namespace.
async fn setup(args: &DemoArgs) -> Result<Setup, DemoError> {
    // The server: embedded unless one was named.
    let remote = args.connect.config(false).await?;
    let mut created_namespace = None;
    let (backend, config, namespaces) = match remote {
        Some(config) => {
            let client = kube::Client::try_from(config.clone())?;
            let ns = args.namespace.clone();
            let api: Api<Namespace> = Api::all(client.clone());
            let mut obj = Namespace::default();
            obj.metadata.name = Some(ns.clone());
            let capabilities = kinformer::kube::ServerCapabilities::new();
            match kinformer::kube::create_with(&api, &capabilities, &PostParams::default(), &obj)
                .await
            {
                Ok(_) => created_namespace = Some((api, ns.clone())),
                Err(kube::Error::Api(s)) if s.is_already_exists() => {}
                Err(e) => tracing::warn!(error = %e, "could not create namespace {ns}"),
            }
            let backend = Backend::Remote {
                client,
                namespace: Some(ns.clone()),
                capabilities,
            };
            (backend, config, vec![ns])
        }
        None => {
            let server = ApiServer::start_with(ServerConfig {
                seed: args.seed,
                bookmark_interval: Duration::from_secs(1),
                ..ServerConfig::default()
            })
            .await?;
            let config = server.kube_config()?;
            let ns = EMBEDDED_NAMESPACES
                .iter()
                .map(|s| (*s).to_owned())
                .collect();
            (Backend::Embedded(server), config, ns)
        }
    };
    let where_ = match &backend {
        Backend::Embedded(s) => format!("embedded API server at {}", s.url()),
        Backend::Remote { .. } => {
            format!("{} (namespace {})", config.cluster_url, args.namespace)
        }
    };
    Ok(Setup {
        backend,
        config,
        namespaces,
        created_namespace,
        where_,
    })
}

/// Deletes the namespace the demo created on a remote server, unless `--keep`.
async fn clean_up(
    args: &DemoArgs,
    created_namespace: Option<(Api<Namespace>, String)>,
    embedded: bool,
) {
    match created_namespace {
        Some((_, ns)) if args.keep => say(&format!("kept namespace {ns} (--keep)")),
        Some((api, ns)) => match api.delete(&ns, &DeleteParams::default()).await {
            Ok(_) => say(&format!(
                "deleted namespace {ns} (the server removes its objects in the background)"
            )),
            Err(e) => say(&format!("could not delete namespace {ns}: {e}")),
        },
        None if !embedded => say(&format!(
            "kept namespace {}: it existed before the demo",
            args.namespace
        )),
        None => {}
    }
}

/// The chaos level (faults only on the embedded server) and the scenario drawn from `--seed`
/// over `namespaces`.
fn plan(
    args: &DemoArgs,
    embedded: bool,
    namespaces: &[String],
) -> (ChaosLevel, scenario::Scenario) {
    let chaos = if embedded {
        args.chaos
    } else {
        ChaosLevel::Off
    };
    let size = scenario::Size::for_target(args.connect.is_cluster(), args.replicasets);
    let scenario = scenario::generate(
        args.seed,
        &size,
        namespaces,
        Duration::from_secs_f64(args.chaos_secs.max(0.0)),
        chaos.kills_pods() || (!embedded && args.chaos != ChaosLevel::Off),
    );
    (chaos, scenario)
}

async fn demo(args: DemoArgs) -> Result<bool, DemoError> {
    let started = Instant::now();
    let Setup {
        backend,
        mut config,
        namespaces,
        created_namespace,
        where_,
    } = setup(&args).await?;
    if let Some(count) = args.replicas {
        let setup = Setup {
            backend,
            config,
            namespaces,
            created_namespace,
            where_,
        };
        return sharded::run(args, usize::from(count), setup).await;
    }
    let embedded = match &backend {
        Backend::Embedded(s) => Some(s),
        Backend::Remote { .. } => None,
    };
    // The controller's clients fail fast: retries belong to the reflector and the queue.
    config.default_retry = false;
    let client = kube::Client::try_from(config)?;

    let (chaos, scenario) = plan(&args, embedded.is_some(), &namespaces);
    let wanted: i32 = scenario.initial.iter().map(|r| r.replicas).sum();
    say(&format!(
        "kinformer demo: seed {}, {} ReplicaSets ({wanted} pods), {} workers, chaos {:?}, {where_}",
        args.seed,
        scenario.initial.len(),
        args.workers,
        args.chaos
    ));
    if embedded.is_none() && args.chaos != ChaosLevel::Off {
        say("  (server faults need the embedded server: only the workload changes and pod kills)");
    }

    // Metrics.
    let cancel = CancellationToken::new();
    let (registry, provider, demo_metrics) = metrics::registry();
    let queue_config = if args.metrics_addr.is_some() {
        QueueConfig::named("replicasets", Arc::new(provider))
    } else {
        QueueConfig::default()
    };

    // Shared informers, the controller and the kubelet.
    // Workers read the pods of the ReplicaSets they sync; a hot cache of a few thousand
    // decoded pods serves most of those reads without decoding.
    let mut factory = SharedInformerFactory::new(client.clone())
        .with_wire(args.wire)
        .with_storage::<Pod>(args.store.storage(POD_HOT_OBJECTS));
    if embedded.is_none() {
        factory = factory.with_namespace(args.namespace.clone());
    }
    // client-go's default controller limiter, with retries capped at MAX_RETRY_WAIT: under
    // heavy chaos a key can fail a dozen times, and 5 ms * 2^12 is already 20 s.
    let limiter = WithMaxWait::new(default_controller_rate_limiter(), MAX_RETRY_WAIT);
    let queue = RateLimitingQueue::with_config(queue_config, limiter);
    let controller = ReplicaSetController::new(&factory, client.clone(), queue)?;
    let remote_namespace = embedded.is_none().then_some(args.namespace.as_str());
    // A real cluster has kubelets, unless it is a control plane without nodes.
    let (stand_in, why) =
        readiness::use_stand_in_kubelet(&client, args.connect.is_cluster(), args.stand_in_kubelet)
            .await;
    if let Some(why) = why {
        say(why);
    }
    let kubelet = if stand_in {
        Some(Kubelet::new(controller.pods().clone(), client.clone())?)
    } else {
        None
    };
    if let Some(addr) = args.metrics_addr {
        let bound = metrics::serve(addr, Arc::new(registry), cancel.clone())
            .await
            .map_err(DemoError::Metrics)?;
        say(&format!("  metrics at http://{bound}/metrics"));
    }

    // The workload.
    let t = Instant::now();
    for rs in &scenario.initial {
        backend.create_replicaset(&rs.to_replicaset()).await?;
    }
    say(&format!(
        "created {} ReplicaSets in {:.0} ms",
        scenario.initial.len(),
        t.elapsed().as_secs_f64() * 1e3
    ));

    factory.start(&cancel);
    let tasks = tokio_util::task::TaskTracker::new();
    let leader = Arc::new(parking_lot::Mutex::new(String::new()));
    if args.leader_elect {
        let identity = format!(
            "{}-{}",
            std::env::var("HOSTNAME").unwrap_or_else(|_| "demo".into()),
            std::process::id()
        );
        let lock_ns = namespaces
            .first()
            .cloned()
            .unwrap_or_else(|| "default".into());
        let lock = LeaseLock::new(
            client.clone(),
            lock_ns,
            "kinformer-demo-controller",
            identity.clone(),
        );
        let mut le = LeaderElectionConfig::new(lock);
        le.release_on_cancel = true;
        le.name = "kinformer-demo".into();
        let elector = LeaderElector::new(le)?;
        let (c, cancel2, workers) = (controller.clone(), cancel.clone(), args.workers);
        let mut states = elector.subscribe();
        let leader2 = leader.clone();
        tasks.spawn(async move {
            loop {
                let s = states.borrow_and_update().clone();
                let who = s.leader.clone().unwrap_or_else(|| "nobody".into());
                *leader2.lock() =
                    format!(" | leader {who}{}", if s.leading { " (me)" } else { "" });
                if states.changed().await.is_err() {
                    break;
                }
            }
        });
        say(&format!(
            "  leader election as {identity}: the controller runs only while leading"
        ));
        tasks.spawn(async move {
            let r = elector
                .run_while_leading(
                    cancel2,
                    |leading| async move { c.run(workers, leading).await },
                )
                .await;
            if let Err(e) = r {
                tracing::error!(error = %e, "leader election failed");
            }
        });
    } else {
        let (c, cancel2, workers) = (controller.clone(), cancel.clone(), args.workers);
        tasks.spawn(async move { c.run(workers, cancel2).await });
    }
    if let Some(k) = &kubelet {
        let (k, cancel2) = (k.clone(), cancel.clone());
        tasks.spawn(async move { k.run(2, cancel2).await });
    }
    let phase = progress::Phase::default();
    phase.set("initial");
    let faults_handle = embedded.map(|s| s.faults().clone());
    let sources = progress::Sources {
        faults: Box::new({
            let f = faults_handle.clone();
            move || {
                f.as_ref()
                    .map(|f| f.counts().into_iter().collect())
                    .unwrap_or_default()
            }
        }),
        leader: Box::new({
            let l = leader.clone();
            move || l.lock().clone()
        }),
    };
    let metrics_out = args.metrics_addr.map(|_| demo_metrics);
    let progress_cancel = CancellationToken::new();
    tasks.spawn(progress::run(
        controller.clone(),
        phase.clone(),
        sources,
        metrics_out,
        args.quiet,
        progress_cancel.clone(),
    ));

    let deadline = Duration::from_secs_f64(args.deadline_secs.max(1.0));
    // Phase 1: the initial workload.
    let t = Instant::now();
    let initial = converge(&backend, &controller, deadline).await;
    let initial_time = t.elapsed();
    if initial.ok() {
        say(&format!(
            "initial convergence: {} ReplicaSets, {} pods in {:.2} s",
            initial.replicasets,
            initial.pods,
            initial_time.as_secs_f64()
        ));
    } else {
        say(&format!(
            "initial convergence not reached in {:.0} s; continuing",
            deadline.as_secs_f64()
        ));
        say_unready_causes(&client, remote_namespace).await;
    }

    // Phase 2: chaos.
    phase.set("chaos");
    let t = Instant::now();
    if let Some(f) = &faults_handle {
        chaos::start(f, chaos, args.seed);
    }
    let done = run_chaos(
        &backend,
        &scenario,
        chaos,
        faults_handle.as_ref(),
        args.seed,
    )
    .await;
    if let Some(f) = &faults_handle {
        chaos::stop(f);
    }
    let chaos_time = t.elapsed();
    let fault_counts: BTreeMap<&str, u64> = faults_handle
        .as_ref()
        .map(|f| f.counts())
        .unwrap_or_default();
    say(&format!(
        "chaos: {:.1} s, {} (faults: {})",
        chaos_time.as_secs_f64(),
        done.describe(),
        if fault_counts.is_empty() {
            "none".to_string()
        } else {
            fault_counts
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    ));

    // Phase 3: converge and verify.
    phase.set("settle");
    let t = Instant::now();
    let verification = converge(&backend, &controller, deadline).await;
    let settle_time = t.elapsed();
    progress_cancel.cancel();
    tokio::time::sleep(Duration::from_millis(10)).await;

    let st = controller.stats();
    let g = ControllerStats::get;
    say(&format!(
        "controller: {} syncs, {} retries ({} conflicts), {} pods created, {} deleted, {} status updates, {} events{}",
        g(&st.syncs),
        g(&st.requeues),
        g(&st.conflicts),
        g(&st.pods_created),
        g(&st.pods_deleted),
        g(&st.status_updates),
        g(&st.events),
        kubelet
            .as_ref()
            .map(|k| format!("; kubelet started {} pods", k.started()))
            .unwrap_or_default(),
    ));
    say(&format!(
        "informers: replicasets {} objects (version {}), pods {} objects (version {})",
        controller.replicasets().get_indexer().len(),
        controller.replicasets().last_sync_resource_version(),
        controller.pods().get_indexer().len(),
        controller.pods().last_sync_resource_version(),
    ));
    let ok = verification.ok();
    if ok {
        say(&format!(
            "VERIFIED: {} ReplicaSets have exactly their replicas ({} pods, all ready, status reported); the informer caches equal the server's state",
            verification.replicasets, verification.pods
        ));
        say(&format!(
            "timings: initial convergence {:.2} s, chaos {:.1} s, convergence after chaos {:.2} s, total {:.1} s",
            initial_time.as_secs_f64(),
            chaos_time.as_secs_f64(),
            settle_time.as_secs_f64(),
            started.elapsed().as_secs_f64()
        ));
    } else {
        say(&format!(
            "NOT VERIFIED after {:.0} s: {} problems, e.g.:",
            settle_time.as_secs_f64(),
            verification.problem_count
        ));
        for p in &verification.problems {
            say(&format!("  - {p}"));
        }
        say_unready_causes(&client, remote_namespace).await;
    }
    cancel.cancel();
    tasks.close();
    tasks.wait().await;
    factory.shutdown().await;
    clean_up(&args, created_namespace, embedded.is_some()).await;
    Ok(ok)
}

/// Prints why the workload's pods are not ready, if some are not.
async fn say_unready_causes(client: &kube::Client, namespace: Option<&str>) {
    for cause in readiness::unready_causes_on(client, namespace).await {
        say(&format!("  likely cause: {cause}"));
    }
}

/// Waits until the world verifies or `deadline` passes; returns the last verification.
async fn converge(
    backend: &Backend,
    controller: &ReplicaSetController,
    deadline: Duration,
) -> Verification {
    let until = Instant::now() + deadline;
    loop {
        // Cheap check on the caches first; the server is asked only when they look done.
        let s = progress::snapshot(controller, 0);
        let looks_done = s.converged == s.replicasets && controller.queue().is_empty();
        if looks_done || Instant::now() >= until {
            let v = check(backend, controller).await;
            if v.ok() || Instant::now() >= until {
                return v;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn check(backend: &Backend, controller: &ReplicaSetController) -> Verification {
    let (rs, pods) = match (backend.replicasets().await, backend.pods().await) {
        (Ok(rs), Ok(pods)) => (rs, pods),
        (Err(e), _) | (_, Err(e)) => {
            return Verification {
                problems: vec![format!("cannot read the server's state: {e}")],
                problem_count: 1,
                ..Verification::default()
            };
        }
    };
    verify::verify(
        &rs,
        &pods,
        &controller.replicasets().get_indexer().list(),
        &controller.pods().get_indexer().list(),
    )
}
