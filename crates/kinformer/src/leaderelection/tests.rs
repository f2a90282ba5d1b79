//! Election tests on tokio's paused clock against [`InMemoryLock`].

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep};
use tokio_util::sync::CancellationToken;

use super::testing::InMemoryLock;
use super::*;

const LEASE: Duration = DEFAULT_LEASE_DURATION;
const RETRY: Duration = DEFAULT_RETRY_PERIOD;
const RENEW: Duration = DEFAULT_RENEW_DEADLINE;
/// The longest pause of the acquire loop.
const MAX_RETRY: Duration = Duration::from_millis(4_400);

fn config(lock: InMemoryLock, release_on_cancel: bool) -> LeaderElectionConfig<InMemoryLock> {
    let mut config = LeaderElectionConfig::new(lock.clone());
    config.name = lock.identity().to_owned();
    config.release_on_cancel = release_on_cancel;
    config
}

struct Candidate {
    lock: InMemoryLock,
    elector: LeaderElector<InMemoryLock>,
    cancel: CancellationToken,
    run: Option<JoinHandle<Result<StopReason, LeaderElectionError>>>,
}

impl Candidate {
    fn new(lock: InMemoryLock, release_on_cancel: bool) -> Self {
        let elector = LeaderElector::new(config(lock.clone(), release_on_cancel)).unwrap();
        Self {
            lock,
            elector,
            cancel: CancellationToken::new(),
            run: None,
        }
    }

    fn start(&mut self) {
        self.cancel = CancellationToken::new();
        let elector = self.elector.clone();
        let cancel = self.cancel.clone();
        self.run = Some(tokio::spawn(async move { elector.run(cancel).await }));
    }

    async fn stop(&mut self) -> StopReason {
        self.cancel.cancel();
        self.join().await
    }

    async fn join(&mut self) -> StopReason {
        self.run.take().unwrap().await.unwrap().unwrap()
    }
}

fn candidates(n: usize, release_on_cancel: bool) -> Vec<Candidate> {
    let root = InMemoryLock::new("c0");
    (0..n)
        .map(|i| Candidate::new(root.with_identity(format!("c{i}")), release_on_cancel))
        .collect()
}

fn leaders(candidates: &[Candidate]) -> Vec<usize> {
    (0..candidates.len())
        .filter(|&i| candidates[i].elector.is_leader())
        .collect()
}

/// Waits (on the paused clock) until exactly one candidate leads; returns it.
async fn one_leader(candidates: &[Candidate]) -> usize {
    loop {
        if let [leader] = leaders(candidates)[..] {
            return leader;
        }
        sleep(Duration::from_millis(10)).await;
    }
}

/// Checks, every 10 ms of paused time and at every published state change, that at most one
/// elector believes it leads (`is_leader()`: leading, named in the record, and its lease
/// unexpired by its own clock).
struct InvariantChecker {
    violations: Arc<AtomicUsize>,
    checks_with_leader: Arc<AtomicUsize>,
    task: JoinHandle<()>,
}

impl InvariantChecker {
    fn start(electors: Vec<LeaderElector<InMemoryLock>>) -> Self {
        let violations = Arc::new(AtomicUsize::new(0));
        let checks_with_leader = Arc::new(AtomicUsize::new(0));
        let task = tokio::spawn({
            let violations = Arc::clone(&violations);
            let checks_with_leader = Arc::clone(&checks_with_leader);
            let mut watches: Vec<_> = electors.iter().map(LeaderElector::subscribe).collect();
            async move {
                loop {
                    let believers: Vec<&str> = electors
                        .iter()
                        .filter(|e| e.is_leader())
                        .map(LeaderElector::identity)
                        .collect();
                    if believers.len() > 1 {
                        eprintln!("two leaders at {:?}: {believers:?}", Instant::now());
                        violations.fetch_add(1, Ordering::Relaxed);
                    }
                    if believers.len() == 1 {
                        checks_with_leader.fetch_add(1, Ordering::Relaxed);
                    }
                    let changes = futures::future::select_all(
                        watches.iter_mut().map(|w| Box::pin(w.changed())),
                    );
                    tokio::select! {
                        _ = changes => {}
                        () = sleep(Duration::from_millis(10)) => {}
                    }
                }
            }
        });
        Self {
            violations,
            checks_with_leader,
            task,
        }
    }

