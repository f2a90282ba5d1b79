//! Labelled mode, leader side: the [`Sharder`] — run by the replica elected among them — keeps
//! every object's shard label on its rendezvous owner, moving objects by the handover
//! protocol of [`handover`](super::handover).
//!
//! The properties are listed on [`Sharder`].

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::StreamExt;
use kube::Api;
use kube::api::{Patch, PatchParams};
use kube_core::metadata::ObjectMeta;
use kube_core::{PartialObjectMeta, Resource};
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use super::assignment::ShardKey;
use super::handover::{DRAIN_ANNOTATION, DRAINED_ANNOTATION, SHARD_LABEL, ShardAction, decide};
use super::leases::MemberLeases;
use super::membership::{MemberView, Membership};
use super::resource::ShardedResource;
use super::table::ShardTable;
use crate::cache::{
    DeletedObject, HasSynced, InformerOptions, ResourceEventHandlerFuncs, SharedIndexInformer,
    wait_for_cache_sync,
};
use crate::kube::KubeListerWatcher;
use crate::leaderelection::{LeaderElectionConfig, LeaderElector, LeaseLock};

/// How many patches a sharder has in flight at once.
const CONCURRENT_WRITES: usize = 32;

/// What a [`Sharder`] did.
#[derive(Debug, Default)]
pub struct SharderStats {
    /// Objects given a shard label because they had no live owner.
    pub assigned: AtomicU64,
    /// Drain requests written.
    pub drains: AtomicU64,
    /// Objects moved after their owner acknowledged the drain.
    pub handovers: AtomicU64,
    /// Drains cancelled because the object belongs to its owner again.
    pub cancelled: AtomicU64,
    /// Writes refused with 409 (a stale view; decided again).
    pub conflicts: AtomicU64,
    /// Passes over all objects.
    pub passes: AtomicU64,
    /// Longest time from a drain request to the move, in milliseconds.
    pub max_handover_ms: AtomicU64,
    /// Sum of the times from drain request to move, in milliseconds.
    pub total_handover_ms: AtomicU64,
}

/// The sharder of the resource `K`. Cheap to clone.
///
/// Run by every replica; the one that wins the sharder's leader election keeps every
/// object's shard label on its rendezvous owner, moving objects by the protocol of
/// [`handover`](super::handover).
///
/// # Properties
///
/// - **One sharder at a time**: it works only while it leads its own leader election
///   (`<namespace>/<sharder_lease>`), and checks leadership before every write.
/// - **Small cache**: it watches the metadata only, keeps of it the name, namespace, uid,
///   resourceVersion, the shard label and the drain annotations (in compact storage), and
///   decides from a table of a few dozen bytes per object.
/// - **Guarded writes**: every write is a merge patch carrying the resourceVersion it was
///   decided on, so a decision made on a stale view fails with 409 and is made again.
pub struct Sharder<K, M: MemberLeases> {
    inner: Arc<Inner<M>>,
    _kind: PhantomData<fn() -> K>,
}

impl<K, M: MemberLeases> Clone for Sharder<K, M> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            _kind: PhantomData,
        }
    }
}

impl<K, M: MemberLeases> std::fmt::Debug for Sharder<K, M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sharder")
            .field("membership", &self.inner.membership)
            .field("stats", &self.inner.stats)
            .finish_non_exhaustive()
    }
}

struct Inner<M: MemberLeases> {
    membership: Membership<M>,
    client: kube::Client,
    /// The namespace of the sharded objects; `None`: all namespaces.
    namespace: Option<String>,
    key: ShardKey,
    elector: LeaderElector<LeaseLock>,
    stats: SharderStats,
    /// Drains requested by this sharder, and when.
    drains: Mutex<BTreeMap<String, Instant>>,
}

