//! What list and watch calls return: a list page and watch events.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{ApiStatus, DecodeError};

/// The annotation that marks the bookmark ending a watch-list's initial state.
pub const INITIAL_EVENTS_END_ANNOTATION: &str = "k8s.io/initial-events-end";

/// One page of a list response.
#[derive(Debug)]
pub struct ObjectList<K> {
    /// The decoded items, in server order.
    pub items: Vec<Arc<K>>,
    /// `metadata.resourceVersion` of the list.
    pub resource_version: String,
    /// `metadata.continue`: set when more pages follow.
    pub continue_token: Option<String>,
    /// `metadata.remainingItemCount`, when the server reports it.
    pub remaining_item_count: Option<i64>,
    /// Items that could not be decoded; they are left out of `items` and reported by the
    /// reflector, never fatal.
    pub undecodable: Vec<DecodeError>,
}

impl<K> Default for ObjectList<K> {
    fn default() -> Self {
        Self {
            items: Vec::new(),
            resource_version: String::new(),
            continue_token: None,
            remaining_item_count: None,
            undecodable: Vec::new(),
        }
    }
}

/// A `BOOKMARK` event: the resource version advanced without a change to report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bookmark {
    /// The version the watch has reached.
    pub resource_version: String,
    /// The bookmark object's annotations.
    pub annotations: BTreeMap<String, String>,
}

impl Bookmark {
    /// A bookmark at `resource_version` without annotations.
    pub fn new(resource_version: impl Into<String>) -> Self {
        Self {
            resource_version: resource_version.into(),
            annotations: BTreeMap::new(),
        }
    }

    /// The bookmark ending a watch-list's initial state (annotated
    /// `k8s.io/initial-events-end: "true"`).
    pub fn initial_events_end(resource_version: impl Into<String>) -> Self {
        let mut b = Self::new(resource_version);
        b.annotations
            .insert(INITIAL_EVENTS_END_ANNOTATION.to_owned(), "true".to_owned());
        b
    }

    /// True when this bookmark ends a watch-list's initial state.
    pub fn is_initial_events_end(&self) -> bool {
        self.annotations
            .get(INITIAL_EVENTS_END_ANNOTATION)
            .is_some_and(|v| v == "true")
    }
}

/// One event of a watch stream.
#[derive(Debug)]
pub enum WatchEvent<K> {
    /// `ADDED`.
    Added(Arc<K>),
    /// `MODIFIED`.
    Modified(Arc<K>),
    /// `DELETED`: the object's final state.
    Deleted(Arc<K>),
    /// `BOOKMARK`.
    Bookmark(Bookmark),
    /// `ERROR`: the server ends the watch with this status (410 Expired, typically).
    Error(ApiStatus),
}

impl<K> Clone for WatchEvent<K> {
    fn clone(&self) -> Self {
        match self {
            WatchEvent::Added(o) => WatchEvent::Added(Arc::clone(o)),
            WatchEvent::Modified(o) => WatchEvent::Modified(Arc::clone(o)),
            WatchEvent::Deleted(o) => WatchEvent::Deleted(Arc::clone(o)),
            WatchEvent::Bookmark(b) => WatchEvent::Bookmark(b.clone()),
            WatchEvent::Error(s) => WatchEvent::Error(s.clone()),
        }
    }
}

impl<K> WatchEvent<K> {
    /// The event type as on the wire (`ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK`, `ERROR`).
    pub fn type_name(&self) -> &'static str {
        match self {
            WatchEvent::Added(_) => "ADDED",
            WatchEvent::Modified(_) => "MODIFIED",
            WatchEvent::Deleted(_) => "DELETED",
            WatchEvent::Bookmark(_) => "BOOKMARK",
            WatchEvent::Error(_) => "ERROR",
        }
    }
}
