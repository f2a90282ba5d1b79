//! Oracle: every fixture (real-world shaped objects, `tests/data/`) goes JSON → typed →
//! protobuf → typed → JSON unchanged, and JSON → protobuf → JSON too (no typed step).
// Helpers outside #[test] functions fail the test by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::api::apps::v1::{ControllerRevision, Deployment, ReplicaSet};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, Secret, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn typed_round_trip<K>(name: &str)
where
    K: DeserializeOwned + Serialize + PartialEq + std::fmt::Debug,
{
    let json = fixture(name);
    let api_version = json["apiVersion"].as_str().unwrap().to_owned();
    let kind = json["kind"].as_str().unwrap().to_owned();
    let typed: K = serde_json::from_value(json.clone()).unwrap();
    let bytes = kinformer_protobuf::to_vec(&typed, &api_version, &kind).unwrap();
    let back: K = kinformer_protobuf::from_slice(&bytes).unwrap();
    assert_eq!(back, typed, "{name}");
    assert_eq!(
        serde_json::to_value(&back).unwrap(),
        serde_json::to_value(&typed).unwrap(),
        "{name}"
    );
    // Without the typed step: JSON → protobuf → JSON.
    let direct = kinformer_protobuf::json_to_vec(&json).unwrap();
    let back: Value = kinformer_protobuf::from_slice(&direct).unwrap();
    assert_eq!(strip_nulls(back), strip_nulls(json), "{name} as JSON");
}

/// `null` fields are absent on the wire (as in Go, where they are zero values).
fn strip_nulls(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, strip_nulls(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.into_iter().map(strip_nulls).collect()),
        v => v,
    }
}

#[test]
fn realistic_pod() {
    typed_round_trip::<Pod>("realistic-pod.json");
}

#[test]
fn deployment_with_zero_pointers_and_int_or_string() {
    typed_round_trip::<Deployment>("deployment.json");
}

#[test]
fn replicaset() {
    typed_round_trip::<ReplicaSet>("replicaset.json");
}

#[test]
fn configmap_with_binary_data_and_unicode() {
    typed_round_trip::<ConfigMap>("configmap.json");
}

#[test]
fn lease_with_micro_time() {
    typed_round_trip::<Lease>("lease.json");
}

#[test]
fn namespace() {
    typed_round_trip::<Namespace>("namespace.json");
}

#[test]
fn secret_bytes() {
    typed_round_trip::<Secret>("secret.json");
}

#[test]
fn service_int_or_string_ports() {
    typed_round_trip::<Service>("service.json");
}

#[test]
fn controller_revision_raw_extension() {
    typed_round_trip::<ControllerRevision>("controllerrevision.json");
}

#[test]
fn status() {
    typed_round_trip::<Status>("status.json");
}
