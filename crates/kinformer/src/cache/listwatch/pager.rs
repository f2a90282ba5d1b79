//! Paged lists: client-go's `ListPager`.
//!
//! - Pages of [`DEFAULT_PAGE_SIZE`] (or the configured size) are fetched with `continue` tokens
//!   and joined into one list whose resource version is the first page's.
//! - Pages after the first clear `resourceVersion` and `resourceVersionMatch` (the server
//!   rejects them together with `continue`).
//! - If a continue token expires (410 `Expired` on page 2 or later), the pager makes one full,
//!   unpaginated list at the originally requested version instead.
//! - [`ListPager::list`] joins the pages; [`ListPager::pages`] hands them over one at a time
//!   (the reflector's lists).
//! - A page whose response streams in ([`PrefetchedPage::rest`], a source's answer to a
//!   response too large to hold whole) is handed over part by part ([`Page::Part`]), its last
//!   part as the page: the list's version and continue token come with it.
//! - Each page is listed with [`ListerWatcher::list_prefetching`]: a source that supports it
//!   starts the next page's request before decoding the page, so that the server's work on
//!   page n+1 overlaps the decoding of page n. The pager uses that request if it continues
//!   with the page's token (otherwise it is abandoned and the page listed anew), and runs at
//!   most one page ahead of its caller.

use std::fmt;

use tracing::debug;

use crate::cache::listwatch::{
    ListOptions, ListRest, ListWatchError, ListerWatcher, NextPage, ObjectList, PrefetchedPage,
    ResourceVersionMatch,
};

/// The page size client-go's pager uses.
pub const DEFAULT_PAGE_SIZE: u32 = 500;

/// A joined list and whether it came in more than one page.
#[derive(Debug)]
pub struct PagedList<K> {
    /// All items; `continue_token` is always `None`, `resource_version` is the first page's.
    pub list: ObjectList<K>,
    /// True if the server split the result into pages.
    pub paginated: bool,
}

/// Fetches a whole list page by page.
///
/// Runs against the embedded API server, `kinformer_apiserver::ApiServer` (the
/// `kinformer-apiserver` crate, a dev-dependency); a cluster's client works the same way.
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kinformer::cache::listwatch::{ListOptions, ListPager};
/// use kinformer::kube::KubeListerWatcher;
/// use kinformer_apiserver::ApiServer;
/// use kube::Api;
/// use serde_json::json;
///
/// let server = ApiServer::start().await.unwrap();
/// for i in 0..3 {
///     let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("cm-{i}")}});
///     server.store().create("configmaps", "default", cm).unwrap();
/// }
/// let lw = KubeListerWatcher::new(Api::<ConfigMap>::namespaced(server.client().unwrap(), "default"));
/// let paged = ListPager::new(2).list(&lw, ListOptions::default()).await.unwrap();
/// assert_eq!(paged.list.items.len(), 3);
/// assert!(paged.paginated, "two pages of at most 2");
/// # });
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListPager {
    page_size: u32,
    full_list_if_expired: bool,
}

impl Default for ListPager {
    fn default() -> Self {
        Self::new(DEFAULT_PAGE_SIZE)
    }
}

impl ListPager {
    /// A pager with `page_size` items per page; 0 means unpaginated (one request, no `limit`).
    pub fn new(page_size: u32) -> Self {
        Self {
            page_size,
            full_list_if_expired: true,
        }
    }

    /// Whether an expired continue token falls back to a full list (default true).
    #[must_use]
    pub fn full_list_if_expired(mut self, on: bool) -> Self {
        self.full_list_if_expired = on;
        self
    }

    /// The page size (0 = unpaginated).
    pub fn page_size(&self) -> u32 {
        self.page_size
    }

