//! [`run_workers`]: N workers draining a rate-limited queue into a reconcile function, as
//! client-go's controllers do (`processNextWorkItem`).

use std::fmt;
use std::future::Future;
use std::hash::Hash;
use std::time::Duration;

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
/// Prefer `cancel`: dropping the future abandons the workers between awaits (each key is
/// retried by whoever runs the controller next).
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
    let tasks: Vec<_> = (0..workers.max(1))
        .map(|_| {
            let (queue, cancel, reconcile) = (queue.clone(), cancel.clone(), reconcile.clone());
            tokio::spawn(async move { worker(&queue, &cancel, &reconcile).await })
        })
        .collect();
    cancel.cancelled().await;
    queue.shut_down();
    for task in tasks {
        if let Err(e) = task.await {
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
}
