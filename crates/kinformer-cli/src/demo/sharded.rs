//! `kinformer demo --replicas N [--sharding filtered|labelled]`: the ReplicaSet controller as N
//! sharded replicas, each with its own client, informers and membership Lease.
//!
//! - **labelled** (default): the elected sharder labels each ReplicaSet with its owner; each
//!   replica's ReplicaSet informer selects its own shard, and an object moves by drain,
//!   acknowledgement and relabel (or at once when its owner's lease expired).
//! - **filtered**: every replica caches every ReplicaSet and syncs only those it owns by
//!   rendezvous hashing over the live members.
//!
//! The chaos phase also kills one replica (the sharder's leader in labelled mode) and later
//! adds one. The verification adds to the plain demo's: every ReplicaSet is owned by its
//! rendezvous owner among the live replicas, each replica's cache holds exactly its share, and
//! (embedded server) the server's write audit shows no two replicas writing one ReplicaSet or
//! its pods at once outside a handover.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use http::{HeaderName, HeaderValue};
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use kinformer::cache::listwatch::Selectors;
use kinformer::cache::{SharedIndexInformer, SharedInformerFactory};
use kinformer::kube::KubeClient;
use kinformer::sharding::{
    DRAIN_ANNOTATION, LeaseMembers, Membership, SHARD_LABEL, ShardFilter, ShardKey, ShardReplica,
    Sharder, ShardingConfig, rendezvous_owner, shard_selector,
};
use kinformer::workqueue::{RateLimitingQueue, WithMaxWait, default_controller_rate_limiter};
use kinformer_apiserver::audit::{WindowCheck, check_write_windows};
use parking_lot::Mutex;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::backend::Backend;
use super::chaos;
use super::controller::{Gate, ReplicaSetController, controller_of};
use super::kubelet::Kubelet;
use super::verify::{self, Verification};
use super::{DemoArgs, DemoError, MAX_RETRY_WAIT, POD_HOT_OBJECTS, Setup, say};

/// How the replicas share the ReplicaSets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ShardingMode {
    /// Every replica watches everything and syncs what it owns.
    Filtered,
    /// The sharder labels objects; each replica watches only its shard.
    Labelled,
}

/// Lease timing of the demo's replicas: short, so that a killed replica's objects move within
/// seconds.
const LEASE: Duration = Duration::from_secs(3);
const RENEW: Duration = Duration::from_secs(2);
const RETRY: Duration = Duration::from_millis(500);

/// One controller replica.
struct Replica {
    identity: String,
    controller: ReplicaSetController,
    membership: Membership<LeaseMembers>,
    filter: Option<ShardFilter<LeaseMembers>>,
    sharder: Option<Sharder<ReplicaSet, LeaseMembers>>,
    cancel: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
    alive: bool,
}

/// What a replica needs to start.
struct Env<'a> {
    config: &'a kube::Config,
    mode: ShardingMode,
    lease_namespace: &'a str,
    workload_namespace: Option<&'a str>,
    args: &'a DemoArgs,
}

fn client_for(config: &kube::Config, agent: &str) -> Result<kube::Client, DemoError> {
    let mut config = config.clone();
    if let Ok(value) = HeaderValue::from_str(agent) {
        config
            .headers
            .push((HeaderName::from_static("user-agent"), value));
    }
    Ok(kube::Client::try_from(config)?)
}

fn factory(client: &kube::Client, env: &Env<'_>) -> SharedInformerFactory<KubeClient> {
    let mut factory = SharedInformerFactory::new(client.clone()).with_wire(env.args.wire);
    if let Some(ns) = env.workload_namespace {
        factory = factory.with_namespace(ns.to_owned());
    }
    factory
}

