//! What the server counts about its own answers (for tests).

use std::sync::atomic::AtomicU64;

/// Counters of what the server answered (for tests).
#[derive(Debug, Default)]
pub(crate) struct ServerStats {
    /// Watch-list requests refused because of [`ServerConfig::no_watch_list`](crate::ServerConfig::no_watch_list).
    pub(crate) watch_lists_refused: AtomicU64,
}
