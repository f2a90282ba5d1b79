//! The write audit over HTTP: writers from `fieldManager` or `User-Agent`, refused writes with
//! their status, controller owners, and the debug endpoint.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use http::{HeaderName, HeaderValue};
use k8s_openapi::api::core::v1::ConfigMap;
use kinformer_apiserver::TestServer;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use serde_json::json;

fn client_as(server: &TestServer, agent: &str) -> kube::Client {
    let mut config = server.kube_config().unwrap();
    config.headers.push((
        HeaderName::from_static("user-agent"),
        HeaderValue::from_str(agent).unwrap(),
    ));
    kube::Client::try_from(config).unwrap()
}

#[tokio::test]
async fn the_audit_records_http_writes_with_their_writer_and_outcome_and_serves_them() {
    let server = TestServer::start().await.unwrap();
    // Off by default: nothing is recorded.
    let early: Api<ConfigMap> = Api::namespaced(client_as(&server, "early"), "ns");
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("before".into());
    early.create(&PostParams::default(), &cm).await.unwrap();
    assert!(server.audit().records().is_empty());

    server.audit().enable();
    let alice: Api<ConfigMap> = Api::namespaced(client_as(&server, "alice-agent"), "ns");
    let bob: Api<ConfigMap> = Api::namespaced(client_as(&server, "bob"), "ns");
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("web-1".into());
    cm.metadata.owner_references = Some(vec![serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "u1", "controller": true
    })).unwrap()]);
    let pp = PostParams {
        field_manager: Some("alice".into()),
        ..PostParams::default()
    };
    let created = alice.create(&pp, &cm).await.unwrap();
    let mut stale = created.clone();
    let mut changed = created.clone();
    changed.data = Some([("by".to_owned(), "bob".to_owned())].into());
    bob.replace("web-1", &PostParams::default(), &changed)
        .await
        .unwrap();
    stale.data = Some([("k".to_owned(), "v".to_owned())].into());
    let conflict = bob.replace("web-1", &PostParams::default(), &stale).await;
    assert!(
        matches!(conflict, Err(kube::Error::Api(ref s)) if s.code == 409),
        "{conflict:?}"
    );
    bob.delete("web-1", &DeleteParams::default()).await.unwrap();
    // Writes through the store handle are the test's own: not recorded.
    server
        .store()
        .create("configmaps", "ns", json!({"metadata": {"name": "direct"}}))
        .unwrap();

    let records = server.audit().records();
    let summary: Vec<(&str, &str, &str, u16)> = records
        .iter()
        .map(|r| (r.writer.as_str(), r.verb.as_str(), r.name.as_str(), r.code))
        .collect();
    assert_eq!(
        summary,
        [
            ("alice", "POST", "web-1", 201),
            ("bob", "PUT", "web-1", 200),
            ("bob", "PUT", "web-1", 409),
            ("bob", "DELETE", "web-1", 200),
        ]
    );
    assert!(
        records
            .iter()
            .all(|r| r.kind == "ConfigMap" && r.namespace == "ns")
    );
    assert!(
        records.iter().all(|r| r.group() == "ReplicaSet/ns/web"),
        "{records:?}"
    );

    let served = server
        .client()
        .unwrap()
        .request_text(
            http::Request::get("/debug/kinformer/writes")
                .body(Vec::new())
                .unwrap(),
        )
        .await
        .unwrap();
    let served: serde_json::Value = serde_json::from_str(&served).unwrap();
    assert_eq!(served.as_array().map(Vec::len), Some(4));
    assert_eq!(served[2]["code"], 409);
    assert_eq!(served[0]["owner"], "ReplicaSet/web");
}
