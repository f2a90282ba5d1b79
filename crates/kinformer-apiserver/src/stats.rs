//! What the server counts about its own answers (for tests and the benchmarks).

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use crate::watch::WatchChunks;

/// Counters of what the server answered (for tests).
#[derive(Debug, Default)]
pub(crate) struct ServerStats {
    /// Watch-list requests refused because of [`ServerConfig::no_watch_list`](crate::ServerConfig::no_watch_list).
    pub(crate) watch_lists_refused: AtomicU64,
    /// How the watch streams cut their events into chunks.
    pub(crate) watch_chunks: Arc<WatchChunks>,
}
