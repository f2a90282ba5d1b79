//! [`InMemoryLock`]: a lease shared in process memory, for tests.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use crate::leaderelection::{LeaderElectionRecord, Lock, LockError, RawVersion};

/// A lease kept in memory, shared by every lock made from it with
/// [`with_identity`](InMemoryLock::with_identity) (and by clones).
///
/// Versions are increasing integers; every write (and [`touch`](InMemoryLock::touch)) bumps
/// the version, so [`update`](Lock::update) behaves like a `Lease` replace with a
/// `resourceVersion` precondition.
///
/// Fault injection for tests is per lock value (per candidate, shared by its clones):
/// [`set_latency`](InMemoryLock::set_latency) delays each call before and after it takes
/// effect, [`set_unavailable`](InMemoryLock::set_unavailable) makes calls fail.
///
/// ```
/// use kinformer::leaderelection::testing::InMemoryLock;
/// use kinformer::leaderelection::{LeaderElectionRecord, Lock};
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let a = InMemoryLock::new("a");
/// let b = a.with_identity("b"); // same lease, another candidate
/// let record = LeaderElectionRecord { holder_identity: "a".into(), ..Default::default() };
/// let v1 = a.create(&record).await?;
/// // b read v1 earlier; a writes again; b's write with v1 now conflicts.
/// let v2 = a.update(&record, &v1).await?;
/// assert!(b.update(&record, &v1).await.unwrap_err().is_conflict());
/// assert_eq!(b.get().await?.map(|(_, v)| v), Some(v2));
/// # Ok::<(), kinformer::leaderelection::LockError>(())
/// # }).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct InMemoryLock {
    identity: String,
    lease: Arc<Mutex<Lease>>,
    faults: Arc<Mutex<Faults>>,
}

#[derive(Debug, Default)]
struct Lease {
    /// The stored record and its version; `None` until created.
    stored: Option<(LeaderElectionRecord, u64)>,
    /// The last version handed out; versions only grow.
    last_version: u64,
}

impl Lease {
    fn next_version(&mut self) -> u64 {
        self.last_version += 1;
        self.last_version
    }
}

#[derive(Debug, Default)]
struct Faults {
    latency: Duration,
    unavailable: bool,
}

const DESCRIBE: &str = "in-memory lease";

impl InMemoryLock {
    /// A fresh, empty lease used by the candidate `identity`.
    pub fn new(identity: impl Into<String>) -> Self {
        Self {
            identity: identity.into(),
            lease: Arc::default(),
            faults: Arc::default(),
        }
    }

    /// A lock on the same lease for another candidate, with its own (cleared) faults.
    pub fn with_identity(&self, identity: impl Into<String>) -> Self {
        Self {
            identity: identity.into(),
            lease: Arc::clone(&self.lease),
            faults: Arc::default(),
        }
    }

    /// The stored record and version right now, without latency or faults.
    pub fn snapshot(&self) -> Option<(LeaderElectionRecord, RawVersion)> {
        let lease = self.lease.lock();
        lease
            .stored
            .as_ref()
            .map(|(record, version)| (record.clone(), RawVersion::new(version.to_string())))
    }

    /// Bumps the version without changing the record, as another writer editing the object
    /// (a label, say) would; pending updates expecting the old version then conflict.
    /// Returns the new version, or `None` if the lease does not exist.
    pub fn touch(&self) -> Option<RawVersion> {
        let mut lease = self.lease.lock();
        let version = lease.next_version();
        let (_, stored_version) = lease.stored.as_mut()?;
        *stored_version = version;
        Some(RawVersion::new(version.to_string()))
    }

    /// Delays every call of this lock (and its clones) by `latency` before it takes effect and
    /// again before it returns, like a request and a response in flight.
    pub fn set_latency(&self, latency: Duration) {
        self.faults.lock().latency = latency;
    }

    /// Makes every call of this lock (and its clones) fail with [`LockError::Backend`] while
    /// `unavailable` is true, like a network partition between this candidate and the store.
    pub fn set_unavailable(&self, unavailable: bool) {
        self.faults.lock().unavailable = unavailable;
    }

    async fn call<T>(
        &self,
        apply: impl FnOnce(&mut Lease) -> Result<T, LockError>,
    ) -> Result<T, LockError> {
        let latency = self.faults.lock().latency;
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        let result = if self.faults.lock().unavailable {
            Err(LockError::Backend {
                lock: DESCRIBE.to_owned(),
                source: Box::new(std::io::Error::other("in-memory lease is unavailable")),
            })
        } else {
            apply(&mut self.lease.lock())
        };
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        result
    }
}

fn conflict(reason: String) -> LockError {
    LockError::Conflict {
        lock: DESCRIBE.to_owned(),
        reason,
    }
}

impl Lock for InMemoryLock {
    /// # Cancel safety
    ///
    /// Cancel safe: reading has no effect.
    async fn get(&self) -> Result<Option<(LeaderElectionRecord, RawVersion)>, LockError> {
        self.call(|lease| {
            Ok(lease
                .stored
                .as_ref()
                .map(|(record, version)| (record.clone(), RawVersion::new(version.to_string()))))
        })
        .await
    }

    /// # Cancel safety
    ///
    /// If dropped after the latency before the write elapsed, the record was created.
    async fn create(&self, record: &LeaderElectionRecord) -> Result<RawVersion, LockError> {
        let record = record.clone();
        self.call(move |lease| {
            if let Some((_, version)) = &lease.stored {
                return Err(conflict(format!("already exists at version {version}")));
            }
            let version = lease.next_version();
            lease.stored = Some((record, version));
            Ok(RawVersion::new(version.to_string()))
        })
        .await
    }

    /// # Cancel safety
    ///
    /// If dropped after the latency before the write elapsed, the record was replaced.
    async fn update(
        &self,
        record: &LeaderElectionRecord,
        expected: &RawVersion,
    ) -> Result<RawVersion, LockError> {
        let record = record.clone();
        self.call(move |lease| {
            let stored_version = match &lease.stored {
                None => {
                    return Err(LockError::NotFound {
                        lock: DESCRIBE.to_owned(),
                    });
                }
                Some((_, version)) => *version,
            };
            if stored_version.to_string() != expected.as_str() {
                return Err(conflict(format!(
                    "expected version {expected}, stored version is {stored_version}"
                )));
            }
            let version = lease.next_version();
            lease.stored = Some((record, version));
            Ok(RawVersion::new(version.to_string()))
        })
        .await
    }

    fn identity(&self) -> &str {
        &self.identity
    }

    fn describe(&self) -> String {
        DESCRIBE.to_owned()
    }
}
