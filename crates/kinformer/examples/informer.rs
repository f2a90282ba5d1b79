//! A shared informer in a few lines: list & watch config maps, react to changes, read the
//! cache. The source is the in-memory `FakeListerWatcher`; against a cluster, build the
//! informer over `kinformer::kube::KubeListerWatcher::new(Api::<ConfigMap>::all(client))`
//! instead (or take it from a `SharedInformerFactory`).
//!
//! Run: `cargo run -p kinformer --example informer`

use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kinformer::cache::testing::FakeListerWatcher;
use kinformer::cache::{
    DeletedObject, HasSynced, InformerOptions, ResourceEventHandlerFuncs, Selector,
    SharedIndexInformer,
};
use kube_core::ObjectMeta;
use tokio_util::sync::CancellationToken;

fn config_map(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let source = FakeListerWatcher::new();
    source.add(config_map("settings"))?;

    let informer = SharedIndexInformer::new(source.clone(), InformerOptions::new("configmaps"));
    let (deleted_tx, mut deleted) = tokio::sync::mpsc::unbounded_channel();
    let handler = ResourceEventHandlerFuncs::<ConfigMap>::new()
        .on_add(|cm: &Arc<ConfigMap>, initial| {
            println!("add    {:?} (initial list: {initial})", cm.metadata.name);
        })
        .on_update(|_old: &Arc<ConfigMap>, new: &Arc<ConfigMap>| {
            println!("update {:?}", new.metadata.name);
        })
        .on_delete(move |obj: &DeletedObject<ConfigMap>| {
            println!(
                "delete {}",
                obj.object().metadata.name.clone().unwrap_or_default()
            );
            let _ = deleted_tx.send(());
        });
    let registration = informer.add_event_handler(handler)?;

    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });
    registration.wait_synced().await;
    println!("synced: {} object(s) cached", informer.get_indexer().len());

    source.add(config_map("feature-flags"))?;
    source.update(config_map("settings"))?;
    source.delete("default/feature-flags");
    deleted.recv().await; // the handler saw the last change

    let names: Vec<_> = informer
        .lister()
        .namespaced("default")
        .list(&Selector::everything())
        .iter()
        .filter_map(|cm| cm.metadata.name.clone())
        .collect();
    println!("cache now holds: {names:?}");

    cancel.cancel();
    run.await??;
    Ok(())
}
