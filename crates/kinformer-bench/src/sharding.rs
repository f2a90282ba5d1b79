//! The `sharding` bench group: S1 — 100,000 bench pods sharded by label among 1, 2 and 4
//! replicas, each replica its own process (so its memory is its own).
//!
//! # The processes
//!
//! The bench process spawns the bench server (`kinformer-bench server`, see `e1`) and, per
//! replica, `kinformer-bench shard-replica --url <url> --identity <id>` (a hidden
//! subcommand): a [`Membership`] Lease, a [`Sharder`] competing for the sharder lease, and a
//! typed Pod informer selecting the replica's own shard, with the drainer of a
//! [`ShardReplica`]. Every 100 ms a replica prints `status <cached> <synced> <leading>
//! <peak_rss_mib>`; it exits when its stdin closes (or when killed).
//!
//! # Metrics (suffix `_r1`, `_r2`, `_r4`: the replica count)
//!
//! - `label_ms`: from starting the replicas on unlabelled pods to every pod cached by its
//!   owner (the join delay, the sharder's metadata sync and one labelling patch per pod).
//! - `synced_ms`: from restarting the replicas (same identities, pods already labelled) to
//!   every replica's informer synced with its whole shard — a replica's start-up cost.
//! - `peak_rss_mib`: the largest VmHWM among the restarted replicas (the sharder's leader
//!   included: it also caches the stripped metadata of every pod).
//! - `rebalance_ms` (r4 only): from killing a replica that is not the sharder's leader
//!   (SIGKILL, nothing released) to the live replicas caching every pod. It includes waiting
//!   for the killed replica's lease to expire (`lease_duration`, 4 s here).
//!
//! `KINFORMER_S1_PODS` overrides the pod count (for quick runs; the figures then do not
//! compare with the 100,000-pod ones).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kinformer::cache::listwatch::Selectors;
use kinformer::cache::{HasSynced, SharedInformerFactory};
use kinformer::sharding::{
    LeaseMembers, Membership, ShardKey, ShardReplica, Sharder, ShardingConfig, shard_selector,
};
use tokio_util::sync::CancellationToken;

use crate::e1::ServerProcess;
use crate::group::{BenchError, Group, Metrics};

/// The `sharding` group.
pub(crate) const GROUP: Group = Group {
    name: "sharding",
    workloads: &["S1"],
    run,
};

const PODS: usize = 100_000;
const LEASE: Duration = Duration::from_secs(4);
const RENEW: Duration = Duration::from_secs(3);
const RETRY: Duration = Duration::from_secs(1);
/// Namespace of the membership and sharder leases.
const LEASE_NAMESPACE: &str = "kube-system";
/// Longest wait for one phase.
const PHASE_TIMEOUT: Duration = Duration::from_secs(600);

fn run(workload: &str) -> Result<Metrics, BenchError> {
    match workload {
        "S1" => s1().map_err(|e| BenchError::Workload("S1".into(), e)),
        other => Err(BenchError::UnknownWorkload(other.to_string())),
    }
}