    fn finish(self) -> (usize, usize) {
        self.task.abort();
        (
            self.violations.load(Ordering::Relaxed),
            self.checks_with_leader.load(Ordering::Relaxed),
        )
    }
}

#[test]
fn the_defaults_are_valid_and_bad_timings_are_rejected_with_typed_errors() {
    let lock = InMemoryLock::new("a");
    assert!(LeaderElectionConfig::new(lock.clone()).validate().is_ok());

    let mut c = LeaderElectionConfig::new(lock.clone());
    c.retry_period = Duration::ZERO;
    assert_eq!(
        c.validate(),
        Err(LeaderElectionError::ZeroDuration {
            field: "retry_period"
        })
    );

    let mut c = LeaderElectionConfig::new(lock.clone());
    c.lease_duration = RENEW;
    assert!(matches!(
        LeaderElector::new(c),
        Err(LeaderElectionError::LeaseDurationNotAboveRenewDeadline { .. })
    ));

    let mut c = LeaderElectionConfig::new(lock.clone());
    c.renew_deadline = Duration::from_millis(2_400); // exactly 1.2 × 2 s
    assert!(matches!(
        c.validate(),
        Err(LeaderElectionError::RenewDeadlineNotAboveJitteredRetry { .. })
    ));
    c.renew_deadline = Duration::from_millis(2_401);
    assert!(c.validate().is_ok());

    let c = LeaderElectionConfig::new(InMemoryLock::new(""));
    assert_eq!(c.validate(), Err(LeaderElectionError::EmptyIdentity));
}

#[tokio::test(start_paused = true)]
async fn in_memory_lock_versions_guard_every_write() {
    let a = InMemoryLock::new("a");
    let b = a.with_identity("b");
    let record = LeaderElectionRecord {
        holder_identity: "a".into(),
        ..LeaderElectionRecord::default()
    };
    assert!(a.get().await.unwrap().is_none());
    assert!(matches!(
        a.update(&record, &RawVersion::new("1")).await,
        Err(LockError::NotFound { .. })
    ));
    let v1 = a.create(&record).await.unwrap();
    assert!(b.create(&record).await.unwrap_err().is_conflict());
    let v2 = a.touch().unwrap();
    assert_ne!(v1, v2);
    assert!(a.update(&record, &v1).await.unwrap_err().is_conflict());
    let v3 = b.update(&record, &v2).await.unwrap();
    assert_eq!(a.get().await.unwrap(), Some((record, v3)));

    b.set_unavailable(true);
    assert!(matches!(b.get().await, Err(LockError::Backend { .. })));
    assert!(a.get().await.is_ok(), "faults are per candidate");

    a.set_latency(Duration::from_secs(1));
    let start = Instant::now();
    a.get().await.unwrap();
    assert_eq!(start.elapsed(), Duration::from_secs(2));
}

