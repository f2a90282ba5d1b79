//! The index entry set of typed storage (compact storage's is in `compact::backend`).
//!
//! Typed mode keeps, per index value, a set of the objects themselves with the hash of their
//! key (16 bytes per entry): compared by the key `namespace/name` read from the object, so no
//! key string is stored, `by_index` clones the objects straight out of the set, and a growing
//! set rehashes without touching the objects (it rehashes by the stored hash).
//!
//! A write that replaces an object finds the old entry by the old object's address (which the
//! item map holds), so it never reads a key out of the old object, which is rarely in cache:
//! an index value the update keeps is refreshed in place (one probe, the entry's object
//! swapped), one it drops is removed the same way.

use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::{Arc, LazyLock};

use hashbrown::HashTable;
use hashbrown::hash_table::Entry;
use kube_core::Resource;

use crate::cache::meta::{ObjectKey, with_key_str};
use crate::cache::store::{EntrySet, FastState};

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

/// The namespace (`""` for none) and the name of a key string.
fn key_str_parts(key: &ObjectKey) -> (&str, &str) {
    ("", key.as_str())
}

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
            hash: key_hash(key_str_parts(key)),
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

impl<K: Resource> ByKey<K> {
    /// The namespace (`""` for none) and the name of the entry's key, read from the object.
    pub(super) fn key_parts(&self) -> (&str, &str) {
        parts(&*self.obj)
    }
}

impl<K> Hash for ByKey<K> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

/// Same key: equal hashes, and the same object or equal keys read from both.
impl<K: Resource> PartialEq for ByKey<K> {
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash
            && (Arc::ptr_eq(&self.obj, &other.obj) || same_key(self.key_parts(), other.key_parts()))
    }
}

impl<K: Resource> Eq for ByKey<K> {}

/// The entries of one index value in typed storage, by key (see the module docs).
pub(super) struct TypedSet<K>(HashTable<ByKey<K>>);

impl<K: Resource> TypedSet<K> {
    /// Every entry, in no particular order.
    pub(super) fn iter(&self) -> impl Iterator<Item = &ByKey<K>> {
        self.0.iter()
    }

    /// The number of entries.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.0.len()
    }

    /// The entry of `key`, if any.
    #[cfg(test)]
    fn get(&self, key: &ObjectKey) -> Option<&ByKey<K>> {
        let parts = key_str_parts(key);
        self.0
            .find(key_hash(parts), |e| same_key(e.key_parts(), parts))
    }
}

impl<K: Resource> EntrySet for TypedSet<K> {
    type Entry = Arc<K>;
    type Item = ByKey<K>;

    fn item(key: &ObjectKey, entry: &Arc<K>) -> ByKey<K> {
        ByKey::with_key(key, entry)
    }

    fn with_one() -> Self {
        TypedSet(HashTable::with_capacity(1))
    }

    fn put(&mut self, item: &ByKey<K>) {
        // An entry of the same key points at the new object from now on (one probe finds
        // it or the free slot).
        match self.0.entry(item.hash, |e| e == item, |e| e.hash) {
            Entry::Occupied(mut e) => e.get_mut().obj = Arc::clone(&item.obj),
            Entry::Vacant(slot) => {
                slot.insert(item.clone());
            }
        }
    }

    fn old_item(item: &ByKey<K>, old: &Arc<K>) -> Option<ByKey<K>> {
        Some(ByKey {
            hash: item.hash,
            obj: Arc::clone(old),
        })
    }

    fn refresh(&mut self, old: &ByKey<K>, new: &ByKey<K>) {
        // Found by the old object's address: no key is read, and the entry is changed where
        // it is (one probe, no removal and insertion).
        match self.0.find_mut(old.hash, |e| Arc::ptr_eq(&e.obj, &old.obj)) {
            Some(e) => e.obj = Arc::clone(&new.obj),
            None => self.put(new),
        }
    }

    fn remove_item(&mut self, item: &ByKey<K>) {
        if let Ok(entry) = self.0.find_entry(item.hash, |e| e == item) {
            entry.remove();
        }
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
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
        let cases = [
            (Some("ns"), "a", "ns/a"),
            (None, "a", "a"),
            (Some(""), "node-1", "node-1"),
            (Some("ns"), "a/b", "ns/a/b"),
        ];
        for (ns, name, key) in cases {
            let obj = pod(ns, name);
            let key = ObjectKey::from(key);
            let by_key = ByKey::with_key(&key, &obj.obj);
            assert_eq!(obj.hash, by_key.hash, "{key}");
            assert!(same_key(obj.key_parts(), key_str_parts(&key)), "{key}");
        }
        assert!(!same_key(
            pod(Some("ns"), "a").key_parts(),
            key_str_parts(&ObjectKey::from("ns/b"))
        ));
        assert!(!same_key(
            pod(Some("n"), "sa").key_parts(),
            key_str_parts(&ObjectKey::from("ns/a"))
        ));
    }

    #[test]
    fn a_typed_set_finds_replaces_and_removes_by_key() {
        let mut set: TypedSet<Pod> = EntrySet::with_one();
        let key = ObjectKey::from("ns/a");
        let first = pod(Some("ns"), "a");
        set.put(&<TypedSet<Pod>>::item(&key, &first.obj));
        let second = pod(Some("ns"), "a");
        set.put(&<TypedSet<Pod>>::item(&key, &second.obj));
        assert_eq!(set.len(), 1);
        let stored = set.get(&ObjectKey::from("ns/a")).unwrap();
        assert!(Arc::ptr_eq(&stored.obj, &second.obj));
        set.remove_item(&ByKey::new(Arc::clone(&first.obj)));
        assert!(EntrySet::is_empty(&set));
    }

    #[test]
    fn refresh_swaps_the_old_object_for_the_new_one_under_the_same_key() {
        let mut set: TypedSet<Pod> = EntrySet::with_one();
        let key = ObjectKey::from("ns/a");
        let old = pod(Some("ns"), "a");
        let other = pod(Some("ns"), "b");
        set.put(&<TypedSet<Pod>>::item(&key, &old.obj));
        set.put(&<TypedSet<Pod>>::item(&ObjectKey::from("ns/b"), &other.obj));
        let new = pod(Some("ns"), "a");
        let new_item = <TypedSet<Pod>>::item(&key, &new.obj);
        let old_item = <TypedSet<Pod>>::old_item(&new_item, &old.obj).unwrap();
        set.refresh(&old_item, &new_item);
        assert_eq!(set.len(), 2);
        let stored = set.get(&key).unwrap();
        assert!(Arc::ptr_eq(&stored.obj, &new.obj));
        assert_eq!(
            Arc::strong_count(&old.obj),
            2,
            "the set let go of the old object"
        );
    }
}
