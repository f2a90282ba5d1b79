//! The chaos phase: how badly the embedded API server misbehaves (faults by level), and the
//! run of the phase itself (workload changes, pod kills, outages, compactions, dropped
//! watches).

use std::time::Duration;

use clap::ValueEnum;
use kinformer_apiserver::{Fault, FaultRule, Faults, Target};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tokio::time::Instant;

use super::backend::Backend;
use super::scenario::{Action, Scenario};

/// The chaos level of `kinformer demo --chaos`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ChaosLevel {
    /// No faults and no pod kills: only the workload changes.
    Off,
    /// Occasional watch drops, 410s, 429s and 500s; one short outage; pod kills.
    Low,
    /// Frequent faults of every kind, history compactions and a longer outage.
    High,
}

impl ChaosLevel {
    /// The random fault rules in force during the chaos phase.
    pub fn rules(self) -> Vec<FaultRule> {
        let (watch_drop, gone, throttle, error, expire) = match self {
            ChaosLevel::Off => return Vec::new(),
            ChaosLevel::Low => (0.05, 0.02, 0.005, 0.01, 0.1),
            ChaosLevel::High => (0.3, 0.1, 0.02, 0.04, 0.5),
        };
        vec![
            FaultRule::random(Fault::CloseWatch { after_events: 20 }, watch_drop),
            FaultRule::random(Fault::WatchGone, gone),
            FaultRule::random(
                Fault::TooManyRequests {
                    retry_after_secs: 1,
                },
                throttle,
            ),
            FaultRule::random(Fault::InternalError, error).on(Target::Write),
            FaultRule::random(Fault::InternalError, error / 2.0).on(Target::List),
            FaultRule::random(Fault::ExpireContinue, expire),
        ]
    }

    /// The outage in the middle of the chaos phase: every watch ends and every request
    /// fails with 500 for this long.
    ///
    /// (Not a refused-connection restart: closing connections can make the HTTP client lose
    /// a request queued on one, which the informers retry only after their request timeout,
    /// 60 s by default — longer than this demo should stall.)
    pub fn outage(self) -> Option<Duration> {
        match self {
            ChaosLevel::Off => None,
            ChaosLevel::Low => Some(Duration::from_millis(500)),
            ChaosLevel::High => Some(Duration::from_millis(1500)),
        }
    }

    /// How many history compactions the chaos phase includes (each turns resumed watches
    /// into 410 Gone and relists).
    pub fn compactions(self) -> usize {
        match self {
            ChaosLevel::Off => 0,
            ChaosLevel::Low => 1,
            ChaosLevel::High => 4,
        }
    }

    /// How many times every open watch is ended (besides those at compactions and the
    /// outage), so that the reflectors resume, and the random watch faults hit the new
    /// watches.
    pub fn watch_drops(self) -> usize {
        match self {
            ChaosLevel::Off => 0,
            ChaosLevel::Low => 2,
            ChaosLevel::High => 6,
        }
    }

    /// Whether random pods are killed.
    pub fn kills_pods(self) -> bool {
        self != ChaosLevel::Off
    }
}

/// Starts the random faults.
pub fn start(faults: &Faults, level: ChaosLevel, seed: u64) {
    faults.seed(seed);
    for rule in level.rules() {
        faults.add_rule(rule);
    }
}

/// Stops every random fault.
pub fn stop(faults: &Faults) {
    faults.clear();
}

/// What the chaos phase did.
#[derive(Debug, Default)]
pub(super) struct ChaosDone {
    scaled: usize,
    added: usize,
    deleted: usize,
    killed: usize,
    outages: usize,
    compactions: usize,
    watch_drops: usize,
    failed: usize,
}

impl ChaosDone {
    pub(super) fn describe(&self) -> String {
        format!(
            "scaled {}, added {}, deleted {} ReplicaSets, killed {} pods, {} outage(s), {} compaction(s), {} times all watches dropped{}",
            self.scaled,
            self.added,
            self.deleted,
            self.killed,
            self.outages,
            self.compactions,
            self.watch_drops,
            if self.failed > 0 {
                format!(", {} actions failed", self.failed)
            } else {
                String::new()
            }
        )
    }
}

/// A server-side event of the chaos phase.
#[derive(Debug, Clone, Copy)]
enum ServerEvent {
    /// Every request fails with 500 until the outage ends.
    OutageStart,
    /// Back to the level's random faults.
    OutageEnd,
    /// Compact the history and end every watch: the resumed watches get 410 Gone and relist.
    Compact,
    /// End every open watch: the reflectors resume from their last resourceVersion.
    DropWatches,
}