#[tokio::test(start_paused = true)]
async fn a_lone_candidate_creates_the_lease_and_leads_at_once() {
    let mut c = candidates(1, false);
    let mut watch = c[0].elector.subscribe();
    assert_eq!(*watch.borrow_and_update(), LeaderState::default());
    let start = Instant::now();
    c[0].start();
    watch.changed().await.unwrap();
    assert_eq!(
        *watch.borrow_and_update(),
        LeaderState {
            leading: true,
            leader: Some("c0".into())
        }
    );
    assert_eq!(start.elapsed(), Duration::ZERO);
    assert!(c[0].elector.is_leader());
    let (record, _) = c[0].lock.snapshot().unwrap();
    assert_eq!(record.holder_identity, "c0");
    assert_eq!(record.lease_duration, LEASE);
    assert_eq!(record.leader_transitions, 0);

    // It keeps renewing: a minute later it still leads, and the record moved on.
    let (_, version) = c[0].lock.snapshot().unwrap();
    sleep(Duration::from_secs(60)).await;
    assert!(c[0].elector.is_leader());
    assert_ne!(c[0].lock.snapshot().unwrap().1, version);
    assert_eq!(
        c[0].lock.snapshot().unwrap().0.acquire_time,
        record.acquire_time
    );

    assert_eq!(c[0].stop().await, StopReason::Cancelled);
    assert!(!c[0].elector.is_leader());
    assert_eq!(
        *watch.borrow_and_update(),
        LeaderState {
            leading: false,
            leader: Some("c0".into())
        }
    );
    // Without release_on_cancel the record still names it.
    assert_eq!(c[0].lock.snapshot().unwrap().0.holder_identity, "c0");
}

#[tokio::test(start_paused = true)]
async fn three_candidates_elect_exactly_one_leader_and_the_others_observe_it() {
    let mut c = candidates(3, false);
    let checker = InvariantChecker::start(c.iter().map(|c| c.elector.clone()).collect());
    for candidate in &mut c {
        candidate.start();
    }
    let leader = one_leader(&c).await;
    sleep(Duration::from_secs(120)).await;
    assert_eq!(
        leaders(&c),
        vec![leader],
        "leadership stays put while renewed"
    );
    let name = format!("c{leader}");
    for candidate in &c {
        assert_eq!(candidate.elector.leader().as_deref(), Some(name.as_str()));
        assert_eq!(
            candidate.elector.state().leading,
            candidate.elector.is_leader()
        );
    }
    assert_eq!(c[0].lock.snapshot().unwrap().0.leader_transitions, 0);
    let (violations, with_leader) = checker.finish();
    assert_eq!(violations, 0);
    assert!(with_leader > 1_000);
    for candidate in &mut c {
        assert_eq!(candidate.stop().await, StopReason::Cancelled);
    }
}

