//! The lock contract: a stored [`LeaderElectionRecord`] with optimistic concurrency.

use std::future::Future;

use super::record::{LeaderElectionRecord, RawVersion};

/// Errors of a [`Lock`].
///
/// Retryability: every variant is transient from the elector's point of view — the elector logs
/// it, treats the attempt as failed and tries again after its retry period.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LockError {
    /// The write lost an optimistic-concurrency race: the stored record is not at the expected
    /// version (update), or a record already exists (create). Re-read and retry.
    #[error("conflict writing {lock}: {reason}")]
    Conflict {
        /// [`Lock::describe`] of the lock.
        lock: String,
        /// What conflicted.
        reason: String,
    },
    /// The record does not exist (an update of a missing record).
    #[error("{lock} not found")]
    NotFound {
        /// [`Lock::describe`] of the lock.
        lock: String,
    },
    /// The stored object cannot be read as a record (for example a `Lease` without a
    /// resource version).
    #[error("invalid record in {lock}: {reason}")]
    InvalidRecord {
        /// [`Lock::describe`] of the lock.
        lock: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The backend failed (transport error, server error, unavailable).
    #[error("{lock}: {source}")]
    Backend {
        /// [`Lock::describe`] of the lock.
        lock: String,
        /// The underlying error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl LockError {
    /// Whether this is an optimistic-concurrency [`LockError::Conflict`].
    pub fn is_conflict(&self) -> bool {
        matches!(self, Self::Conflict { .. })
    }
}

/// A stored leader election record with optimistic concurrency (client-go's
/// `resourcelock.Interface`).
///
/// A lock value also carries the identity of the candidate using it; candidates competing for
/// the same lease each use their own lock value pointing at the same storage.
///
/// Implementations: `testing::InMemoryLock` (feature `testing`, for tests) and, with the `kube`
/// feature, `LeaseLock` over a `coordination.k8s.io/v1` `Lease`.
///
/// # Cancel safety
///
/// The futures may be dropped at any await point. A dropped [`create`](Lock::create) or
/// [`update`](Lock::update) may or may not have been applied; callers must not assume either
/// and re-read with [`get`](Lock::get).
pub trait Lock: Send + Sync + 'static {
    /// Reads the record and its version; `Ok(None)` if it does not exist yet.
    fn get(
        &self,
    ) -> impl Future<Output = Result<Option<(LeaderElectionRecord, RawVersion)>, LockError>> + Send;

    /// Creates the record; fails with [`LockError::Conflict`] if it already exists.
    /// Returns the version of the created record.
    fn create(
        &self,
        record: &LeaderElectionRecord,
    ) -> impl Future<Output = Result<RawVersion, LockError>> + Send;

    /// Replaces the record if it is still at `expected`; fails with [`LockError::Conflict`]
    /// otherwise, [`LockError::NotFound`] if it does not exist. Returns the new version.
    fn update(
        &self,
        record: &LeaderElectionRecord,
        expected: &RawVersion,
    ) -> impl Future<Output = Result<RawVersion, LockError>> + Send;

    /// The identity of the candidate using this lock (written as the holder when it leads).
    fn identity(&self) -> &str;

    /// A human-readable description of the lock (for logs), such as `namespace/name`.
    fn describe(&self) -> String;
}

/// A shared lock is a lock: lets tests and callers keep a handle on the lock an elector uses.
impl<L: Lock> Lock for std::sync::Arc<L> {
    fn get(
        &self,
    ) -> impl Future<Output = Result<Option<(LeaderElectionRecord, RawVersion)>, LockError>> + Send
    {
        (**self).get()
    }

    fn create(
        &self,
        record: &LeaderElectionRecord,
    ) -> impl Future<Output = Result<RawVersion, LockError>> + Send {
        (**self).create(record)
    }

    fn update(
        &self,
        record: &LeaderElectionRecord,
        expected: &RawVersion,
    ) -> impl Future<Output = Result<RawVersion, LockError>> + Send {
        (**self).update(record, expected)
    }

    fn identity(&self) -> &str {
        (**self).identity()
    }

    fn describe(&self) -> String {
        (**self).describe()
    }
}
