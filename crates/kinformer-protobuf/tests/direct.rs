//! The direct path into k8s-openapi pods (`from_slice_owned`, `Item::decode_owned`) decodes
//! exactly what the general path (`from_slice`, `Item::decode`) does: for real-world shaped
//! pods, for lists, for random pods, and for garbage (the same error, or the same value).
#![cfg(feature = "k8s-openapi")]
// Helpers outside #[test] functions fail the test by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kinformer_protobuf::{Envelope, List, ListBuilder, ListMeta, from_slice, from_slice_owned};
use proptest::prelude::*;
use serde_json::{Value, json};

fn same<T>(bytes: &[u8])
where
    T: serde::de::DeserializeOwned + PartialEq + std::fmt::Debug + 'static,
{
    let general = from_slice::<T>(bytes);
    let direct = from_slice_owned::<T>(bytes);
    assert_eq!(direct, general);
}

fn pods() -> Vec<Value> {
    let path = format!(
        "{}/tests/data/realistic-pod.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let realistic: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut pods = vec![realistic];
    let shared = std::path::Path::new("/work/shared/data");
    if let Ok(dir) = std::fs::read_dir(shared) {
        for entry in dir.flatten() {
            let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
            if let Ok(v) = serde_json::from_str::<Value>(&text)
                && v["kind"] == "Pod"
            {
                pods.push(v);
            }
        }
    }
    // The bench pod's shape, and a pod with a newer field than some k8s-openapi versions have.
    pods.push(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"creationTimestamp": "2026-11-03T10:15:00Z", "generation": 1,
                     "labels": {"app": "a1", "tier": "t1"}, "name": "pod-1", "namespace": "ns-1",
                     "resourceVersion": "2", "uid": "00000000-0000-4000-8000-000000000001"},
        "spec": {"containers": [{"env": [{"name": "POD_INDEX", "value": "1"},
                                         {"name": "MODE", "value": "bench"}],
                                 "image": "registry.example/app:1.1", "name": "app"}]}
    }));
    pods.push(
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "h"},
                     "spec": {"hostnameOverride": "other", "containers": [{"name": "c"}]}}),
    );
    pods
}

#[test]
fn real_world_pods_decode_as_the_general_path_decodes_them() {
    for pod in pods() {
        let bytes = kinformer_protobuf::json_to_vec(&pod).unwrap();
        same::<Pod>(&bytes);
        assert!(from_slice_owned::<Pod>(&bytes).is_ok());
        // The metadata of a pod read as another kind is refused the same way.
        same::<ConfigMap>(&bytes);
        // Lists: every item the same.
        let mut list = ListBuilder::new("v1", "PodList", &ListMeta::default()).unwrap();
        list.push(&pod).unwrap();
        list.push(&pod).unwrap();
        let bytes = list.finish();
        let list = List::parse(&bytes).unwrap();
        for item in list.items() {
            assert_eq!(item.decode_owned::<Pod>(), item.decode::<Pod>());
        }
    }
}

#[test]
fn wrong_kinds_and_versions_are_refused_as_the_general_path_refuses_them() {
    let pod = kinformer_protobuf::json_to_vec(&pods()[0]).unwrap();
    let raw = Envelope::parse(&pod).unwrap().raw;
    for (v, k) in [
        ("v1", "Pod"),
        ("v2", "Pod"),
        ("v1", "ConfigMap"),
        ("apps/v1", "Pod"),
    ] {
        let bytes = Envelope::encode(v, k, raw);
        same::<Pod>(&bytes);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn corrupted_pods_decode_or_fail_as_the_general_path_does(
        cut in 0usize..4000,
        flip in 0usize..4000,
        byte in any::<u8>(),
    ) {
        let pod = kinformer_protobuf::json_to_vec(&pods()[0]).unwrap();
        let raw = Envelope::parse(&pod).unwrap().raw;
        let mut raw = raw[..cut.min(raw.len())].to_vec();
        if !raw.is_empty() {
            let i = flip % raw.len();
            raw[i] = byte;
        }
        same::<Pod>(&Envelope::encode("v1", "Pod", &raw));
    }
}
