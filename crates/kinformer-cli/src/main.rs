//! The `kinformer` command.

mod args;
mod bench;
mod demo;
mod serve;
mod store_mode;
mod ticker;
mod watch;

use clap::{Parser, Subcommand};

/// jemalloc: an informer's writer allocates each new object while the old one is freed on
/// another thread (see "Allocator" in docs/benchmarks.md); glibc's allocator makes the writer pay for
/// those frees, jemalloc does not.
#[cfg(all(feature = "jemalloc", not(target_env = "msvc")))]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

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
    /// Run a ReplicaSet controller against a misbehaving API server until it converges.
    Demo(demo::DemoArgs),
    /// Mirror a resource of a cluster (or a `kinformer serve`) into an informer and print its events.
    Watch(watch::WatchArgs),
    /// Run the benchmark workloads (the `kinformer-bench` runner, built beside this binary).
    Bench(bench::BenchArgs),
}

fn main() {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(args) => std::process::exit(serve::run(args)),
        Command::Demo(args) => std::process::exit(demo::run(args)),
        Command::Watch(args) => std::process::exit(watch::run(args)),
        Command::Bench(args) => std::process::exit(bench::run(args)),
    }
}
