//! A ReplicaSet controller built the way Kubernetes' own controllers are built.
//!
//! - **Shared informers**: ReplicaSets and Pods come from one [`SharedInformerFactory`]; other
//!   code in the process (the demo's kubelet) shares the same pod cache and watch.
//! - **An owner index**: pods are indexed by their controller owner's UID
//!   ([`CONTROLLER_UID_INDEX`]), so a sync finds a ReplicaSet's pods without a scan; and by
//!   the owner's `namespace/name` ([`CONTROLLER_KEY_INDEX`]), to clean up after a deleted
//!   ReplicaSet.
//! - **Handlers only enqueue keys**: a ReplicaSet event enqueues its key; a pod event enqueues
//!   its owner's key and lowers the owner's [`ControllerExpectations`].
//! - **A rate-limited work queue and N workers**: a failed sync (conflict, server error) goes
//!   back through `add_rate_limited`; a successful one calls `forget`.
//! - **Listers**: a sync reads the ReplicaSet and its pods from the caches, never from the
//!   server, and writes only what differs ([`plan()`] decides, as a pure function).
//!
//! This module is the controller of `kinformer demo` and of the `replicaset_controller` example
//! (crate `kinformer-examples`).

mod plan;
mod template;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::future::join_all;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use kinformer::cache::{
    DeletedObject, HandlerOptions, HasSynced, InformerError, ResourceEventHandler,
    SharedIndexInformer, SharedInformerFactory, meta_namespace_key, split_key, wait_for_cache_sync,
};
use kinformer::workqueue::RateLimitingQueue;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use tokio_util::sync::CancellationToken;

use kinformer::controller::{
    Action, ControllerExpectations, controller_key_index_func, controller_uid_index_func,
    run_workers,
};
pub use kinformer::controller::{CONTROLLER_KEY_INDEX, CONTROLLER_UID_INDEX, controller_of};
pub use plan::{
    Plan, computed_status, controlling_replicaset_key, desired_replicas, is_pod_active,
    is_pod_ready, new_pod, plan,
};
pub use template::replicaset;

/// How long a sync's expectations are trusted before the cache is believed instead.
pub const EXPECTATIONS_TTL: Duration = Duration::from_secs(15);

/// Why the controller could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ControllerError {
    /// An informer refused the index or a handler.
    #[error(transparent)]
    Informer(#[from] InformerError),
}

/// Why one sync failed (the key is retried with backoff).
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The key is not `namespace/name`.
    #[error("bad key {0:?}")]
    Key(String),
    /// The pod index is missing.
    #[error("pod index: {0}")]
    Index(String),
    /// The ReplicaSet cannot be turned into pods (no name or UID).
    #[error("ReplicaSet {0} has no name or uid")]
    Incomplete(String),
    /// A request to the API server failed.
    #[error("{0}")]
    Api(#[from] kube::Error),
}

impl SyncError {
    fn is_conflict(&self) -> bool {
        matches!(self, SyncError::Api(kube::Error::Api(s)) if s.is_conflict())
    }
}

/// What the controller did, for progress views and summaries.
#[derive(Debug, Default)]
pub struct ControllerStats {
    /// Syncs run.
    pub syncs: AtomicU64,
    /// Syncs that failed and were requeued with backoff.
    pub requeues: AtomicU64,
    /// 409 Conflicts met (status writes against a cache that was behind).
    pub conflicts: AtomicU64,
    /// Pods created.
    pub pods_created: AtomicU64,
    /// Pods deleted (including those of deleted ReplicaSets).
    pub pods_deleted: AtomicU64,
    /// Status writes.
    pub status_updates: AtomicU64,
    /// Informer notifications received by the controller's handlers.
    pub events: AtomicU64,
}

impl ControllerStats {
    fn bump(counter: &AtomicU64, by: u64) {
        counter.fetch_add(by, Ordering::Relaxed);
    }

    /// Reads a counter.
    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}

/// Decides whether this process may sync a key now (sharding): returns a claim held for the
/// whole sync, or `None` to skip the key.
pub type Gate = Arc<dyn Fn(&str) -> Option<Box<dyn Send>> + Send + Sync>;

struct Inner {
    client: kube::Client,
    gate: Option<Gate>,
    replicasets: SharedIndexInformer<ReplicaSet>,
    pods: SharedIndexInformer<Pod>,
    queue: RateLimitingQueue<String>,
    expectations: Arc<ControllerExpectations>,
    stats: Arc<ControllerStats>,
}

/// The ReplicaSet controller. Cheap to clone.
#[derive(Clone)]
pub struct ReplicaSetController {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for ReplicaSetController {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplicaSetController")
            .field("queue", &self.inner.queue)
            .finish_non_exhaustive()
    }
}

