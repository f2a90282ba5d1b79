//! client-go's `ExpirationCache`: a store whose entries expire, and its TTL policy
//! (`NewTTLStore`).
//!
//! Every write stamps the entry with the current time ([`tokio::time::Instant`], so tests can
//! pause the clock). A read of an expired entry removes it and answers as if it were absent;
//! nothing runs in the background. With [`TtlPolicy`]:
//! - an entry is expired once *more than* the TTL has passed since its write: at exactly the
//!   TTL it is still there (client-go: `ttl > 0 && now - timestamp > ttl`);
//! - a zero TTL never expires anything (client-go: a TTL ≤ 0; a [`Duration`] cannot be
//!   negative).
//!
//! One difference from client-go: [`list_keys`](ExpirationCache::list_keys) leaves out
//! expired keys (client-go's `ListKeys` returns them until they are read).
//!
//! It implements [`ReflectorSink`](crate::cache::fifo::ReflectorSink), so a
//! [`Reflector`](crate::cache::reflector::Reflector) can fill it.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use kube_core::Resource;
use parking_lot::Mutex;
use tokio::time::Instant;

use crate::cache::meta::KeyError;
use crate::cache::meta::{ObjectKey, meta_namespace_key};

/// An object with the time it was written: client-go's `TimestampedEntry`.
#[derive(Debug)]
pub struct TimestampedEntry<K> {
    /// The object.
    pub obj: Arc<K>,
    /// When it was added, updated or replaced.
    pub timestamp: Instant,
    /// Its key.
    pub key: ObjectKey,
}

/// Decides whether an entry has expired: client-go's `ExpirationPolicy`.
pub trait ExpirationPolicy<K>: Send + Sync + 'static {
    /// True if `entry` has expired at `now`.
    fn is_expired(&self, entry: &TimestampedEntry<K>, now: Instant) -> bool;
}

/// Expires entries older than a TTL: client-go's `TTLPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TtlPolicy {
    /// The time to live; zero never expires.
    pub ttl: Duration,
}

impl<K> ExpirationPolicy<K> for TtlPolicy {
    fn is_expired(&self, entry: &TimestampedEntry<K>, now: Instant) -> bool {
        !self.ttl.is_zero() && now.saturating_duration_since(entry.timestamp) > self.ttl
    }
}

/// A key → object store whose entries expire (see the module docs).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap().block_on(async {
/// use std::sync::Arc;
/// use std::time::Duration;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kinformer::cache::store::ExpirationCache;
/// use kube_core::ObjectMeta;
///
/// let cache = ExpirationCache::new_ttl_store(Duration::from_secs(10));
/// let cm = ConfigMap {
///     metadata: ObjectMeta { name: Some("a".into()), namespace: Some("ns".into()), ..Default::default() },
///     ..Default::default()
/// };
/// cache.add(Arc::new(cm)).unwrap();
/// tokio::time::advance(Duration::from_secs(10)).await;
/// assert!(cache.get_by_key("ns/a").is_some(), "exactly at the TTL: still there");
/// tokio::time::advance(Duration::from_millis(1)).await;
/// assert!(cache.get_by_key("ns/a").is_none());
/// # });
/// ```
pub struct ExpirationCache<K> {
    items: Mutex<HashMap<ObjectKey, TimestampedEntry<K>>>,
    policy: Box<dyn ExpirationPolicy<K>>,
}

impl<K> fmt::Debug for ExpirationCache<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExpirationCache")
            .field("entries", &self.items.lock().len())
            .finish_non_exhaustive()
    }
}

