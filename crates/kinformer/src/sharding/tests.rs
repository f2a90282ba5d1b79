//! Membership and assignment on tokio's paused clock over [`InMemoryLeases`]: joins, leaves,
//! lease expiry, partitions and racing joins, with an ownership monitor that fails the test
//! the moment two replicas own one key.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep};
use tokio_util::sync::CancellationToken;

use super::testing::InMemoryLeases;
use super::*;

const LEASE: Duration = Duration::from_secs(15);

fn keys() -> Vec<String> {
    (0..120).map(|i| format!("ns-{}/obj-{i}", i % 5)).collect()
}

struct Replica {
    membership: Membership<InMemoryLeases>,
    leases: InMemoryLeases,
    cancel: CancellationToken,
    run: Option<JoinHandle<Result<(), ShardingError>>>,
}

/// Replicas over one lease store, and a monitor sampling ownership every 100 ms.
struct Cluster {
    store: InMemoryLeases,
    replicas: Arc<Mutex<Vec<Replica>>>,
    violation: Arc<Mutex<Option<String>>>,
    monitoring: Arc<AtomicBool>,
}

impl Cluster {
    fn new() -> Self {
        let cluster = Self {
            store: InMemoryLeases::new(),
            replicas: Arc::default(),
            violation: Arc::default(),
            monitoring: Arc::new(AtomicBool::new(true)),
        };
        let (replicas, violation, monitoring) = (
            cluster.replicas.clone(),
            cluster.violation.clone(),
            cluster.monitoring.clone(),
        );
        tokio::spawn(async move {
            let keys = keys();
            while monitoring.load(Ordering::Relaxed) {
                {
                    let replicas = replicas.lock();
                    for key in &keys {
                        let owners: Vec<&str> = replicas
                            .iter()
                            .filter(|r| r.membership.owns(key))
                            .map(|r| r.membership.identity())
                            .collect();
                        if owners.len() > 1 {
                            violation.lock().get_or_insert_with(|| {
                                format!("{key} owned by {owners:?} at {:?}", Instant::now())
                            });
                        }
                    }
                }
                sleep(Duration::from_millis(100)).await;
            }
        });
        cluster
    }

    /// Starts replica `id` (a new process: fresh state, same lease name).
    fn start(&self, id: &str) -> usize {
        let leases = self.store.replica_view();
        let membership =
            Membership::new(ShardingConfig::new(id, "kube-system"), leases.clone()).unwrap();
        let cancel = CancellationToken::new();
        let run = tokio::spawn({
            let (m, c) = (membership.clone(), cancel.clone());
            async move { m.run(c).await }
        });
        let mut replicas = self.replicas.lock();
        replicas.push(Replica {
            membership,
            leases,
            cancel,
            run: Some(run),
        });
        replicas.len() - 1
    }

    /// Stops replica `i` gracefully (its lease is released).
    async fn stop(&self, i: usize) {
        let run = {
            let mut replicas = self.replicas.lock();
            replicas[i].cancel.cancel();
            replicas[i].run.take()
        };
        run.unwrap().await.unwrap().unwrap();
    }

    /// Kills replica `i`: it stops without releasing anything.
    fn kill(&self, i: usize) {
        if let Some(run) = self.replicas.lock()[i].run.take() {
            run.abort();
        }
    }

    fn partition(&self, i: usize, cut: bool) {
        self.replicas.lock()[i].leases.set_unavailable(cut);
    }

    fn owners(&self, key: &str) -> Vec<String> {
        self.replicas
            .lock()
            .iter()
            .filter(|r| r.membership.owns(key))
            .map(|r| r.membership.identity().to_owned())
            .collect()
    }

    /// Each key's single owner, or `None` if some key has no owner or several.
    fn assignment(&self) -> Option<Vec<String>> {
        keys()
            .iter()
            .map(|key| match &self.owners(key)[..] {
                [one] => Some(one.clone()),
                _ => None,
            })
            .collect()
    }

