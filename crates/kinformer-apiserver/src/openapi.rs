//! OpenAPI v3 documents: `/openapi/v3` (the index) and one document per group version
//! (`/openapi/v3/api/v1`, `/openapi/v3/apis/<group>/<version>`).
//!
//! Scope: what kubectl reads from them, and no more. Before `create -f` and `apply` kubectl
//! checks that the server validates fields itself: the PATCH operation of the object's kind (an
//! operation tagged `x-kubernetes-group-version-kind`) must take the `fieldValidation` query
//! parameter. It does here, so kubectl validates nothing on its side and needs no
//! `--validate=false` (this server accepts `fieldValidation` and does not check fields against a
//! schema). Each document describes every served resource's paths and operations, and a schema
//! per kind that names its `apiVersion`, `kind`, `metadata` and otherwise keeps unknown fields
//! (no field-level schema, so no `kubectl explain`). The PATCH request bodies offered are JSON
//! patch, merge patch and apply; strategic merge patch is not advertised (the schemas carry no
//! patch strategies), so `kubectl apply` computes its patches from its built-in types.
//!
//! `/openapi/v2` is an empty Swagger 2.0 document (no paths, no definitions), in protobuf
//! (gnostic's `openapi_v2.Document`, which kubectl asks for) or JSON: kubectl 1.27 and 1.28
//! refuse to `apply` without one, and, finding no schema in it, patch with their built-in types.

use std::hash::{Hash, Hasher};

use serde_json::{Map, Value, json};

use crate::resource::ResourceDef;

/// The group versions served, as index keys: `api/v1`, `apis/apps/v1`, …
fn group_versions(resources: &[ResourceDef]) -> Vec<(String, String)> {
    let mut gvs: Vec<(String, String)> = vec![(String::new(), "v1".into())];
    for r in resources {
        let gv = (r.group.clone(), r.version.clone());
        if !gvs.contains(&gv) {
            gvs.push(gv);
        }
    }
    gvs
}

