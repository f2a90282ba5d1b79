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
//! Pieces: [`Lock`] (the contract), `LeaseLock` (feature `kube`, a `coordination.k8s.io/v1`
//! `Lease`), [`LeaderElectionConfig`] and [`LeaderElector`] (with [`LeaderElector::run`],
//! [`LeaderElector::run_while_leading`], a watch channel of [`LeaderState`] and
//! [`LeaderElector::is_leader`]). With the `testing` feature, `testing::InMemoryLock` is a
//! lease in process memory for tests (the example below uses it).
//!
//! # Example
//!
//! Two replicas of a controller share a lease; the first leads, and when it shuts down it
//! releases the lease and the second takes over at its next retry, well before the 15 s lease
//! would have expired. On a cluster, use `LeaseLock::new(client, namespace, name, identity)`
//! instead of the in-memory lock.
//!
//! ```
//! use std::time::Duration;
//! use kinformer::leaderelection::testing::InMemoryLock;
//! use kinformer::leaderelection::{LeaderElectionConfig, LeaderElector};
//! use tokio_util::sync::CancellationToken;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
//! let lock = InMemoryLock::new("replica-1");
//! let replicas = [lock.clone(), lock.with_identity("replica-2")].map(|lock| {
//!     let mut config = LeaderElectionConfig::new(lock);
//!     config.release_on_cancel = true;
//!     LeaderElector::new(config)
//! });
//! let [first, second] = replicas;
//! let (first, second) = (first?, second?);
//!
//! let stop_first = CancellationToken::new();
//! let first_run = tokio::spawn({
//!     let (elector, stop) = (first.clone(), stop_first.clone());
//!     async move { elector.run(stop).await }
//! });
//! first.subscribe().wait_for(|state| state.leading).await.unwrap();
//!
//! let second_run = tokio::spawn({
//!     let elector = second.clone();
//!     async move {
//!         elector
//!             .run_while_leading(CancellationToken::new(), |_leading| async {
//!                 "the controller ran" // a real controller runs until `_leading` fires
//!             })
//!             .await
//!     }
//! });
//! tokio::time::sleep(Duration::from_secs(30)).await;
//! assert!(first.is_leader() && !second.is_leader());
//! assert_eq!(second.leader().as_deref(), Some("replica-1"));
//!
//! let stopped_at = tokio::time::Instant::now();
//! stop_first.cancel();
//! first_run.await.unwrap()?;
//! let stopped = second_run.await.unwrap()?;
//! assert_eq!(stopped.output, Some("the controller ran"));
//! assert!(stopped_at.elapsed() < Duration::from_secs(5));
//! # Ok::<(), kinformer::leaderelection::LeaderElectionError>(())
//! # }).unwrap();
//! ```

mod config;
mod elector;
mod error;
#[cfg(feature = "kube")]
mod lease_lock;
mod lock;
mod observation;
mod record;
mod state;
#[cfg(any(test, feature = "testing"))]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod testing;
#[cfg(test)]
mod tests;

pub use config::{
    DEFAULT_LEASE_DURATION, DEFAULT_RENEW_DEADLINE, DEFAULT_RETRY_PERIOD, JITTER_FACTOR,
    LeaderElectionConfig,
};
pub use elector::LeaderElector;
pub use error::LeaderElectionError;
#[cfg(feature = "kube")]
#[cfg_attr(docsrs, doc(cfg(feature = "kube")))]
pub use lease_lock::LeaseLock;
#[cfg(feature = "kube")]
pub(crate) use lease_lock::record_from_spec;
pub use lock::{Lock, LockError};
pub(crate) use observation::Observation;
pub use record::{LeaderElectionRecord, RawVersion};
pub use state::{LeaderState, StopReason, Stopped};