impl<K: Resource + Send + Sync + 'static> ExpirationCache<K> {
    /// A store whose entries expire more than `ttl` after their last write (client-go's
    /// `NewTTLStore`); a zero `ttl` never expires.
    pub fn new_ttl_store(ttl: Duration) -> Self {
        Self::new(TtlPolicy { ttl })
    }

    /// A store with any expiration policy (client-go's `NewExpirationStore`).
    pub fn new(policy: impl ExpirationPolicy<K>) -> Self {
        Self {
            items: Mutex::new(HashMap::new()),
            policy: Box::new(policy),
        }
    }

    fn entry(obj: Arc<K>, now: Instant) -> Result<TimestampedEntry<K>, KeyError> {
        let key = meta_namespace_key(obj.as_ref())?;
        Ok(TimestampedEntry {
            obj,
            timestamp: now,
            key,
        })
    }

    /// Adds or replaces the object under its key, stamped now.
    ///
    /// # Errors
    /// [`KeyError`] if the object has no name.
    pub fn add(&self, obj: Arc<K>) -> Result<(), KeyError> {
        let e = Self::entry(obj, Instant::now())?;
        self.items.lock().insert(e.key.clone(), e);
        Ok(())
    }

    /// The same as [`add`](Self::add).
    ///
    /// # Errors
    /// [`KeyError`] if the object has no name.
    pub fn update(&self, obj: Arc<K>) -> Result<(), KeyError> {
        self.add(obj)
    }

    /// Removes the object's key.
    ///
    /// # Errors
    /// [`KeyError`] if the object has no name.
    pub fn delete(&self, obj: &K) -> Result<(), KeyError> {
        let key = meta_namespace_key(obj)?;
        self.items.lock().remove(key.as_str());
        Ok(())
    }

    /// The unexpired object under `key`; an expired one is removed and `None` returned.
    pub fn get_by_key(&self, key: &str) -> Option<Arc<K>> {
        let now = Instant::now();
        let mut items = self.items.lock();
        let expired = self.policy.is_expired(items.get(key)?, now);
        if expired {
            items.remove(key);
            None
        } else {
            items.get(key).map(|e| Arc::clone(&e.obj))
        }
    }

    /// The unexpired object with `obj`'s key.
    ///
    /// # Errors
    /// [`KeyError`] if the object has no name.
    pub fn get(&self, obj: &K) -> Result<Option<Arc<K>>, KeyError> {
        let key = meta_namespace_key(obj)?;
        Ok(self.get_by_key(key.as_str()))
    }

    /// Every unexpired object (in no particular order); expired entries are removed.
    pub fn list(&self) -> Vec<Arc<K>> {
        self.purge_and_collect(|e| Arc::clone(&e.obj))
    }

    /// Every unexpired key (in no particular order); expired entries are removed.
    pub fn list_keys(&self) -> Vec<ObjectKey> {
        self.purge_and_collect(|e| e.key.clone())
    }

    fn purge_and_collect<T>(&self, f: impl Fn(&TimestampedEntry<K>) -> T) -> Vec<T> {
        let now = Instant::now();
        let mut items = self.items.lock();
        items.retain(|_, e| !self.policy.is_expired(e, now));
        items.values().map(f).collect()
    }

    /// Replaces the whole content with `objs`, all stamped now.
    ///
    /// # Errors
    /// [`KeyError`] if an object has no name; the store is then unchanged.
    pub fn replace(&self, objs: Vec<Arc<K>>) -> Result<(), KeyError> {
        let now = Instant::now();
        let mut fresh = HashMap::with_capacity(objs.len());
        for o in objs {
            let e = Self::entry(o, now)?;
            fresh.insert(e.key.clone(), e);
        }
        *self.items.lock() = fresh;
        Ok(())
    }

    /// The number of entries, expired ones included until they are read or listed.
    pub fn len(&self) -> usize {
        self.items.lock().len()
    }

    /// True if there are no entries at all.
    pub fn is_empty(&self) -> bool {
        self.items.lock().is_empty()
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;

    use super::*;
    use crate::test_support::pod;

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[tokio::test(start_paused = true)]
    async fn an_entry_exactly_at_its_ttl_is_not_expired_one_tick_later_it_is() {
        let c = ExpirationCache::<Pod>::new_ttl_store(secs(30));
        c.add(pod("ns", "a", &[])).unwrap();
        tokio::time::advance(secs(30)).await;
        assert!(c.get_by_key("ns/a").is_some());
        assert_eq!(c.list().len(), 1);
        tokio::time::advance(Duration::from_nanos(1)).await;
        assert!(c.get_by_key("ns/a").is_none());
        assert_eq!(c.len(), 0, "the expired entry was removed by the read");
    }

    #[tokio::test(start_paused = true)]
    async fn a_zero_ttl_never_expires() {
        let c = ExpirationCache::<Pod>::new_ttl_store(Duration::ZERO);
        c.add(pod("ns", "a", &[])).unwrap();
        tokio::time::advance(secs(10 * 365 * 24 * 3600)).await;
        assert!(c.get_by_key("ns/a").is_some());
        assert_eq!(c.list_keys().len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn writes_restamp_and_lists_purge_expired_entries() {
        let c = ExpirationCache::<Pod>::new_ttl_store(secs(10));
        c.add(pod("ns", "old", &[])).unwrap();
        c.add(pod("ns", "renewed", &[])).unwrap();
        tokio::time::advance(secs(6)).await;
        c.update(pod("ns", "renewed", &[])).unwrap();
        c.add(pod("ns", "young", &[])).unwrap();
        tokio::time::advance(secs(6)).await;
        let mut keys: Vec<String> = c.list_keys().iter().map(ToString::to_string).collect();
        keys.sort();
        assert_eq!(keys, ["ns/renewed", "ns/young"]);
        assert_eq!(c.len(), 2, "listing removed the expired entry");
        c.delete(&pod("ns", "young", &[])).unwrap();
        assert!(c.get(&pod("ns", "young", &[])).unwrap().is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn replace_swaps_everything_and_stamps_now() {
        let c = ExpirationCache::<Pod>::new_ttl_store(secs(10));
        c.add(pod("ns", "gone", &[])).unwrap();
        tokio::time::advance(secs(9)).await;
        c.replace(vec![pod("ns", "x", &[]), pod("ns", "y", &[])])
            .unwrap();
        assert!(c.get_by_key("ns/gone").is_none());
        tokio::time::advance(secs(10)).await;
        assert_eq!(c.list().len(), 2);
        assert!(c.replace(vec![Arc::new(Pod::default())]).is_err());
        assert_eq!(c.len(), 2, "a failed replace changes nothing");
    }

    #[test]
    fn a_custom_policy_decides() {
        struct Never;
        impl ExpirationPolicy<Pod> for Never {
            fn is_expired(&self, _: &TimestampedEntry<Pod>, _: Instant) -> bool {
                true
            }
        }
        let c = ExpirationCache::new(Never);
        c.add(pod("ns", "a", &[])).unwrap();
        assert!(c.get_by_key("ns/a").is_none());
        assert!(c.list().is_empty());
    }
}
