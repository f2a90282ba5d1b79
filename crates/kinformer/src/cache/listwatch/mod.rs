//! The source a reflector reads from: list (paged) and watch (a stream of events).
//!
//! - [`ListerWatcher`] is the two-method trait; [`KubeListerWatcher`](crate::kube::KubeListerWatcher)
//!   implements it over the `kube` client and `FakeListerWatcher` (feature `testing`)
//!   in memory.
//! - [`ListOptions`] / [`WatchOptions`] carry exactly what the API server accepts.
//! - [`ListWatchError`] keeps the HTTP code, status reason and causes and Retry-After, so that the
//!   reflector can tell a compacted version (relist) from throttling (back off) from a broken
//!   object (skipped in a list; the end of a watch, resumed from the last synced version).

mod options;
mod pager;
mod prefetch;
mod support;

use std::future::Future;
use std::sync::Arc;

use futures::stream::BoxStream;

pub use crate::codec::{
    ApiStatus, Bookmark, CAUSE_RESOURCE_VERSION_TOO_LARGE, DecodeError,
    INITIAL_EVENTS_END_ANNOTATION, ListWatchError, ObjectList, StatusCause, TransportErrorKind,
    WatchEvent,
};
pub use options::{ListOptions, ResourceVersionMatch, Selectors, WatchOptions};
pub use pager::{DEFAULT_PAGE_SIZE, ListPager, Listed, Page, PagedList, Pages};
pub use prefetch::{ListPart, ListRest, NextPage, PrefetchedPage};
pub use support::WatchListSupport;
pub(crate) use support::{Gate, WatchListProbe};

/// A watch: events in order until the server closes the stream (`None`), or an error item.
///
/// Any `Err` item ends the watch. An `Err(ListWatchError::Decode(_))` item (an undecodable
/// event) makes the reflector resume from its last synced version; it is never skipped.
pub type WatchStream<K> = BoxStream<'static, Result<WatchEvent<K>, ListWatchError>>;

/// Lists and watches one kind of object: client-go's `ListerWatcher`.
///
/// Implementations perform exactly one request per call, but for
/// [`list_prefetching`](Self::list_prefetching), which may start one more; paging, retries and
/// resource-version bookkeeping belong to the [`Reflector`](super::reflector::Reflector) and
/// the [`ListPager`].
pub trait ListerWatcher<K>: Send + Sync + 'static {
    /// Lists one page.
    ///
    /// # Errors
    /// The server's failed status ([`ListWatchError::Api`]), a transport failure, or an invalid
    /// request. Undecodable items are not errors: they come back in
    /// [`ObjectList::undecodable`].
    ///
    /// # Cancel safety
    /// Dropping the future abandons the request; nothing is lost but the page.
    fn list(
        &self,
        options: &ListOptions,
    ) -> impl Future<Output = Result<ObjectList<K>, ListWatchError>> + Send;

    /// Lists one page as [`list`](Self::list) does and, when the page has a continue token,
    /// may start the request for the next page (with
    /// [`options.next_page(token)`](ListOptions::next_page)) before decoding this one, so that
    /// the server works on the next page while this one is decoded. It performs the page's
    /// request and starts at most one more, which runs until the returned [`NextPage`] is
    /// awaited or dropped (dropping it abandons the request). The [`ListPager`] calls it.
    ///
    /// The default lists the page and starts nothing.
    ///
    /// # Errors
    /// As [`list`](Self::list).
    ///
    /// # Cancel safety
    /// Dropping the future abandons the page's request and the next page's, if started.
    fn list_prefetching(
        &self,
        options: &ListOptions,
    ) -> impl Future<Output = Result<PrefetchedPage<K>, ListWatchError>> + Send {
        let list = self.list(options);
        async move { list.await.map(PrefetchedPage::alone) }
    }

    /// Starts a watch.
    ///
    /// # Errors
    /// Failures to start (429, connection refused, 410 for a compacted version on some servers).
    /// Errors after the start arrive as stream items or `ERROR` events.
    ///
    /// # Cancel safety
    /// Dropping the future abandons the request; dropping the stream closes the watch.
    fn watch(
        &self,
        options: &WatchOptions,
    ) -> impl Future<Output = Result<WatchStream<K>, ListWatchError>> + Send;

    /// The record of whether this source's server supports watch-list, shared with the other
    /// sources of the same client, so that a server without it is asked once in total (see
    /// [`WatchListSupport`]). `None` by default: each reflector then learns for itself.
    fn watch_list_support(&self) -> Option<&WatchListSupport> {
        None
    }
}

impl<K, L: ListerWatcher<K>> ListerWatcher<K> for Arc<L> {
    fn list(
        &self,
        options: &ListOptions,
    ) -> impl Future<Output = Result<ObjectList<K>, ListWatchError>> + Send {
        (**self).list(options)
    }

    fn list_prefetching(
        &self,
        options: &ListOptions,
    ) -> impl Future<Output = Result<PrefetchedPage<K>, ListWatchError>> + Send {
        (**self).list_prefetching(options)
    }

    fn watch(
        &self,
        options: &WatchOptions,
    ) -> impl Future<Output = Result<WatchStream<K>, ListWatchError>> + Send {
        (**self).watch(options)
    }

    fn watch_list_support(&self) -> Option<&WatchListSupport> {
        (**self).watch_list_support()
    }
}
