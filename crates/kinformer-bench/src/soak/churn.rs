//! The soak's writer: creates, updates and deletes bench pods in the server's store at a steady
//! rate, keeping their number around a target, and stops between two writes whenever a
//! checkpoint holds the gate.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use kinformer_apiserver::{Store, bench_pod, bench_pod_update, seed_bench_pods};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json::json;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

/// The label the writer's patches set.
pub const SOAK_LABEL: &str = "soak";

/// Writes made so far, by kind.
#[derive(Debug, Default)]
pub struct WriteCounts {
    /// Pods created.
    pub creates: AtomicU64,
    /// Pods updated (a label patch or a spec change).
    pub updates: AtomicU64,
    /// Pods deleted.
    pub deletes: AtomicU64,
}

impl WriteCounts {
    /// Every write so far.
    pub fn total(&self) -> u64 {
        self.creates.load(Ordering::Relaxed)
            + self.updates.load(Ordering::Relaxed)
            + self.deletes.load(Ordering::Relaxed)
    }
}

/// The writer's state: which bench pods exist, and the next index to create.
#[derive(Debug)]
pub struct Churn {
    store: Store,
    /// Indices of the pods that exist (bench pod `i` is `ns-{i % 100}/pod-{i}`).
    live: Vec<usize>,
    next: usize,
    target: usize,
    rng: SmallRng,
    counter: u64,
}

impl Churn {
    /// Seeds `population` bench pods (indices `0..population`) and returns the writer that
    /// keeps about that many.
    ///
    /// # Errors
    /// A create the store refused (e.g. the pods exist already).
    pub fn seed(store: &Store, population: usize, seed: u64) -> Result<Self, String> {
        seed_bench_pods(store, population).map_err(|e| format!("seeding pods: {e}"))?;
        Ok(Self {
            store: store.clone(),
            live: (0..population).collect(),
            next: population,
            target: population.max(2),
            rng: SmallRng::seed_from_u64(seed),
            counter: 0,
        })
    }

    /// Writes one change: a create while there are fewer than half the target, a delete while
    /// there are more than one and a half times it, otherwise a create (25 %), a delete (25 %),
    /// a label patch (25 %) or a spec change (25 %).
    fn write_one(&mut self, counts: &WriteCounts) -> Result<(), String> {
        let n = self.live.len();
        let roll = if n < self.target / 2 {
            0
        } else if n > self.target * 3 / 2 {
            1
        } else {
            self.rng.random_range(0..4)
        };
        self.counter += 1;
        match roll {
            0 => {
                let i = self.next;
                self.next += 1;
                self.store
                    .create("pods", "", bench_pod(i))
                    .map_err(|e| format!("create pod-{i}: {e}"))?;
                self.live.push(i);
                counts.creates.fetch_add(1, Ordering::Relaxed);
            }
            1 => {
                let at = self.rng.random_range(0..n);
                let i = self.live.swap_remove(at);
                self.store
                    .delete("pods", &format!("ns-{}", i % 100), &format!("pod-{i}"))
                    .map_err(|e| format!("delete pod-{i}: {e}"))?;
                counts.deletes.fetch_add(1, Ordering::Relaxed);
            }
            2 => {
                let i = self.live[self.rng.random_range(0..n)];
                let patch = json!({"metadata": {"labels": {SOAK_LABEL: self.counter.to_string()}}});
                self.store
                    .patch(
                        "pods",
                        &format!("ns-{}", i % 100),
                        &format!("pod-{i}"),
                        &patch,
                    )
                    .map_err(|e| format!("patch pod-{i}: {e}"))?;
                counts.updates.fetch_add(1, Ordering::Relaxed);
            }
            _ => {
                let i = self.live[self.rng.random_range(0..n)];
                self.store
                    .update("pods", "", bench_pod_update(i, self.counter))
                    .map_err(|e| format!("update pod-{i}: {e}"))?;
                counts.updates.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(())
    }

    /// Writes `rate` changes a second (in batches every 10 ms) until `stop`, each batch
    /// under `gate`: whoever holds the gate holds the writer between two batches.
    ///
    /// # Errors
    /// The first write the store refused.
    pub async fn run(
        mut self,
        rate: u32,
        gate: Arc<Mutex<()>>,
        counts: Arc<WriteCounts>,
        stop: CancellationToken,
    ) -> Result<(), String> {
        const TICK: Duration = Duration::from_millis(10);
        let mut ticks = tokio::time::interval(TICK);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // Writes owed: `rate` per second in 100 ticks, the remainder carried over.
        let (mut owed, per_tick) = (0.0_f64, f64::from(rate) / 100.0);
        loop {
            tokio::select! {
                () = stop.cancelled() => return Ok(()),
                _ = ticks.tick() => {}
            }
            let _batch = tokio::select! {
                () = stop.cancelled() => return Ok(()),
                g = gate.lock() => g,
            };
            owed += per_tick;
            while owed >= 1.0 {
                self.write_one(&counts)?;
                owed -= 1.0;
            }
        }
    }
}