impl ReplicaSetController {
    /// Sets the controller up on `factory`'s ReplicaSet and Pod informers (adding the owner
    /// indexes and the handlers), writing through `client` and draining `queue`. Start the
    /// factory afterwards, then [`run`](Self::run).
    ///
    /// Build `client` (and the factory's) with `default_retry = false`: failed requests then
    /// come back to the work queue's backoff instead of being retried inside the client.
    ///
    /// # Errors
    /// [`ControllerError`] if an informer has already stopped.
    pub fn new(
        factory: &SharedInformerFactory<kinformer::kube::KubeClient>,
        client: kube::Client,
        queue: RateLimitingQueue<String>,
    ) -> Result<Self, ControllerError> {
        Self::with_informers(
            factory.informer::<ReplicaSet>(),
            factory.informer::<Pod>(),
            client,
            queue,
            None,
        )
    }

    /// Sets the controller up on the given informers (as [`new`](Self::new)). With a `gate`,
    /// each sync first asks it for a claim and skips the key without one (a sharded replica
    /// syncs only the ReplicaSets it owns).
    ///
    /// # Errors
    /// [`ControllerError`] if an informer has already stopped.
    pub fn with_informers(
        replicasets: SharedIndexInformer<ReplicaSet>,
        pods: SharedIndexInformer<Pod>,
        client: kube::Client,
        queue: RateLimitingQueue<String>,
        gate: Option<Gate>,
    ) -> Result<Self, ControllerError> {
        add_owner_indexes(&pods)?;
        let expectations = Arc::new(ControllerExpectations::new(EXPECTATIONS_TTL));
        let stats = Arc::new(ControllerStats::default());
        // Both handlers only enqueue keys and note expectations: they never block, so live
        // events reach them on the informers' watch tasks.
        replicasets.add_event_handler_with_options(
            ReplicaSetHandler {
                queue: queue.clone(),
                stats: stats.clone(),
            },
            HandlerOptions::new().nonblocking(true),
        )?;
        pods.add_event_handler_with_options(
            PodHandler {
                queue: queue.clone(),
                expectations: expectations.clone(),
                stats: stats.clone(),
            },
            HandlerOptions::new().nonblocking(true),
        )?;
        Ok(Self {
            inner: Arc::new(Inner {
                client,
                gate,
                replicasets,
                pods,
                queue,
                expectations,
                stats,
            }),
        })
    }

    /// The work queue of ReplicaSet keys.
    pub fn queue(&self) -> &RateLimitingQueue<String> {
        &self.inner.queue
    }

    /// What the controller did so far.
    pub fn stats(&self) -> &ControllerStats {
        &self.inner.stats
    }

    /// The shared ReplicaSet informer.
    pub fn replicasets(&self) -> &SharedIndexInformer<ReplicaSet> {
        &self.inner.replicasets
    }

    /// The shared Pod informer (with the owner indexes).
    pub fn pods(&self) -> &SharedIndexInformer<Pod> {
        &self.inner.pods
    }

    /// Waits for both caches to sync, then runs `workers` workers until `cancel` fires; then
    /// shuts the queue down and waits for the workers to finish their current sync.
    ///
    /// # Cancel safety
    /// Prefer `cancel`: dropping the future abandons the workers mid-sync (each sync is
    /// retried by whoever runs the controller next).
    pub async fn run(&self, workers: usize, cancel: CancellationToken) {
        let sources: [&dyn HasSynced; 2] = [&self.inner.replicasets, &self.inner.pods];
        if !wait_for_cache_sync(&cancel, &sources).await {
            return;
        }
        tracing::info!(workers, "caches synced; starting workers");
        let me = self.clone();
        let reconcile = move |key: String| {
            let me = me.clone();
            async move { me.reconcile(&key).await }
        };
        run_workers(&self.inner.queue, workers, cancel, reconcile).await;
    }

    /// One reconcile as the workers run it: a counted [`sync`](Self::sync).
    async fn reconcile(&self, key: &str) -> Result<Action, SyncError> {
        let _claim = match &self.inner.gate {
            Some(gate) => match gate(key) {
                Some(claim) => Some(claim),
                None => return Ok(Action::Done),
            },
            None => None,
        };
        ControllerStats::bump(&self.inner.stats.syncs, 1);
        self.sync(key)
            .await
            .map(|()| Action::Done)
            .inspect_err(|e| {
                if e.is_conflict() {
                    ControllerStats::bump(&self.inner.stats.conflicts, 1);
                }
                ControllerStats::bump(&self.inner.stats.requeues, 1);
            })
    }