    fn views(&self) -> Vec<MemberView> {
        self.replicas
            .lock()
            .iter()
            .map(|r| r.membership.view())
            .collect()
    }

    fn check(&self) {
        if let Some(violation) = self.violation.lock().clone() {
            panic!("two owners: {violation}");
        }
    }

    fn finish(self) {
        self.monitoring.store(false, Ordering::Relaxed);
        self.check();
    }
}

fn live(ids: &[&str]) -> Vec<String> {
    ids.iter().map(|s| (*s).to_owned()).collect()
}

#[tokio::test(start_paused = true)]
async fn three_replicas_join_and_every_key_has_exactly_one_owner() {
    let cluster = Cluster::new();
    for id in ["r0", "r1", "r2"] {
        cluster.start(id);
    }
    // Nobody claims before the join delay.
    sleep(LEASE - Duration::from_secs(1)).await;
    assert!(keys().iter().all(|k| cluster.owners(k).is_empty()));
    sleep(Duration::from_secs(5)).await;
    let assignment = cluster.assignment().expect("one owner per key");
    for (key, owner) in keys().iter().zip(&assignment) {
        assert_eq!(
            Some(owner.as_str()),
            rendezvous_owner(["r0", "r1", "r2"], key)
        );
    }
    for id in ["r0", "r1", "r2"] {
        let owned = assignment.iter().filter(|o| *o == id).count();
        assert!((20..=60).contains(&owned), "{id} owns {owned} of 120");
    }
    assert!(
        cluster
            .views()
            .iter()
            .all(|v| v.members == live(&["r0", "r1", "r2"]))
    );
    cluster.finish();
}

#[tokio::test(start_paused = true)]
async fn a_joiner_takes_only_its_keys_and_never_while_another_still_owns_them() {
    let cluster = Cluster::new();
    cluster.start("r0");
    cluster.start("r1");
    sleep(Duration::from_secs(20)).await;
    let before = cluster.assignment().unwrap();
    cluster.start("r2");
    sleep(Duration::from_secs(20)).await;
    let after = cluster.assignment().unwrap();
    let mut moved = 0;
    for (was, is) in before.iter().zip(&after) {
        if was != is {
            assert_eq!(is, "r2", "a join moves keys only to the joiner");
            moved += 1;
        }
    }
    assert!((20..=60).contains(&moved), "{moved} of 120 moved");
    cluster.finish();
}

#[tokio::test(start_paused = true)]
async fn a_killed_replicas_keys_move_only_after_its_lease_expires() {
    let cluster = Cluster::new();
    for id in ["r0", "r1", "r2"] {
        cluster.start(id);
    }
    sleep(Duration::from_secs(20)).await;
    let before = cluster.assignment().unwrap();
    let orphaned: Vec<String> = keys()
        .into_iter()
        .zip(&before)
        .filter(|(_, owner)| *owner == "r2")
        .map(|(key, _)| key)
        .collect();
    assert!(!orphaned.is_empty());
    cluster.kill(2);
    let killed_at = Instant::now();
    // The others still count r2 as live until its lease expires by their clocks.
    sleep(LEASE - Duration::from_secs(3)).await;
    assert!(orphaned.iter().all(|k| cluster.owners(k).is_empty()));
    assert!(cluster.views()[0].contains("r2"));
    let key = orphaned[0].clone();
    loop {
        if cluster.owners(&key).len() == 1 {
            break;
        }
        sleep(Duration::from_millis(100)).await;
    }
    let moved_after = killed_at.elapsed();
    assert!(
        moved_after >= LEASE - Duration::from_secs(2),
        "{moved_after:?}"
    );
    assert!(
        moved_after <= LEASE + Duration::from_secs(3),
        "{moved_after:?}"
    );
    sleep(Duration::from_secs(3)).await;
    let after: Vec<String> = keys()
        .iter()
        .map(|k| {
            let owners = cluster.owners(k);
            assert_eq!(owners.len(), 1, "{k}: {owners:?}");
            owners[0].clone()
        })
        .collect();
    for (was, is) in before.iter().zip(&after) {
        if was != "r2" {
            assert_eq!(was, is, "keys of live replicas stay");
        }
    }
    cluster.finish();
}