#[tokio::test(start_paused = true)]
async fn another_candidate_takes_over_a_lease_duration_after_the_leader_stops_renewing() {
    let mut c = candidates(3, false);
    let checker = InvariantChecker::start(c.iter().map(|c| c.elector.clone()).collect());
    for candidate in &mut c {
        candidate.start();
    }
    let old = one_leader(&c).await;
    sleep(Duration::from_secs(30)).await;
    assert_eq!(c[old].stop().await, StopReason::Cancelled);
    let stopped_at = Instant::now();
    assert_eq!(leaders(&c), Vec::<usize>::new());

    let new = one_leader(&c).await;
    let waited = stopped_at.elapsed();
    assert_ne!(new, old);
    // The last renewal came at most one retry period before the stop. A candidate notices it
    // at its next (jittered) attempt, which may fall after the stop, and takes over one lease
    // duration after noticing it, again at its next attempt.
    assert!(waited >= LEASE - RETRY, "took over after {waited:?}");
    assert!(
        waited <= LEASE + 2 * MAX_RETRY,
        "took over after {waited:?}"
    );
    let (record, _) = c[new].lock.snapshot().unwrap();
    assert_eq!(record.holder_identity, format!("c{new}"));
    assert_eq!(record.leader_transitions, 1);
    sleep(Duration::from_secs(30)).await;
    assert_eq!(leaders(&c), vec![new]);
    for (i, candidate) in c.iter().enumerate() {
        if i != old {
            assert_eq!(candidate.elector.leader(), Some(format!("c{new}")));
        }
    }

    let (violations, _) = checker.finish();
    assert_eq!(violations, 0);
    for (i, candidate) in c.iter_mut().enumerate() {
        if i != old {
            candidate.stop().await;
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_partitioned_leader_steps_down_within_the_renew_deadline_before_anyone_takes_over() {
    let mut c = candidates(2, false);
    let checker = InvariantChecker::start(c.iter().map(|c| c.elector.clone()).collect());
    c[0].start();
    one_leader(&c).await;
    c[1].start();
    sleep(Duration::from_secs(10)).await;
    assert_eq!(leaders(&c), vec![0]);

    c[0].lock.set_unavailable(true);
    let cut_at = Instant::now();
    assert_eq!(c[0].join().await, StopReason::LeadershipLost);
    let lost_after = cut_at.elapsed();
    assert!(lost_after <= RETRY + RENEW, "lost after {lost_after:?}");
    assert!(!c[0].elector.is_leader());
    assert!(!c[0].elector.state().leading);

    assert_eq!(one_leader(&c).await, 1);
    assert!(cut_at.elapsed() >= LEASE - RETRY);
    assert!(cut_at.elapsed() > lost_after);
    let (violations, _) = checker.finish();
    assert_eq!(violations, 0);
    c[1].stop().await;
}

#[tokio::test(start_paused = true)]
async fn release_on_cancel_hands_the_lease_over_at_once() {
    let mut c = candidates(3, true);
    let checker = InvariantChecker::start(c.iter().map(|c| c.elector.clone()).collect());
    for candidate in &mut c {
        candidate.start();
    }
    let old = one_leader(&c).await;
    sleep(Duration::from_secs(20)).await;
    assert_eq!(c[old].stop().await, StopReason::Cancelled);
    let stopped_at = Instant::now();
    let (record, _) = c[old].lock.snapshot().unwrap();
    assert_eq!(record.holder_identity, "");
    assert_eq!(record.lease_duration, Duration::from_secs(1));
    assert_eq!(c[old].elector.leader(), None);

    let new = one_leader(&c).await;
    assert_ne!(new, old);
    let waited = stopped_at.elapsed();
    assert!(waited <= MAX_RETRY, "took over after {waited:?}");
    assert_eq!(c[new].lock.snapshot().unwrap().0.leader_transitions, 1);

    let (violations, _) = checker.finish();
    assert_eq!(violations, 0);
}

#[tokio::test(start_paused = true)]
async fn a_released_lease_is_not_released_again_by_a_former_holder() {
    let mut c = candidates(2, true);
    c[0].start();
    one_leader(&c).await;
    c[0].lock.set_unavailable(true);
    assert_eq!(c[0].join().await, StopReason::LeadershipLost);
    c[0].lock.set_unavailable(false);
    c[1].start();
    assert_eq!(one_leader(&c).await, 1);
    // c0 runs again and is cancelled while c1 leads: it must not clear c1's record.
    c[0].start();
    sleep(Duration::from_secs(5)).await;
    assert_eq!(c[0].stop().await, StopReason::Cancelled);
    assert_eq!(c[1].lock.snapshot().unwrap().0.holder_identity, "c1");
    assert!(c[1].elector.is_leader());
}

#[tokio::test(start_paused = true)]
async fn conflicting_writes_by_others_do_not_cost_the_leader_its_lease() {
    let mut c = candidates(2, false);
    c[0].start();
    one_leader(&c).await;
    c[1].start();
    let transitions = c[0].lock.snapshot().unwrap().0.leader_transitions;
    // Another writer bumps the version just before most renewals: the optimistic update
    // conflicts and the leader renews on the slow path.
    for _ in 0..40 {
        c[0].lock.touch().unwrap();
        sleep(Duration::from_millis(1_500)).await;
        assert_eq!(leaders(&c), vec![0]);
    }
    let (record, _) = c[0].lock.snapshot().unwrap();
    assert_eq!(record.holder_identity, "c0");
    assert_eq!(record.leader_transitions, transitions);
    for candidate in &mut c {
        candidate.stop().await;
    }
}

#[tokio::test(start_paused = true)]
async fn racing_creates_and_takeovers_leave_one_winner() {
    // Candidates with different latencies race to create the lease, then to take it over
    // after a release; conflicts make the losers retry.
    let mut c = candidates(4, true);
    for (i, candidate) in c.iter().enumerate() {
        candidate
            .lock
            .set_latency(Duration::from_millis(100 * (i as u64 % 2)));
    }
    let checker = InvariantChecker::start(c.iter().map(|c| c.elector.clone()).collect());
    for candidate in &mut c {
        candidate.start();
    }
    for _ in 0..3 {
        let leader = one_leader(&c).await;
        sleep(Duration::from_secs(5)).await;
        assert_eq!(leaders(&c), vec![leader]);
        c[leader].stop().await;
        c[leader].start();
    }
    one_leader(&c).await;
    let (violations, _) = checker.finish();
    assert_eq!(violations, 0);
    assert_eq!(c[0].lock.snapshot().unwrap().0.leader_transitions, 3);
}

/// A deterministic xorshift, so that the schedule of faults is reproducible.
fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[tokio::test(start_paused = true)]
async fn no_two_leaders_even_when_slow_renewals_race_with_partitions() {
    let mut c = candidates(3, false);
    // Slow links: a renewal spends up to 2 × 1.5 s in flight, so a leader's write lands well
    // after it was sent and its response arrives well after others may have read it.
    let latencies = [1_500, 700, 0];
    for (candidate, latency) in c.iter().zip(latencies) {
        candidate.lock.set_latency(Duration::from_millis(latency));
    }
    let checker = InvariantChecker::start(c.iter().map(|c| c.elector.clone()).collect());
    for candidate in &mut c {
        candidate.start();
    }
    // KINFORMER_LONG_TESTS=1 runs a much longer schedule.
    let rounds = if std::env::var_os("KINFORMER_LONG_TESTS").is_some() {
        2_000
    } else {
        40
    };
    let mut seed = 0x9E37_79B9_7F4A_7C15_u64;
    for _ in 0..rounds {
        // Heal everyone, then often cut the current leader off for a while.
        for candidate in &c {
            candidate.lock.set_unavailable(false);
        }
        if let [leader] = leaders(&c)[..]
            && !xorshift(&mut seed).is_multiple_of(3)
        {
            c[leader].lock.set_unavailable(true);
        }
        sleep(Duration::from_millis(3_000 + xorshift(&mut seed) % 30_000)).await;
        for candidate in &mut c {
            if candidate.run.as_ref().is_some_and(JoinHandle::is_finished) {
                assert_eq!(candidate.join().await, StopReason::LeadershipLost);
                candidate.start();
            }
        }
    }
    let (violations, with_leader) = checker.finish();
    assert_eq!(violations, 0);
    let handovers = c[0].lock.snapshot().unwrap().0.leader_transitions;
    eprintln!("handovers: {handovers}, checks with a leader: {with_leader}");
    assert!(
        handovers >= 5,
        "only {handovers} handovers: the test exercised too little"
    );
    assert!(with_leader > 1_000);
}

#[tokio::test(start_paused = true)]
async fn a_leader_counts_its_lease_from_before_a_slow_write_was_sent() {
    // c0's requests and responses each take 3 s: a renewal sent at s lands at s + 3 and its
    // response arrives at s + 6. c1 polls fast, reads the renewal right after s + 3 and takes
    // over one lease after that. c0 renews every 2 s with a 12 s deadline, so only counting
    // its lease from s (not from s + 6, when it learnt of its success) keeps it from still
    // believing it leads when c1 takes over. Cut c0 off at many points of its cycle.
    // With `touch`, another writer bumps the version first: c0's optimistic renewal conflicts,
    // it re-reads the lease (still naming it) and must not count its lease from that read.
    for (touch, offset_ms) in [false, true]
        .into_iter()
        .flat_map(|touch| (0..8_000).step_by(500).map(move |offset| (touch, offset)))
    {
        let c0 = InMemoryLock::new("c0");
        c0.set_latency(Duration::from_secs(3));
        let mut slow = config(c0.clone(), false);
        slow.renew_deadline = Duration::from_secs(12);
        let mut fast = config(c0.with_identity("c1"), false);
        fast.renew_deadline = Duration::from_secs(12);
        fast.retry_period = Duration::from_millis(200);
        let electors = [
            LeaderElector::new(slow).unwrap(),
            LeaderElector::new(fast).unwrap(),
        ];
        let checker = InvariantChecker::start(electors.to_vec());
        let cancel = CancellationToken::new();
        let first = tokio::spawn({
            let (e, cancel) = (electors[0].clone(), cancel.clone());
            async move { e.run(cancel).await }
        });
        electors[0]
            .subscribe()
            .wait_for(|s| s.leading)
            .await
            .unwrap();
        let second = tokio::spawn({
            let (e, cancel) = (electors[1].clone(), cancel.clone());
            async move { e.run(cancel).await }
        });
        sleep(Duration::from_secs(20)).await;
        if touch {
            c0.touch().unwrap();
        }
        sleep(Duration::from_millis(offset_ms)).await;
        c0.set_unavailable(true);
        electors[1]
            .subscribe()
            .wait_for(|s| s.leading)
            .await
            .unwrap();
        assert_eq!(first.await.unwrap(), Ok(StopReason::LeadershipLost));
        let (violations, with_leader) = checker.finish();
        assert_eq!(
            violations, 0,
            "touch: {touch}, cut off after {offset_ms} ms"
        );
        assert!(with_leader > 1_000);
        cancel.cancel();
        assert_eq!(second.await.unwrap(), Ok(StopReason::Cancelled));
    }
}

#[tokio::test(start_paused = true)]
async fn work_runs_only_while_leading_and_stops_when_leadership_is_lost() {
    let c = candidates(2, false);
    let lock = c[0].lock.clone();
    c[1].lock
        .create(&LeaderElectionRecord {
            holder_identity: "c1".into(),
            lease_duration: LEASE,
            ..LeaderElectionRecord::default()
        })
        .await
        .unwrap();
    let started = Instant::now();
    let elector = c[0].elector.clone();
    let run = tokio::spawn(async move {
        elector
            .run_while_leading(CancellationToken::new(), |leading| async move {
                let began = Instant::now();
                leading.cancelled().await;
                (began, Instant::now())
            })
            .await
    });
    // c1 never renews; c0 takes over after the lease, then gets partitioned.
    sleep(LEASE + MAX_RETRY + Duration::from_secs(5)).await;
    lock.set_unavailable(true);
    let cut = Instant::now();
    let stopped = run.await.unwrap().unwrap();
    assert_eq!(stopped.reason, StopReason::LeadershipLost);
    assert!(!stopped.released);
    let (began, ended) = stopped.output.unwrap();
    assert!(
        began - started >= LEASE,
        "work began before the lease was acquired"
    );
    assert!(ended > cut && ended - cut <= RETRY + RENEW);
    assert!(!c[0].elector.is_leader());
}

#[tokio::test(start_paused = true)]
async fn finished_work_steps_down_and_releases_so_another_leads() {
    let c = candidates(2, true);
    let other = c[1].elector.clone();
    let other_cancel = CancellationToken::new();
    let other_run = tokio::spawn({
        let cancel = other_cancel.clone();
        async move { other.run(cancel).await }
    });
    sleep(Duration::from_millis(1)).await;
    assert!(c[1].elector.is_leader());
    other_cancel.cancel();
    assert_eq!(other_run.await.unwrap(), Ok(StopReason::Cancelled));

    let stopped = c[0]
        .elector
        .run_while_leading(CancellationToken::new(), |_leading| async {
            sleep(Duration::from_secs(7)).await;
            42
        })
        .await
        .unwrap();
    assert_eq!(stopped.reason, StopReason::WorkFinished);
    assert_eq!(stopped.output, Some(42));
    assert!(stopped.released);
    assert!(!c[0].elector.is_leader());
    assert_eq!(c[0].lock.snapshot().unwrap().0.holder_identity, "");
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_leader_keeps_renewing_until_its_work_has_wound_down() {
    let c = candidates(2, true);
    let cancel = CancellationToken::new();
    let elector = c[0].elector.clone();
    let run = tokio::spawn({
        let cancel = cancel.clone();
        async move {
            elector
                .run_while_leading(cancel, |leading| async move {
                    leading.cancelled().await;
                    // A slow shutdown, longer than the lease.
                    sleep(LEASE * 2).await;
                })
                .await
        }
    });
    sleep(Duration::from_secs(1)).await;
    let mut other = Candidate::new(c[1].lock.clone(), true);
    other.start();
    cancel.cancel();
    sleep(LEASE + Duration::from_secs(5)).await;
    assert!(
        c[0].elector.is_leader(),
        "still renewing while the work winds down"
    );
    assert!(!other.elector.is_leader());
    let stopped = run.await.unwrap().unwrap();
    assert_eq!(stopped.reason, StopReason::Cancelled);
    assert!(stopped.released);
    other
        .elector
        .subscribe()
        .wait_for(|s| s.leading)
        .await
        .unwrap();
    assert_eq!(other.stop().await, StopReason::Cancelled);
}

#[tokio::test(start_paused = true)]
async fn a_second_concurrent_run_is_refused_and_a_dropped_run_stops_leading() {
    let c = candidates(1, false);
    let elector = c[0].elector.clone();
    let run = tokio::spawn(async move { elector.run(CancellationToken::new()).await });
    sleep(Duration::from_millis(1)).await;
    assert!(c[0].elector.is_leader());
    assert!(matches!(
        c[0].elector.run(CancellationToken::new()).await,
        Err(LeaderElectionError::AlreadyRunning { .. })
    ));
    run.abort();
    assert!(run.await.unwrap_err().is_cancelled());
    assert!(!c[0].elector.is_leader());
    assert!(!c[0].elector.state().leading);
    // It may run again afterwards, and re-acquires its own unexpired lease at once.
    let elector = c[0].elector.clone();
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let cancel = cancel.clone();
        async move { elector.run(cancel).await }
    });
    sleep(Duration::from_millis(1)).await;
    assert!(c[0].elector.is_leader());
    assert_eq!(c[0].lock.snapshot().unwrap().0.leader_transitions, 0);
    cancel.cancel();
    assert_eq!(run.await.unwrap(), Ok(StopReason::Cancelled));
}

#[test]
fn handles_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<LeaderElector<InMemoryLock>>();
    assert_send_sync::<InMemoryLock>();
    assert_send_sync::<LockError>();
    #[cfg(feature = "kube")]
    assert_send_sync::<LeaseLock>();
}

#[tokio::test(start_paused = true)]
async fn a_shared_lock_can_be_inspected_while_an_elector_uses_it() {
    let lock = Arc::new(InMemoryLock::new("a"));
    let elector = LeaderElector::new(LeaderElectionConfig::new(Arc::clone(&lock))).unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (elector, cancel) = (elector.clone(), cancel.clone());
        async move { elector.run(cancel).await }
    });
    elector.subscribe().wait_for(|s| s.leading).await.unwrap();
    let (record, _) = lock.get().await.unwrap().unwrap();
    assert_eq!(Some(record), elector.observed_record());
    cancel.cancel();
    assert_eq!(run.await.unwrap(), Ok(StopReason::Cancelled));
}

