//! [`LeaderElectionConfig`]: the lock and the timing of an election.

use std::time::Duration;

use super::error::LeaderElectionError;
use super::lock::Lock;

/// The jitter factor of the acquire loop (client-go's `JitterFactor`): a candidate waits
/// between `retry_period` and `(1 + JITTER_FACTOR) × retry_period` between attempts.
pub const JITTER_FACTOR: f64 = 1.2;

/// Default [`LeaderElectionConfig::lease_duration`]: 15 s.
pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(15);
/// Default [`LeaderElectionConfig::renew_deadline`]: 10 s.
pub const DEFAULT_RENEW_DEADLINE: Duration = Duration::from_secs(10);
/// Default [`LeaderElectionConfig::retry_period`]: 2 s.
pub const DEFAULT_RETRY_PERIOD: Duration = Duration::from_secs(2);

/// Configuration of a [`LeaderElector`](super::LeaderElector) (client-go's
/// `LeaderElectionConfig`). Build with [`new`](LeaderElectionConfig::new), adjust the public
/// fields, and hand to [`LeaderElector::new`](super::LeaderElector::new), which validates it.
///
/// Requirements (checked): every duration is positive, `lease_duration > renew_deadline`,
/// `renew_deadline > JITTER_FACTOR × retry_period`, and the lock identity is not empty.
#[derive(Debug, Clone)]
pub struct LeaderElectionConfig<L> {
    /// The lock candidates compete for; its identity is this candidate's.
    pub lock: L,
    /// How long non-leaders wait, after they last observed the record change, before they try
    /// to take over. Also bounds how long the leader believes it leads after a renewal.
    pub lease_duration: Duration,
    /// How long the leader keeps retrying a renewal before it gives up leadership.
    pub renew_deadline: Duration,
    /// How long to wait between attempts to acquire or renew.
    pub retry_period: Duration,
    /// Whether to release the lease (write an empty holder with a 1 s lease) when the run is
    /// cancelled or leadership ends, so that another candidate takes over at once.
    pub release_on_cancel: bool,
    /// A name for logs.
    pub name: String,
}

impl<L: Lock> LeaderElectionConfig<L> {
    /// A configuration with client-go's defaults: 15 s lease, 10 s renew deadline, 2 s retry
    /// period, no release on cancel, and the lock's description as the name.
    pub fn new(lock: L) -> Self {
        let name = lock.describe();
        Self {
            lock,
            lease_duration: DEFAULT_LEASE_DURATION,
            renew_deadline: DEFAULT_RENEW_DEADLINE,
            retry_period: DEFAULT_RETRY_PERIOD,
            release_on_cancel: false,
            name,
        }
    }

    /// Checks the requirements listed on the type.
    ///
    /// # Errors
    ///
    /// The first requirement violated, as a [`LeaderElectionError`].
    pub fn validate(&self) -> Result<(), LeaderElectionError> {
        for (field, value) in [
            ("lease_duration", self.lease_duration),
            ("renew_deadline", self.renew_deadline),
            ("retry_period", self.retry_period),
        ] {
            if value.is_zero() {
                return Err(LeaderElectionError::ZeroDuration { field });
            }
        }
        if self.lease_duration <= self.renew_deadline {
            return Err(LeaderElectionError::LeaseDurationNotAboveRenewDeadline {
                lease_duration: self.lease_duration,
                renew_deadline: self.renew_deadline,
            });
        }
        if self.renew_deadline <= self.retry_period.mul_f64(JITTER_FACTOR) {
            return Err(LeaderElectionError::RenewDeadlineNotAboveJitteredRetry {
                renew_deadline: self.renew_deadline,
                retry_period: self.retry_period,
            });
        }
        if self.lock.identity().is_empty() {
            return Err(LeaderElectionError::EmptyIdentity);
        }
        Ok(())
    }
}