    /// Lists everything matching `options`, joined. A `limit` in `options` overrides the page
    /// size.
    ///
    /// # Errors
    /// The first failing page's error (after the expired-continue fallback, if it applies).
    ///
    /// # Cancel safety
    /// Dropping the future abandons the pages fetched so far.
    pub async fn list<K, L: ListerWatcher<K>>(
        &self,
        lw: &L,
        options: ListOptions,
    ) -> Result<PagedList<K>, ListWatchError> {
        let mut pages = self.pages(lw, options);
        let mut joined = ObjectList::default();
        let mut first = true;
        while let Some(page) = pages.next().await? {
            match page {
                Page::Part(mut part) => {
                    joined.items.append(&mut part.items);
                    joined.undecodable.append(&mut part.undecodable);
                }
                Page::Items(mut page) => {
                    if std::mem::take(&mut first) {
                        joined.resource_version = std::mem::take(&mut page.resource_version);
                    }
                    joined.items.append(&mut page.items);
                    joined.undecodable.append(&mut page.undecodable);
                    joined.remaining_item_count = page.remaining_item_count;
                }
                // The full list replaces the pages; their undecodable items stay reported.
                Page::Restart => {
                    joined.items.clear();
                    first = true;
                }
            }
        }
        joined.continue_token = None;
        Ok(PagedList {
            list: joined,
            paginated: pages.paginated,
        })
    }

    /// The pages of everything matching `options`, one [`Pages::next`] at a time: a page is
    /// fetched when asked for (its request possibly started while the previous one was
    /// decoded), so the caller can hold the list back. A `limit` in `options` overrides the
    /// page size.
    pub fn pages<'a, K, L: ListerWatcher<K>>(
        &self,
        lw: &'a L,
        mut options: ListOptions,
    ) -> Pages<'a, K, L> {
        if options.limit.unwrap_or(0) == 0 {
            options.limit = (self.page_size > 0).then_some(self.page_size);
        }
        Pages {
            lw,
            full_list_if_expired: self.full_list_if_expired,
            requested_rv: options.resource_version.clone(),
            requested_match: options.resource_version_match,
            options,
            resource_version: None,
            paginated: false,
            next: Next::Page,
        }
    }
}

/// The pages of one list, fetched as they are asked for (see [`ListPager::pages`]).
pub struct Pages<'a, K, L> {
    lw: &'a L,
    full_list_if_expired: bool,
    options: ListOptions,
    requested_rv: Option<String>,
    requested_match: Option<ResourceVersionMatch>,
    /// The list's version: the first page's (the full list's after a restart).
    resource_version: Option<String>,
    paginated: bool,
    next: Next<K>,
}

impl<K, L> fmt::Debug for Pages<'_, K, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pages")
            .field("options", &self.options)
            .field("resource_version", &self.resource_version)
            .field("paginated", &self.paginated)
            .finish_non_exhaustive()
    }
}

/// What [`Pages::next`] does next.
enum Next<K> {
    /// Fetch the page `options` describes.
    Page,
    /// Take the page `options` describes from its request, already under way.
    Prefetched(NextPage<K>),
    /// Take the next part of the page whose response is streaming in.
    Rest(ListRest<K>),
    /// Nothing: the list is complete.
    Done,
}

