//! The index entry set of typed storage (compact storage's is in `compact::backend`).
//!
//! Typed mode keeps, per index value, a set of the objects themselves with the hash of their
//! key (16 bytes per entry): compared by the key `namespace/name` read from the object, so no
//! key string is stored, `by_index` clones the objects straight out of the set, and a growing
//! set rehashes without touching the objects.

use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::{Arc, LazyLock};

use kube_core::Resource;

use crate::cache::meta::{ObjectKey, with_key_str};
use crate::cache::store::{EntrySet, FastSet, FastState};

/// Something naming an object key as `namespace/name` (or `name` without a namespace), for
/// hashing and comparing set entries by key without storing the key string.
pub(super) trait KeyLike {
    /// The namespace (`""` for none) and the name; the key is their concatenation with `/`.
    fn key_parts(&self) -> (&str, &str);

    /// The hash of the key.
    fn key_hash(&self) -> u64 {
        key_hash(self.key_parts())
    }

    /// For a stored object: the hash of its key and the object's address. Two entries of the
    /// same object have the same key, and entries with different hashes have different keys,
    /// so comparing these first spares reading the key out of a (rarely cached) old object.
    fn identity(&self) -> Option<(u64, *const ())> {
        None
    }
}

impl KeyLike for ObjectKey {
    fn key_parts(&self) -> (&str, &str) {
        ("", self.as_str())
    }
}

/// The seed of key hashes (random per process, like the maps' own).
static KEY_HASH: LazyLock<FastState> = LazyLock::new(FastState::default);

/// The hash of the key `parts` describe: of the key string itself (joined on the stack when
/// given as a namespace and a name), so a key string and the namespace and name it was made
/// of hash alike, and a key string is hashed in one pass.
fn key_hash((ns, name): (&str, &str)) -> u64 {
    let ns = (!ns.is_empty()).then_some(ns);
    with_key_str(ns, name, |key| KEY_HASH.hash_one(key))
}

/// True if both describe the same key string.
fn same_key((a_ns, a_name): (&str, &str), (b_ns, b_name): (&str, &str)) -> bool {
    let sep = |ns: &str| if ns.is_empty() { 0 } else { 1 };
    if a_ns.len() + sep(a_ns) + a_name.len() != b_ns.len() + sep(b_ns) + b_name.len() {
        return false;
    }
    let a = a_ns
        .bytes()
        .chain((!a_ns.is_empty()).then_some(b'/'))
        .chain(a_name.bytes());
    let b = b_ns
        .bytes()
        .chain((!b_ns.is_empty()).then_some(b'/'))
        .chain(b_name.bytes());
    a.eq(b)
}

impl Hash for dyn KeyLike + '_ {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.key_hash());
    }
}

impl PartialEq for dyn KeyLike + '_ {
    fn eq(&self, other: &Self) -> bool {
        if let (Some((ha, pa)), Some((hb, pb))) = (self.identity(), other.identity()) {
            if pa == pb {
                return true;
            }
            if ha != hb {
                return false;
            }
        }
        same_key(self.key_parts(), other.key_parts())
    }
}

impl Eq for dyn KeyLike + '_ {}

/// A typed index entry: the stored object and the hash of its key.
pub(super) struct ByKey<K> {
    hash: u64,
    pub(super) obj: Arc<K>,
}

#[cfg(test)]
impl<K: Resource> ByKey<K> {
    /// The entry of `obj`, hashed from its namespace and name.
    fn new(obj: Arc<K>) -> Self {
        ByKey {
            hash: key_hash(parts(&*obj)),
            obj,
        }
    }
}

impl<K> ByKey<K> {
    /// The entry of `obj`, stored under `key` (hashed from the key string, which hashes as
    /// the object's namespace and name do).
    fn with_key(key: &ObjectKey, obj: &Arc<K>) -> Self {
        ByKey {
            hash: key_hash(key.key_parts()),
            obj: Arc::clone(obj),
        }
    }
}

impl<K> Clone for ByKey<K> {
    fn clone(&self) -> Self {
        ByKey {
            hash: self.hash,
            obj: Arc::clone(&self.obj),
        }
    }
}

fn parts<K: Resource>(obj: &K) -> (&str, &str) {
    let meta = obj.meta();
    (
        meta.namespace.as_deref().unwrap_or(""),
        meta.name.as_deref().unwrap_or(""),
    )
}

impl<K: Resource> KeyLike for ByKey<K> {
    fn key_parts(&self) -> (&str, &str) {
        parts(&*self.obj)
    }

    fn key_hash(&self) -> u64 {
        self.hash
    }

    fn identity(&self) -> Option<(u64, *const ())> {
        Some((self.hash, Arc::as_ptr(&self.obj).cast()))
    }
}

impl<K: Resource> Hash for ByKey<K> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

impl<K: Resource> PartialEq for ByKey<K> {
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash
            && (Arc::ptr_eq(&self.obj, &other.obj) || same_key(self.key_parts(), other.key_parts()))
    }
}