#[tokio::test(start_paused = true)]
async fn the_health_check_fails_only_when_a_leader_stopped_being_polled_past_its_lease() {
    let c = candidates(2, false);
    let tolerance = Duration::from_secs(5);
    assert_eq!(c[0].elector.check(tolerance), Ok(()));
    let mut run = Box::pin(c[0].elector.run(CancellationToken::new()));
    // One poll acquires the lease; then nobody polls the run (a stuck executor).
    assert!(futures::poll!(run.as_mut()).is_pending());
    assert!(c[0].elector.is_leader());
    tokio::time::advance(LEASE + tolerance).await;
    assert_eq!(c[0].elector.check(tolerance), Ok(()));
    assert!(
        !c[0].elector.is_leader(),
        "its lease expired by its own clock"
    );
    tokio::time::advance(Duration::from_secs(1)).await;
    assert!(matches!(
        c[0].elector.check(tolerance),
        Err(LeaderElectionError::LeaseOverdue { overdue, .. }) if overdue > tolerance
    ));
    // A follower is healthy however long ago it last saw the lease change.
    let follower = c[1].elector.clone();
    let cancel = CancellationToken::new();
    let follow = tokio::spawn({
        let cancel = cancel.clone();
        async move { follower.run(cancel).await }
    });
    sleep(Duration::from_millis(1)).await;
    assert_eq!(c[1].elector.check(tolerance), Ok(()));
    drop(run);
    assert_eq!(c[0].elector.check(tolerance), Ok(()));
    cancel.cancel();
    follow.await.unwrap().unwrap();
}

