//! [`Membership`]: this replica's own lease, and its view of which replicas are live.
//!
//! The properties are listed on [`Membership`].

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::assignment::rendezvous_owner;
use super::config::ShardingConfig;
use super::error::ShardingError;
use super::leases::{MemberLease, MemberLeases};
use crate::leaderelection::{LeaderElectionConfig, LeaderElector, Observation, StopReason};

/// A replica's view of the membership, published on [`Membership::subscribe`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemberView {
    /// The live members, sorted: this replica while it holds its lease, and every other
    /// replica whose lease is fresh by this replica's clock.
    pub members: Vec<String>,
    /// Whether this replica holds its own lease.
    pub member: bool,
    /// Whether this replica may claim keys in filtered mode (see [`Membership`]'s properties).
    pub ready: bool,
}

impl MemberView {
    /// The owner of `shard_key` among the live members.
    pub fn owner(&self, shard_key: &str) -> Option<&str> {
        rendezvous_owner(self.members.iter().map(String::as_str), shard_key)
    }

    /// Whether `member` is live in this view.
    pub fn contains(&self, member: &str) -> bool {
        self.members
            .binary_search_by(|m| m.as_str().cmp(member))
            .is_ok()
    }
}

/// One replica's membership: its lease and its view of the others.
///
/// # Properties
///
/// - **One lease per replica, renewed by the leader-election loop**: the replica runs a
///   [`LeaderElector`] on its own lease `<lease_prefix><identity>` (nobody else competes for
///   it), so renewals, the renew deadline and the release on exit are leader election's.
///   The replica is a member while the elector says it holds the lease
///   ([`LeaderElector::is_leader`]).
/// - **Observed-time expiry**: other replicas' leases are listed every `retry_period`; a lease
///   is fresh until `lease_duration` after this replica *first saw its current version*, on
///   its own monotonic clock (client-go's leader-election rule), so clock skew between
///   machines does not matter. A released lease (empty holder) is gone at once.
/// - **Safe claims** (filtered mode): a replica is [`ready`](MemberView::ready) to claim keys
///   only while it holds its lease, its last successful listing started less than
///   `renew_deadline` ago, and at least `join_delay` (≥ `lease_duration`) has passed since it
///   joined. So by the time a joiner claims keys, every ready replica has listed after it
///   joined and dropped the joiner's keys; a replica that can no longer list stops claiming
///   within `renew_deadline`; and the keys of a replica that died move only after its lease
///   expired by the observer's clock, which is after it stopped considering itself a member.
///
/// Cheap to clone; clones share the state, so one clone can [`run`](Self::run) while others
/// ask [`owns`](Self::owns).
///
/// ```
/// use std::time::Duration;
/// use kinformer::sharding::testing::InMemoryLeases;
/// use kinformer::sharding::{Membership, ShardingConfig};
/// use tokio_util::sync::CancellationToken;
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
/// let leases = InMemoryLeases::new();
/// let replicas: Vec<_> = ["r0", "r1", "r2"]
///     .into_iter()
///     .map(|id| Membership::new(ShardingConfig::new(id, "kube-system"), leases.clone()))
///     .collect::<Result<_, _>>()?;
/// let cancel = CancellationToken::new();
/// for replica in &replicas {
///     let (replica, cancel) = (replica.clone(), cancel.clone());
///     tokio::spawn(async move { replica.run(cancel).await });
/// }
/// // After the join delay (one lease duration) every replica is ready and sees all three.
/// tokio::time::sleep(Duration::from_secs(20)).await;
/// assert!(replicas.iter().all(|r| r.view().ready && r.view().members.len() == 3));
/// // Every key has exactly one owner.
/// for key in ["default/a", "default/b", "prod/c"] {
///     assert_eq!(replicas.iter().filter(|r| r.owns(key)).count(), 1);
/// }
/// # Ok::<(), kinformer::sharding::ShardingError>(())
/// # }).unwrap();
/// ```
pub struct Membership<M: MemberLeases> {
    inner: Arc<Inner<M>>,
}

impl<M: MemberLeases> Clone for Membership<M> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<M: MemberLeases> std::fmt::Debug for Membership<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Membership")
            .field("identity", &self.inner.config.identity)
            .field("view", &*self.inner.view.borrow())
            .finish_non_exhaustive()
    }
}

