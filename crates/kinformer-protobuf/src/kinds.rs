//! Which protobuf message holds a given `apiVersion` and `kind`.

use crate::schema::{MessageId, Schema};

/// The proto package segment of each built-in API group (`""` is the core group).
const GROUPS: &[(&str, &str)] = &[
    ("", "core"),
    ("admission.k8s.io", "admission"),
    ("admissionregistration.k8s.io", "admissionregistration"),
    ("apidiscovery.k8s.io", "apidiscovery"),
    ("apps", "apps"),
    ("authentication.k8s.io", "authentication"),
    ("authorization.k8s.io", "authorization"),
    ("autoscaling", "autoscaling"),
    ("batch", "batch"),
    ("certificates.k8s.io", "certificates"),
    ("coordination.k8s.io", "coordination"),
    ("discovery.k8s.io", "discovery"),
    ("events.k8s.io", "events"),
    ("extensions", "extensions"),
    ("flowcontrol.apiserver.k8s.io", "flowcontrol"),
    ("imagepolicy.k8s.io", "imagepolicy"),
    ("internal.apiserver.k8s.io", "apiserverinternal"),
    ("networking.k8s.io", "networking"),
    ("node.k8s.io", "node"),
    ("policy", "policy"),
    ("rbac.authorization.k8s.io", "rbac"),
    ("resource.k8s.io", "resource"),
    ("scheduling.k8s.io", "scheduling"),
    ("storage.k8s.io", "storage"),
    ("storagemigration.k8s.io", "storagemigration"),
];

/// True if `group` is a built-in API group (one whose types have a protobuf form).
pub fn is_builtin_group(group: &str) -> bool {
    GROUPS.iter().any(|(g, _)| *g == group) || group == "meta.k8s.io"
}

/// How many recent kinds [`message_for`] remembers per thread.
const RECENT: usize = 8;

/// A kind looked up: `apiVersion`, `kind`, and its message.
type Looked = (Box<str>, Box<str>, Option<MessageId>);

thread_local! {
    /// The last kinds looked up on this thread (an informer's thread sees one or two), so that
    /// decoding an object does not build the message's name and hash it every time.
    static RECENT_KINDS: std::cell::RefCell<Vec<Looked>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// The message of a top-level kind (an object or a list with `metadata` as field 1), or of a
/// `meta.k8s.io` kind such as `Status` (which the core group serves as `v1`).
pub(crate) fn message_for(schema: &Schema, api_version: &str, kind: &str) -> Option<MessageId> {
    let known = RECENT_KINDS.with_borrow(|recent| {
        recent
            .iter()
            .find(|(v, k, _)| **v == *api_version && **k == *kind)
            .map(|(_, _, id)| *id)
    });
    if let Some(id) = known {
        return id;
    }
    let id = lookup(schema, api_version, kind);
    RECENT_KINDS.with_borrow_mut(|recent| {
        if recent.len() == RECENT {
            recent.remove(0);
        }
        recent.push((api_version.into(), kind.into(), id));
    });
    id
}

fn lookup(schema: &Schema, api_version: &str, kind: &str) -> Option<MessageId> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    if version.is_empty() || kind.is_empty() {
        return None;
    }
    let meta = || {
        schema.message_id(&format!(
            "k8s.io.apimachinery.pkg.apis.meta.{version}.{kind}"
        ))
    };
    if group == "meta.k8s.io" {
        return meta();
    }
    let (_, segment) = GROUPS.iter().find(|(g, _)| *g == group)?;
    let id = schema.message_id(&format!("k8s.io.api.{segment}.{version}.{kind}"));
    match id {
        Some(id) if is_top_level(schema, id) => Some(id),
        Some(_) => None,
        // Status, WatchEvent, ... are served in every group version.
        None => meta(),
    }
}

fn is_top_level(schema: &Schema, id: MessageId) -> bool {
    schema
        .message(id)
        .field(1)
        .is_some_and(|f| &*f.name == "metadata")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_kinds_resolve_and_others_do_not() {
        let s = Schema::get().unwrap();
        let name = |v: &str, k: &str| message_for(s, v, k).map(|id| s.message(id).name.to_string());
        assert_eq!(name("v1", "Pod").as_deref(), Some("k8s.io.api.core.v1.Pod"));
        assert_eq!(
            name("apps/v1", "DeploymentList").as_deref(),
            Some("k8s.io.api.apps.v1.DeploymentList")
        );
        assert_eq!(
            name("coordination.k8s.io/v1", "Lease").as_deref(),
            Some("k8s.io.api.coordination.v1.Lease")
        );
        assert_eq!(
            name("v1", "Status").as_deref(),
            Some("k8s.io.apimachinery.pkg.apis.meta.v1.Status")
        );
        assert_eq!(name("example.com/v1", "Widget"), None);
        // A CRD group whose first label is a built-in group's name is still a custom resource.
        assert_eq!(name("apps.example.com/v1", "Deployment"), None);
        // Not top-level kinds.
        assert_eq!(name("v1", "Container"), None);
        assert!(is_builtin_group("apps") && !is_builtin_group("example.com"));
    }
}
