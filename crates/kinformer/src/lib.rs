//! kinformer: Kubernetes client-go's controller machinery for Rust.
//!
//! Where to start:
//! - [`wait`]: `until`, `jitter_until`, backoff and the `poll` family — the timing helpers
//!   everything else uses.
//! - [`workqueue`]: the deduplicating, delaying and rate-limiting work queues that controllers
//!   drain.
//! - [`cache`]: list & watch → reflector → delta queue → indexed cache → shared informer and
//!   its handlers, plus listers for reading the cache.
//! - [`controller`]: owner indexes, expectations and the worker loop of client-go's
//!   controllers.
//! - [`leaderelection`]: run a controller in one replica at a time (over a `Lease`).
//! - [`sharding`]: split a controller's objects among replicas (membership Leases,
//!   rendezvous hashing, filtered or labelled mode with safe handover).
//!
//! The data flows in that order: an API server feeds a `ListerWatcher`, the `Reflector` turns
//! list/watch results into deltas, the informer applies them to an `Indexer` and fans them out
//! to handlers, and handlers enqueue keys on a `workqueue` that workers drain.

pub mod cache;
mod codec;
pub mod controller;
mod hash;
#[cfg(feature = "kube")]
pub mod kube;
pub mod leaderelection;
pub mod sharding;
pub mod wait;
pub mod workqueue;