impl<K, L: ListerWatcher<K>> Pages<'_, K, L> {
    /// The next page, `None` once the list is complete (then [`listed`](Self::listed) says
    /// how it ended).
    ///
    /// While a page is handed over, the request for the one after it may already be under
    /// way ([`ListerWatcher::list_prefetching`]): the pager runs at most one page ahead of
    /// its caller.
    ///
    /// When an expired continue token (410 on page 2 or later) makes the pager fall back to
    /// one full list, this returns [`Page::Restart`] first: the pages so far belong to an
    /// older snapshot than what follows.
    ///
    /// # Errors
    /// The page's error (after the expired-continue fallback, if it applies); the list is
    /// over then.
    ///
    /// # Cancel safety
    /// Dropping the future abandons the page being fetched (and the next page's request, if
    /// started); call again to fetch it again.
    pub async fn next(&mut self) -> Result<Option<Page<K>>, ListWatchError> {
        // `Page` while the page is awaited, so that a dropped call is made again.
        let fetched = match std::mem::replace(&mut self.next, Next::Page) {
            Next::Done => {
                self.next = Next::Done;
                return Ok(None);
            }
            Next::Page => self.lw.list_prefetching(&self.options).await,
            Next::Prefetched(next) => next.page().await,
            Next::Rest(rest) => rest.next().await,
        };
        let PrefetchedPage {
            list: page,
            next,
            rest,
        } = match fetched {
            Ok(fetched) => fetched,
            Err(err) => return self.expired(err),
        };
        if let Some(rest) = rest {
            // A part of a page: the page's metadata comes with its last part.
            self.next = Next::Rest(rest);
            return Ok(Some(Page::Part(page)));
        }
        if self.resource_version.is_none() {
            self.resource_version = Some(page.resource_version.clone());
        }
        self.next = match page.continue_token.as_deref().filter(|t| !t.is_empty()) {
            Some(token) => {
                self.options = self.options.next_page(token);
                self.paginated = true;
                // A request made with another token than the page's is abandoned.
                match next {
                    Some(next) if next.continue_token() == token => Next::Prefetched(next),
                    _ => Next::Page,
                }
            }
            None => Next::Done,
        };
        Ok(Some(Page::Items(page)))
    }

    /// After the failed request for the page `options` describes: when it is an expired
    /// continue token and the pager falls back, returns [`Page::Restart`] and lists in full
    /// from the next call on; otherwise returns the error, and the list is over.
    fn expired(&mut self, err: ListWatchError) -> Result<Option<Page<K>>, ListWatchError> {
        let on_continue_page = self.options.continue_token.is_some();
        if !(self.full_list_if_expired && on_continue_page && (err.is_expired() || err.is_gone())) {
            self.next = Next::Done;
            return Err(err);
        }
        debug!(error = %err, "continue token expired; falling back to a full list");
        let full_list = ListOptions {
            limit: None,
            continue_token: None,
            resource_version: self.requested_rv.clone(),
            resource_version_match: self.requested_match,
            selectors: self.options.selectors.clone(),
        };
        // The full list is listed as any page (streaming in if it is large); its version is
        // the list's.
        self.options = full_list;
        self.resource_version = None;
        self.next = Next::Page;
        Ok(Some(Page::Restart))
    }

    /// How the list ended, once [`next`](Self::next) returned `None`.
    pub fn listed(&self) -> Option<Listed> {
        match self.next {
            Next::Done => Some(Listed {
                resource_version: self.resource_version.clone().unwrap_or_default(),
                paginated: self.paginated,
            }),
            _ => None,
        }
    }
}

/// What [`Pages::next`] hands over.
#[derive(Debug)]
pub enum Page<K> {
    /// The next page. Its `continue_token` is the server's; its `resource_version` is the
    /// server's for this page (the list's version is the first page's, see [`Listed`]).
    /// For a page that streamed in, this is its last part.
    Items(ObjectList<K>),
    /// A part of a page that streams in: items only (no version, no continue token); more
    /// parts follow, the last as [`Page::Items`].
    Part(ObjectList<K>),
    /// The pages so far are superseded: a full list follows (an expired continue token).
    Restart,
}

