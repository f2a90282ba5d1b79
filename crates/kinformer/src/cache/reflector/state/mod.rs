//! The reflector's list/watch/relist decisions as a pure state machine.
//!
//! [`ReflectorMachine::step`] takes what just happened ([`Input`]) and returns what to do next
//! ([`Action`]); it performs no I/O and reads no clock, so every rule of client-go's reflector
//! is unit-tested here. The runner in `mod.rs` performs the actions and feeds back the results.
//!
//! Invariants:
//! 1. `last_sync_rv` only moves on a successful list, a watch-list's end bookmark, or an event
//!    seen while `Watching`.
//! 2. `rv_unavailable` is set only by a 410 / too-large failure of a list or watch-list and
//!    cleared by the next successful one; while set, lists and watch-lists ask for `""`.
//! 3. Every attempt (list or watch-list, then watch) ends in a backoff before the next one.
//! 4. Once a watch-list is refused as unsupported ([`Input::WatchListUnsupported`]), or the
//!    machine is told so ([`ReflectorMachine::disable_watch_list`]), attempts list and watch;
//!    other watch-list failures fall back to list + watch for that attempt only.
//! 5. No watch event is ever skipped: an undecodable event ends the watch
//!    ([`WatchEnd::Undecodable`]); the next watch resumes from the last synced version, and if
//!    that watch ends the same way without the version moving, the reflector relists.

use std::time::Duration;

use crate::cache::listwatch::DEFAULT_PAGE_SIZE;
use crate::cache::listwatch::{
    ListOptions, ListWatchError, ResourceVersionMatch, Selectors, WatchOptions,
};

/// What a failure means for the next step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// 410 Expired / Gone: the version asked for was compacted.
    Expired,
    /// The version asked for is newer than the server's.
    TooLargeResourceVersion,
    /// 429 or connection refused: the server is busy or restarting; retry the same call later.
    Throttled {
        /// How long the server asked us to wait, if it said.
        retry_after: Option<Duration>,
    },
    /// Anything else.
    Other {
        /// How long the server asked us to wait, if it said.
        retry_after: Option<Duration>,
    },
}

impl ErrorClass {
    /// Classifies a list/watch error.
    pub fn of(err: &ListWatchError) -> Self {
        let retry_after = err.retry_after();
        if err.is_too_many_requests() || err.is_connection_refused() {
            ErrorClass::Throttled { retry_after }
        } else if err.is_expired() || err.is_gone() {
            ErrorClass::Expired
        } else if err.is_too_large_resource_version() {
            ErrorClass::TooLargeResourceVersion
        } else {
            ErrorClass::Other { retry_after }
        }
    }

    fn retry_after(self) -> Option<Duration> {
        match self {
            ErrorClass::Throttled { retry_after } | ErrorClass::Other { retry_after } => {
                retry_after
            }
            ErrorClass::Expired | ErrorClass::TooLargeResourceVersion => None,
        }
    }

    fn version_unavailable(self) -> bool {
        matches!(
            self,
            ErrorClass::Expired | ErrorClass::TooLargeResourceVersion
        )
    }
}

/// How a watch stream ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchEnd {
    /// The server closed it cleanly (timeout) after at least one event or one second.
    Closed,
    /// Closed within one second without a single event: treated as an error.
    TooShort,
    /// An `ERROR` event or a stream error.
    Failed(ErrorClass),
    /// An internal error ended the watch and the reflector's
    /// `max_internal_error_retry_duration` allows another try: re-watch at once from the last
    /// synced version.
    InternalErrorRetry,
    /// An event could not be decoded (garbage, an unknown event type, an object of the wrong
    /// shape). client-go's stream watcher ends the watch the same way.
    Undecodable,
}

