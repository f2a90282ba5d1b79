//! Tests of the reflector's state machine: inputs in, actions out, no I/O.

use super::*;
use crate::cache::listwatch::ApiStatus;

fn machine() -> ReflectorMachine {
    ReflectorMachine::new(None, false, Selectors::default())
}

fn list_rv(a: &Action) -> (Option<&str>, Option<u32>) {
    match a {
        Action::List(o) => (o.resource_version.as_deref(), o.limit),
        other => panic!("expected a list, got {other:?}"),
    }
}

fn watch_rv(a: &Action) -> Option<&str> {
    match a {
        Action::Watch(o) => {
            assert!(o.allow_bookmarks);
            assert!(!o.send_initial_events);
            o.resource_version.as_deref()
        }
        other => panic!("expected a watch, got {other:?}"),
    }
}

fn ok(rv: &str) -> Input {
    Input::ListSucceeded {
        resource_version: rv.into(),
        paginated: false,
    }
}

#[test]
fn first_list_is_at_zero_with_pages_of_500_then_watch_from_the_list_version() {
    let mut m = machine();
    let a = m.step(Input::Start);
    assert_eq!(list_rv(&a), (Some("0"), Some(500)));
    let a = m.step(ok("10"));
    assert_eq!(watch_rv(&a), Some("10"));
    assert_eq!(m.last_sync_resource_version(), "10");
}

#[test]
fn relist_uses_the_last_synced_version_unpaginated() {
    let mut m = machine();
    m.step(Input::Start);
    m.step(ok("10"));
    m.observe_resource_version("12");
    let a = m.step(Input::WatchEnded(WatchEnd::Failed(ErrorClass::Other {
        retry_after: None,
    })));
    assert_eq!(a, Action::Backoff { retry_after: None });
    let a = m.step(Input::BackoffElapsed);
    assert_eq!(list_rv(&a), (Some("12"), None));
}

#[test]
fn expired_list_is_retried_at_once_from_empty_version_then_backs_off() {
    let mut m = machine();
    m.step(Input::Start);
    m.step(ok("10"));
    m.step(Input::WatchEnded(WatchEnd::Failed(ErrorClass::Expired)));
    let a = m.step(Input::BackoffElapsed);
    // Watch expired: relist at the last version, not "".
    assert_eq!(list_rv(&a), (Some("10"), None));
    let a = m.step(Input::ListFailed(ErrorClass::Expired));
    // Same pager (page size of the original attempt), version "".
    assert_eq!(list_rv(&a), (None, None));
    assert!(m.is_last_sync_resource_version_unavailable());
    let a = m.step(Input::ListFailed(ErrorClass::Expired));
    assert_eq!(a, Action::Backoff { retry_after: None });
    let a = m.step(Input::BackoffElapsed);
    assert_eq!(list_rv(&a), (None, Some(500)));
    m.step(ok("20"));
    assert!(!m.is_last_sync_resource_version_unavailable());
    assert_eq!(m.last_sync_resource_version(), "20");
}

#[test]
fn too_large_version_marks_the_version_unavailable() {
    let mut m = machine();
    m.step(Input::Start);
    let a = m.step(Input::ListFailed(ErrorClass::TooLargeResourceVersion));
    assert_eq!(list_rv(&a), (None, Some(500)));
    assert!(m.is_last_sync_resource_version_unavailable());
}

#[test]
fn classification_follows_the_error_helpers() {
    let c = |s: ApiStatus| ErrorClass::of(&ListWatchError::Api(s));
    assert_eq!(c(ApiStatus::expired("x")), ErrorClass::Expired);
    assert_eq!(c(ApiStatus::gone("x")), ErrorClass::Expired);
    assert_eq!(
        c(ApiStatus::too_large_resource_version("5", "3")),
        ErrorClass::TooLargeResourceVersion
    );
    assert_eq!(
        c(ApiStatus::too_many_requests(Some(Duration::from_secs(2)))),
        ErrorClass::Throttled {
            retry_after: Some(Duration::from_secs(2))
        }
    );
    assert_eq!(
        ErrorClass::of(&ListWatchError::connection_refused("down")),
        ErrorClass::Throttled { retry_after: None }
    );
    assert_eq!(
        c(ApiStatus::internal_error("x")),
        ErrorClass::Other { retry_after: None }
    );
}

#[test]
fn page_size_rules() {
    let mut m = machine();
    assert_eq!(m.page_size_for(""), 500);
    assert_eq!(m.page_size_for("0"), 500);
    assert_eq!(m.page_size_for("7"), 0);
    // A paginated answer to an "0" list keeps pages of 500 for later relists.
    m.step(Input::Start);
    m.step(Input::ListSucceeded {
        resource_version: "5".into(),
        paginated: true,
    });
    assert_eq!(m.page_size_for("7"), 500);
    let explicit = ReflectorMachine::new(Some(50), false, Selectors::default());
    assert_eq!(explicit.page_size_for("7"), 50);
    assert_eq!(explicit.page_size_for("0"), 50);
    let zero = ReflectorMachine::new(Some(0), false, Selectors::default());
    assert_eq!(zero.page_size_for("0"), 500);
}