/// How a completed list ended ([`Pages::listed`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// The list's resource version: the first page's (the full list's after a restart).
    pub resource_version: String,
    /// True if the server split the result into pages.
    pub paginated: bool,
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube_core::ObjectMeta;

    use std::future::Future;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use futures::FutureExt;
    use futures::future::BoxFuture;
    use parking_lot::Mutex;
    use tokio::sync::oneshot;

    use super::*;
    use crate::cache::listwatch::{
        ApiStatus, DecodeError, ResourceVersionMatch, WatchOptions, WatchStream,
    };
    use crate::cache::testing::FakeListerWatcher;

    fn fake(n: usize) -> FakeListerWatcher<ConfigMap> {
        let lw = FakeListerWatcher::new();
        for i in 0..n {
            lw.add(ConfigMap {
                metadata: ObjectMeta {
                    name: Some(format!("cm-{i:03}")),
                    namespace: Some("ns".into()),
                    ..Default::default()
                },
                ..Default::default()
            })
            .unwrap();
        }
        lw
    }

    fn names(list: &ObjectList<ConfigMap>) -> Vec<String> {
        list.items
            .iter()
            .map(|o| o.metadata.name.clone().unwrap_or_default())
            .collect()
    }

    #[tokio::test]
    async fn pages_are_joined_in_order_with_the_first_page_version() {
        let lw = fake(7);
        let options = ListOptions {
            resource_version: Some("0".into()),
            resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
            ..ListOptions::default()
        };
        let paged = ListPager::new(3).list(&lw, options).await.unwrap();
        assert!(paged.paginated);
        assert_eq!(names(&paged.list).len(), 7);
        assert_eq!(names(&paged.list)[6], "cm-006");
        assert_eq!(paged.list.resource_version, "7");
        assert_eq!(paged.list.continue_token, None);
        let calls = lw.list_calls();
        assert_eq!(calls.len(), 3);
        assert_eq!(calls[0].resource_version.as_deref(), Some("0"));
        assert_eq!(calls[0].limit, Some(3));
        for later in &calls[1..] {
            assert_eq!(later.resource_version, None);
            assert_eq!(later.resource_version_match, None);
            assert!(later.continue_token.is_some());
            assert_eq!(later.limit, Some(3));
        }
    }

    #[tokio::test]
    async fn a_single_page_is_not_paginated_and_zero_page_size_sends_no_limit() {
        let lw = fake(3);
        let paged = ListPager::new(500)
            .list(&lw, ListOptions::default())
            .await
            .unwrap();
        assert!(!paged.paginated);
        let paged = ListPager::new(0)
            .list(&lw, ListOptions::default())
            .await
            .unwrap();
        assert_eq!(paged.list.items.len(), 3);
        assert_eq!(lw.list_calls()[1].limit, None);
    }

    #[tokio::test]
    async fn an_expired_continue_token_falls_back_to_a_full_list_at_the_requested_version() {
        let lw = fake(5);
        lw.push_list_ok();
        lw.push_list_error(ApiStatus::expired("continue expired"));
        let options = ListOptions {
            resource_version: Some("3".into()),
            resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
            ..ListOptions::default()
        };
        let paged = ListPager::new(2).list(&lw, options).await.unwrap();
        assert_eq!(paged.list.items.len(), 5, "only the full list's items");
        let calls = lw.list_calls();
        assert_eq!(calls.len(), 3);
        assert_eq!(calls[2].resource_version.as_deref(), Some("3"));
        assert_eq!(
            calls[2].resource_version_match,
            Some(ResourceVersionMatch::NotOlderThan)
        );
        assert_eq!(calls[2].limit, None);
        assert_eq!(calls[2].continue_token, None);
    }

    #[tokio::test]
    async fn a_compacted_change_log_expires_continue_tokens() {
        let lw = fake(4);
        let first = lw
            .list(&ListOptions {
                limit: Some(2),
                ..ListOptions::default()
            })
            .await
            .unwrap();
        lw.reset_change_log();
        let err = lw
            .list(&ListOptions {
                limit: Some(2),
                continue_token: first.continue_token,
                ..ListOptions::default()
            })
            .await
            .unwrap_err();
        assert!(err.is_expired());
    }

    #[tokio::test]
    async fn expired_on_the_first_page_or_other_errors_are_returned() {
        let lw = fake(5);
        lw.push_list_error(ApiStatus::expired("old"));
        let err = ListPager::new(2)
            .list(&lw, ListOptions::default())
            .await
            .unwrap_err();
        assert!(err.is_expired());
        lw.push_list_ok();
        lw.push_list_error(ApiStatus::internal_error("boom"));
        let err = ListPager::new(2)
            .list(&lw, ListOptions::default())
            .await
            .unwrap_err();
        assert!(err.is_internal_error());
        lw.push_list_ok();
        lw.push_list_error(ApiStatus::expired("old"));
        let err = ListPager::new(2)
            .full_list_if_expired(false)
            .list(&lw, ListOptions::default())
            .await
            .unwrap_err();
        assert!(err.is_expired());
    }

    #[tokio::test]
    async fn undecodable_items_of_every_page_are_kept() {
        let lw = fake(3);
        lw.push_list_undecodable(DecodeError::new("bad"));
        let paged = ListPager::new(1)
            .list(&lw, ListOptions::default())
            .await
            .unwrap();
        assert_eq!(paged.list.undecodable.len(), 1);
        assert_eq!(paged.list.items.len(), 3);
    }

    /// A source that starts the next page's request before handing over a page, as the
    /// kube source does. With `hang` set, such a request never completes; each hanging one
    /// holds a sender whose receiver (in `hanging`) learns when it is dropped.
    #[derive(Clone)]
    struct Prefetching {
        lw: FakeListerWatcher<ConfigMap>,
        /// Label each request with another token than the page's.
        wrong_token: bool,
        hang: Arc<AtomicBool>,
        hanging: Arc<Mutex<Vec<oneshot::Receiver<()>>>>,
    }

    impl Prefetching {
        fn new(lw: FakeListerWatcher<ConfigMap>) -> Self {
            Self {
                lw,
                wrong_token: false,
                hang: Arc::default(),
                hanging: Arc::default(),
            }
        }

        /// The page listed with `options`, the next page's request started.
        fn prefetched(
            self,
            options: ListOptions,
            list: Result<ObjectList<ConfigMap>, ListWatchError>,
        ) -> BoxFuture<'static, Result<PrefetchedPage<ConfigMap>, ListWatchError>> {
            async move {
                let list = list?;
                let Some(token) = list.continue_token.clone() else {
                    return Ok(PrefetchedPage::alone(list));
                };
                let next = options.next_page(&token);
                let (lw, hanging) = (self.lw.clone(), self.hang.load(Ordering::SeqCst));
                let guard = hanging.then(|| {
                    let (tx, rx) = oneshot::channel::<()>();
                    self.hanging.lock().push(rx);
                    tx
                });
                let request = next.clone();
                let fetch = async move {
                    if let Some(_guard) = guard {
                        std::future::pending::<()>().await;
                    }
                    lw.list(&request).await
                };
                let label = if self.wrong_token {
                    format!("{token}-other")
                } else {
                    token
                };
                let then = move |page| self.prefetched(next, page);
                Ok(PrefetchedPage::with_next(
                    list,
                    Some(NextPage::start(label, fetch, then).await),
                ))
            }
            .boxed()
        }
    }

    impl ListerWatcher<ConfigMap> for Prefetching {
        fn list(
            &self,
            options: &ListOptions,
        ) -> impl Future<Output = Result<ObjectList<ConfigMap>, ListWatchError>> + Send {
            self.lw.list(options)
        }

        fn list_prefetching(
            &self,
            options: &ListOptions,
        ) -> impl Future<Output = Result<PrefetchedPage<ConfigMap>, ListWatchError>> + Send
        {
            let (this, options) = (self.clone(), options.clone());
            async move {
                let list = this.lw.list(&options).await;
                this.prefetched(options, list).await
            }
        }

        fn watch(
            &self,
            options: &WatchOptions,
        ) -> impl Future<Output = Result<WatchStream<ConfigMap>, ListWatchError>> + Send {
            self.lw.watch(options)
        }
    }

    fn items(page: Option<Page<ConfigMap>>) -> Vec<String> {
        match page {
            Some(Page::Items(list)) => names(&list),
            other => panic!("expected a page, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn prefetched_pages_are_the_pages_listed_one_by_one() {
        let (plain, prefetching) = (fake(7), Prefetching::new(fake(7)));
        let options = ListOptions {
            resource_version: Some("0".into()),
            resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
            ..ListOptions::default()
        };
        let mut pages = ListPager::new(3).pages(&prefetching, options.clone());
        assert_eq!(items(pages.next().await.unwrap()).len(), 3);
        assert_eq!(
            prefetching.lw.list_calls().len(),
            2,
            "the second page was requested before the first was handed over"
        );
        drop(pages);
        let expected = ListPager::new(3)
            .list(&plain, options.clone())
            .await
            .unwrap();
        let before = prefetching.lw.list_calls().len();
        let got = ListPager::new(3).list(&prefetching, options).await.unwrap();
        assert_eq!(names(&got.list), names(&expected.list));
        assert_eq!(got.list.resource_version, expected.list.resource_version);
        assert_eq!(got.paginated, expected.paginated);
        assert_eq!(
            prefetching.lw.list_calls()[before..],
            plain.list_calls()[..]
        );
    }

    #[tokio::test]
    async fn a_prefetched_request_for_another_token_is_abandoned() {
        let mut prefetching = Prefetching::new(fake(5));
        prefetching.wrong_token = true;
        prefetching.hang.store(true, Ordering::SeqCst);
        let paged = ListPager::new(2)
            .list(&prefetching, ListOptions::default())
            .await
            .unwrap();
        assert_eq!(
            names(&paged.list),
            names(&fake(5).list(&ListOptions::default()).await.unwrap())
        );
        let hanging = std::mem::take(&mut *prefetching.hanging.lock());
        assert_eq!(hanging.len(), 2, "one for each continued page");
        for dropped in hanging {
            assert!(dropped.await.is_err(), "the request was abandoned");
        }
    }

    #[tokio::test]
    async fn an_expired_continue_token_of_a_prefetched_request_falls_back_to_a_full_list() {
        let prefetching = Prefetching::new(fake(5));
        prefetching.lw.push_list_ok();
        prefetching
            .lw
            .push_list_error(ApiStatus::expired("continue expired"));
        let mut pages = ListPager::new(2).pages(&prefetching, ListOptions::default());
        assert_eq!(items(pages.next().await.unwrap()).len(), 2);
        assert!(matches!(pages.next().await, Ok(Some(Page::Restart))));
        assert_eq!(items(pages.next().await.unwrap()).len(), 5);
        assert!(pages.next().await.unwrap().is_none());
        let calls = prefetching.lw.list_calls();
        assert_eq!(calls.len(), 3);
        assert!(calls[1].continue_token.is_some());
        assert_eq!(
            (calls[2].limit, calls[2].continue_token.as_deref()),
            (None, None)
        );
    }

    #[tokio::test]
    async fn the_error_of_a_prefetched_request_is_the_error_of_a_plain_one() {
        let (plain, prefetching) = (fake(5), Prefetching::new(fake(5)));
        for lw in [&plain, &prefetching.lw] {
            lw.push_list_ok();
            lw.push_list_error(ApiStatus::internal_error("boom"));
        }
        let expected = ListPager::new(2)
            .list(&plain, ListOptions::default())
            .await
            .unwrap_err();
        let got = ListPager::new(2)
            .list(&prefetching, ListOptions::default())
            .await
            .unwrap_err();
        assert!(got.is_internal_error());
        assert_eq!(got, expected);
    }

    #[tokio::test]
    async fn dropping_the_pages_aborts_the_prefetched_request() {
        let prefetching = Prefetching::new(fake(5));
        prefetching.hang.store(true, Ordering::SeqCst);
        let mut pages = ListPager::new(2).pages(&prefetching, ListOptions::default());
        assert_eq!(items(pages.next().await.unwrap()).len(), 2);
        let hanging = std::mem::take(&mut *prefetching.hanging.lock());
        assert_eq!(hanging.len(), 1);
        drop(pages);
        for dropped in hanging {
            let dropped = tokio::time::timeout(Duration::from_secs(30), dropped).await;
            assert!(matches!(dropped, Ok(Err(_))), "the request was aborted");
        }
    }

    #[tokio::test]
    async fn a_dropped_call_is_made_again() {
        let prefetching = Prefetching::new(fake(5));
        prefetching.hang.store(true, Ordering::SeqCst);
        let mut pages = ListPager::new(2).pages(&prefetching, ListOptions::default());
        assert_eq!(items(pages.next().await.unwrap()), ["cm-000", "cm-001"]);
        assert!(pages.next().now_or_never().is_none(), "the request hangs");
        prefetching.hang.store(false, Ordering::SeqCst);
        assert_eq!(items(pages.next().await.unwrap()), ["cm-002", "cm-003"]);
        assert_eq!(items(pages.next().await.unwrap()), ["cm-004"]);
        assert!(pages.next().await.unwrap().is_none());
        let hanging = std::mem::take(&mut *prefetching.hanging.lock());
        for dropped in hanging {
            assert!(dropped.await.is_err());
        }
    }
}
