//! HTTP-level tests through the real `kube` client.
// Helpers outside #[test] functions fail the test by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::next;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kinformer_apiserver::{Fault, TestServer, bench_pod};
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use serde_json::json;

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(
        json!({"metadata": {"name": name, "labels": {"app": "x"}}, "data": {"k": "v"}}),
    )
    .unwrap()
}

fn rv<K: kube::Resource>(o: &K) -> u64 {
    o.meta()
        .resource_version
        .as_deref()
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn create_sets_server_fields_and_revisions_increase_globally() {
    let server = TestServer::start().await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(server.client().unwrap(), "default");
    let pods: Api<Pod> = Api::namespaced(server.client().unwrap(), "ns-1");
    let a = cms.create(&PostParams::default(), &cm("a")).await.unwrap();
    let p: Pod = serde_json::from_value(bench_pod(1)).unwrap();
    let p = pods.create(&PostParams::default(), &p).await.unwrap();
    let b = cms.create(&PostParams::default(), &cm("b")).await.unwrap();
    assert_eq!((rv(&a), rv(&p), rv(&b)), (1, 2, 3));
    assert!(a.metadata.uid.is_some() && a.metadata.creation_timestamp.is_some());
    assert_eq!(a.metadata.namespace.as_deref(), Some("default"));
    assert_eq!(p.metadata.generation, Some(1));
    let got = cms.get("a").await.unwrap();
    assert_eq!(got.metadata.uid, a.metadata.uid);
    let list = cms.list(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 2);
    assert_eq!(list.metadata.resource_version.as_deref(), Some("3"));
}

#[tokio::test]
async fn generation_bumps_only_on_spec_change_and_status_is_separate() {
    let server = TestServer::start().await.unwrap();
    let pods: Api<Pod> = Api::namespaced(server.client().unwrap(), "ns-1");
    let p: Pod = serde_json::from_value(bench_pod(1)).unwrap();
    let p = pods.create(&PostParams::default(), &p).await.unwrap();
    let labelled = pods
        .patch(
            "pod-1",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
        )
        .await
        .unwrap();
    assert_eq!(labelled.metadata.generation, Some(1));
    assert!(rv(&labelled) > rv(&p));
    let spec = pods
        .patch(
            "pod-1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"nodeName": "n1"}})),
        )
        .await
        .unwrap();
    assert_eq!(spec.metadata.generation, Some(2));
    // A status write through the main resource is ignored; through /status it lands.
    let ignored = pods
        .patch(
            "pod-1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Running"}})),
        )
        .await
        .unwrap();
    assert!(ignored.status.is_none_or(|s| s.phase.is_none()));
    let st = pods
        .patch_status(
            "pod-1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Running"}})),
        )
        .await
        .unwrap();
    assert_eq!(st.status.unwrap().phase.as_deref(), Some("Running"));
    assert_eq!(st.metadata.generation, Some(2));
}

#[tokio::test]
async fn stale_update_is_a_409_conflict() {
    let server = TestServer::start().await.unwrap();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client().unwrap());
    let a = cms.create(&PostParams::default(), &cm("a")).await.unwrap();
    let mut a1 = a.clone();
    a1.data = Some([("k".to_string(), "v1".to_string())].into());
    cms.replace("a", &PostParams::default(), &a1).await.unwrap();
    let mut a2 = a.clone();
    a2.data = Some([("k".to_string(), "v2".to_string())].into());
    let err = cms
        .replace("a", &PostParams::default(), &a2)
        .await
        .unwrap_err();
    match err {
        kube::Error::Api(s) => {
            assert_eq!(s.code, 409);
            assert_eq!(s.reason, "Conflict");
        }
        e => panic!("unexpected {e:?}"),
    }
    let dup = cms
        .create(&PostParams::default(), &cm("a"))
        .await
        .unwrap_err();
    assert!(matches!(dup, kube::Error::Api(s) if s.code == 409 && s.reason == "AlreadyExists"));
    let missing = cms.get("nope").await.unwrap_err();
    assert!(matches!(missing, kube::Error::Api(s) if s.code == 404 && s.reason == "NotFound"));
}

#[tokio::test]
async fn generate_name_and_json_patch_work() {
    let server = TestServer::start().await.unwrap();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client().unwrap());
    let o: ConfigMap =
        serde_json::from_value(json!({"metadata": {"generateName": "gen-"}})).unwrap();
    let c = cms.create(&PostParams::default(), &o).await.unwrap();
    let name = c.metadata.name.unwrap();
    assert!(name.starts_with("gen-") && name.len() == 9, "{name}");
    let p: json_patch_ops::Patch =
        serde_json::from_value(json!([{"op": "add", "path": "/data", "value": {"a": "b"}}]))
            .unwrap();
    let patched = cms
        .patch(&name, &PatchParams::default(), &Patch::<()>::Json(p))
        .await
        .unwrap();
    assert_eq!(patched.data.unwrap()["a"], "b");
}

