//! Per-consumer sync tracking: synced means the upstream is synced *and* every initial item
//! handed to this consumer has been processed. client-go's `synctrack.SingleFileTracker`.
//!
//! Invariant: `pending` counts initial items that were [`start`](SingleFileTracker::start)ed and
//! not yet [`finish`](SingleFileTracker::finish)ed; it never goes below zero (a finish without a
//! start is logged and ignored).

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use futures::future::{BoxFuture, FutureExt};
use tokio::sync::Notify;

use crate::cache::sync::HasSynced;

/// Counts initial items in flight for one consumer (one handler's listener), on top of an
/// upstream [`HasSynced`].
///
/// Items are started and finished in a single sequence (one producer, one consumer, in order),
/// so a counter is enough.
///
/// ```text
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use std::sync::Arc;
/// use kinformer::cache::{HasSynced, SingleFileTracker, SyncedFlag};
/// let upstream = Arc::new(SyncedFlag::new());
/// let tracker = SingleFileTracker::new(upstream.clone());
/// tracker.start();
/// upstream.set();
/// assert!(!tracker.has_synced(), "one initial item is still in flight");
/// tracker.finish();
/// assert!(tracker.has_synced());
/// tracker.wait_synced().await;
/// # }
/// ```
pub struct SingleFileTracker {
    upstream: Arc<dyn HasSynced>,
    pending: AtomicI64,
    drained: Notify,
}

impl std::fmt::Debug for SingleFileTracker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SingleFileTracker")
            .field("upstream_synced", &self.upstream.has_synced())
            .field("pending", &self.pending())
            .finish()
    }
}

impl SingleFileTracker {
    /// A tracker with nothing pending over `upstream`.
    pub fn new(upstream: Arc<dyn HasSynced>) -> Self {
        Self {
            upstream,
            pending: AtomicI64::new(0),
            drained: Notify::new(),
        }
    }

    /// An initial item was handed to the consumer.
    pub fn start(&self) {
        self.pending.fetch_add(1, Ordering::AcqRel);
    }

    /// The consumer is done with one initial item.
    pub fn finish(&self) {
        let before = self
            .pending
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n > 0).then(|| n - 1)
            });
        match before {
            Ok(1) => self.drained.notify_waiters(),
            Ok(_) => {}
            Err(_) => {
                tracing::error!("synctrack: finish without a matching start; ignored");
                debug_assert!(false, "synctrack: finish without a matching start");
            }
        }
    }

    /// Initial items started and not yet finished.
    pub fn pending(&self) -> u64 {
        u64::try_from(self.pending.load(Ordering::Acquire)).unwrap_or(0)
    }

    async fn wait(&self) {
        self.upstream.wait_synced().await;
        loop {
            // Registered before the check, so a finish in between is not missed.
            let notified = self.drained.notified();
            if self.pending() == 0 {
                return;
            }
            notified.await;
        }
    }
}

impl HasSynced for SingleFileTracker {
    fn has_synced(&self) -> bool {
        // Upstream first: once it is synced no new initial items arrive, so a zero read
        // afterwards is final.
        self.upstream.has_synced() && self.pending() == 0
    }

    fn wait_synced(&self) -> BoxFuture<'_, ()> {
        self.wait().boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::sync::SyncedFlag;

    #[test]
    fn synced_needs_upstream_and_no_pending_items() {
        let upstream = Arc::new(SyncedFlag::new());
        let t = SingleFileTracker::new(upstream.clone());
        assert!(!t.has_synced());
        t.start();
        t.start();
        upstream.set();
        assert!(!t.has_synced());
        t.finish();
        assert!(!t.has_synced());
        t.finish();
        assert!(t.has_synced());
        assert_eq!(t.pending(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn wait_synced_wakes_on_the_last_finish() {
        let upstream = Arc::new(SyncedFlag::new_set());
        let t = Arc::new(SingleFileTracker::new(upstream));
        t.start();
        let waiter = tokio::spawn({
            let t = Arc::clone(&t);
            async move { t.wait_synced().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        t.finish();
        waiter.await.unwrap();
    }
}
