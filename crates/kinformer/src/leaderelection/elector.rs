//! [`LeaderElector`]: acquire, renew and release a lease through a [`Lock`].

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::config::{JITTER_FACTOR, LeaderElectionConfig};
use super::error::LeaderElectionError;
use super::lock::Lock;
use super::observation::Observation;
use super::record::{LeaderElectionRecord, RawVersion};
use super::state::{LeaderState, StopReason, Stopped};
use crate::wait::jitter;

/// The lease duration written when releasing, so that others take over at once.
const RELEASED_LEASE_DURATION: Duration = Duration::from_secs(1);

/// A candidate in a leader election (client-go's `leaderelection.LeaderElector`).
///
/// Cheap to clone: clones share the state, so one clone can [`run`](Self::run) while others
/// ask [`is_leader`](Self::is_leader) or [`subscribe`](Self::subscribe).
///
/// # How it decides
///
/// - **Acquire**: every `retry_period` (jittered up to `(1 + JITTER_FACTOR) ×`), read the
///   record; take it over if it is missing, released (empty holder), already ours, or has not
///   changed for `lease_duration` *by this candidate's own clock* since it first observed the
///   current version. Writes use the observed version, so of two racing candidates one wins
///   and the other gets a conflict.
/// - **Renew**: while leading, renew every `retry_period`; if a renewal does not succeed
///   within `renew_deadline` (or before the lease would expire by the leader's own clock), or
///   another holder is observed, leadership is lost.
/// - **Release**: with `release_on_cancel`, when the run ends the record is replaced by an
///   empty holder with a 1 s lease, if it still names this candidate.
///
/// # Invariant
///
/// [`is_leader`](Self::is_leader) is true only while the lease has not expired by this
/// candidate's clock, counted from the moment *before* it sent its last write that moved the
/// version (a write the store took as a no-op extends nothing). Any other candidate counts from
/// a moment *after* that version was stored, so two candidates never both see `is_leader()`
/// true — given reads that return the latest version (as the API server's do) and clocks that
/// run at the same rate.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use kinformer::leaderelection::testing::InMemoryLock;
/// use kinformer::leaderelection::{LeaderElectionConfig, LeaderElector, StopReason};
/// use tokio_util::sync::CancellationToken;
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
/// let lock = InMemoryLock::new("pod-a");
/// let mut config = LeaderElectionConfig::new(lock.clone());
/// config.release_on_cancel = true;
/// let elector = LeaderElector::new(config)?;
///
/// let cancel = CancellationToken::new();
/// let stopped = elector
///     .run_while_leading(cancel.clone(), |leading| async move {
///         // Work only while leading; `leading` fires when leadership ends.
///         tokio::time::sleep(Duration::from_secs(30)).await;
///         cancel.cancel();
///         leading.cancelled().await;
///         "done"
///     })
///     .await?;
/// assert_eq!(stopped.reason, StopReason::Cancelled);
/// assert_eq!(stopped.output, Some("done"));
/// assert!(stopped.released);
/// assert_eq!(lock.snapshot().map(|(record, _)| record.holder_identity), Some(String::new()));
/// # Ok::<(), kinformer::leaderelection::LeaderElectionError>(())
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct LeaderElector<L> {
    inner: Arc<Inner<L>>,
}

impl<L> Clone for LeaderElector<L> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

#[derive(Debug)]
struct Inner<L> {
    config: LeaderElectionConfig<L>,
    /// What this candidate last observed (or wrote) and whether it leads.
    observed: Mutex<Observed>,
    /// Published state; `leading` and `leader` mirror `observed` after each attempt.
    state: watch::Sender<LeaderState>,
    /// True while a run is in progress; at most one run at a time.
    running: AtomicBool,
}

#[derive(Debug, Default)]
struct Observed {
    /// The last observed record, its version, and when this candidate observed it: for a
    /// record read from the lock, when the read returned; for a record this candidate wrote,
    /// just before the write was sent.
    last: Option<Observation>,
    /// Whether this candidate is leading in the current run.
    leading: bool,
}

/// How the renew loop ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RenewEnd {
    Stopped,
    Lost,
}

