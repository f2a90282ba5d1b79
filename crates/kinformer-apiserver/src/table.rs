//! Server-side printing: `meta.k8s.io/v1` `Table` answers for `kubectl get`.
//!
//! kubectl asks for a table with `Accept: application/json;as=Table;v=v1;g=meta.k8s.io, …,
//! application/json` and prints the server's columns. The columns are Kubernetes' default ones
//! for the built-in kinds served here (pods: NAME, READY, STATUS, RESTARTS, AGE; deployments:
//! NAME, READY, UP-TO-DATE, AVAILABLE, AGE; …) and NAME, AGE for any other kind. Each row
//! carries the object as `includeObject` asks: its metadata (`PartialObjectMetadata`, the
//! default, which kubectl needs for the NAMESPACE column of `-A`), the whole object, or none.
//! A watch that asks for a table (`kubectl get -w`) gets each event's object as a one-row
//! table with the same columns.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Map, Value, json};

use crate::object::StoredObject;
use crate::resource::ResourceDef;
use crate::status::ApiError;

/// True if `accept` asks for a `meta.k8s.io` `Table` (v1 or v1beta1) in JSON.
pub fn wants_table(accept: Option<&str>) -> bool {
    accept.unwrap_or("").split(',').any(|range| {
        let mut parts = range.split(';').map(str::trim);
        let base = parts.next().unwrap_or("");
        if !base.eq_ignore_ascii_case(crate::media::JSON) {
            return false;
        }
        let (mut table, mut group, mut version) = (false, false, false);
        for p in parts {
            match p.split_once('=') {
                Some(("as", "Table")) => table = true,
                Some(("g", "meta.k8s.io")) => group = true,
                Some(("v", "v1" | "v1beta1")) => version = true,
                _ => {}
            }
        }
        table && group && version
    })
}

/// What each row carries besides its cells (the `includeObject` parameter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IncludeObject {
    /// No object.
    None,
    /// The object's metadata as a `PartialObjectMetadata` (Kubernetes' default).
    #[default]
    Metadata,
    /// The whole object.
    Object,
}

impl IncludeObject {
    /// Parses the `includeObject` query parameter (absent: [`IncludeObject::Metadata`]).
    ///
    /// # Errors
    /// 400 for a value other than `None`, `Metadata` or `Object`.
    pub fn parse(query: Option<&str>) -> Result<Self, ApiError> {
        let value = query
            .unwrap_or_default()
            .split('&')
            .find_map(|pair| pair.strip_prefix("includeObject="))
            .map(crate::query::percent_decode)
            .transpose()?;
        match value.as_deref() {
            None | Some("") | Some("Metadata") => Ok(Self::Metadata),
            Some("None") => Ok(Self::None),
            Some("Object") => Ok(Self::Object),
            Some(other) => Err(ApiError::bad_request(format!(
                "includeObject: Unsupported value: \"{other}\": supported values: \"Metadata\", \"None\", \"Object\""
            ))),
        }
    }
}

struct Column {
    name: &'static str,
    kind: &'static str,
    description: &'static str,
}

const fn col(name: &'static str, kind: &'static str, description: &'static str) -> Column {
    Column {
        name,
        kind,
        description,
    }
}

const NAME: Column = col(
    "Name",
    "string",
    "Name must be unique within a namespace. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
);
const AGE: Column = col(
    "Age",
    "string",
    "CreationTimestamp is a timestamp representing the server time when this object was created.",
);

