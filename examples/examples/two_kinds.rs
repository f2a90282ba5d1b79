//! One work queue, two kinds: ReplicaSet and Pod events enqueue [`QueueKey`]s (kind and
//! `namespace/name`), and a worker dispatches on the kind. A key of one kind never meets a key
//! of the other with the same name, and the compiler tells keys from other strings.
//!
//! Runs against the embedded API server (`kinformer_apiserver::ApiServer`):
//! `cargo run -p kinformer-examples --example two_kinds`

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use kinformer::prelude::*;
use serde_json::json;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// A handler that enqueues the key of every object it is told of.
fn enqueue<K: Resource<DynamicType = ()> + Send + Sync + 'static>(
    queue: &RateLimitingQueue<QueueKey>,
) -> ResourceEventHandlerFuncs<K> {
    let add = |queue: RateLimitingQueue<QueueKey>| {
        move |obj: &K| match QueueKey::of(obj) {
            Ok(key) => queue.add(key),
            Err(e) => tracing::warn!("object without a key: {e}"),
        }
    };
    let (on_add, on_update, on_delete) =
        (add(queue.clone()), add(queue.clone()), add(queue.clone()));
    ResourceEventHandlerFuncs::new()
        .on_add(move |obj: &Arc<K>, _| on_add(obj))
        .on_update(move |_: &Arc<K>, new: &Arc<K>| on_update(new))
        .on_delete(move |gone: &DeletedObject<K>| on_delete(gone.object()))
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let server = kinformer_apiserver::ApiServer::start().await?;
    let meta = |name: &str| json!({"name": name, "namespace": "default"});
    server.store().create(
        "replicasets",
        "default",
        json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": meta("web"),
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}}}),
    )?;
    server.store().create(
        "pods",
        "default",
        json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": meta("web"),
        "spec": {"containers": [{"name": "app", "image": "registry.example/web:1"}]}}),
    )?;

    let factory = SharedInformerFactory::new(server.client()?);
    let (replicasets, pods) = (factory.informer::<ReplicaSet>(), factory.informer::<Pod>());
    let queue = RateLimitingQueue::new(default_controller_rate_limiter());
    replicasets.add_event_handler(enqueue::<ReplicaSet>(&queue))?;
    pods.add_event_handler(enqueue::<Pod>(&queue))?;

    let cancel = CancellationToken::new();
    factory.start(&cancel);
    factory
        .wait_for_cache_sync_timeout(Duration::from_secs(10))
        .await?;

    // Both objects are named default/web; their keys differ by kind.
    let (rs_cache, pod_cache) = (replicasets.get_indexer(), pods.get_indexer());
    let (done, mut reconciled) = tokio::sync::mpsc::unbounded_channel();
    let reconcile = move |key: QueueKey| {
        let (rs_cache, pod_cache, done) = (rs_cache.clone(), pod_cache.clone(), done.clone());
        async move {
            if key.is::<ReplicaSet>() {
                let rs = rs_cache.get_by_key(key.key().as_str());
                let replicas = rs.and_then(|rs| rs.spec.replicas);
                println!("{key}: wants {replicas:?} replicas");
            } else if key.is::<Pod>() {
                let pod = pod_cache.get_by_key(key.key().as_str());
                println!(
                    "{key}: on node {:?}",
                    pod.and_then(|p| p.spec.as_ref()?.node_name.clone())
                );
            }
            let _ = done.send(key);
            Ok::<_, Error>(Action::Done)
        }
    };
    let workers = tokio::spawn({
        let (queue, cancel) = (queue.clone(), cancel.clone());
        async move { run_workers(&queue, 2, cancel, reconcile).await }
    });
    let (first, second) = (reconciled.recv().await, reconciled.recv().await);
    assert_ne!(first, second, "one key per kind");
    cancel.cancel();
    workers.await?;
    factory.shutdown().await;
    Ok(())
}
