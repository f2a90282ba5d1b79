//! SharedInformerFactory: sharing, incremental start, sync waiting, shutdown.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kinformer::cache::listwatch::{
    ListOptions, ListWatchError, ListerWatcher, ObjectList, WatchOptions, WatchStream,
};
use kinformer::cache::testing::FakeListerWatcher;
use kinformer::cache::{
    HasSynced, SharedIndexInformer, SharedInformerFactory, wait_for_cache_sync_timeout,
};
use kube_core::ObjectMeta;
use tokio_util::sync::CancellationToken;

fn cm(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ns".into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// A source that never answers: its informer never syncs.
#[derive(Debug, Clone, Copy)]
struct Silent;

impl ListerWatcher<Secret> for Silent {
    fn list(
        &self,
        _: &ListOptions,
    ) -> impl Future<Output = Result<ObjectList<Secret>, ListWatchError>> + Send {
        futures::future::pending()
    }
    fn watch(
        &self,
        _: &WatchOptions,
    ) -> impl Future<Output = Result<WatchStream<Secret>, ListWatchError>> + Send {
        futures::future::pending()
    }
}

#[tokio::test(start_paused = true)]
async fn the_same_type_and_resource_share_one_informer() {
    let factory =
        SharedInformerFactory::without_client().with_default_resync(Duration::from_secs(5));
    let lw = FakeListerWatcher::<ConfigMap>::new();
    let mut made = 0;
    let a = factory.informer_for("configmaps", |o| {
        made += 1;
        assert_eq!(o.resync_period, Duration::from_secs(5));
        SharedIndexInformer::new(lw.clone(), o)
    });
    let b = factory.informer_for("configmaps", |o| {
        made += 1;
        SharedIndexInformer::new(lw.clone(), o)
    });
    let c = factory.informer_for("other-configmaps", |o| {
        SharedIndexInformer::new(lw.clone(), o)
    });
    assert_eq!(made, 1);
    assert!(a.ptr_eq(&b));
    assert!(!a.ptr_eq(&c));
    assert_eq!(factory.informer_names(), ["configmaps", "other-configmaps"]);
}

#[tokio::test(start_paused = true)]
async fn start_is_incremental_and_wait_reports_each_started_informer() {
    let factory = SharedInformerFactory::without_client();
    let lw = FakeListerWatcher::<ConfigMap>::new();
    lw.add(cm("a")).unwrap();
    let first = factory.informer_for("configmaps", |o| SharedIndexInformer::new(lw.clone(), o));
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    let second = factory.informer_for("configmaps-2", |o| SharedIndexInformer::new(lw.clone(), o));
    let synced = factory.wait_for_cache_sync(&cancel).await;
    assert_eq!(
        synced.into_iter().collect::<Vec<_>>(),
        [("configmaps".to_string(), true)]
    );
    assert!(first.has_synced());
    assert!(
        !second.is_started(),
        "created after start: waits for the next start"
    );
    factory.start(&cancel);
    let synced = factory.wait_for_cache_sync(&cancel).await;
    assert_eq!(synced.len(), 2);
    assert!(synced.values().all(|s| *s));
    assert_eq!(second.get_indexer().len(), 1);
    factory.shutdown().await;
    assert!(first.is_stopped() && second.is_stopped());
    assert_eq!(first.running_listener_tasks(), 0);
}

#[tokio::test(start_paused = true)]
async fn wait_for_cache_sync_gives_up_when_cancelled() {
    let factory = SharedInformerFactory::without_client();
    let lw = FakeListerWatcher::<ConfigMap>::new();
    factory.informer_for("configmaps", |o| SharedIndexInformer::new(lw.clone(), o));
    let silent = factory.informer_for("secrets", |o| SharedIndexInformer::new(Silent, o));
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    let waiter = tokio::spawn({
        let cancel = cancel.clone();
        let factory = std::sync::Arc::new(factory);
        let f = std::sync::Arc::clone(&factory);
        async move { (f.wait_for_cache_sync(&cancel).await, factory) }
    });
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert!(!waiter.is_finished(), "the silent informer never syncs");
    cancel.cancel();
    let (synced, factory) = waiter.await.unwrap();
    assert!(synced["configmaps"]);
    assert!(!synced["secrets"]);
    // Cancelling the start token stops every informer; shutdown then returns at once.
    factory.shutdown().await;
    assert!(silent.is_stopped());
}

#[tokio::test(start_paused = true)]
async fn nothing_starts_after_shutdown() {
    let factory = SharedInformerFactory::without_client();
    let lw = FakeListerWatcher::<ConfigMap>::new();
    factory.shutdown().await;
    let late = factory.informer_for("configmaps", |o| SharedIndexInformer::new(lw.clone(), o));
    factory.start(&CancellationToken::new());
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!late.is_started());
}

