//! The `kinformer` command.

mod args;
mod bench;
mod demo;
mod serve;
mod store_mode;
mod watch;

use clap::{Parser, Subcommand};

/// Counts live heap bytes for the memory benchmarks; the count is a relaxed atomic add per
/// allocation, too cheap to matter outside them.
#[global_allocator]
static ALLOC: bench::alloc::CountingAlloc = bench::alloc::CountingAlloc;

/// kinformer: Kubernetes controller machinery for Rust.
#[derive(Debug, Parser)]
#[command(name = "kinformer", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the benchmark workloads of a group (workqueue, cache, informer, all) and print their medians.
    Bench(bench::BenchArgs),
    /// Run one benchmark workload in this process and print one JSON line (used by `bench`).
    #[command(hide = true)]
    BenchRun {
        /// The workload id, e.g. W1.
        workload: String,
    },
    /// Run the embedded API server for the HTTP bench workloads (commands on stdin).
    #[command(hide = true)]
    BenchServer {
        /// Bench pods to seed.
        #[arg(long, default_value_t = 100_000)]
        pods: usize,
        /// Seed realistic pods (BENCHMARKS.md's W4R rules) instead of bench pods.
        #[arg(long)]
        realistic: bool,
    },
    /// Run the embedded Kubernetes API server.
    Serve(serve::ServeArgs),
    /// Run a ReplicaSet controller against a misbehaving API server until it converges.
    Demo(demo::DemoArgs),
    /// Mirror a resource of a cluster (or a `kinformer serve`) into an informer and print its events.
    Watch(watch::WatchArgs),
}

fn main() {
    let cli = Cli::parse();
    match cli.command {
        Command::Bench(args) => bench::exit_on_error(bench::run(&args)),
        Command::BenchRun { workload } => bench::exit_on_error(bench::run_one(&workload)),
        Command::BenchServer { pods, realistic } => {
            std::process::exit(bench::serve_for_bench(pods, realistic))
        }
        Command::Serve(args) => std::process::exit(serve::run(args)),
        Command::Demo(args) => std::process::exit(demo::run(args)),
        Command::Watch(args) => std::process::exit(watch::run(args)),
    }
}