fn pods() -> usize {
    std::env::var("KINFORMER_S1_PODS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(PODS)
}

/// What a replica last reported.
#[derive(Debug, Clone, Copy, Default)]
struct Status {
    cached: usize,
    synced: bool,
    leading: bool,
    peak_rss_mib: f64,
}

/// A replica child process and the thread reading its status lines.
struct ReplicaProcess {
    identity: String,
    child: Child,
    status: mpsc::Receiver<Status>,
    last: Status,
}

impl ReplicaProcess {
    fn spawn(url: &str, identity: &str) -> Result<Self, String> {
        let exe = std::env::current_exe().map_err(|e| format!("current exe: {e}"))?;
        let mut child = Command::new(exe)
            .args(["shard-replica", "--url", url, "--identity", identity])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("spawning replica {identity}: {e}"))?;
        let stdout = child.stdout.take().ok_or("no replica stdout")?;
        let (tx, status) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let words: Vec<&str> = line.split_whitespace().collect();
                if let ["status", cached, synced, leading, rss] = words[..] {
                    let status = Status {
                        cached: cached.parse().unwrap_or(0),
                        synced: synced == "1",
                        leading: leading == "1",
                        peak_rss_mib: rss.parse().unwrap_or(0.0),
                    };
                    if tx.send(status).is_err() {
                        break;
                    }
                }
            }
        });
        Ok(Self {
            identity: identity.to_owned(),
            child,
            status,
            last: Status::default(),
        })
    }

    fn poll(&mut self) -> Status {
        while let Ok(status) = self.status.try_recv() {
            self.last = status;
        }
        self.last
    }

    /// Ends the replica gracefully (end of stdin: it releases its leases) and waits.
    fn stop(mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }

    /// Kills the replica (SIGKILL: nothing released).
    fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits until the replicas' caches hold `pods` in all, every one synced, for two reports
