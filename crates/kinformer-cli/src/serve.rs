//! `kinformer serve`: run the embedded API server as a process.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use clap::Args;
use kinformer_apiserver::{ApiServer, ServerConfig, bench_pod_update, seed_bench_pods};

/// Options of `kinformer serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 8001)]
    port: u16,
    /// Address to bind; anything but loopback also needs --allow-remote.
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    address: IpAddr,
    /// Allow binding a non-loopback address and answer any `Host` header (the server has no
    /// authentication; without this flag only loopback host names are answered).
    #[arg(long)]
    allow_remote: bool,
    /// Create this many synthetic bench pods before serving.
    #[arg(long, default_value_t = 0)]
    seed_pods: usize,
    /// Update this many bench pods per second (needs --seed-pods; at most 1,000,000).
    #[arg(long, default_value_t = 0.0, value_parser = parse_churn)]
    churn: f64,
    /// Faults to inject, e.g. `seed=7,500@0.01,close-watch:100@0.2` (see the apiserver docs).
    #[arg(long)]
    faults: Option<String>,
    /// Seconds between watch bookmarks (1 to a year).
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=crate::args::MAX_SECS))]
    bookmark_interval: u64,
    /// Maximum number of events kept in the history (older ones are compacted).
    #[arg(long, default_value_t = 100_000)]
    history: usize,
    /// Refuse watch-list requests (`sendInitialEvents`) with 422 Invalid, as Kubernetes
    /// 1.26–1.31 do by default.
    #[arg(long)]
    no_watch_list: bool,
    /// Answer a list at resourceVersion "0" in one response whatever its `limit`, as a real
    /// API server's watch cache does.
    #[arg(long)]
    watch_cache_lists: bool,
    /// Open connections at most. Beyond it a new connection closes the oldest idle one; only
    /// when every connection is busy (a watch, a request in progress) is it refused with 503.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    max_connections: u64,
    /// Seconds a connection may take to send a request's headers; also how long an idle
    /// keep-alive connection stays open.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=crate::args::MAX_SECS))]
    idle_timeout: u64,
}

/// The highest `--churn`: updates per second the churn task attempts.
const MAX_CHURN: f64 = 1_000_000.0;

/// Updates per 10 ms tick at most: a rate the store cannot keep up with is not made up later
/// (the backlog is dropped), so the churn task never spins.
const MAX_UPDATES_PER_TICK: f64 = MAX_CHURN / 100.0;

fn parse_churn(s: &str) -> Result<f64, String> {
    crate::args::parse_rate(s, MAX_CHURN)
}

/// Runs the server until Ctrl-C. Returns the process exit code.
pub fn run(args: ServeArgs) -> i32 {
    crate::args::run_to_exit_code(serve(args))
}

async fn serve(args: ServeArgs) -> i32 {
    if !args.address.is_loopback() && !args.allow_remote {
        eprintln!(
            "error: refusing to bind {} without --allow-remote (the server has no authentication)",
            args.address
        );
        return 2;
    }
    let mut config = ServerConfig {
        bind: SocketAddr::new(args.address, args.port),
        bookmark_interval: Duration::from_secs(args.bookmark_interval.max(1)),
        allow_remote: args.allow_remote,
        no_watch_list: args.no_watch_list,
        watch_cache_lists: args.watch_cache_lists,
        max_connections: usize::try_from(args.max_connections).unwrap_or(usize::MAX),
        header_read_timeout: Duration::from_secs(args.idle_timeout),
        ..ServerConfig::default()
    };
    config.store.max_events = args.history.max(1);
    let server = match ApiServer::start_with(config).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return 1;
        }
    };
    if let Some(spec) = &args.faults
        && let Err(e) = server.faults().apply_spec(spec)
    {
        eprintln!("error: {e}");
        return 2;
    }
    let started = std::time::Instant::now();
    if let Err(e) = seed_bench_pods(server.store(), args.seed_pods) {
        eprintln!("error: seeding pods failed: {e}");
        return 1;
    }
    if args.seed_pods > 0 {
        println!(
            "seeded {} pods in {} ms",
            args.seed_pods,
            started.elapsed().as_millis()
        );
    }
    println!("kinformer API server listening on {}", server.url());
    println!(
        "use it with:  KUBECONFIG=/dev/null kubectl --server {} get pods -A",
        server.url()
    );
    println!("or this kubeconfig:\n---\n{}---", server.kubeconfig());
    if args.churn > 0.0 && args.seed_pods == 0 {
        eprintln!("warning: --churn needs --seed-pods; no churn");
    }
    if args.churn > 0.0 && args.seed_pods > 0 {
        let store = server.store().clone();
        let (n, rate) = (args.seed_pods, args.churn);
        tokio::spawn(async move {
            let tick = Duration::from_millis(10);
            let mut interval = crate::ticker::every(Duration::ZERO, tick);
            let (mut due, mut counter) = (0.0f64, 0u64);
            loop {
                interval.tick().await;
                due = (due + rate * tick.as_secs_f64()).min(MAX_UPDATES_PER_TICK);
                while due >= 1.0 {
                    due -= 1.0;
                    counter += 1;
                    let i = rand::random_range(0..n);
                    if let Err(e) = store.update("pods", "", bench_pod_update(i, counter)) {
                        tracing::debug!(error = %e, "churn update skipped");
                    }
                }
            }
        });
    }
    if let Err(e) = tokio::signal::ctrl_c().await {
        eprintln!("error: cannot wait for Ctrl-C: {e}");
    }
    let counts = server.faults().counts();
    if !counts.is_empty() {
        println!("faults injected: {counts:?}");
    }
    server.shutdown();
    0
}