impl<K: Resource> Eq for ByKey<K> {}

impl<'a, K: Resource + 'a> Borrow<dyn KeyLike + 'a> for ByKey<K> {
    fn borrow(&self) -> &(dyn KeyLike + 'a) {
        self
    }
}

impl<K: Resource> EntrySet for FastSet<ByKey<K>> {
    type Entry = Arc<K>;
    type Item = ByKey<K>;

    fn item(key: &ObjectKey, entry: &Arc<K>) -> ByKey<K> {
        ByKey::with_key(key, entry)
    }

    fn with_one() -> Self {
        FastSet::with_capacity_and_hasher(1, FastState::default())
    }

    fn put(&mut self, item: &ByKey<K>) {
        // `replace`, not `insert`: an unchanged index value must point at the new object.
        self.replace(item.clone());
    }

    fn old_item(item: &ByKey<K>, old: &Arc<K>) -> Option<ByKey<K>> {
        Some(ByKey {
            hash: item.hash,
            obj: Arc::clone(old),
        })
    }

    fn refresh(&mut self, old: &ByKey<K>, new: &ByKey<K>) {
        // Found by the old object's address, without reading its key; `replace` then finds
        // no entry of the same hash left, so it reads no key either.
        self.remove(old as &dyn KeyLike);
        self.replace(new.clone());
    }

    fn remove_item(&mut self, item: &ByKey<K>) {
        self.remove(item as &dyn KeyLike);
    }

    fn is_empty(&self) -> bool {
        FastSet::is_empty(self)
    }
}

#[cfg(test)]
mod tests {
    use std::hash::BuildHasher;

    use k8s_openapi::api::core::v1::Pod;

    use super::*;

    fn pod(ns: Option<&str>, name: &str) -> ByKey<Pod> {
        let mut p = Pod::default();
        p.metadata.namespace = ns.map(str::to_string);
        p.metadata.name = Some(name.to_string());
        ByKey::new(Arc::new(p))
    }

    #[test]
    fn objects_hash_and_compare_as_their_key_strings() {
        let state = FastState::default();
        let cases = [
            (Some("ns"), "a", "ns/a"),
            (None, "a", "a"),
            (Some(""), "node-1", "node-1"),
            (Some("ns"), "a/b", "ns/a/b"),
        ];
        for (ns, name, key) in cases {
            let obj = pod(ns, name);
            let key = ObjectKey::from(key);
            let by_obj = state.hash_one(&obj as &dyn KeyLike);
            let by_key = state.hash_one(&key as &dyn KeyLike);
            assert_eq!(by_obj, by_key, "{key}");
            assert!((&obj as &dyn KeyLike) == (&key as &dyn KeyLike));
        }
        assert!(
            (&pod(Some("ns"), "a") as &dyn KeyLike) != (&ObjectKey::from("ns/b") as &dyn KeyLike)
        );
        assert!(
            (&pod(Some("n"), "sa") as &dyn KeyLike) != (&ObjectKey::from("ns/a") as &dyn KeyLike)
        );
    }

    #[test]
    fn a_typed_set_finds_replaces_and_removes_by_key() {
        let mut set: FastSet<ByKey<Pod>> = EntrySet::with_one();
        let key = ObjectKey::from("ns/a");
        let first = pod(Some("ns"), "a");
        set.put(&<FastSet<ByKey<Pod>>>::item(&key, &first.obj));
        let second = pod(Some("ns"), "a");
        set.put(&<FastSet<ByKey<Pod>>>::item(&key, &second.obj));
        assert_eq!(set.len(), 1);
        let stored = set.get(&ObjectKey::from("ns/a") as &dyn KeyLike).unwrap();
        assert!(Arc::ptr_eq(&stored.obj, &second.obj));
        set.remove_item(&ByKey::new(Arc::clone(&first.obj)));
        assert!(EntrySet::is_empty(&set));
    }

    #[test]
    fn refresh_swaps_the_old_object_for_the_new_one_under_the_same_key() {
        let mut set: FastSet<ByKey<Pod>> = EntrySet::with_one();
        let key = ObjectKey::from("ns/a");
        let old = pod(Some("ns"), "a");
        let other = pod(Some("ns"), "b");
        set.put(&<FastSet<ByKey<Pod>>>::item(&key, &old.obj));
        set.put(&<FastSet<ByKey<Pod>>>::item(
            &ObjectKey::from("ns/b"),
            &other.obj,
        ));
        let new = pod(Some("ns"), "a");
        let new_item = <FastSet<ByKey<Pod>>>::item(&key, &new.obj);
        let old_item = <FastSet<ByKey<Pod>>>::old_item(&new_item, &old.obj).unwrap();
        set.refresh(&old_item, &new_item);
        assert_eq!(set.len(), 2);
        let stored = set.get(&key as &dyn KeyLike).unwrap();
        assert!(Arc::ptr_eq(&stored.obj, &new.obj));
        assert_eq!(
            Arc::strong_count(&old.obj),
            2,
            "the set let go of the old object"
        );
    }
}
