//! [`QueueKey`]: a work-queue item naming an object of any kind — its group and kind, and its
//! `namespace/name` cache key.

use std::borrow::Cow;
use std::fmt;

use kube_core::Resource;

use crate::cache::{KeyError, ObjectKey, meta_namespace_key, split_key};

/// A typed work-queue key: an object's kind (API group and kind) with its cache key
/// (`namespace/name`, or `name` for cluster-scoped objects).
///
/// Plain `String` keys are enough for a queue that holds one kind; a controller that reconciles
/// several kinds from one queue (or wants the compiler to tell its keys from other strings)
/// queues `QueueKey`s instead. Two keys are equal when group, kind, namespace and name are.
///
/// Cheap to clone: the kind of a compiled-in type (`K::kind(&())` of a k8s-openapi type or a
/// derived custom resource) is a `&'static str`, and the cache key one reference-counted string.
///
/// Properties:
/// - `Clone + Eq + Hash + Send + Sync + 'static`: a [`RateLimitingQueue`] item.
/// - [`key`](QueueKey::key) is the informer's cache key, ready for `get_by_key` or a lister.
/// - `Display` reads as kubectl names objects: `Pod default/web-0`, `ReplicaSet.apps
///   default/web`, `Node node-1`.
///
/// ```
/// use k8s_openapi::api::apps::v1::ReplicaSet;
/// use k8s_openapi::api::core::v1::Pod;
/// use kinformer::controller::QueueKey;
/// use kinformer::workqueue::{RateLimitingQueue, default_controller_rate_limiter};
///
/// let mut pod = Pod::default();
/// pod.metadata.namespace = Some("default".into());
/// pod.metadata.name = Some("web".into());
///
/// let pod_key = QueueKey::of(&pod).unwrap();
/// let rs_key = QueueKey::from_key::<ReplicaSet>("default/web").unwrap();
/// assert_eq!(pod_key.key().as_str(), "default/web");
/// assert_ne!(pod_key, rs_key, "same name, different kinds");
/// assert!(rs_key.is::<ReplicaSet>() && !rs_key.is::<Pod>());
/// assert_eq!(rs_key.to_string(), "ReplicaSet.apps default/web");
///
/// // One queue, two kinds.
/// let queue = RateLimitingQueue::new(default_controller_rate_limiter());
/// queue.add(pod_key);
/// queue.add(rs_key);
/// assert_eq!(queue.len(), 2);
/// ```
///
/// [`RateLimitingQueue`]: crate::workqueue::RateLimitingQueue
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QueueKey {
    group: Cow<'static, str>,
    kind: Cow<'static, str>,
    key: ObjectKey,
}

impl QueueKey {
    /// A key of `kind` in API `group` (`""` for the core group) for the object whose cache key is
    /// `key`: for kinds known only at run time (`DynamicObject`).
    pub fn new(
        group: impl Into<Cow<'static, str>>,
        kind: impl Into<Cow<'static, str>>,
        key: ObjectKey,
    ) -> Self {
        QueueKey {
            group: group.into(),
            kind: kind.into(),
            key,
        }
    }

    /// The key of `obj`, of `obj`'s kind.
    ///
    /// For an `Arc<K>` (what handlers receive) pass `obj.as_ref()`; for a `Lazy<K>` the kind is
    /// `K`'s, so the key equals the one made from the decoded object.
    ///
    /// # Errors
    /// [`KeyError::MissingName`] if the object has no (or an empty) name.
    pub fn of<K: Resource<DynamicType = ()>>(obj: &K) -> Result<Self, KeyError> {
        Ok(Self::for_kind::<K>(meta_namespace_key(obj)?))
    }

    /// The key of kind `K` for a cache key string (`namespace/name` or `name`), checked as
    /// [`split_key`] checks it.
    ///
    /// # Errors
    /// [`KeyError::BadFormat`] for a key with more than one `/` or an empty part.
    pub fn from_key<K: Resource<DynamicType = ()>>(key: &str) -> Result<Self, KeyError> {
        let (namespace, name) = split_key(key)?;
        Ok(Self::for_kind::<K>(ObjectKey::new(namespace, name)))
    }

    /// The key of kind `K` for a cache key made already.
    pub fn for_kind<K: Resource<DynamicType = ()>>(key: ObjectKey) -> Self {
        QueueKey {
            group: K::group(&()),
            kind: K::kind(&()),
            key,
        }
    }

    /// True if the key is of `K`'s kind (same group and kind).
    pub fn is<K: Resource<DynamicType = ()>>(&self) -> bool {
        K::kind(&()) == self.kind && K::group(&()) == self.group
    }

    /// The API group (`""` for the core group: pods, services, config maps …).
    pub fn group(&self) -> &str {
        &self.group
    }

