//! The live progress line: converged ReplicaSets, pods, queue depth, retries, faults, events/s.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::controller::{
    CONTROLLER_UID_INDEX, ControllerStats, ReplicaSetController, computed_status, desired_replicas,
    is_pod_active,
};
use super::metrics::{DemoMetrics, advance, label};

/// What the view shows, from the caches (cheap: no server round trip).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// ReplicaSets in the cache.
    pub replicasets: usize,
    /// Of which converged (right number of pods, all ready, status reported).
    pub converged: usize,
    /// Pods in the cache.
    pub pods: usize,
    /// Keys waiting in the work queue.
    pub queue: usize,
    /// Failed syncs requeued with backoff.
    pub retries: u64,
    /// Faults the server injected.
    pub faults: u64,
    /// Handler notifications so far.
    pub events: u64,
}

/// Reads a snapshot off the controller's caches.
pub fn snapshot(controller: &ReplicaSetController, faults: u64) -> Snapshot {
    let rs_cache = controller.replicasets().get_indexer();
    let pods = controller.pods().get_indexer();
    let mut converged = 0;
    let all = rs_cache.list();
    for rs in &all {
        let Some(uid) = rs.metadata.uid.as_deref() else {
            continue;
        };
        let Ok(owned) = pods.by_index(CONTROLLER_UID_INDEX, uid) else {
            continue;
        };
        let want = desired_replicas(rs);
        let status = computed_status(rs, &owned);
        let reported = rs.status.as_ref();
        if owned.iter().filter(|p| is_pod_active(p)).count() == want
            && usize::try_from(status.ready_replicas.unwrap_or(0)).ok() == Some(want)
            && reported.map(|s| s.replicas) == Some(status.replicas)
            && reported.and_then(|s| s.ready_replicas).unwrap_or(0)
                == status.ready_replicas.unwrap_or(0)
        {
            converged += 1;
        }
    }
    let stats = controller.stats();
    Snapshot {
        replicasets: all.len(),
        converged,
        pods: pods.len(),
        queue: controller.queue().len(),
        retries: ControllerStats::get(&stats.requeues),
        faults,
        events: ControllerStats::get(&stats.events),
    }
}

/// Copies a snapshot and the controller's counters into the metric families.
pub fn export(
    controller: &ReplicaSetController,
    s: &Snapshot,
    faults: &[(&str, u64)],
    m: &DemoMetrics,
) {
    let set = |g: &prometheus_client::metrics::gauge::Gauge, v: u64| {
        g.set(i64::try_from(v).unwrap_or(i64::MAX));
    };
    set(
        &m.informer_objects
            .get_or_create(&label("informer", "replicasets")),
        s.replicasets as u64,
    );
    set(
        &m.informer_objects.get_or_create(&label("informer", "pods")),
        s.pods as u64,
    );
    let st = controller.stats();
    for (op, c) in [
        ("syncs", &st.syncs),
        ("requeues", &st.requeues),
        ("conflicts", &st.conflicts),
        ("pods_created", &st.pods_created),
        ("pods_deleted", &st.pods_deleted),
        ("status_updates", &st.status_updates),
        ("events", &st.events),
    ] {
        advance(
            &m.controller.get_or_create(&label("op", op)),
            ControllerStats::get(c),
        );
    }
    for (name, n) in faults {
        advance(&m.faults.get_or_create(&label("fault", name)), *n);
    }
}

/// The phase shown at the start of the line.
#[derive(Debug, Clone, Default)]
pub struct Phase(Arc<Mutex<String>>);

impl Phase {
    /// Sets the phase name.
    pub fn set(&self, name: &str) {
        *self.0.lock() = name.to_owned();
    }
    /// The phase name.
    pub fn get(&self) -> String {
        self.0.lock().clone()
    }
}

/// Renders one progress line.
pub fn render(
    elapsed: Duration,
    phase: &str,
    s: &Snapshot,
    events_per_sec: f64,
    leader: &str,
) -> String {
    format!(
        "[{:>5.1}s] {phase:<8} converged {}/{} ReplicaSets | pods {} | queue {} | retries {} | faults {} | {:.0} events/s{leader}",
        elapsed.as_secs_f64(),
        s.converged,
        s.replicasets,
        s.pods,
        s.queue,
        s.retries,
        s.faults,
        events_per_sec,
    )
}

/// Inputs of the progress task besides the controller.
pub struct Sources {
    /// Total faults injected so far (0 without an embedded server).
    pub faults: Box<dyn Fn() -> Vec<(&'static str, u64)> + Send + Sync>,
    /// The leader, for `--leader-elect` (`""` otherwise).
    pub leader: Box<dyn Fn() -> String + Send + Sync>,
}

/// Prints the progress line every 250 ms on a terminal (in place) or every 2 s otherwise,
/// and updates the metrics, until `cancel` fires.
///
/// # Cancel safety
/// Cancel-safe.
pub async fn run(
    controller: ReplicaSetController,
    phase: Phase,
    sources: Sources,
    metrics: Option<DemoMetrics>,
    quiet: bool,
    cancel: CancellationToken,
) {
    let tty = std::io::stdout().is_terminal();
    let every = if tty {
        Duration::from_millis(250)
    } else {
        Duration::from_secs(2)
    };
    let start = Instant::now();
    let mut tick = crate::ticker::every(Duration::ZERO, every);
    let (mut last_events, mut last_at) = (0u64, Instant::now());
    loop {
        tokio::select! {
            () = cancel.cancelled() => break,
            _ = tick.tick() => {}
        }
        let faults = (sources.faults)();
        let total: u64 = faults.iter().map(|(_, n)| n).sum();
        let s = snapshot(&controller, total);
        if let Some(m) = &metrics {
            export(&controller, &s, &faults, m);
        }
        let now = Instant::now();
        let rate = s.events.saturating_sub(last_events) as f64
            / now.duration_since(last_at).as_secs_f64().max(1e-3);
        (last_events, last_at) = (s.events, now);
        if quiet {
            continue;
        }
        let line = render(start.elapsed(), &phase.get(), &s, rate, &(sources.leader)());
        let mut out = std::io::stdout().lock();
        let _ = if tty {
            write!(out, "\r{line}\x1b[K")
        } else {
            writeln!(out, "{line}")
        };
        let _ = out.flush();
    }
    if tty && !quiet {
        println!();
    }
}
