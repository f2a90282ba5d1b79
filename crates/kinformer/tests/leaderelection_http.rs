//! Leader election over HTTP: `LeaseLock` and `LeaderElector` against the embedded API server.
//!
//! These run on the real clock (sockets and a paused clock do not mix), with short leases.
#![cfg(feature = "kube")]
// Test helpers outside `#[test]` functions unwrap too.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use kinformer::leaderelection::{
    LeaderElectionConfig, LeaderElectionError, LeaderElectionRecord, LeaderElector, LeaseLock,
    Lock, LockError, StopReason,
};
use kinformer_apiserver::{Fault, FaultRule, Target, TestServer};
use serde_json::json;
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep, timeout};
use tokio_util::sync::CancellationToken;

const LEASE: Duration = Duration::from_secs(3);
const RENEW: Duration = Duration::from_secs(2);
const RETRY: Duration = Duration::from_millis(500);

fn record(holder: &str, transitions: u32) -> LeaderElectionRecord {
    LeaderElectionRecord {
        holder_identity: holder.into(),
        lease_duration: LEASE,
        leader_transitions: transitions,
        ..LeaderElectionRecord::default()
    }
}

struct Candidate {
    elector: LeaderElector<LeaseLock>,
    cancel: CancellationToken,
    run: JoinHandle<Result<StopReason, LeaderElectionError>>,
}

impl Candidate {
    fn start(server: &TestServer, identity: &str) -> Self {
        let lock = LeaseLock::new(
            server.client().unwrap(),
            "kube-system",
            "controller",
            identity,
        );
        let mut config = LeaderElectionConfig::new(lock);
        config.lease_duration = LEASE;
        config.renew_deadline = RENEW;
        config.retry_period = RETRY;
        config.release_on_cancel = true;
        let elector = LeaderElector::new(config).unwrap();
        let cancel = CancellationToken::new();
        let run = tokio::spawn({
            let (elector, cancel) = (elector.clone(), cancel.clone());
            async move { elector.run(cancel).await }
        });
        Self {
            elector,
            cancel,
            run,
        }
    }

    async fn stop(self) -> StopReason {
        self.cancel.cancel();
        timeout(Duration::from_secs(5), self.run)
            .await
            .unwrap()
            .unwrap()
            .unwrap()
    }
}

fn leaders(candidates: &[Candidate]) -> Vec<usize> {
    (0..candidates.len())
        .filter(|&i| candidates[i].elector.is_leader())
        .collect()
}

