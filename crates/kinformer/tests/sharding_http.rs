//! Sharding over HTTP: three replicas in labelled mode against the embedded API server, one
//! killed and one added, with the server's write audit checking that no two replicas worked
//! on one object at once.
//!
//! These run on the real clock (sockets and a paused clock do not mix), with short leases.
#![cfg(feature = "kube")]
// Test helpers outside `#[test]` functions unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use http::{HeaderName, HeaderValue};
use k8s_openapi::api::core::v1::ConfigMap;
use kinformer::cache::listwatch::Selectors;
use kinformer::cache::{
    ResourceEventHandlerFuncs, SharedIndexInformer, SharedInformerFactory, meta_namespace_key,
};
use kinformer::controller::{Action, run_workers};
use kinformer::sharding::{
    LeaseMembers, Membership, SHARD_LABEL, ShardKey, ShardReplica, Sharder, ShardingConfig,
    rendezvous_owner, shard_selector,
};
use kinformer::workqueue::RateLimitingQueue;
use kinformer_apiserver::TestServer;
use kinformer_apiserver::audit::{WindowCheck, check_write_windows};
use kube::Api;
use kube::api::PostParams;
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep, timeout};
use tokio_util::sync::CancellationToken;

const LEASE: Duration = Duration::from_secs(2);
const RENEW: Duration = Duration::from_millis(1500);
const RETRY: Duration = Duration::from_millis(300);
const OBJECTS: usize = 60;
const NAMESPACE: &str = "work";

/// One replica: membership, sharder, drainer, a ConfigMap informer on its shard and two
/// workers that stamp `data.owner` with their identity.
struct Replica {
    identity: String,
    informer: SharedIndexInformer<ConfigMap>,
    cancel: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
}

fn client_for(server: &TestServer, identity: &str) -> kube::Client {
    let mut config = server.kube_config().unwrap();
    config.headers.push((
        HeaderName::from_static("user-agent"),
        HeaderValue::from_str(identity).unwrap(),
    ));
    kube::Client::try_from(config).unwrap()
}

impl Replica {
    fn start(server: &TestServer, identity: &str) -> Self {
        let client = client_for(server, identity);
        let config = ShardingConfig::new(identity, "kube-system").with_timing(LEASE, RENEW, RETRY);
        let membership =
            Membership::new(config, LeaseMembers::new(client.clone(), "kube-system")).unwrap();
        let factory = SharedInformerFactory::new(client.clone()).with_selectors(Selectors {
            label_selector: Some(shard_selector(identity)),
            field_selector: None,
        });
        let informer = factory.informer::<ConfigMap>();
        let replica =
            ShardReplica::new(membership.clone(), informer.clone(), client.clone()).unwrap();
        let sharder = Sharder::<ConfigMap, _>::new(
            membership.clone(),
            client.clone(),
            ShardKey::NamespaceName,
        )
        .unwrap();
        let queue: RateLimitingQueue<String> =
            RateLimitingQueue::new(kinformer::workqueue::default_controller_rate_limiter());
        let enqueue = {
            let queue = queue.clone();
            move |cm: &ConfigMap| {
                if let Ok(key) = meta_namespace_key(cm) {
                    queue.add(key.as_str().to_owned());
                }
            }
        };
        let (e1, e2) = (enqueue.clone(), enqueue);
        informer
            .add_event_handler(
                replica.handler(
                    ResourceEventHandlerFuncs::new()
                        .on_add(move |cm: &std::sync::Arc<ConfigMap>, _| e1(cm))
                        .on_update(move |_, cm: &std::sync::Arc<ConfigMap>| e2(cm)),
                ),
            )
            .unwrap();
        let cancel = CancellationToken::new();
        let mut tasks = Vec::new();
        tasks.push(tokio::spawn({
            let (m, c) = (membership.clone(), cancel.clone());
            async move {
                m.run(c).await.unwrap();
            }
        }));
        tasks.push(tokio::spawn({
            let c = cancel.clone();
            async move { sharder.run(c).await }
        }));
        tasks.push(tokio::spawn({
            let (r, c) = (replica.clone(), cancel.clone());
            async move { r.run_drainer(c).await }
        }));
        factory.start(&cancel);
        tasks.push(tokio::spawn({
            let (r, c, id) = (replica.clone(), cancel.clone(), identity.to_owned());
            let api: Api<ConfigMap> = Api::namespaced(client, NAMESPACE);
            async move {
                let reconcile = move |key: String| {
                    let (r, api, id) = (r.clone(), api.clone(), id.clone());
                    async move {
                        let Some(_claim) = r.claim(&key) else {
                            return Ok::<_, kube::Error>(Action::Done);
                        };
                        let Some(cm) = r.informer_get(&key) else {
                            return Ok(Action::Done);
                        };
                        let owner = cm.data.as_ref().and_then(|d| d.get("owner"));
                        if owner == Some(&id) {
                            return Ok(Action::Done);
                        }
                        let mut cm = (*cm).clone();
                        cm.data
                            .get_or_insert_with(BTreeMap::new)
                            .insert("owner".into(), id);
                        let name = cm.metadata.name.clone().unwrap_or_default();
                        api.replace(&name, &PostParams::default(), &cm).await?;
                        Ok(Action::Done)
                    }
                };
                run_workers(&queue, 2, c, reconcile).await;
            }
        }));
        Self {
            identity: identity.to_owned(),
            informer,
            cancel,
            tasks,
        }
    }

