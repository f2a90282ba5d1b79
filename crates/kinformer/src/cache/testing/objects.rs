//! The fake source's objects: found by key in constant time (every write looks its object up),
//! listed in key order (lists page by key, as an API server's do).

use std::collections::BTreeSet;
use std::ops::Bound;
use std::sync::Arc;

use crate::cache::meta::ObjectKey;
use crate::hash::FastMap;

/// Objects by key: a hash map for lookups beside an ordered set of the same keys for listing.
/// Both always hold the same keys (the key strings are shared, not copied).
#[derive(Debug)]
pub(super) struct Objects<K> {
    by_key: FastMap<ObjectKey, Arc<K>>,
    order: BTreeSet<ObjectKey>,
}

impl<K> Objects<K> {
    pub(super) fn new() -> Self {
        Self {
            by_key: FastMap::default(),
            order: BTreeSet::new(),
        }
    }

    /// Stores `obj` under `key`; returns the object it replaced (the key string is copied
    /// only for a new key).
    pub(super) fn put(&mut self, key: &str, obj: Arc<K>) -> Option<Arc<K>> {
        if let Some(slot) = self.by_key.get_mut(key) {
            return Some(std::mem::replace(slot, obj));
        }
        let key = ObjectKey::from(key);
        self.order.insert(key.clone());
        self.by_key.insert(key, obj);
        None
    }

    /// Removes and returns the object under `key`.
    pub(super) fn remove(&mut self, key: &str) -> Option<Arc<K>> {
        let old = self.by_key.remove(key)?;
        self.order.remove(key);
        Some(old)
    }

    pub(super) fn len(&self) -> usize {
        self.by_key.len()
    }

    /// The objects in key order, from the first key after `after` (from the start if `None`).
    pub(super) fn iter_after<'a>(
        &'a self,
        after: Option<&str>,
    ) -> impl Iterator<Item = (&'a ObjectKey, &'a Arc<K>)> + 'a {
        let start = after.map_or(Bound::Unbounded, Bound::Excluded);
        self.order
            .range::<str, _>((start, Bound::Unbounded))
            .filter_map(|key| Some((key, self.by_key.get(key.as_str())?)))
    }

    /// The objects in key order.
    pub(super) fn values(&self) -> impl Iterator<Item = &Arc<K>> {
        self.iter_after(None).map(|(_, obj)| obj)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys<K>(objects: &Objects<K>, after: Option<&str>) -> Vec<String> {
        objects
            .iter_after(after)
            .map(|(k, _)| k.to_string())
            .collect()
    }

    #[test]
    fn lists_in_key_order_and_replaces_in_place() {
        let mut objects = Objects::new();
        for (key, v) in [("ns/b", 1), ("ns/a", 2), ("c", 3), ("ns/c", 4)] {
            assert!(objects.put(key, Arc::new(v)).is_none());
        }
        assert_eq!(keys(&objects, None), ["c", "ns/a", "ns/b", "ns/c"]);
        assert_eq!(keys(&objects, Some("ns/a")), ["ns/b", "ns/c"]);
        assert_eq!(keys(&objects, Some("ns/c")), Vec::<String>::new());

        let old = objects.put("ns/a", Arc::new(20));
        assert_eq!(old.as_deref(), Some(&2));
        assert_eq!(objects.put("ns/b", Arc::new(10)).as_deref(), Some(&1));
        let values: Vec<i32> = objects.values().map(|v| **v).collect();
        assert_eq!(values, [3, 20, 10, 4]);
        assert_eq!(objects.len(), 4);

        assert_eq!(objects.remove("ns/b").as_deref(), Some(&10));
        assert!(objects.remove("ns/b").is_none());
        assert_eq!(keys(&objects, None), ["c", "ns/a", "ns/c"]);
        assert_eq!(objects.len(), 3);
    }
}
