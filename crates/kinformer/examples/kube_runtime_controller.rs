//! A kube-runtime `Controller` running on a kinformer informer.
//!
//! ```text
//! cargo run -p kinformer --features kube-runtime --example kube_runtime_controller
//! # (`Controller::for_stream` is kube-runtime's `unstable-runtime` API; the example enables it)
//! ```
//!
//! The informer lists and watches ConfigMaps of the embedded API server (kinformer's
//! reflector: paging, resourceVersion rules, 410 → relist, backoff, protobuf where the server
//! offers it); [`SharedIndexInformer::watcher_stream`] turns its notifications into the
//! `watcher::Event`s kube-runtime's `reflector` and `Controller` consume, `Init` … `InitDone`
//! included. The controller reconciles every ConfigMap once, then the program checks that
//! each was reconciled and exits 0 (1 if not, within 30 s).

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
use kube::runtime::{WatchStreamExt, reflector};
use parking_lot::Mutex;
use serde_json::json;
use tokio_util::sync::CancellationToken;

type Error = Box<dyn std::error::Error + Send + Sync>;

const CONFIGMAPS: usize = 20;

/// What the reconciler shares: the names it has seen, and the signal to stop.
struct Context {
    reconciled: Mutex<BTreeSet<String>>,
    done: CancellationToken,
}

#[derive(Debug, thiserror::Error)]
#[error("never returned")]
struct Never;

async fn reconcile(cm: Arc<ConfigMap>, ctx: Arc<Context>) -> Result<Action, Never> {
    let mut seen = ctx.reconciled.lock();
    seen.insert(cm.metadata.name.clone().unwrap_or_default());
    if seen.len() == CONFIGMAPS {
        ctx.done.cancel();
    }
    Ok(Action::await_change())
}

fn error_policy(_: Arc<ConfigMap>, _: &Never, _: Arc<Context>) -> Action {
    Action::requeue(Duration::from_secs(1))
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let server = ApiServer::start().await?;
    for i in 0..CONFIGMAPS {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("cm-{i}")}});
        server.store().create("configmaps", "default", cm)?;
    }
    let api: Api<ConfigMap> = Api::namespaced(server.client()?, "default");
    let informer = SharedIndexInformer::new(
        KubeListerWatcher::new(api),
        InformerOptions::new("configmaps"),
    );
    let events = informer.watcher_stream(1024)?;

    let stop = CancellationToken::new();
    let run = tokio::spawn({
        let (informer, stop) = (informer.clone(), stop.clone());
        async move { informer.run(stop).await }
    });

    let (reader, writer) = reflector::store();
    let objects = reflector(writer, events).applied_objects();
    let ctx = Arc::new(Context {
        reconciled: Mutex::new(BTreeSet::new()),
        done: CancellationToken::new(),
    });
    let done = ctx.done.clone();
    let controller = Controller::for_stream(objects, reader)
        .graceful_shutdown_on(async move { done.cancelled().await })
        .run(reconcile, error_policy, Arc::clone(&ctx))
        .for_each(|_| async {});
    let finished = tokio::time::timeout(Duration::from_secs(30), controller).await;

    stop.cancel();
    run.await??;
    let reconciled = ctx.reconciled.lock().len();
    println!(
        "kube-runtime Controller on a kinformer informer: {reconciled}/{CONFIGMAPS} ConfigMaps reconciled"
    );
    if finished.is_err() || reconciled != CONFIGMAPS {
        std::process::exit(1);
    }
    Ok(())
}
