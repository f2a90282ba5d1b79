//! Who makes the demo's pods ready, and why they stay unready when nobody does.
//!
//! On the embedded server and a `--server` there are no nodes: the stand-in [`Kubelet`]
//! marks pods running and ready. A real cluster has kubelets, except a control plane without
//! nodes (an API server and etcd, as envtest-style test environments run it): there the
//! stand-in runs too, asked for with `--stand-in-kubelet` or chosen when the cluster has no
//! Node objects. When pods stay unready anyway, [`unready_causes`] names the likely reasons.
//!
//! [`Kubelet`]: super::kubelet::Kubelet

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Api;
use kube::api::ListParams;

use super::controller::{is_pod_active, is_pod_ready};

/// Whether the demo runs the stand-in kubelet, and why (for the first lines of its output).
pub(crate) async fn use_stand_in_kubelet(
    client: &kube::Client,
    on_cluster: bool,
    asked: bool,
) -> (bool, Option<&'static str>) {
    if !on_cluster {
        return (true, None);
    }
    if asked {
        return (
            true,
            Some("  a stand-in kubelet marks pods ready (--stand-in-kubelet)"),
        );
    }
    let nodes: Api<Node> = Api::all(client.clone());
    match nodes.list_metadata(&ListParams::default().limit(1)).await {
        Ok(list) if list.items.is_empty() => (
            true,
            Some(
                "  the cluster has no nodes: a stand-in kubelet marks pods ready (as --stand-in-kubelet does)",
            ),
        ),
        Ok(_) => (false, None),
        // A server without the nodes resource has no kubelets either.
        Err(kube::Error::Api(s)) if s.is_not_found() => (
            true,
            Some("  the server has no nodes resource: a stand-in kubelet marks pods ready"),
        ),
        Err(e) => {
            // Not allowed to list nodes, say: assume the cluster runs kubelets.
            tracing::debug!(error = %e, "cannot list nodes; leaving pods to the cluster's kubelets");
            (false, None)
        }
    }
}

/// The likely reasons the pods of `namespace` (all namespaces: `None`) on the server are not
/// ready; empty if they are, or if they cannot be listed.
pub(crate) async fn unready_causes_on(
    client: &kube::Client,
    namespace: Option<&str>,
) -> Vec<String> {
    let api: Api<Pod> = match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    };
    match api.list(&ListParams::default()).await {
        Ok(list) => unready_causes(&list.items),
        Err(e) => {
            tracing::debug!(error = %e, "cannot list pods to tell why they are not ready");
            Vec::new()
        }
    }
}

/// The likely reasons active pods are not ready, one line each with the count of pods it
/// explains; empty when every active pod is ready.
pub(crate) fn unready_causes<'a>(pods: impl IntoIterator<Item = &'a Pod>) -> Vec<String> {
    let (mut unscheduled, mut image, mut other) = (0usize, 0usize, 0usize);
    let mut example_image_reason = None;
    for pod in pods {
        if !is_pod_active(pod) || is_pod_ready(pod) {
            continue;
        }
        let scheduled = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_ref())
            .is_some();
        let pull_failure = pod
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .into_iter()
            .flatten()
            .filter_map(|c| c.state.as_ref()?.waiting.as_ref()?.reason.as_deref())
            .find(|r| matches!(*r, "ErrImagePull" | "ImagePullBackOff" | "InvalidImageName"));
        if !scheduled {
            unscheduled += 1;
        } else if let Some(reason) = pull_failure {
            image += 1;
            example_image_reason.get_or_insert_with(|| reason.to_owned());
        } else {
            other += 1;
        }
    }
    let mut causes = Vec::new();
    if unscheduled > 0 {
        causes.push(format!(
            "{unscheduled} pods not scheduled to a node: the cluster has no nodes that fit (a control plane without nodes needs --stand-in-kubelet), or none with room"
        ));
    }
    if image > 0 {
        causes.push(format!(
            "{image} pods cannot pull their image ({}): the nodes cannot reach its registry",
            example_image_reason.unwrap_or_default()
        ));
    }
    if other > 0 {
        causes.push(format!(
            "{other} pods scheduled but not ready: their containers are still starting or failing (kubectl describe pod shows why)"
        ));
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(spec: serde_json::Value) -> Pod {
        serde_json::from_value(spec).unwrap_or_else(|e| panic!("a pod: {e}"))
    }

    #[test]
    fn each_kind_of_unready_pod_is_named_with_its_count() {
        let pods = [
            pod(json!({"metadata": {"name": "a"}, "spec": {"containers": []}})),
            pod(json!({"metadata": {"name": "b"}, "spec": {"containers": []}})),
            pod(json!({
                "metadata": {"name": "c"},
                "spec": {"containers": [], "nodeName": "n1"},
                "status": {"containerStatuses": [{
                    "name": "c", "image": "x", "imageID": "", "ready": false, "restartCount": 0,
                    "state": {"waiting": {"reason": "ImagePullBackOff"}}
                }]}
            })),
            pod(json!({"metadata": {"name": "d"}, "spec": {"containers": [], "nodeName": "n1"}})),
            pod(json!({
                "metadata": {"name": "ready"},
                "spec": {"containers": [], "nodeName": "n1"},
                "status": {"conditions": [{"type": "Ready", "status": "True"}]}
            })),
            pod(json!({
                "metadata": {"name": "done"},
                "spec": {"containers": []},
                "status": {"phase": "Succeeded"}
            })),
        ];
        let causes = unready_causes(&pods);
        assert_eq!(causes.len(), 3, "{causes:?}");
        assert!(causes[0].starts_with("2 pods not scheduled"), "{causes:?}");
        assert!(causes[0].contains("--stand-in-kubelet"), "{causes:?}");
        assert!(
            causes[1].starts_with("1 pods cannot pull their image (ImagePullBackOff)"),
            "{causes:?}"
        );
        assert!(
            causes[2].starts_with("1 pods scheduled but not ready"),
            "{causes:?}"
        );
    }

    #[test]
    fn ready_pods_have_no_causes() {
        let ready = pod(json!({
            "metadata": {"name": "ready"},
            "spec": {"containers": [], "nodeName": "n1"},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}
        }));
        assert!(unready_causes([&ready]).is_empty());
    }
}