/// What just happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// The reflector starts.
    Start,
    /// The list (all pages) succeeded and was handed to the sink.
    ListSucceeded {
        /// The list's resource version.
        resource_version: String,
        /// Whether it came in several pages.
        paginated: bool,
    },
    /// The list failed.
    ListFailed(ErrorClass),
    /// The watch-list's end bookmark arrived and the state was handed to the sink.
    WatchListSynced {
        /// The bookmark's resource version.
        resource_version: String,
    },
    /// The watch-list failed before its end bookmark.
    WatchListFailed(ErrorClass),
    /// The server refused the watch-list as a server without the feature does
    /// ([`ListWatchError::is_watch_list_unsupported`]): list + watch from now on.
    WatchListUnsupported,
    /// The watch request itself failed.
    WatchFailedToStart(ErrorClass),
    /// An open watch ended.
    WatchEnded(WatchEnd),
    /// The requested backoff delay passed.
    BackoffElapsed,
}

/// What to do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// List with the pager; page size = `limit` (`None` = unpaginated).
    List(ListOptions),
    /// Open a watch-list (`sendInitialEvents`) and collect its initial state.
    WatchList(WatchOptions),
    /// Open a watch; the runner sets the randomised timeout.
    Watch(WatchOptions),
    /// Keep reading the stream just opened by the watch-list, now as a plain watch.
    KeepWatching,
    /// Wait one step of the backoff manager (at least `retry_after`).
    Backoff {
        /// The server's Retry-After, if any.
        retry_after: Option<Duration>,
    },
}

/// Where the machine is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    /// Not started.
    Idle,
    /// A list is running.
    Listing {
        /// The version it asked for.
        requested: String,
        /// The page size it uses (0 = unpaginated).
        page_size: u32,
        /// Whether this is the immediate retry at `""` after a 410 / too-large failure.
        retried: bool,
    },
    /// A watch-list is collecting its initial state.
    WatchListing {
        /// The version it asked for.
        requested: String,
    },
    /// A watch is open or being opened.
    Watching,
    /// Waiting out a backoff step; then `then`.
    BackingOff(Resume),
}

/// What follows a backoff.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resume {
    /// A new attempt: watch-list or list, then watch.
    Attempt,
    /// Re-open the watch at the last synced version (no relist).
    Rewatch,
    /// Retry the watch-list.
    WatchList,
}

/// The reflector's decision state (see the module docs).
#[derive(Debug, Clone)]
pub struct ReflectorMachine {
    last_sync_rv: String,
    rv_unavailable: bool,
    /// An earlier list at "0" came back in pages: the server honours paging, keep 500.
    paginated_result: bool,
    /// Explicit page size (client-go's `WatchListPageSize`); `None` = the rules.
    page_size: Option<u32>,
    use_watch_list: bool,
    selectors: Selectors,
    phase: Phase,
    /// The last synced version when a watch last ended on an undecodable event: a second such
    /// end at the same version relists instead of resuming the watch again.
    undecodable_at: Option<String>,
}

impl ReflectorMachine {
    /// A fresh machine; `page_size` `Some(0)` counts as unset.
    pub fn new(page_size: Option<u32>, use_watch_list: bool, selectors: Selectors) -> Self {
        Self {
            last_sync_rv: String::new(),
            rv_unavailable: false,
            paginated_result: false,
            page_size: page_size.filter(|n| *n > 0),
            use_watch_list,
            selectors,
            phase: Phase::Idle,
            undecodable_at: None,
        }
    }

    /// The last resource version synced (from a list, an end bookmark or a watch event).
    pub fn last_sync_resource_version(&self) -> &str {
        &self.last_sync_rv
    }

    /// True after a 410 / too-large failure until the next successful list.
    pub fn is_last_sync_resource_version_unavailable(&self) -> bool {
        self.rv_unavailable
    }

    /// Records the version of an event seen while watching (objects and bookmarks). Ignored
    /// outside the watch phase (a watch-list's initial events do not move the version) and for
    /// empty versions.
    pub fn observe_resource_version(&mut self, rv: &str) {
        if self.phase == Phase::Watching && !rv.is_empty() {
            rv.clone_into(&mut self.last_sync_rv);
        }
    }

