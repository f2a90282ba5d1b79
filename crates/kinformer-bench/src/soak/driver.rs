//! The soak run: churn, faults, checkpoints and samples on one timeline.
//!
//! While the writer ([`Churn`]) changes pods, the driver
//! - every `compact_every` closes every watch, holds the informers' next watches back
//!   ([`Fault::Delay`]) until the store has moved on, and compacts the history: the watches
//!   resume from a compacted revision, get 410 Gone and the informers relist;
//! - all along, cuts a quarter of the watches after a random number of events
//!   ([`Fault::CloseWatchRandom`]);
//! - once, at a third of the run, simulates a server restart ([`Fault::RefuseConnections`]);
//! - every `checkpoint_every` (and at the end) holds the writer, waits until every subject's
//!   cache and handler equal the server's pods, and records the subjects that did not within
//!   `converge_timeout`;
//! - every `sample_every` after the warm-up samples the process ([`sample`]).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kinformer::cache::{ReadOnlyIndexer, meta_namespace_key};
use kinformer_apiserver::{ApiServer, Fault, FaultRule, Target};
use kube::Resource;
use tokio::sync::{Mutex, Notify};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::churn::{Churn, WriteCounts};
use super::sample::{LiveHeap, Sample, sample, trim_allocator};

/// `namespace/name → resourceVersion`.
pub type KeyVersions = BTreeMap<String, u64>;

/// The soak's knobs ([`SoakConfig::new`] scales them to a duration).
#[derive(Debug, Clone)]
pub struct SoakConfig {
    /// How long the run lasts (checkpoints included).
    pub duration: Duration,
    /// Writes per second.
    pub writes_per_s: u32,
    /// Time between compactions (each with the informers' watches cut and delayed).
    pub compact_every: Duration,
    /// Time between checkpoints.
    pub checkpoint_every: Duration,
    /// Longest wait for the caches to catch up at a checkpoint.
    pub converge_timeout: Duration,
    /// Time between process samples.
    pub sample_every: Duration,
    /// Samples start after this long.
    pub warm_up: Duration,
    /// How long the simulated restart refuses connections.
    pub restart_for: Duration,
    /// Trim the allocator's free pages before each sample ([`trim_allocator`]).
    pub trim_before_sample: bool,
    /// Reads the live heap for each sample, where the process counts it.
    pub live_heap: Option<LiveHeap>,
}

impl SoakConfig {
    /// Knobs for a run of `duration` at `writes_per_s`: a checkpoint every eighth of the run
    /// (5 s to 1 min apart), a compaction every fifteenth (3 to 15 s apart), samples every
    /// two-hundredth (0.25 to 3 s apart) after a tenth of the run, 30 s to catch up, a
    /// restart of half a second; samples untrimmed, without the live heap.
    pub fn new(duration: Duration, writes_per_s: u32) -> Self {
        let clamp = |d: Duration, lo: u64, hi: u64| {
            d.clamp(Duration::from_millis(lo), Duration::from_millis(hi))
        };
        Self {
            duration,
            writes_per_s,
            compact_every: clamp(duration / 15, 3_000, 15_000),
            checkpoint_every: clamp(duration / 8, 5_000, 60_000),
            converge_timeout: Duration::from_secs(30),
            sample_every: clamp(duration / 200, 250, 3_000),
            warm_up: duration / 10,
            restart_for: Duration::from_millis(500),
            trim_before_sample: false,
            live_heap: None,
        }
    }
}

/// One informer under watch, as the driver reads it: its cache, its handler's view of the
/// cache, how many notifications the handler got, and a signal for each one.
pub struct Subject {
    /// A name for reports.
    pub name: String,
    /// The cache's keys and versions now.
    pub cache: Box<dyn Fn() -> KeyVersions + Send + Sync>,
    /// The handler's view now (every key added and not deleted since, at its last version).
    pub handler: Box<dyn Fn() -> KeyVersions + Send + Sync>,
    /// Notifications the handler has received.
    pub notifications: Box<dyn Fn() -> u64 + Send + Sync>,
    /// Signalled (`notify_one`) after each notification.
    pub changed: Arc<Notify>,
}