#[test]
fn a_paginated_list_at_a_specific_version_does_not_switch_paging_on() {
    let mut m = machine();
    m.step(Input::Start);
    m.step(ok("5"));
    m.step(Input::WatchEnded(WatchEnd::TooShort));
    m.step(Input::BackoffElapsed);
    m.step(Input::ListSucceeded {
        resource_version: "6".into(),
        paginated: true,
    });
    assert_eq!(m.page_size_for("6"), 0);
}

#[test]
fn clean_close_rewatches_from_the_last_version_without_relist() {
    let mut m = machine();
    m.step(Input::Start);
    m.step(ok("10"));
    m.observe_resource_version("11");
    let a = m.step(Input::WatchEnded(WatchEnd::Closed));
    assert_eq!(watch_rv(&a), Some("11"));
}

#[test]
fn undecodable_event_resumes_the_watch_then_relists_if_it_recurs_at_the_same_version() {
    let mut m = machine();
    m.step(Input::Start);
    m.step(ok("5"));
    let undecodable = Input::WatchEnded(WatchEnd::Undecodable);
    // First time: back off, then re-watch from the last synced version (no relist).
    assert_eq!(
        m.step(undecodable.clone()),
        Action::Backoff { retry_after: None }
    );
    assert_eq!(watch_rv(&m.step(Input::BackoffElapsed)), Some("5"));
    // Progress, then another bad event: resume again from the newer version.
    m.observe_resource_version("6");
    m.step(undecodable.clone());
    assert_eq!(watch_rv(&m.step(Input::BackoffElapsed)), Some("6"));
    // The resumed watch fails at the same version: relist from it.
    m.step(undecodable.clone());
    assert_eq!(list_rv(&m.step(Input::BackoffElapsed)), (Some("6"), None));
    // After the relist the counting starts over.
    m.step(ok("7"));
    m.step(undecodable);
    assert_eq!(watch_rv(&m.step(Input::BackoffElapsed)), Some("7"));
}

#[test]
fn very_short_watch_backs_off_then_relists() {
    let mut m = machine();
    m.step(Input::Start);
    m.step(ok("10"));
    let a = m.step(Input::WatchEnded(WatchEnd::TooShort));
    assert_eq!(a, Action::Backoff { retry_after: None });
    assert_eq!(list_rv(&m.step(Input::BackoffElapsed)), (Some("10"), None));
}

#[test]
fn throttled_watch_backs_off_with_retry_after_then_rewatches() {
    let mut m = machine();
    m.step(Input::Start);
    m.step(ok("10"));
    let ra = Some(Duration::from_secs(7));
    let a = m.step(Input::WatchFailedToStart(ErrorClass::Throttled {
        retry_after: ra,
    }));
    assert_eq!(a, Action::Backoff { retry_after: ra });
    assert_eq!(watch_rv(&m.step(Input::BackoffElapsed)), Some("10"));
    let a = m.step(Input::WatchEnded(WatchEnd::Failed(ErrorClass::Throttled {
        retry_after: None,
    })));
    assert_eq!(a, Action::Backoff { retry_after: None });
    assert_eq!(watch_rv(&m.step(Input::BackoffElapsed)), Some("10"));
}

#[test]
fn other_watch_start_errors_relist_after_backoff() {
    let mut m = machine();
    m.step(Input::Start);
    m.step(ok("10"));
    m.step(Input::WatchFailedToStart(ErrorClass::Other {
        retry_after: None,
    }));
    assert_eq!(list_rv(&m.step(Input::BackoffElapsed)), (Some("10"), None));
}

#[test]
fn list_failure_backs_off_and_lists_again_at_the_same_version() {
    let mut m = machine();
    m.step(Input::Start);
    let a = m.step(Input::ListFailed(ErrorClass::Throttled {
        retry_after: Some(Duration::from_secs(1)),
    }));
    assert_eq!(
        a,
        Action::Backoff {
            retry_after: Some(Duration::from_secs(1))
        }
    );
    assert_eq!(
        list_rv(&m.step(Input::BackoffElapsed)),
        (Some("0"), Some(500))
    );
}

#[test]
fn events_move_the_version_only_while_watching() {
    let mut m = ReflectorMachine::new(None, true, Selectors::default());
    m.step(Input::Start);
    m.observe_resource_version("3");
    assert_eq!(m.last_sync_resource_version(), "");
    m.step(Input::WatchListSynced {
        resource_version: "5".into(),
    });
    m.observe_resource_version("6");
    m.observe_resource_version("");
    assert_eq!(m.last_sync_resource_version(), "6");
}