/// A store that treats a write changing nothing but the renew time as a no-op and keeps the
/// version, as a server may for an unchanged object.
#[derive(Clone, Debug)]
struct NoOpRenewals(InMemoryLock);

impl Lock for NoOpRenewals {
    async fn get(&self) -> Result<Option<(LeaderElectionRecord, RawVersion)>, LockError> {
        self.0.get().await
    }

    async fn create(&self, record: &LeaderElectionRecord) -> Result<RawVersion, LockError> {
        self.0.create(record).await
    }

    async fn update(
        &self,
        record: &LeaderElectionRecord,
        expected: &RawVersion,
    ) -> Result<RawVersion, LockError> {
        if let Some((stored, version)) = self.0.snapshot() {
            let same = LeaderElectionRecord {
                renew_time: stored.renew_time,
                ..record.clone()
            };
            if &version == expected && same == stored {
                return Ok(version);
            }
        }
        self.0.update(record, expected).await
    }

    fn identity(&self) -> &str {
        self.0.identity()
    }

    fn describe(&self) -> String {
        self.0.describe()
    }
}

#[tokio::test(start_paused = true)]
async fn renewals_that_leave_the_version_unchanged_do_not_extend_the_lease() {
    // The others never see the version move, so they take over one lease after they first saw
    // it; the leader must have stopped believing by then.
    let a = InMemoryLock::new("a");
    let electors = [
        LeaderElector::new(LeaderElectionConfig::new(NoOpRenewals(a.clone()))).unwrap(),
        LeaderElector::new(LeaderElectionConfig::new(NoOpRenewals(
            a.with_identity("b"),
        )))
        .unwrap(),
    ];
    let violations = Arc::new(AtomicUsize::new(0));
    let checker = tokio::spawn({
        let (electors, violations) = (electors.clone(), Arc::clone(&violations));
        async move {
            loop {
                if electors.iter().all(LeaderElector::is_leader) {
                    violations.fetch_add(1, Ordering::Relaxed);
                }
                sleep(Duration::from_millis(10)).await;
            }
        }
    });
    let started = Instant::now();
    let runs = electors
        .clone()
        .map(|e| tokio::spawn(async move { e.run(CancellationToken::new()).await }));
    sleep(Duration::from_millis(1)).await;
    let first = usize::from(electors[1].is_leader());
    assert!(electors[first].is_leader());
    let [run_a, run_b] = runs;
    let first_run = if first == 0 { run_a } else { run_b };
    assert_eq!(first_run.await.unwrap(), Ok(StopReason::LeadershipLost));
    let lost_after = started.elapsed();
    assert!(lost_after <= LEASE + RETRY, "lost after {lost_after:?}");
    electors[1 - first]
        .subscribe()
        .wait_for(|s| s.leading)
        .await
        .unwrap();
    sleep(Duration::from_secs(5)).await;
    checker.abort();
    assert_eq!(violations.load(Ordering::Relaxed), 0);
}