    /// The version to list from: `""` when unavailable, `"0"` on the first list, else the last
    /// synced one (client-go's `relistResourceVersion`).
    pub fn relist_resource_version(&self) -> &str {
        if self.rv_unavailable {
            ""
        } else if self.last_sync_rv.is_empty() {
            "0"
        } else {
            &self.last_sync_rv
        }
    }

    /// The page size for a list at `rv`: explicit, else 500 if the server paged an "0" list
    /// before, else unpaginated for a specific version, else 500.
    pub fn page_size_for(&self, rv: &str) -> u32 {
        match self.page_size {
            Some(n) => n,
            None if self.paginated_result => DEFAULT_PAGE_SIZE,
            None if !rv.is_empty() && rv != "0" => 0,
            None => DEFAULT_PAGE_SIZE,
        }
    }

    /// Whether attempts begin with a watch-list.
    pub fn uses_watch_list(&self) -> bool {
        self.use_watch_list
    }

    /// Lists and watches from the next attempt on: the server is known not to support
    /// watch-list.
    pub fn disable_watch_list(&mut self) {
        self.use_watch_list = false;
    }

    /// Forgets the phase (an interrupted run) but keeps the versions, so that the next
    /// [`Input::Start`] begins a new attempt from the last synced version.
    pub fn reset_phase(&mut self) {
        self.phase = Phase::Idle;
    }

    /// One transition.
    pub fn step(&mut self, input: Input) -> Action {
        match (std::mem::replace(&mut self.phase, Phase::Idle), input) {
            (Phase::Idle, Input::Start) => self.begin_attempt(),

            (
                Phase::Listing { requested, .. },
                Input::ListSucceeded {
                    resource_version,
                    paginated,
                },
            ) => {
                if requested == "0" && paginated {
                    self.paginated_result = true;
                }
                self.rv_unavailable = false;
                self.last_sync_rv = resource_version;
                self.undecodable_at = None;
                self.watch()
            }
            (
                Phase::Listing {
                    page_size,
                    retried: false,
                    ..
                },
                Input::ListFailed(class),
            ) if class.version_unavailable() => {
                self.rv_unavailable = true;
                self.list(page_size, true)
            }
            (Phase::Listing { .. }, Input::ListFailed(class)) => {
                self.backoff(Resume::Attempt, class.retry_after())
            }

            (Phase::WatchListing { .. }, Input::WatchListSynced { resource_version }) => {
                self.rv_unavailable = false;
                self.last_sync_rv = resource_version;
                self.undecodable_at = None;
                self.phase = Phase::Watching;
                Action::KeepWatching
            }
            (
                Phase::WatchListing { .. },
                Input::WatchListFailed(ErrorClass::Throttled { retry_after }),
            ) => self.backoff(Resume::WatchList, retry_after),
            (Phase::WatchListing { requested }, Input::WatchListFailed(class))
                if class.version_unavailable() && !requested.is_empty() =>
            {
                self.rv_unavailable = true;
                self.watch_list()
            }
            (Phase::WatchListing { .. }, Input::WatchListUnsupported) => {
                self.use_watch_list = false;
                self.begin_attempt()
            }
            (Phase::WatchListing { .. }, Input::WatchListFailed(_)) => {
                // Fall back to list + watch for this attempt: progress beats waiting.
                let rv = self.relist_resource_version().to_owned();
                let page_size = self.page_size_for(&rv);
                self.list(page_size, false)
            }

            (Phase::Watching, Input::WatchFailedToStart(ErrorClass::Throttled { retry_after })) => {
                self.backoff(Resume::Rewatch, retry_after)
            }
            (Phase::Watching, Input::WatchFailedToStart(class)) => {
                self.backoff(Resume::Attempt, class.retry_after())
            }
            (
                Phase::Watching,
                Input::WatchEnded(WatchEnd::Closed | WatchEnd::InternalErrorRetry),
            ) => self.watch(),
            (
                Phase::Watching,
                Input::WatchEnded(WatchEnd::Failed(ErrorClass::Throttled { retry_after })),
            ) => self.backoff(Resume::Rewatch, retry_after),
            (Phase::Watching, Input::WatchEnded(WatchEnd::Failed(class))) => {
                self.backoff(Resume::Attempt, class.retry_after())
            }
            (Phase::Watching, Input::WatchEnded(WatchEnd::Undecodable)) => {
                if self.undecodable_at.as_deref() == Some(self.last_sync_rv.as_str()) {
                    // Resuming did not get past the bad event: relist.
                    self.undecodable_at = None;
                    self.backoff(Resume::Attempt, None)
                } else {
                    self.undecodable_at = Some(self.last_sync_rv.clone());
                    self.backoff(Resume::Rewatch, None)
                }
            }
            (Phase::Watching, Input::WatchEnded(WatchEnd::TooShort)) => {
                self.backoff(Resume::Attempt, None)
            }

            (Phase::BackingOff(Resume::Attempt), Input::BackoffElapsed) => self.begin_attempt(),
            (Phase::BackingOff(Resume::Rewatch), Input::BackoffElapsed) => self.watch(),
            (Phase::BackingOff(Resume::WatchList), Input::BackoffElapsed) => {
                if self.use_watch_list {
                    self.watch_list()
                } else {
                    self.begin_attempt()
                }
            }

            (phase, input) => {
                // Not reachable from the runner; recover by starting over after a backoff.
                debug_assert!(false, "unexpected input {input:?} in phase {phase:?}");
                self.backoff(Resume::Attempt, None)
            }
        }
    }

