//! Validation of names, metadata, type information, field selectors and object sizes, answered
//! as kube-apiserver answers them.
//!
//! | Input | Answer |
//! |---|---|
//! | object name not a DNS-1123 subdomain (`-lead-dash`, `Bad_Name`), namespace name not a DNS-1123 label | 422 `Invalid` |
//! | labels/annotations/finalizers of the wrong JSON type in a create or update body | 400 `BadRequest` (the body does not decode) |
//! | the same produced by a patch | 422 `Invalid` (field `patch`) |
//! | a label key or value Kubernetes would not accept | 422 `Invalid` |
//! | `apiVersion` / `kind` in a body that differ from the resource's | 400 `BadRequest` |
//! | a field selector on a field the resource does not support | 400 `BadRequest` |
//! | a stored object larger than [`MAX_OBJECT_BYTES`] | 413 `RequestEntityTooLarge` |

use serde_json::{Map, Value};

use crate::resource::ResourceDef;
use crate::selector::FieldSelector;
use crate::status::ApiError;

/// The largest object the store keeps: 1.5 MiB, etcd's default `--max-request-bytes`. A write
/// whose result would be larger (say a merge patch that keeps growing an annotation) fails
/// with 413 `RequestEntityTooLarge` and the message etcd gives, "etcdserver: request is too
/// large", as kube-apiserver answers it. Request bodies have their own, larger limit (3 MiB,
/// `ServerConfig::max_body_bytes`).
pub const MAX_OBJECT_BYTES: usize = 1536 * 1024;

/// True for a DNS-1123 label: 1–63 characters `[a-z0-9-]`, starting and ending alphanumeric.
pub fn is_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b.first().is_some_and(u8::is_ascii_alphanumeric)
        && b.last().is_some_and(u8::is_ascii_alphanumeric)
}

/// True for a DNS-1123 subdomain: at most 253 characters, dot-separated DNS-1123 labels.
pub fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns1123_label)
}

/// True for a label value: empty, or at most 63 characters `[A-Za-z0-9-_.]` starting and
/// ending alphanumeric.
pub fn is_label_value(s: &str) -> bool {
    kinformer_labels::is_valid_value(s)
}

/// True for a qualified name (label and annotation keys): an optional DNS-1123 subdomain
/// prefix and `/`, then a non-empty label-value-like name.
pub fn is_qualified_name(s: &str) -> bool {
    kinformer_labels::is_valid_key(s)
}

/// The object name rule: 422 unless a DNS-1123 subdomain (namespaces: a DNS-1123 label).
///
/// # Errors
/// 422 `Invalid` on `metadata.name`.
pub fn name(def: &ResourceDef, name: &str) -> Result<(), ApiError> {
    let is_namespace = def.group.is_empty() && def.plural == "namespaces";
    let (ok, rule) = if is_namespace {
        (
            is_dns1123_label(name),
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
        )
    } else {
        (
            is_dns1123_subdomain(name),
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
        )
    };
    if ok {
        Ok(())
    } else {
        Err(ApiError::invalid(
            &def.kind,
            &def.group,
            name,
            "metadata.name",
            &format!("Invalid value: {name:?}: {rule}"),
        ))
    }
}

/// The namespace name rule: 422 unless a DNS-1123 label.
///
/// # Errors
/// 422 `Invalid` on `metadata.namespace`.
pub fn namespace(def: &ResourceDef, object: &str, ns: &str) -> Result<(), ApiError> {
    if is_dns1123_label(ns) {
        Ok(())
    } else {
        Err(ApiError::invalid(
            &def.kind,
            &def.group,
            object,
            "metadata.namespace",
            &format!(
                "Invalid value: {ns:?}: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character"
            ),
        ))
    }
}

/// Checks that the metadata fields a typed client decodes have the JSON types Kubernetes
/// gives them; returns the offending field and what was expected.
fn metadata_type_error(meta: &Map<String, Value>) -> Option<String> {
    let strings = |v: &Value| {
        v.as_object()
            .is_some_and(|m| m.values().all(Value::is_string))
    };
    for (field, ok, want) in [
        ("name", Value::is_string as fn(&Value) -> bool, "a string"),
        ("namespace", Value::is_string, "a string"),
        ("generateName", Value::is_string, "a string"),
        ("resourceVersion", Value::is_string, "a string"),
        ("labels", strings, "a map of strings"),
        ("annotations", strings, "a map of strings"),
        (
            "finalizers",
            |v: &Value| v.as_array().is_some_and(|a| a.iter().all(Value::is_string)),
            "a list of strings",
        ),
    ] {
        if let Some(v) = meta.get(field)
            && !v.is_null()
            && !ok(v)
        {
            return Some(format!("metadata.{field} must be {want}, not {v}"));
        }
    }
    if let Some(v) = meta.get("ownerReferences")
        && !v.is_null()
        && !v.is_array()
    {
        return Some(format!("metadata.ownerReferences must be a list, not {v}"));
    }
    None
}