fn watch_list_opts(a: &Action) -> &WatchOptions {
    match a {
        Action::WatchList(o) => {
            assert!(o.send_initial_events && o.allow_bookmarks);
            assert_eq!(
                o.resource_version_match,
                Some(ResourceVersionMatch::NotOlderThan)
            );
            o
        }
        other => panic!("expected a watch-list, got {other:?}"),
    }
}

#[test]
fn watch_list_happy_path_keeps_the_stream_as_the_watch() {
    let mut m = ReflectorMachine::new(None, true, Selectors::default());
    let a = m.step(Input::Start);
    assert_eq!(watch_list_opts(&a).resource_version, None);
    let a = m.step(Input::WatchListSynced {
        resource_version: "9".into(),
    });
    assert_eq!(a, Action::KeepWatching);
    assert_eq!(m.last_sync_resource_version(), "9");
    // After the stream closes cleanly: a plain watch, no new watch-list.
    assert_eq!(
        watch_rv(&m.step(Input::WatchEnded(WatchEnd::Closed))),
        Some("9")
    );
    // A new attempt uses the watch-list again, from the last version.
    m.step(Input::WatchEnded(WatchEnd::TooShort));
    let a = m.step(Input::BackoffElapsed);
    assert_eq!(watch_list_opts(&a).resource_version.as_deref(), Some("9"));
}

#[test]
fn watch_list_falls_back_to_list_on_other_errors() {
    let mut m = ReflectorMachine::new(None, true, Selectors::default());
    m.step(Input::Start);
    let a = m.step(Input::WatchListFailed(ErrorClass::Other {
        retry_after: None,
    }));
    assert_eq!(list_rv(&a), (Some("0"), Some(500)));
    assert_eq!(watch_rv(&m.step(ok("4"))), Some("4"));
}

#[test]
fn an_unsupported_watch_list_is_not_tried_again() {
    let mut m = ReflectorMachine::new(None, true, Selectors::default());
    m.step(Input::Start);
    let a = m.step(Input::WatchListUnsupported);
    assert_eq!(list_rv(&a), (Some("0"), Some(500)));
    assert!(!m.uses_watch_list());
    m.step(ok("4"));
    m.step(Input::WatchEnded(WatchEnd::TooShort));
    // The next attempt lists, from the last version, without a watch-list.
    let a = m.step(Input::BackoffElapsed);
    assert_eq!(list_rv(&a), (Some("4"), None));
}

#[test]
fn a_machine_told_watch_list_is_unsupported_lists_even_after_a_throttled_watch_list() {
    let mut m = ReflectorMachine::new(None, true, Selectors::default());
    m.step(Input::Start);
    let a = m.step(Input::WatchListFailed(ErrorClass::Throttled {
        retry_after: None,
    }));
    assert_eq!(a, Action::Backoff { retry_after: None });
    m.disable_watch_list();
    let a = m.step(Input::BackoffElapsed);
    assert_eq!(list_rv(&a), (Some("0"), Some(500)));
}

#[test]
fn watch_list_expired_retries_from_empty_version_and_throttled_backs_off() {
    let mut m = ReflectorMachine::new(None, true, Selectors::default());
    m.step(Input::Start);
    m.step(Input::WatchListSynced {
        resource_version: "9".into(),
    });
    m.step(Input::WatchEnded(WatchEnd::TooShort));
    let a = m.step(Input::BackoffElapsed);
    assert_eq!(watch_list_opts(&a).resource_version.as_deref(), Some("9"));
    let a = m.step(Input::WatchListFailed(ErrorClass::Expired));
    assert_eq!(watch_list_opts(&a).resource_version, None);
    let a = m.step(Input::WatchListFailed(ErrorClass::Throttled {
        retry_after: None,
    }));
    assert_eq!(a, Action::Backoff { retry_after: None });
    let a = m.step(Input::BackoffElapsed);
    assert_eq!(watch_list_opts(&a).resource_version, None);
    // Expired again at "": nothing newer to ask for, fall back to a list at "".
    let a = m.step(Input::WatchListFailed(ErrorClass::Expired));
    assert_eq!(list_rv(&a), (None, Some(500)));
}

#[test]
fn watch_timeout_is_within_min_and_twice_min() {
    let min = Duration::from_secs(300);
    assert_eq!(watch_timeout(min, 0.0), min);
    assert_eq!(watch_timeout(min, 0.5), Duration::from_secs(450));
    assert!(watch_timeout(min, 0.999_999) < 2 * min);
    assert_eq!(watch_timeout(min, f64::NAN), min);
}
