//! Errors of the leader elector.

use std::time::Duration;

/// Errors of [`LeaderElector`](super::LeaderElector): configuration rejected by
/// [`LeaderElector::new`](super::LeaderElector::new), or misuse of a running elector.
/// None of them is retryable: they report a configuration mistake, misuse, or (for
/// [`LeaseOverdue`](Self::LeaseOverdue)) a stuck process.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LeaderElectionError {
    /// A duration was zero.
    #[error("{field} must be greater than zero")]
    ZeroDuration {
        /// The configuration field.
        field: &'static str,
    },
    /// `lease_duration` must exceed `renew_deadline`, or others could take over while the
    /// leader still tries to renew.
    #[error(
        "lease_duration ({lease_duration:?}) must be greater than renew_deadline ({renew_deadline:?})"
    )]
    LeaseDurationNotAboveRenewDeadline {
        /// The configured lease duration.
        lease_duration: Duration,
        /// The configured renew deadline.
        renew_deadline: Duration,
    },
    /// `renew_deadline` must exceed the largest jittered retry period
    /// (`JITTER_FACTOR × retry_period`), or a leader could not retry within its deadline.
    #[error(
        "renew_deadline ({renew_deadline:?}) must be greater than JITTER_FACTOR × retry_period ({retry_period:?})"
    )]
    RenewDeadlineNotAboveJitteredRetry {
        /// The configured renew deadline.
        renew_deadline: Duration,
        /// The configured retry period.
        retry_period: Duration,
    },
    /// The lock's identity is empty; an empty holder means "nobody holds the lease".
    #[error("the lock identity is empty")]
    EmptyIdentity,
    /// [`check`](super::LeaderElector::check): this candidate still considers itself leading
    /// although its lease expired longer ago than tolerated; its renew loop is stuck (for
    /// example a blocked executor) and it should be restarted.
    #[error(
        "the leader elector {name:?} failed to renew its lease for {overdue:?} past its expiry"
    )]
    LeaseOverdue {
        /// The elector's name.
        name: String,
        /// How long ago the lease expired by this candidate's clock.
        overdue: Duration,
    },
    /// [`run`](super::LeaderElector::run) was called while another run of the same elector
    /// is in progress.
    #[error("the leader elector {name:?} is already running")]
    AlreadyRunning {
        /// The elector's name.
        name: String,
    },
}
