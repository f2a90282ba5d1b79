//! Counters of a reflector's work, read as a [`ReflectorMetrics`] snapshot.

use std::sync::atomic::{AtomicU64, Ordering};

/// The live counters (relaxed atomics: each is exact, a snapshot is not atomic as a whole).
#[derive(Debug, Default)]
pub(crate) struct ReflectorStats {
    pub(crate) lists: AtomicU64,
    pub(crate) list_failures: AtomicU64,
    pub(crate) listed_objects: AtomicU64,
    pub(crate) watches: AtomicU64,
    pub(crate) watch_failures: AtomicU64,
    pub(crate) events: AtomicU64,
    pub(crate) bookmarks: AtomicU64,
    pub(crate) errors: AtomicU64,
}

impl ReflectorStats {
    pub(crate) fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self, last_sync_resource_version: String) -> ReflectorMetrics {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        ReflectorMetrics {
            lists: get(&self.lists),
            list_failures: get(&self.list_failures),
            listed_objects: get(&self.listed_objects),
            watches: get(&self.watches),
            watch_failures: get(&self.watch_failures),
            events: get(&self.events),
            bookmarks: get(&self.bookmarks),
            errors: get(&self.errors),
            last_sync_resource_version,
        }
    }
}

/// What a reflector has done since it was built: client-go's reflector metrics (list and
/// watch counts, relists, the last synced version), as one snapshot.
///
/// `lists - 1` (when positive) is the number of relists; `errors` counts every error the
/// reflector reported, each of which also reached its watch error handler.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReflectorMetrics {
    /// Lists started: the first one and every relist, watch-lists included.
    pub lists: u64,
    /// Lists (and watch-lists) that failed.
    pub list_failures: u64,
    /// Objects the completed lists handed to the sink (counted before the list is visible
    /// in the sink: an informer that reports synced has counted its first list).
    pub listed_objects: u64,
    /// Watches that started (the server accepted the request; a watch-list counts once as a
    /// list and, once synced, once as a watch).
    pub watches: u64,
    /// Watch requests that failed to start.
    pub watch_failures: u64,
    /// Watch events written into the sink (adds, updates and deletes; counted before the
    /// write, so a cache that shows an event's effect has counted it).
    pub events: u64,
    /// Bookmarks received.
    pub bookmarks: u64,
    /// Errors reported.
    pub errors: u64,
    /// The last synced resource version (empty before the first list).
    pub last_sync_resource_version: String,
}
