//! Delivery bookkeeping shared by every peer: the handler that counts adds and updates and
//! notes each update's delay from its write stamp, and the update rounds that drive it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::{PODS, ServerProcess, WRITTEN_AT, cpu_ms};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kinformer::cache::ResourceEventHandler;
use kinformer_apiserver::watch::WatchChunkCounts;
use kube::Resource;
use parking_lot::Mutex;
use tokio::sync::Notify;

pub(super) fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// Delivery bookkeeping shared by both peers.
#[derive(Debug)]
pub(super) struct Progress {
    pub(super) adds: AtomicU64,
    /// Updates delivered in this round.
    updates: AtomicU64,
    /// The updates this round makes.
    expected: AtomicU64,
    /// Write times (wall clock) and delivery delays of this round's updates, in µs.
    delays_us: Mutex<Vec<(u64, u64)>>,
    all_updates: Notify,
}

impl Progress {
    pub(super) fn new() -> Self {
        Self {
            adds: AtomicU64::new(0),
            updates: AtomicU64::new(0),
            expected: AtomicU64::new(PODS as u64),
            delays_us: Mutex::new(Vec::with_capacity(PODS)),
            all_updates: Notify::new(),
        }
    }

    pub(super) fn update(&self, meta: &ObjectMeta) {
        let written = meta
            .annotations
            .as_ref()
            .and_then(|a| a.get(WRITTEN_AT))
            .and_then(|v| v.parse::<u64>().ok());
        let Some(written) = written else { return };
        self.delays_us
            .lock()
            .push((written, now_us().saturating_sub(written)));
        if self.updates.fetch_add(1, Ordering::Relaxed) + 1 == self.expected.load(Ordering::Relaxed)
        {
            self.all_updates.notify_one();
        }
    }

    /// Starts a round of `n` updates, once every update of the last one was delivered.
    pub(super) fn next_round(&self, n: usize) {
        self.delays_us.lock().clear();
        self.expected.store(n as u64, Ordering::Relaxed);
        self.updates.store(0, Ordering::Relaxed);
    }

    /// Per 250 ms of write time from the first write: (start ms, count, mean ms, max ms).
    pub(super) fn windows(&self) -> Vec<(u64, usize, f64, f64)> {
        const WINDOW_US: u64 = 250_000;
        let delays = self.delays_us.lock();
        let first = delays.iter().map(|&(w, _)| w).min().unwrap_or(0);
        let mut windows: std::collections::BTreeMap<u64, (usize, u64, u64)> =
            std::collections::BTreeMap::new();
        for &(written, delay) in delays.iter() {
            let w = windows.entry((written - first) / WINDOW_US).or_default();
            w.0 += 1;
            w.1 += delay;
            w.2 = w.2.max(delay);
        }
        windows
            .into_iter()
            .map(|(i, (n, sum, max))| {
                let start_ms = i * WINDOW_US / 1000;
                (start_ms, n, sum as f64 / n as f64 / 1e3, max as f64 / 1e3)
            })
            .collect()
    }

    /// p50 and p99 in ms.
    pub(super) fn percentiles(&self) -> (f64, f64) {
        let mut d: Vec<u64> = self.delays_us.lock().iter().map(|&(_, d)| d).collect();
        d.sort_unstable();
        let at = |q: f64| {
            if d.is_empty() {
                return f64::NAN;
            }
            let i = ((d.len() as f64 - 1.0) * q).round() as usize;
            d[i.min(d.len() - 1)] as f64 / 1e3
        };
        (at(0.50), at(0.99))
    }
}

/// Counts adds and records update delays from the metadata (so a lean informer's handler
/// decodes nothing).
pub(super) struct Handler(pub(super) Arc<Progress>);

impl<K: Resource + Send + Sync + 'static> ResourceEventHandler<K> for Handler {
    fn on_add(&self, _: &Arc<K>, _: bool) {
        self.0.adds.fetch_add(1, Ordering::Relaxed);
    }
    fn on_update(&self, _: &Arc<K>, new: &Arc<K>) {
        self.0.update(new.meta());
    }
}

