//! Custom and cluster-scoped resources through `DynamicObject`, and discovery.
// Helpers outside #[test] functions fail the test by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures::StreamExt;
use kinformer_apiserver::{ResourceDef, ServerConfig, TestServer};
use kube::api::{Api, ApiResource, DynamicObject, ListParams, PostParams, WatchEvent, WatchParams};
use kube::discovery::Discovery;
use serde_json::json;

fn widget_def() -> ResourceDef {
    ResourceDef::new("example.com", "v1", "widgets", "Widget", true).with_short_names(&["wd"])
}

#[tokio::test]
async fn custom_resources_are_served_through_dynamic_objects() {
    let server = TestServer::start_with(ServerConfig::for_tests().with_resource(widget_def()))
        .await
        .unwrap();
    let ar = ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk("example.com", "v1", "Widget"),
        "widgets",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(server.client().unwrap(), "team-a", &ar);
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w1"}, "spec": {"size": 3}
    }))
    .unwrap();
    let created = api.create(&PostParams::default(), &obj).await.unwrap();
    assert_eq!(created.metadata.namespace.as_deref(), Some("team-a"));
    assert_eq!(created.data["spec"]["size"], 3);
    let mut w = api
        .watch(&WatchParams::default().disable_bookmarks(), "0")
        .await
        .unwrap()
        .boxed();
    assert!(
        matches!(w.next().await, Some(Ok(WatchEvent::Added(o))) if o.metadata.name.as_deref() == Some("w1"))
    );
    let (_, state) = server.store().state("widgets.example.com").unwrap();
    assert_eq!(state.len(), 1);
    assert_eq!(state[0]["kind"], "Widget");
}

#[tokio::test]
async fn resources_registered_after_start_are_served() {
    let server = TestServer::start().await.unwrap();
    server.store().register(ResourceDef::new(
        "example.com",
        "v1",
        "gadgets",
        "Gadget",
        false,
    ));
    server
        .store()
        .create(
            "gadgets.example.com",
            "",
            json!({"metadata": {"name": "g", "namespace": "ignored"}}),
        )
        .unwrap();
    let ar = ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk("example.com", "v1", "Gadget"),
        "gadgets",
    );
    let api: Api<DynamicObject> = Api::all_with(server.client().unwrap(), &ar);
    let list = api.list(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 1);
    assert_eq!(
        list.items[0].metadata.namespace, None,
        "cluster-scoped objects have no namespace"
    );
}

#[tokio::test]
async fn cluster_scoped_namespaces_and_typed_helpers_work() {
    use k8s_openapi::api::core::v1::Namespace;
    let server = TestServer::start().await.unwrap();
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "team-b"}})).unwrap();
    let created = server.store().create_typed(&ns).unwrap();
    assert_eq!(created.metadata.resource_version.as_deref(), Some("1"));
    let api: Api<Namespace> = Api::all(server.client().unwrap());
    assert_eq!(
        api.get("team-b").await.unwrap().metadata.uid,
        created.metadata.uid
    );
    assert_eq!(server.store().list_typed::<Namespace>().unwrap().len(), 1);
    server
        .store()
        .delete_typed::<Namespace>("", "team-b")
        .unwrap();
    assert!(server.store().list_typed::<Namespace>().unwrap().is_empty());
}

#[tokio::test]
async fn kube_discovery_finds_builtin_and_custom_groups() {
    let server = TestServer::start_with(ServerConfig::for_tests().with_resource(widget_def()))
        .await
        .unwrap();
    let d = Discovery::new(server.client().unwrap())
        .run()
        .await
        .unwrap();
    let groups: Vec<String> = d.groups().map(|g| g.name().to_string()).collect();
    for g in ["", "apps", "coordination.k8s.io", "example.com"] {
        assert!(groups.iter().any(|x| x == g), "{g} missing from {groups:?}");
    }
    let (ar, caps) = d
        .resolve_gvk(&kube::api::GroupVersionKind::gvk(
            "apps",
            "v1",
            "Deployment",
        ))
        .unwrap();
    assert_eq!(ar.plural, "deployments");
    assert_eq!(caps.scope, kube::discovery::Scope::Namespaced);
    let v = server.client().unwrap().apiserver_version().await.unwrap();
    assert_eq!(v.major, "1");
}