    /// One sync of the ReplicaSet `key`: delete the pods of a deleted (or replaced)
    /// ReplicaSet, create or delete pods to match `spec.replicas`, write the status.
    ///
    /// # Errors
    /// The first failed request ([`SyncError::Api`]); the caller retries the key.
    ///
    /// # Cancel safety
    /// Not cancel-safe: requests already sent take effect, and expectations may stay raised
    /// until their TTL.
    pub async fn sync(&self, key: &str) -> Result<(), SyncError> {
        let inner = &self.inner;
        let (ns, name) = match split_key(key) {
            Ok((Some(ns), name)) => (ns.to_owned(), name.to_owned()),
            _ => return Err(SyncError::Key(key.to_owned())),
        };
        let rs = inner.replicasets.get_indexer().get_by_key(key);
        let uid = rs.as_ref().and_then(|r| r.metadata.uid.clone());
        let pods = inner.pods.get_indexer();
        let index_err = |e: kinformer::cache::store::IndexerError| SyncError::Index(e.to_string());

        // Pods whose controller is a ReplicaSet of this name but not this one: left over
        // from a deleted ReplicaSet (there is no garbage collector here).
        let orphans: Vec<String> = pods
            .by_index(CONTROLLER_KEY_INDEX, key)
            .map_err(index_err)?
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .filter(|p| controller_of(&p.metadata).map(|o| &o.uid) != uid.as_ref())
            .filter_map(|p| p.metadata.name.clone())
            .collect();
        let pod_api: Api<Pod> = Api::namespaced(inner.client.clone(), &ns);
        if !orphans.is_empty() {
            self.delete_pods(&pod_api, key, &orphans, false).await?;
        }
        let (Some(rs), Some(uid)) = (rs, uid) else {
            inner.expectations.forget(key);
            return Ok(());
        };

        let owned = pods
            .by_index(CONTROLLER_UID_INDEX, &uid)
            .map_err(index_err)?;
        let manage = inner.expectations.satisfied(key);
        let actions = plan(&rs, &owned, manage);
        if actions.create > 0 {
            self.create_pods(&pod_api, key, &rs, actions.create).await?;
        }
        if !actions.delete.is_empty() {
            self.delete_pods(&pod_api, key, &actions.delete, true)
                .await?;
        }
        if let Some(status) = actions.status {
            self.update_status(&ns, &name, &rs, status).await?;
        }
        if !manage {
            // Waiting for our own writes to show up; the pod events re-enqueue the key, and
            // this makes sure it comes back if they never do.
            inner
                .queue
                .add_after(key.to_owned(), inner.expectations.time_to_expiry(key));
        }
        Ok(())
    }

    /// Writes the status with the cached ReplicaSet's resourceVersion. On a conflict (the
    /// cache was behind) it reads the ReplicaSet once and tries again, as the Kubernetes
    /// controller does; a second conflict goes back to the queue.
    async fn update_status(
        &self,
        ns: &str,
        name: &str,
        cached: &ReplicaSet,
        status: k8s_openapi::api::apps::v1::ReplicaSetStatus,
    ) -> Result<(), SyncError> {
        let inner = &self.inner;
        let api: Api<ReplicaSet> = Api::namespaced(inner.client.clone(), ns);
        let pp = PostParams::default();
        let mut updated = cached.clone();
        updated.status = Some(status.clone());
        match api.replace_status(name, &pp, &updated).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.is_conflict() => {
                ControllerStats::bump(&inner.stats.conflicts, 1);
                let mut fresh = api.get_status(name).await?;
                if fresh.metadata.uid != cached.metadata.uid {
                    return Ok(()); // replaced meanwhile: its own sync follows
                }
                let observed = fresh.metadata.generation;
                fresh.status = Some(k8s_openapi::api::apps::v1::ReplicaSetStatus {
                    observed_generation: observed.min(status.observed_generation).or(observed),
                    ..status
                });
                api.replace_status(name, &pp, &fresh).await?;
            }
            Err(e) => return Err(e.into()),
        }
        ControllerStats::bump(&inner.stats.status_updates, 1);
        Ok(())
    }

    /// Creates `count` pods in slow-start batches (1, 2, 4, ...), stopping at the first
    /// batch with a failure, as the Kubernetes controller does.
    async fn create_pods(
        &self,
        api: &Api<Pod>,
        key: &str,
        rs: &ReplicaSet,
        count: usize,
    ) -> Result<(), SyncError> {
        let inner = &self.inner;
        let pod = new_pod(rs).ok_or_else(|| SyncError::Incomplete(key.to_owned()))?;
        inner.expectations.expect(key, count, 0);
        let (mut remaining, mut batch) = (count, 1usize);
        let pp = PostParams::default();
        while remaining > 0 {
            let size = batch.min(remaining);
            remaining -= size;
            let results = join_all((0..size).map(|_| api.create(&pp, &pod))).await;
            let mut first_error = None;
            for r in results {
                match r {
                    Ok(_) => ControllerStats::bump(&inner.stats.pods_created, 1),
                    Err(e) => {
                        inner.expectations.creation_observed(key);
                        first_error.get_or_insert(e);
                    }
                }
            }
            if let Some(e) = first_error {
                for _ in 0..remaining {
                    inner.expectations.creation_observed(key);
                }
                return Err(e.into());
            }
            batch = batch.saturating_mul(2);
        }
        Ok(())
    }

    /// Deletes the named pods concurrently. A pod already gone counts as deleted.
    async fn delete_pods(
        &self,
        api: &Api<Pod>,
        key: &str,
        names: &[String],
        expect: bool,
    ) -> Result<(), SyncError> {
        let inner = &self.inner;
        if expect {
            inner.expectations.expect(key, 0, names.len());
        }
        let dp = DeleteParams::default();
        let results = join_all(names.iter().map(|n| api.delete(n, &dp))).await;
        let mut first_error = None;
        for r in results {
            match r {
                Ok(_) => ControllerStats::bump(&inner.stats.pods_deleted, 1),
                Err(kube::Error::Api(s)) if s.is_not_found() => {
                    if expect {
                        inner.expectations.deletion_observed(key);
                    }
                }
                Err(e) => {
                    if expect {
                        inner.expectations.deletion_observed(key);
                    }
                    first_error.get_or_insert(e);
                }
            }
        }
        match first_error {
            Some(e) => Err(e.into()),
            None => Ok(()),
        }
    }
}

