//! Knowing when a cache is synced: the [`HasSynced`] trait, a settable [`SyncedFlag`],
//! [`wait_for_cache_sync`], which awaits a set of them, and [`wait_for_cache_sync_timeout`],
//! which gives up after a while with the last error a source saw.
//!
//! Properties:
//! - *Monotonic*: once `has_synced()` returns true it keeps returning true. Every implementation
//!   must keep this promise; waiters rely on it.
//! - *No polling*: [`HasSynced::wait_synced`] resolves on a notification, not on a timer (client-go
//!   polls every 100 ms).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::future::{BoxFuture, FutureExt, join_all};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Something that becomes synced once and stays synced: an informer, a handler registration, a
/// delta queue.
///
/// Implementations promise monotonicity: after `has_synced()` returned true it never returns
/// false again, and `wait_synced()` resolves as soon as (and only when) `has_synced()` is true.
pub trait HasSynced: Send + Sync {
    /// True once the initial state has been fully delivered.
    fn has_synced(&self) -> bool;

    /// Resolves when [`has_synced`](HasSynced::has_synced) is true (at once if it already is).
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future loses nothing, a new call waits again.
    fn wait_synced(&self) -> BoxFuture<'_, ()>;

    /// The last error the source met on its way to sync (an informer: the last list/watch
    /// error its reflector reported), for messages when a sync takes too long.
    fn last_error(&self) -> Option<String> {
        None
    }
}

/// A bounded wait for caches to sync ran out of time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{} not synced after {timeout:?}{}",
    unsynced.join(", "),
    last_error.as_deref().map(|e| format!("; last error: {e}")).unwrap_or_default()
)]
pub struct CacheSyncTimeout {
    /// How long the wait lasted.
    pub timeout: Duration,
    /// The sources that had not synced: informer names, or `#<index>` for unnamed sources.
    pub unsynced: Vec<String>,
    /// The last error one of them reported (the first unsynced source that has one).
    pub last_error: Option<String>,
}

impl CacheSyncTimeout {
    pub(crate) fn new(timeout: Duration, unsynced: Vec<(String, &dyn HasSynced)>) -> Self {
        CacheSyncTimeout {
            timeout,
            last_error: unsynced.iter().find_map(|(_, s)| s.last_error()),
            unsynced: unsynced.into_iter().map(|(n, _)| n).collect(),
        }
    }
}

/// Waits at most `timeout` for every source to sync.
///
/// A program pointed at an unreachable or refusing server otherwise waits forever (the
/// reflector retries with backoff); this gives it an error to report, with the last list/watch
/// error of an unsynced informer.
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
/// use std::time::Duration;
/// use kinformer::cache::{SyncedFlag, wait_for_cache_sync_timeout};
/// let (a, b) = (SyncedFlag::new_set(), SyncedFlag::new());
/// let err = wait_for_cache_sync_timeout(Duration::from_secs(5), &[&a, &b]).await.unwrap_err();
/// assert_eq!(err.unsynced, ["#1"]);
/// b.set();
/// assert!(wait_for_cache_sync_timeout(Duration::from_secs(5), &[&a, &b]).await.is_ok());
/// # }
/// ```
///
/// # Errors
/// [`CacheSyncTimeout`] naming the sources still unsynced after `timeout`.
///
/// # Cancel safety
/// Cancel safe: it only observes the sources.
pub async fn wait_for_cache_sync_timeout(
    timeout: Duration,
    sources: &[&dyn HasSynced],
) -> Result<(), CacheSyncTimeout> {
    let named = sources
        .iter()
        .enumerate()
        .map(|(i, s)| (format!("#{i}"), *s))
        .collect();
    wait_named_for_cache_sync(timeout, named).await
}

/// [`wait_for_cache_sync_timeout`] over named sources (the factory names its informers).
pub(crate) async fn wait_named_for_cache_sync(
    timeout: Duration,
    sources: Vec<(String, &dyn HasSynced)>,
) -> Result<(), CacheSyncTimeout> {
    let all = join_all(sources.iter().map(|(_, s)| s.wait_synced()));
    if tokio::time::timeout(timeout, all).await.is_ok() {
        return Ok(());
    }
    let unsynced = sources
        .into_iter()
        .filter(|(_, s)| !s.has_synced())
        .collect();
    Err(CacheSyncTimeout::new(timeout, unsynced))
}

impl<T: HasSynced + ?Sized> HasSynced for std::sync::Arc<T> {
    fn has_synced(&self) -> bool {
        (**self).has_synced()
    }

    fn wait_synced(&self) -> BoxFuture<'_, ()> {
        (**self).wait_synced()
    }

    fn last_error(&self) -> Option<String> {
        (**self).last_error()
    }
}

impl<T: HasSynced + ?Sized> HasSynced for &T {
    fn has_synced(&self) -> bool {
        (**self).has_synced()
    }

    fn wait_synced(&self) -> BoxFuture<'_, ()> {
        (**self).wait_synced()
    }

    fn last_error(&self) -> Option<String> {
        (**self).last_error()
    }
}

