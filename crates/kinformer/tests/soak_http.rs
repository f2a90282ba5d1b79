//! A soak over HTTP: a typed and a lean informer kept busy against the embedded server while
//! a writer creates, updates and deletes pods, the history is compacted (410, relists),
//! watches drop and the server restarts once. At each checkpoint the writer is held and both
//! caches, and both checking handlers' views, must equal the server's pods; over the run's
//! second half the process's memory, tasks and file descriptors must not grow.
//!
//! A minute of churn by default; with `KINFORMER_LONG_TESTS=1`, `KINFORMER_SOAK_SECS`
//! (default 300). The driver is bench row S0's (`kinformer_bench::soak`).
//!
//! One test per binary on purpose: it samples its own process.

#![cfg(feature = "kube")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use kinformer::cache::{HasSynced, SharedIndexInformer};
use kinformer_apiserver::{ServerConfig, TestServer};
use kinformer_bench::soak::informers::{lean_informer, typed_informer};
use kinformer_bench::soak::{Churn, SoakConfig, Subject, driver, sample, soak_duration};
use kube_core::Resource;
use support::{Tracker, cache_pods, short_backoff, spawn_informer, stop};
use tokio::time::timeout;

/// Pods on the server, about (the writer keeps their number within half and one and a half
/// times this).
const POPULATION: usize = 1_000;
const WRITES_PER_S: u32 = 100;

/// The bounds over the run's second half, medians of its first and last sixth of samples
/// (see `sample::growth`), each RSS sample taken after the allocator's free pages were handed
/// back (`sample::trim_allocator`): RSS may grow by at most 5 % (about 3 MiB of the ~57 MiB
/// this process holds; trimmed samples move by about 2 % around a flat line); live tasks and
/// open descriptors by at most 4, two connections' worth (each connection is a task and a
/// socket on either side, and whether a pooled or reconnecting one is open when a sample is
/// taken flips the counts by 2 all run long; a leak of one per relist or per dropped watch
/// would add dozens).
const MAX_RSS_GROWTH_PCT: f64 = 5.0;
const MAX_TASKS_GROWTH: f64 = 4.0;
const MAX_FDS_GROWTH: f64 = 4.0;