/// The columns between NAME and AGE for a kind.
fn middle_columns(def: &ResourceDef) -> &'static [Column] {
    const POD: &[Column] = &[
        col(
            "Ready",
            "string",
            "The aggregate readiness state of this pod for accepting traffic.",
        ),
        col(
            "Status",
            "string",
            "The aggregate status of the containers in this pod.",
        ),
        col(
            "Restarts",
            "integer",
            "The number of times the containers in this pod have been restarted.",
        ),
    ];
    const NAMESPACE: &[Column] = &[col("Status", "string", "The status of the namespace")];
    const CONFIGMAP: &[Column] = &[col(
        "Data",
        "string",
        "Data contains the configuration data.",
    )];
    const SERVICE: &[Column] = &[
        col("Type", "string", "The type of the service."),
        col("Cluster-IP", "string", "The cluster IP of the service."),
        col("External-IP", "string", "The external IPs of the service."),
        col("Port(s)", "string", "The ports of the service."),
    ];
    const DEPLOYMENT: &[Column] = &[
        col("Ready", "string", "Number of the pod with ready state"),
        col(
            "Up-to-date",
            "string",
            "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
        ),
        col(
            "Available",
            "string",
            "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
        ),
    ];
    const REPLICASET: &[Column] = &[
        col("Desired", "integer", "Number of desired pods."),
        col("Current", "integer", "Number of actual replicas."),
        col("Ready", "integer", "The number of ready replicas."),
    ];
    const LEASE: &[Column] = &[col("Holder", "string", "The holder of the lease.")];
    match (def.group.as_str(), def.kind.as_str()) {
        ("", "Pod") => POD,
        ("", "Namespace") => NAMESPACE,
        ("", "ConfigMap") => CONFIGMAP,
        ("", "Service") => SERVICE,
        ("apps", "Deployment") => DEPLOYMENT,
        ("apps", "ReplicaSet") => REPLICASET,
        ("coordination.k8s.io", "Lease") => LEASE,
        _ => &[],
    }
}

/// The columns after AGE that only `-o wide` shows (priority 1), as Kubernetes' printers.
fn wide_columns(def: &ResourceDef) -> &'static [Column] {
    const POD: &[Column] = &[
        col(
            "IP",
            "string",
            "IP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
        ),
        col(
            "Node",
            "string",
            "NodeName is a request to schedule this pod onto a specific node.",
        ),
        col(
            "Nominated Node",
            "string",
            "nominatedNodeName is set when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods.",
        ),
        col(
            "Readiness Gates",
            "string",
            "If specified, all readiness gates will be evaluated for pod readiness.",
        ),
    ];
    const WORKLOAD: &[Column] = &[
        col(
            "Containers",
            "string",
            "Names of each container in the template.",
        ),
        col(
            "Images",
            "string",
            "Images referenced by each container in the template.",
        ),
        col(
            "Selector",
            "string",
            "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.",
        ),
    ];
    const SERVICE: &[Column] = &[col(
        "Selector",
        "string",
        "Route service traffic to pods with label keys and values matching this selector.",
    )];
    match (def.group.as_str(), def.kind.as_str()) {
        ("", "Pod") => POD,
        ("", "Service") => SERVICE,
        ("apps", "Deployment" | "ReplicaSet") => WORKLOAD,
        _ => &[],
    }
}

/// `<none>` for an empty cell.
fn or_none(s: String) -> Value {
    if s.is_empty() {
        json!("<none>")
    } else {
        json!(s)
    }
}

/// `k=v,...` of a label map, in key order (as `labels.Set.String`).
fn label_map(v: Option<&Value>) -> String {
    v.and_then(Value::as_object).map_or_else(String::new, |m| {
        let mut pairs: Vec<String> = m
            .iter()
            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
            .collect();
        pairs.sort();
        pairs.join(",")
    })
}

/// A `LabelSelector` as `metav1.FormatLabelSelector` prints it: match labels, then the
/// expressions (`k in (a,b)`, `k notin (a)`, `k`, `!k`).
fn label_selector(sel: Option<&Value>) -> String {
    let Some(sel) = sel else {
        return String::new();
    };
    let mut parts = vec![label_map(sel.get("matchLabels"))];
    parts.retain(|p| !p.is_empty());
    for e in array_at(sel, &["matchExpressions"]) {
        let key = str_at(e, &["key"]).unwrap_or_default();
        let values: Vec<&str> = array_at(e, &["values"])
            .iter()
            .filter_map(Value::as_str)
            .collect();
        parts.push(match str_at(e, &["operator"]).unwrap_or_default() {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "DoesNotExist" => format!("!{key}"),
            _ => key.to_string(),
        });
    }
    parts.join(",")
}

