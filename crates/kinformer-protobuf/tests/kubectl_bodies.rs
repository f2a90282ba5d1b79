//! Oracle: Kubernetes-produced protobuf. kubectl 1.32 and 1.33 sent these bodies for
//! `create configmap` and `create deployment` (captured by the embedded server's
//! `kubectl_protobuf` test); `kubectl-<kind>.json` is kubectl's own JSON rendering of the same
//! objects (`--dry-run=client -o json`). Decoding the protobuf must give that JSON (less its
//! `null`s, which are absent fields), typed and untyped, and survive re-encoding.
// Helpers outside #[test] functions fail the test by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

fn data(name: &str) -> Vec<u8> {
    std::fs::read(format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

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

fn check<K>(kind: &str)
where
    K: DeserializeOwned + Serialize + PartialEq + std::fmt::Debug,
{
    let want: Value = serde_json::from_slice(&data(&format!("kubectl-{kind}.json"))).unwrap();
    for version in ["1.32", "1.33"] {
        let body = data(&format!("kubectl-{version}-{kind}.pb"));
        let got: Value = kinformer_protobuf::from_slice(&body).unwrap();
        assert_eq!(got, strip_nulls(want.clone()), "kubectl {version} {kind}");
        let typed: K = kinformer_protobuf::from_slice(&body).unwrap();
        assert_eq!(typed, serde_json::from_value::<K>(want.clone()).unwrap());
        let env = kinformer_protobuf::Envelope::parse(&body).unwrap();
        let again = kinformer_protobuf::to_vec(&typed, env.api_version, env.kind).unwrap();
        assert_eq!(kinformer_protobuf::from_slice::<K>(&again).unwrap(), typed);
    }
}

#[test]
fn kubectl_config_map() {
    check::<ConfigMap>("configmap");
}

#[test]
fn kubectl_deployment() {
    check::<Deployment>("deployment");
}
