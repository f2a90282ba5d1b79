//! [`run_workers`]: N workers draining a rate-limited queue into a reconcile function, as
//! client-go's controllers do (`processNextWorkItem`).

use std::fmt;
use std::future::Future;
use std::hash::Hash;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::workqueue::RateLimitingQueue;

/// What a successful reconcile asks for next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Nothing: the key is forgotten by the rate limiter and waits for its next event.
    Done,
    /// Look again after this long (e.g. an expectation that has not expired yet); the key's
    /// failure count is reset, as for `Done`.
    RequeueAfter(Duration),
}

/// Runs `workers` workers (at least one) that take keys from `queue` and call `reconcile`
/// with each, until `cancel` fires; then shuts the queue down and waits for the workers to
/// finish the keys they hold.
///
/// Per key, exactly client-go's rules: `Ok(Action::Done)` → `forget`;
/// `Ok(Action::RequeueAfter(d))` → `forget`, then `add_after(key, d)`; `Err(e)` →
/// `add_rate_limited(key)` (per-key exponential backoff, logged at debug level with the
/// error); `done(key)` in every case, so a key is never reconciled by two workers at once and
/// an event that arrived during its reconcile queues it again. Each reconcile runs in a
/// `reconcile` tracing span carrying the key.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap().block_on(async {
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use kinformer::controller::{Action, run_workers};
/// use kinformer::workqueue::{RateLimitingQueue, default_controller_rate_limiter};
/// use tokio_util::sync::CancellationToken;
///
/// let queue = RateLimitingQueue::new(default_controller_rate_limiter());
/// queue.add("ns/a".to_string());
/// let calls = Arc::new(AtomicUsize::new(0));
/// let cancel = CancellationToken::new();
/// let reconcile = {
///     let (calls, cancel) = (calls.clone(), cancel.clone());
///     move |key: String| {
///         let (calls, cancel) = (calls.clone(), cancel.clone());
///         async move {
///             // Fails once, then succeeds and stops the workers.
///             if calls.fetch_add(1, Ordering::SeqCst) == 0 {
///                 return Err(format!("{key}: conflict"));
///             }
///             cancel.cancel();
///             Ok(Action::Done)
///         }
///     }
/// };
/// run_workers(&queue, 2, cancel, reconcile).await;
/// assert_eq!(calls.load(Ordering::SeqCst), 2, "retried after its backoff");
/// assert_eq!(queue.num_requeues(&"ns/a".to_string()), 0, "forgotten after success");
/// # });
/// ```
///
/// # Cancel safety
/// Prefer `cancel`: dropping the future aborts the workers where they wait, mid-reconcile if
/// need be (each key is retried by whoever runs the controller next), and no reconcile
/// starts or goes on after that.
pub async fn run_workers<T, F, Fut, E>(
    queue: &RateLimitingQueue<T>,
    workers: usize,
    cancel: CancellationToken,
    reconcile: F,
) where
    T: Clone + Eq + Hash + fmt::Debug + Send + Sync + 'static,
    F: Fn(T) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, E>> + Send + 'static,
    E: fmt::Display + Send + 'static,
{
    // Owned by this future: if it is dropped, so are the workers (aborted where they wait).
    let mut tasks = JoinSet::new();
    for _ in 0..workers.max(1) {
        let (queue, cancel, reconcile) = (queue.clone(), cancel.clone(), reconcile.clone());
        tasks.spawn(async move { worker(&queue, &cancel, &reconcile).await });
    }
    cancel.cancelled().await;
    queue.shut_down();
    while let Some(finished) = tasks.join_next().await {
        if let Err(e) = finished {
            tracing::error!(error = %e, "worker task failed");
        }
    }
}

