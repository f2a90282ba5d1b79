//! `SharedIndexInformer::watcher_stream`: kube-runtime's watcher events from a kinformer
//! informer over the embedded API server, `Init` … `InitDone` included, and a kube-runtime
//! `Controller` that reconciles every object through it.

#![cfg(feature = "kube-runtime")]
#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kinformer::cache::{InformerOptions, SharedIndexInformer};
use kinformer::kube::KubeListerWatcher;
use kinformer_apiserver::ApiServer;
use kube::Api;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher::Event;
use kube::runtime::{WatchStreamExt, reflector};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::time::timeout;
use tokio_util::sync::CancellationToken;

const LIMIT: Duration = Duration::from_secs(20);

fn cm(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
}

fn describe(e: &Event<ConfigMap>) -> String {
    let name = |o: &ConfigMap| o.metadata.name.clone().unwrap_or_default();
    match e {
        Event::Init => "init".into(),
        Event::InitApply(o) => format!("init-apply {}", name(o)),
        Event::InitDone => "init-done".into(),
        Event::Apply(o) => format!("apply {}", name(o)),
        Event::Delete(o) => format!("delete {}", name(o)),
    }
}

fn informer(server: &ApiServer, ns: &str) -> SharedIndexInformer<ConfigMap> {
    let api: Api<ConfigMap> = Api::namespaced(server.client().unwrap(), ns);
    SharedIndexInformer::new(KubeListerWatcher::new(api), InformerOptions::new(ns))
}

#[tokio::test]
async fn an_empty_list_still_ends_with_init_done() {
    let server = ApiServer::start().await.unwrap();
    let informer = informer(&server, "empty");
    let mut events = Box::pin(informer.watcher_stream(16).unwrap());
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (i, c) = (informer.clone(), cancel.clone());
        async move { i.run(c).await }
    });
    let mut seen = Vec::new();
    for _ in 0..2 {
        let e = timeout(LIMIT, events.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        seen.push(describe(&e));
    }
    assert_eq!(
        seen,
        ["init", "init-done"],
        "InitDone without any later event"
    );
    cancel.cancel();
    run.await.unwrap().unwrap();
}

#[tokio::test]
async fn the_list_then_the_watch_as_watcher_events() {
    let server = ApiServer::start().await.unwrap();
    let ns = "events";
    for n in ["a", "b", "c"] {
        server.store().create("configmaps", ns, cm(n)).unwrap();
    }
    let informer = informer(&server, ns);
    let mut events = Box::pin(informer.watcher_stream(2).unwrap()); // smaller than the list
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (i, c) = (informer.clone(), cancel.clone());
        async move { i.run(c).await }
    });
    let mut next = async || {
        describe(
            &timeout(LIMIT, events.next())
                .await
                .unwrap()
                .unwrap()
                .unwrap(),
        )
    };
    assert_eq!(next().await, "init");
    let mut initial = BTreeSet::new();
    for _ in 0..3 {
        initial.insert(next().await);
    }
    assert_eq!(
        initial,
        ["init-apply a", "init-apply b", "init-apply c"]
            .map(String::from)
            .into()
    );
    assert_eq!(next().await, "init-done");
    server.store().create("configmaps", ns, cm("d")).unwrap();
    assert_eq!(next().await, "apply d");
    server.store().delete("configmaps", ns, "a").unwrap();
    assert_eq!(next().await, "delete a");
    cancel.cancel();
    run.await.unwrap().unwrap();
}

#[derive(Debug, thiserror::Error)]
#[error("never returned")]
struct Never;

#[tokio::test]
async fn a_kube_runtime_controller_reconciles_every_object_of_a_kinformer_informer() {
    const N: usize = 30;
    let server = ApiServer::start().await.unwrap();
    let ns = "controller";
    for i in 0..N {
        server
            .store()
            .create("configmaps", ns, cm(&format!("cm-{i}")))
            .unwrap();
    }
    let informer = informer(&server, ns);
    let events = informer.watcher_stream(64).unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (i, c) = (informer.clone(), cancel.clone());
        async move { i.run(c).await }
    });
    let (reader, writer) = reflector::store();
    let seen = Arc::new(Mutex::new(BTreeSet::new()));
    let all_seen = CancellationToken::new();
    let ctx = Arc::new((Arc::clone(&seen), all_seen.clone()));
    let reconcile =
        |cm: Arc<ConfigMap>, ctx: Arc<(Arc<Mutex<BTreeSet<String>>>, CancellationToken)>| async move {
            let mut seen = ctx.0.lock();
            seen.insert(cm.metadata.name.clone().unwrap_or_default());
            if seen.len() == N {
                ctx.1.cancel();
            }
            Ok::<_, Never>(Action::await_change())
        };
    let controller = Controller::for_stream(reflector(writer, events).applied_objects(), reader)
        .graceful_shutdown_on({
            let all_seen = all_seen.clone();
            async move { all_seen.cancelled().await }
        })
        .run(
            reconcile,
            |_, _: &Never, _| Action::requeue(Duration::from_secs(1)),
            ctx,
        )
        .for_each(|_| async {});
    timeout(LIMIT, controller).await.unwrap();
    assert_eq!(seen.lock().len(), N, "every ConfigMap reconciled");
    cancel.cancel();
    run.await.unwrap().unwrap();
}