impl std::fmt::Debug for Subject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subject")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// One checkpoint.
#[derive(Debug, Clone)]
pub struct Checkpoint {
    /// Time since the churn began.
    pub at: Duration,
    /// Pods on the server.
    pub objects: usize,
    /// How long the slowest subject took to catch up (or the timeout).
    pub waited: Duration,
    /// One line per subject whose cache or handler still differed from the server at the
    /// timeout, with the differences.
    pub mismatches: Vec<String>,
}

/// What a soak run saw.
#[derive(Debug)]
pub struct SoakReport {
    /// Wall time of the run.
    pub elapsed: Duration,
    /// Writes made.
    pub writes: Arc<WriteCounts>,
    /// Notifications the subjects' handlers received during the run, summed.
    pub notifications: u64,
    /// Every checkpoint, the final one last.
    pub checkpoints: Vec<Checkpoint>,
    /// Process samples after the warm-up, in time order.
    pub samples: Vec<Sample>,
    /// Faults fired, by name (the server's counts).
    pub faults: BTreeMap<&'static str, u64>,
}

impl SoakReport {
    /// Checkpoints × subjects that had not caught up with the server.
    pub fn mismatches(&self) -> usize {
        self.checkpoints.iter().map(|c| c.mismatches.len()).sum()
    }
}

/// The server's pods as keys and versions.
///
/// # Errors
/// The store does not serve pods, or holds a version that is not a number.
pub fn server_versions(server: &ApiServer) -> Result<KeyVersions, String> {
    server
        .store()
        .keys_and_versions("pods")
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|(k, v)| Ok((k, v.parse().map_err(|e| format!("version {v:?}: {e}"))?)))
        .collect()
}

/// The resourceVersion of an object as a number (0 if missing or not a number).
pub fn version_of<K: Resource>(obj: &K) -> u64 {
    obj.meta()
        .resource_version
        .as_deref()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// `namespace/name` of an object (empty without a name).
pub fn key_of<K: Resource>(obj: &K) -> String {
    meta_namespace_key(obj)
        .map(|k| k.to_string())
        .unwrap_or_default()
}

/// An informer's cache as keys and versions.
pub fn cache_versions<K: Resource>(cache: &ReadOnlyIndexer<K>) -> KeyVersions {
    cache
        .list()
        .iter()
        .map(|o| (key_of(o.as_ref()), version_of(o.as_ref())))
        .collect()
}

/// How `got` differs from `want` (at most six entries named).
pub fn describe_diff(got: &KeyVersions, want: &KeyVersions) -> String {
    let mut out = Vec::new();
    for (k, v) in want {
        match got.get(k) {
            None => out.push(format!("missing {k}@{v}")),
            Some(g) if g != v => out.push(format!("{k}@{g} (server @{v})")),
            Some(_) => {}
        }
    }
    out.extend(
        got.iter()
            .filter(|(k, _)| !want.contains_key(*k))
            .map(|(k, v)| format!("extra {k}@{v}")),
    );
    let n = out.len();
    out.truncate(6);
    format!("{n} differences: {}", out.join(", "))
}

/// Waits until `subject`'s cache and handler equal `want`, at most until `deadline`; the
/// differences left otherwise.
async fn catch_up(subject: &Subject, want: &KeyVersions, deadline: Instant) -> Result<(), String> {
    loop {
        let notified = subject.changed.notified();
        let (cache, handler) = ((subject.cache)(), (subject.handler)());
        if cache == *want && handler == *want {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "{}: cache {}; handler {}",
                subject.name,
                describe_diff(&cache, want),
                describe_diff(&handler, want)
            ));
        }
        // Each notification signals; the bounded wait re-reads the cache, which an event
        // reaches before its handler does.
        let _ = tokio::time::timeout_at(
            deadline.min(Instant::now() + Duration::from_millis(100)),
            notified,
        )
        .await;
    }
}

/// Holds the writer, waits for every subject to catch up with the server, and lets go.
async fn checkpoint(
    server: &ApiServer,
    subjects: &[Subject],
    gate: &Mutex<()>,
    config: &SoakConfig,
    at: Duration,
) -> Result<Checkpoint, String> {
    let _writer_held = gate.lock().await;
    let want = server_versions(server)?;
    let start = Instant::now();
    let deadline = start + config.converge_timeout;
    let mut mismatches = Vec::new();
    for subject in subjects {
        if let Err(diff) = catch_up(subject, &want, deadline).await {
            mismatches.push(diff);
        }
    }
    Ok(Checkpoint {
        at,
        objects: want.len(),
        waited: start.elapsed(),
        mismatches,
    })
}