impl Replica {
    fn start(identity: &str, env: &Env<'_>) -> Result<Self, DemoError> {
        let client = client_for(env.config, identity)?;
        let sharding =
            ShardingConfig::new(identity, env.lease_namespace).with_timing(LEASE, RENEW, RETRY);
        let membership = Membership::new(
            sharding,
            LeaseMembers::new(client.clone(), env.lease_namespace),
        )
        .map_err(DemoError::Sharding)?;
        let rs_factory = match env.mode {
            ShardingMode::Labelled => factory(&client, env).with_selectors(Selectors {
                label_selector: Some(shard_selector(identity)),
                field_selector: None,
            }),
            ShardingMode::Filtered => factory(&client, env),
        };
        let pod_factory =
            factory(&client, env).with_storage::<Pod>(env.args.store.storage(POD_HOT_OBJECTS));
        let replicasets: SharedIndexInformer<ReplicaSet> = rs_factory.informer::<ReplicaSet>();
        let pods = pod_factory.informer::<Pod>();
        let limiter = WithMaxWait::new(default_controller_rate_limiter(), MAX_RETRY_WAIT);
        let queue = RateLimitingQueue::with_config(Default::default(), limiter);
        let cancel = CancellationToken::new();
        let mut tasks = Vec::new();
        let (gate, filter, sharder): (Gate, _, _) = match env.mode {
            ShardingMode::Labelled => {
                let shard =
                    ShardReplica::new(membership.clone(), replicasets.clone(), client.clone())?;
                let sharder = match env.workload_namespace {
                    Some(ns) => Sharder::namespaced(
                        membership.clone(),
                        client.clone(),
                        ShardKey::NamespaceName,
                        ns,
                    ),
                    None => {
                        Sharder::new(membership.clone(), client.clone(), ShardKey::NamespaceName)
                    }
                }?;
                tasks.push(tokio::spawn({
                    let (shard, cancel) = (shard.clone(), cancel.clone());
                    async move { shard.run_drainer(cancel).await }
                }));
                tasks.push(tokio::spawn({
                    let (sharder, cancel) = (sharder.clone(), cancel.clone());
                    async move { sharder.run(cancel).await }
                }));
                let gate: Gate = Arc::new(move |key: &str| {
                    shard
                        .claim(key)
                        .map(|claim| Box::new(claim) as Box<dyn Send>)
                });
                (gate, None, Some(sharder))
            }
            ShardingMode::Filtered => {
                let filter = ShardFilter::new(membership.clone(), ShardKey::NamespaceName);
                tasks.push(tokio::spawn({
                    let (filter, cancel, queue, informer) = (
                        filter.clone(),
                        cancel.clone(),
                        queue.clone(),
                        replicasets.clone(),
                    );
                    async move {
                        filter
                            .requeue_on_change(
                                || informer.get_indexer().list(),
                                |key| queue.add(key),
                                cancel,
                            )
                            .await;
                    }
                }));
                let owner = filter.clone();
                let gate: Gate = Arc::new(move |key: &str| {
                    owner.owns_key(key).then(|| Box::new(()) as Box<dyn Send>)
                });
                (gate, Some(filter), None)
            }
        };
        let controller = ReplicaSetController::with_informers(
            replicasets,
            pods,
            client.clone(),
            queue,
            Some(gate),
        )?;
        rs_factory.start(&cancel);
        pod_factory.start(&cancel);
        tasks.push(tokio::spawn({
            let (membership, cancel) = (membership.clone(), cancel.clone());
            async move {
                if let Err(e) = membership.run(cancel).await {
                    tracing::error!(error = %e, "membership failed");
                }
            }
        }));
        tasks.push(tokio::spawn({
            let (controller, cancel, workers) =
                (controller.clone(), cancel.clone(), env.args.workers);
            async move { controller.run(workers, cancel).await }
        }));
        Ok(Self {
            identity: identity.to_owned(),
            controller,
            membership,
            filter,
            sharder,
            cancel,
            tasks,
            alive: true,
        })
    }

    /// Kills the replica as a crashed process dies: every task stops where it is and nothing
    /// is released (its lease expires on its own).
    fn kill(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
        self.cancel.cancel(); // the informers' watches end, as a dead process's would
        self.alive = false;
    }

    /// Stops the replica gracefully.
    async fn stop(&mut self) {
        self.cancel.cancel();
        for task in self.tasks.drain(..) {
            let _ = task.await;
        }
    }

    fn owns(&self, key: &str, rs: &ReplicaSet) -> bool {
        match &self.filter {
            Some(filter) => filter.owns_key(key),
            None => label(rs) == Some(self.identity.as_str()) && self.membership.is_member(),
        }
    }
}

