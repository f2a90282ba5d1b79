//! The basic queue under concurrency: exclusivity, shutdown and drain.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use kinformer::workqueue::Queue;
use parking_lot::Mutex;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Detects an item handed to two workers at once.
#[derive(Default)]
struct InFlight {
    items: Mutex<HashSet<u32>>,
    violations: AtomicUsize,
}

impl InFlight {
    fn start(&self, item: u32) {
        if !self.items.lock().insert(item) {
            self.violations.fetch_add(1, Ordering::SeqCst);
        }
    }
    fn finish(&self, item: u32) {
        self.items.lock().remove(&item);
    }
}

/// Waits for the producers, shuts the queue down with drain, then waits for the workers.
async fn finish<T>(
    queue: &Queue<T>,
    producers: Vec<tokio::task::JoinHandle<()>>,
    workers: Vec<tokio::task::JoinHandle<()>>,
) where
    T: Clone + Eq + std::hash::Hash + Send + Sync + 'static,
{
    for p in producers {
        if let Err(e) = p.await {
            panic!("a producer failed: {e}");
        }
    }
    queue.shut_down_with_drain().await;
    for w in workers {
        if let Err(e) = w.await {
            panic!("a worker failed: {e}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn never_hands_one_item_to_two_workers_at_once() {
    const ITEMS: usize = 100_000;
    const KEYS: u32 = 500;
    let queue: Queue<u32> = Queue::new();
    let in_flight = Arc::new(InFlight::default());
    let processed = Arc::new(Mutex::new(HashSet::new()));
    let gets = Arc::new(AtomicUsize::new(0));

    let mut workers = Vec::new();
    for w in 0..4u64 {
        let (queue, in_flight, processed, gets) = (
            queue.clone(),
            in_flight.clone(),
            processed.clone(),
            gets.clone(),
        );
        workers.push(tokio::spawn(async move {
            let mut rng = SmallRng::seed_from_u64(w);
            while let Some(item) = queue.get().await {
                in_flight.start(item);
                gets.fetch_add(1, Ordering::Relaxed);
                // Re-add some items while processing them, and give other workers a chance
                // to (wrongly) pick the same item up.
                if rng.random_ratio(1, 4) {
                    queue.add(item);
                }
                if rng.random_ratio(1, 8) {
                    tokio::task::yield_now().await;
                }
                processed.lock().insert(item);
                in_flight.finish(item);
                queue.done(&item);
            }
        }));
    }

    let mut producers = Vec::new();
    for p in 0..4u64 {
        let queue = queue.clone();
        producers.push(tokio::spawn(async move {
            let mut rng = SmallRng::seed_from_u64(100 + p);
            for i in 0..ITEMS / 4 {
                queue.add(rng.random_range(0..KEYS));
                if i % 64 == 0 {
                    tokio::task::yield_now().await;
                }
            }
        }));
    }
    finish(&queue, producers, workers).await;

    assert_eq!(in_flight.violations.load(Ordering::SeqCst), 0);
    assert!(queue.is_empty());
    assert!(gets.load(Ordering::Relaxed) >= KEYS as usize);
    assert_eq!(
        processed.lock().len(),
        KEYS as usize,
        "every key was processed"
    );
}

/// An add is never lost: whatever other threads do, an item added is processed by a worker
/// that took it after the add began (the add found it queued, or it was queued again).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_add_is_followed_by_a_processing_that_starts_after_it() {
    const KEYS: usize = 200;
    const ADDS: usize = 40_000;
    let queue: Queue<usize> = Queue::new();
    // One clock for both sides: an add takes its tick before calling `add`, a worker takes
    // one after `get` returned.
    let clock = Arc::new(AtomicUsize::new(1));
    let last_add: Arc<Vec<AtomicUsize>> =
        Arc::new((0..KEYS).map(|_| AtomicUsize::new(0)).collect());
    let last_start: Arc<Vec<AtomicUsize>> =
        Arc::new((0..KEYS).map(|_| AtomicUsize::new(0)).collect());

    let mut workers = Vec::new();
    for w in 0..4u64 {
        let (queue, clock, last_start) = (queue.clone(), clock.clone(), last_start.clone());
        workers.push(tokio::spawn(async move {
            let mut rng = SmallRng::seed_from_u64(w);
            while let Some(k) = queue.get().await {
                let tick = clock.fetch_add(1, Ordering::SeqCst);
                last_start[k].fetch_max(tick, Ordering::SeqCst);
                if rng.random_ratio(1, 4) {
                    tokio::task::yield_now().await;
                }
                queue.done(&k);
            }
        }));
    }
    let mut producers = Vec::new();
    for p in 0..4u64 {
        let (queue, clock, last_add) = (queue.clone(), clock.clone(), last_add.clone());
        producers.push(tokio::spawn(async move {
            let mut rng = SmallRng::seed_from_u64(100 + p);
            for i in 0..ADDS / 4 {
                let k = rng.random_range(0..KEYS);
                let tick = clock.fetch_add(1, Ordering::SeqCst);
                last_add[k].fetch_max(tick, Ordering::SeqCst);
                queue.add(k);
                if i % 32 == 0 {
                    tokio::task::yield_now().await;
                }
            }
        }));
    }
    // Drained, nothing is processing, but items added again may still be queued: the workers
    // hand them out before they see the end.
    finish(&queue, producers, workers).await;
    for k in 0..KEYS {
        let (added, started) = (
            last_add[k].load(Ordering::SeqCst),
            last_start[k].load(Ordering::SeqCst),
        );
        assert!(
            added == 0 || started > added,
            "key {k}: last added at tick {added}, last processing started at {started}"
        );
    }
}

#[tokio::test]
async fn shutdown_hands_out_remaining_items_then_none_to_every_worker() {
    let queue = Queue::new();
    for i in 0..3 {
        queue.add(i);
    }
    let waiting = {
        let q: Queue<i32> = Queue::new();
        let w = tokio::spawn({
            let q = q.clone();
            async move { q.get().await }
        });
        tokio::task::yield_now().await;
        q.shut_down();
        w
    };
    assert_eq!(
        waiting.await.unwrap(),
        None,
        "a blocked get wakes on shutdown"
    );

    queue.shut_down();
    let mut got = Vec::new();
    while let Some(i) = queue.get().await {
        queue.done(&i);
        got.push(i);
    }
    assert_eq!(got, [0, 1, 2]);
    assert_eq!(queue.get().await, None);
}

#[tokio::test(start_paused = true)]
async fn shut_down_with_drain_waits_for_items_in_flight() {
    let queue = Queue::new();
    queue.add("a");
    let item = queue.get().await.unwrap();

    let drain = tokio::spawn({
        let q = queue.clone();
        async move { q.shut_down_with_drain().await }
    });
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(
        !drain.is_finished(),
        "drain returned with an item in flight"
    );
    assert!(queue.is_shutting_down());
    queue.add("b");
    assert_eq!(queue.len(), 0, "adds are ignored while draining");

    queue.done(&item);
    tokio::time::timeout(Duration::from_secs(1), drain)
        .await
        .expect("drain finishes once nothing is processing")
        .unwrap();
    assert_eq!(queue.get().await, None);
}

#[tokio::test(start_paused = true)]
async fn shut_down_with_drain_returns_at_once_when_idle_and_shut_down_cancels_the_wait() {
    let idle: Queue<u8> = Queue::new();
    tokio::time::timeout(Duration::from_millis(1), idle.shut_down_with_drain())
        .await
        .unwrap();

    let queue = Queue::new();
    queue.add(1u8);
    let _item = queue.get().await.unwrap();
    let drain = tokio::spawn({
        let q = queue.clone();
        async move { q.shut_down_with_drain().await }
    });
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert!(!drain.is_finished());
    queue.shut_down();
    tokio::time::timeout(Duration::from_millis(1), drain)
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shut_down_with_drain_loses_no_item() {
    const N: u32 = 20_000;
    let queue = Queue::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut workers = Vec::new();
    for _ in 0..3 {
        let (q, seen) = (queue.clone(), seen.clone());
        workers.push(tokio::spawn(async move {
            while let Some(i) = q.get().await {
                if i % 7 == 0 {
                    tokio::task::yield_now().await;
                }
                seen.lock().push(i);
                q.done(&i);
            }
        }));
    }
    for i in 0..N {
        queue.add(i);
    }
    queue.shut_down_with_drain().await;
    for w in workers {
        w.await.unwrap();
    }
    let mut seen = std::mem::take(&mut *seen.lock());
    seen.sort_unstable();
    assert_eq!(seen, (0..N).collect::<Vec<_>>());
}

#[tokio::test]
async fn items_come_out_in_add_order() {
    let queue = Queue::new();
    for i in [5, 3, 9, 3, 1, 5] {
        queue.add(i);
    }
    let mut got = Vec::new();
    queue.shut_down();
    while let Some(i) = queue.get().await {
        got.push(i);
        queue.done(&i);
    }
    assert_eq!(got, [5, 3, 9, 1]);
}

#[tokio::test]
async fn cancelled_gets_lose_no_items() {
    let queue: Queue<u32> = Queue::new();
    let mut received = Vec::new();
    for i in 0..200 {
        // A get that is abandoned immediately (or after the item arrives) must not swallow it.
        let _ = tokio::time::timeout(Duration::ZERO, queue.get()).await;
        queue.add(i);
        tokio::select! {
            biased;
            got = queue.get() => {
                let item = got.unwrap();
                queue.done(&item);
                received.push(item);
            }
            () = std::future::ready(()) => {}
        }
    }
    queue.shut_down();
    while let Some(i) = queue.get().await {
        queue.done(&i);
        received.push(i);
    }
    received.sort_unstable();
    assert_eq!(received, (0..200).collect::<Vec<_>>());
}

#[test]
fn public_handles_and_their_futures_are_send_and_sync() {
    use kinformer::workqueue::{DelayingQueue, RateLimitingQueue, default_controller_rate_limiter};
    fn handle<X: Send + Sync + Clone + 'static>() {}
    fn future<F: std::future::Future + Send>(_: F) {}
    handle::<Queue<String>>();
    handle::<DelayingQueue<String>>();
    handle::<RateLimitingQueue<String>>();
    let q: Queue<String> = Queue::new();
    future(q.get());
    future(q.shut_down_with_drain());
    let r: RateLimitingQueue<String> = RateLimitingQueue::new(default_controller_rate_limiter());
    future(r.get());
}

#[tokio::test(start_paused = true)]
async fn drain_ends_when_the_last_item_is_done_even_if_it_was_added_again() {
    let queue = Queue::new();
    queue.add(1);
    let item = queue.get().await.unwrap();
    queue.add(1); // dirty while processing: `done` queues it again
    let drain = tokio::spawn({
        let q = queue.clone();
        async move { q.shut_down_with_drain().await }
    });
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert!(!drain.is_finished());
    queue.done(&item);
    tokio::time::timeout(Duration::from_millis(1), drain)
        .await
        .expect("drain ends once nothing is processing")
        .unwrap();
    // The item added again before shutdown is not lost.
    assert_eq!(queue.get().await, Some(1));
    queue.done(&1);
    assert_eq!(queue.get().await, None);
}
