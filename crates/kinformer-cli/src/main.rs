//! The `kinformer` command.

mod bench;
mod serve;

use clap::{Parser, Subcommand};

/// kinformer: Kubernetes controller machinery for Rust.
#[derive(Debug, Parser)]
#[command(name = "kinformer", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the embedded Kubernetes API server.
    Serve(serve::ServeArgs),
    /// Run the benchmark workloads of a group (workqueue, informer, all) and print their medians.
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
    },
}

fn main() {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(args) => std::process::exit(serve::run(args)),
        Command::Bench(args) => bench::exit_on_error(bench::run(&args)),
        Command::BenchRun { workload } => bench::exit_on_error(bench::run_one(&workload)),
        Command::BenchServer { pods } => std::process::exit(bench::serve_for_bench(pods)),
    }
}