impl<L: Lock> LeaderElector<L> {
    /// Validates `config` and builds an elector that is not running yet.
    ///
    /// # Errors
    ///
    /// [`LeaderElectionError`] if the configuration breaks a requirement listed on
    /// [`LeaderElectionConfig`].
    pub fn new(config: LeaderElectionConfig<L>) -> Result<Self, LeaderElectionError> {
        config.validate()?;
        let (state, _) = watch::channel(LeaderState::default());
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                observed: Mutex::default(),
                state,
                running: AtomicBool::new(false),
            }),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &LeaderElectionConfig<L> {
        &self.inner.config
    }

    /// This candidate's identity (the lock's).
    pub fn identity(&self) -> &str {
        self.inner.config.lock.identity()
    }

    /// Whether this candidate leads right now: it acquired the lease in the current run, has
    /// not given it up, the last record it observed names it, and that lease has not expired
    /// by its own clock.
    pub fn is_leader(&self) -> bool {
        let observed = self.inner.observed.lock();
        observed.leading
            && observed.last.as_ref().is_some_and(|last| {
                last.record.holder_identity == self.identity() && last.expiry() > Instant::now()
            })
    }

    /// A health check (client-go's `HealthzAdaptor`): fails if this candidate still
    /// considers itself leading although its lease expired more than
    /// `max_tolerable_expired_lease` ago by its own clock, which only happens when its run is
    /// not being polled (a blocked or starved executor). Candidates that do not lead pass.
    ///
    /// # Errors
    ///
    /// [`LeaderElectionError::LeaseOverdue`] as described.
    pub fn check(&self, max_tolerable_expired_lease: Duration) -> Result<(), LeaderElectionError> {
        let observed = self.inner.observed.lock();
        let Some(last) = observed.last.as_ref() else {
            return Ok(());
        };
        if !observed.leading || last.record.holder_identity != self.identity() {
            return Ok(());
        }
        let overdue = Instant::now().saturating_duration_since(last.expiry());
        if overdue > max_tolerable_expired_lease {
            return Err(LeaderElectionError::LeaseOverdue {
                name: self.inner.config.name.clone(),
                overdue,
            });
        }
        Ok(())
    }

    /// The holder identity last observed (client-go's `GetLeader`); `None` before the first
    /// observation or while nobody holds the lease.
    pub fn leader(&self) -> Option<String> {
        self.inner.state.borrow().leader.clone()
    }

    /// The last record observed or written by this candidate.
    pub fn observed_record(&self) -> Option<LeaderElectionRecord> {
        let observed = self.inner.observed.lock();
        observed.last.as_ref().map(|last| last.record.clone())
    }

    /// The current published state.
    pub fn state(&self) -> LeaderState {
        self.inner.state.borrow().clone()
    }

    /// A watch channel of the [`LeaderState`]: *started leading*, *stopped leading* and *new
    /// leader observed* are its changes.
    pub fn subscribe(&self) -> watch::Receiver<LeaderState> {
        self.inner.state.subscribe()
    }

    /// Runs the election until `cancel` fires or leadership, once acquired, is lost (client-go's
    /// `Run`): tries to acquire, then renews while leading. With `release_on_cancel`, the
    /// lease is released on the way out if it still names this candidate. A run does not go
    /// back to being a candidate after losing leadership; call `run` again for that.
    ///
    /// # Errors
    ///
    /// [`LeaderElectionError::AlreadyRunning`] if another run of this elector (or a clone) is
    /// in progress.
    ///
    /// # Cancel safety
    ///
    /// Prefer `cancel` to dropping the future. If dropped, the elector stops at once: it
    /// neither renews nor releases, [`is_leader`](Self::is_leader) turns false, and others
    /// take over once the lease expires.
    pub async fn run(&self, cancel: CancellationToken) -> Result<StopReason, LeaderElectionError> {
        let stopped = self
            .run_while_leading(cancel, |leading| async move { leading.cancelled().await })
            .await?;
        Ok(stopped.reason)
    }

    /// Runs the election like [`run`](Self::run), and runs `work` only while leading (the
    /// Rust form of client-go's `OnStartedLeading` and `RunOrDie`).
    ///
    /// `work` is called once leadership is acquired, with a token that fires when leadership
    /// ends: `cancel` fired, or renewal failed. The elector keeps renewing until `work`
    /// returns, then stops (and releases, with `release_on_cancel`). If `work` returns by
    /// itself, the elector steps down ([`StopReason::WorkFinished`]). `work` must return
    /// promptly once its token fires: after a lost renewal others may already lead.
    ///
    /// # Errors
    ///
    /// [`LeaderElectionError::AlreadyRunning`] if another run of this elector is in progress.
    ///
    /// # Cancel safety
    ///
    /// As [`run`](Self::run); dropping the future also drops `work` wherever it is.
    pub async fn run_while_leading<F, Fut>(
        &self,
        cancel: CancellationToken,
        work: F,
    ) -> Result<Stopped<Fut::Output>, LeaderElectionError>
    where
        F: FnOnce(CancellationToken) -> Fut,
        Fut: Future,
    {
        let _running = RunGuard::start(self)?;
        let name = &self.inner.config.name;
        tracing::info!(elector = %name, identity = self.identity(), lock = %self.inner.config.lock.describe(), "attempting to acquire leader lease");
        if !self.acquire(&cancel).await {
            let released = self.finish().await;
            return Ok(Stopped {
                reason: StopReason::Cancelled,
                output: None,
                released,
            });
        }
        tracing::info!(elector = %name, identity = self.identity(), "acquired leader lease");

        let work_token = cancel.child_token();
        let renew_stop = CancellationToken::new();
        let mut renew = pin!(self.renew(&renew_stop));
        let mut work = pin!(work(work_token.clone()));
        let mut renew_end = None;
        let mut output = None;
        while renew_end.is_none() || output.is_none() {
            tokio::select! {
                end = &mut renew, if renew_end.is_none() => {
                    renew_end = Some(end);
                    self.set_leading(false);
                    work_token.cancel();
                }
                out = &mut work, if output.is_none() => {
                    output = Some(out);
                    renew_stop.cancel();
                }
            }
        }
        let reason = if renew_end == Some(RenewEnd::Lost) {
            tracing::info!(elector = %name, identity = self.identity(), "lost leadership");
            StopReason::LeadershipLost
        } else if cancel.is_cancelled() {
            StopReason::Cancelled
        } else {
            StopReason::WorkFinished
        };
        let released = self.finish().await;
        Ok(Stopped {
            reason,
            output,
            released,
        })
    }

    /// Stops leading and, if configured, releases the lease.
    async fn finish(&self) -> bool {
        self.set_leading(false);
        if !self.inner.config.release_on_cancel {
            return false;
        }
        let released = match tokio::time::timeout(self.inner.config.renew_deadline, self.release())
            .await
        {
            Ok(released) => released,
            Err(_) => {
                tracing::warn!(elector = %self.inner.config.name, "releasing the lease timed out");
                false
            }
        };
        self.report_leader();
        released
    }

    /// Tries to acquire every jittered retry period until it succeeds (true) or `cancel`
    /// fires (false).
    async fn acquire(&self, cancel: &CancellationToken) -> bool {
        loop {
            let acquired = tokio::select! {
                biased;
                () = cancel.cancelled() => return false,
                acquired = self.try_acquire_or_renew() => acquired,
            };
            if acquired {
                self.set_leading(true);
                return true;
            }
            self.report_leader();
            let pause = jitter(self.inner.config.retry_period, JITTER_FACTOR);
            tokio::select! {
                biased;
                () = cancel.cancelled() => return false,
                () = tokio::time::sleep(pause) => {}
            }
        }
    }

    /// Renews every retry period until `stop` fires or a renewal fails for `renew_deadline`.
    async fn renew(&self, stop: &CancellationToken) -> RenewEnd {
        let config = &self.inner.config;
        loop {
            let start = Instant::now();
            let expiry = self.own_expiry().unwrap_or(start);
            let deadline = (start + config.renew_deadline).min(expiry);
            let renewed = loop {
                if Instant::now() >= deadline {
                    break false;
                }
                let attempt = tokio::time::timeout_at(deadline, self.try_acquire_or_renew());
                let outcome = tokio::select! {
                    biased;
                    () = stop.cancelled() => return RenewEnd::Stopped,
                    outcome = attempt => outcome,
                };
                match outcome {
                    // A write the store took as a no-op renews nothing: only a lease still
                    // valid by this candidate's clock counts as renewed.
                    Ok(true) if self.own_lease_valid() => break true,
                    Err(_elapsed) => break false,
                    Ok(false) if self.other_holder_observed() => break false,
                    Ok(_) => {}
                }
                self.report_leader();
                let next = (Instant::now() + config.retry_period).min(deadline);
                tokio::select! {
                    biased;
                    () = stop.cancelled() => return RenewEnd::Stopped,
                    () = tokio::time::sleep_until(next) => {}
                }
                if Instant::now() >= deadline {
                    break false;
                }
            };
            self.report_leader();
            if !renewed {
                tracing::info!(elector = %config.name, identity = self.identity(), "failed to renew the lease");
                return RenewEnd::Lost;
            }
            tracing::trace!(elector = %config.name, "renewed the lease");
            tokio::select! {
                biased;
                () = stop.cancelled() => return RenewEnd::Stopped,
                () = tokio::time::sleep(config.retry_period) => {}
            }
        }
    }

    /// One attempt to acquire or renew (client-go's `tryAcquireOrRenew`); true if this
    /// candidate holds the lease afterwards.
    async fn try_acquire_or_renew(&self) -> bool {
        let config = &self.inner.config;
        let lock = &config.lock;
        let now = wall_clock_now();
        let mut desired = LeaderElectionRecord {
            holder_identity: self.identity().to_owned(),
            lease_duration: config.lease_duration,
            acquire_time: Some(now),
            renew_time: Some(now),
            leader_transitions: 0,
        };

        // 1. Fast path: the leader renews assuming the version it wrote last is current.
        let start = Instant::now();
        if let Some((record, version)) = self.own_valid_record(start) {
            desired.acquire_time = record.acquire_time;
            desired.leader_transitions = record.leader_transitions;
            match lock.update(&desired, &version).await {
                Ok(version) => {
                    self.set_observed(desired, version, start);
                    return true;
                }
                Err(error) => {
                    tracing::debug!(elector = %config.name, %error, "optimistic renewal failed, re-reading the lease");
                }
            }
        }

        // 2. Read the record, or create it if missing.
        let (current, version) = match lock.get().await {
            Ok(Some(found)) => found,
            Ok(None) => {
                let start = Instant::now();
                return match lock.create(&desired).await {
                    Ok(version) => {
                        self.set_observed(desired, version, start);
                        true
                    }
                    Err(error) => {
                        tracing::debug!(elector = %config.name, %error, "creating the lease failed");
                        false
                    }
                };
            }
            Err(error) => {
                tracing::warn!(elector = %config.name, %error, "reading the lease failed");
                return false;
            }
        };

        // 3. Judge the holder by this candidate's own observation time of this version.
        let now = Instant::now();
        let valid_until = {
            let mut observed = self.inner.observed.lock();
            let changed = observed
                .last
                .as_ref()
                .is_none_or(|last| last.version != version);
            if changed {
                // A new version that still names this candidate (another writer touched the
                // object) does not extend its own lease: keep counting from before its last
                // write, which precedes every other observer's view of the new version.
                let time = match &observed.last {
                    Some(last)
                        if current.holder_identity == self.identity()
                            && last.record.holder_identity == self.identity() =>
                    {
                        last.time.min(now)
                    }
                    _ => now,
                };
                observed.last = Some(Observation {
                    record: current.clone(),
                    version: version.clone(),
                    time,
                });
            }
            observed.last.as_ref().map(Observation::expiry)
        };
        let ours = current.holder_identity == self.identity();
        let held_by_other_and_valid =
            current.is_held() && !ours && valid_until.is_some_and(|until| until > now);
        if held_by_other_and_valid {
            tracing::trace!(elector = %config.name, holder = %current.holder_identity, "lease is held and not yet expired");
            return false;
        }

        // 4. Take over (or renew on the slow path).
        if ours {
            desired.acquire_time = current.acquire_time;
            desired.leader_transitions = current.leader_transitions;
        } else {
            desired.leader_transitions = current.leader_transitions.saturating_add(1);
        }
        let start = Instant::now();
        match lock.update(&desired, &version).await {
            Ok(version) => {
                self.set_observed(desired, version, start);
                true
            }
            Err(error) => {
                tracing::debug!(elector = %config.name, %error, "updating the lease failed");
                false
            }
        }
    }

    /// Writes a released record if the lease still names this candidate.
    async fn release(&self) -> bool {
        let config = &self.inner.config;
        let (current, version) = match config.lock.get().await {
            Ok(Some(found)) => found,
            Ok(None) => return false,
            Err(error) => {
                tracing::warn!(elector = %config.name, %error, "reading the lease to release it failed");
                return false;
            }
        };
        if current.holder_identity != self.identity() {
            return false;
        }
        let now = wall_clock_now();
        let released = LeaderElectionRecord {
            holder_identity: String::new(),
            lease_duration: RELEASED_LEASE_DURATION,
            acquire_time: Some(now),
            renew_time: Some(now),
            leader_transitions: current.leader_transitions,
        };
        let start = Instant::now();
        match config.lock.update(&released, &version).await {
            Ok(version) => {
                self.set_observed(released, version, start);
                tracing::info!(elector = %config.name, identity = self.identity(), "released the lease");
                true
            }
            Err(error) => {
                tracing::warn!(elector = %config.name, %error, "releasing the lease failed");
                false
            }
        }
    }

    /// The record and version this candidate last wrote, if it names this candidate and has
    /// not expired by its clock at `now`.
    fn own_valid_record(&self, now: Instant) -> Option<(LeaderElectionRecord, RawVersion)> {
        let observed = self.inner.observed.lock();
        let last = observed.last.as_ref()?;
        (last.record.holder_identity == self.identity() && last.expiry() > now)
            .then(|| (last.record.clone(), last.version.clone()))
    }

    /// Whether the last observed record names this candidate and has not expired by its
    /// clock.
    fn own_lease_valid(&self) -> bool {
        self.own_valid_record(Instant::now()).is_some()
    }

    /// When the observed lease expires by this candidate's clock.
    fn own_expiry(&self) -> Option<Instant> {
        self.inner
            .observed
            .lock()
            .last
            .as_ref()
            .map(Observation::expiry)
    }

    /// Whether the last observed record names a holder other than this candidate.
    fn other_holder_observed(&self) -> bool {
        let observed = self.inner.observed.lock();
        observed.last.as_ref().is_some_and(|last| {
            last.record.is_held() && last.record.holder_identity != self.identity()
        })
    }

    /// Records a write of this candidate, sent at `time`, that left the lock at `version`.
    fn set_observed(&self, record: LeaderElectionRecord, version: RawVersion, time: Instant) {
        let mut observed = self.inner.observed.lock();
        // A write that left the version unchanged (a server may treat an identical object as
        // a no-op) renewed nothing in the eyes of others: keep counting from before.
        let time = match &observed.last {
            Some(last) if last.version == version => last.time.min(time),
            _ => time,
        };
        observed.last = Some(Observation {
            record,
            version,
            time,
        });
    }

    fn set_leading(&self, leading: bool) {
        self.inner.observed.lock().leading = leading;
        self.report_leader();
    }

    /// Publishes `leading` and the observed holder on the watch channel if they changed.
    fn report_leader(&self) {
        let (leading, leader) = {
            let observed = self.inner.observed.lock();
            let leader = observed
                .last
                .as_ref()
                .filter(|last| last.record.is_held())
                .map(|last| last.record.holder_identity.clone());
            (observed.leading, leader)
        };
        self.inner.state.send_if_modified(|state| {
            if state.leading == leading && state.leader == leader {
                return false;
            }
            if state.leader != leader {
                tracing::info!(elector = %self.inner.config.name, leader = ?leader, "new leader observed");
            }
            state.leading = leading;
            state.leader = leader;
            true
        });
    }
}

/// The wall-clock time, at the microsecond precision a `Lease` stores, so that records read
/// back equal the records written.
fn wall_clock_now() -> Timestamp {
    let now = Timestamp::now();
    Timestamp::from_microsecond(now.as_microsecond()).unwrap_or(now)
}

/// Marks an elector as running; on drop (run finished or its future dropped) it stops leading
/// and allows the next run.
struct RunGuard<'a, L: Lock> {
    elector: &'a LeaderElector<L>,
}

impl<'a, L: Lock> RunGuard<'a, L> {
    fn start(elector: &'a LeaderElector<L>) -> Result<Self, LeaderElectionError> {
        if elector.inner.running.swap(true, Ordering::AcqRel) {
            return Err(LeaderElectionError::AlreadyRunning {
                name: elector.inner.config.name.clone(),
            });
        }
        Ok(Self { elector })
    }
}

impl<L: Lock> Drop for RunGuard<'_, L> {
    fn drop(&mut self) {
        self.elector.set_leading(false);
        self.elector.inner.running.store(false, Ordering::Release);
    }
}
