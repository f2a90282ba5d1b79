//! The leader election record: what a lock stores, and the version that guards it.

use std::fmt;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

/// What a [`Lock`](super::Lock) stores about the current holder (client-go's
/// `resourcelock.LeaderElectionRecord`).
///
/// The timestamps are informational wall-clock times written by the holder. Electors never judge
/// expiry by them (clocks of different machines disagree); each elector measures expiry from the
/// moment it *itself* first observed the current version of the record, on its own monotonic
/// clock.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LeaderElectionRecord {
    /// Identity of the holder; empty when nobody holds the lease (for example after a release).
    pub holder_identity: String,
    /// How long the lease is valid after an observer sees this record change.
    pub lease_duration: Duration,
    /// When the current holder acquired the lease, if known.
    pub acquire_time: Option<Timestamp>,
    /// When the current holder last renewed the lease, if known.
    pub renew_time: Option<Timestamp>,
    /// How many times the lease changed hands.
    pub leader_transitions: u32,
}

impl LeaderElectionRecord {
    /// Whether somebody holds the lease (the holder identity is not empty).
    pub fn is_held(&self) -> bool {
        !self.holder_identity.is_empty()
    }
}

/// The opaque version of a stored record, used for optimistic concurrency: an update names the
/// version it expects to replace and fails with [`LockError::Conflict`](super::LockError) if
/// the stored record has moved on. For a `Lease` it is `metadata.resourceVersion`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RawVersion(String);

impl RawVersion {
    /// Wraps a version string.
    pub fn new(version: impl Into<String>) -> Self {
        Self(version.into())
    }

    /// The version string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RawVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<String> for RawVersion {
    fn from(version: String) -> Self {
        Self(version)
    }
}

impl From<&str> for RawVersion {
    fn from(version: &str) -> Self {
        Self(version.to_owned())
    }
}
