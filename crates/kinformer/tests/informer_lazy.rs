//! The lean path end to end over HTTP: a factory informer of `Lazy<Pod>` in compact storage
//! against the embedded API server. Handlers that read only metadata cause no full decode;
//! handlers that ask for the object share one decode per delivery; the cache equals the server;
//! pods travel and stay as protobuf.
//!
//! One test per binary on purpose: it reads the process-wide decode counter.

#![cfg(feature = "kube")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kinformer::cache::store::{CompactOptions, NAMESPACE_INDEX, namespace_index_func};
use kinformer::cache::{
    HasSynced, Lazy, ResourceEventHandlerFuncs, SharedInformerFactory, Storage, lazy_full_decodes,
};
use kinformer_apiserver::{ServerConfig, TestServer, seed_bench_pods};
use kube_core::Resource;
use serde_json::json;
use support::{Tracker, cache_pods, server_pods, wait_converged};
use tokio::time::timeout;
use tokio_util::sync::CancellationToken;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lazy_compact_informer_decodes_only_what_handlers_ask_for() {
    let server = TestServer::start_with(ServerConfig::for_tests())
        .await
        .unwrap();
    seed_bench_pods(server.store(), 2_000).unwrap();
    let client = server.client_without_retries().unwrap();
    let factory = SharedInformerFactory::new(client)
        .with_storage::<Lazy<Pod>>(Storage::compact(CompactOptions::default().train_after(100)));
    let pods = factory.informer::<Lazy<Pod>>();
    pods.add_indexers([(NAMESPACE_INDEX.to_string(), namespace_index_func())].into())
        .unwrap();

    // A metadata-only handler (the checking tracker reads keys and resourceVersions).
    let tracker = Arc::new(Tracker::default());
    pods.add_event_handler(Arc::clone(&tracker)).unwrap();

    let cancel = CancellationToken::new();
    factory.start(&cancel);
    let synced = timeout(
        Duration::from_secs(30),
        factory.wait_for_cache_sync(&cancel),
    )
    .await
    .unwrap();
    assert!(synced.values().all(|s| *s), "{synced:?}");
    let cache = pods.get_indexer();
    wait_converged(&server, None, &cache, &tracker, Duration::from_secs(15))
        .await
        .unwrap();
    assert_eq!(cache_pods(&cache), server_pods(&server, None));
    // Reads by key and by index decode metadata only.
    let ns3 = cache.by_index(NAMESPACE_INDEX, "ns-3").unwrap();
    assert_eq!(ns3.len(), 20);
    let pod7 = cache.get_by_key("ns-7/pod-7").unwrap();
    assert!(
        pod7.is_protobuf(),
        "built-in kinds arrive and stay as protobuf bytes"
    );
    assert_eq!(
        lazy_full_decodes(),
        0,
        "metadata-only handlers and reads decoded objects"
    );
    // What the store holds is visible from the informer: a trained dictionary, and frames well
    // under a bench pod's ~190 protobuf bytes each.
    assert!(cache.compact_dictionary_len().is_some());
    let per_pod = cache.compact_stored_bytes() / cache.len();
    assert!((1..150).contains(&per_pod), "{per_pod} B stored per pod");

    // Two handlers that read the whole object: one decode per delivered object, shared.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<bool>();
    let reader = |tx: tokio::sync::mpsc::UnboundedSender<bool>| {
        ResourceEventHandlerFuncs::new().on_update(move |_old: &Arc<Lazy<Pod>>, new| {
            let ok = new.object().is_ok_and(|pod| pod.spec.is_some());
            let _ = tx.send(ok);
        })
    };
    let ra = pods.add_event_handler(reader(tx.clone())).unwrap();
    let rb = pods.add_event_handler(reader(tx)).unwrap();
    timeout(Duration::from_secs(15), ra.wait_synced())
        .await
        .unwrap();
    timeout(Duration::from_secs(15), rb.wait_synced())
        .await
        .unwrap();
    for i in 0..50 {
        let ns = format!("ns-{}", i % 100);
        let patch = json!({"metadata": {"labels": {"touched": "yes"}}});
        server
            .store()
            .patch("pods", &ns, &format!("pod-{i}"), &patch)
            .unwrap();
    }
    wait_converged(&server, None, &cache, &tracker, Duration::from_secs(15))
        .await
        .unwrap();
    for _ in 0..100 {
        let ok = timeout(Duration::from_secs(15), rx.recv())
            .await
            .expect("both readers see the 50 updates")
            .unwrap();
        assert!(ok, "a reader could not decode a pod");
    }
    assert_eq!(
        lazy_full_decodes(),
        50,
        "one decode per delivered object, shared by both handlers"
    );
    // The stored update is visible through the metadata view.
    let touched = cache.get_by_key("ns-1/pod-1").unwrap();
    assert_eq!(touched.meta().labels.as_ref().unwrap()["touched"], "yes");
    assert!(!touched.is_decoded());
    assert!(touched.is_protobuf(), "watch events too");
    assert!(pods.has_synced());

    cancel.cancel();
    factory.shutdown().await;
}