mod json_patch_ops {
    pub use json_patch::Patch;
}

#[tokio::test]
async fn finalizers_delay_deletion_until_removed() {
    let server = TestServer::start().await.unwrap();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client().unwrap());
    let mut o = cm("f");
    o.metadata.finalizers = Some(vec!["example.com/keep".into()]);
    cms.create(&PostParams::default(), &o).await.unwrap();
    let deleted = cms.delete("f", &DeleteParams::default()).await.unwrap();
    let still = deleted.left().expect("object returned");
    assert!(still.metadata.deletion_timestamp.is_some());
    assert!(cms.get("f").await.is_ok());
    cms.patch(
        "f",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert!(matches!(cms.get("f").await, Err(kube::Error::Api(s)) if s.code == 404));
}

#[tokio::test]
async fn paged_list_is_consistent_at_its_revision() {
    let server = TestServer::start().await.unwrap();
    kinformer_apiserver::seed_bench_pods(server.store(), 25).unwrap();
    let pods: Api<Pod> = Api::all(server.client().unwrap());
    let first = pods.list(&ListParams::default().limit(10)).await.unwrap();
    assert_eq!(first.items.len(), 10);
    let rv0 = first.metadata.resource_version.clone().unwrap();
    // Writes after the first page are invisible to the rest of the list.
    server.store().delete("pods", "ns-20", "pod-20").unwrap();
    server.store().create("pods", "", bench_pod(99)).unwrap();
    let mut names: Vec<String> = first
        .items
        .iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect();
    let mut token = first.metadata.continue_.clone();
    while let Some(t) = token.filter(|t| !t.is_empty()) {
        let page = pods
            .list(&ListParams::default().limit(10).continue_token(&t))
            .await
            .unwrap();
        assert_eq!(
            page.metadata.resource_version.as_deref(),
            Some(rv0.as_str())
        );
        names.extend(page.items.iter().map(|p| p.metadata.name.clone().unwrap()));
        token = page.metadata.continue_;
    }
    assert_eq!(names.len(), 25);
    assert!(names.contains(&"pod-20".to_string()));
    assert!(!names.contains(&"pod-99".to_string()));
}

#[tokio::test]
async fn compaction_expires_continue_tokens_and_exact_lists() {
    let server = TestServer::start().await.unwrap();
    kinformer_apiserver::seed_bench_pods(server.store(), 5).unwrap();
    let pods: Api<Pod> = Api::all(server.client().unwrap());
    let first = pods.list(&ListParams::default().limit(2)).await.unwrap();
    server.store().create("pods", "", bench_pod(7)).unwrap();
    server.faults().inject(Fault::Compact);
    let t = first.metadata.continue_.unwrap();
    let err = pods
        .list(&ListParams::default().limit(2).continue_token(&t))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 410 && s.reason == "Expired" && s.message.contains("continue parameter is too old")),
        "{err:?}"
    );
    let exact = pods
        .list(
            &ListParams::default()
                .at("3")
                .matching(kube::api::VersionMatch::Exact),
        )
        .await
        .unwrap_err();
    assert!(matches!(exact, kube::Error::Api(s) if s.code == 410));
    assert_eq!(server.faults().counts().get("compact"), Some(&1));
}

#[tokio::test]
async fn exact_list_reads_the_past_and_future_versions_time_out() {
    let server = TestServer::start().await.unwrap();
    kinformer_apiserver::seed_bench_pods(server.store(), 3).unwrap();
    server.store().delete("pods", "ns-1", "pod-1").unwrap();
    let pods: Api<Pod> = Api::all(server.client_without_retries().unwrap());
    let past = pods
        .list(
            &ListParams::default()
                .at("2")
                .matching(kube::api::VersionMatch::Exact),
        )
        .await
        .unwrap();
    assert_eq!(past.items.len(), 2);
    assert_eq!(past.metadata.resource_version.as_deref(), Some("2"));
    let now = pods
        .list(
            &ListParams::default()
                .at("2")
                .matching(kube::api::VersionMatch::NotOlderThan),
        )
        .await
        .unwrap();
    assert_eq!(now.items.len(), 2);
    assert_eq!(now.metadata.resource_version.as_deref(), Some("4"));
    let err = pods
        .list(
            &ListParams::default()
                .at("100")
                .matching(kube::api::VersionMatch::NotOlderThan),
        )
        .await
        .unwrap_err();
    match err {
        kube::Error::Api(s) => {
            assert_eq!(s.code, 504);
            assert!(
                s.details
                    .unwrap()
                    .causes
                    .iter()
                    .any(|c| c.reason == "ResourceVersionTooLarge")
            );
        }
        e => panic!("{e:?}"),
    }
}

