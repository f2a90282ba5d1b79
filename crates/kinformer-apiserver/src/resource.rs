//! Resource types the server serves: group, version, plural, kind and scope.
//!
//! Resources are registered when the server starts ([`ResourceDef::builtins`] plus any custom
//! resource); each request path names one by `group/version/plural`. Library callers may name a
//! resource by `"pods"`, `"deployments.apps"`, `"apps/v1/deployments"` or its kind `"Deployment"`.

use serde_json::{Value, json};

/// One served resource type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceDef {
    /// API group; empty for the core group.
    pub group: String,
    /// API version, e.g. `v1`.
    pub version: String,
    /// Plural name used in paths, e.g. `pods`.
    pub plural: String,
    /// Singular name, e.g. `pod`.
    pub singular: String,
    /// Kind, e.g. `Pod`.
    pub kind: String,
    /// Namespaced (`true`) or cluster-scoped.
    pub namespaced: bool,
    /// Short names for kubectl, e.g. `po`.
    pub short_names: Vec<String>,
    /// Whether a `status` subresource exists (a main-resource write then keeps the old status).
    pub status_subresource: bool,
}

impl ResourceDef {
    /// A resource definition; the singular name is the lower-cased kind.
    pub fn new(group: &str, version: &str, plural: &str, kind: &str, namespaced: bool) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
            plural: plural.into(),
            singular: kind.to_lowercase(),
            kind: kind.into(),
            namespaced,
            short_names: Vec::new(),
            status_subresource: false,
        }
    }

    /// Adds short names.
    #[must_use]
    pub fn with_short_names(mut self, names: &[&str]) -> Self {
        self.short_names = names.iter().map(|s| s.to_string()).collect();
        self
    }

    /// Declares a `status` subresource.
    #[must_use]
    pub fn with_status(mut self) -> Self {
        self.status_subresource = true;
        self
    }

    /// `apiVersion` as written in objects: `v1` or `apps/v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The built-in resources: namespaces, pods, configmaps, services, deployments, replicasets,
    /// leases.
    pub fn builtins() -> Vec<ResourceDef> {
        vec![
            ResourceDef::new("", "v1", "namespaces", "Namespace", false)
                .with_short_names(&["ns"])
                .with_status(),
            ResourceDef::new("", "v1", "pods", "Pod", true)
                .with_short_names(&["po"])
                .with_status(),
            ResourceDef::new("", "v1", "configmaps", "ConfigMap", true).with_short_names(&["cm"]),
            ResourceDef::new("", "v1", "services", "Service", true)
                .with_short_names(&["svc"])
                .with_status(),
            ResourceDef::new("apps", "v1", "deployments", "Deployment", true)
                .with_short_names(&["deploy"])
                .with_status(),
            ResourceDef::new("apps", "v1", "replicasets", "ReplicaSet", true)
                .with_short_names(&["rs"])
                .with_status(),
            ResourceDef::new("coordination.k8s.io", "v1", "leases", "Lease", true),
        ]
    }

    /// Whether `name` designates this resource (see the module doc for accepted spellings).
    pub fn matches_name(&self, name: &str) -> bool {
        if name == self.plural
            || name == self.kind
            || name == self.singular
            || self.short_names.iter().any(|s| s == name)
        {
            return true;
        }
        if let Some((plural, group)) = name.split_once('.')
            && plural == self.plural
            && group == self.group
        {
            return true;
        }
        let parts: Vec<&str> = name.split('/').collect();
        match parts.as_slice() {
            [v, p] => self.group.is_empty() && *v == self.version && *p == self.plural,
            [g, v, p] => *g == self.group && *v == self.version && *p == self.plural,
            _ => false,
        }
    }

    /// The categories Kubernetes puts this resource in: `all` (what `kubectl get all` lists)
    /// for pods, services, deployments and replicasets; none otherwise.
    pub fn categories(&self) -> &'static [&'static str] {
        match (self.group.as_str(), self.plural.as_str()) {
            ("", "pods" | "services") | ("apps", "deployments" | "replicasets") => &["all"],
            _ => &[],
        }
    }

    /// The `APIResource` entry for discovery.
    pub fn api_resource(&self) -> Value {
        let mut r = json!({
            "name": self.plural,
            "singularName": self.singular,
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
            "shortNames": self.short_names,
        });
        if !self.categories().is_empty() {
            r["categories"] = json!(self.categories());
        }
        r
    }

    /// The `APIResource` entry for the status subresource, if any.
    pub fn status_api_resource(&self) -> Option<Value> {
        self.status_subresource.then(|| {
            json!({
                "name": format!("{}/status", self.plural),
                "singularName": "",
                "namespaced": self.namespaced,
                "kind": self.kind,
                "verbs": ["get", "patch", "update"],
            })
        })
    }
}
