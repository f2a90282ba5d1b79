//! Test doubles for sharding (feature `testing`): [`InMemoryLeases`], membership leases in
//! process memory with per-replica outages.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;

use super::leases::{MemberLease, MemberLeases};
use crate::leaderelection::testing::InMemoryLock;
use crate::leaderelection::{LeaderElectionRecord, LockError, RawVersion};

/// Membership leases kept in memory: a map of [`InMemoryLock`]s by name, shared by every
/// clone and every [`replica_view`](Self::replica_view).
///
/// Each view has its own outage switch ([`set_unavailable`](Self::set_unavailable)), which
/// fails its listings and every lock it handed out: a network partition between one replica
/// and the store.
#[derive(Clone, Debug, Default)]
pub struct InMemoryLeases {
    leases: Arc<Mutex<BTreeMap<String, InMemoryLock>>>,
    unavailable: Arc<AtomicBool>,
    handed_out: Arc<Mutex<Vec<InMemoryLock>>>,
}

impl InMemoryLeases {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// The same leases, seen through a view with its own outage switch (one per replica).
    pub fn replica_view(&self) -> Self {
        Self {
            leases: Arc::clone(&self.leases),
            unavailable: Arc::default(),
            handed_out: Arc::default(),
        }
    }

    /// Makes this view's listings and locks fail while `unavailable` is true.
    pub fn set_unavailable(&self, unavailable: bool) {
        self.unavailable.store(unavailable, Ordering::Relaxed);
        for lock in self.handed_out.lock().iter() {
            lock.set_unavailable(unavailable);
        }
    }

    /// Makes only this view's listings fail while `unavailable` is true; the locks it handed
    /// out keep working (a replica that renews but cannot see the others).
    pub fn set_list_unavailable(&self, unavailable: bool) {
        self.unavailable.store(unavailable, Ordering::Relaxed);
    }

    /// The record and version of the lease `name`, if it exists.
    pub fn snapshot(&self, name: &str) -> Option<(LeaderElectionRecord, RawVersion)> {
        self.leases.lock().get(name)?.snapshot()
    }
}

impl MemberLeases for InMemoryLeases {
    type Lock = InMemoryLock;

    fn lock(&self, name: &str, identity: &str) -> InMemoryLock {
        let lock = self
            .leases
            .lock()
            .entry(name.to_owned())
            .or_insert_with(|| InMemoryLock::new(identity))
            .with_identity(identity);
        lock.set_unavailable(self.unavailable.load(Ordering::Relaxed));
        self.handed_out.lock().push(lock.clone());
        lock
    }

    async fn list(&self, prefix: &str) -> Result<Vec<MemberLease>, LockError> {
        if self.unavailable.load(Ordering::Relaxed) {
            return Err(LockError::Backend {
                lock: format!("in-memory leases {prefix}*"),
                source: Box::new(std::io::Error::other("in-memory leases are unavailable")),
            });
        }
        Ok(self
            .leases
            .lock()
            .iter()
            .filter(|(name, _)| name.starts_with(prefix))
            .filter_map(|(name, lock)| {
                let (record, version) = lock.snapshot()?;
                Some(MemberLease {
                    name: name.clone(),
                    record,
                    version,
                })
            })
            .collect())
    }
}