    /// The kind (`Pod`, `ReplicaSet` …).
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The cache key (`namespace/name`, or `name`): what the informer's indexer and listers
    /// look objects up by.
    pub fn key(&self) -> &ObjectKey {
        &self.key
    }

    /// The namespace, if the object has one.
    pub fn namespace(&self) -> Option<&str> {
        self.key.namespace()
    }

    /// The name.
    pub fn name(&self) -> &str {
        self.key.name()
    }
}

impl fmt::Display for QueueKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.kind)?;
        if !self.group.is_empty() {
            write!(f, ".{}", self.group)?;
        }
        write!(f, " {}", self.key)
    }
}

impl fmt::Debug for QueueKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "QueueKey({self})")
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use k8s_openapi::api::apps::v1::ReplicaSet;
    use k8s_openapi::api::core::v1::{Node, Pod};

    use super::*;

    fn named<K: Resource + Default>(namespace: Option<&str>, name: &str) -> K {
        let mut obj = K::default();
        obj.meta_mut().namespace = namespace.map(str::to_owned);
        obj.meta_mut().name = Some(name.to_owned());
        obj
    }

    #[test]
    fn keys_of_the_same_name_and_different_kinds_differ() {
        let pod = QueueKey::of(&named::<Pod>(Some("ns"), "a")).unwrap();
        let rs = QueueKey::of(&named::<ReplicaSet>(Some("ns"), "a")).unwrap();
        assert_ne!(pod, rs);
        let set: HashSet<QueueKey> = [pod.clone(), rs.clone(), pod.clone()].into();
        assert_eq!(set.len(), 2);
        assert_eq!((pod.group(), pod.kind()), ("", "Pod"));
        assert_eq!((rs.group(), rs.kind()), ("apps", "ReplicaSet"));
    }

    #[test]
    fn a_key_from_an_object_equals_the_key_from_its_key_string() {
        let obj = QueueKey::of(&named::<Pod>(Some("ns"), "a")).unwrap();
        let parsed = QueueKey::from_key::<Pod>("ns/a").unwrap();
        assert_eq!(obj, parsed);
        assert_eq!(obj.key().as_str(), "ns/a");
        assert_eq!((obj.namespace(), obj.name()), (Some("ns"), "a"));
    }

    #[test]
    fn a_dynamic_key_equals_the_typed_key_of_the_same_kind() {
        let typed = QueueKey::from_key::<ReplicaSet>("ns/a").unwrap();
        let dynamic = QueueKey::new(
            String::from("apps"),
            String::from("ReplicaSet"),
            ObjectKey::new(Some("ns"), "a"),
        );
        assert_eq!(typed, dynamic);
        assert!(dynamic.is::<ReplicaSet>());
    }

    #[test]
    fn cluster_scoped_keys_have_no_namespace() {
        let node = QueueKey::of(&named::<Node>(None, "node-1")).unwrap();
        assert_eq!(node.namespace(), None);
        assert_eq!(node.key().as_str(), "node-1");
        assert_eq!(node.to_string(), "Node node-1");
    }

    #[test]
    fn display_names_group_kind_and_key() {
        let pod = QueueKey::from_key::<Pod>("default/web-0").unwrap();
        assert_eq!(pod.to_string(), "Pod default/web-0");
        assert_eq!(format!("{pod:?}"), "QueueKey(Pod default/web-0)");
        let rs = QueueKey::from_key::<ReplicaSet>("default/web").unwrap();
        assert_eq!(rs.to_string(), "ReplicaSet.apps default/web");
    }

    #[test]
    fn objects_without_a_name_and_bad_key_strings_are_refused() {
        assert_eq!(
            QueueKey::of(&Pod::default()).unwrap_err(),
            KeyError::MissingName
        );
        for bad in ["", "a/b/c", "a/", "/"] {
            assert!(
                matches!(
                    QueueKey::from_key::<Pod>(bad),
                    Err(KeyError::BadFormat(ref k)) if k == bad
                ),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn an_empty_namespace_is_no_namespace_as_in_client_go() {
        let key = QueueKey::from_key::<Node>("/node-1").unwrap();
        assert_eq!(key, QueueKey::from_key::<Node>("node-1").unwrap());
        assert_eq!(key.namespace(), None);
    }

    #[test]
    fn is_tells_kinds_apart() {
        let pod = QueueKey::from_key::<Pod>("ns/a").unwrap();
        assert!(pod.is::<Pod>());
        assert!(!pod.is::<ReplicaSet>());
        assert!(!pod.is::<Node>());
    }

    #[test]
    fn queue_keys_are_send_sync_and_static() {
        fn assert_item<T: Clone + Eq + std::hash::Hash + Send + Sync + 'static>() {}
        assert_item::<QueueKey>();
    }
}
