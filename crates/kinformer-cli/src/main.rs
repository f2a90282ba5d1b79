//! The `kinformer` command.

mod bench;

use std::process::ExitCode;

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
    /// Run the benchmark workloads of a group (workqueue, all) and print their medians.
    Bench(bench::BenchArgs),
    /// Run one benchmark workload in this process and print one JSON line (used by `bench`).
    #[command(hide = true)]
    BenchRun {
        /// The workload id, e.g. W1.
        workload: String,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bench(args) => bench::run(&args),
        Command::BenchRun { workload } => bench::run_one(&workload),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