async fn one_leader(candidates: &[Candidate]) -> usize {
    timeout(Duration::from_secs(10), async {
        loop {
            if let [leader] = leaders(candidates)[..] {
                return leader;
            }
            sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap()
}

fn stored_holder(server: &TestServer) -> (String, i64) {
    let lease = server
        .store()
        .get("leases", "kube-system", "controller")
        .unwrap()
        .unwrap();
    (
        lease["spec"]["holderIdentity"].as_str().unwrap().to_owned(),
        lease["spec"]["leaseTransitions"].as_i64().unwrap(),
    )
}

#[tokio::test]
async fn lease_lock_over_http_uses_resource_versions_and_maps_409_to_conflict() {
    let server = TestServer::start().await.unwrap();
    let a = LeaseLock::new(server.client().unwrap(), "ns", "lock", "a");
    let b = LeaseLock::new(server.client().unwrap(), "ns", "lock", "b");

    assert!(a.get().await.unwrap().is_none());
    let v1 = a.create(&record("a", 0)).await.unwrap();
    assert!(b.create(&record("b", 0)).await.unwrap_err().is_conflict());
    assert_eq!(b.get().await.unwrap(), Some((record("a", 0), v1.clone())));

    // An unchanged object keeps its version (the server treats it as a no-op); a renewal
    // changes the renew time.
    assert_eq!(a.update(&record("a", 0), &v1).await.unwrap(), v1);
    let renewed = LeaderElectionRecord {
        renew_time: Some(k8s_openapi::jiff::Timestamp::UNIX_EPOCH),
        ..record("a", 0)
    };
    let v2 = a.update(&renewed, &v1).await.unwrap();
    assert_ne!(v1, v2);
    assert!(
        b.update(&record("b", 1), &v1)
            .await
            .unwrap_err()
            .is_conflict()
    );

    // Another client labels the lease; an update from the fresh version keeps the label.
    server
        .store()
        .patch(
            "leases",
            "ns",
            "lock",
            &json!({"metadata": {"labels": {"team": "x"}}}),
        )
        .unwrap();
    assert!(
        a.update(&record("a", 0), &v2)
            .await
            .unwrap_err()
            .is_conflict()
    );
    let (_, v3) = b.get().await.unwrap().unwrap();
    b.update(&record("b", 1), &v3).await.unwrap();
    let stored = server.store().get("leases", "ns", "lock").unwrap().unwrap();
    assert_eq!(stored["metadata"]["labels"]["team"], "x");
    assert_eq!(stored["spec"]["holderIdentity"], "b");
    assert_eq!(stored["spec"]["leaseDurationSeconds"], 3);
    assert_eq!(stored["spec"]["leaseTransitions"], 1);

    let missing = LeaseLock::new(server.client().unwrap(), "ns", "missing", "a");
    assert!(matches!(
        missing.update(&record("a", 0), &v1).await,
        Err(LockError::NotFound { .. })
    ));
    server.faults().inject(Fault::InternalError);
    assert!(matches!(a.get().await, Err(LockError::Backend { .. })));
}

#[tokio::test]
async fn three_electors_over_http_keep_one_leader_and_hand_over_on_release() {
    let server = TestServer::start().await.unwrap();
    let mut candidates: Vec<_> = ["a", "b", "c"]
        .into_iter()
        .map(|id| Candidate::start(&server, id))
        .collect();
    let old = one_leader(&candidates).await;
    // Two lease durations of renewals: leadership stays put and nobody else believes it leads.
    let until = Instant::now() + 2 * LEASE;
    while Instant::now() < until {
        assert_eq!(leaders(&candidates), vec![old]);
        sleep(Duration::from_millis(50)).await;
    }
    let old_name = candidates[old].elector.identity().to_owned();
    assert_eq!(stored_holder(&server), (old_name.clone(), 0));
    for candidate in &candidates {
        assert_eq!(candidate.elector.leader(), Some(old_name.clone()));
    }

    let stopped_at = Instant::now();
    assert_eq!(candidates.remove(old).stop().await, StopReason::Cancelled);
    assert_eq!(stored_holder(&server), (String::new(), 0));
    let new = one_leader(&candidates).await;
    let waited = stopped_at.elapsed();
    // Released: taken over at the next retry, not a lease duration later.
    assert!(waited < LEASE - RETRY, "took over after {waited:?}");
    let new_name = candidates[new].elector.identity().to_owned();
    assert_ne!(new_name, old_name);
    assert_eq!(stored_holder(&server), (new_name, 1));
    for candidate in candidates {
        assert_eq!(candidate.stop().await, StopReason::Cancelled);
    }
}

#[tokio::test]
async fn a_leader_cut_off_by_server_errors_steps_down_and_a_successor_takes_over() {
    let server = TestServer::start().await.unwrap();
    let mut first = Candidate::start(&server, "a");
    one_leader(std::slice::from_ref(&first)).await;
    let second = Candidate::start(&server, "b");
    sleep(Duration::from_secs(1)).await;
    assert!(first.elector.is_leader() && !second.elector.is_leader());

    // The server answers every request with 500: the leader cannot renew.
    server
        .faults()
        .add_rule(FaultRule::random(Fault::InternalError, 1.0).on(Target::Any));
    let cut_at = Instant::now();
    let reason = timeout(Duration::from_secs(5), &mut first.run)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(reason, StopReason::LeadershipLost);
    let lost_after = cut_at.elapsed();
    assert!(
        lost_after <= RETRY + RENEW + Duration::from_secs(1),
        "lost after {lost_after:?}"
    );
    assert!(!first.elector.is_leader());
    assert!(!second.elector.is_leader());

    server.faults().clear();
    let candidates = [second];
    one_leader(&candidates).await;
    assert_eq!(stored_holder(&server), ("b".to_owned(), 1));
    let [second] = candidates;
    assert_eq!(second.stop().await, StopReason::Cancelled);
}
