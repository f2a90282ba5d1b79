//! The ReplicaSets that `kinformer demo` and the `replicaset_controller` example create.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetSpec};
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

/// A ReplicaSet `namespace/name` wanting `replicas` pods of one pause container, selecting
/// and labelling its pods `app=<name>`.
///
/// `labels` go on the ReplicaSet itself and on its pod template (not into the selector).
pub fn replicaset(
    namespace: &str,
    name: &str,
    replicas: i32,
    labels: &[(&str, &str)],
) -> ReplicaSet {
    let app = BTreeMap::from([("app".to_string(), name.to_string())]);
    let extra: BTreeMap<String, String> = labels
        .iter()
        .map(|&(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let mut template_labels = app.clone();
    template_labels.extend(extra.clone());
    ReplicaSet {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(namespace.into()),
            labels: (!extra.is_empty()).then_some(extra),
            ..ObjectMeta::default()
        },
        spec: ReplicaSetSpec {
            replicas: Some(replicas),
            selector: LabelSelector {
                match_labels: Some(app),
                ..LabelSelector::default()
            },
            template: Some(PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(template_labels),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "app".into(),
                        image: Some("registry.k8s.io/pause:3.10".into()),
                        ..Container::default()
                    }],
                    ..PodSpec::default()
                }),
            }),
            ..ReplicaSetSpec::default()
        },
        status: None,
    }
}
