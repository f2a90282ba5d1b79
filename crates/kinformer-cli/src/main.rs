//! The `kinformer` command.

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
    /// Run the benchmark workloads.
    Bench,
    /// Run the embedded Kubernetes API server.
    Serve(serve::ServeArgs),
}

fn main() {
    let cli = Cli::parse();
    match cli.command {
        Command::Bench => {}
        Command::Serve(args) => std::process::exit(serve::run(args)),
    }
}
