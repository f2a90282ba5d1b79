//! Leader election over a shared lock (client-go's `tools/leaderelection`).
//!
//! Several candidates compete for one [`Lock`]; at most one leads at a time, and it works only
//! while it holds the lease.
//!
//! Properties:
//! - **Optimistic concurrency**: every write names the version it replaces; of two racing
//!   writers one gets [`LockError::Conflict`] and retries later.
//! - **Own-clock expiry**: a candidate takes over only when the record has not changed for
//!   `lease_duration` since *it* first observed the current version, on its own monotonic
//!   clock (`tokio::time`); the wall-clock times in the record are informational.
//! - **No two leaders**: [`LeaderElector::is_leader`] holds only while the leader's own lease
//!   has not expired, counted from before its last successful write, so it never overlaps
//!   another candidate's leadership.
//! - **Fast handover**: with `release_on_cancel`, a stopping leader writes an empty holder so
//!   that another candidate takes over at its next retry instead of after `lease_duration`.
//!
//! Pieces: [`Lock`] (the contract), [`InMemoryLock`] (tests), `LeaseLock` (feature `kube`,
//! a `coordination.k8s.io/v1` `Lease`), [`LeaderElectionConfig`] and [`LeaderElector`]
//! (with [`LeaderElector::run`], [`LeaderElector::run_while_leading`], a watch channel of
//! [`LeaderState`] and [`LeaderElector::is_leader`]).

mod config;
mod elector;
mod error;
#[cfg(all(test, feature = "kube"))]
mod fake_lease_api;
mod in_memory;
#[cfg(feature = "kube")]
mod lease_lock;
mod lock;
mod record;
mod state;
#[cfg(test)]
mod tests;

pub use config::{
    DEFAULT_LEASE_DURATION, DEFAULT_RENEW_DEADLINE, DEFAULT_RETRY_PERIOD, JITTER_FACTOR,
    LeaderElectionConfig,
};
pub use elector::LeaderElector;
pub use error::LeaderElectionError;
pub use in_memory::InMemoryLock;
#[cfg(feature = "kube")]
pub use lease_lock::LeaseLock;
pub use lock::{Lock, LockError};
pub use record::{LeaderElectionRecord, RawVersion};
pub use state::{LeaderState, StopReason, Stopped};
