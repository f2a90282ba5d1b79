//! Object keys (`namespace/name`) and tombstones.

use std::borrow::Borrow;
use std::fmt;
use std::sync::Arc;

use kube_core::Resource;

/// The cache key of an object: `namespace/name`, or `name` for cluster-scoped objects, as
/// client-go's `MetaNamespaceKeyFunc`.
///
/// Cheap to clone (one reference-counted string) and to hash.
///
/// ```
/// use kinformer::cache::ObjectKey;
/// let key = ObjectKey::new(Some("default"), "web-0");
/// assert_eq!(key.as_str(), "default/web-0");
/// assert_eq!(key.namespace(), Some("default"));
/// assert_eq!(key.name(), "web-0");
/// assert_eq!(ObjectKey::new(None, "node-1").namespace(), None);
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey(Arc<str>);

impl ObjectKey {
    /// The key of `name` in `namespace` (`None` or empty for cluster-scoped objects).
    pub fn new(namespace: Option<&str>, name: &str) -> Self {
        match namespace {
            Some(ns) if !ns.is_empty() => ObjectKey(joined(ns, name)),
            _ => ObjectKey(Arc::from(name)),
        }
    }

    /// Wraps a key string as it is, without checking it (see [`split_key`] for checking).
    pub fn from_raw(key: impl Into<Arc<str>>) -> Self {
        ObjectKey(key.into())
    }

    /// The key as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The namespace part, if the key has one.
    pub fn namespace(&self) -> Option<&str> {
        self.0.split_once('/').map(|(ns, _)| ns)
    }

    /// The name part.
    pub fn name(&self) -> &str {
        match self.0.split_once('/') {
            Some((_, name)) => name,
            None => &self.0,
        }
    }
}

/// Keys up to this long are joined on the stack, so making one allocates only the key itself.
const STACK_KEY: usize = 128;

/// Runs `f` with the key of `namespace` and `name` as it would be made by
/// [`ObjectKey::new`], joined on the stack for keys of usual length (no allocation): for
/// looking a key up before deciding whether to make one.
pub(crate) fn with_key_str<R>(namespace: Option<&str>, name: &str, f: impl FnOnce(&str) -> R) -> R {
    let ns = match namespace {
        Some(ns) if !ns.is_empty() => ns,
        _ => return f(name),
    };
    let len = ns.len() + 1 + name.len();
    if len <= STACK_KEY {
        let mut buf = [0u8; STACK_KEY];
        buf[..ns.len()].copy_from_slice(ns.as_bytes());
        buf[ns.len()] = b'/';
        buf[ns.len() + 1..len].copy_from_slice(name.as_bytes());
        if let Ok(s) = std::str::from_utf8(&buf[..len]) {
            return f(s);
        }
    }
    f(&format!("{ns}/{name}"))
}

/// `ns/name` as one shared string, in a single allocation for keys of usual length.
fn joined(ns: &str, name: &str) -> Arc<str> {
    with_key_str(Some(ns), name, |key| Arc::from(key))
}

impl fmt::Debug for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Borrow<str> for ObjectKey {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for ObjectKey {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl From<&str> for ObjectKey {
    fn from(s: &str) -> Self {
        ObjectKey(Arc::from(s))
    }
}

impl From<String> for ObjectKey {
    fn from(s: String) -> Self {
        ObjectKey(Arc::from(s))
    }
}

/// Why a key could not be made or split.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The object has no `metadata.name` (and no `generateName` resolution happened yet).
    #[error("object has no metadata.name")]
    MissingName,
    /// A key string with more than one `/`, or an empty part.
    #[error("unexpected key format: {0:?}")]
    BadFormat(String),
}

/// The key of `obj`: `namespace/name`, or `name` when it has no namespace.
///
/// # Errors
/// [`KeyError::MissingName`] if the object has no (or an empty) name.
pub fn meta_namespace_key<K: Resource>(obj: &K) -> Result<ObjectKey, KeyError> {
    let meta = obj.meta();
    match meta.name.as_deref() {
        Some(name) if !name.is_empty() => Ok(ObjectKey::new(meta.namespace.as_deref(), name)),
        _ => Err(KeyError::MissingName),
    }
}

/// Splits a key into `(namespace, name)`; client-go's `SplitMetaNamespaceKey`.
///
/// ```
/// use kinformer::cache::split_key;
/// assert_eq!(split_key("ns/a").unwrap(), (Some("ns"), "a"));
/// assert_eq!(split_key("a").unwrap(), (None, "a"));
/// assert!(split_key("a/b/c").is_err());
/// ```
///
/// # Errors
/// [`KeyError::BadFormat`] for more than two parts or an empty name.
pub fn split_key(key: &str) -> Result<(Option<&str>, &str), KeyError> {
    let mut parts = key.split('/');
    let first = parts.next().unwrap_or_default();
    match (parts.next(), parts.next()) {
        (None, _) if !first.is_empty() => Ok((None, first)),
        (Some(name), None) if !name.is_empty() => Ok((Some(first), name)),
        _ => Err(KeyError::BadFormat(key.to_owned())),
    }
}

/// A tombstone: an object whose deletion was missed (noticed only on relist), with the last
/// state the cache knew. client-go's `DeletedFinalStateUnknown`.
#[derive(Debug)]
pub struct DeletedFinalStateUnknown<K> {
    /// The deleted object's key.
    pub key: ObjectKey,
    /// The last known state; it may be stale.
    pub obj: Arc<K>,
}

impl<K> Clone for DeletedFinalStateUnknown<K> {
    fn clone(&self) -> Self {
        Self {
            key: self.key.clone(),
            obj: Arc::clone(&self.obj),
        }
    }
}

/// What a delete carries: the object's final state, or a tombstone when it is unknown.
#[derive(Debug)]
pub enum DeletedObject<K> {
    /// The final state as the server reported it.
    Live(Arc<K>),
    /// The deletion was inferred from a relist; the object is the last known state.
    Tombstone(DeletedFinalStateUnknown<K>),
}

impl<K> Clone for DeletedObject<K> {
    fn clone(&self) -> Self {
        match self {
            DeletedObject::Live(o) => DeletedObject::Live(Arc::clone(o)),
            DeletedObject::Tombstone(t) => DeletedObject::Tombstone(t.clone()),
        }
    }
}

impl<K: Resource> DeletedObject<K> {
    /// The key of the deleted object.
    ///
    /// # Errors
    /// [`KeyError::MissingName`] if a live object has no name (a tombstone always has a key).
    pub fn key(&self) -> Result<ObjectKey, KeyError> {
        match self {
            DeletedObject::Live(o) => meta_namespace_key(o.as_ref()),
            DeletedObject::Tombstone(t) => Ok(t.key.clone()),
        }
    }
}

impl<K> DeletedObject<K> {
    /// The object, live or last known.
    pub fn object(&self) -> &Arc<K> {
        match self {
            DeletedObject::Live(o) => o,
            DeletedObject::Tombstone(t) => &t.obj,
        }
    }

    /// True for a tombstone.
    pub fn is_tombstone(&self) -> bool {
        matches!(self, DeletedObject::Tombstone(_))
    }
}