fn subject<K: Resource + Send + Sync + 'static>(
    name: &str,
    informer: &SharedIndexInformer<K>,
    tracker: &Arc<Tracker>,
) -> Subject {
    let (cache, view, count) = (
        informer.get_indexer(),
        Arc::clone(tracker),
        Arc::clone(tracker),
    );
    Subject {
        name: name.to_string(),
        cache: Box::new(move || cache_pods(&cache)),
        handler: Box::new(move || view.view()),
        notifications: Box::new(move || count.notifications()),
        changed: Arc::clone(&tracker.changed),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn informers_under_churn_and_faults_match_the_server_and_stay_bounded() {
    let duration = if std::env::var_os("KINFORMER_LONG_TESTS").is_some() {
        soak_duration(300)
    } else {
        Duration::from_secs(60)
    };
    let config = SoakConfig {
        // Untrimmed, glibc's heap grows in steps for minutes before it settles (S0's samples
        // show it): a minute's run would take that for growth.
        trim_before_sample: true,
        ..SoakConfig::new(duration, WRITES_PER_S)
    };
    let server = TestServer::start_with(ServerConfig::for_tests())
        .await
        .unwrap();
    let churn = Churn::seed(server.store(), POPULATION, 56).unwrap();
    let client = server.client_without_retries().unwrap();
    let typed = typed_informer(client.clone(), short_backoff);
    let lean = lean_informer(client, short_backoff);
    // Trackers without their per-key log, which would grow with every notification.
    let typed_tracker = Arc::new(Tracker::without_log());
    let lean_tracker = Arc::new(Tracker::without_log());
    typed.add_event_handler(Arc::clone(&typed_tracker)).unwrap();
    lean.add_event_handler(Arc::clone(&lean_tracker)).unwrap();
    let (typed_cancel, typed_task) = spawn_informer(&typed);
    let (lean_cancel, lean_task) = spawn_informer(&lean);
    for informer in [typed.wait_synced(), lean.wait_synced()] {
        timeout(Duration::from_secs(30), informer)
            .await
            .expect("the informers sync");
    }
    let subjects = [
        subject("typed", &typed, &typed_tracker),
        subject("lean", &lean, &lean_tracker),
    ];

    let report = driver::run(&server, churn, &subjects, &config)
        .await
        .unwrap();

    // Every checkpoint: both caches and both handlers' views equal the server's pods.
    for c in &report.checkpoints {
        assert!(
            c.mismatches.is_empty(),
            "checkpoint at {:?}: {:?}",
            c.at,
            c.mismatches
        );
    }
    assert!(
        report.checkpoints.len() >= 6,
        "{} checkpoints",
        report.checkpoints.len()
    );
    for (name, tracker) in [("typed", &typed_tracker), ("lean", &lean_tracker)] {
        let violations = tracker.violations();
        assert!(violations.is_empty(), "{name}: {violations:?}");
    }
    // The run did what it says: every kind of write, compactions that made both informers
    // relist, dropped watches and one restart.
    let w = &report.writes;
    let (creates, updates, deletes) = (
        w.creates.load(std::sync::atomic::Ordering::Relaxed),
        w.updates.load(std::sync::atomic::Ordering::Relaxed),
        w.deletes.load(std::sync::atomic::Ordering::Relaxed),
    );
    assert!(
        creates > 0 && updates > 0 && deletes > 0,
        "{creates} creates, {updates} updates, {deletes} deletes"
    );
    let expected = u64::from(WRITES_PER_S) * duration.as_secs();
    assert!(
        w.total() >= expected / 2,
        "{} writes, expected about {expected}",
        w.total()
    );
    assert!(
        report.notifications >= w.total(),
        "{} notifications",
        report.notifications
    );
    let faults = &report.faults;
    assert_eq!(faults.get("refuse"), Some(&1), "{faults:?}");
    assert!(faults.get("compact").is_some_and(|n| *n >= 3), "{faults:?}");
    assert!(
        faults.get("close-watch").is_some_and(|n| *n >= 1),
        "{faults:?}"
    );
    for (name, lists) in [
        ("typed", typed.metrics().reflector.lists),
        ("lean", lean.metrics().reflector.lists),
    ] {
        assert!(
            lists >= 3,
            "{name}: {lists} lists: the compactions made no relists"
        );
    }

    // Over the second half, nothing grows.
    let growth = sample::growth(&report.samples, duration).expect("samples in the second half");
    eprintln!(
        "soak: {:?}, {} writes, {} notifications, faults {faults:?}, {growth:?}",
        report.elapsed,
        w.total(),
        report.notifications
    );
    let trace: Vec<String> = report
        .samples
        .iter()
        .filter(|s| s.at >= duration / 2)
        .map(|s| {
            format!(
                "{:.1}s {:.1}MiB {}t {}fd",
                s.at.as_secs_f64(),
                s.rss_mib,
                s.tasks,
                s.fds
            )
        })
        .collect();
    assert!(
        growth.rss_growth_pct <= MAX_RSS_GROWTH_PCT,
        "RSS grew {:.1} % ({:.1} → {:.1} MiB): {trace:?}",
        growth.rss_growth_pct,
        growth.rss_start_mib,
        growth.rss_end_mib
    );
    assert!(
        growth.tasks_growth <= MAX_TASKS_GROWTH,
        "{growth:?}: {trace:?}"
    );
    assert!(growth.fds_growth <= MAX_FDS_GROWTH, "{growth:?}: {trace:?}");

    stop(typed_cancel, typed_task).await;
    stop(lean_cancel, lean_task).await;
}