/// The `-o wide` cells of an object (see [`wide_columns`]).
fn wide_cells(def: &ResourceDef, o: &Value) -> Vec<Value> {
    let text = |path: &[&str]| or_none(str_at(o, path).unwrap_or_default().to_string());
    match (def.group.as_str(), def.kind.as_str()) {
        ("", "Pod") => {
            let gates = array_at(o, &["spec", "readinessGates"]);
            let conditions = array_at(o, &["status", "conditions"]);
            let ready_gates = gates
                .iter()
                .filter(|g| {
                    let ty = str_at(g, &["conditionType"]);
                    conditions.iter().any(|c| {
                        str_at(c, &["type"]) == ty && str_at(c, &["status"]) == Some("True")
                    })
                })
                .count();
            let gates = if gates.is_empty() {
                String::new()
            } else {
                format!("{ready_gates}/{}", gates.len())
            };
            vec![
                text(&["status", "podIP"]),
                text(&["spec", "nodeName"]),
                text(&["status", "nominatedNodeName"]),
                or_none(gates),
            ]
        }
        ("", "Service") => vec![or_none(label_map(
            o.get("spec").and_then(|s| s.get("selector")),
        ))],
        ("apps", "Deployment" | "ReplicaSet") => {
            let containers = array_at(o, &["spec", "template", "spec", "containers"]);
            let join = |field: &str| {
                containers
                    .iter()
                    .map(|c| str_at(c, &[field]).unwrap_or_default())
                    .collect::<Vec<_>>()
                    .join(",")
            };
            vec![
                or_none(join("name")),
                or_none(join("image")),
                or_none(label_selector(
                    o.get("spec").and_then(|s| s.get("selector")),
                )),
            ]
        }
        _ => Vec::new(),
    }
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    path.iter().try_fold(v, |v, k| v.get(k))?.as_str()
}

fn int_at(v: &Value, path: &[&str]) -> Option<i64> {
    path.iter().try_fold(v, |v, k| v.get(k))?.as_i64()
}

fn array_at<'a>(v: &'a Value, path: &[&str]) -> &'a [Value] {
    path.iter()
        .try_fold(v, |v, k| v.get(k))
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn pod_cells(pod: &Value) -> Vec<Value> {
    let total = array_at(pod, &["spec", "containers"]).len();
    let statuses = array_at(pod, &["status", "containerStatuses"]);
    let ready = statuses
        .iter()
        .filter(|s| s.get("ready").and_then(Value::as_bool) == Some(true))
        .count();
    let restarts: i64 = statuses
        .iter()
        .filter_map(|s| s.get("restartCount").and_then(Value::as_i64))
        .sum();
    // As kubectl's printer: the phase (Pending, as the API server sets it on create, when
    // absent), the pod's reason, then a container's waiting or terminated reason, and
    // Terminating for a pod being deleted.
    let mut status = str_at(pod, &["status", "reason"])
        .or_else(|| str_at(pod, &["status", "phase"]))
        .unwrap_or("Pending")
        .to_string();
    for s in statuses.iter().rev() {
        if let Some(r) = str_at(s, &["state", "waiting", "reason"]).filter(|r| !r.is_empty()) {
            status = r.to_string();
        } else if let Some(r) =
            str_at(s, &["state", "terminated", "reason"]).filter(|r| !r.is_empty())
        {
            status = r.to_string();
        }
    }
    if pod
        .get("metadata")
        .and_then(|m| m.get("deletionTimestamp"))
        .is_some_and(|t| !t.is_null())
    {
        status = "Terminating".into();
    }
    vec![
        json!(format!("{ready}/{total}")),
        json!(status),
        json!(restarts),
    ]
}

