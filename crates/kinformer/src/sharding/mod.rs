//! Sharded controllers across replicas, coordinated through the API server's Leases.
//!
//! Leader election gives one active replica; sharding splits the objects among all of them,
//! with the cluster as the coordination engine (Leases, labels, resourceVersion
//! preconditions) and no consensus of its own.
//!
//! - **Membership** ([`Membership`]): each replica holds its own Lease, renewed by the
//!   leader-election loop; a replica is a member while its lease is fresh, judged by the
//!   observer's own clock from when it first saw the lease's current version.
//! - **Assignment** ([`rendezvous_owner`], [`ShardKey`]): an object belongs to the live
//!   member with the highest rendezvous weight for its key (namespace/name by default), so a
//!   membership change moves only about `1/N` of the objects.
//! - **Filtered mode** ([`ShardFilter`]): every replica watches everything and handles only
//!   what it owns; memory does not shrink.
//! - **Labelled mode** ([`Sharder`], [`ShardReplica`]): the elected sharder writes each
//!   object's [`SHARD_LABEL`]; each replica's informers select their own shard, so each
//!   caches about `1/N` of the objects. An object moves only after its old owner let go
//!   ([`handover`] protocol: drain request, acknowledgement once in-flight work is done, or
//!   the old owner's lease expiry).
//!
//! # Invariant
//!
//! No object is reconciled by two live replicas at once, given: workers check ownership
//! ([`ShardFilter::owns_key`] or [`ShardReplica::claim`]) before each reconcile; clocks run
//! at the same rate; and (filtered mode) a reconcile ends within
//! `lease_duration − renew_deadline` of its replica losing the key. Writes with
//! resourceVersion preconditions turn a violation of those assumptions into 409s.
//!
//! # Example
//!
//! Three replicas over in-memory leases; one dies and its keys move to the other two once
//! its lease expires, while the survivors' own keys stay put.
//!
//! ```
//! use std::time::Duration;
//! use kinformer::sharding::testing::InMemoryLeases;
//! use kinformer::sharding::{Membership, ShardingConfig};
//! use tokio_util::sync::CancellationToken;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
//! let leases = InMemoryLeases::new();
//! let mut runs = Vec::new();
//! let mut replicas = Vec::new();
//! for id in ["r0", "r1", "r2"] {
//!     let replica = Membership::new(ShardingConfig::new(id, "kube-system"), leases.clone())?;
//!     let r = replica.clone();
//!     runs.push(tokio::spawn(async move { r.run(CancellationToken::new()).await }));
//!     replicas.push(replica);
//! }
//! tokio::time::sleep(Duration::from_secs(20)).await;
//! let keys: Vec<String> = (0..300).map(|i| format!("default/pod-{i}")).collect();
//! let owner = |key: &str| replicas.iter().position(|r| r.owns(key));
//! let before: Vec<_> = keys.iter().map(|k| owner(k)).collect();
//! assert!(before.iter().all(Option::is_some));
//!
//! runs[2].abort(); // r2 dies without releasing its lease
//! tokio::time::sleep(Duration::from_secs(40)).await;
//! for (key, was) in keys.iter().zip(&before) {
//!     let now = owner(key);
//!     assert!(matches!(now, Some(0 | 1)));
//!     if *was != Some(2) {
//!         assert_eq!(now, *was, "keys of live replicas stay");
//!     }
//! }
//! # Ok::<(), kinformer::sharding::ShardingError>(())
//! # }).unwrap();
//! ```

mod assignment;
mod config;
mod error;
mod filtered;
pub mod handover;
#[cfg(feature = "kube")]
mod labelled;
#[cfg(feature = "kube")]
mod lease_members;
mod leases;
mod membership;
#[cfg(feature = "kube")]
mod resource;
#[cfg(feature = "kube")]
mod sharder;
#[cfg(feature = "kube")]
mod table;
#[cfg(any(test, feature = "testing"))]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod testing;
#[cfg(test)]
mod tests;

pub use assignment::{ShardKey, ShardKeyFunc, rendezvous_owner, rendezvous_weight};
pub use config::{DEFAULT_LEASE_PREFIX, DEFAULT_SHARDER_LEASE, ShardingConfig};
pub use error::ShardingError;
pub use filtered::{ShardFilter, ShardedHandler};
pub use handover::{
    DRAIN_ANNOTATION, DRAINED_ANNOTATION, SHARD_LABEL, ShardAction, ShardState, decide,
};
#[cfg(feature = "kube")]
#[cfg_attr(docsrs, doc(cfg(feature = "kube")))]
pub use labelled::{Claim, DrainingHandler, ShardReplica, shard_selector};
#[cfg(feature = "kube")]
#[cfg_attr(docsrs, doc(cfg(feature = "kube")))]
pub use lease_members::LeaseMembers;
pub use leases::{MemberLease, MemberLeases};
pub use membership::{MemberView, Membership};
#[cfg(feature = "kube")]
#[cfg_attr(docsrs, doc(cfg(feature = "kube")))]
pub use resource::ShardedResource;
#[cfg(feature = "kube")]
#[cfg_attr(docsrs, doc(cfg(feature = "kube")))]
pub use sharder::{Sharder, SharderStats};
