//! The `kinformer-bench` command: runs the benchmark workloads of a group (workqueue, cache,
//! informer, all), each run in a fresh process, and prints their medians.

use clap::{CommandFactory, Parser, Subcommand};
use kinformer_bench::alloc::CountingAlloc;
use kinformer_bench::{
    BenchArgs, exit_on_error, plot_saved, run, run_one, serve_for_bench, shard_replica,
};

/// Counts live heap bytes for the memory workloads (their heap figures need it).
#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

/// kinformer-bench: the benchmark workloads of kinformer.
#[derive(Debug, Parser)]
#[command(
    name = "kinformer-bench",
    version,
    about,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
struct Cli {
    #[command(flatten)]
    bench: Option<BenchArgs>,
    #[command(subcommand)]
    command: Option<Command>,
}

/// The per-run subcommands the runner re-executes this binary with.
#[derive(Debug, Subcommand)]
enum Command {
    /// Run one benchmark workload in this process and print one JSON line.
    #[command(hide = true)]
    Run {
        /// The workload id, e.g. W1.
        workload: String,
    },
    /// Run the embedded API server for the HTTP workloads (commands on stdin).
    #[command(hide = true)]
    Server {
        /// Bench pods to seed.
        #[arg(long, default_value_t = 100_000)]
        pods: usize,
        /// Seed realistic pods (BENCHMARKS.md's W4R rules) instead of bench pods.
        #[arg(long)]
        realistic: bool,
        /// Encode every object in protobuf at the write too (for the protobuf workloads).
        #[arg(long)]
        protobuf: bool,
        /// Answer lists at resourceVersion "0" in one response, as a watch cache does.
        #[arg(long)]
        watch_cache_lists: bool,
        /// Refuse watch-list requests, as Kubernetes 1.26–1.31 do.
        #[arg(long)]
        no_watch_list: bool,
    },
    /// Draw the chart of `--plot` from runs saved with `--json` (files may be combined).
    Plot {
        /// Files of JSON lines, as `kinformer-bench <group> --json` prints them.
        #[arg(required = true)]
        files: Vec<std::path::PathBuf>,
        /// The SVG file to write.
        #[arg(long, value_name = "SVG")]
        out: std::path::PathBuf,
    },
    /// Run one S1 sharding replica against a bench server (status lines on stdout).
    #[command(hide = true)]
    ShardReplica {
        /// The bench server's URL.
        #[arg(long)]
        url: String,
        /// The replica's identity.
        #[arg(long)]
        identity: String,
    },
}

fn main() {
    let cli = Cli::parse();
    match (cli.command, cli.bench) {
        (Some(Command::Run { workload }), _) => exit_on_error(run_one(&workload)),
        (
            Some(Command::Server {
                pods,
                realistic,
                protobuf,
                watch_cache_lists,
                no_watch_list,
            }),
            _,
        ) => std::process::exit(serve_for_bench(
            pods,
            realistic,
            protobuf,
            watch_cache_lists,
            no_watch_list,
        )),
        (Some(Command::Plot { files, out }), _) => exit_on_error(plot_saved(&files, &out)),
        (Some(Command::ShardReplica { url, identity }), _) => {
            std::process::exit(shard_replica(&url, &identity))
        }
        (None, Some(args)) => exit_on_error(run(&args)),
        // Not reached: clap requires the group when no subcommand is given.
        (None, None) => Cli::command().print_help().unwrap_or_default(),
    }
}
