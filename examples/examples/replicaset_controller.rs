//! A ReplicaSet controller, built the way Kubernetes' own controllers are: shared informers,
//! an owner index, listers, a rate-limited work queue and several workers.
//!
//! ```text
//! cargo run -p kinformer-examples --example replicaset_controller                 # embedded server
//! cargo run -p kinformer-examples --example replicaset_controller -- URL          # e.g. kinformer serve
//! cargo run -p kinformer-examples --example replicaset_controller -- --kubeconfig # $KUBECONFIG / ~/.kube/config
//! ```
//!
//! Without an argument it starts the embedded API server, creates three ReplicaSets, runs the
//! controller until each has its pods, scales one down, waits again and exits. With a server
//! it runs until Ctrl-C.
//!
//! The controller itself is `kinformer_cli::controller` (`crates/kinformer-cli/src/controller/`,
//! one copy, shared with `kinformer demo`). The wiring is all here:
//!
//! 1. a `kube::Client` with `default_retry = false` (retries belong to the work queue);
//! 2. one `SharedInformerFactory` over that client;
//! 3. `ReplicaSetController::new(&factory, client, queue)` takes the ReplicaSet and Pod
//!    informers from the factory, adds the owner indexes and its handlers;
//! 4. `factory.start(&cancel)`, then `controller.run(workers, cancel)`: it waits for the
//!    caches to sync and starts the workers.

use std::time::Duration;

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use kinformer::cache::store::CompactOptions;
use kinformer::cache::{SharedInformerFactory, Storage};
use kinformer::prelude::CancellationToken;
use kinformer::workqueue::{RateLimitingQueue, default_controller_rate_limiter};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};

use kinformer_cli::controller::{
    self, CONTROLLER_UID_INDEX, ReplicaSetController, desired_replicas, replicaset,
};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// Waits until every ReplicaSet in the cache has as many pods as it wants.
async fn wait_converged(c: &ReplicaSetController) {
    loop {
        let pods = c.pods().get_indexer();
        let all = c.replicasets().get_indexer().list();
        let done = all.iter().all(|rs| {
            let uid = rs.metadata.uid.as_deref().unwrap_or_default();
            let have = pods.by_index(CONTROLLER_UID_INDEX, uid).map(|p| p.len());
            have.ok() == Some(desired_replicas(rs))
                && rs.status.as_ref().map(|s| s.replicas) == Some(desired_replicas(rs) as i32)
        });
        if done && !all.is_empty() {
            for rs in all {
                println!(
                    "  {:<8} wants {:>2}, has {:>2} pods",
                    rs.metadata.name.as_deref().unwrap_or_default(),
                    desired_replicas(&rs),
                    rs.status.as_ref().map_or(0, |s| s.replicas)
                );
            }
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let arg = std::env::args().nth(1);
    let (embedded, mut config) = match arg.as_deref() {
        None => {
            let server = kinformer_apiserver::ApiServer::start().await?;
            let config = server.kube_config()?;
            (Some(server), config)
        }
        Some("--kubeconfig") => (None, kube::Config::infer().await?),
        Some(url) => (None, kube::Config::new(url.parse()?)),
    };
    // 1. Requests fail fast; the reflector and the work queue do the retrying.
    config.default_retry = false;
    let client = kube::Client::try_from(config)?;

    // 2. + 3. One factory; the controller takes its informers from it. Pods are kept compact
    //    (encoded and compressed, decoded on read); ReplicaSets typed.
    let factory = SharedInformerFactory::new(client.clone()).with_storage::<Pod>(Storage::compact(
        CompactOptions::default().hot_objects(1_024),
    ));
    let queue = RateLimitingQueue::new(default_controller_rate_limiter());
    let controller = ReplicaSetController::new(&factory, client.clone(), queue)?;

    // 4. Start the informers, then the workers.
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    let run = tokio::spawn({
        let (controller, cancel) = (controller.clone(), cancel.clone());
        async move { controller.run(4, cancel).await }
    });

    if embedded.is_some() {
        let api: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
        for (name, replicas) in [("web", 5), ("api", 3), ("worker", 8)] {
            api.create(
                &PostParams::default(),
                &replicaset("default", name, replicas, &[]),
            )
            .await?;
        }
        println!("created 3 ReplicaSets; reconciling:");
        wait_converged(&controller).await;
        let scale = serde_json::json!({"spec": {"replicas": 2}});
        api.patch("worker", &PatchParams::default(), &Patch::Merge(&scale))
            .await?;
        println!("scaled worker to 2; reconciling:");
        tokio::time::sleep(Duration::from_millis(100)).await;
        wait_converged(&controller).await;
    } else {
        println!("controller running; Ctrl-C to stop");
        tokio::signal::ctrl_c().await?;
    }
    cancel.cancel();
    run.await?;
    factory.shutdown().await;
    let stats = controller.stats();
    println!(
        "{} syncs, {} pods created, {} deleted",
        controller::ControllerStats::get(&stats.syncs),
        controller::ControllerStats::get(&stats.pods_created),
        controller::ControllerStats::get(&stats.pods_deleted),
    );
    Ok(())
}
