//! Faults seen through real clients: broken frames, restarts, expired tokens, random faults.
// Helpers outside #[test] functions fail the test by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::next;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kinformer_apiserver::{Fault, FaultRule, Target, TestServer, bench_pod};
use kube::api::{Api, ListParams, WatchEvent, WatchParams};
use serde_json::json;

fn cm(name: &str) -> serde_json::Value {
    json!({"metadata": {"name": name}})
}

#[tokio::test]
async fn truncated_and_garbled_frames_end_the_stream_without_delivering_the_event() {
    let server = TestServer::start().await.unwrap();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client().unwrap());
    for fault in [
        Fault::TruncateWatchFrame { after_events: 1 },
        Fault::GarbleWatchFrame { after_events: 1 },
    ] {
        server.faults().inject(fault.clone());
        let from = server.store().revision().to_string();
        let mut w = cms
            .watch(&WatchParams::default().disable_bookmarks(), &from)
            .await
            .unwrap()
            .boxed();
        let a = format!("a{}", server.store().revision());
        server
            .store()
            .create("configmaps", "default", cm(&a))
            .unwrap();
        server
            .store()
            .create("configmaps", "default", cm(&format!("{a}b")))
            .unwrap();
        assert!(matches!(next(&mut w).await, WatchEvent::Added(_)));
        let mut saw_error = false;
        while let Some(item) = tokio::time::timeout(Duration::from_secs(5), w.next())
            .await
            .unwrap()
        {
            assert!(
                item.is_err(),
                "{fault:?}: expected a decode error, got {item:?}"
            );
            saw_error = true;
        }
        // A half line at the end of the body may be dropped by the client's line reader; a
        // garbled full line must surface as a decode error.
        if matches!(fault, Fault::GarbleWatchFrame { .. }) {
            assert!(saw_error, "{fault:?}");
        }
    }
    assert_eq!(server.faults().counts().get("truncate"), Some(&1));
    assert_eq!(server.faults().counts().get("garble"), Some(&1));
}

#[tokio::test]
async fn a_simulated_restart_closes_watches_and_refuses_connections_for_a_while() {
    let server = TestServer::start().await.unwrap();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client().unwrap());
    let mut w = cms
        .watch(&WatchParams::default().disable_bookmarks(), "0")
        .await
        .unwrap()
        .boxed();
    server
        .faults()
        .inject(Fault::RefuseConnections(Duration::from_millis(300)));
    assert!(
        tokio::time::timeout(Duration::from_secs(5), w.next())
            .await
            .unwrap()
            .is_none()
    );
    assert!(server.faults().refusing());
    let fresh: Api<ConfigMap> = Api::default_namespaced(server.client_without_retries().unwrap());
    assert!(fresh.list(&ListParams::default()).await.is_err());
    // Await the end of the refusal window, then the server answers again.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while server.faults().refusing() {
        assert!(tokio::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let again: Api<ConfigMap> = Api::default_namespaced(server.client().unwrap());
    again.list(&ListParams::default()).await.unwrap();
    assert_eq!(server.faults().counts().get("refuse"), Some(&1));
}

