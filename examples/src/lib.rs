//! Small programs that use kinformer, for copying from. The programs are the crate's examples:
//!
//! - `replicaset_controller` (`examples/replicaset_controller.rs`): the controller of
//!   `kinformer demo`, wired up in one file.
//! - `projection` (`examples/projection.rs`): a lean typed cache of a projection type.
//!
//! The library part holds what the programs share with other crates: [`pod_lite`], the
//! projection type that the `kinformer-bench` W4P workload measures.

pub mod pod_lite;