/// Closes every watch and compacts the history once the store has moved three revisions on;
/// the informers' next watches are held back meanwhile, so that they start below the
/// compaction (410 Gone, then a relist).
async fn compaction(server: &ApiServer, watchers: u64) {
    let faults = server.faults();
    faults.add_rule(
        FaultRule::once(Fault::Delay(Duration::from_millis(300)))
            .on(Target::Watch)
            .times(watchers),
    );
    let mut revisions = server.store().subscribe();
    let from = *revisions.borrow_and_update();
    faults.close_all_watches();
    // The writer moves the store on unless a checkpoint holds it (not while this runs).
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        while *revisions.borrow_and_update() < from + 3 {
            if revisions.changed().await.is_err() {
                return;
            }
        }
    })
    .await;
    faults.inject(Fault::Compact);
}

/// Runs the soak: `churn` writes for `config.duration` while the driver injects faults,
/// checks the subjects and samples the process (see the module docs). The subjects' informers
/// run already, synced.
///
/// # Errors
/// A write the store refused, or a process sample that could not be taken.
pub async fn run(
    server: &ApiServer,
    churn: Churn,
    subjects: &[Subject],
    config: &SoakConfig,
) -> Result<SoakReport, String> {
    let faults = server.faults();
    faults.add_rule(
        FaultRule::random(Fault::CloseWatchRandom { max_events: 400 }, 0.25).on(Target::Watch),
    );
    let notified_before: u64 = subjects.iter().map(|s| (s.notifications)()).sum();
    let gate = Arc::new(Mutex::new(()));
    let writes = Arc::new(WriteCounts::default());
    let stop = CancellationToken::new();
    let writer = tokio::spawn(churn.run(
        config.writes_per_s,
        Arc::clone(&gate),
        Arc::clone(&writes),
        stop.clone(),
    ));

    let start = Instant::now();
    let end = start + config.duration;
    let restart_at = start + config.duration / 3;
    let (mut next_compact, mut next_checkpoint, mut next_sample) = (
        start + config.compact_every,
        start + config.checkpoint_every,
        start + config.warm_up,
    );
    let mut restarted = false;
    let (mut checkpoints, mut samples) = (Vec::new(), Vec::new());
    let result = loop {
        let next = [next_compact, next_checkpoint, next_sample, end]
            .into_iter()
            .chain((!restarted).then_some(restart_at))
            .min()
            .unwrap_or(end);
        tokio::time::sleep_until(next).await;
        let now = Instant::now();
        if now >= end {
            break Ok(());
        }
        if writer.is_finished() {
            break Err("the writer stopped".to_string());
        }
        if !restarted && now >= restart_at {
            restarted = true;
            faults.inject(Fault::RefuseConnections(config.restart_for));
        }
        if now >= next_compact {
            compaction(server, subjects.len() as u64).await;
            next_compact = Instant::now() + config.compact_every;
        }
        if now >= next_sample {
            if config.trim_before_sample {
                trim_allocator();
            }
            match sample(now - start, config.live_heap) {
                Ok(s) => samples.push(s),
                Err(e) => break Err(e),
            }
            next_sample = (next_sample + config.sample_every).max(Instant::now());
        }
        if now >= next_checkpoint {
            match checkpoint(server, subjects, &gate, config, now - start).await {
                Ok(c) => checkpoints.push(c),
                Err(e) => break Err(e),
            }
            next_checkpoint = Instant::now() + config.checkpoint_every;
        }
    };
    stop.cancel();
    let written = writer
        .await
        .map_err(|e| format!("the writer panicked: {e}"))?;
    // The writer's own error first: the loop only saw that it had stopped.
    written?;
    result?;
    // The random watch drops (and any other rule left) end with the churn.
    faults.clear();
    let elapsed = start.elapsed();
    checkpoints.push(checkpoint(server, subjects, &gate, config, elapsed).await?);
    Ok(SoakReport {
        elapsed,
        writes,
        notifications: subjects.iter().map(|s| (s.notifications)()).sum::<u64>() - notified_before,
        checkpoints,
        samples,
        faults: faults.counts(),
    })
}