    fn begin_attempt(&mut self) -> Action {
        if self.use_watch_list {
            self.watch_list()
        } else {
            let rv = self.relist_resource_version().to_owned();
            let page_size = self.page_size_for(&rv);
            self.list(page_size, false)
        }
    }

    fn list(&mut self, page_size: u32, retried: bool) -> Action {
        let requested = self.relist_resource_version().to_owned();
        let options = ListOptions {
            resource_version: Some(requested.clone()).filter(|rv| !rv.is_empty()),
            limit: (page_size > 0).then_some(page_size),
            selectors: self.selectors.clone(),
            ..ListOptions::default()
        };
        self.phase = Phase::Listing {
            requested,
            page_size,
            retried,
        };
        Action::List(options)
    }

    fn watch_list(&mut self) -> Action {
        let requested = if self.rv_unavailable {
            String::new()
        } else {
            self.last_sync_rv.clone()
        };
        let options = WatchOptions {
            resource_version: Some(requested.clone()).filter(|rv| !rv.is_empty()),
            allow_bookmarks: true,
            send_initial_events: true,
            resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
            selectors: self.selectors.clone(),
            timeout: None,
        };
        self.phase = Phase::WatchListing { requested };
        Action::WatchList(options)
    }

    fn watch(&mut self) -> Action {
        self.phase = Phase::Watching;
        Action::Watch(WatchOptions {
            resource_version: Some(self.last_sync_rv.clone()).filter(|rv| !rv.is_empty()),
            allow_bookmarks: true,
            selectors: self.selectors.clone(),
            ..WatchOptions::default()
        })
    }

    fn backoff(&mut self, then: Resume, retry_after: Option<Duration>) -> Action {
        self.phase = Phase::BackingOff(then);
        Action::Backoff { retry_after }
    }
}

/// The watch `timeoutSeconds` for a uniform `unit` in `[0, 1)`: `min · (1 + unit)`, in whole
/// seconds, so within `[min, 2·min)`.
pub fn watch_timeout(min: Duration, unit: f64) -> Duration {
    let unit = if unit.is_finite() {
        unit.clamp(0.0, 1.0 - f64::EPSILON)
    } else {
        0.0
    };
    Duration::from_secs((min.as_secs_f64() * (1.0 + unit)) as u64)
}

#[cfg(test)]
mod tests;
