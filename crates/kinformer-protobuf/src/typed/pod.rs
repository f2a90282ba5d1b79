//! Pods on the direct path: `Pod`, its `ObjectMeta`, `PodSpec`, `Container`, `EnvVar`,
//! `PodStatus`, `PodCondition` and `ContainerStatus` (every other message inside a pod is read
//! by serde, as the general path reads it). The
//! fields listed are those of every k8s-openapi version this crate builds with (1.33 on); a
//! pod holding a newer one (`hostnameOverride`, ...) is decoded by the general path.

use k8s_openapi::api::core::v1::{
    Container, ContainerStatus, EnvVar, Pod, PodCondition, PodSpec, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::{direct, general, message};
use crate::de::MessageDe;
use crate::error::Error;

/// A top-level pod: its `apiVersion` and `kind`, if given, must be the pod's (k8s-openapi
/// refuses others).
pub(super) fn top_level(m: MessageDe<'_>) -> Result<Pod, Error> {
    match m.type_meta {
        None | Some(("v1", "Pod")) => message(m),
        Some(_) => Err(general()),
    }
}

direct!(Pod, "k8s.io.api.core.v1.Pod", {
    1 "metadata" metadata: required_message,
    2 "spec" spec: message,
    3 "status" status: message,
});

direct!(ObjectMeta, "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta", {
    1 "name" name: serde,
    2 "generateName" generate_name: serde,
    3 "namespace" namespace: serde,
    4 "selfLink" self_link: serde,
    5 "uid" uid: serde,
    6 "resourceVersion" resource_version: serde,
    7 "generation" generation: serde,
    8 "creationTimestamp" creation_timestamp: serde,
    9 "deletionTimestamp" deletion_timestamp: serde,
    10 "deletionGracePeriodSeconds" deletion_grace_period_seconds: serde,
    11 "labels" labels: serde,
    12 "annotations" annotations: serde,
    13 "ownerReferences" owner_references: serde,
    14 "finalizers" finalizers: serde,
    17 "managedFields" managed_fields: serde,
});

direct!(PodSpec, "k8s.io.api.core.v1.PodSpec", {
    1 "volumes" volumes: serde,
    20 "initContainers" init_containers: messages,
    2 "containers" containers: required_messages,
    34 "ephemeralContainers" ephemeral_containers: serde,
    3 "restartPolicy" restart_policy: serde,
    4 "terminationGracePeriodSeconds" termination_grace_period_seconds: serde,
    5 "activeDeadlineSeconds" active_deadline_seconds: serde,
    6 "dnsPolicy" dns_policy: serde,
    7 "nodeSelector" node_selector: serde,
    8 "serviceAccountName" service_account_name: serde,
    9 "serviceAccount" service_account: serde,
    21 "automountServiceAccountToken" automount_service_account_token: serde,
    10 "nodeName" node_name: serde,
    11 "hostNetwork" host_network: serde,
    12 "hostPID" host_pid: serde,
    13 "hostIPC" host_ipc: serde,
    27 "shareProcessNamespace" share_process_namespace: serde,
    14 "securityContext" security_context: serde,
    15 "imagePullSecrets" image_pull_secrets: serde,
    16 "hostname" hostname: serde,
    17 "subdomain" subdomain: serde,
    18 "affinity" affinity: serde,
    19 "schedulerName" scheduler_name: serde,
    22 "tolerations" tolerations: serde,
    23 "hostAliases" host_aliases: serde,
    24 "priorityClassName" priority_class_name: serde,
    25 "priority" priority: serde,
    26 "dnsConfig" dns_config: serde,
    28 "readinessGates" readiness_gates: serde,
    29 "runtimeClassName" runtime_class_name: serde,
    30 "enableServiceLinks" enable_service_links: serde,
    31 "preemptionPolicy" preemption_policy: serde,
    32 "overhead" overhead: serde,
    33 "topologySpreadConstraints" topology_spread_constraints: serde,
    35 "setHostnameAsFQDN" set_hostname_as_fqdn: serde,
    36 "os" os: serde,
    37 "hostUsers" host_users: serde,
    38 "schedulingGates" scheduling_gates: serde,
    39 "resourceClaims" resource_claims: serde,
    40 "resources" resources: serde,
});

direct!(Container, "k8s.io.api.core.v1.Container", {
    1 "name" name: required,
    2 "image" image: serde,
    3 "command" command: serde,
    4 "args" args: serde,
    5 "workingDir" working_dir: serde,
    6 "ports" ports: serde,
    19 "envFrom" env_from: serde,
    7 "env" env: messages,
    8 "resources" resources: serde,
    23 "resizePolicy" resize_policy: serde,
    24 "restartPolicy" restart_policy: serde,
    9 "volumeMounts" volume_mounts: serde,
    21 "volumeDevices" volume_devices: serde,
    10 "livenessProbe" liveness_probe: serde,
    11 "readinessProbe" readiness_probe: serde,
    22 "startupProbe" startup_probe: serde,
    12 "lifecycle" lifecycle: serde,
    13 "terminationMessagePath" termination_message_path: serde,
    20 "terminationMessagePolicy" termination_message_policy: serde,
    14 "imagePullPolicy" image_pull_policy: serde,
    15 "securityContext" security_context: serde,
    16 "stdin" stdin: serde,
    17 "stdinOnce" stdin_once: serde,
    18 "tty" tty: serde,
});

direct!(EnvVar, "k8s.io.api.core.v1.EnvVar", {
    1 "name" name: required,
    2 "value" value: serde,
    3 "valueFrom" value_from: serde,
});

direct!(PodStatus, "k8s.io.api.core.v1.PodStatus", {
    17 "observedGeneration" observed_generation: serde,
    1 "phase" phase: serde,
    2 "conditions" conditions: messages,
    3 "message" message: serde,
    4 "reason" reason: serde,
    11 "nominatedNodeName" nominated_node_name: serde,
    5 "hostIP" host_ip: serde,
    16 "hostIPs" host_ips: serde,
    6 "podIP" pod_ip: serde,
    12 "podIPs" pod_ips: serde,
    7 "startTime" start_time: serde,
    10 "initContainerStatuses" init_container_statuses: messages,
    8 "containerStatuses" container_statuses: messages,
    9 "qosClass" qos_class: serde,
    13 "ephemeralContainerStatuses" ephemeral_container_statuses: messages,
    14 "resize" resize: serde,
    15 "resourceClaimStatuses" resource_claim_statuses: serde,
});

direct!(PodCondition, "k8s.io.api.core.v1.PodCondition", {
    1 "type" type_: required,
    7 "observedGeneration" observed_generation: serde,
    2 "status" status: required,
    3 "lastProbeTime" last_probe_time: serde,
    4 "lastTransitionTime" last_transition_time: serde,
    5 "reason" reason: serde,
    6 "message" message: serde,
});

direct!(ContainerStatus, "k8s.io.api.core.v1.ContainerStatus", {
    1 "name" name: required,
    2 "state" state: serde,
    3 "lastState" last_state: serde,
    4 "ready" ready: required,
    5 "restartCount" restart_count: required,
    6 "image" image: required,
    7 "imageID" image_id: required,
    8 "containerID" container_id: serde,
    9 "started" started: serde,
    10 "allocatedResources" allocated_resources: serde,
    11 "resources" resources: serde,
    12 "volumeMounts" volume_mounts: serde,
    13 "user" user: serde,
    14 "allocatedResourcesStatus" allocated_resources_status: serde,
    15 "stopSignal" stop_signal: serde,
});

/// The fields a direct struct lists (for the test that they are the schema's).
#[cfg(test)]
pub(super) trait Listed {
    const FIELDS: &'static [(u32, &'static str)];
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Schema;
    use crate::typed::Direct;

    fn check<T: Direct + Listed>(newer: &[u32]) {
        let s = Schema::get().unwrap();
        let desc = s.message(s.message_id(T::MESSAGE).unwrap());
        assert!(desc.inlined.is_empty(), "{}", T::MESSAGE);
        for (number, json) in T::FIELDS {
            let field = desc.field(*number).unwrap();
            assert_eq!(&*field.name, *json, "{} {number}", T::MESSAGE);
        }
        // Every field of the schema is listed, but those newer than k8s-openapi 1.33.
        for f in &desc.fields {
            let listed = T::FIELDS.iter().any(|(n, _)| *n == f.number);
            assert_eq!(
                listed,
                !newer.contains(&f.number),
                "{} {}",
                T::MESSAGE,
                f.name
            );
        }
    }

    use crate::de::{MessageDe, from_message};
    use crate::schema::{Field, MessageId, Scalar, Special, Ty};
    use crate::wire::{FIXED32, FIXED64, put_bytes, put_key, put_varint_field};

    /// A non-zero value of a message of the schema (its first field set, recursively).
    fn sample_message(s: &Schema, id: MessageId, depth: usize) -> Vec<u8> {
        let desc = s.message(id);
        match desc.special {
            Special::Time | Special::MicroTime => vec![0x08, 0x01],
            Special::Quantity => vec![0x0a, 1, b'1'],
            Special::IntOrString => vec![0x10, 0x01],
            Special::RawJson => vec![0x0a, 2, b'{', b'}'],
            _ if depth > 3 => Vec::new(),
            _ => desc
                .fields
                .first()
                .map(|f| sample_field(s, f, depth + 1))
                .unwrap_or_default(),
        }
    }

    /// Field `f` holding a non-zero value.
    fn sample_field(s: &Schema, f: &Field, depth: usize) -> Vec<u8> {
        let mut out = Vec::new();
        match f.ty {
            Ty::Scalar(Scalar::String | Scalar::Bytes) => put_bytes(&mut out, f.number, b"x"),
            Ty::Scalar(Scalar::Double | Scalar::Fixed64 | Scalar::SFixed64) => {
                put_key(&mut out, f.number, FIXED64);
                out.extend_from_slice(&1u64.to_le_bytes());
            }
            Ty::Scalar(Scalar::Float | Scalar::Fixed32 | Scalar::SFixed32) => {
                put_key(&mut out, f.number, FIXED32);
                out.extend_from_slice(&1u32.to_le_bytes());
            }
            Ty::Scalar(_) => put_varint_field(&mut out, f.number, 1),
            Ty::Message(id) | Ty::Map(id) => {
                put_bytes(&mut out, f.number, &sample_message(s, id, depth));
            }
        }
        out
    }

    fn wrap(number: u32, inner: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        put_bytes(&mut out, number, inner);
        out
    }

    /// Every field of `T` (at `path` in a pod) alone, twice, and with an unknown field and
    /// a zero after it: the direct path builds the pod (for the fields it lists) and builds
    /// what the general path does.
    fn same_as_general<T: Direct>(path: &[u32], newer: &[u32]) {
        let s = Schema::get().unwrap();
        let pod = s.message_id("k8s.io.api.core.v1.Pod").unwrap();
        let desc = s.message(s.message_id(T::MESSAGE).unwrap());
        for f in &desc.fields {
            let one = sample_field(s, f, 0);
            let mut zero = Vec::new();
            match f.ty {
                Ty::Scalar(Scalar::String) => put_bytes(&mut zero, f.number, b""),
                Ty::Scalar(Scalar::Bool | Scalar::Int32 | Scalar::Int64) => {
                    put_varint_field(&mut zero, f.number, 0);
                }
                _ => {}
            }
            let mut unknown = Vec::new();
            put_varint_field(&mut unknown, 999, 5);
            let cases = [
                one.clone(),
                [one.clone(), one.clone()].concat(),
                [one.clone(), unknown, zero].concat(),
            ];
            for case in cases {
                let bytes = path.iter().rev().fold(case, |inner, n| wrap(*n, &inner));
                let general: Result<Pod, _> = from_message(s, pod, &bytes, None);
                let m = MessageDe {
                    schema: s,
                    id: pod,
                    bytes: &bytes,
                    depth: 0,
                    type_meta: None,
                };
                let direct: Option<Pod> = crate::typed::decode(m);
                if newer.contains(&f.number) {
                    assert!(direct.is_none(), "{}.{}", T::MESSAGE, f.name);
                    continue;
                }
                match general {
                    Ok(general) => {
                        assert_eq!(direct.as_ref(), Some(&general), "{}.{}", T::MESSAGE, f.name);
                    }
                    Err(_) => assert!(direct.is_none(), "{}.{}", T::MESSAGE, f.name),
                }
            }
        }
    }

    #[test]
    fn each_field_decodes_as_the_general_path_decodes_it() {
        same_as_general::<Pod>(&[], &[]);
        same_as_general::<ObjectMeta>(&[1], &[]);
        same_as_general::<PodSpec>(&[2], &[41, 43, 44]);
        same_as_general::<Container>(&[2, 2], &[25]);
        same_as_general::<EnvVar>(&[2, 2, 7], &[]);
        same_as_general::<PodStatus>(&[3], &[18, 19, 20, 21, 22]);
        same_as_general::<PodCondition>(&[3, 2], &[]);
        same_as_general::<ContainerStatus>(&[3, 8], &[]);
    }

    #[test]
    fn a_pod_of_another_kind_or_too_deep_is_left_to_the_general_path() {
        let s = Schema::get().unwrap();
        let pod = s.message_id("k8s.io.api.core.v1.Pod").unwrap();
        let cm = s.message_id("k8s.io.api.core.v1.ConfigMap").unwrap();
        let m = |id, type_meta| MessageDe {
            schema: s,
            id,
            bytes: &[0x0a, 3, 0x0a, 1, b'a'],
            depth: 0,
            type_meta,
        };
        assert!(crate::typed::decode::<Pod>(m(pod, Some(("v1", "Pod")))).is_some());
        assert!(crate::typed::decode::<Pod>(m(pod, Some(("v2", "Pod")))).is_none());
        assert!(crate::typed::decode::<Pod>(m(cm, None)).is_none());
        assert!(crate::typed::decode::<ObjectMeta>(m(pod, None)).is_none());
        let deep = MessageDe {
            depth: crate::de::MAX_DEPTH + 1,
            ..m(pod, None)
        };
        assert!(crate::typed::decode::<Pod>(deep).is_none());
    }

    #[test]
    fn the_listed_fields_are_the_schemas() {
        check::<Pod>(&[]);
        check::<ObjectMeta>(&[]);
        check::<PodSpec>(&[41, 43, 44]);
        check::<Container>(&[25]);
        check::<EnvVar>(&[]);
        check::<PodStatus>(&[18, 19, 20, 21, 22]);
        check::<PodCondition>(&[]);
        check::<ContainerStatus>(&[]);
    }
}
