//! The `kinformer` command.

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
    /// Run the benchmark workloads.
    Bench,
}

fn main() {
    let cli = Cli::parse();
    match cli.command {
        Command::Bench => {}
    }
}