#[tokio::test]
async fn label_and_field_selectors_filter_lists() {
    let server = TestServer::start().await.unwrap();
    kinformer_apiserver::seed_bench_pods(server.store(), 30).unwrap();
    let pods: Api<Pod> = Api::all(server.client().unwrap());
    let count = |lp: ListParams| {
        let pods = pods.clone();
        async move { pods.list(&lp).await.unwrap().items.len() }
    };
    assert_eq!(count(ListParams::default().labels("tier=t0")).await, 10);
    assert_eq!(count(ListParams::default().labels("tier==t0")).await, 10);
    assert_eq!(count(ListParams::default().labels("tier!=t0")).await, 20);
    assert_eq!(
        count(ListParams::default().labels("tier in (t0,t1)")).await,
        20
    );
    assert_eq!(
        count(ListParams::default().labels("tier notin (t0,t1)")).await,
        10
    );
    assert_eq!(count(ListParams::default().labels("app")).await, 30);
    assert_eq!(count(ListParams::default().labels("!app")).await, 0);
    assert_eq!(
        count(ListParams::default().labels("app=a3,tier=t0")).await,
        1
    );
    assert_eq!(
        count(ListParams::default().fields("metadata.name=pod-4")).await,
        1
    );
    assert_eq!(
        count(ListParams::default().fields("metadata.namespace!=ns-4")).await,
        29
    );
    assert_eq!(
        count(ListParams::default().labels("tier=t1").limit(3)).await,
        3
    );
    let ns: Api<Pod> = Api::namespaced(server.client().unwrap(), "ns-4");
    assert_eq!(
        ns.list(&ListParams::default()).await.unwrap().items.len(),
        1
    );
    let bad = pods
        .list(&ListParams::default().labels("a in b"))
        .await
        .unwrap_err();
    assert!(matches!(bad, kube::Error::Api(s) if s.code == 400));
}

#[tokio::test]
async fn watch_replays_history_in_order_then_goes_live() {
    let server = TestServer::start().await.unwrap();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client().unwrap());
    let a = cms.create(&PostParams::default(), &cm("a")).await.unwrap();
    cms.create(&PostParams::default(), &cm("b")).await.unwrap();
    cms.delete("b", &DeleteParams::default()).await.unwrap();
    let mut w = cms
        .watch(&WatchParams::default(), &rv(&a).to_string())
        .await
        .unwrap()
        .boxed();
    assert!(
        matches!(next(&mut w).await, WatchEvent::Added(o) if o.metadata.name.as_deref() == Some("b"))
    );
    match next(&mut w).await {
        WatchEvent::Deleted(o) => assert_eq!(rv(&o), 3),
        e => panic!("{e:?}"),
    }
    cms.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "z"}})),
    )
    .await
    .unwrap();
    match next(&mut w).await {
        WatchEvent::Modified(o) => assert_eq!(rv(&o), 4),
        e => panic!("{e:?}"),
    }
}

#[tokio::test]
async fn watch_chunks_show_whether_a_watcher_keeps_up_event_by_event() {
    let server = TestServer::start().await.unwrap();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client().unwrap());
    let first = cms
        .create(&PostParams::default(), &cm("first"))
        .await
        .unwrap();
    for i in 0..10 {
        cms.create(&PostParams::default(), &cm(&format!("behind-{i}")))
            .await
            .unwrap();
    }

    // A watcher that starts behind gets the history it missed in one chunk.
    let before = server.watch_chunks();
    let mut w = cms
        .watch(&WatchParams::default(), &rv(&first).to_string())
        .await
        .unwrap()
        .boxed();
    for _ in 0..10 {
        assert!(matches!(next(&mut w).await, WatchEvent::Added(_)));
    }
    let history = server.watch_chunks().since(&before);
    assert_eq!(history.chunks, 1, "{history:?}");
    assert_eq!(history.events_by_chunk_size, [0, 0, 10, 0]);

    // Then, each write waiting for the event of the one before: one event per chunk.
    let before = server.watch_chunks();
    for i in 0..5 {
        cms.create(&PostParams::default(), &cm(&format!("live-{i}")))
            .await
            .unwrap();
        assert!(matches!(next(&mut w).await, WatchEvent::Added(_)));
    }
    let live = server.watch_chunks().since(&before);
    assert_eq!(live.chunks, 5, "{live:?}");
    assert_eq!(live.events_by_chunk_size, [5, 0, 0, 0]);
    assert_eq!(server.watch_chunks().events(), 15);
}