fn label(rs: &ReplicaSet) -> Option<&str> {
    rs.metadata
        .labels
        .as_ref()?
        .get(SHARD_LABEL)
        .map(String::as_str)
}

fn key_of(rs: &ReplicaSet) -> String {
    format!(
        "{}/{}",
        rs.metadata.namespace.as_deref().unwrap_or_default(),
        rs.metadata.name.as_deref().unwrap_or_default()
    )
}

/// The live replicas and the instants their views changed (the handovers of filtered mode).
struct Fleet {
    replicas: Mutex<Vec<Replica>>,
    marks: Mutex<Vec<Instant>>,
}

impl Fleet {
    fn live(&self) -> Vec<String> {
        let mut live: Vec<String> = self
            .replicas
            .lock()
            .iter()
            .filter(|r| r.alive)
            .map(|r| r.identity.clone())
            .collect();
        live.sort();
        live
    }

    /// Problems with who owns what: each ReplicaSet must be owned by exactly its rendezvous
    /// owner among the live replicas, and no drain may be pending.
    fn ownership_problems(&self, server_rs: &[ReplicaSet]) -> Vec<String> {
        let live = self.live();
        let replicas = self.replicas.lock();
        let mut problems = Vec::new();
        for rs in server_rs {
            let key = key_of(rs);
            let want = rendezvous_owner(live.iter().map(String::as_str), &key);
            let owners: Vec<&str> = replicas
                .iter()
                .filter(|r| r.alive && r.owns(&key, rs))
                .map(|r| r.identity.as_str())
                .collect();
            let draining = rs
                .metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key(DRAIN_ANNOTATION));
            if owners.len() != 1 || owners.first().copied() != want || draining {
                problems.push(format!(
                    "ReplicaSet {key} is owned by {owners:?}, not by {want:?}{}",
                    if draining { " (drain pending)" } else { "" }
                ));
            }
        }
        problems
    }
}

