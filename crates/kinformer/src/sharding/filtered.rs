//! Filtered mode: every replica watches everything; its handlers pass on only the objects it
//! owns, and newly owned keys are enqueued again when the membership changes.
//!
//! Memory does not shrink (every replica caches every object) but nothing is written to the
//! objects. Safety rests on [`Membership::owns`]: workers must check it before each reconcile
//! (a key can move while it waits in the queue), and a reconcile must finish within
//! `lease_duration − renew_deadline` of the replica noticing the change (see the
//! properties of [`Membership`]); writes with resourceVersion preconditions turn a late
//! write into a 409.

use std::collections::BTreeSet;
use std::sync::Arc;

use kube_core::Resource;
use tokio_util::sync::CancellationToken;

use super::assignment::ShardKey;
use super::leases::MemberLeases;
use super::membership::Membership;
use crate::cache::{DeletedObject, ResourceEventHandler};

/// Ownership of objects by one replica in filtered mode: a [`Membership`] and the
/// [`ShardKey`] objects are hashed by. Cheap to clone.
///
/// Every replica watches everything; [`handler`](Self::handler) passes on only the objects
/// this replica owns, and [`requeue_on_change`](Self::requeue_on_change) enqueues the keys it
/// gains. Workers must check [`owns_key`](Self::owns_key) before each reconcile (a key can
/// move while it waits in the queue), and a reconcile must end within
/// `lease_duration − renew_deadline` of the replica noticing the change; writes with
/// resourceVersion preconditions turn a late write into a 409.
pub struct ShardFilter<M: MemberLeases> {
    membership: Membership<M>,
    key: ShardKey,
}

impl<M: MemberLeases> Clone for ShardFilter<M> {
    fn clone(&self) -> Self {
        Self {
            membership: self.membership.clone(),
            key: self.key.clone(),
        }
    }
}

impl<M: MemberLeases> std::fmt::Debug for ShardFilter<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardFilter")
            .field("membership", &self.membership)
            .field("key", &self.key)
            .finish()
    }
}

impl<M: MemberLeases> ShardFilter<M> {
    /// Ownership by `membership`, hashing objects by `key`.
    pub fn new(membership: Membership<M>, key: ShardKey) -> Self {
        Self { membership, key }
    }

    /// The membership.
    pub fn membership(&self) -> &Membership<M> {
        &self.membership
    }

    /// Whether this replica owns `obj` right now.
    pub fn owns<K: Resource>(&self, obj: &K) -> bool {
        self.key
            .of(obj)
            .is_some_and(|key| self.membership.owns(&key))
    }

    /// Whether this replica owns the object of the work-queue key `key` (`namespace/name`)
    /// right now. For shard keys that need the object ([`ShardKey::Uid`],
    /// [`ShardKey::Custom`]) use [`owns`](Self::owns) on the cached object instead; this
    /// returns false for them.
    pub fn owns_key(&self, key: &str) -> bool {
        self.key
            .of_queue_key(key)
            .is_some_and(|key| self.membership.owns(&key))
    }

    /// Wraps `handler` so that it sees only the objects this replica owns when the event
    /// arrives. Keys that become owned later are not replayed by the wrapper: run
    /// [`requeue_on_change`](Self::requeue_on_change) for those.
    pub fn handler<H>(&self, handler: H) -> ShardedHandler<M, H> {
        ShardedHandler {
            filter: self.clone(),
            handler,
        }
    }

    /// Until `cancel` fires: whenever the membership view changes, calls `enqueue` with the
    /// key (`namespace/name`) of every object of `list` (typically the informer's cache) that
    /// this replica owns now but did not own before the change.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only reads and enqueues.
    pub async fn requeue_on_change<K, L, E>(&self, list: L, enqueue: E, cancel: CancellationToken)
    where
        K: Resource,
        L: Fn() -> Vec<Arc<K>>,
        E: Fn(String),
    {
        let mut views = self.membership.subscribe();
        let mut owned: BTreeSet<String> = BTreeSet::new();
        loop {
            let ready = views.borrow_and_update().ready;
            let now_owned: BTreeSet<String> = if ready {
                list()
                    .iter()
                    .filter(|obj| self.owns(obj.as_ref()))
                    .filter_map(|obj| crate::cache::meta_namespace_key(obj.as_ref()).ok())
                    .map(|key| key.as_str().to_owned())
                    .collect()
            } else {
                BTreeSet::new()
            };
            for key in now_owned.difference(&owned) {
                enqueue(key.clone());
            }
            owned = now_owned;
            tokio::select! {
                biased;
                () = cancel.cancelled() => return,
                changed = views.changed() => if changed.is_err() { return },
            }
        }
    }
}

/// A handler that passes on only the events of objects its replica owns
/// ([`ShardFilter::handler`]). An update is passed on if the replica owns the new object; a
/// delete if it owns the deleted one.
pub struct ShardedHandler<M: MemberLeases, H> {
    filter: ShardFilter<M>,
    handler: H,
}

impl<M: MemberLeases, H: std::fmt::Debug> std::fmt::Debug for ShardedHandler<M, H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardedHandler")
            .field("filter", &self.filter)
            .field("handler", &self.handler)
            .finish()
    }
}

impl<K, M, H> ResourceEventHandler<K> for ShardedHandler<M, H>
where
    K: Resource,
    M: MemberLeases,
    H: ResourceEventHandler<K>,
{
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        if self.filter.owns(obj.as_ref()) {
            self.handler.on_add(obj, is_in_initial_list);
        }
    }

    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        if self.filter.owns(new.as_ref()) {
            self.handler.on_update(old, new);
        }
    }

    fn on_delete(&self, obj: &DeletedObject<K>) {
        if self.filter.owns(obj.object().as_ref()) {
            self.handler.on_delete(obj);
        }
    }
}
