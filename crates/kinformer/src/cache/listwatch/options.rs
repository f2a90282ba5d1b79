//! Request options for list and watch calls, as `metav1.ListOptions` splits them.

use std::time::Duration;

/// How the server applies `resourceVersion` to a list (and to a watch-list).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResourceVersionMatch {
    /// Data at least as new as the given version.
    NotOlderThan,
    /// Data at exactly the given version (410 Gone when it was compacted).
    Exact,
}

impl ResourceVersionMatch {
    /// The wire spelling (`NotOlderThan`, `Exact`).
    pub fn as_str(self) -> &'static str {
        match self {
            ResourceVersionMatch::NotOlderThan => "NotOlderThan",
            ResourceVersionMatch::Exact => "Exact",
        }
    }
}

/// Label and field selectors restricting a list or watch.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Selectors {
    /// `labelSelector`, e.g. `app=web,tier!=cache`.
    pub label_selector: Option<String>,
    /// `fieldSelector`, e.g. `metadata.name=web-0`.
    pub field_selector: Option<String>,
}

/// Options of one list request (one page).
///
/// `resource_version` semantics (as the API server): `None` → a consistent (quorum) read;
/// `Some("0")` → any version, typically served from the watch cache; `Some(rv)` → not older
/// than `rv` unless `resource_version_match` says otherwise.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ListOptions {
    /// `resourceVersion`; `None` means "" (most recent, consistent read).
    pub resource_version: Option<String>,
    /// `resourceVersionMatch`.
    pub resource_version_match: Option<ResourceVersionMatch>,
    /// `limit`: page size; `None` (or 0) means unpaginated.
    pub limit: Option<u32>,
    /// `continue`: the token of the previous page.
    pub continue_token: Option<String>,
    /// Label and field selectors.
    pub selectors: Selectors,
}

impl ListOptions {
    /// The requested resource version, `""` when unset.
    pub fn resource_version_str(&self) -> &str {
        self.resource_version.as_deref().unwrap_or("")
    }

    /// The options of the page after one whose continue token is `continue_token`: the same
    /// limit and selectors, `continue` set, `resourceVersion` and `resourceVersionMatch`
    /// cleared (the server rejects them together with `continue`).
    #[must_use]
    pub fn next_page(&self, continue_token: &str) -> ListOptions {
        ListOptions {
            resource_version: None,
            resource_version_match: None,
            limit: self.limit,
            continue_token: Some(continue_token.to_owned()),
            selectors: self.selectors.clone(),
        }
    }
}

/// Options of one watch request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct WatchOptions {
    /// `resourceVersion` to start after; `None` means "" (start at the most recent version).
    pub resource_version: Option<String>,
    /// `timeoutSeconds`: the server ends the watch cleanly after this long.
    pub timeout: Option<Duration>,
    /// `allowWatchBookmarks`.
    pub allow_bookmarks: bool,
    /// `sendInitialEvents` (watch-list): stream the current state first, ending with a
    /// bookmark annotated `k8s.io/initial-events-end: "true"`.
    pub send_initial_events: bool,
    /// `resourceVersionMatch`; watch-list requires `NotOlderThan`.
    pub resource_version_match: Option<ResourceVersionMatch>,
    /// Label and field selectors.
    pub selectors: Selectors,
}

impl WatchOptions {
    /// The requested resource version, `""` when unset.
    pub fn resource_version_str(&self) -> &str {
        self.resource_version.as_deref().unwrap_or("")
    }
}
