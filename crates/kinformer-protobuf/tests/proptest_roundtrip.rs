//! Property: generated objects go typed → protobuf → typed unchanged.
//!
//! Generated values follow Go's JSON form: optional value fields are either absent or hold a
//! non-zero value, and optional maps and lists are absent or non-empty (Go's JSON never has
//! `"generateName": ""` or `"labels": {}`, and protobuf cannot tell an empty map from none;
//! see the crate docs), while pointer fields such as `terminationGracePeriodSeconds` may hold
//! zero.
// Helpers outside #[test] functions fail the test by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{
    ConfigMap, Container, ContainerPort, EnvVar, Pod, PodCondition, PodSpec, PodStatus,
    ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use proptest::prelude::*;

fn name() -> impl Strategy<Value = String> {
    "[a-z0-9]([a-z0-9.-]{0,20}[a-z0-9])?"
}

fn text() -> impl Strategy<Value = String> {
    "\\PC{1,24}"
}

fn time() -> impl Strategy<Value = Time> {
    (1i64..4_000_000_000).prop_map(|s| Time(jiff::Timestamp::from_second(s).unwrap()))
}

fn labels() -> impl Strategy<Value = BTreeMap<String, String>> {
    prop::collection::btree_map(name(), "[a-zA-Z0-9]{0,10}", 1..5)
}

fn meta() -> impl Strategy<Value = ObjectMeta> {
    (
        name(),
        prop::option::of(name()),
        prop::option::of(labels()),
        prop::option::of(prop::collection::btree_map(name(), text(), 1..3)),
        prop::option::of(time()),
        prop::option::of(1i64..1_000_000),
        prop::option::of(0i64..100),
    )
        .prop_map(
            |(name, namespace, labels, annotations, created, generation, grace)| ObjectMeta {
                name: Some(name),
                namespace,
                labels,
                annotations,
                creation_timestamp: created,
                generation,
                deletion_grace_period_seconds: grace,
                ..ObjectMeta::default()
            },
        )
}

fn quantity() -> impl Strategy<Value = Quantity> {
    prop::sample::select(vec!["100m", "1", "0.5", "128Mi", "2Gi", "1e3", "0"])
        .prop_map(|q| Quantity(q.into()))
}

fn container() -> impl Strategy<Value = Container> {
    (
        name(),
        prop::option::of(text()),
        prop::collection::vec(
            (1i32..65536, prop::sample::select(vec!["TCP", "UDP"])),
            0..3,
        ),
        prop::collection::vec((name(), text()), 0..3),
        prop::option::of(prop::collection::btree_map(
            prop::sample::select(vec!["cpu", "memory", "nvidia.com/gpu"]).prop_map(String::from),
            quantity(),
            1..3,
        )),
        prop::option::of(prop::collection::vec(text(), 1..3)),
    )
        .prop_map(|(name, image, ports, env, limits, args)| Container {
            name,
            image,
            ports: (!ports.is_empty()).then(|| {
                ports
                    .into_iter()
                    .map(|(p, proto)| ContainerPort {
                        container_port: p,
                        protocol: Some(proto.into()),
                        ..ContainerPort::default()
                    })
                    .collect()
            }),
            env: (!env.is_empty()).then(|| {
                env.into_iter()
                    .map(|(name, value)| EnvVar {
                        name,
                        value: Some(value),
                        ..EnvVar::default()
                    })
                    .collect()
            }),
            resources: limits.map(|l| ResourceRequirements {
                limits: Some(l),
                ..ResourceRequirements::default()
            }),
            args,
            ..Container::default()
        })
}

fn pod() -> impl Strategy<Value = Pod> {
    (
        meta(),
        prop::collection::vec(container(), 1..3),
        prop::option::of(0i64..600),
        prop::option::of(any::<bool>()),
        prop::option::of(labels()),
        prop::collection::vec(
            (name(), prop::sample::select(vec!["True", "False"]), time()),
            0..3,
        ),
        prop::option::of(time()),
    )
        .prop_map(
            |(metadata, containers, grace, automount, selector, conditions, started)| Pod {
                metadata,
                spec: Some(PodSpec {
                    containers,
                    termination_grace_period_seconds: grace,
                    automount_service_account_token: automount,
                    node_selector: selector,
                    ..PodSpec::default()
                }),
                status: Some(PodStatus {
                    conditions: (!conditions.is_empty()).then(|| {
                        conditions
                            .into_iter()
                            .map(|(type_, status, t)| PodCondition {
                                type_,
                                status: status.into(),
                                last_transition_time: Some(t),
                                ..PodCondition::default()
                            })
                            .collect()
                    }),
                    start_time: started,
                    ..PodStatus::default()
                }),
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn pods_round_trip(pod in pod()) {
        let bytes = kinformer_protobuf::to_vec(&pod, "v1", "Pod").unwrap();
        let back: Pod = kinformer_protobuf::from_slice(&bytes).unwrap();
        prop_assert_eq!(back, pod);
    }

    #[test]
    fn config_maps_round_trip(
        meta in meta(),
        data in prop::option::of(prop::collection::btree_map(name(), "\\PC{0,40}", 1..5)),
        binary in prop::option::of(prop::collection::btree_map(name(), prop::collection::vec(any::<u8>(), 0..40), 1..3)),
        immutable in prop::option::of(any::<bool>()),
    ) {
        let cm = ConfigMap {
            metadata: meta,
            data,
            binary_data: binary.map(|b| b.into_iter().map(|(k, v)| (k, ByteString(v))).collect()),
            immutable,
        };
        let bytes = kinformer_protobuf::to_vec(&cm, "v1", "ConfigMap").unwrap();
        let back: ConfigMap = kinformer_protobuf::from_slice(&bytes).unwrap();
        prop_assert_eq!(back, cm);
    }

    /// Arbitrary bytes never panic the decoder: they decode or fail with an error.
    #[test]
    fn garbage_is_an_error_not_a_panic(tail in prop::collection::vec(any::<u8>(), 0..200)) {
        let mut bytes = kinformer_protobuf::to_vec(&ConfigMap::default(), "v1", "ConfigMap").unwrap();
        bytes.extend_from_slice(&tail);
        let _ = kinformer_protobuf::from_slice::<ConfigMap>(&bytes);
        let _ = kinformer_protobuf::from_slice::<serde_json::Value>(&bytes);
        let mut raw = b"k8s\0".to_vec();
        raw.extend_from_slice(&tail);
        let _ = kinformer_protobuf::from_slice::<Pod>(&raw);
        let _ = kinformer_protobuf::List::parse(&raw);
        let _ = kinformer_protobuf::WatchEvent::parse(&tail);
    }
}