async fn worker<T, F, Fut, E>(
    queue: &RateLimitingQueue<T>,
    cancel: &CancellationToken,
    reconcile: &F,
) where
    T: Clone + Eq + Hash + fmt::Debug + Send + Sync + 'static,
    F: Fn(T) -> Fut,
    Fut: Future<Output = Result<Action, E>>,
    E: fmt::Display,
{
    while let Some(key) = queue.get().await {
        if cancel.is_cancelled() {
            queue.done(&key);
            continue;
        }
        let span = tracing::debug_span!("reconcile", key = ?key);
        match reconcile(key.clone()).instrument(span).await {
            Ok(Action::Done) => queue.forget(&key),
            Ok(Action::RequeueAfter(delay)) => {
                queue.forget(&key);
                queue.add_after(key.clone(), delay);
            }
            Err(e) => {
                tracing::debug!(key = ?key, error = %e, "reconcile failed; retrying with backoff");
                queue.add_rate_limited(key.clone());
            }
        }
        queue.done(&key);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use parking_lot::Mutex;

    use super::*;
    use crate::workqueue::default_controller_rate_limiter;

    #[tokio::test(start_paused = true)]
    async fn each_outcome_does_what_client_go_does() {
        let queue = RateLimitingQueue::new(default_controller_rate_limiter());
        for key in ["fails-twice", "requeues-once", "done"] {
            queue.add(key.to_string());
        }
        let calls: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
        let requeues_on_retry: Arc<Mutex<Option<usize>>> = Arc::default();
        let cancel = CancellationToken::new();
        let reconcile = {
            let (calls, cancel, queue) = (calls.clone(), cancel.clone(), queue.clone());
            let requeues_on_retry = requeues_on_retry.clone();
            move |key: String| {
                let (calls, cancel, queue) = (calls.clone(), cancel.clone(), queue.clone());
                let requeues_on_retry = requeues_on_retry.clone();
                async move {
                    let n = {
                        let mut c = calls.lock();
                        let n = c.entry(key.clone()).or_default();
                        *n += 1;
                        *n
                    };
                    let out = match (key.as_str(), n) {
                        ("fails-twice", 1 | 2) => Err("conflict"),
                        ("requeues-once", 1) => Ok(Action::RequeueAfter(Duration::from_secs(30))),
                        _ => Ok(Action::Done),
                    };
                    if key == "fails-twice" && n == 2 {
                        *requeues_on_retry.lock() = Some(queue.num_requeues(&key));
                    }
                    let c = calls.lock();
                    let finished =
                        c.get("fails-twice") == Some(&3) && c.get("requeues-once") == Some(&2);
                    if finished && c.get("done") == Some(&1) {
                        cancel.cancel();
                    }
                    out
                }
            }
        };
        run_workers(&queue, 2, cancel, reconcile).await;
        let c = calls.lock();
        assert_eq!(c.get("fails-twice"), Some(&3));
        assert_eq!(c.get("requeues-once"), Some(&2));
        assert_eq!(
            c.get("done"),
            Some(&1),
            "a key that succeeds is not reconciled again"
        );
        assert_eq!(
            *requeues_on_retry.lock(),
            Some(1),
            "the retry came through the rate limiter"
        );
        assert_eq!(
            queue.num_requeues(&"fails-twice".to_string()),
            0,
            "forgotten on success"
        );
        assert!(queue.is_shutting_down());
    }

    /// Marks its flag when dropped: a reconcile's future holds one while it runs.
    struct Alive(Arc<std::sync::atomic::AtomicBool>, Arc<tokio::sync::Notify>);

    impl Drop for Alive {
        fn drop(&mut self) {
            self.0.store(false, std::sync::atomic::Ordering::SeqCst);
            self.1.notify_one();
        }
    }

    #[tokio::test(start_paused = true)]
    async fn dropping_the_future_stops_its_workers_mid_reconcile() {
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

        let queue = RateLimitingQueue::new(default_controller_rate_limiter());
        queue.add("ns/a".to_string());
        let alive = Arc::new(AtomicBool::new(false));
        let dropped = Arc::new(tokio::sync::Notify::new());
        let started = Arc::new(tokio::sync::Notify::new());
        let calls = Arc::new(AtomicUsize::new(0));
        let reconcile = {
            let (alive, dropped, started) = (alive.clone(), dropped.clone(), started.clone());
            let calls = calls.clone();
            move |_key: String| {
                let guard = Alive(alive.clone(), dropped.clone());
                let (alive, started, calls) = (alive.clone(), started.clone(), calls.clone());
                async move {
                    let _guard = guard;
                    alive.store(true, Ordering::SeqCst);
                    calls.fetch_add(1, Ordering::SeqCst);
                    started.notify_one();
                    // A reconcile that would go on writing for a long time.
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    Ok::<_, String>(Action::Done)
                }
            }
        };
        let run = tokio::spawn({
            let queue = queue.clone();
            async move { run_workers(&queue, 2, CancellationToken::new(), reconcile).await }
        });
        started.notified().await;
        assert!(alive.load(Ordering::SeqCst));
        // A crashed process: the runner's task is aborted, its cancel token never fires.
        run.abort();
        assert!(run.await.is_err_and(|e| e.is_cancelled()));
        dropped.notified().await;
        assert!(!alive.load(Ordering::SeqCst), "the reconcile was dropped");
        // No worker is left to take a key added afterwards.
        queue.add("ns/b".to_string());
        tokio::time::sleep(Duration::from_secs(7200)).await;
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert_eq!(queue.len(), 1, "ns/b waits for the next runner");
    }
}
