//! Properties of sharding over random membership histories, on tokio's paused clock:
//! no key ever has two owners, once leases settle every key has exactly one owner among the
//! live replicas (its rendezvous owner), and a membership change moves only about `1/N` of the
//! keys, all of them to or from the replica that changed.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use kinformer::sharding::testing::InMemoryLeases;
use kinformer::sharding::{Membership, ShardingConfig, rendezvous_owner};
use parking_lot::Mutex;
use proptest::prelude::*;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const REPLICAS: usize = 5;

fn keys() -> Vec<String> {
    (0..60).map(|i| format!("ns-{}/obj-{i}", i % 4)).collect()
}

#[derive(Debug, Clone)]
enum Step {
    Join(usize),
    Stop(usize),
    Kill(usize),
    Partition(usize),
    Heal(usize),
    Wait(u64),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (0..REPLICAS).prop_map(Step::Join),
        1 => (0..REPLICAS).prop_map(Step::Stop),
        1 => (0..REPLICAS).prop_map(Step::Kill),
        1 => (0..REPLICAS).prop_map(Step::Partition),
        1 => (0..REPLICAS).prop_map(Step::Heal),
        3 => (1u64..40).prop_map(Step::Wait),
    ]
}

struct Slot {
    membership: Membership<InMemoryLeases>,
    leases: InMemoryLeases,
    cancel: CancellationToken,
    run: JoinHandle<()>,
}

fn start(store: &InMemoryLeases, i: usize) -> Slot {
    let leases = store.replica_view();
    let membership =
        Membership::new(ShardingConfig::new(format!("r{i}"), "ns"), leases.clone()).unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (m, c) = (membership.clone(), cancel.clone());
        async move {
            let _ = m.run(c).await;
        }
    });
    Slot {
        membership,
        leases,
        cancel,
        run,
    }
}

/// Runs `history`; returns the first double ownership seen, and the settled assignment
/// problems at the end.
fn run_history(history: &[Step]) -> (Option<String>, Vec<String>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(async {
        let store = InMemoryLeases::new();
        let slots: Arc<Mutex<Vec<Option<Slot>>>> =
            Arc::new(Mutex::new((0..REPLICAS).map(|_| None).collect()));
        let violation = Arc::new(Mutex::new(None::<String>));
        let monitor = tokio::spawn({
            let (slots, violation) = (slots.clone(), violation.clone());
            async move {
                let keys = keys();
                loop {
                    {
                        let slots = slots.lock();
                        for key in &keys {
                            let owners: Vec<&str> = slots
                                .iter()
                                .flatten()
                                .filter(|s| s.membership.owns(key))
                                .map(|s| s.membership.identity())
                                .collect();
                            if owners.len() > 1 {
                                violation
                                    .lock()
                                    .get_or_insert_with(|| format!("{key}: {owners:?}"));
                            }
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
            }
        });
        for step in history {
            match *step {
                Step::Join(i) => {
                    let mut slots = slots.lock();
                    if slots[i].is_none() {
                        slots[i] = Some(start(&store, i));
                    }
                }
                Step::Stop(i) => {
                    let slot = slots.lock()[i].take();
                    if let Some(slot) = slot {
                        slot.cancel.cancel();
                        slot.run.await.unwrap();
                    }
                }
                Step::Kill(i) => {
                    if let Some(slot) = slots.lock()[i].take() {
                        slot.run.abort();
                    }
                }
                Step::Partition(i) | Step::Heal(i) => {
                    if let Some(slot) = &slots.lock()[i] {
                        slot.leases
                            .set_unavailable(matches!(step, Step::Partition(_)));
                    }
                }
                Step::Wait(secs) => tokio::time::sleep(Duration::from_secs(secs)).await,
            }
        }
        // Settle: heal everything and wait well past the lease, join delay and renew deadline.
        for slot in slots.lock().iter().flatten() {
            slot.leases.set_unavailable(false);
        }
        tokio::time::sleep(Duration::from_secs(60)).await;
        let mut problems = Vec::new();
        {
            let slots = slots.lock();
            let live: Vec<String> = slots
                .iter()
                .flatten()
                .map(|s| s.membership.identity().to_owned())
                .collect();
            for key in keys() {
                let owners: Vec<&str> = slots
                    .iter()
                    .flatten()
                    .filter(|s| s.membership.owns(&key))
                    .map(|s| s.membership.identity())
                    .collect();
                let expected = rendezvous_owner(live.iter().map(String::as_str), &key);
                if owners.len() != usize::from(expected.is_some())
                    || owners.first().copied() != expected
                {
                    problems.push(format!(
                        "{key}: owners {owners:?}, expected {expected:?} of {live:?}"
                    ));
                }
            }
        }
        monitor.abort();
        let violation = violation.lock().clone();
        (violation, problems)
    })
}

fn cases() -> u32 {
    if std::env::var_os("KINFORMER_LONG_TESTS").is_some() {
        1_000
    } else {
        48
    }
}

proptest! {
    // KINFORMER_LONG_TESTS=1 runs many more histories.
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn random_membership_histories_never_give_a_key_two_owners_and_settle_on_one(
        history in proptest::collection::vec(step(), 1..12)
    ) {
        let (violation, problems) = run_history(&history);
        prop_assert!(violation.is_none(), "two owners: {violation:?}");
        prop_assert!(problems.is_empty(), "after settling: {problems:?}");
    }

    #[test]
    fn a_membership_change_moves_about_one_nth_of_the_keys_all_to_or_from_the_changed_member(
        members in proptest::collection::btree_set("[a-z]{1,8}", 1..8),
        joiner in "[a-z]{1,8}",
    ) {
        prop_assume!(!members.contains(&joiner));
        let keys: Vec<String> = (0..2_000).map(|i| format!("ns/obj-{i}")).collect();
        let before: Vec<&str> = members.iter().map(String::as_str).collect();
        let mut after_set: BTreeSet<&str> = before.iter().copied().collect();
        after_set.insert(joiner.as_str());
        let after: Vec<&str> = after_set.into_iter().collect();
        let mut moved = 0usize;
        for key in &keys {
            let (a, b) = (rendezvous_owner(before.iter().copied(), key), rendezvous_owner(after.iter().copied(), key));
            if a != b {
                prop_assert_eq!(b, Some(joiner.as_str()), "a join moves keys only to the joiner");
                moved += 1;
            }
            // The reverse change (the joiner leaving) moves exactly the same keys back.
            prop_assert_eq!(b != Some(joiner.as_str()), a == b);
        }
        let n = after.len() as f64;
        let fraction = moved as f64 / keys.len() as f64;
        // Expected 1/n; binomial spread over 2,000 keys stays well within ±0.06.
        prop_assert!((fraction - 1.0 / n).abs() < 0.06, "moved {fraction:.3} of the keys with {n} members");
    }
}
