//! [`Observation`]: a record as one observer saw it, and when — the "observed time" rule that
//! judges lease expiry by the observer's own monotonic clock.
//!
//! Shared by the [`LeaderElector`](super::LeaderElector) (for the one lease it competes for)
//! and by sharding's membership (for every member's lease).

use tokio::time::Instant;

use super::record::{LeaderElectionRecord, RawVersion};

/// A record, its version, and when this process observed that version: for a record read
/// from a lock, when the read returned; for a record this process wrote, just before the
/// write was sent.
#[derive(Debug, Clone)]
pub(crate) struct Observation {
    pub(crate) record: LeaderElectionRecord,
    pub(crate) version: RawVersion,
    pub(crate) time: Instant,
}

impl Observation {
    /// When the observed lease expires by this observer's clock.
    pub(crate) fn expiry(&self) -> Instant {
        self.time + self.record.lease_duration
    }

    /// Whether the lease is held and has not expired by this observer's clock at `now`.
    pub(crate) fn is_fresh(&self, now: Instant) -> bool {
        self.record.is_held() && self.expiry() > now
    }

    /// The observation of `record` at `version`, read at `now`, given the previous observation
    /// of the same lock: the observation time moves only when the version changed, so a lease
    /// nobody renews expires `lease_duration` after this observer *first* saw its version,
    /// whatever the record's wall-clock times say.
    pub(crate) fn next(
        previous: Option<&Self>,
        record: LeaderElectionRecord,
        version: RawVersion,
        now: Instant,
    ) -> Self {
        let time = match previous {
            Some(previous) if previous.version == version => previous.time,
            _ => now,
        };
        Self {
            record,
            version,
            time,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn record(holder: &str) -> LeaderElectionRecord {
        LeaderElectionRecord {
            holder_identity: holder.into(),
            lease_duration: Duration::from_secs(10),
            ..LeaderElectionRecord::default()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn an_unchanged_version_keeps_its_first_observation_time() {
        let t0 = Instant::now();
        let first = Observation::next(None, record("a"), "1".into(), t0);
        tokio::time::advance(Duration::from_secs(6)).await;
        let same = Observation::next(Some(&first), record("a"), "1".into(), Instant::now());
        assert_eq!(same.time, t0);
        assert!(same.is_fresh(Instant::now()));
        tokio::time::advance(Duration::from_secs(5)).await;
        assert!(!same.is_fresh(Instant::now()), "10 s after first sight");
        let renewed = Observation::next(Some(&same), record("a"), "2".into(), Instant::now());
        assert!(renewed.is_fresh(Instant::now()));
        let released = Observation::next(Some(&renewed), record(""), "3".into(), Instant::now());
        assert!(
            !released.is_fresh(Instant::now()),
            "an empty holder is never fresh"
        );
    }
}