#[tokio::test]
async fn a_client_with_pooled_connections_recovers_after_a_simulated_restart() {
    let server = TestServer::start().await.unwrap();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client_without_retries().unwrap());
    // Leaves an idle keep-alive connection in the client's pool.
    cms.list(&ListParams::default()).await.unwrap();
    server
        .faults()
        .inject(Fault::RefuseConnections(Duration::from_millis(200)));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while server.faults().refusing() {
        assert!(tokio::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The restart closed the pooled connection, so the same client's next request opens a
    // new one and succeeds instead of failing on a dead connection.
    cms.list(&ListParams::default()).await.unwrap();
}

#[tokio::test]
async fn expired_continue_tokens_and_delays_are_injectable() {
    let server = TestServer::start().await.unwrap();
    kinformer_apiserver::seed_bench_pods(server.store(), 4).unwrap();
    let pods: Api<Pod> = Api::all(server.client().unwrap());
    let first = pods.list(&ListParams::default().limit(2)).await.unwrap();
    server.faults().inject(Fault::ExpireContinue);
    let t = first.metadata.continue_.clone().unwrap();
    let e = pods
        .list(&ListParams::default().limit(2).continue_token(&t))
        .await
        .unwrap_err();
    assert!(matches!(e, kube::Error::Api(s) if s.code == 410));
    // The token still works once the fault is spent.
    assert_eq!(
        pods.list(&ListParams::default().limit(2).continue_token(&t))
            .await
            .unwrap()
            .items
            .len(),
        2
    );
    server
        .faults()
        .inject(Fault::Delay(Duration::from_millis(200)));
    let t0 = std::time::Instant::now();
    pods.list(&ListParams::default()).await.unwrap();
    assert!(t0.elapsed() >= Duration::from_millis(200));
}

#[tokio::test]
async fn a_lagging_watcher_behind_compaction_gets_410() {
    let server = TestServer::start().await.unwrap();
    let pods: Api<Pod> = Api::all(server.client().unwrap());
    server.store().create("pods", "", bench_pod(0)).unwrap();
    server.store().create("pods", "", bench_pod(1)).unwrap();
    server.store().compact_all();
    let mut w = pods
        .watch(&WatchParams::default(), "1")
        .await
        .unwrap()
        .boxed();
    assert!(
        matches!(next(&mut w).await, WatchEvent::Error(e) if e.code == 410 && e.reason == "Expired")
    );
}

#[tokio::test]
async fn random_faults_from_a_spec_are_seeded_and_listed() {
    let server = TestServer::start().await.unwrap();
    server.faults().apply_spec("seed=3,500@0.5").unwrap();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client_without_retries().unwrap());
    let mut failures = 0;
    for _ in 0..40 {
        if cms.list(&ListParams::default()).await.is_err() {
            failures += 1;
        }
    }
    assert_eq!(server.faults().counts().get("500").copied(), Some(failures));
    assert!((5..35).contains(&failures), "{failures}");
    assert_eq!(server.faults().injected().len() as u64, failures);
    server.faults().clear();
    cms.list(&ListParams::default()).await.unwrap();
    server
        .faults()
        .add_rule(FaultRule::once(Fault::InternalError).for_resource("pods"));
    cms.list(&ListParams::default()).await.unwrap();
}

#[tokio::test]
async fn closing_all_watches_ends_streams_cleanly_and_keeps_connections_usable() {
    let server = TestServer::start().await.unwrap();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client().unwrap());
    let mut w = cms
        .watch(&WatchParams::default().disable_bookmarks(), "0")
        .await
        .unwrap()
        .boxed();
    server.faults().close_all_watches();
    assert!(
        tokio::time::timeout(Duration::from_secs(5), w.next())
            .await
            .unwrap()
            .is_none()
    );
    cms.list(&ListParams::default()).await.unwrap();
    assert_eq!(
        server.faults().total(),
        0,
        "closing watches by hand is not an injected fault"
    );
}

#[tokio::test]
async fn closing_all_watches_ends_a_watch_whose_request_arrived_before_its_stream_started() {
    let server = TestServer::start().await.unwrap();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client().unwrap());
    // The delay holds the request between its arrival and the start of its stream.
    server
        .faults()
        .add_rule(FaultRule::once(Fault::Delay(Duration::from_millis(500))).on(Target::Watch));
    let watch = tokio::spawn(async move {
        let mut w = cms
            .watch(&WatchParams::default().disable_bookmarks(), "0")
            .await
            .unwrap()
            .boxed();
        w.next().await.map(|e| e.is_ok())
    });
    tokio::time::timeout(Duration::from_secs(5), async {
        while server.faults().total() == 0 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await
    .expect("the watch request arrived");
    server.faults().close_all_watches();
    let first = tokio::time::timeout(Duration::from_secs(5), watch)
        .await
        .expect("the close ended the watch")
        .unwrap();
    assert_eq!(first, None, "the stream ended without an event");
}
