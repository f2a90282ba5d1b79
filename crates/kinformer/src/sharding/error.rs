//! Errors of sharding.

use crate::leaderelection::LeaderElectionError;

/// Errors of the sharding module: configuration rejected by a constructor, or misuse of a
/// running component. None of them is retryable; transient API failures are retried inside
/// the loops (and logged) rather than returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ShardingError {
    /// The replica identity cannot name a lease and a label value: it must be 1–63
    /// characters of lowercase letters, digits, `-` and `.`, starting and ending with a letter
    /// or digit.
    #[error("invalid replica identity {identity:?}: {reason}")]
    InvalidIdentity {
        /// The identity given.
        identity: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The lease timing is invalid (the same requirements as leader election's).
    #[error(transparent)]
    Timing(#[from] LeaderElectionError),
    /// `join_delay` must be at least `lease_duration`: a joining replica waits that long so
    /// that every other replica with a fresh view has seen its lease before it claims keys.
    #[error("join_delay ({join_delay:?}) must be at least lease_duration ({lease_duration:?})")]
    JoinDelayTooShort {
        /// The configured join delay.
        join_delay: std::time::Duration,
        /// The configured lease duration.
        lease_duration: std::time::Duration,
    },
    /// The namespace or the lease prefix is empty.
    #[error("{field} must not be empty")]
    Empty {
        /// The configuration field.
        field: &'static str,
    },
    /// [`run`](super::Membership::run) was called while another run is in progress.
    #[error("the membership of {identity:?} is already running")]
    AlreadyRunning {
        /// The replica identity.
        identity: String,
    },
}