fn service_cells(svc: &Value) -> Vec<Value> {
    let none = || "<none>".to_string();
    let ty = str_at(svc, &["spec", "type"]).unwrap_or("ClusterIP");
    let cluster_ip = str_at(svc, &["spec", "clusterIP"])
        .filter(|s| !s.is_empty())
        .map_or_else(none, str::to_string);
    let mut external: Vec<String> = array_at(svc, &["spec", "externalIPs"])
        .iter()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    for ingress in array_at(svc, &["status", "loadBalancer", "ingress"]) {
        if let Some(a) = str_at(ingress, &["ip"]).or_else(|| str_at(ingress, &["hostname"])) {
            external.push(a.to_string());
        }
    }
    let external = if external.is_empty() {
        if ty == "LoadBalancer" {
            "<pending>".to_string()
        } else if let Some(name) = str_at(svc, &["spec", "externalName"]) {
            name.to_string()
        } else {
            none()
        }
    } else {
        external.join(",")
    };
    let ports: Vec<String> = array_at(svc, &["spec", "ports"])
        .iter()
        .map(|p| {
            let port = int_at(p, &["port"]).unwrap_or(0);
            let proto = str_at(p, &["protocol"]).unwrap_or("TCP");
            match int_at(p, &["nodePort"]) {
                Some(np) => format!("{port}:{np}/{proto}"),
                None => format!("{port}/{proto}"),
            }
        })
        .collect();
    let ports = if ports.is_empty() {
        none()
    } else {
        ports.join(",")
    };
    vec![json!(ty), json!(cluster_ip), json!(external), json!(ports)]
}

fn cells(def: &ResourceDef, o: &Value) -> Vec<Value> {
    let status_int = |k: &str| int_at(o, &["status", k]).unwrap_or(0);
    match (def.group.as_str(), def.kind.as_str()) {
        ("", "Pod") => pod_cells(o),
        ("", "Namespace") => vec![json!(str_at(o, &["status", "phase"]).unwrap_or("Active"))],
        ("", "ConfigMap") => {
            let n = |k: &str| o.get(k).and_then(Value::as_object).map_or(0, Map::len);
            vec![json!(n("data") + n("binaryData"))]
        }
        ("", "Service") => service_cells(o),
        ("apps", "Deployment") => {
            let desired = int_at(o, &["spec", "replicas"]).unwrap_or(1);
            vec![
                json!(format!("{}/{desired}", status_int("readyReplicas"))),
                json!(status_int("updatedReplicas")),
                json!(status_int("availableReplicas")),
            ]
        }
        ("apps", "ReplicaSet") => vec![
            json!(int_at(o, &["spec", "replicas"]).unwrap_or(1)),
            json!(status_int("replicas")),
            json!(status_int("readyReplicas")),
        ],
        ("coordination.k8s.io", "Lease") => {
            vec![json!(
                str_at(o, &["spec", "holderIdentity"]).unwrap_or("<none>")
            )]
        }
        _ => Vec::new(),
    }
}

