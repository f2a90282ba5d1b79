//! A bounded cache of decoded objects for a compact indexer ("hot objects").
//!
//! An entry remembers the encoding it was decoded from (the stored `Arc<[u8]>` itself). A
//! reader that found blob `b` under a key gets the cached object only if the entry holds that
//! very allocation, so an entry can never be stale: any write stores a new allocation, and the
//! cached one cannot be reused for other bytes while the entry holds it. Eviction is CLOCK
//! (second chance): a full cache replaces the first entry not read since the hand last passed.

use std::sync::Arc;

use parking_lot::Mutex;

use crate::cache::meta::ObjectKey;
use crate::cache::store::Blob;
use crate::cache::store::FastMap;

struct Slot<K> {
    key: ObjectKey,
    blob: Blob,
    obj: Arc<K>,
    referenced: bool,
}

struct Clock<K> {
    slots: Vec<Slot<K>>,
    position: FastMap<ObjectKey, usize>,
    hand: usize,
}

/// At most `capacity` decoded objects, keyed by object key.
pub(crate) struct HotObjects<K> {
    capacity: usize,
    clock: Mutex<Clock<K>>,
}

impl<K> HotObjects<K> {
    /// A cache of `capacity` (> 0) objects.
    pub(crate) fn new(capacity: usize) -> Self {
        HotObjects {
            capacity,
            clock: Mutex::new(Clock {
                slots: Vec::new(),
                position: FastMap::default(),
                hand: 0,
            }),
        }
    }

    /// The object cached for `key` if it was decoded from `blob` (the same allocation).
    pub(crate) fn get(&self, key: &str, blob: &Blob) -> Option<Arc<K>> {
        let mut c = self.clock.lock();
        let i = *c.position.get(key)?;
        let slot = &mut c.slots[i];
        if !Arc::ptr_eq(&slot.blob, blob) {
            return None;
        }
        slot.referenced = true;
        Some(Arc::clone(&slot.obj))
    }

    /// Caches `obj` as the decoding of `blob`, stored under `key`.
    pub(crate) fn insert(&self, key: &ObjectKey, blob: &Blob, obj: &Arc<K>) {
        if self.capacity == 0 {
            return;
        }
        let mut c = self.clock.lock();
        let slot = Slot {
            key: key.clone(),
            blob: Arc::clone(blob),
            obj: Arc::clone(obj),
            referenced: false,
        };
        if let Some(&i) = c.position.get(key.as_str()) {
            c.slots[i] = slot;
            return;
        }
        if c.slots.len() < self.capacity {
            let i = c.slots.len();
            c.slots.push(slot);
            c.position.insert(key.clone(), i);
            return;
        }
        let victim = loop {
            let h = c.hand;
            c.hand = (h + 1) % c.slots.len();
            let s = &mut c.slots[h];
            if !s.referenced {
                break h;
            }
            s.referenced = false;
        };
        let old = std::mem::replace(&mut c.slots[victim], slot);
        c.position.remove(old.key.as_str());
        c.position.insert(key.clone(), victim);
    }

    /// Forgets `key` (its object was deleted), so the cache does not keep it alive.
    pub(crate) fn remove(&self, key: &str) {
        let mut c = self.clock.lock();
        let Some(i) = c.position.remove(key) else {
            return;
        };
        let last = c.slots.len() - 1;
        c.slots.swap_remove(i);
        if i != last {
            let moved = c.slots[i].key.clone();
            c.position.insert(moved, i);
        }
        if c.hand >= c.slots.len() {
            c.hand = 0;
        }
    }

    /// Number of cached objects.
    pub(crate) fn len(&self) -> usize {
        self.clock.lock().slots.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blob(b: u8) -> Blob {
        Arc::from(vec![b])
    }

    #[test]
    fn a_hit_needs_the_same_allocation_not_just_equal_bytes() {
        let hot = HotObjects::new(4);
        let key = ObjectKey::from("ns/a");
        let b = blob(1);
        hot.insert(&key, &b, &Arc::new(7));
        assert_eq!(hot.get("ns/a", &b).as_deref(), Some(&7));
        assert_eq!(hot.get("ns/a", &blob(1)), None);
        assert_eq!(hot.get("ns/b", &b), None);
    }

    #[test]
    fn a_full_cache_evicts_an_entry_not_read_since_the_hand_passed() {
        let hot = HotObjects::new(3);
        let keys: Vec<ObjectKey> = (0..4)
            .map(|i| ObjectKey::from(format!("ns/{i}").as_str()))
            .collect();
        let blobs: Vec<Blob> = (0..4).map(blob).collect();
        for i in 0..3 {
            hot.insert(&keys[i], &blobs[i], &Arc::new(i));
        }
        // 0 and 2 are read; 1 is not, so the fourth object replaces it.
        assert!(hot.get("ns/0", &blobs[0]).is_some());
        assert!(hot.get("ns/2", &blobs[2]).is_some());
        hot.insert(&keys[3], &blobs[3], &Arc::new(3));
        assert_eq!(hot.len(), 3);
        assert!(hot.get("ns/1", &blobs[1]).is_none());
        for i in [0, 2, 3] {
            assert_eq!(hot.get(keys[i].as_str(), &blobs[i]).as_deref(), Some(&i));
        }
    }

    #[test]
    fn removed_keys_free_their_slot() {
        let hot = HotObjects::new(2);
        let (a, b) = (ObjectKey::from("ns/a"), ObjectKey::from("ns/b"));
        let (ba, bb) = (blob(1), blob(2));
        hot.insert(&a, &ba, &Arc::new(1));
        hot.insert(&b, &bb, &Arc::new(2));
        hot.remove("ns/a");
        assert_eq!(hot.len(), 1);
        assert!(hot.get("ns/a", &ba).is_none());
        assert_eq!(hot.get("ns/b", &bb).as_deref(), Some(&2));
        hot.remove("ns/nope");
        assert_eq!(hot.len(), 1);
    }
}