/// A one-way flag: unset until [`set`](SyncedFlag::set), then set forever; waiters are woken by
/// a notification.
///
/// The building block for [`HasSynced`] implementations (an informer sets it when its initial
/// list has been processed).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use std::sync::Arc;
/// use kinformer::cache::{HasSynced, SyncedFlag};
/// let flag = Arc::new(SyncedFlag::new());
/// let waiter = tokio::spawn({
///     let flag = Arc::clone(&flag);
///     async move { flag.wait_synced().await }
/// });
/// assert!(!flag.has_synced());
/// flag.set();
/// waiter.await.unwrap();
/// assert!(flag.has_synced());
/// # }
/// ```
#[derive(Debug, Default)]
pub struct SyncedFlag {
    set: AtomicBool,
    changed: Notify,
}

impl SyncedFlag {
    /// An unset flag.
    pub fn new() -> Self {
        Self::default()
    }

    /// A flag that is already set (an upstream that is always synced).
    pub fn new_set() -> Self {
        let flag = Self::new();
        flag.set.store(true, Ordering::Release);
        flag
    }

    /// Sets the flag and wakes every waiter. Idempotent.
    pub fn set(&self) {
        if !self.set.swap(true, Ordering::AcqRel) {
            self.changed.notify_waiters();
        }
    }

    /// True once [`set`](SyncedFlag::set) was called.
    pub fn is_set(&self) -> bool {
        self.set.load(Ordering::Acquire)
    }

    /// Resolves once the flag is set.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn wait(&self) {
        loop {
            // Created before the check: `notify_waiters` reaches every `Notified` that exists
            // when it runs, so a `set` between the check and the await is not lost.
            let notified = self.changed.notified();
            if self.is_set() {
                return;
            }
            notified.await;
        }
    }
}

impl HasSynced for SyncedFlag {
    fn has_synced(&self) -> bool {
        self.is_set()
    }

    fn wait_synced(&self) -> BoxFuture<'_, ()> {
        self.wait().boxed()
    }
}

/// Waits until every source has synced; client-go's `WaitForCacheSync`, awaiting notifications
/// instead of polling.
///
/// Returns true when all sources are synced, false if `cancel` fired first. Sources already
/// synced count even if `cancel` has fired (the check comes first, as client-go's immediate
/// poll).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use kinformer::cache::{SyncedFlag, wait_for_cache_sync};
/// use tokio_util::sync::CancellationToken;
/// let (a, b) = (SyncedFlag::new_set(), SyncedFlag::new());
/// let cancel = CancellationToken::new();
/// cancel.cancel();
/// assert!(!wait_for_cache_sync(&cancel, &[&a, &b]).await);
/// b.set();
/// assert!(wait_for_cache_sync(&cancel, &[&a, &b]).await);
/// # }
/// ```
///
/// # Cancel safety
/// Cancel safe: it only observes the sources.
pub async fn wait_for_cache_sync(cancel: &CancellationToken, sources: &[&dyn HasSynced]) -> bool {
    if sources.iter().all(|s| s.has_synced()) {
        return true;
    }
    let all = join_all(sources.iter().map(|s| s.wait_synced()));
    tokio::select! {
        biased;
        _ = all => true,
        () = cancel.cancelled() => false,
    }
}

/// [`wait_for_cache_sync`] with log lines naming the controller, as client-go's
/// `WaitForNamedCacheSync`.
///
/// # Cancel safety
/// Cancel safe.
pub async fn wait_for_named_cache_sync(
    controller_name: &str,
    cancel: &CancellationToken,
    sources: &[&dyn HasSynced],
) -> bool {
    tracing::info!(controller = controller_name, "waiting for caches to sync");
    let synced = wait_for_cache_sync(cancel, sources).await;
    if synced {
        tracing::info!(controller = controller_name, "caches are synced");
    } else {
        tracing::error!(controller = controller_name, "unable to sync caches");
    }
    synced
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn wait_for_cache_sync_wakes_when_the_last_source_syncs() {
        let a = Arc::new(SyncedFlag::new());
        let b = Arc::new(SyncedFlag::new());
        let cancel = CancellationToken::new();
        let task = tokio::spawn({
            let (a, b, cancel) = (Arc::clone(&a), Arc::clone(&b), cancel.clone());
            async move { wait_for_cache_sync(&cancel, &[&*a, &*b]).await }
        });
        tokio::task::yield_now().await;
        a.set();
        tokio::task::yield_now().await;
        assert!(!task.is_finished(), "one source is still unsynced");
        b.set();
        assert!(task.await.unwrap());
    }

    #[tokio::test(start_paused = true)]
    async fn wait_for_cache_sync_returns_false_when_cancelled_first() {
        let a = Arc::new(SyncedFlag::new());
        let cancel = CancellationToken::new();
        let task = tokio::spawn({
            let (a, cancel) = (Arc::clone(&a), cancel.clone());
            async move { wait_for_named_cache_sync("test", &cancel, &[&*a]).await }
        });
        tokio::task::yield_now().await;
        assert!(!task.is_finished());
        cancel.cancel();
        assert!(!task.await.unwrap());
        assert!(!a.has_synced());
    }

    #[tokio::test(start_paused = true)]
    async fn wait_for_cache_sync_with_no_sources_is_true() {
        let cancel = CancellationToken::new();
        cancel.cancel();
        assert!(wait_for_cache_sync(&cancel, &[]).await);
    }

    #[tokio::test(start_paused = true)]
    async fn synced_flag_set_is_idempotent_and_sticky() {
        let flag = SyncedFlag::new();
        assert!(!flag.has_synced());
        flag.set();
        flag.set();
        assert!(flag.has_synced());
        flag.wait_synced().await;
    }
}
