//! [`LeaseLock`]: a lock over a `coordination.k8s.io/v1` `Lease` (feature `kube`).

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Api;
use kube::api::PostParams;
use parking_lot::Mutex;

use super::lock::{Lock, LockError};
use super::record::{LeaderElectionRecord, RawVersion};
use crate::kube::ServerCapabilities;

/// A [`Lock`] over a `Lease` object (client-go's `resourcelock.LeaseLock`).
///
/// The record lives in the lease's spec (`holderIdentity`, `leaseDurationSeconds`,
/// `acquireTime`, `renewTime`, `leaseTransitions`); `metadata.resourceVersion` is the
/// [`RawVersion`], so [`update`](Lock::update) is a replace with a resource-version
/// precondition and an HTTP 409 becomes [`LockError::Conflict`].
///
/// An update starts from the lease last read or written through this lock when its version is
/// the expected one, so labels, annotations and spec fields it does not manage (such as
/// `preferredHolder` and `strategy`) are kept. Lease durations are stored in whole seconds,
/// rounded up.
#[derive(Debug)]
pub struct LeaseLock {
    api: Api<Lease>,
    namespace: String,
    name: String,
    identity: String,
    /// The lease last read or written through this lock.
    last: Mutex<Option<Lease>>,
    /// What the writes learnt about the server (a refusal of protobuf bodies).
    capabilities: ServerCapabilities,
}

impl LeaseLock {
    /// A lock on the lease `namespace/name`, used by the candidate `identity`.
    pub fn new(
        client: kube::Client,
        namespace: impl Into<String>,
        name: impl Into<String>,
        identity: impl Into<String>,
    ) -> Self {
        let namespace = namespace.into();
        Self {
            api: Api::namespaced(client, &namespace),
            namespace,
            name: name.into(),
            identity: identity.into(),
            last: Mutex::new(None),
            capabilities: ServerCapabilities::new(),
        }
    }

    /// Shares `capabilities` (e.g. the informer factory's record of the same client), so that
    /// a server's refusal of protobuf bodies is learnt once for both.
    pub fn with_capabilities(mut self, capabilities: ServerCapabilities) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// The lease's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The lease's namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    fn error(&self, error: kube::Error) -> LockError {
        let lock = self.describe();
        match error {
            kube::Error::Api(status) if status.code == 409 => LockError::Conflict {
                lock,
                reason: status.message,
            },
            kube::Error::Api(status) if status.code == 404 => LockError::NotFound { lock },
            other => LockError::Backend {
                lock,
                source: Box::new(other),
            },
        }
    }

    fn version_of(&self, lease: &Lease) -> Result<RawVersion, LockError> {
        lease
            .metadata
            .resource_version
            .as_deref()
            .map(RawVersion::from)
            .ok_or_else(|| LockError::InvalidRecord {
                lock: self.describe(),
                reason: "the lease has no metadata.resourceVersion".to_owned(),
            })
    }

    fn remember(&self, lease: Lease) -> Result<RawVersion, LockError> {
        let version = self.version_of(&lease)?;
        *self.last.lock() = Some(lease);
        Ok(version)
    }
}

/// The record stored in a lease spec. Negative numbers (invalid) read as zero.
pub(crate) fn record_from_spec(spec: Option<&LeaseSpec>) -> LeaderElectionRecord {
    let Some(spec) = spec else {
        return LeaderElectionRecord::default();
    };
    let seconds = spec.lease_duration_seconds.unwrap_or(0);
    let transitions = spec.lease_transitions.unwrap_or(0);
    if seconds < 0 || transitions < 0 {
        tracing::warn!(
            lease_duration_seconds = seconds,
            lease_transitions = transitions,
            "lease spec holds negative numbers; reading them as zero"
        );
    }
    LeaderElectionRecord {
        holder_identity: spec.holder_identity.clone().unwrap_or_default(),
        lease_duration: Duration::from_secs(u64::try_from(seconds).unwrap_or(0)),
        acquire_time: spec.acquire_time.as_ref().map(|time| time.0),
        renew_time: spec.renew_time.as_ref().map(|time| time.0),
        leader_transitions: u32::try_from(transitions).unwrap_or(0),
    }
}

/// Writes `record` into `spec`, keeping the fields a record does not cover.
pub(crate) fn record_into_spec(record: &LeaderElectionRecord, spec: &mut LeaseSpec) {
    let duration = record.lease_duration;
    let seconds = duration.as_secs() + u64::from(duration.subsec_nanos() > 0);
    spec.holder_identity = Some(record.holder_identity.clone());
    spec.lease_duration_seconds = Some(i32::try_from(seconds).unwrap_or(i32::MAX));
    spec.acquire_time = record.acquire_time.map(MicroTime);
    spec.renew_time = record.renew_time.map(MicroTime);
    spec.lease_transitions = Some(i32::try_from(record.leader_transitions).unwrap_or(i32::MAX));
}