/// A duration as kubectl prints ages (`apimachinery`'s `HumanDuration`): `45s`, `5m12s`,
/// `3h20m`, `2d4h`, `1y30d`.
pub fn human_duration(secs: i64) -> String {
    if secs < -1 {
        return "<invalid>".into();
    }
    if secs < 0 {
        return "0s".into();
    }
    if secs < 120 {
        return format!("{secs}s");
    }
    let minutes = secs / 60;
    if minutes < 10 {
        return match secs % 60 {
            0 => format!("{minutes}m"),
            s => format!("{minutes}m{s}s"),
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        return match minutes % 60 {
            0 => format!("{hours}h"),
            m => format!("{hours}h{m}m"),
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        return match hours % 24 {
            0 => format!("{}d", hours / 24),
            h => format!("{}d{h}h", hours / 24),
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        return match (hours / 24) % 365 {
            0 => format!("{}y", hours / 24 / 365),
            d => format!("{}y{d}d", hours / 24 / 365),
        };
    }
    format!("{}y", hours / 24 / 365)
}

/// The AGE cell: the time since `creationTimestamp` at `now` (Unix seconds), `<unknown>`
/// without one.
pub fn age(o: &Value, now: i64) -> String {
    str_at(o, &["metadata", "creationTimestamp"])
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .map_or_else(
            || "<unknown>".to_string(),
            |t| human_duration(now - t.as_second()),
        )
}

fn now_secs() -> i64 {
    jiff::Timestamp::now().as_second()
}

/// The `columnDefinitions` of a kind's table.
pub fn column_definitions(def: &ResourceDef) -> Value {
    let columns = std::iter::once(&NAME)
        .chain(middle_columns(def))
        .chain(std::iter::once(&AGE))
        .map(|c| (c, 0))
        .chain(wide_columns(def).iter().map(|c| (c, 1)));
    Value::Array(
        columns
            .map(|(c, priority)| {
                let mut d = json!({"name": c.name, "type": c.kind, "format": "", "description": c.description, "priority": priority});
                if c.name == "Name" {
                    d["format"] = json!("name");
                }
                d
            })
            .collect(),
    )
}

/// One row: the cells (NAME, the kind's columns, AGE at `now`, then the `-o wide` ones) and
/// the object as `include` asks.
pub fn row(def: &ResourceDef, o: &Value, include: IncludeObject, now: i64) -> Value {
    let name = str_at(o, &["metadata", "name"]).unwrap_or_default();
    let mut cells = vec![json!(name)];
    cells.extend(self::cells(def, o));
    cells.push(json!(age(o, now)));
    cells.extend(wide_cells(def, o));
    let mut row = json!({"cells": cells});
    match include {
        IncludeObject::None => {}
        IncludeObject::Object => row["object"] = o.clone(),
        IncludeObject::Metadata => {
            let mut meta = o.get("metadata").cloned().unwrap_or_else(|| json!({}));
            if let Some(m) = meta.as_object_mut() {
                // As Kubernetes: managedFields are not part of a table's metadata.
                m.remove("managedFields");
            }
            row["object"] = json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta});
        }
    }
    row
}

fn parse(o: &StoredObject) -> Result<Value, ApiError> {
    o.to_value()
        .map_err(|e| ApiError::internal(format!("stored object is not JSON: {e}")))
}

fn render(def: &ResourceDef, meta: Value, rows: Vec<Value>) -> Bytes {
    let table = json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": meta,
        "columnDefinitions": column_definitions(def),
        "rows": rows,
    });
    Bytes::from(table.to_string())
}

/// A list page as a `Table` (its `metadata` carries the list's resourceVersion and continue
/// token).
///
/// # Errors
/// 500 if a stored object is not JSON (never for objects this crate wrote).
pub fn list_table(
    def: &ResourceDef,
    rev: u64,
    items: &[Arc<StoredObject>],
    cont: Option<String>,
    include: IncludeObject,
) -> Result<Bytes, ApiError> {
    let now = now_secs();
    let rows = items
        .iter()
        .map(|o| Ok(row(def, &parse(o)?, include, now)))
        .collect::<Result<Vec<_>, ApiError>>()?;
    let mut meta = json!({"resourceVersion": rev.to_string()});
    if let Some(c) = cont {
        meta["continue"] = json!(c);
    }
    Ok(render(def, meta, rows))
}