fn index_key(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// A hash of a document, for its `serverRelativeURL` (clients cache documents by URL).
fn content_hash(doc: &Value) -> String {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    doc.to_string().hash(&mut h);
    format!("{:016X}", h.finish())
}

/// `/openapi/v3`: every group version's document URL.
pub fn index(resources: &[ResourceDef]) -> Value {
    let mut paths = Map::new();
    for (g, v) in group_versions(resources) {
        let doc = group_version(resources, &g, &v).unwrap_or(Value::Null);
        let key = index_key(&g, &v);
        paths.insert(
            key.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{key}?hash={}", content_hash(&doc))}),
        );
    }
    json!({"paths": paths})
}

/// The schema name Kubernetes gives a kind: `io.k8s.api.core.v1.Pod`,
/// `io.k8s.api.apps.v1.Deployment`, or the reversed group for others (`com.example.v1.Widget`).
pub fn schema_name(def: &ResourceDef) -> String {
    let prefix = match def.group.as_str() {
        "" => "io.k8s.api.core".to_string(),
        g if g.ends_with(".k8s.io") => {
            format!("io.k8s.api.{}", g.trim_end_matches(".k8s.io"))
        }
        g if !g.contains('.') => format!("io.k8s.api.{g}"),
        g => g.rsplit('.').collect::<Vec<_>>().join("."),
    };
    format!("{prefix}.{}.{}", def.version, def.kind)
}

const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1";

fn schema_ref(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

fn gvk(def: &ResourceDef) -> Value {
    json!({"group": def.group, "version": def.version, "kind": def.kind})
}

fn query_param(name: &str, description: &str) -> Value {
    json!({"name": name, "in": "query", "description": description, "schema": {"type": "string", "uniqueItems": true}})
}

fn path_param(name: &str, description: &str) -> Value {
    json!({"name": name, "in": "path", "required": true, "description": description, "schema": {"type": "string", "uniqueItems": true}})
}

fn write_params() -> Vec<Value> {
    vec![
        query_param(
            "dryRun",
            "When present, indicates that modifications should not be persisted.",
        ),
        query_param(
            "fieldManager",
            "fieldManager is a name associated with the actor or entity that is making these changes.",
        ),
        query_param(
            "fieldValidation",
            "fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields: Ignore, Warn or Strict.",
        ),
    ]
}

fn json_content(schema: Value) -> Value {
    json!({"application/json": {"schema": schema}})
}

fn operation(def: &ResourceDef, action: &str, op_id: String, schema: &str) -> Value {
    json!({
        "operationId": op_id,
        "responses": {"200": {"description": "OK", "content": json_content(schema_ref(schema))}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": gvk(def),
    })
}

/// The paths of one resource: its collection (list, create) and its objects (get, replace,
/// patch, delete).
fn resource_paths(def: &ResourceDef, paths: &mut Map<String, Value>) {
    let base = if def.group.is_empty() {
        format!("/api/{}", def.version)
    } else {
        format!("/apis/{}/{}", def.group, def.version)
    };
    let (collection, scope) = if def.namespaced {
        (
            format!("{base}/namespaces/{{namespace}}/{}", def.plural),
            "Namespaced",
        )
    } else {
        (format!("{base}/{}", def.plural), "")
    };
    let id = |verb: &str| {
        let group: String = def
            .group
            .split('.')
            .next()
            .filter(|g| !g.is_empty())
            .map_or_else(|| "Core".to_string(), capitalize);
        format!(
            "{verb}{group}{}{scope}{}",
            capitalize(&def.version),
            def.kind
        )
    };
    let schema = schema_name(def);
    let mut common = Vec::new();
    if def.namespaced {
        common.push(path_param("namespace", "object name and auth scope"));
    }
    let mut list = operation(def, "list", id("list"), &format!("{schema}List"));
    list["parameters"] = json!([
        query_param(
            "labelSelector",
            "A selector to restrict the list of returned objects by their labels."
        ),
        query_param(
            "fieldSelector",
            "A selector to restrict the list of returned objects by their fields."
        ),
        query_param(
            "limit",
            "The maximum number of responses to return for a list call."
        ),
        query_param(
            "continue",
            "The continue option should be set when retrieving more results from the server."
        ),
        query_param(
            "resourceVersion",
            "resourceVersion sets a constraint on what resource versions a request may be served from."
        ),
        query_param(
            "watch",
            "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications."
        ),
    ]);
    let mut create = operation(def, "post", id("create"), &schema);
    create["parameters"] = json!(write_params());
    create["requestBody"] = json!({"required": true, "content": json_content(schema_ref(&schema))});
    paths.insert(
        collection.clone(),
        json!({"get": list, "post": create, "parameters": common}),
    );

    let mut named = common;
    named.push(path_param(
        "name",
        format!("name of the {}", def.kind).as_str(),
    ));
    let mut replace = operation(def, "put", id("replace"), &schema);
    replace["parameters"] = json!(write_params());
    replace["requestBody"] =
        json!({"required": true, "content": json_content(schema_ref(&schema))});
    let mut patch = operation(def, "patch", id("patch"), &schema);
    let patch_body = json!({"schema": schema_ref(&format!("{META}.Patch"))});
    patch["parameters"] = json!(write_params());
    patch["requestBody"] = json!({"required": true, "content": {
        "application/json-patch+json": patch_body,
        "application/merge-patch+json": patch_body,
        "application/apply-patch+yaml": patch_body,
    }});
    let delete = operation(def, "delete", id("delete"), &format!("{META}.Status"));
    paths.insert(
        format!("{collection}/{{name}}"),
        json!({
            "get": operation(def, "get", id("read"), &schema),
            "put": replace,
            "patch": patch,
            "delete": delete,
            "parameters": named,
        }),
    );
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

fn kind_schema(def: &ResourceDef) -> Value {
    json!({
        "description": format!("{} is a {} served by kinformer's API server.", def.kind, def.api_version()),
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object."},
            "kind": {"type": "string", "description": "Kind is a string value representing the REST resource this object represents."},
            "metadata": {"allOf": [schema_ref(&format!("{META}.ObjectMeta"))], "default": {}},
        },
        "x-kubernetes-preserve-unknown-fields": true,
        "x-kubernetes-group-version-kind": [gvk(def)],
    })
}

fn list_schema(def: &ResourceDef) -> Value {
    json!({
        "description": format!("{}List is a list of {}.", def.kind, def.kind),
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "items": {"type": "array", "items": {"allOf": [schema_ref(&schema_name(def))], "default": {}}},
            "metadata": {"allOf": [schema_ref(&format!("{META}.ListMeta"))], "default": {}},
        },
        "x-kubernetes-group-version-kind": [{"group": def.group, "version": def.version, "kind": format!("{}List", def.kind)}],
    })
}

fn meta_schemas(schemas: &mut Map<String, Value>) {
    let open = |description: &str| json!({"description": description, "type": "object", "x-kubernetes-preserve-unknown-fields": true});
    schemas.insert(
        format!("{META}.ObjectMeta"),
        json!({
            "description": "ObjectMeta is metadata that all persisted resources must have.",
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "generateName": {"type": "string"},
                "namespace": {"type": "string"},
                "uid": {"type": "string"},
                "resourceVersion": {"type": "string"},
                "generation": {"type": "integer", "format": "int64"},
                "creationTimestamp": {"type": "string", "format": "date-time"},
                "deletionTimestamp": {"type": "string", "format": "date-time"},
                "labels": {"type": "object", "additionalProperties": {"type": "string", "default": ""}},
                "annotations": {"type": "object", "additionalProperties": {"type": "string", "default": ""}},
                "finalizers": {"type": "array", "items": {"type": "string", "default": ""}},
                "ownerReferences": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                "managedFields": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
            },
        }),
    );
    schemas.insert(
        format!("{META}.ListMeta"),
        open("ListMeta describes metadata that synthetic resources must have."),
    );
    schemas.insert(
        format!("{META}.Status"),
        open("Status is a return value for calls that don't return other objects."),
    );
    schemas.insert(
        format!("{META}.Patch"),
        json!({"description": "Patch is provided to give a concrete name and type to the Kubernetes PATCH request body.", "type": "object"}),
    );
}

/// The document of one group version (`group` empty for the core group), `None` for a group
/// version this server does not serve.
pub fn group_version(resources: &[ResourceDef], group: &str, version: &str) -> Option<Value> {
    let defs: Vec<&ResourceDef> = resources
        .iter()
        .filter(|r| r.group == group && r.version == version)
        .collect();
    if defs.is_empty() && !(group.is_empty() && version == "v1") {
        return None;
    }
    let mut paths = Map::new();
    let mut schemas = Map::new();
    for d in &defs {
        resource_paths(d, &mut paths);
        schemas.insert(schema_name(d), kind_schema(d));
        schemas.insert(format!("{}List", schema_name(d)), list_schema(d));
    }
    meta_schemas(&mut schemas);
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": crate::discovery::version()["gitVersion"]},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}

/// The document at `/openapi/v3/<rest>` (`rest`: `api/v1`, `apis/apps/v1`), if served.
pub fn document(resources: &[ResourceDef], rest: &[&str]) -> Option<Value> {
    match rest {
        ["api", v] => group_version(resources, "", v),
        ["apis", g, v] => group_version(resources, g, v),
        _ => None,
    }
}

/// The media type of a protobuf OpenAPI v2 document.
pub const V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

fn proto_bytes(field: u8, bytes: &[u8], out: &mut Vec<u8>) {
    out.push((field << 3) | 2);
    // Lengths here are short (one varint byte); longer ones take the continuation bit.
    let mut len = bytes.len();
    while len >= 0x80 {
        out.push((len as u8 & 0x7f) | 0x80);
        len >>= 7;
    }
    out.push(len as u8);
    out.extend_from_slice(bytes);
}

/// `/openapi/v2` as gnostic's `openapi_v2.Document` in protobuf: `swagger` (1) `"2.0"`, `info`
/// (2) with `title` (1) and `version` (2), and empty `paths` (8).
pub fn v2_protobuf() -> Vec<u8> {
    let version = crate::discovery::version();
    let mut info = Vec::new();
    proto_bytes(1, b"Kubernetes", &mut info);
    proto_bytes(
        2,
        version["gitVersion"]
            .as_str()
            .unwrap_or_default()
            .as_bytes(),
        &mut info,
    );
    let mut doc = Vec::new();
    proto_bytes(1, b"2.0", &mut doc);
    proto_bytes(2, &info, &mut doc);
    proto_bytes(8, &[], &mut doc);
    doc
}

/// `/openapi/v2` in JSON: the same empty document.
pub fn v2_json() -> Value {
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": crate::discovery::version()["gitVersion"]},
        "paths": {},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_v2_document_is_an_empty_swagger_document() {
        let pb = v2_protobuf();
        let version = b"v1.33.0-kinformer";
        let mut want = vec![0x0a, 3];
        want.extend_from_slice(b"2.0");
        want.extend_from_slice(&[0x12, (2 + 10 + 2 + version.len()) as u8, 0x0a, 10]);
        want.extend_from_slice(b"Kubernetes");
        want.extend_from_slice(&[0x12, version.len() as u8]);
        want.extend_from_slice(version);
        want.extend_from_slice(&[0x42, 0]);
        assert_eq!(pb, want);
        assert_eq!(v2_json()["swagger"], "2.0");
        let mut long = Vec::new();
        proto_bytes(1, &[7; 200], &mut long);
        assert_eq!(&long[..3], &[0x0a, 0xc8, 0x01]);
    }

    fn patch_ops(doc: &Value) -> Vec<&Value> {
        doc["paths"]
            .as_object()
            .unwrap()
            .values()
            .filter_map(|p| p.get("patch"))
            .collect()
    }

    #[test]
    fn the_index_names_every_group_versions_document() {
        let rs = ResourceDef::builtins();
        let idx = index(&rs);
        let paths = idx["paths"].as_object().unwrap();
        let keys: Vec<&str> = paths.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            ["api/v1", "apis/apps/v1", "apis/coordination.k8s.io/v1"]
        );
        let url = paths["apis/apps/v1"]["serverRelativeURL"].as_str().unwrap();
        assert!(url.starts_with("/openapi/v3/apis/apps/v1?hash="), "{url}");
        // The hash follows the content: stable for the same resources, new for others.
        assert_eq!(index(&rs), idx);
        let more = ServerConfigLike::with_widgets();
        // Core v1 gained nodes: a new hash; apps/v1 did not change.
        assert_ne!(index(&more)["paths"]["api/v1"], idx["paths"]["api/v1"]);
        assert_eq!(
            index(&more)["paths"]["apis/apps/v1"],
            idx["paths"]["apis/apps/v1"]
        );
    }

    /// Built-ins plus a namespaced custom resource and a cluster-scoped core one.
    struct ServerConfigLike;
    impl ServerConfigLike {
        fn with_widgets() -> Vec<ResourceDef> {
            let mut rs = ResourceDef::builtins();
            rs.push(ResourceDef::new("", "v1", "nodes", "Node", false));
            rs.push(ResourceDef::new(
                "example.com",
                "v1",
                "widgets",
                "Widget",
                true,
            ));
            rs
        }
    }

    #[test]
    fn every_kind_has_a_patch_operation_taking_field_validation() {
        let rs = ServerConfigLike::with_widgets();
        for def in &rs {
            let doc = document(
                &rs,
                &index_key(&def.group, &def.version)
                    .split('/')
                    .collect::<Vec<_>>(),
            )
            .unwrap();
            let ops: Vec<&Value> = patch_ops(&doc)
                .into_iter()
                .filter(|op| op["x-kubernetes-group-version-kind"] == gvk(def))
                .collect();
            assert_eq!(ops.len(), 1, "{}", def.kind);
            let params = ops[0]["parameters"].as_array().unwrap();
            assert!(
                params
                    .iter()
                    .any(|p| p["name"] == "fieldValidation" && p["in"] == "query"),
                "{}",
                def.kind
            );
            // The kind's schema is there, tagged with its group, version and kind.
            let schema = &doc["components"]["schemas"][schema_name(def)];
            assert_eq!(schema["x-kubernetes-group-version-kind"][0], gvk(def));
            // Strategic merge patch is not offered: the schemas carry no patch strategies.
            assert!(
                ops[0]["requestBody"]["content"]
                    .get("application/strategic-merge-patch+json")
                    .is_none()
            );
        }
    }

    #[test]
    fn paths_and_schema_names_follow_kubernetes() {
        let rs = ServerConfigLike::with_widgets();
        let core = group_version(&rs, "", "v1").unwrap();
        let paths = core["paths"].as_object().unwrap();
        assert!(paths.contains_key("/api/v1/namespaces/{namespace}/pods/{name}"));
        assert!(paths.contains_key("/api/v1/namespaces/{name}"));
        assert!(paths.contains_key("/api/v1/nodes"));
        assert_eq!(
            paths["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"]["operationId"],
            "patchCoreV1NamespacedPod"
        );
        let apps = group_version(&rs, "apps", "v1").unwrap();
        assert_eq!(
            apps["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments"]["post"]["operationId"],
            "createAppsV1NamespacedDeployment"
        );
        let names: Vec<String> = rs.iter().map(schema_name).collect();
        assert!(names.contains(&"io.k8s.api.core.v1.Pod".to_string()));
        assert!(names.contains(&"io.k8s.api.apps.v1.Deployment".to_string()));
        assert!(names.contains(&"io.k8s.api.coordination.v1.Lease".to_string()));
        assert!(names.contains(&"com.example.v1.Widget".to_string()));
        assert!(group_version(&rs, "batch", "v1").is_none());
        assert!(document(&rs, &["apis", "apps"]).is_none());
    }
}