    /// Kills the replica: every task is dropped where it is, nothing is released.
    fn kill(self) {
        for task in &self.tasks {
            task.abort();
        }
        self.cancel.cancel(); // stops the informers' watches, as a dead process's would
    }
}

trait InformerGet {
    fn informer_get(&self, key: &str) -> Option<std::sync::Arc<ConfigMap>>;
}

impl<M: kinformer::sharding::MemberLeases> InformerGet for ShardReplica<ConfigMap, M> {
    fn informer_get(&self, key: &str) -> Option<std::sync::Arc<ConfigMap>> {
        self.informer().get_indexer().get_by_key(key)
    }
}

/// `name → (shard label, data.owner)` on the server.
fn server_state(server: &TestServer) -> BTreeMap<String, (String, String)> {
    let (_, items) = server.store().state("configmaps").unwrap();
    items
        .iter()
        .filter(|cm| cm["metadata"]["namespace"] == NAMESPACE)
        .map(|cm| {
            let s = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_owned();
            (
                s(&cm["metadata"]["name"]),
                (
                    s(&cm["metadata"]["labels"][SHARD_LABEL]),
                    s(&cm["data"]["owner"]),
                ),
            )
        })
        .collect()
}

/// Waits until every object is labelled for its rendezvous owner among `live` and stamped
/// (`data.owner`) by that replica; returns how long it took.
async fn converged(server: &TestServer, live: &[&str], within: Duration) -> Duration {
    let start = Instant::now();
    timeout(within, async {
        loop {
            let state = server_state(server);
            let done = state.len() == OBJECTS
                && state.iter().all(|(name, (shard, owner))| {
                    let key = format!("{NAMESPACE}/{name}");
                    rendezvous_owner(live.iter().copied(), &key) == Some(shard.as_str())
                        && shard == owner
                });
            if done {
                return;
            }
            sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("not converged on {live:?}: {:?}", server_state(server)));
    start.elapsed()
}

#[tokio::test]
async fn three_labelled_replicas_converge_a_killed_ones_objects_move_and_no_two_overlap() {
    let server = TestServer::start().await.unwrap();
    server.audit().enable();
    let admin = server.client().unwrap();
    let api: Api<ConfigMap> = Api::namespaced(admin, NAMESPACE);
    for i in 0..OBJECTS {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(format!("cm-{i}"));
        api.create(&PostParams::default(), &cm).await.unwrap();
    }
    let mut replicas: Vec<Replica> = ["r0", "r1", "r2"]
        .iter()
        .map(|id| Replica::start(&server, id))
        .collect();
    converged(&server, &["r0", "r1", "r2"], Duration::from_secs(15)).await;
    let counts: Vec<usize> = replicas
        .iter()
        .map(|r| r.informer.get_indexer().len())
        .collect();
    assert_eq!(
        counts.iter().sum::<usize>(),
        OBJECTS,
        "each replica caches only its shard"
    );
    assert!(counts.iter().all(|c| (8..=32).contains(c)), "{counts:?}");

    // Kill r2: its objects move once its lease expires by the sharder's clock.
    let killed = replicas.pop().unwrap();
    assert_eq!(killed.identity, "r2");
    killed.kill();
    let moved = converged(&server, &["r0", "r1"], LEASE + Duration::from_secs(10)).await;
    assert!(
        moved >= LEASE - Duration::from_secs(1),
        "moved only after expiry: {moved:?}"
    );

    // Add r3: objects move to it by drain, acknowledgement and relabel.
    replicas.push(Replica::start(&server, "r3"));
    converged(&server, &["r0", "r1", "r3"], Duration::from_secs(15)).await;
    let counts: Vec<usize> = replicas
        .iter()
        .map(|r| r.informer.get_indexer().len())
        .collect();
    assert!(counts.iter().all(|c| *c > 0), "{counts:?}");
    let acked = server
        .audit()
        .records()
        .iter()
        .filter(|r| r.writer.starts_with("sharder-"))
        .count();
    assert!(acked > 0);

    // Leases are written by every replica by design; the invariant is about the work.
    let records: Vec<_> = server
        .audit()
        .records()
        .into_iter()
        .filter(|r| r.kind == "ConfigMap")
        .collect();
    let check = WindowCheck {
        is_replica: &|w| w.starts_with('r'),
        is_handover: &|w| w.starts_with("sharder-"),
        handovers_at: &[],
        writers_per_tenure: 1,
    };
    if let Err(overlaps) = check_write_windows(&records, &check) {
        panic!(
            "overlapping write windows: {:?}",
            overlaps.iter().map(ToString::to_string).collect::<Vec<_>>()
        );
    }
    // The same records without the handovers: the moves now look like overlaps, so the
    // check above could have failed.
    let blind = WindowCheck {
        is_handover: &|_| false,
        ..check
    };
    assert!(check_write_windows(&records, &blind).is_err());
    let replica_writes = records.iter().filter(|r| r.writer.starts_with('r')).count();
    assert!(replica_writes >= OBJECTS, "{replica_writes}");
    for replica in replicas {
        replica.cancel.cancel();
        for task in replica.tasks {
            timeout(Duration::from_secs(5), task)
                .await
                .unwrap()
                .unwrap();
        }
    }
}
