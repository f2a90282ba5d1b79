//! Errors the reflector reports (it never returns them from `run`: it retries).

use std::time::Duration;

use crate::cache::listwatch::{DecodeError, ListWatchError};
use crate::cache::meta::CacheError;

/// Something that went wrong while reflecting, as passed to the watch-error handler and
/// logged with `tracing`.
///
/// Retryability: every variant except [`AlreadyRunning`](Self::AlreadyRunning) is handled by
/// the reflector itself (skip, back off, re-watch or relist); the handler is for observation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReflectorError {
    /// A list failed (the reflector backs off and lists again, or relists from `""` at once
    /// after a 410 / too-large version).
    #[error("list failed: {0}")]
    List(ListWatchError),
    /// A watch could not be started (429 / connection refused: back off and re-watch; else
    /// back off and relist).
    #[error("watch failed to start: {0}")]
    WatchStart(ListWatchError),
    /// An open watch ended with an error or an `ERROR` event.
    #[error("watch ended with error: {0}")]
    Watch(ListWatchError),
    /// A watch closed within a second without any event (back off and relist).
    #[error("very short watch: closed after {elapsed:?} without events")]
    VeryShortWatch {
        /// How long it lasted.
        elapsed: Duration,
    },
    /// A watch-list failed before its end bookmark (falls back to list + watch, or retries).
    #[error("watch-list failed: {0}")]
    WatchList(ListWatchError),
    /// A watch-list stream closed before its end bookmark.
    #[error("watch-list closed before the initial-events-end bookmark")]
    WatchListIncomplete,
    /// An object of a list could not be decoded; it was skipped (the rest of the list was
    /// used).
    #[error("skipped undecodable object: {0}")]
    Undecodable(DecodeError),
    /// An event of an open watch (or watch-list) could not be decoded. Nothing is skipped: the
    /// watch was ended and resumes from the last synced version (a watch-list falls back to a
    /// list).
    #[error("watch ended at an undecodable event: {0}")]
    WatchUndecodable(DecodeError),
    /// An object without a name (no key); it was skipped.
    #[error("skipped {event} object without a name")]
    MissingName {
        /// The event type (`ADDED`, ...) or `LIST`.
        event: &'static str,
    },
    /// The sink refused a write.
    #[error("sink rejected {operation}: {source}")]
    Sink {
        /// `add`, `update`, `delete`, `replace`, `resync` or `bookmark`.
        operation: &'static str,
        /// The sink's error.
        source: CacheError,
    },
    /// `run` was called while another `run` of the same reflector is active.
    #[error("reflector is already running")]
    AlreadyRunning,
}

impl ReflectorError {
    /// The failed request's error, for the variants that carry one.
    pub fn list_watch_error(&self) -> Option<&ListWatchError> {
        match self {
            Self::List(e) | Self::WatchStart(e) | Self::Watch(e) | Self::WatchList(e) => Some(e),
            _ => None,
        }
    }

    /// How long the server asked to wait (`Retry-After`, as on a 429), if it did. The
    /// reflector waits that long before its next attempt, at most
    /// [`MAX_RETRY_AFTER`](super::MAX_RETRY_AFTER) and at least its backoff step.
    pub fn retry_after(&self) -> Option<Duration> {
        self.list_watch_error()
            .and_then(ListWatchError::retry_after)
    }
}
