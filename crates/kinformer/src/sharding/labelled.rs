//! Labelled mode, replica side: [`ShardReplica`] — this replica's informer selects only its
//! shard ([`shard_selector`]), its workers [`claim`](ShardReplica::claim) a key before each
//! reconcile, and its drainer acknowledges the sharder's drain requests once the key's
//! in-flight work is done.
//!
//! The properties are listed on [`ShardReplica`].

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kube::Api;
use kube::api::{Patch, PatchParams};
use kube_core::Resource;
use parking_lot::Mutex;
use serde_json::json;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::handover::{DRAIN_ANNOTATION, DRAINED_ANNOTATION, SHARD_LABEL, ShardState};
use super::leases::MemberLeases;
use super::membership::Membership;
use super::resource::ShardedResource;
use crate::cache::{DeletedObject, ResourceEventHandler, SharedIndexInformer};

/// The label selector of `identity`'s shard: give it to the informers of the sharded
/// resource (for example with [`SharedInformerFactory::with_selectors`](crate::cache::SharedInformerFactory::with_selectors)).
///
/// ```
/// assert_eq!(kinformer::sharding::shard_selector("replica-1"), "sharding.kinformer.io/shard=replica-1");
/// ```
pub fn shard_selector(identity: &str) -> String {
    format!("{SHARD_LABEL}={identity}")
}

/// One replica in labelled mode. Cheap to clone.
///
/// Its informer selects only its shard ([`shard_selector`]), its workers
/// [`claim`](ShardReplica::claim) a key before each reconcile, and its drainer
/// ([`run_drainer`](ShardReplica::run_drainer)) acknowledges the sharder's drain requests once
/// the key's in-flight work is done.
///
/// # Properties
///
/// - **No claim while draining**: once the informer holds a version with
///   [`DRAIN_ANNOTATION`], [`claim`](ShardReplica::claim) refuses the key; the
///   acknowledgement is written only when no claim on it is held, so the old owner's last
///   reconcile ends before the new owner's first begins.
/// - **No claim without membership**: a replica whose own lease lapsed claims nothing (the
///   sharder moves its objects only after that lease expired by the sharder's clock).
/// - **No claim after the move**: once the label names another replica the object leaves this
///   replica's cache, and a key not in the cache is refused.
///
/// Only namespaced resources are supported (the acknowledgement is a namespaced patch).
pub struct ShardReplica<K, M: MemberLeases> {
    inner: Arc<Inner<K, M>>,
}

impl<K, M: MemberLeases> Clone for ShardReplica<K, M> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<K, M: MemberLeases> std::fmt::Debug for ShardReplica<K, M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardReplica")
            .field("membership", &self.inner.membership)
            .finish_non_exhaustive()
    }
}

struct Inner<K, M: MemberLeases> {
    membership: Membership<M>,
    informer: SharedIndexInformer<K>,
    client: kube::Client,
    /// Claims held, by key; a key is present iff its count is positive.
    claims: Mutex<BTreeMap<String, usize>>,
    /// Keys whose drain request awaits an acknowledgement.
    draining: Mutex<BTreeSet<String>>,
    /// Woken when a claim is released or a drain request arrives.
    wake: Notify,
    acknowledged: std::sync::atomic::AtomicU64,
}

/// A held claim on a key ([`ShardReplica::claim`]); released on drop.
#[must_use = "the claim is released when dropped"]
pub struct Claim<K, M: MemberLeases> {
    replica: ShardReplica<K, M>,
    key: String,
}

impl<K, M: MemberLeases> std::fmt::Debug for Claim<K, M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Claim").field("key", &self.key).finish()
    }
}

impl<K, M: MemberLeases> Drop for Claim<K, M> {
    fn drop(&mut self) {
        let inner = &self.replica.inner;
        let mut claims = inner.claims.lock();
        if let Some(count) = claims.get_mut(&self.key) {
            *count -= 1;
            if *count == 0 {
                claims.remove(&self.key);
            }
        }
        drop(claims);
        inner.wake.notify_one();
    }
}