struct Inner<M: MemberLeases> {
    config: ShardingConfig,
    leases: M,
    elector: LeaderElector<M::Lock>,
    state: Mutex<State>,
    view: watch::Sender<MemberView>,
    running: AtomicBool,
}

#[derive(Default)]
struct State {
    /// The other replicas' leases by identity, as last listed.
    others: BTreeMap<String, Observation>,
    /// When the last successful listing started.
    last_list: Option<Instant>,
    /// When this replica was first seen holding its lease in the current tenure.
    joined_at: Option<Instant>,
    /// Set when the run is stopping: nothing is claimed any more.
    stopping: bool,
}

impl<M: MemberLeases> Membership<M> {
    /// Validates `config` and builds the membership of `config.identity` over `leases`.
    ///
    /// # Errors
    ///
    /// [`ShardingError`] if `config` breaks a requirement listed on [`ShardingConfig`].
    pub fn new(config: ShardingConfig, leases: M) -> Result<Self, ShardingError> {
        config.validate()?;
        let lock = leases.lock(&config.lease_name(&config.identity), &config.identity);
        let mut election = LeaderElectionConfig::new(lock);
        election.lease_duration = config.lease_duration;
        election.renew_deadline = config.renew_deadline;
        election.retry_period = config.retry_period;
        election.release_on_cancel = true;
        election.name = format!("membership/{}", config.identity);
        let elector = LeaderElector::new(election)?;
        let (view, _) = watch::channel(MemberView::default());
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                leases,
                elector,
                state: Mutex::default(),
                view,
                running: AtomicBool::new(false),
            }),
        })
    }

    /// This replica's identity.
    pub fn identity(&self) -> &str {
        &self.inner.config.identity
    }

    /// The configuration.
    pub fn config(&self) -> &ShardingConfig {
        &self.inner.config
    }

    /// The lease store.
    pub fn leases(&self) -> &M {
        &self.inner.leases
    }

    /// The current view.
    pub fn view(&self) -> MemberView {
        self.inner.view.borrow().clone()
    }

    /// A watch channel of the view; it changes when a member joins or leaves, and when this
    /// replica becomes ready or stops being ready.
    pub fn subscribe(&self) -> watch::Receiver<MemberView> {
        self.inner.view.subscribe()
    }

    /// Whether this replica holds its own lease right now (by its own clock).
    pub fn is_member(&self) -> bool {
        !self.inner.state.lock().stopping && self.inner.elector.is_leader()
    }

    /// Whether this replica may claim keys right now: the published view is ready, and the
    /// conditions behind it still hold at this instant (lease held, view fresh).
    pub fn is_ready(&self) -> bool {
        let now = Instant::now();
        let fresh_view = {
            let state = self.inner.state.lock();
            !state.stopping
                && state
                    .last_list
                    .is_some_and(|at| now < at + self.inner.config.renew_deadline)
        };
        fresh_view && self.inner.elector.is_leader() && self.inner.view.borrow().ready
    }

    /// Whether this replica owns `shard_key` right now (filtered mode): it
    /// [is ready](Self::is_ready) and wins the key among the live members.
    pub fn owns(&self, shard_key: &str) -> bool {
        self.is_ready() && self.inner.view.borrow().owner(shard_key) == Some(self.identity())
    }

    /// Holds this replica's lease and observes the others until `cancel` fires; then stops
    /// claiming, and releases the lease so that the others take over at their next poll.
    ///
    /// Stop the work that depends on ownership *before* cancelling: the release tells the
    /// others this replica no longer works on its keys.
    ///
    /// # Errors
    ///
    /// [`ShardingError::AlreadyRunning`] if another run is in progress.
    ///
    /// # Cancel safety
    ///
    /// Prefer `cancel`. Dropping the future stops renewing without releasing: this replica
    /// stops claiming at once ([`is_ready`](Self::is_ready) turns false) and the others take
    /// its keys once its lease expires — as if the process had died.
    pub async fn run(&self, cancel: CancellationToken) -> Result<(), ShardingError> {
        if self.inner.running.swap(true, Ordering::AcqRel) {
            return Err(ShardingError::AlreadyRunning {
                identity: self.identity().to_owned(),
            });
        }
        let _running = RunGuard(self);
        self.inner.state.lock().stopping = false;
        let lease_stop = CancellationToken::new();
        let lease_loop = async {
            loop {
                match self.inner.elector.run(lease_stop.clone()).await {
                    Ok(StopReason::LeadershipLost | StopReason::WorkFinished) => {
                        tracing::info!(
                            identity = self.identity(),
                            "membership lease lost; rejoining"
                        );
                    }
                    Ok(_) | Err(_) => break,
                }
                if lease_stop.is_cancelled() {
                    break;
                }
            }
        };
        let observe_loop = async {
            self.observe(&cancel).await;
            self.inner.state.lock().stopping = true;
            self.publish(Instant::now());
            lease_stop.cancel();
        };
        tokio::join!(lease_loop, observe_loop);
        self.publish(Instant::now());
        Ok(())
    }

    /// Lists the leases every retry period and republishes the view whenever it may change.
    async fn observe(&self, cancel: &CancellationToken) {
        let config = &self.inner.config;
        let mut states = self.inner.elector.subscribe();
        let mut next_list = Instant::now();
        loop {
            let now = Instant::now();
            if now >= next_list {
                next_list = now + config.retry_period;
                let listed = tokio::select! {
                    biased;
                    () = cancel.cancelled() => return,
                    listed = self.inner.leases.list(&config.lease_prefix) => listed,
                };
                match listed {
                    Ok(leases) => self.record_listing(now, leases),
                    Err(error) => {
                        tracing::warn!(identity = self.identity(), %error, "listing the membership leases failed");
                    }
                }
            }
            let now = Instant::now();
            let wake = self.publish(now).min(next_list);
            tokio::select! {
                biased;
                () = cancel.cancelled() => return,
                changed = states.changed() => {
                    if changed.is_err() {
                        return;
                    }
                }
                () = tokio::time::sleep_until(wake) => {}
            }
        }
    }

    /// Records a successful listing that started at `started`.
    fn record_listing(&self, started: Instant, leases: Vec<MemberLease>) {
        let config = &self.inner.config;
        let now = Instant::now();
        let mut state = self.inner.state.lock();
        let mut others = BTreeMap::new();
        for lease in leases {
            let Some(identity) = config.identity_of_lease(&lease.name) else {
                continue;
            };
            if identity == config.identity {
                continue;
            }
            let observation =
                Observation::next(state.others.get(identity), lease.record, lease.version, now);
            others.insert(identity.to_owned(), observation);
        }
        state.others = others;
        state.last_list = Some(started);
    }

    /// Recomputes and publishes the view at `now`; returns when it may next change by itself
    /// (a lease expiring, the join delay ending, the view going stale).
    fn publish(&self, now: Instant) -> Instant {
        let config = &self.inner.config;
        let member = self.inner.elector.is_leader();
        let mut wake = now + config.retry_period;
        let view = {
            let mut state = self.inner.state.lock();
            let member = member && !state.stopping;
            if !member {
                state.joined_at = None;
            } else if state.joined_at.is_none() {
                state.joined_at = Some(now);
            }
            let mut members: Vec<String> = state
                .others
                .iter()
                .filter(|(identity, observation)| {
                    observation.record.holder_identity == **identity && observation.is_fresh(now)
                })
                .map(|(identity, observation)| {
                    wake = wake.min(observation.expiry());
                    identity.clone()
                })
                .collect();
            if member {
                members.push(config.identity.clone());
            }
            members.sort();
            let fresh_until = state.last_list.map(|at| at + config.renew_deadline);
            let fresh = fresh_until.is_some_and(|until| now < until);
            if let Some(until) = fresh_until.filter(|_| fresh) {
                wake = wake.min(until);
            }
            let joined = state.joined_at.map(|at| at + config.join_delay);
            if let Some(at) = joined.filter(|at| *at > now) {
                wake = wake.min(at);
            }
            let ready = member && fresh && joined.is_some_and(|at| at <= now);
            MemberView {
                members,
                member,
                ready,
            }
        };
        self.inner.view.send_if_modified(|current| {
            if *current == view {
                return false;
            }
            tracing::info!(identity = self.identity(), members = ?view.members, ready = view.ready, "membership changed");
            *current = view;
            true
        });
        wake
    }
}

struct RunGuard<'a, M: MemberLeases>(&'a Membership<M>);

impl<M: MemberLeases> Drop for RunGuard<'_, M> {
    fn drop(&mut self) {
        let inner = &self.0.inner;
        inner.state.lock().stopping = true;
        inner.view.send_modify(|view| {
            view.ready = false;
            view.member = false;
            view.members.retain(|m| *m != inner.config.identity);
        });
        inner.running.store(false, Ordering::Release);
    }
}