/// Indexes pods by their controller's UID and by their controlling ReplicaSet's key.
fn add_owner_indexes(pods: &SharedIndexInformer<Pod>) -> Result<(), InformerError> {
    pods.add_indexers(
        [
            (CONTROLLER_UID_INDEX.to_owned(), controller_uid_index_func()),
            (
                CONTROLLER_KEY_INDEX.to_owned(),
                controller_key_index_func("apps", "ReplicaSet"),
            ),
        ]
        .into(),
    )
}

/// Enqueues the key of every ReplicaSet that is added, changed or deleted.
struct ReplicaSetHandler {
    queue: RateLimitingQueue<String>,
    stats: Arc<ControllerStats>,
}

impl ReplicaSetHandler {
    fn enqueue(&self, rs: &ReplicaSet) {
        ControllerStats::bump(&self.stats.events, 1);
        match meta_namespace_key(rs) {
            Ok(key) => self.queue.add(key.as_str().to_owned()),
            Err(e) => tracing::warn!(error = %e, "ReplicaSet without a key skipped"),
        }
    }
}

impl ResourceEventHandler<ReplicaSet> for ReplicaSetHandler {
    fn on_add(&self, obj: &Arc<ReplicaSet>, _is_in_initial_list: bool) {
        self.enqueue(obj);
    }

    fn on_update(&self, _old: &Arc<ReplicaSet>, new: &Arc<ReplicaSet>) {
        self.enqueue(new);
    }

    fn on_delete(&self, obj: &DeletedObject<ReplicaSet>) {
        self.enqueue(obj.object());
    }
}

/// Enqueues the owning ReplicaSet of every pod event, and records observed creations and
/// deletions in the owner's expectations.
struct PodHandler {
    queue: RateLimitingQueue<String>,
    expectations: Arc<ControllerExpectations>,
    stats: Arc<ControllerStats>,
}

impl PodHandler {
    fn enqueue_owner(&self, pod: &Pod) -> Option<String> {
        let key = controlling_replicaset_key(pod)?;
        self.queue.add(key.clone());
        Some(key)
    }
}

impl ResourceEventHandler<Pod> for PodHandler {
    fn on_add(&self, obj: &Arc<Pod>, _is_in_initial_list: bool) {
        ControllerStats::bump(&self.stats.events, 1);
        if let Some(key) = self.enqueue_owner(obj) {
            self.expectations.creation_observed(&key);
        }
    }

    fn on_update(&self, old: &Arc<Pod>, new: &Arc<Pod>) {
        ControllerStats::bump(&self.stats.events, 1);
        if old.metadata.resource_version == new.metadata.resource_version {
            return; // a resync: nothing changed
        }
        let new_key = self.enqueue_owner(new);
        let old_key = controlling_replicaset_key(old);
        if old_key != new_key
            && let Some(k) = old_key
        {
            self.queue.add(k);
        }
    }

    fn on_delete(&self, obj: &DeletedObject<Pod>) {
        ControllerStats::bump(&self.stats.events, 1);
        if let Some(key) = self.enqueue_owner(obj.object()) {
            self.expectations.deletion_observed(&key);
        }
    }
}
