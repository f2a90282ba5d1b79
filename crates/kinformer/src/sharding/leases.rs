//! [`MemberLeases`]: where the membership leases live — one lock per replica, and a listing
//! of all of them.

use std::future::Future;

use crate::leaderelection::{LeaderElectionRecord, Lock, LockError, RawVersion};

/// One membership lease as listed: its name, record and version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberLease {
    /// The lease name (`<lease_prefix><identity>` for membership leases).
    pub name: String,
    /// The record it holds.
    pub record: LeaderElectionRecord,
    /// Its version (`metadata.resourceVersion`).
    pub version: RawVersion,
}

/// The store of membership leases: every replica renews its own lease through
/// [`lock`](Self::lock) (with the leader-election renew loop) and observes the others through
/// [`list`](Self::list).
///
/// Implementations: `LeaseMembers` (feature `kube`, `coordination.k8s.io/v1` Leases in one
/// namespace) and `testing::InMemoryLeases` (feature `testing`).
///
/// # Cancel safety
///
/// [`list`](Self::list) only reads: dropping it loses nothing.
pub trait MemberLeases: Send + Sync + 'static {
    /// The lock type of one lease.
    type Lock: Lock;

    /// The lock on the lease `name`, used by the replica `identity`.
    fn lock(&self, name: &str, identity: &str) -> Self::Lock;

    /// Every lease whose name starts with `prefix`.
    fn list(
        &self,
        prefix: &str,
    ) -> impl Future<Output = Result<Vec<MemberLease>, LockError>> + Send;
}
