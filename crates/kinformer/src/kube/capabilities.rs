//! What a client has learnt about its API server, shared by every source built with it.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::cache::listwatch::WatchListSupport;

/// What the [`KubeListerWatcher`](super::KubeListerWatcher)s of one client have learnt about
/// its API server, so that each thing is learnt once per client rather than once per informer
/// and relist: whether the server refuses watch-list requests, which API groups answer JSON
/// to a protobuf request, and which refuse protobuf request bodies (`415`, remembered by
/// [`create_with`](super::create_with) and [`replace_with`](super::replace_with)).
///
/// Clones share one record. A [`SharedInformerFactory`](crate::cache::SharedInformerFactory)
/// gives its record to every informer it builds; sources built by hand share one with
/// [`KubeListerWatcher::with_capabilities`](super::KubeListerWatcher::with_capabilities).
///
/// ```
/// use kinformer::kube::ServerCapabilities;
///
/// let caps = ServerCapabilities::new();
/// let shared = caps.clone();
/// assert!(caps.watch_list());
/// assert!(shared.set_no_watch_list(), "news the first time");
/// assert!(!caps.set_no_watch_list(), "known after");
/// assert!(!caps.watch_list());
///
/// assert!(caps.protobuf("/api/v1/namespaces/ns/pods"));
/// assert!(caps.set_no_protobuf("/apis/metrics.k8s.io/v1beta1/pods"));
/// assert!(!caps.protobuf("/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods"));
/// assert!(caps.protobuf("/api/v1/pods"), "per API group and version");
///
/// assert!(caps.protobuf_bodies("/apis/apps/v1/namespaces/ns/deployments"));
/// assert!(caps.set_no_protobuf_bodies("/apis/apps/v1/namespaces/ns/deployments"));
/// assert!(!shared.protobuf_bodies("/apis/apps/v1/replicasets"));
/// assert!(caps.protobuf_bodies("/api/v1/configmaps"));
/// ```
#[derive(Clone, Default)]
pub struct ServerCapabilities {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    watch_list: WatchListSupport,
    /// Group-version paths (`/api/v1`, `/apis/apps/v1`) that answer JSON to protobuf.
    json_only: GroupVersions,
    /// Group-version paths that refused a protobuf request body (`415`).
    json_bodies: GroupVersions,
}

/// A set of API groups and versions, keyed by any resource URL in them.
#[derive(Debug, Default)]
struct GroupVersions(Mutex<HashSet<String>>);

impl GroupVersions {
    fn contains(&self, url_path: &str) -> bool {
        self.0.lock().contains(group_version(url_path))
    }

    /// True if `url_path`'s group and version were not in the set yet.
    fn insert(&self, url_path: &str) -> bool {
        self.0.lock().insert(group_version(url_path).to_owned())
    }
}

impl fmt::Debug for ServerCapabilities {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerCapabilities")
            .field("watch_list", &self.watch_list())
            .field("json_only", &*self.inner.json_only.0.lock())
            .field("json_bodies", &*self.inner.json_bodies.0.lock())
            .finish()
    }
}

impl ServerCapabilities {
    /// A record that knows nothing yet: watch-list and protobuf are assumed.
    pub fn new() -> Self {
        Self::default()
    }

    /// False once the server refused a watch-list request.
    pub fn watch_list(&self) -> bool {
        !self.inner.watch_list.is_unsupported()
    }

    /// Records that the server refuses watch-list requests; true if this is news.
    pub fn set_no_watch_list(&self) -> bool {
        self.inner.watch_list.set_unsupported()
    }

    /// The shared watch-list record the reflectors consult.
    pub fn watch_list_support(&self) -> &WatchListSupport {
        &self.inner.watch_list
    }

    /// False once the API group and version of `url_path` (a resource URL) answered a
    /// protobuf request with JSON, 406 or 415.
    pub fn protobuf(&self, url_path: &str) -> bool {
        !self.inner.json_only.contains(url_path)
    }

    /// Records that the API group and version of `url_path` do not speak protobuf; true if
    /// this is news.
    pub fn set_no_protobuf(&self, url_path: &str) -> bool {
        self.inner.json_only.insert(url_path)
    }

    /// False once the API group and version of `url_path` refused a protobuf request body
    /// (`415 Unsupported Media Type`): writes there are sent in JSON.
    pub fn protobuf_bodies(&self, url_path: &str) -> bool {
        !self.inner.json_bodies.contains(url_path)
    }

    /// Records that the API group and version of `url_path` refuse protobuf request bodies;
    /// true if this is news.
    pub fn set_no_protobuf_bodies(&self, url_path: &str) -> bool {
        self.inner.json_bodies.insert(url_path)
    }
}

/// The group-version prefix of a resource URL: `/api/v1` or `/apis/<group>/<version>`.
fn group_version(url_path: &str) -> &str {
    let segments = if url_path.starts_with("/apis/") { 3 } else { 2 };
    let mut end = 0;
    for _ in 0..segments {
        match url_path.get(end + 1..).and_then(|rest| rest.find('/')) {
            Some(i) => end += 1 + i,
            None => return url_path,
        }
    }
    &url_path[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_versions_of_resource_urls() {
        assert_eq!(group_version("/api/v1/namespaces/ns/pods"), "/api/v1");
        assert_eq!(group_version("/api/v1"), "/api/v1");
        assert_eq!(group_version("/apis/apps/v1/deployments"), "/apis/apps/v1");
        assert_eq!(
            group_version("/apis/example.com/v1/namespaces/a/widgets"),
            "/apis/example.com/v1"
        );
        assert_eq!(group_version(""), "");
    }
}
