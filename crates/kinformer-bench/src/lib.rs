//! The benchmark workloads of BENCHMARKS.md and the runner of the `kinformer-bench` binary.
//!
//! Where to start: [`GROUPS`] lists every workload by group; [`run`] runs a group's workloads,
//! each in a fresh process, and prints their medians ([`runner`] describes the protocol).
//!
//! Module map: [`workqueue`] (W1–W3, also run scaled down by this crate's criterion benches),
//! `cache` (W4, W4-compact, W4R, W4P, W5), `informer` (W6), `e1` (the `informer` group over
//! HTTP: E1 and its variants, L0, L0P, L0P-1, F0, and the server process they run against), `realistic`
//! (W4R's and E1R's realistic pods), `sharding` (S1: labelled sharding over 1, 2 and 4
//! replica processes), [`soak`] (S0: informers under churn and faults for minutes, and the
//! driver the soak test shares), `plot` (`--plot`: the medians as a chart against their references),
//! [`alloc`] (the counting allocator the heap figures need).
//! Bench pods come from [`kinformer_apiserver::BenchPod`], the builder the embedded server's
//! synthetic pods use.

pub mod alloc;
mod cache;
mod e1;
mod group;
mod informer;
mod plot;
pub mod pod_lite;
pub(crate) mod proc_status;
mod realistic;
mod run_informer;
pub mod runner;
mod sharding;
pub mod soak;
pub mod workqueue;

pub use e1::{pod_list_json, serve_for_bench};
pub use runner::{
    BenchArgs, BenchError, GROUPS, Group, Metrics, exit_on_error, plot_saved, run, run_one, unit_of,
};
pub use sharding::shard_replica;
