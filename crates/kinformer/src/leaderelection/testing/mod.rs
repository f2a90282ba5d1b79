//! Test doubles for leader election, behind the `testing` feature: [`InMemoryLock`], a lease
//! in process memory that every candidate made from it shares, with injectable latency and
//! outages.
//!
//! The crate's own unit tests also have a fake `coordination.k8s.io/v1` Lease endpoint here
//! for `LeaseLock`; it is not public.

#[cfg(all(test, feature = "kube"))]
pub(crate) mod fake_lease_api;
mod in_memory;

pub use in_memory::InMemoryLock;
