//! Discovery documents: `/version`, `/api`, `/api/v1`, `/apis`, `/apis/<group>[/<version>]`.
//!
//! Plain (non-aggregated) documents, which kubectl and kube accept.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::resource::ResourceDef;

/// The version this server reports (a recent Kubernetes minor, so kubectl picks a close client).
pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": "33",
        "gitVersion": "v1.33.0-kinformer",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.24.0",
        "compiler": "gc",
        "platform": "linux/amd64"
    })
}

/// `/api`: an `APIVersions`.
pub fn core_versions() -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]
    })
}

/// An `APIResourceList` for one group version.
pub fn resource_list(resources: &[ResourceDef], group: &str, version: &str) -> Option<Value> {
    let rs: Vec<&ResourceDef> = resources
        .iter()
        .filter(|r| r.group == group && r.version == version)
        .collect();
    if rs.is_empty() && !(group.is_empty() && version == "v1") {
        return None;
    }
    let mut list = Vec::new();
    for r in rs {
        list.push(r.api_resource());
        if let Some(s) = r.status_api_resource() {
            list.push(s);
        }
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": list}),
    )
}

fn groups(resources: &[ResourceDef]) -> BTreeMap<String, Vec<String>> {
    let mut g: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in resources.iter().filter(|r| !r.group.is_empty()) {
        let vs = g.entry(r.group.clone()).or_default();
        if !vs.contains(&r.version) {
            vs.push(r.version.clone());
        }
    }
    g
}

fn group_doc(name: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
        .collect();
    json!({"name": name, "versions": vs, "preferredVersion": vs.first().cloned().unwrap_or(Value::Null)})
}

/// `/apis`: an `APIGroupList`.
pub fn group_list(resources: &[ResourceDef]) -> Value {
    let gs: Vec<Value> = groups(resources)
        .iter()
        .map(|(n, vs)| group_doc(n, vs))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": gs})
}

/// `/apis/<group>`: an `APIGroup`.
pub fn group(resources: &[ResourceDef], name: &str) -> Option<Value> {
    groups(resources).get(name).map(|vs| {
        let mut d = group_doc(name, vs);
        d["kind"] = json!("APIGroup");
        d["apiVersion"] = json!("v1");
        d
    })
}