/// Every 20 ms, notes when any live replica's membership view changed.
async fn watch_views(fleet: Arc<Fleet>, cancel: CancellationToken) {
    let mut last: BTreeMap<String, Vec<String>> = BTreeMap::new();
    while !cancel.is_cancelled() {
        let views: BTreeMap<String, Vec<String>> = fleet
            .replicas
            .lock()
            .iter()
            .filter(|r| r.alive)
            .map(|r| {
                let view = r.membership.view();
                let members = if view.ready || view.member {
                    view.members
                } else {
                    Vec::new()
                };
                (r.identity.clone(), members)
            })
            .collect();
        if views != last {
            fleet.marks.lock().push(Instant::now());
            last = views;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A stand-in for Kubernetes' garbage collector: deletes pods whose controller ReplicaSet no
/// longer exists. (A replica cleans up after the ReplicaSets it saw deleted; this catches the
/// ones deleted while their owner was dead or moving.)
async fn collect_garbage(backend: Arc<Backend>, cancel: CancellationToken) {
    while !cancel.is_cancelled() {
        if let (Ok(rs), Ok(pods)) = (backend.replicasets().await, backend.pods().await) {
            let uids: std::collections::HashSet<&str> = rs
                .iter()
                .filter_map(|r| r.metadata.uid.as_deref())
                .collect();
            for pod in &pods {
                let orphan =
                    controller_of(&pod.metadata).is_some_and(|o| !uids.contains(o.uid.as_str()));
                if orphan && pod.metadata.deletion_timestamp.is_none() {
                    let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
                    let name = pod.metadata.name.as_deref().unwrap_or_default();
                    let _ = backend.delete_pod(ns, name).await;
                }
            }
        }
        tokio::select! {
            () = cancel.cancelled() => return,
            () = tokio::time::sleep(Duration::from_millis(500)) => {}
        }
    }
}

/// The full check: the plain demo's (server state), ownership, and each replica's caches.
async fn check(backend: &Backend, fleet: &Fleet, mode: ShardingMode) -> Verification {
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
    let rs_arcs: Vec<Arc<ReplicaSet>> = rs.iter().cloned().map(Arc::new).collect();
    let pod_arcs: Vec<Arc<Pod>> = pods.iter().cloned().map(Arc::new).collect();
    let mut v = verify::verify(&rs, &pods, &rs_arcs, &pod_arcs);
    let mut extra = fleet.ownership_problems(&rs);
    for replica in fleet.replicas.lock().iter().filter(|r| r.alive) {
        let share: Vec<Arc<ReplicaSet>> = match mode {
            ShardingMode::Filtered => rs_arcs.clone(),
            ShardingMode::Labelled => rs_arcs
                .iter()
                .filter(|r| label(r) == Some(replica.identity.as_str()))
                .cloned()
                .collect(),
        };
        let caches = verify::compare_caches(
            &share,
            &pod_arcs,
            &replica.controller.replicasets().get_indexer().list(),
            &replica.controller.pods().get_indexer().list(),
        );
        extra.extend(
            caches
                .into_iter()
                .map(|p| format!("{}: {p}", replica.identity)),
        );
    }
    for p in extra {
        v.add_problem(p);
    }
    v
}

/// Waits until [`check`] passes or `deadline` passes.
async fn converge(
    backend: &Backend,
    fleet: &Fleet,
    mode: ShardingMode,
    deadline: Duration,
) -> Verification {
    let until = Instant::now() + deadline;
    loop {
        let quiet = fleet
            .replicas
            .lock()
            .iter()
            .filter(|r| r.alive)
            .all(|r| r.controller.queue().is_empty());
        if quiet || Instant::now() >= until {
            let v = check(backend, fleet, mode).await;
            if v.ok() || Instant::now() >= until {
                return v;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until every ReplicaSet is owned by its rendezvous owner among the live replicas;
/// returns how long that took (`None`: not within `deadline`).
async fn settled(backend: &Backend, fleet: &Fleet, deadline: Duration) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < deadline {
        if let Ok(rs) = backend.replicasets().await
            && fleet.ownership_problems(&rs).is_empty()
        {
            return Some(start.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

/// Runs the sharded demo. Returns whether it verified.
pub(super) async fn run(args: DemoArgs, count: usize, setup: Setup) -> Result<bool, DemoError> {
    let started = Instant::now();
    let mode = args.sharding;
    let Setup {
        backend,
        mut config,
        namespaces,
        created_namespace,
        where_,
    } = setup;
    let backend = Arc::new(backend);
    let embedded = match backend.as_ref() {
        Backend::Embedded(s) => Some(s),
        Backend::Remote { .. } => None,
    };
    if let Some(server) = embedded {
        server.audit().enable();
    }
    config.default_retry = false;
    let (chaos, scenario) = super::plan(&args, embedded.is_some(), &namespaces);
    let wanted: i32 = scenario.initial.iter().map(|r| r.replicas).sum();
    say(&format!(
        "kinformer demo: seed {}, {} ReplicaSets ({wanted} pods), {count} replicas sharded {mode:?} ({} workers each), chaos {:?}, {where_}",
        args.seed,
        scenario.initial.len(),
        args.workers,
        args.chaos
    ));
    for rs in &scenario.initial {
        backend.create_replicaset(&rs.to_replicaset()).await?;
    }
    let lease_namespace = namespaces
        .first()
        .cloned()
        .unwrap_or_else(|| "default".into());
    let remote_namespace = embedded.is_none().then(|| args.namespace.clone());
    let env = Env {
        config: &config,
        mode,
        lease_namespace: &lease_namespace,
        workload_namespace: remote_namespace.as_deref(),
        args: &args,
    };
    let cancel = CancellationToken::new();
    let tasks = tokio_util::task::TaskTracker::new();

    // The stand-in kubelet and garbage collector, with their own clients.
    let kubelet_client = client_for(&config, "kinformer-kubelet")?;
    let kubelet_factory = factory(&kubelet_client, &env);
    let (stand_in, why) = super::readiness::use_stand_in_kubelet(
        &kubelet_client,
        args.connect.is_cluster(),
        args.stand_in_kubelet,
    )
    .await;
    if let Some(why) = why {
        say(why);
    }
    let kubelet = if stand_in {
        Some(Kubelet::new(
            kubelet_factory.informer::<Pod>(),
            kubelet_client.clone(),
        )?)
    } else {
        None
    };
    kubelet_factory.start(&cancel);
    if let Some(k) = &kubelet {
        let (k, c) = (k.clone(), cancel.clone());
        tasks.spawn(async move { k.run(2, c).await });
    }
    tasks.spawn(collect_garbage(backend.clone(), cancel.clone()));

    let fleet = Arc::new(Fleet {
        replicas: Mutex::new(Vec::new()),
        marks: Mutex::new(Vec::new()),
    });
    for i in 0..count {
        let replica = Replica::start(&format!("replica-{i}"), &env)?;
        fleet.replicas.lock().push(replica);
    }
    tasks.spawn(watch_views(fleet.clone(), cancel.clone()));
    let deadline = Duration::from_secs_f64(args.deadline_secs.max(1.0));

    // Phase 1: the initial workload.
    let t = Instant::now();
    let initial = converge(&backend, &fleet, mode, deadline).await;
    let initial_time = t.elapsed();
    if initial.ok() {
        say(&format!(
            "initial convergence: {} ReplicaSets, {} pods in {:.2} s (after the {:.0} s join delay)",
            initial.replicasets,
            initial.pods,
            initial_time.as_secs_f64(),
            LEASE.as_secs_f64()
        ));
    } else {
        say(&format!(
            "initial convergence not reached in {:.0} s; continuing ({} problems, e.g. {:?})",
            deadline.as_secs_f64(),
            initial.problem_count,
            initial.problems.first()
        ));
    }
    print_counts(&fleet, &backend, mode).await;

    // Phase 2: chaos, and a replica killed at a third and one added at two thirds.
    let t = Instant::now();
    let faults = embedded.as_ref().map(|s| s.faults().clone());
    if let Some(f) = &faults {
        chaos::start(f, chaos, args.seed);
    }
    let span = Duration::from_secs_f64(args.chaos_secs.max(0.0));
    let replica_chaos = async {
        tokio::time::sleep(span / 3).await;
        let victim = {
            let mut replicas = fleet.replicas.lock();
            let leader = replicas
                .iter()
                .position(|r| r.alive && r.sharder.as_ref().is_some_and(Sharder::is_leader));
            let index = leader.unwrap_or(0);
            replicas[index].kill();
            replicas[index].identity.clone()
        };
        let killed_at = Instant::now();
        say(&format!(
            "  killed {victim}{}",
            if mode == ShardingMode::Labelled {
                " (the sharder's leader)"
            } else {
                ""
            }
        ));
        let rebalance = settled(&backend, &fleet, deadline).await;
        let kill_to_settled = rebalance.map(|_| killed_at.elapsed());
        let remaining = (span * 2 / 3).saturating_sub(t.elapsed());
        tokio::time::sleep(remaining).await;
        let added = format!("replica-{count}");
        match Replica::start(&added, &env) {
            Ok(replica) => fleet.replicas.lock().push(replica),
            Err(e) => say(&format!("  could not add {added}: {e}")),
        }
        let added_at = Instant::now();
        say(&format!("  added {added}"));
        let join = settled(&backend, &fleet, deadline)
            .await
            .map(|_| added_at.elapsed());
        (victim, kill_to_settled, added, join)
    };
    let (done, (victim, kill_time, added, join_time)) = tokio::join!(
        super::chaos::run_chaos(&backend, &scenario, chaos, faults.as_ref(), args.seed),
        replica_chaos
    );
    if let Some(f) = &faults {
        chaos::stop(f);
    }
    say(&format!(
        "chaos: {:.1} s, {}",
        t.elapsed().as_secs_f64(),
        done.describe()
    ));

    // Phase 3: converge and verify.
    let t = Instant::now();
    let verification = converge(&backend, &fleet, mode, deadline).await;
    let settle_time = t.elapsed();
    print_counts(&fleet, &backend, mode).await;
    let ms = |d: Option<Duration>| {
        d.map_or_else(
            || "not settled".to_owned(),
            |d| format!("{:.2} s", d.as_secs_f64()),
        )
    };
    say(&format!(
        "handover: {victim} killed → its ReplicaSets owned by live replicas after {} (lease {:.0} s); {added} added → its share moved to it after {} (join delay {:.0} s)",
        ms(kill_time),
        LEASE.as_secs_f64(),
        ms(join_time),
        LEASE.as_secs_f64(),
    ));
    if mode == ShardingMode::Labelled {
        let (mut drains, mut moves, mut assigned, mut max_ms, mut total_ms) = (0, 0, 0, 0, 0);
        for r in fleet.replicas.lock().iter() {
            if let Some(s) = &r.sharder {
                let st = s.stats();
                drains += st.drains.load(Ordering::Relaxed);
                moves += st.handovers.load(Ordering::Relaxed);
                assigned += st.assigned.load(Ordering::Relaxed);
                max_ms = max_ms.max(st.max_handover_ms.load(Ordering::Relaxed));
                total_ms += st.total_handover_ms.load(Ordering::Relaxed);
            }
        }
        say(&format!(
            "sharder: {assigned} labels written to ownerless objects, {drains} drains requested, {moves} acknowledged handovers (drain → relabel: mean {} ms, max {max_ms} ms)",
            total_ms.checked_div(moves).unwrap_or(0)
        ));
    }

    // The invariant, from the server's write audit.
    let mut ok = verification.ok();
    if let Some(server) = embedded {
        let records: Vec<_> = server
            .audit()
            .records()
            .into_iter()
            .filter(|r| r.kind == "ReplicaSet" || r.kind == "Pod")
            .collect();
        let marks = fleet.marks.lock().clone();
        let check = WindowCheck {
            is_replica: &|w| w.starts_with("replica-"),
            is_handover: &|w| w.starts_with("sharder-"),
            handovers_at: match mode {
                ShardingMode::Filtered => &marks,
                ShardingMode::Labelled => &[],
            },
            writers_per_tenure: match mode {
                ShardingMode::Filtered => 2,
                ShardingMode::Labelled => 1,
            },
        };
        let writes = records
            .iter()
            .filter(|r| r.writer.starts_with("replica-"))
            .count();
        match check_write_windows(&records, &check) {
            Ok(()) => say(&format!(
                "invariant: {writes} replica writes on ReplicaSets and pods; no two replicas wrote one ReplicaSet (or its pods) outside a handover{}",
                match mode {
                    ShardingMode::Filtered => format!(" ({} membership changes)", marks.len()),
                    ShardingMode::Labelled => String::new(),
                }
            )),
            Err(overlaps) => {
                ok = false;
                say(&format!(
                    "INVARIANT BROKEN: {} overlapping write windows, e.g.:",
                    overlaps.len()
                ));
                for o in overlaps.iter().take(5) {
                    say(&format!("  - {o}"));
                }
            }
        }
    }
    if verification.ok() {
        say(&format!(
            "VERIFIED: {} ReplicaSets have exactly their replicas ({} pods, all ready, status reported), each owned by its rendezvous owner among {:?}; every replica's caches equal its share of the server's state",
            verification.replicasets,
            verification.pods,
            fleet.live()
        ));
        say(&format!(
            "timings: initial convergence {:.2} s, convergence after chaos {:.2} s, total {:.1} s",
            initial_time.as_secs_f64(),
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
        super::say_unready_causes(&kubelet_client, remote_namespace.as_deref()).await;
    }
    cancel.cancel();
    let replicas: Vec<Replica> = fleet.replicas.lock().drain(..).collect();
    for mut replica in replicas {
        replica.stop().await;
    }
    tasks.close();
    tasks.wait().await;
    kubelet_factory.shutdown().await;
    super::clean_up(&args, created_namespace, embedded.is_some()).await;
    Ok(ok)
}

/// Prints each replica's share: ReplicaSets cached and owned, syncs.
async fn print_counts(fleet: &Fleet, backend: &Backend, mode: ShardingMode) {
    let server_rs = backend.replicasets().await.unwrap_or_default();
    let mut line = String::from("replicas:");
    for r in fleet.replicas.lock().iter() {
        let owned = server_rs
            .iter()
            .filter(|rs| r.alive && r.owns(&key_of(rs), rs))
            .count();
        let _ = write!(
            line,
            " {} {}{} owned / {} cached, {} syncs;",
            r.identity,
            if r.alive { "" } else { "(killed) " },
            owned,
            r.controller.replicasets().get_indexer().len(),
            r.controller.stats().syncs.load(Ordering::Relaxed),
        );
    }
    if mode == ShardingMode::Labelled {
        line.push_str(" (labelled: a replica caches only its shard)");
    }
    say(line.trim_end_matches(';'));
}