#[tokio::test(start_paused = true)]
async fn a_stopped_replica_releases_its_lease_and_its_keys_move_at_the_next_poll() {
    let cluster = Cluster::new();
    for id in ["r0", "r1"] {
        cluster.start(id);
    }
    sleep(Duration::from_secs(20)).await;
    cluster.stop(1).await;
    let stopped = Instant::now();
    let released = cluster
        .store
        .snapshot(&ShardingConfig::new("r1", "x").lease_name("r1"))
        .unwrap();
    assert_eq!(released.0.holder_identity, "");
    loop {
        if cluster
            .assignment()
            .is_some_and(|a| a.iter().all(|o| o == "r0"))
        {
            break;
        }
        sleep(Duration::from_millis(100)).await;
    }
    assert!(
        stopped.elapsed() <= Duration::from_secs(3),
        "{:?}",
        stopped.elapsed()
    );
    cluster.finish();
}

#[tokio::test(start_paused = true)]
async fn a_partitioned_replica_stops_claiming_before_the_others_take_over_and_rejoins() {
    let cluster = Cluster::new();
    for id in ["r0", "r1", "r2"] {
        cluster.start(id);
    }
    sleep(Duration::from_secs(20)).await;
    let before = cluster.assignment().unwrap();
    cluster.partition(2, true);
    let cut = Instant::now();
    // r2 stops claiming within its renew deadline (10 s)...
    sleep(Duration::from_secs(11)).await;
    assert!(!cluster.replicas.lock()[2].membership.is_ready());
    // ...and the others take its keys once its lease expired by their clocks.
    sleep(Duration::from_secs(8)).await;
    let during = cluster.assignment().expect("r0 and r1 own everything");
    assert!(during.iter().all(|o| o != "r2"));
    assert!(cut.elapsed() < Duration::from_secs(20));
    cluster.partition(2, false);
    sleep(Duration::from_secs(25)).await;
    assert_eq!(
        cluster.assignment(),
        Some(before),
        "r2 rejoined and owns its keys again"
    );
    cluster.finish();
}

#[tokio::test(start_paused = true)]
async fn a_replica_that_cannot_list_stops_claiming_even_while_its_lease_renews() {
    let cluster = Cluster::new();
    for id in ["r0", "r1"] {
        cluster.start(id);
    }
    sleep(Duration::from_secs(20)).await;
    // Cut r1's listing only: its lock keeps renewing.
    cluster.replicas.lock()[1].leases.set_list_unavailable(true);
    cluster.start("r2");
    sleep(Duration::from_secs(20)).await;
    let r1 = cluster.replicas.lock()[1].membership.clone();
    assert!(r1.is_member(), "the lease still renews");
    assert!(!r1.is_ready(), "a stale view claims nothing");
    cluster.finish();
}

#[tokio::test(start_paused = true)]
async fn racing_joins_settle_to_one_owner_per_key_among_the_live_members() {
    let cluster = Cluster::new();
    // Five replicas start within a few hundred milliseconds; two die right after joining.
    for (i, id) in ["r0", "r1", "r2", "r3", "r4"].into_iter().enumerate() {
        cluster.start(id);
        sleep(Duration::from_millis(70 * i as u64)).await;
    }
    sleep(Duration::from_secs(1)).await;
    cluster.kill(1);
    cluster.kill(3);
    sleep(Duration::from_secs(40)).await;
    let assignment = cluster.assignment().expect("one owner per key");
    for (key, owner) in keys().iter().zip(&assignment) {
        assert_eq!(
            Some(owner.as_str()),
            rendezvous_owner(["r0", "r2", "r4"], key)
        );
    }
    for view in [0, 2, 4].map(|i| cluster.views()[i].clone()) {
        assert_eq!(view.members, live(&["r0", "r2", "r4"]));
    }
    cluster.finish();
}

