//! The library half of the `kinformer` command: the ReplicaSet controller that `kinformer demo`
//! runs, built the way Kubernetes' own controllers are (shared informers, an owner index,
//! expectations, a rate-limited work queue and several workers).
//!
//! It is a library so that the demo and the `replicaset_controller` example of the
//! `kinformer-examples` crate run one copy of it.

pub mod controller;