/// One object as a one-row `Table` (`kubectl get pod x`).
///
/// # Errors
/// 500 if the stored object is not JSON.
pub fn object_table(
    def: &ResourceDef,
    o: &StoredObject,
    include: IncludeObject,
) -> Result<Bytes, ApiError> {
    let v = parse(o)?;
    let meta = json!({"resourceVersion": o.revision.to_string()});
    Ok(render(def, meta, vec![row(def, &v, include, now_secs())]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(group: &str, plural: &str, kind: &str) -> ResourceDef {
        ResourceDef::new(group, "v1", plural, kind, true)
    }

    const NOW: i64 = 1_700_000_000;

    fn created(secs_ago: i64) -> String {
        crate::object::rfc3339(NOW - secs_ago)
    }

    #[test]
    fn kubectls_accept_header_asks_for_a_table() {
        assert!(wants_table(Some(
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
        )));
        assert!(wants_table(Some(
            "application/json; as=Table; g=meta.k8s.io; v=v1beta1"
        )));
        for a in [
            None,
            Some("application/json"),
            Some("application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io"),
            Some("application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"),
            Some("application/json;as=Table;v=v2;g=meta.k8s.io"),
        ] {
            assert!(!wants_table(a), "{a:?}");
        }
    }

    #[test]
    fn include_object_parses_kubernetes_values() {
        assert_eq!(IncludeObject::parse(None).unwrap(), IncludeObject::Metadata);
        assert_eq!(
            IncludeObject::parse(Some("limit=5&includeObject=Object")).unwrap(),
            IncludeObject::Object
        );
        assert_eq!(
            IncludeObject::parse(Some("includeObject=None")).unwrap(),
            IncludeObject::None
        );
        assert_eq!(
            IncludeObject::parse(Some("includeObject=All"))
                .unwrap_err()
                .code,
            400
        );
    }

    #[test]
    fn ages_print_as_kubectl_prints_them() {
        for (secs, want) in [
            (-5, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (119, "119s"),
            (120, "2m"),
            (312, "5m12s"),
            (600, "10m"),
            (179 * 60, "179m"),
            (3 * 3600 + 20 * 60, "3h20m"),
            (8 * 3600, "8h"),
            (47 * 3600, "47h"),
            (2 * 86400 + 4 * 3600, "2d4h"),
            (3 * 86400, "3d"),
            (400 * 86400, "400d"),
            (3 * 365 * 86400 + 30 * 86400, "3y30d"),
            (9 * 365 * 86400, "9y"),
        ] {
            assert_eq!(human_duration(secs), want, "{secs}");
        }
        assert_eq!(age(&json!({"metadata": {}}), NOW), "<unknown>");
        assert_eq!(
            age(
                &json!({"metadata": {"creationTimestamp": created(90)}}),
                NOW
            ),
            "90s"
        );
    }

    #[test]
    fn pod_rows_have_ready_status_restarts_and_age() {
        let pods = def("", "pods", "Pod");
        let names: Vec<Value> = column_definitions(&pods)
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].clone())
            .collect();
        assert_eq!(
            names,
            [
                "Name",
                "Ready",
                "Status",
                "Restarts",
                "Age",
                "IP",
                "Node",
                "Nominated Node",
                "Readiness Gates"
            ]
        );
        let priorities: Vec<Value> = column_definitions(&pods)
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["priority"].clone())
            .collect();
        assert_eq!(priorities, [0, 0, 0, 0, 0, 1, 1, 1, 1]);
        let pod = json!({
            "metadata": {"name": "web-1", "namespace": "ns-1", "creationTimestamp": created(300), "managedFields": [{}]},
            "spec": {"containers": [{"name": "a"}, {"name": "b"}]},
            "status": {"phase": "Running", "containerStatuses": [
                {"name": "a", "ready": true, "restartCount": 2},
                {"name": "b", "ready": false, "restartCount": 1, "state": {"waiting": {"reason": "CrashLoopBackOff"}}},
            ]},
        });
        let r = row(&pods, &pod, IncludeObject::Metadata, NOW);
        assert_eq!(
            r["cells"],
            json!([
                "web-1",
                "1/2",
                "CrashLoopBackOff",
                3,
                "5m",
                "<none>",
                "<none>",
                "<none>",
                "<none>"
            ])
        );
        assert_eq!(r["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(r["object"]["metadata"]["namespace"], "ns-1");
        assert!(r["object"]["metadata"].get("managedFields").is_none());
        // No status yet: Pending, as the API server would have set it.
        let bare = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}]}});
        assert_eq!(
            row(&pods, &bare, IncludeObject::None, NOW),
            json!({"cells": ["p", "0/1", "Pending", 0, "<unknown>", "<none>", "<none>", "<none>", "<none>"]})
        );
        let scheduled = json!({
            "metadata": {"name": "q"},
            "spec": {"containers": [{"name": "a"}], "nodeName": "node-1",
                     "readinessGates": [{"conditionType": "g1"}, {"conditionType": "g2"}]},
            "status": {"podIP": "10.1.2.3", "conditions": [{"type": "g1", "status": "True"}, {"type": "g2", "status": "False"}]},
        });
        assert_eq!(
            row(&pods, &scheduled, IncludeObject::None, NOW)["cells"]
                .as_array()
                .unwrap()[5..],
            [
                json!("10.1.2.3"),
                json!("node-1"),
                json!("<none>"),
                json!("1/2")
            ]
        );
        let mut deleting = pod.clone();
        deleting["metadata"]["deletionTimestamp"] = json!(created(1));
        assert_eq!(
            row(&pods, &deleting, IncludeObject::None, NOW)["cells"][2],
            "Terminating"
        );
    }

    #[test]
    fn other_kinds_have_their_default_columns() {
        let d = json!({"metadata": {"name": "d", "creationTimestamp": created(30)}, "spec": {"replicas": 3}, "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}});
        assert_eq!(
            row(
                &def("apps", "deployments", "Deployment"),
                &d,
                IncludeObject::None,
                NOW
            )["cells"],
            json!(["d", "2/3", 3, 2, "30s", "<none>", "<none>", "<none>"])
        );
        let rs = json!({"metadata": {"name": "r"}, "spec": {"replicas": 2,
            "selector": {"matchLabels": {"app": "web", "tier": "a"},
                         "matchExpressions": [{"key": "env", "operator": "In", "values": ["x", "y"]}, {"key": "old", "operator": "DoesNotExist"}]},
            "template": {"spec": {"containers": [{"name": "web", "image": "nginx"}, {"name": "log", "image": "busybox"}]}}}});
        assert_eq!(
            row(
                &def("apps", "replicasets", "ReplicaSet"),
                &rs,
                IncludeObject::None,
                NOW
            )["cells"]
                .as_array()
                .unwrap()[5..],
            [
                json!("web,log"),
                json!("nginx,busybox"),
                json!("app=web,tier=a,env in (x,y),!old")
            ]
        );
        let cm = json!({"metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}});
        assert_eq!(
            row(
                &def("", "configmaps", "ConfigMap"),
                &cm,
                IncludeObject::None,
                NOW
            )["cells"],
            json!(["c", 2, "<unknown>"])
        );
        let svc = json!({"metadata": {"name": "s"}, "spec": {"clusterIP": "10.0.0.1", "ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}]}});
        assert_eq!(
            row(
                &def("", "services", "Service"),
                &svc,
                IncludeObject::None,
                NOW
            )["cells"],
            json!([
                "s",
                "ClusterIP",
                "10.0.0.1",
                "<none>",
                "80/TCP,53/UDP",
                "<unknown>",
                "<none>"
            ])
        );
        let ns = json!({"metadata": {"name": "n"}});
        let namespaces = ResourceDef::new("", "v1", "namespaces", "Namespace", false);
        assert_eq!(
            row(&namespaces, &ns, IncludeObject::None, NOW)["cells"],
            json!(["n", "Active", "<unknown>"])
        );
        let widgets = def("example.com", "widgets", "Widget");
        assert_eq!(column_definitions(&widgets).as_array().unwrap().len(), 2);
        let w = json!({"metadata": {"name": "w"}, "spec": {}});
        let r = row(&widgets, &w, IncludeObject::Object, NOW);
        assert_eq!(r["cells"], json!(["w", "<unknown>"]));
        assert_eq!(r["object"], w);
    }

    #[test]
    fn a_list_table_keeps_the_lists_revision_and_continue_token() {
        let pods = def("", "pods", "Pod");
        let o = StoredObject::from_value(&json!({"metadata": {"name": "p", "namespace": "n"}}), 7)
            .unwrap();
        let t: Value = serde_json::from_slice(
            &list_table(&pods, 9, &[o], Some("tok".into()), IncludeObject::Metadata).unwrap(),
        )
        .unwrap();
        assert_eq!(
            (&t["kind"], &t["apiVersion"]),
            (&json!("Table"), &json!("meta.k8s.io/v1"))
        );
        assert_eq!(
            t["metadata"],
            json!({"resourceVersion": "9", "continue": "tok"})
        );
        assert_eq!(t["rows"][0]["cells"][0], "p");
    }
}