#[tokio::test(start_paused = true)]
async fn a_second_run_at_once_is_refused() {
    let leases = InMemoryLeases::new();
    let m = Membership::new(ShardingConfig::new("a", "ns"), leases).unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (m, c) = (m.clone(), cancel.clone());
        async move { m.run(c).await }
    });
    sleep(Duration::from_secs(1)).await;
    assert!(matches!(
        m.run(CancellationToken::new()).await,
        Err(ShardingError::AlreadyRunning { .. })
    ));
    cancel.cancel();
    run.await.unwrap().unwrap();
    assert!(!m.view().member && !m.is_member());
}

#[tokio::test(start_paused = true)]
async fn the_filtered_handler_passes_on_owned_objects_and_gained_keys_are_requeued() {
    use crate::cache::{ResourceEventHandler, ResourceEventHandlerFuncs};
    use k8s_openapi::api::core::v1::ConfigMap;

    let cluster = Cluster::new();
    let r0 = cluster.start("r0");
    sleep(Duration::from_secs(20)).await;
    let membership = cluster.replicas.lock()[r0].membership.clone();
    let filter = ShardFilter::new(membership, ShardKey::NamespaceName);
    let objects: Vec<Arc<ConfigMap>> = keys()
        .iter()
        .map(|key| {
            let (ns, name) = key.split_once('/').unwrap();
            let mut cm = ConfigMap::default();
            cm.metadata.namespace = Some(ns.into());
            cm.metadata.name = Some(name.into());
            Arc::new(cm)
        })
        .collect();
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let handler = filter.handler(ResourceEventHandlerFuncs::new().on_add({
        let seen = seen.clone();
        move |cm: &Arc<ConfigMap>, _| {
            let key = crate::cache::meta_namespace_key(cm.as_ref()).unwrap();
            seen.lock().push(key.as_str().to_owned());
        }
    }));
    let requeued = Arc::new(Mutex::new(Vec::<String>::new()));
    let cancel = CancellationToken::new();
    let requeue = tokio::spawn({
        let (filter, objects, requeued, cancel) = (
            filter.clone(),
            objects.clone(),
            requeued.clone(),
            cancel.clone(),
        );
        async move {
            filter
                .requeue_on_change(
                    move || objects.clone(),
                    move |key| requeued.lock().push(key),
                    cancel,
                )
                .await;
        }
    });
    sleep(Duration::from_secs(1)).await;
    assert_eq!(
        requeued.lock().len(),
        keys().len(),
        "alone, r0 gains every key"
    );
    for cm in &objects {
        handler.on_add(cm, false);
    }
    assert_eq!(seen.lock().len(), keys().len());

    let r1 = cluster.start("r1");
    sleep(Duration::from_secs(20)).await;
    seen.lock().clear();
    requeued.lock().clear();
    for cm in &objects {
        handler.on_add(cm, false);
    }
    let expected: Vec<String> = keys()
        .into_iter()
        .filter(|k| rendezvous_owner(["r0", "r1"], k) == Some("r0"))
        .collect();
    assert_eq!(*seen.lock(), expected, "only r0's objects pass");
    assert!(requeued.lock().is_empty(), "a join gains r0 nothing");

    cluster.stop(r1).await;
    sleep(Duration::from_secs(3)).await;
    let mut gained = requeued.lock().clone();
    gained.sort();
    let mut lost: Vec<String> = keys()
        .into_iter()
        .filter(|k| rendezvous_owner(["r0", "r1"], k) == Some("r1"))
        .collect();
    lost.sort();
    assert_eq!(gained, lost, "r1's keys come back to r0, once each");
    cancel.cancel();
    requeue.await.unwrap();
    cluster.finish();
}