#[tokio::test]
async fn watch_from_a_compacted_version_gets_a_410_error_event() {
    let server = TestServer::start().await.unwrap();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client().unwrap());
    cms.create(&PostParams::default(), &cm("a")).await.unwrap();
    cms.create(&PostParams::default(), &cm("b")).await.unwrap();
    server.store().compact(2);
    let mut w = cms
        .watch(&WatchParams::default(), "1")
        .await
        .unwrap()
        .boxed();
    match next(&mut w).await {
        WatchEvent::Error(e) => {
            assert_eq!(e.code, 410);
            assert_eq!(e.reason, "Expired");
        }
        e => panic!("{e:?}"),
    }
    assert!(w.next().await.is_none(), "stream must end after the error");
    // Watching from the compacted revision itself is fine: nothing after it is missing.
    let mut ok = cms
        .watch(&WatchParams::default(), "2")
        .await
        .unwrap()
        .boxed();
    cms.create(&PostParams::default(), &cm("c")).await.unwrap();
    assert!(matches!(next(&mut ok).await, WatchEvent::Added(_)));
}

#[tokio::test]
async fn selectors_apply_to_watches_and_leaving_is_deleted() {
    let server = TestServer::start().await.unwrap();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client().unwrap());
    let mut w = cms
        .watch(&WatchParams::default().labels("app=x"), "0")
        .await
        .unwrap()
        .boxed();
    cms.create(&PostParams::default(), &cm("a")).await.unwrap();
    let mut other = cm("o");
    other.metadata.labels = Some([("app".to_string(), "y".to_string())].into());
    cms.create(&PostParams::default(), &other).await.unwrap();
    assert!(
        matches!(next(&mut w).await, WatchEvent::Added(o) if o.metadata.name.as_deref() == Some("a"))
    );
    cms.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"app": "y"}}})),
    )
    .await
    .unwrap();
    assert!(
        matches!(next(&mut w).await, WatchEvent::Deleted(o) if o.metadata.name.as_deref() == Some("a"))
    );
    cms.patch(
        "o",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"app": "x"}}})),
    )
    .await
    .unwrap();
    assert!(
        matches!(next(&mut w).await, WatchEvent::Added(o) if o.metadata.name.as_deref() == Some("o"))
    );
}

#[tokio::test]
async fn bookmarks_carry_the_current_revision() {
    let server = TestServer::start().await.unwrap();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client().unwrap());
    let pods: Api<Pod> = Api::namespaced(server.client().unwrap(), "ns-1");
    cms.create(&PostParams::default(), &cm("a")).await.unwrap();
    let mut w = cms
        .watch(&WatchParams::default(), "1")
        .await
        .unwrap()
        .boxed();
    // Writes to another resource advance the revision the bookmark reports.
    let p: Pod = serde_json::from_value(bench_pod(1)).unwrap();
    pods.create(&PostParams::default(), &p).await.unwrap();
    match next(&mut w).await {
        WatchEvent::Bookmark(b) => assert_eq!(b.metadata.resource_version, "2"),
        e => panic!("{e:?}"),
    }
}

#[tokio::test]
async fn watch_timeout_closes_the_stream_cleanly() {
    let server = TestServer::start().await.unwrap();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client().unwrap());
    let mut w = cms
        .watch(&WatchParams::default().timeout(1), "0")
        .await
        .unwrap()
        .boxed();
    // Only bookmarks (kube asks for them) until the server ends the stream after 1 s.
    let started = std::time::Instant::now();
    while let Some(e) = tokio::time::timeout(Duration::from_secs(5), w.next())
        .await
        .unwrap()
    {
        assert!(matches!(e, Ok(WatchEvent::Bookmark(_))), "{e:?}");
    }
    assert!(started.elapsed() >= Duration::from_millis(900));
}

