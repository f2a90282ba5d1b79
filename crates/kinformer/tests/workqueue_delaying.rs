//! The delaying and rate-limiting queues on the paused clock.

#![allow(clippy::unwrap_used)] // test helpers, like tests, fail loudly

use std::time::Duration;

use kinformer::workqueue::{
    DelayingQueue, ItemExponentialFailure, RateLimitingQueue, default_controller_rate_limiter,
};
use tokio::time::Instant;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Gets `n` items, recording when each arrived relative to `start`.
async fn get_timed<T: Clone + Eq + std::hash::Hash + Send + Sync + 'static>(
    q: &DelayingQueue<T>,
    start: Instant,
    n: usize,
) -> Vec<(T, Duration)> {
    let mut out = Vec::new();
    for _ in 0..n {
        let item = q.get().await.unwrap();
        out.push((item.clone(), start.elapsed()));
        q.done(&item);
    }
    out
}

#[tokio::test(start_paused = true)]
async fn items_become_ready_in_ready_time_order_at_exact_times() {
    let q = DelayingQueue::new();
    let start = Instant::now();
    q.add_after("c", ms(30));
    q.add_after("a", ms(10));
    q.add_after("d", ms(30)); // same time as c: added later, comes later
    q.add_after("b", ms(20));
    q.add_after("now", Duration::ZERO);
    assert_eq!(q.len(), 1);
    assert_eq!(q.num_waiting(), 4);
    let got = get_timed(&q, start, 5).await;
    assert_eq!(
        got,
        [
            ("now", ms(0)),
            ("a", ms(10)),
            ("b", ms(20)),
            ("c", ms(30)),
            ("d", ms(30))
        ]
    );
    assert_eq!(q.num_waiting(), 0);
}

#[tokio::test(start_paused = true)]
async fn earlier_ready_time_wins_and_later_one_is_ignored() {
    let q = DelayingQueue::new();
    let start = Instant::now();
    q.add_after("x", ms(100));
    q.add_after("x", ms(40)); // moves earlier
    q.add_after("x", ms(70)); // ignored
    q.add_after("y", ms(50));
    q.add_after("y", ms(90)); // ignored
    assert_eq!(q.num_waiting(), 2);
    let got = get_timed(&q, start, 2).await;
    assert_eq!(got, [("x", ms(40)), ("y", ms(50))]);
    // Nothing else turns up later from the superseded entries.
    tokio::time::sleep(ms(200)).await;
    assert_eq!(q.len(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_ready_item_already_queued_is_not_duplicated() {
    let q = DelayingQueue::new();
    q.add(1);
    q.add_after(1, ms(5));
    tokio::time::sleep(ms(10)).await;
    assert_eq!(q.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn adding_an_earlier_item_wakes_a_sleeping_timer() {
    let q = DelayingQueue::new();
    let start = Instant::now();
    q.add_after(1, Duration::from_secs(60));
    tokio::time::sleep(ms(10)).await; // the timer now sleeps until 60 s
    q.add_after(2, ms(5));
    let got = get_timed(&q, start, 2).await;
    assert_eq!(got, [(2, ms(15)), (1, Duration::from_secs(60))]);
}

#[tokio::test(start_paused = true)]
async fn add_after_during_shutdown_is_ignored() {
    let q = DelayingQueue::new();
    q.shut_down();
    q.add_after(1, Duration::ZERO);
    q.add_after(2, ms(1));
    assert_eq!(q.num_waiting(), 0);
    assert_eq!(q.get().await, None);
}

#[tokio::test(start_paused = true)]
async fn rate_limited_adds_follow_the_limiter_and_forget_resets() {
    let limiter = ItemExponentialFailure::new(ms(1), ms(8)).unwrap();
    let q = RateLimitingQueue::new(limiter);
    let start = Instant::now();
    let mut times = Vec::new();
    for _ in 0..5 {
        let before = start.elapsed();
        q.add_rate_limited("k");
        let item = q.get().await.unwrap();
        times.push(start.elapsed() - before);
        q.done(&item);
    }
    assert_eq!(times, [ms(1), ms(2), ms(4), ms(8), ms(8)]);
    assert_eq!(q.num_requeues(&"k"), 5);
    q.forget(&"k");
    assert_eq!(q.num_requeues(&"k"), 0);
    let before = start.elapsed();
    q.add_rate_limited("k");
    q.get().await.unwrap();
    assert_eq!(start.elapsed() - before, ms(1));
}

#[tokio::test(start_paused = true)]
async fn default_controller_limiter_backs_off_exponentially_per_item() {
    let q = RateLimitingQueue::new(default_controller_rate_limiter());
    let start = Instant::now();
    for expected in [5, 10, 20, 40] {
        let before = start.elapsed();
        q.add_rate_limited(7u32);
        let item = q.get().await.unwrap();
        assert_eq!(start.elapsed() - before, ms(expected));
        q.done(&item);
    }
}

/// Lets spawned tasks run until they park.
async fn settle() {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test(start_paused = true)]
async fn timer_task_ends_on_shutdown_and_when_every_handle_is_dropped() {
    let metrics = tokio::runtime::Handle::current().metrics();
    let base = metrics.num_alive_tasks();

    let q = DelayingQueue::new();
    q.add_after(1, Duration::from_secs(10));
    settle().await;
    assert_eq!(metrics.num_alive_tasks(), base + 1, "one timer task");
    q.add_after(2, Duration::from_secs(5));
    assert_eq!(metrics.num_alive_tasks(), base + 1, "still one timer task");
    q.shut_down();
    settle().await;
    assert_eq!(metrics.num_alive_tasks(), base);

    let q = DelayingQueue::new();
    q.add_after(1, Duration::from_secs(10));
    let clone = q.clone();
    drop(q);
    settle().await;
    assert_eq!(metrics.num_alive_tasks(), base + 1, "a handle is left");
    drop(clone);
    settle().await;
    assert_eq!(metrics.num_alive_tasks(), base);
}

#[tokio::test(start_paused = true)]
async fn random_delayed_adds_become_ready_at_their_earliest_time() {
    use std::collections::HashMap;

    use futures::FutureExt;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    for seed in 0..30u64 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let q: DelayingQueue<u8> = DelayingQueue::new();
        let start = Instant::now();
        // Model: the earliest ready time (ms since start) of every item added so far.
        let mut ready: HashMap<u8, u64> = HashMap::new();
        for t in 0..100u64 {
            tokio::time::sleep_until(start + ms(t)).await;
            let sure = ready.values().filter(|&&r| r < t).count();
            let maybe = ready.values().filter(|&&r| r <= t).count();
            let len = q.len();
            assert!(
                (sure..=maybe).contains(&len),
                "seed {seed} t {t}: {len} queued, expected {sure}..={maybe}"
            );
            for _ in 0..rng.random_range(0..3) {
                let item = rng.random_range(0..20u8);
                let delay = rng.random_range(0..40u64);
                q.add_after(item, ms(delay));
                let r = ready.entry(item).or_insert(t + delay);
                *r = (*r).min(t + delay);
            }
        }
        tokio::time::sleep(ms(100)).await;
        // Everything is queued, in ready-time order.
        let mut got = Vec::new();
        while let Some(Some(item)) = q.get().now_or_never() {
            got.push(ready[&item]);
            q.done(&item);
        }
        assert_eq!(got.len(), ready.len(), "seed {seed}");
        assert!(
            got.is_sorted(),
            "seed {seed}: ready times out of order {got:?}"
        );
    }
}