/// The metadata a sharder keeps: names, uid, version, the shard label, the drain annotations.
fn strip(meta: &ObjectMeta) -> ObjectMeta {
    let keep = |map: &Option<BTreeMap<String, String>>, keys: &[&str]| {
        let kept: BTreeMap<String, String> = map
            .iter()
            .flatten()
            .filter(|(k, _)| keys.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        (!kept.is_empty()).then_some(kept)
    };
    ObjectMeta {
        name: meta.name.clone(),
        namespace: meta.namespace.clone(),
        uid: meta.uid.clone(),
        resource_version: meta.resource_version.clone(),
        labels: keep(&meta.labels, &[SHARD_LABEL]),
        annotations: keep(&meta.annotations, &[DRAIN_ANNOTATION, DRAINED_ANNOTATION]),
        ..ObjectMeta::default()
    }
}

impl<K, M> Sharder<K, M>
where
    K: ShardedResource,
    PartialObjectMeta<K>: Resource + DeserializeOwned,
    M: MemberLeases,
{
    /// The sharder of `K` (all namespaces) for the replica of `membership`, writing through
    /// `client`, hashing objects by `key`. Its leader election uses the membership's timing
    /// and the lease `<namespace>/<sharder_lease>`.
    ///
    /// # Errors
    ///
    /// [`LeaderElectionError`](crate::leaderelection::LeaderElectionError) if the timing is
    /// invalid.
    pub fn new(
        membership: Membership<M>,
        client: kube::Client,
        key: ShardKey,
    ) -> Result<Self, crate::leaderelection::LeaderElectionError> {
        Self::build(membership, client, key, None)
    }

    /// As [`new`](Self::new), for the objects of one namespace only.
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new).
    pub fn namespaced(
        membership: Membership<M>,
        client: kube::Client,
        key: ShardKey,
        namespace: impl Into<String>,
    ) -> Result<Self, crate::leaderelection::LeaderElectionError> {
        Self::build(membership, client, key, Some(namespace.into()))
    }

    fn build(
        membership: Membership<M>,
        client: kube::Client,
        key: ShardKey,
        namespace: Option<String>,
    ) -> Result<Self, crate::leaderelection::LeaderElectionError> {
        let config = membership.config();
        let lock = LeaseLock::new(
            client.clone(),
            &config.namespace,
            &config.sharder_lease,
            &config.identity,
        );
        let mut election = LeaderElectionConfig::new(lock);
        election.lease_duration = config.lease_duration;
        election.renew_deadline = config.renew_deadline;
        election.retry_period = config.retry_period;
        election.release_on_cancel = true;
        election.name = format!("sharder/{}", config.identity);
        let elector = LeaderElector::new(election)?;
        Ok(Self {
            inner: Arc::new(Inner {
                membership,
                client,
                namespace,
                key,
                elector,
                stats: SharderStats::default(),
                drains: Mutex::default(),
            }),
            _kind: PhantomData,
        })
    }

    /// What this sharder did.
    pub fn stats(&self) -> &SharderStats {
        &self.inner.stats
    }

    /// Whether this replica's sharder leads right now.
    pub fn is_leader(&self) -> bool {
        self.inner.elector.is_leader()
    }

    /// Competes for the sharder lease until `cancel` fires; while leading, keeps the shard
    /// labels on their owners.
    ///
    /// # Cancel safety
    ///
    /// Prefer `cancel` (the lease is then released). Every step of the protocol is written
    /// to the objects, so another sharder continues where this one stopped.
    pub async fn run(&self, cancel: CancellationToken) {
        while !cancel.is_cancelled() {
            let outcome = self
                .inner
                .elector
                .run_while_leading(cancel.clone(), |leading| self.lead(leading))
                .await;
            if let Err(error) = outcome {
                tracing::error!(%error, "sharder election failed");
                return;
            }
        }
    }

    async fn lead(&self, leading: CancellationToken) {
        let inner = &self.inner;
        let api: Api<K> = match &inner.namespace {
            Some(ns) => Api::namespaced(inner.client.clone(), ns),
            None => Api::all(inner.client.clone()),
        };
        let lw = KubeListerWatcher::<PartialObjectMeta<K>>::metadata(api);
        // A paged list streams into the store page by page; a watch-list would hold every
        // object's full metadata until the initial events end.
        let options = InformerOptions::new("sharder")
            .with_watch_list(false)
            .with_page_size(500)
            .with_transform(Arc::new(|obj: Arc<PartialObjectMeta<K>>| {
                Arc::new(PartialObjectMeta {
                    types: None,
                    metadata: strip(&obj.metadata),
                    _phantom: PhantomData,
                })
            }));
        // The passes read the table, not the cache: compact storage keeps the cache small.
        #[cfg(feature = "compact")]
        let options = options.with_storage(crate::cache::Storage::compact(
            crate::cache::store::CompactOptions::default(),
        ));
        let informer = SharedIndexInformer::new(lw, options);
        let table = Arc::new(ShardTable::default());
        let changed = Arc::new(Notify::new());
        let handler = {
            let (t1, t2, t3) = (table.clone(), table.clone(), table.clone());
            let (k1, k2) = (inner.key.clone(), inner.key.clone());
            let (w1, w2) = (changed.clone(), changed.clone());
            ResourceEventHandlerFuncs::new()
                .on_add(move |obj: &Arc<PartialObjectMeta<K>>, _| {
                    t1.upsert(&obj.metadata, &k1);
                    w1.notify_one();
                })
                .on_update(move |_, obj: &Arc<PartialObjectMeta<K>>| {
                    t2.upsert(&obj.metadata, &k2);
                    w2.notify_one();
                })
                .on_delete(move |obj: &DeletedObject<PartialObjectMeta<K>>| {
                    t3.remove(&obj.object().metadata);
                })
        };
        if informer.add_event_handler(handler).is_err() {
            return;
        }
        let stop = leading.child_token();
        // Stops with this future if it is dropped, not only when `stop` fires.
        let run = AbortOnDropHandle::new(tokio::spawn({
            let (informer, stop) = (informer.clone(), stop.clone());
            async move { informer.run(stop).await }
        }));
        let sources: [&dyn HasSynced; 1] = [&informer];
        if wait_for_cache_sync(&leading, &sources).await {
            tracing::info!(
                identity = inner.membership.identity(),
                objects = table.len(),
                "sharder leading; cache synced"
            );
            let mut views = inner.membership.subscribe();
            let retry = inner.membership.config().retry_period;
            while !leading.is_cancelled() {
                let view = views.borrow_and_update().clone();
                self.pass(&table, &view, &leading).await;
                tokio::select! {
                    biased;
                    () = leading.cancelled() => break,
                    _ = views.changed() => {}
                    () = changed.notified() => {
                        // Let a burst of events land before the next pass.
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    () = tokio::time::sleep(retry) => {}
                }
            }
        }
        stop.cancel();
        let _ = run.await;
    }

    /// One pass over all objects: decide, then write what must change.
    async fn pass(&self, table: &ShardTable, view: &MemberView, leading: &CancellationToken) {
        let inner = &self.inner;
        inner.stats.passes.fetch_add(1, Ordering::Relaxed);
        // Ready (past the join delay, fresh view): every live member's lease has been
        // listed, so a sharder that just took over does not pile everything on the members
        // it happened to see first.
        if view.members.is_empty() || !view.ready {
            return;
        }
        let mut writes = Vec::new();
        table.for_each(|ns, name, row| {
            let state = row.state();
            let action = decide(&state, view.owner(&row.shard_key), |m| view.contains(m));
            if action == ShardAction::Keep {
                return;
            }
            let acknowledged = state.drain_to.is_some() && state.drained == state.drain_to;
            writes.push((
                ns.to_owned(),
                name.to_owned(),
                row.version.to_string(),
                action,
                acknowledged,
            ));
        });
        let writes = futures::stream::iter(writes)
            .map(|(ns, name, rv, action, acknowledged)| async move {
                if leading.is_cancelled() || !inner.elector.is_leader() {
                    return;
                }
                self.write(&ns, &name, &rv, &action, acknowledged).await;
            })
            .buffer_unordered(CONCURRENT_WRITES);
        writes.collect::<()>().await;
    }

    async fn write(
        &self,
        ns: &str,
        name: &str,
        rv: &str,
        action: &ShardAction,
        acknowledged: bool,
    ) {
        let inner = &self.inner;
        let key = format!("{ns}/{name}");
        let (labels, annotations): (Value, Value) = match action {
            ShardAction::Keep => return,
            ShardAction::Assign { to } => (
                json!({SHARD_LABEL: to}),
                json!({DRAIN_ANNOTATION: null, DRAINED_ANNOTATION: null}),
            ),
            ShardAction::Drain { to } => (
                json!({}),
                json!({DRAIN_ANNOTATION: to, DRAINED_ANNOTATION: null}),
            ),
            ShardAction::CancelDrain => (
                json!({}),
                json!({DRAIN_ANNOTATION: null, DRAINED_ANNOTATION: null}),
            ),
        };
        let patch = json!({"metadata": {"resourceVersion": rv, "labels": labels, "annotations": annotations}});
        let params = PatchParams {
            field_manager: Some(format!("sharder-{}", inner.membership.identity())),
            ..PatchParams::default()
        };
        let api: Api<K> = Api::namespaced(inner.client.clone(), ns);
        match api
            .patch_metadata(name, &params, &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {
                let stats = &inner.stats;
                match action {
                    ShardAction::Assign { .. } if acknowledged => {
                        stats.handovers.fetch_add(1, Ordering::Relaxed);
                        if let Some(since) = inner.drains.lock().remove(&key) {
                            let ms = u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX);
                            stats.max_handover_ms.fetch_max(ms, Ordering::Relaxed);
                            stats.total_handover_ms.fetch_add(ms, Ordering::Relaxed);
                        }
                    }
                    ShardAction::Assign { .. } => {
                        inner.drains.lock().remove(&key);
                        stats.assigned.fetch_add(1, Ordering::Relaxed);
                    }
                    ShardAction::Drain { .. } => {
                        stats.drains.fetch_add(1, Ordering::Relaxed);
                        inner.drains.lock().entry(key).or_insert_with(Instant::now);
                    }
                    ShardAction::CancelDrain => {
                        stats.cancelled.fetch_add(1, Ordering::Relaxed);
                        inner.drains.lock().remove(&key);
                    }
                    ShardAction::Keep => {}
                }
            }
            Err(kube::Error::Api(status)) if status.is_conflict() => {
                inner.stats.conflicts.fetch_add(1, Ordering::Relaxed);
            }
            Err(error) => tracing::debug!(key, %error, "sharder write failed; retrying next pass"),
        }
    }
}