#[tokio::test]
async fn streaming_list_sends_initial_events_then_an_end_bookmark() {
    let server = TestServer::start().await.unwrap();
    kinformer_apiserver::seed_bench_pods(server.store(), 3).unwrap();
    let pods: Api<Pod> = Api::all(server.client().unwrap());
    let mut w = pods
        .watch(&WatchParams::default().initial_events(), "")
        .await
        .unwrap()
        .boxed();
    for _ in 0..3 {
        assert!(matches!(next(&mut w).await, WatchEvent::Added(_)));
    }
    match next(&mut w).await {
        WatchEvent::Bookmark(b) => {
            assert_eq!(b.metadata.resource_version, "3");
            assert_eq!(
                b.metadata
                    .annotations
                    .get("k8s.io/initial-events-end")
                    .map(String::as_str),
                Some("true")
            );
        }
        e => panic!("{e:?}"),
    }
    server.store().delete("pods", "ns-0", "pod-0").unwrap();
    assert!(matches!(next(&mut w).await, WatchEvent::Deleted(_)));
}

#[tokio::test]
async fn injected_faults_reach_the_client_and_are_counted() {
    let server = TestServer::start().await.unwrap();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client_without_retries().unwrap());
    server.faults().inject(Fault::TooManyRequests {
        retry_after_secs: 1,
    });
    let e = cms.list(&ListParams::default()).await.unwrap_err();
    assert!(matches!(e, kube::Error::Api(s) if s.code == 429));
    // The default client retries a 429 after Retry-After and succeeds.
    server
        .faults()
        .add_rule(kinformer_apiserver::FaultRule::once(
            Fault::TooManyRequests {
                retry_after_secs: 0,
            },
        ));
    let retrying: Api<ConfigMap> = Api::default_namespaced(server.client().unwrap());
    retrying.list(&ListParams::default()).await.unwrap();
    server.faults().inject(Fault::InternalError);
    let e = cms.get("x").await.unwrap_err();
    assert!(matches!(e, kube::Error::Api(s) if s.code == 500));
    server.faults().inject(Fault::WatchGone);
    let mut w = cms
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    assert!(matches!(next(&mut w).await, WatchEvent::Error(e) if e.code == 410));
    server
        .faults()
        .inject(Fault::CloseWatch { after_events: 1 });
    let mut w = cms
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    cms.create(&PostParams::default(), &cm("a")).await.unwrap();
    cms.create(&PostParams::default(), &cm("b")).await.unwrap();
    assert!(matches!(next(&mut w).await, WatchEvent::Added(_)));
    assert!(
        tokio::time::timeout(Duration::from_secs(5), w.next())
            .await
            .unwrap()
            .is_none()
    );
    let counts = server.faults().counts();
    assert_eq!(counts.get("429"), Some(&2));
    assert_eq!(counts.get("500"), Some(&1));
    assert_eq!(counts.get("watch-gone"), Some(&1));
    assert_eq!(counts.get("close-watch"), Some(&1));
    assert_eq!(server.faults().injected().len(), 5);
}

#[tokio::test]
async fn watch_without_a_version_starts_with_synthetic_adds_as_kube_apiserver_does() {
    let server = TestServer::start().await.unwrap();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client().unwrap());
    cms.create(&PostParams::default(), &cm("old"))
        .await
        .unwrap();
    for rv in ["0", ""] {
        let mut w = cms
            .watch(&WatchParams::default().disable_bookmarks(), rv)
            .await
            .unwrap()
            .boxed();
        assert!(
            matches!(next(&mut w).await, WatchEvent::Added(o) if o.metadata.name.as_deref() == Some("old"))
        );
    }
}

#[tokio::test]
async fn namespaced_watches_only_see_their_namespace_and_deletecollection_works() {
    let server = TestServer::start().await.unwrap();
    let client = server.client().unwrap();
    let ns1: Api<Pod> = Api::namespaced(client.clone(), "ns-1");
    let mut w = ns1
        .watch(&WatchParams::default().disable_bookmarks(), "0")
        .await
        .unwrap()
        .boxed();
    kinformer_apiserver::seed_bench_pods(server.store(), 3).unwrap();
    assert!(
        matches!(next(&mut w).await, WatchEvent::Added(o) if o.metadata.name.as_deref() == Some("pod-1"))
    );
    server.store().create("pods", "", bench_pod(101)).unwrap();
    assert!(
        matches!(next(&mut w).await, WatchEvent::Added(o) if o.metadata.name.as_deref() == Some("pod-101"))
    );
    let gone = ns1
        .delete_collection(&DeleteParams::default(), &ListParams::default())
        .await
        .unwrap();
    assert_eq!(gone.left().map(|l| l.items.len()), Some(2));
    assert_eq!(server.store().len("pods").unwrap(), 2);
    assert!(matches!(next(&mut w).await, WatchEvent::Deleted(_)));
    assert!(matches!(next(&mut w).await, WatchEvent::Deleted(_)));
}