impl<K, M> ShardReplica<K, M>
where
    K: ShardedResource,
    M: MemberLeases,
{
    /// The replica of `membership`'s identity, over `informer` (which must select
    /// [`shard_selector`] of that identity), acknowledging drains through `client`.
    ///
    /// # Errors
    ///
    /// [`InformerError`](crate::cache::InformerError) if the informer has stopped.
    pub fn new(
        membership: Membership<M>,
        informer: SharedIndexInformer<K>,
        client: kube::Client,
    ) -> Result<Self, crate::cache::InformerError> {
        let replica = Self {
            inner: Arc::new(Inner {
                membership,
                informer: informer.clone(),
                client,
                claims: Mutex::default(),
                draining: Mutex::default(),
                wake: Notify::new(),
                acknowledged: 0.into(),
            }),
        };
        informer.add_event_handler(DrainWatcher {
            replica: replica.clone(),
        })?;
        Ok(replica)
    }

    /// The membership.
    pub fn membership(&self) -> &Membership<M> {
        &self.inner.membership
    }

    /// The informer of this replica's shard.
    pub fn informer(&self) -> &SharedIndexInformer<K> {
        &self.inner.informer
    }

    /// How many drain requests this replica acknowledged.
    pub fn acknowledged(&self) -> u64 {
        self.inner
            .acknowledged
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Claims the key `namespace/name` for one reconcile: `None` if this replica must not
    /// work on it now (not a member, not in its shard, or being drained). Hold the claim
    /// until the reconcile's last write has returned.
    pub fn claim(&self, key: &str) -> Option<Claim<K, M>> {
        if !self.inner.membership.is_member() {
            return None;
        }
        let obj = self.inner.informer.get_indexer().get_by_key(key)?;
        let state = ShardState::of_meta(obj.meta());
        if state.shard != Some(self.inner.membership.identity()) || state.drain_to.is_some() {
            return None;
        }
        let mut claims = self.inner.claims.lock();
        if self.inner.draining.lock().contains(key) {
            return None;
        }
        *claims.entry(key.to_owned()).or_insert(0) += 1;
        Some(Claim {
            replica: self.clone(),
            key: key.to_owned(),
        })
    }

    /// Wraps `handler` so that it does not see objects that are being drained.
    pub fn handler<H>(&self, handler: H) -> DrainingHandler<H> {
        DrainingHandler { handler }
    }

    /// Acknowledges drain requests until `cancel` fires: for each object with a drain request,
    /// waits until no claim on it is held, then writes [`DRAINED_ANNOTATION`] with a
    /// resourceVersion precondition.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: an unacknowledged drain is acknowledged by the next run, or the sharder
    /// moves the object once this replica's lease expires.
    pub async fn run_drainer(&self, cancel: CancellationToken) {
        let retry = self.inner.membership.config().retry_period;
        loop {
            let pending: Vec<String> = self.inner.draining.lock().iter().cloned().collect();
            for key in pending {
                if cancel.is_cancelled() {
                    return;
                }
                self.try_acknowledge(&key).await;
            }
            tokio::select! {
                biased;
                () = cancel.cancelled() => return,
                () = self.inner.wake.notified() => {}
                () = tokio::time::sleep(retry) => {}
            }
        }
    }

    async fn try_acknowledge(&self, key: &str) {
        let inner = &self.inner;
        let Some(obj) = inner.informer.get_indexer().get_by_key(key) else {
            inner.draining.lock().remove(key);
            return;
        };
        let state = ShardState::of_meta(obj.meta());
        let Some(to) = state
            .drain_to
            .filter(|_| state.shard == Some(inner.membership.identity()))
        else {
            inner.draining.lock().remove(key);
            return;
        };
        if state.drained == Some(to) {
            return; // acknowledged; the sharder moves it next
        }
        if inner.claims.lock().contains_key(key) {
            return; // in-flight work; woken when the claim is released
        }
        let meta = obj.meta();
        let (Some(ns), Some(name), Some(rv)) = (
            meta.namespace.as_deref(),
            meta.name.as_deref(),
            meta.resource_version.as_deref(),
        ) else {
            return;
        };
        let api: Api<K> = Api::namespaced(inner.client.clone(), ns);
        let patch = json!({"metadata": {
            "resourceVersion": rv,
            "annotations": {DRAINED_ANNOTATION: to},
        }});
        let params = PatchParams {
            field_manager: Some(inner.membership.identity().to_owned()),
            ..PatchParams::default()
        };
        match api
            .patch_metadata(name, &params, &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {
                inner
                    .acknowledged
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                tracing::debug!(key, to, "acknowledged a drain");
            }
            Err(error) => tracing::debug!(key, %error, "acknowledging a drain failed; retrying"),
        }
    }

    fn note(&self, obj: &K) {
        let state = ShardState::of_meta(obj.meta());
        if state.drain_to.is_none() || state.drained == state.drain_to {
            return;
        }
        let Ok(key) = crate::cache::meta_namespace_key(obj) else {
            return;
        };
        // Taking the claims lock first orders this with `claim`: a claim that raced ahead is
        // counted, one that comes after sees the key draining.
        let _claims = self.inner.claims.lock();
        self.inner.draining.lock().insert(key.as_str().to_owned());
        drop(_claims);
        self.inner.wake.notify_one();
    }
}

/// The replica's own handler: notes drain requests.
struct DrainWatcher<K, M: MemberLeases> {
    replica: ShardReplica<K, M>,
}

impl<K, M> ResourceEventHandler<K> for DrainWatcher<K, M>
where
    K: ShardedResource,
    M: MemberLeases,
{
    fn on_add(&self, obj: &Arc<K>, _is_in_initial_list: bool) {
        self.replica.note(obj);
    }

    fn on_update(&self, _old: &Arc<K>, new: &Arc<K>) {
        self.replica.note(new);
    }
}

/// A handler that hides objects being drained ([`ShardReplica::handler`]): their events are
/// not passed on, so nothing enqueues them while they move.
#[derive(Debug)]
pub struct DrainingHandler<H> {
    handler: H,
}

fn draining<K: Resource>(obj: &K) -> bool {
    obj.meta()
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(DRAIN_ANNOTATION))
}

impl<K: Resource, H: ResourceEventHandler<K>> ResourceEventHandler<K> for DrainingHandler<H> {
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        if !draining(obj.as_ref()) {
            self.handler.on_add(obj, is_in_initial_list);
        }
    }

    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        if !draining(new.as_ref()) {
            self.handler.on_update(old, new);
        }
    }

    fn on_delete(&self, obj: &DeletedObject<K>) {
        self.handler.on_delete(obj);
    }
}
