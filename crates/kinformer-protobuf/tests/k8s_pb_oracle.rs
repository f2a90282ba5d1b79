//! Oracle: `k8s-pb` (prost types generated independently from the same `generated.proto`
//! files) reads what this crate writes, and this crate reads what prost writes, including the
//! zero values Go's marshaller writes for value fields.
// Helpers outside #[test] functions fail the test by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use k8s_pb::api::apps::v1 as pb_apps;
use k8s_pb::api::core::v1 as pb;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as pb_meta;
use kinformer_protobuf::Envelope;
use prost::Message;

fn realistic_pod() -> Pod {
    let path = format!(
        "{}/tests/data/realistic-pod.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn prost_reads_what_we_write_and_we_read_what_prost_writes() {
    let pod = realistic_pod();
    let bytes = kinformer_protobuf::to_vec(&pod, "v1", "Pod").unwrap();
    let env = Envelope::parse(&bytes).unwrap();
    assert_eq!((env.api_version, env.kind), ("v1", "Pod"));
    let p = pb::Pod::decode(env.raw).unwrap();
    let meta = p.metadata.as_ref().unwrap();
    assert_eq!(meta.name.as_deref(), Some("svc-7-5d8f9c7b4a-x2k9q"));
    // 2026-11-03T10:15:00Z
    assert_eq!(
        meta.creation_timestamp.as_ref().unwrap().seconds,
        Some(1_793_700_900)
    );
    assert_eq!(meta.labels.get("tier").map(String::as_str), Some("t1"));
    let fields: serde_json::Value = serde_json::from_slice(
        meta.managed_fields[0]
            .fields_v1
            .as_ref()
            .unwrap()
            .raw
            .as_ref()
            .unwrap(),
    )
    .unwrap();
    assert!(fields["f:metadata"]["f:labels"].get("f:tier").is_some());
    let c = &p.spec.as_ref().unwrap().containers[0];
    let limits = &c.resources.as_ref().unwrap().limits;
    assert_eq!(limits["memory"].string.as_deref(), Some("256Mi"));
    let port = c
        .liveness_probe
        .as_ref()
        .unwrap()
        .handler
        .as_ref()
        .unwrap()
        .http_get
        .as_ref()
        .unwrap()
        .port
        .as_ref()
        .unwrap();
    assert_eq!((port.r#type, port.int_val), (Some(0), Some(8080)));
    assert_eq!(p.spec.as_ref().unwrap().priority, Some(0));

    // Back through prost's own encoding.
    let again = Envelope::encode("v1", "Pod", &p.encode_to_vec());
    let back: Pod = kinformer_protobuf::from_slice(&again).unwrap();
    assert_eq!(back, pod);
}

#[test]
fn go_style_zero_values_decode_as_go_json_has_them() {
    // What Go's marshaller writes for a new Deployment: every value field, zero or not.
    let d = pb_apps::Deployment {
        metadata: Some(pb_meta::ObjectMeta {
            name: Some("web".into()),
            generate_name: Some(String::new()),
            namespace: Some(String::new()),
            self_link: Some(String::new()),
            uid: Some(String::new()),
            resource_version: Some(String::new()),
            generation: Some(0),
            creation_timestamp: Some(pb_meta::Time::default()),
            ..Default::default()
        }),
        spec: Some(pb_apps::DeploymentSpec {
            replicas: Some(0),
            min_ready_seconds: Some(0),
            paused: Some(false),
            strategy: Some(pb_apps::DeploymentStrategy::default()),
            template: Some(pb::PodTemplateSpec {
                spec: Some(pb::PodSpec {
                    containers: vec![pb::Container {
                        name: Some("web".into()),
                        image: Some("nginx".into()),
                        env: vec![pb::EnvVar {
                            name: Some("A".into()),
                            value: Some(String::new()),
                            ..Default::default()
                        }],
                        ..Default::default()
                    }],
                    automount_service_account_token: Some(false),
                    host_network: Some(false),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }),
        status: Some(pb_apps::DeploymentStatus::default()),
    };
    let bytes = Envelope::encode("apps/v1", "Deployment", &d.encode_to_vec());
    let json: serde_json::Value = kinformer_protobuf::from_slice(&bytes).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {"replicas": 0, "strategy": {}, "template": {"spec": {
                "automountServiceAccountToken": false,
                "containers": [{"name": "web", "image": "nginx", "env": [{"name": "A"}]}]}}},
            "status": {}
        })
    );
    let typed: Deployment = kinformer_protobuf::from_slice(&bytes).unwrap();
    assert_eq!(typed.spec.replicas, Some(0));
    assert_eq!(typed.metadata.namespace, None);
}