/// Checks a create or update body: `metadata` of the right JSON types (400 otherwise, as a
/// body that does not decode) and `apiVersion`/`kind`, when present, those of `def` (400).
///
/// # Errors
/// 400 `BadRequest`.
pub fn body(def: &ResourceDef, obj: &Value) -> Result<(), ApiError> {
    if let Some(v) = obj.get("apiVersion").filter(|v| !v.is_null()) {
        let want = def.api_version();
        if v.as_str() != Some(want.as_str()) {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({}) does not match the expected API version ({want})",
                v.as_str().map_or_else(|| v.to_string(), str::to_owned)
            )));
        }
    }
    if let Some(v) = obj.get("kind").filter(|v| !v.is_null())
        && v.as_str() != Some(def.kind.as_str())
    {
        return Err(ApiError::bad_request(format!(
            "the kind in the data ({}) does not match the expected kind ({})",
            v.as_str().map_or_else(|| v.to_string(), str::to_owned),
            def.kind
        )));
    }
    if let Some(meta) = obj.get("metadata").and_then(Value::as_object)
        && let Some(msg) = metadata_type_error(meta)
    {
        return Err(ApiError::bad_request(format!(
            "the request body does not decode as {}: {msg}",
            def.kind
        )));
    }
    Ok(())
}

/// Checks the result of a patch: metadata types (422 on field `patch`, as kube-apiserver
/// reports a patched object that no longer decodes).
///
/// # Errors
/// 422 `Invalid`.
pub fn patched(def: &ResourceDef, name: &str, obj: &Value) -> Result<(), ApiError> {
    if let Some(meta) = obj.get("metadata").and_then(Value::as_object)
        && let Some(msg) = metadata_type_error(meta)
    {
        return Err(ApiError::invalid(
            &def.kind,
            &def.group,
            name,
            "patch",
            &format!("Invalid value: the patched object does not decode: {msg}"),
        ));
    }
    Ok(())
}

/// Checks label keys and values (422).
///
/// # Errors
/// 422 `Invalid` on `metadata.labels`.
pub fn labels(def: &ResourceDef, name: &str, obj: &Value) -> Result<(), ApiError> {
    let Some(labels) = obj
        .get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
    else {
        return Ok(());
    };
    for (k, v) in labels {
        let value = v.as_str().unwrap_or_default();
        let problem = if !is_qualified_name(k) {
            Some(format!(
                "Invalid value: {k:?}: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
            ))
        } else if !is_label_value(value) {
            Some(format!(
                "Invalid value: {value:?}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (at most 63)"
            ))
        } else {
            None
        };
        if let Some(p) = problem {
            return Err(ApiError::invalid(
                &def.kind,
                &def.group,
                name,
                "metadata.labels",
                &p,
            ));
        }
    }
    Ok(())
}

/// The fields a field selector may name on `def`, beyond `metadata.name` and
/// `metadata.namespace` (which every resource supports), as kube-apiserver registers them
/// for the built-in resources. Custom resources support only the two metadata fields.
fn extra_selectable_fields(def: &ResourceDef) -> &'static [&'static str] {
    match (def.group.as_str(), def.plural.as_str()) {
        ("", "pods") => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.podIPs",
            "status.nominatedNodeName",
        ],
        ("", "namespaces") => &["status.phase"],
        ("", "services") => &["spec.clusterIP", "spec.type"],
        ("apps", "replicasets") => &["status.replicas"],
        _ => &[],
    }
}

/// Checks that every field of `selector` is selectable on `def`.
///
/// # Errors
/// 400 `BadRequest` "field label not supported: ...", as kube-apiserver answers.
pub fn field_selector(def: &ResourceDef, selector: &FieldSelector) -> Result<(), ApiError> {
    for r in &selector.0 {
        let f = r.field.as_str();
        if f != "metadata.name"
            && f != "metadata.namespace"
            && !extra_selectable_fields(def).contains(&f)
        {
            return Err(ApiError::bad_request(format!(
                "field label not supported: {f}"
            )));
        }
    }
    Ok(())
}

/// 413 when a serialized object exceeds [`MAX_OBJECT_BYTES`].
///
/// # Errors
/// 413 `RequestEntityTooLarge` "etcdserver: request is too large".
pub fn size(len: usize) -> Result<(), ApiError> {
    if len > MAX_OBJECT_BYTES {
        Err(ApiError::new(
            413,
            "RequestEntityTooLarge",
            format!(
                "etcdserver: request is too large: the object would take {len} bytes, the limit is {MAX_OBJECT_BYTES}"
            ),
        ))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_names() {
        for ok in ["a", "a-b", "a1", "1a", "x.y-z.w"] {
            assert!(is_dns1123_subdomain(ok), "{ok}");
        }
        for bad in [
            "",
            "-lead-dash",
            "trail-",
            "a..b",
            ".a",
            "UPPER",
            "a/b",
            "a_b",
            "..",
        ] {
            assert!(!is_dns1123_subdomain(bad), "{bad}");
        }
        assert!(is_dns1123_label("ns-1"));
        assert!(!is_dns1123_label("a.b"));
        assert!(!is_dns1123_label(&"a".repeat(64)));
    }

    #[test]
    fn label_keys_and_values() {
        assert!(is_qualified_name("app"));
        assert!(is_qualified_name("example.com/app-1"));
        assert!(!is_qualified_name("/app"));
        assert!(!is_qualified_name("Bad_/x"));
        assert!(is_label_value(""));
        assert!(is_label_value("A_b.c-1"));
        assert!(!is_label_value("-x"));
        assert!(!is_label_value(&"v".repeat(64)));
    }

    #[test]
    fn metadata_types() {
        let m = |v: Value| v.as_object().cloned().unwrap_or_default();
        assert!(metadata_type_error(&m(serde_json::json!({"labels": {"a": "b"}}))).is_none());
        assert!(metadata_type_error(&m(serde_json::json!({"labels": {"a": 1}}))).is_some());
        assert!(metadata_type_error(&m(serde_json::json!({"finalizers": [1]}))).is_some());
        assert!(metadata_type_error(&m(serde_json::json!({"name": 5}))).is_some());
    }
}