#[cfg(feature = "kube")]
mod over_kube {
    use k8s_openapi::api::core::v1::{Node, Pod};
    use kinformer::cache::SharedInformerFactory;
    use kinformer::cache::listwatch::Selectors;
    use kube_core::{ApiResource, GroupVersionKind};

    fn client() -> kube::Client {
        let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
        kube::Client::try_from(config).unwrap()
    }

    #[tokio::test]
    async fn typed_dynamic_and_metadata_informers_are_keyed_by_type_url_and_selectors() {
        let factory = SharedInformerFactory::new(client())
            .with_namespace("prod")
            .with_selectors(Selectors {
                label_selector: Some("app=web".into()),
                field_selector: None,
            });
        let pods = factory.informer::<Pod>();
        assert!(pods.ptr_eq(&factory.informer::<Pod>()));
        let nodes = factory.informer::<Node>();
        let meta = factory.metadata_informer::<Pod>();
        let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("apps", "v1", "Deployment"));
        let deployments = factory.dynamic_informer(&ar);
        assert_eq!(pods.name(), "/api/v1/namespaces/prod/pods labels=app=web");
        assert_eq!(
            nodes.name(),
            "/api/v1/nodes labels=app=web",
            "cluster-scoped: no namespace"
        );
        assert_eq!(meta.name(), pods.name(), "same URL, but its own informer");
        assert_eq!(factory.informer_names().len(), 4);
        assert_eq!(
            deployments.name(),
            "/apis/apps/v1/namespaces/prod/deployments labels=app=web"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_bounded_wait_names_the_unsynced_informers_and_their_last_error() {
    let factory = SharedInformerFactory::without_client();
    let ok = FakeListerWatcher::<ConfigMap>::new();
    let failing = FakeListerWatcher::<ConfigMap>::new();
    for _ in 0..100 {
        failing.push_list_error(ListWatchError::InvalidRequest(
            "connection refused by http://127.0.0.1:1".into(),
        ));
    }
    factory.informer_for("configmaps", |o| SharedIndexInformer::new(ok.clone(), o));
    // List + watch (no watch-list), so that every start is a list that fails.
    let bad = factory.informer_for("failing-configmaps", |o| {
        SharedIndexInformer::new(failing.clone(), o.with_watch_list(false))
    });
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    let err = factory
        .wait_for_cache_sync_timeout(Duration::from_secs(10))
        .await
        .unwrap_err();
    assert_eq!(err.unsynced, ["failing-configmaps"]);
    let last = err.last_error.as_deref().unwrap();
    assert!(last.contains("http://127.0.0.1:1"), "{last}");
    assert!(
        err.to_string()
            .contains("failing-configmaps not synced after 10s")
    );
    assert_eq!(bad.last_error().as_deref(), Some(last));
    // The free function reports the same for any sources.
    let err = wait_for_cache_sync_timeout(Duration::from_secs(1), &[&bad])
        .await
        .unwrap_err();
    assert_eq!((err.unsynced.len(), err.last_error.is_some()), (1, true));
    factory.shutdown().await;
}
