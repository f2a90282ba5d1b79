//! [`ControllerExpectations`]: the creations and deletions an owner's last sync is still
//! waiting to see in the informer cache (client-go's `ControllerExpectations`).
//!
//! After a ReplicaSet's sync creates 5 pods, the cache shows them only once their watch events
//! arrive. A sync in between would count too few pods and create 5 more. So a sync records
//! what it expects, the handlers of the owned objects lower the counts as events arrive, and
//! the next sync acts only once the counts reach zero — or once the record is older than the
//! TTL, in case an event was never delivered.

use std::collections::HashMap;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

#[derive(Debug, Clone, Copy)]
struct Record {
    adds: i64,
    deletes: i64,
    set_at: Instant,
}

/// Outstanding creations and deletions per owner key.
///
/// ```
/// use std::time::Duration;
/// use kinformer::controller::ControllerExpectations;
///
/// let e = ControllerExpectations::new(Duration::from_secs(300));
/// e.expect("ns/web", 2, 0); // the sync is about to create two pods
/// assert!(!e.satisfied("ns/web"), "a sync now would not see them yet");
/// e.creation_observed("ns/web"); // from the pod handler's on_add
/// e.creation_observed("ns/web");
/// assert!(e.satisfied("ns/web"));
/// ```
#[derive(Debug)]
pub struct ControllerExpectations {
    ttl: Duration,
    records: Mutex<HashMap<String, Record>>,
}

impl ControllerExpectations {
    /// Expectations that expire after `ttl`.
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            records: Mutex::new(HashMap::new()),
        }
    }

    /// Whether the key's last sync has been observed (or expired, or never recorded): the
    /// next sync may create and delete pods.
    pub fn satisfied(&self, key: &str) -> bool {
        match self.records.lock().get(key) {
            None => true,
            Some(r) => (r.adds <= 0 && r.deletes <= 0) || r.set_at.elapsed() >= self.ttl,
        }
    }

    /// How long until the key's record expires (zero if satisfied or expired).
    pub fn time_to_expiry(&self, key: &str) -> Duration {
        match self.records.lock().get(key) {
            Some(r) if r.adds > 0 || r.deletes > 0 => self.ttl.saturating_sub(r.set_at.elapsed()),
            _ => Duration::ZERO,
        }
    }

    /// Records that a sync is about to create `adds` and delete `deletes` objects.
    pub fn expect(&self, key: &str, adds: usize, deletes: usize) {
        let to_i64 = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        self.records.lock().insert(
            key.to_owned(),
            Record {
                adds: to_i64(adds),
                deletes: to_i64(deletes),
                set_at: Instant::now(),
            },
        );
    }

    /// A creation was observed (or will never be: it failed).
    pub fn creation_observed(&self, key: &str) {
        if let Some(r) = self.records.lock().get_mut(key) {
            r.adds -= 1;
        }
    }

    /// A deletion was observed (or will never be: it failed or the object was gone).
    pub fn deletion_observed(&self, key: &str) {
        if let Some(r) = self.records.lock().get_mut(key) {
            r.deletes -= 1;
        }
    }

    /// Drops the key's record (its owner is gone).
    pub fn forget(&self, key: &str) {
        self.records.lock().remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn satisfied_once_observed_or_expired() {
        let e = ControllerExpectations::new(Duration::from_secs(10));
        assert!(e.satisfied("ns/a"));
        e.expect("ns/a", 2, 1);
        assert!(!e.satisfied("ns/a"));
        e.creation_observed("ns/a");
        e.creation_observed("ns/a");
        assert!(!e.satisfied("ns/a"));
        e.deletion_observed("ns/a");
        assert!(e.satisfied("ns/a"));

        e.expect("ns/b", 1, 0);
        tokio::time::advance(Duration::from_secs(4)).await;
        assert_eq!(e.time_to_expiry("ns/b"), Duration::from_secs(6));
        tokio::time::advance(Duration::from_secs(6)).await;
        assert!(e.satisfied("ns/b"), "expired");
        e.forget("ns/b");
        e.creation_observed("ns/b"); // no record: nothing to lower
        assert!(e.satisfied("ns/b"));
    }
}
