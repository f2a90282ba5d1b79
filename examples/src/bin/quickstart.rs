//! A controller that watches pods and reconciles each pod it hears about.
//!
//! cargo run -p kinformer-examples --bin quickstart                          # $KUBECONFIG, ~/.kube/config
//! cargo run -p kinformer-examples --bin quickstart -- http://127.0.0.1:8001 # e.g. `kinformer serve`

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kinformer::prelude::*;

type Error = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> ExitCode {
    // Logs go to stderr; RUST_LOG=debug shows every list, watch and retry.
    let filter =
        tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), Error> {
    // The server: a URL argument, else the kube way ($KUBECONFIG, ~/.kube/config, in-cluster).
    let mut config = match std::env::args().nth(1) {
        Some(url) => kube::Config::new(url.parse()?),
        None => kube::Config::infer().await?,
    };
    config.default_retry = false; // the reflector and the work queue do the retrying
    let server = config.cluster_url.clone();

    // One factory per process: one watch and one cache per type, shared by every controller.
    let factory = SharedInformerFactory::new(kube::Client::try_from(config)?);
    let pods = factory.informer::<Pod>();

    // Handlers only enqueue keys (`namespace/name`); the workers do the work.
    let queue = RateLimitingQueue::new(default_controller_rate_limiter());
    let enqueue = {
        let queue = queue.clone();
        move |pod: &Pod| match meta_namespace_key(pod) {
            Ok(key) => queue.add(key),
            Err(e) => tracing::warn!("pod without a key: {e}"),
        }
    };
    let (on_add, on_update, on_delete) = (enqueue.clone(), enqueue.clone(), enqueue);
    pods.add_event_handler(
        ResourceEventHandlerFuncs::new()
            .on_add(move |pod: &Arc<Pod>, _initial_list| on_add(pod))
            .on_update(move |_old: &Arc<Pod>, new: &Arc<Pod>| on_update(new))
            .on_delete(move |gone: &DeletedObject<Pod>| on_delete(gone.object())),
    )?;

    let cancel = CancellationToken::new();
    factory.start(&cancel);
    // Bounded: a wrong URL or a refusing server is an error within seconds, not a silent hang.
    if let Err(e) = factory
        .wait_for_cache_sync_timeout(Duration::from_secs(10))
        .await
    {
        factory.shutdown().await;
        return Err(format!("no pods from {server}: {e}").into());
    }
    tracing::info!("synced {} pods from {server}", pods.get_indexer().len());

    // Ctrl-C stops the workers (each finishes the key it holds), then the informers.
    tokio::spawn({
        let cancel = cancel.clone();
        async move {
            let _ = tokio::signal::ctrl_c().await;
            cancel.cancel();
        }
    });
    let cache = pods.get_indexer();
    run_workers(&queue, 2, cancel, move |key: ObjectKey| {
        let cache = cache.clone();
        async move {
            // Reconcile: read the cache (never the server), act, return what comes next.
            match cache.get_by_key(key.as_str()) {
                Some(pod) => {
                    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
                    println!("reconciled {key}: {}", phase.unwrap_or("no phase yet"));
                }
                None => println!("reconciled {key}: deleted"),
            }
            Ok::<_, Error>(Action::Done) // an Err retries the key with per-key backoff
        }
    })
    .await;
    factory.shutdown().await;
    Ok(())
}