impl Lock for LeaseLock {
    /// # Cancel safety
    ///
    /// Cancel safe: reading has no effect.
    async fn get(&self) -> Result<Option<(LeaderElectionRecord, RawVersion)>, LockError> {
        let lease = self
            .api
            .get_opt(&self.name)
            .await
            .map_err(|error| self.error(error))?;
        let Some(lease) = lease else {
            return Ok(None);
        };
        let record = record_from_spec(lease.spec.as_ref());
        let version = self.remember(lease)?;
        Ok(Some((record, version)))
    }

    /// # Cancel safety
    ///
    /// If dropped after the request was sent, the lease may have been created.
    async fn create(&self, record: &LeaderElectionRecord) -> Result<RawVersion, LockError> {
        let mut spec = LeaseSpec::default();
        record_into_spec(record, &mut spec);
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                namespace: Some(self.namespace.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(spec),
        };
        let created = crate::kube::create_with(
            &self.api,
            &self.capabilities,
            &PostParams::default(),
            &lease,
        )
        .await
        .map_err(|error| self.error(error))?;
        self.remember(created)
    }

    /// # Cancel safety
    ///
    /// If dropped after the request was sent, the lease may have been replaced.
    async fn update(
        &self,
        record: &LeaderElectionRecord,
        expected: &RawVersion,
    ) -> Result<RawVersion, LockError> {
        let base =
            self.last.lock().clone().filter(|lease| {
                lease.metadata.resource_version.as_deref() == Some(expected.as_str())
            });
        let mut lease = base.unwrap_or_else(|| Lease {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                namespace: Some(self.namespace.clone()),
                ..ObjectMeta::default()
            },
            spec: None,
        });
        lease.metadata.resource_version = Some(expected.as_str().to_owned());
        record_into_spec(record, lease.spec.get_or_insert_with(LeaseSpec::default));
        let replaced = crate::kube::replace_with(
            &self.api,
            &self.capabilities,
            &self.name,
            &PostParams::default(),
            &lease,
        )
        .await
        .map_err(|error| self.error(error))?;
        self.remember(replaced)
    }

    fn identity(&self) -> &str {
        &self.identity
    }

    fn describe(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::fake_lease_api::FakeLeaseApi;
    use super::super::{LeaderElectionConfig, LeaderElector, StopReason};
    use super::*;
    use k8s_openapi::jiff::Timestamp;
    use tokio_util::sync::CancellationToken;

    fn record(holder: &str, transitions: u32) -> LeaderElectionRecord {
        LeaderElectionRecord {
            holder_identity: holder.into(),
            lease_duration: Duration::from_secs(15),
            acquire_time: Some(Timestamp::UNIX_EPOCH),
            renew_time: Some(Timestamp::UNIX_EPOCH),
            leader_transitions: transitions,
        }
    }

    #[tokio::test]
    async fn a_lease_refused_in_protobuf_with_a_415_is_written_again_in_json() {
        let server = FakeLeaseApi::default();
        let a = LeaseLock::new(server.client(), "ns", "lock", "a");
        let v1 = a.create(&record("a", 0)).await.unwrap();
        server.fail_next(415);
        let v2 = a.update(&record("a", 0), &v1).await.unwrap();
        assert_ne!(v1, v2);
        // The create, the refused update, and the update again.
        assert_eq!(server.requests(), 3);
        let (got, v) = a.get().await.unwrap().unwrap();
        assert_eq!((got, v), (record("a", 0), v2));
    }

    #[tokio::test]
    async fn lease_lock_uses_resource_versions_and_maps_409_to_conflict() {
        let server = FakeLeaseApi::default();
        let a = LeaseLock::new(server.client(), "ns", "lock", "a");
        let b = LeaseLock::new(server.client(), "ns", "lock", "b");
        assert_eq!(a.describe(), "ns/lock");
        assert_eq!((a.namespace(), a.name(), a.identity()), ("ns", "lock", "a"));

        assert!(a.get().await.unwrap().is_none());
        let v1 = a.create(&record("a", 0)).await.unwrap();
        assert!(b.create(&record("b", 0)).await.unwrap_err().is_conflict());
        assert_eq!(b.get().await.unwrap(), Some((record("a", 0), v1.clone())));

        let v2 = a.update(&record("a", 0), &v1).await.unwrap();
        assert_ne!(v1, v2);
        // The lease went in protobuf (the second create too, refused as a conflict).
        #[cfg(feature = "protobuf")]
        assert_eq!(server.protobuf_bodies(), 3);
        assert!(
            b.update(&record("b", 1), &v1)
                .await
                .unwrap_err()
                .is_conflict()
        );

        // Another client labels the lease and sets a strategy: the next update keeps both.
        server.edit("ns/lock", |lease| {
            lease["metadata"]["labels"] = serde_json::json!({"team": "x"});
            lease["spec"]["strategy"] = serde_json::json!("OldestEmulationVersion");
        });
        assert!(
            a.update(&record("a", 0), &v2)
                .await
                .unwrap_err()
                .is_conflict()
        );
        let (_, v3) = b.get().await.unwrap().unwrap();
        let v4 = b.update(&record("b", 1), &v3).await.unwrap();
        let stored = server.get("ns/lock").unwrap();
        assert_eq!(stored["metadata"]["labels"]["team"], "x");
        assert_eq!(stored["spec"]["strategy"], "OldestEmulationVersion");
        assert_eq!(stored["spec"]["holderIdentity"], "b");
        assert_eq!(stored["spec"]["leaseDurationSeconds"], 15);
        assert_eq!(stored["spec"]["leaseTransitions"], 1);
        assert_eq!(a.get().await.unwrap(), Some((record("b", 1), v4)));

        let other = LeaseLock::new(server.client(), "ns", "other", "a");
        assert!(matches!(
            other.update(&record("a", 0), &v1).await,
            Err(LockError::NotFound { .. })
        ));
        server.fail_next(500);
        assert!(matches!(a.get().await, Err(LockError::Backend { .. })));
    }

    #[tokio::test(start_paused = true)]
    async fn electors_over_lease_locks_hand_over_on_release() {
        let server = FakeLeaseApi::default();
        let electors: Vec<_> = ["a", "b"]
            .into_iter()
            .map(|id| {
                let lock = LeaseLock::new(server.client(), "ns", "lock", id);
                let mut config = LeaderElectionConfig::new(lock);
                config.release_on_cancel = true;
                LeaderElector::new(config).unwrap()
            })
            .collect();
        let cancel_a = CancellationToken::new();
        let run_a = tokio::spawn({
            let (elector, cancel) = (electors[0].clone(), cancel_a.clone());
            async move { elector.run(cancel).await }
        });
        electors[0]
            .subscribe()
            .wait_for(|s| s.leading)
            .await
            .unwrap();
        let cancel_b = CancellationToken::new();
        let run_b = tokio::spawn({
            let (elector, cancel) = (electors[1].clone(), cancel_b.clone());
            async move { elector.run(cancel).await }
        });
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert!(electors[0].is_leader() && !electors[1].is_leader());
        assert_eq!(electors[1].leader().as_deref(), Some("a"));
        let requests = server.requests();
        assert!(
            requests > 30,
            "renewals and polls reach the server: {requests}"
        );

        cancel_a.cancel();
        assert_eq!(run_a.await.unwrap(), Ok(StopReason::Cancelled));
        let released_at = tokio::time::Instant::now();
        assert_eq!(server.get("ns/lock").unwrap()["spec"]["holderIdentity"], "");
        electors[1]
            .subscribe()
            .wait_for(|s| s.leading)
            .await
            .unwrap();
        assert!(released_at.elapsed() < Duration::from_secs(5));
        let stored = server.get("ns/lock").unwrap();
        assert_eq!(stored["spec"]["holderIdentity"], "b");
        assert_eq!(stored["spec"]["leaseTransitions"], 1);
        cancel_b.cancel();
        assert_eq!(run_b.await.unwrap(), Ok(StopReason::Cancelled));
    }

    #[test]
    fn a_record_survives_a_round_trip_through_a_lease_spec() {
        let record = LeaderElectionRecord {
            holder_identity: "a".into(),
            lease_duration: Duration::from_secs(15),
            acquire_time: Some(Timestamp::UNIX_EPOCH),
            renew_time: Some(Timestamp::UNIX_EPOCH),
            leader_transitions: 3,
        };
        let mut spec = LeaseSpec {
            strategy: Some("OldestEmulationVersion".into()),
            ..LeaseSpec::default()
        };
        record_into_spec(&record, &mut spec);
        assert_eq!(record_from_spec(Some(&spec)), record);
        assert_eq!(spec.strategy.as_deref(), Some("OldestEmulationVersion"));
    }

    #[test]
    fn sub_second_lease_durations_round_up_and_negative_numbers_read_as_zero() {
        let record = LeaderElectionRecord {
            lease_duration: Duration::from_millis(1500),
            ..LeaderElectionRecord::default()
        };
        let mut spec = LeaseSpec::default();
        record_into_spec(&record, &mut spec);
        assert_eq!(spec.lease_duration_seconds, Some(2));
        spec.lease_duration_seconds = Some(-5);
        spec.lease_transitions = Some(-1);
        let read = record_from_spec(Some(&spec));
        assert_eq!(read.lease_duration, Duration::ZERO);
        assert_eq!(read.leader_transitions, 0);
        assert_eq!(record_from_spec(None), LeaderElectionRecord::default());
    }
}