/// in a row; returns how long it took.
fn wait_all_cached(
    replicas: &mut [ReplicaProcess],
    pods: usize,
    what: &str,
) -> Result<Duration, String> {
    let start = Instant::now();
    let mut stable = 0;
    while start.elapsed() < PHASE_TIMEOUT {
        let statuses: Vec<Status> = replicas.iter_mut().map(ReplicaProcess::poll).collect();
        let total: usize = statuses.iter().map(|s| s.cached).sum();
        if total == pods && statuses.iter().all(|s| s.synced) {
            stable += 1;
            if stable >= 2 {
                return Ok(start.elapsed());
            }
        } else {
            stable = 0;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(format!(
        "{what}: not every pod cached within {PHASE_TIMEOUT:?}"
    ))
}

fn start_replicas(url: &str, count: usize) -> Result<Vec<ReplicaProcess>, String> {
    (0..count)
        .map(|i| ReplicaProcess::spawn(url, &format!("replica-{i}")))
        .collect()
}

fn s1() -> Result<Metrics, String> {
    let pods = pods();
    let mut metrics = Metrics::new();
    let mut synced = Vec::new();
    let mut labelled = Vec::new();
    let mut rss = Vec::new();
    let mut rebalance = None;
    for count in [1usize, 2, 4] {
        let server = ServerProcess::spawn(pods, false, crate::e1::Encode::Json)?;
        let url = server.url.clone();
        // Labelling from scratch.
        let mut replicas = start_replicas(&url, count)?;
        let label_time = wait_all_cached(&mut replicas, pods, "labelling")?;
        for replica in replicas {
            replica.stop();
        }
        // A restart on labelled pods: the start-up cost and memory of a replica.
        let mut replicas = start_replicas(&url, count)?;
        let sync_time = wait_all_cached(&mut replicas, pods, "restart")?;
        // Let the peaks settle into the next report.
        std::thread::sleep(Duration::from_millis(300));
        let peak = replicas
            .iter_mut()
            .map(|r| r.poll().peak_rss_mib)
            .fold(0.0, f64::max);
        eprintln!(
            "S1 r{count}: labelled in {:.0} ms, restart synced in {:.0} ms, peak RSS {peak:.0} MiB ({})",
            label_time.as_secs_f64() * 1e3,
            sync_time.as_secs_f64() * 1e3,
            replicas
                .iter_mut()
                .map(|r| {
                    let st = r.poll();
                    format!(
                        "{} {} pods {:.0} MiB{}",
                        r.identity,
                        st.cached,
                        st.peak_rss_mib,
                        if st.leading { " (sharder)" } else { "" }
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        );
        if count == 4 {
            let victim = replicas
                .iter_mut()
                .position(|r| !r.poll().leading)
                .ok_or("every replica leads?")?;
            let killed = replicas.remove(victim);
            eprintln!("S1 r4: killing {}", killed.identity);
            let start = Instant::now();
            killed.kill();
            wait_all_cached(&mut replicas, pods, "rebalance")?;
            rebalance = Some(start.elapsed());
        }
        for replica in replicas {
            replica.stop();
        }
        drop(server);
        labelled.push((count, label_time));
        synced.push((count, sync_time));
        rss.push((count, peak));
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    for (count, d) in &synced {
        metrics.push((format!("synced_ms_r{count}"), ms(*d)));
    }
    for (count, peak) in &rss {
        metrics.push((format!("peak_rss_mib_r{count}"), *peak));
    }
    for (count, d) in &labelled {
        metrics.push((format!("label_ms_r{count}"), ms(*d)));
    }
    if let Some(d) = rebalance {
        metrics.push(("rebalance_ms".into(), ms(d)));
    }
    if let (Some((_, r1)), Some((_, r4))) = (rss.first(), rss.last()) {
        metrics.push(("rss_ratio_r4_r1".into(), r4 / r1));
    }
    metrics.push(("pods".into(), pods as f64));
    Ok(metrics)
}

/// `kinformer-bench shard-replica`: one S1 replica (see the module docs). Returns the exit
/// code.
pub fn shard_replica(url: &str, identity: &str) -> i32 {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.worker_threads(2);
    crate::e1::exit_code(
        builder,
        &format!("replica {identity}"),
        replica(url, identity),
    )
}

async fn replica(url: &str, identity: &str) -> Result<(), String> {
    let uri = url
        .parse()
        .map_err(|e| format!("server url {url:?}: {e}"))?;
    let client = kube::Client::try_from(kube::Config::new(uri)).map_err(|e| e.to_string())?;
    let config = ShardingConfig::new(identity, LEASE_NAMESPACE).with_timing(LEASE, RENEW, RETRY);
    let membership = Membership::new(config, LeaseMembers::new(client.clone(), LEASE_NAMESPACE))
        .map_err(|e| e.to_string())?;
    let factory = SharedInformerFactory::new(client.clone()).with_selectors(Selectors {
        label_selector: Some(shard_selector(identity)),
        field_selector: None,
    });
    let informer = factory.informer::<Pod>();
    let shard = ShardReplica::new(membership.clone(), informer.clone(), client.clone())
        .map_err(|e| e.to_string())?;
    let sharder = Sharder::<Pod, _>::new(membership.clone(), client, ShardKey::NamespaceName)
        .map_err(|e| e.to_string())?;
    let cancel = CancellationToken::new();
    // The end of stdin is the parent's signal to stop.
    std::thread::spawn({
        let cancel = cancel.clone();
        move || {
            let mut sink = String::new();
            while std::io::stdin().read_line(&mut sink).is_ok_and(|n| n > 0) {
                sink.clear();
            }
            cancel.cancel();
        }
    });
    let tasks = tokio_util::task::TaskTracker::new();
    tasks.spawn({
        let (m, c) = (membership.clone(), cancel.clone());
        async move {
            if let Err(e) = m.run(c).await {
                eprintln!("membership: {e}");
            }
        }
    });
    tasks.spawn({
        let (s, c) = (sharder.clone(), cancel.clone());
        async move { s.run(c).await }
    });
    tasks.spawn({
        let (s, c) = (shard.clone(), cancel.clone());
        async move { s.run_drainer(c).await }
    });
    factory.start(&cancel);
    let mut out = std::io::stdout().lock();
    while !cancel.is_cancelled() {
        let line = format!(
            "status {} {} {} {:.1}",
            informer.get_indexer().len(),
            u8::from(informer.has_synced()),
            u8::from(sharder.is_leader()),
            crate::proc_status::peak_rss_mib().unwrap_or(0.0)
        );
        if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
            break;
        }
        tokio::select! {
            () = cancel.cancelled() => {}
            () = tokio::time::sleep(Duration::from_millis(100)) => {}
        }
    }
    drop(out);
    cancel.cancel();
    tasks.close();
    tasks.wait().await;
    factory.shutdown().await;
    Ok(())
}