impl ServerEvent {
    fn apply(self, faults: &kinformer_apiserver::Faults, level: ChaosLevel, done: &mut ChaosDone) {
        match self {
            ServerEvent::OutageStart => {
                done.outages += 1;
                faults.add_rule(FaultRule::random(Fault::InternalError, 1.0).on(Target::Any));
                faults.close_all_watches();
            }
            ServerEvent::OutageEnd => {
                faults.clear();
                for rule in level.rules() {
                    faults.add_rule(rule);
                }
            }
            ServerEvent::Compact => {
                done.compactions += 1;
                faults.inject(Fault::Compact);
                faults.close_all_watches();
            }
            ServerEvent::DropWatches => {
                done.watch_drops += 1;
                faults.close_all_watches();
            }
        }
    }
}

pub(super) async fn run_chaos(
    backend: &Backend,
    scenario: &Scenario,
    level: ChaosLevel,
    faults: Option<&kinformer_apiserver::Faults>,
    seed: u64,
) -> ChaosDone {
    let start = Instant::now();
    let mut rng = SmallRng::seed_from_u64(seed ^ 0x5eed);
    let mut done = ChaosDone::default();
    let span = scenario.chaos_duration;
    // Server-side events: an outage half-way, compactions spread over the phase.
    let mut server_events: Vec<(Duration, ServerEvent)> = Vec::new();
    if faults.is_some() {
        if let Some(d) = level.outage() {
            server_events.push((span / 2, ServerEvent::OutageStart));
            server_events.push((span / 2 + d, ServerEvent::OutageEnd));
        }
        let n = level.compactions();
        for i in 0..n {
            let at = span.mul_f64((i as f64 + 0.5) / n as f64);
            server_events.push((at, ServerEvent::Compact));
        }
        let n = level.watch_drops();
        for i in 0..n {
            let at = span.mul_f64((i as f64 + 0.25) / n as f64);
            server_events.push((at, ServerEvent::DropWatches));
        }
        server_events.sort_by_key(|(at, _)| *at);
    }
    let mut server_events = server_events.into_iter().peekable();
    for step in &scenario.steps {
        while let Some((at, _)) = server_events.peek()
            && *at <= step.at
        {
            if let (Some((at, event)), Some(f)) = (server_events.next(), faults) {
                tokio::time::sleep_until(start + at).await;
                event.apply(f, level, &mut done);
            }
        }
        tokio::time::sleep_until(start + step.at).await;
        let r = match &step.action {
            Action::Scale {
                namespace,
                name,
                replicas,
            } => {
                done.scaled += 1;
                backend.scale_replicaset(namespace, name, *replicas).await
            }
            Action::Add(plan) => {
                done.added += 1;
                backend.create_replicaset(&plan.to_replicaset()).await
            }
            Action::Delete { namespace, name } => {
                done.deleted += 1;
                backend.delete_replicaset(namespace, name).await
            }
            Action::KillPods(n) => match backend.pods().await {
                Ok(pods) if !pods.is_empty() => {
                    let mut r = Ok(());
                    for _ in 0..*n {
                        let p = &pods[rng.random_range(0..pods.len())];
                        let (ns, name) = (
                            p.metadata.namespace.as_deref().unwrap_or_default(),
                            p.metadata.name.as_deref().unwrap_or_default(),
                        );
                        done.killed += 1;
                        r = r.and(backend.delete_pod(ns, name).await);
                    }
                    r
                }
                Ok(_) => Ok(()),
                Err(e) => Err(e),
            },
        };
        if let Err(e) = r {
            done.failed += 1;
            tracing::warn!(error = %e, "chaos action failed");
        }
    }
    for (at, event) in server_events {
        if let Some(f) = faults {
            tokio::time::sleep_until(start + at).await;
            event.apply(f, level, &mut done);
        }
    }
    tokio::time::sleep_until(start + span).await;
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_grow() {
        assert!(ChaosLevel::Off.rules().is_empty());
        assert_eq!(ChaosLevel::Off.outage(), None);
        let p = |l: ChaosLevel| l.rules().iter().map(|r| r.probability).sum::<f64>();
        assert!(p(ChaosLevel::High) > p(ChaosLevel::Low));
        assert!(ChaosLevel::High.outage() > ChaosLevel::Low.outage());
    }
}
