//! How badly the embedded API server misbehaves during the chaos phase.

use std::time::Duration;

use clap::ValueEnum;
use kinformer_apiserver::{Fault, FaultRule, Faults, Target};

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