/// Has the server update pods `0..n` (as fast as it can, or `per_s` a second) and waits until
/// every update is delivered; returns the seconds from the command to the last delivery.
pub(super) async fn update_round(
    server: &mut ServerProcess,
    progress: &Progress,
    n: usize,
    per_s: Option<f64>,
) -> Result<f64, String> {
    let trace = std::env::var_os("KINFORMER_BENCH_TRACE").is_some();
    let chunks_before = if trace {
        Some(server.watch_chunks()?)
    } else {
        None
    };
    let all_updates = progress.all_updates.notified();
    let write_start = Instant::now();
    match per_s {
        Some(per_s) => server.command(&format!("update {n} {per_s}"))?,
        None => server.command(&format!("update {n}"))?,
    }
    tokio::time::timeout(Duration::from_secs(300), all_updates)
        .await
        .map_err(|_| {
            format!(
                "only {} of {n} updates within 300 s",
                progress.updates.load(Ordering::Relaxed)
            )
        })?;
    let updates_s = write_start.elapsed().as_secs_f64();
    let writer = server.read_line()?;
    if let Some(before) = chunks_before {
        let pace = per_s.map_or_else(|| "as fast as it can".to_owned(), |r| format!("{r}/s"));
        eprintln!("E1 server ({pace}): {}", writer.trim());
        let round = server.watch_chunks()?.since(&before);
        let shares: Vec<String> = round
            .events_by_chunk_size
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                let share = 100.0 * n as f64 / round.events().max(1) as f64;
                format!("{}: {share:.0} %", WatchChunkCounts::class_name(i))
            })
            .collect();
        eprintln!(
            "E1: the server sent {} events in {} chunks; events in chunks of {}",
            round.events(),
            round.chunks,
            shares.join(", ")
        );
        eprintln!("E1: CPU time after the updates {:.0} ms", cpu_ms()?);
        for (start_ms, n, mean, max) in progress.windows() {
            eprintln!(
                "E1: writes from {start_ms:>5} ms: {n:>6} updates, delay mean {mean:>6.2} ms, max {max:>6.2} ms"
            );
        }
    }
    Ok(updates_s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_pick_the_nearest_rank() {
        let p = Progress::new();
        p.delays_us
            .lock()
            .extend((1..=100).map(|ms| (0, ms * 1000)));
        assert_eq!(p.percentiles(), (51.0, 99.0));
    }

    #[test]
    fn windows_group_delays_by_write_time() {
        let p = Progress::new();
        // Written at 1 s, 1.1 s and 1.3 s (wall clock, µs) with delays of 1, 3 and 10 ms.
        p.delays_us
            .lock()
            .extend([(1_000_000, 1_000), (1_100_000, 3_000), (1_300_000, 10_000)]);
        assert_eq!(p.windows(), vec![(0, 2, 2.0, 3.0), (250, 1, 10.0, 10.0)]);
    }

    #[test]
    fn updates_without_a_stamp_are_not_counted() {
        let p = Progress::new();
        p.update(&ObjectMeta::default());
        assert_eq!(p.updates.load(Ordering::Relaxed), 0);
        let meta = ObjectMeta {
            annotations: Some([(WRITTEN_AT.to_string(), now_us().to_string())].into()),
            ..Default::default()
        };
        p.update(&meta);
        assert_eq!(p.updates.load(Ordering::Relaxed), 1);
        assert!(p.percentiles().0 < 60_000.0);
    }

    #[test]
    fn a_round_counts_its_own_updates_and_completes_at_its_size() {
        let p = Progress::new();
        let stamped = |written: u64| ObjectMeta {
            annotations: Some([(WRITTEN_AT.to_string(), written.to_string())].into()),
            ..Default::default()
        };
        // A delay far above the next round's, which must not count in it.
        p.update(&stamped(now_us() - 50_000_000));
        p.next_round(2);
        assert!(
            p.percentiles().0.is_nan(),
            "the last round's delays are dropped"
        );
        let done = p.all_updates.notified();
        let mut done = std::pin::pin!(done);
        done.as_mut().enable();
        let waker = futures::task::noop_waker();
        let mut cx = std::task::Context::from_waker(&waker);
        p.update(&stamped(now_us()));
        assert_eq!(p.updates.load(Ordering::Relaxed), 1);
        assert!(
            done.as_mut().poll(&mut cx).is_pending(),
            "one of two updates"
        );
        p.update(&stamped(now_us()));
        assert_eq!(p.updates.load(Ordering::Relaxed), 2);
        assert!(
            done.as_mut().poll(&mut cx).is_ready(),
            "the second update ends the round"
        );
        assert!(p.percentiles().1 < 50_000.0);
    }
}
