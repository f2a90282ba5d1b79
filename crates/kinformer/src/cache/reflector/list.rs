//! Lists: the whole list handed over in one replace, or page by page (a paged list, or a
//! list that streams in, in parts of a page's size) to a sink that takes a paged replace,
//! waiting for room in its queue between pages.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use kube_core::Resource;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info};

use super::{ErrorClass, Input, Reflector, ReflectorError, ReflectorStats};
use crate::cache::listwatch::{
    DEFAULT_PAGE_SIZE, ListOptions, ListPager, ListWatchError, ListerWatcher, ObjectList, Page,
    PagedList,
};
use crate::cache::meta::CacheError;

impl<K, L> Reflector<K, L>
where
    K: Resource + Send + Sync + 'static,
    L: ListerWatcher<K>,
{
    pub(super) async fn list(
        &self,
        options: ListOptions,
        cancel: &CancellationToken,
    ) -> Option<Input> {
        let pager = ListPager::new(options.limit.unwrap_or(0));
        debug!(reflector = %self.name, ?options, "listing");
        ReflectorStats::bump(&self.stats.lists);
        let input = if self.sink.begin_paged_replace() {
            self.list_paged(pager, options, cancel).await
        } else {
            self.list_joined(pager, options, cancel).await
        };
        if let Some(Input::ListFailed(_)) = input {
            ReflectorStats::bump(&self.stats.list_failures);
        }
        input
    }

    /// A list joined by the pager and handed to the sink in one `replace`.
    async fn list_joined(
        &self,
        pager: ListPager,
        options: ListOptions,
        cancel: &CancellationToken,
    ) -> Option<Input> {
        let result = tokio::select! {
            biased;
            () = cancel.cancelled() => return None,
            r = pager.list(&self.lw, options) => r,
        };
        let PagedList { list, paginated } = match result {
            Ok(p) => p,
            Err(e) => return self.list_failed(e),
        };
        let resource_version = list.resource_version.clone();
        let items = self.named_items(list);
        let count = items.len();
        if let Err(source) = self.listed(count, || self.sink.replace(items, &resource_version)) {
            self.report(ReflectorError::Sink {
                operation: "replace",
                source,
            });
            return Some(Input::ListFailed(ErrorClass::Other { retry_after: None }));
        }
        info!(
            reflector = %self.name,
            count,
            resource_version = %resource_version,
            paginated,
            "listed"
        );
        Some(Input::ListSucceeded {
            resource_version,
            paginated,
        })
    }

    /// Reports a failed list.
    fn list_failed(&self, e: ListWatchError) -> Option<Input> {
        let class = ErrorClass::of(&e);
        self.report(ReflectorError::List(e));
        Some(Input::ListFailed(class))
    }

    /// A list's (or page's) objects with a name; the undecodable and the nameless reported.
    fn named_items(&self, list: ObjectList<K>) -> Vec<Arc<K>> {
        for d in list.undecodable {
            self.report(ReflectorError::Undecodable(d));
        }
        let mut items = list.items;
        items.retain(|o| self.is_named(o, "LIST"));
        items
    }

    /// A list handed to the sink page by page (see
    /// [`ReflectorSink::begin_paged_replace`]): each page's objects are queued as it arrives.
    async fn list_paged(
        &self,
        pager: ListPager,
        options: ListOptions,
        cancel: &CancellationToken,
    ) -> Option<Input> {
        // At most two pages' objects wait in the queue: decoding runs ahead of the consumer
        // by a page or two, not by the whole list.
        // (A list without a limit that streams in comes in parts of a page's size.)
        let page = match pager.page_size() {
            0 => DEFAULT_PAGE_SIZE,
            size => size,
        };
        let backlog = 2 * page as usize;
        let sink_failed = |source| {
            self.report(ReflectorError::Sink {
                operation: "replace",
                source,
            });
            Some(Input::ListFailed(ErrorClass::Other { retry_after: None }))
        };
        let mut pages = pager.pages(&self.lw, options);
        let mut count = 0usize;
        // The page decoded last, not yet handed over: it waits for room in the queue while
        // the next page is fetched, so the server's work on a page overlaps ours on the last.
        let mut held: Option<Vec<Arc<K>>> = None;
        loop {
            let hand_over = async {
                match held.take() {
                    Some(items) => {
                        self.sink.room_for_page(backlog).await;
                        self.sink.replace_page(items)
                    }
                    None => Ok(()),
                }
            };
            let (next, handed) = tokio::select! {
                biased;
                () = cancel.cancelled() => return None,
                r = async { tokio::join!(pages.next(), hand_over) } => r,
            };
            if let Err(source) = handed {
                return sink_failed(source);
            }
            let list = match next {
                // A part of a page that streams in goes over as a page does.
                Ok(Some(Page::Items(list) | Page::Part(list))) => list,
                Ok(Some(Page::Restart)) => {
                    // The pages so far are an older snapshot: the finish must judge by the
                    // full list alone.
                    count = 0;
                    self.sink.begin_paged_replace();
                    continue;
                }
                Ok(None) => break,
                Err(e) => return self.list_failed(e),
            };
            let remaining = list.remaining_item_count;
            let items = self.named_items(list);
            count += items.len();
            // The first page (of this attempt) says how large the list is.
            if count == items.len()
                && let Some(remaining) = remaining.and_then(|r| usize::try_from(r).ok())
            {
                self.sink.list_size_hint(count.saturating_add(remaining));
            }
            held = Some(items);
        }
        // The last page went over with the call that found the list complete; hand over
        // whatever is still held all the same.
        if let Some(items) = held.take() {
            tokio::select! {
                biased;
                () = cancel.cancelled() => return None,
                () = self.sink.room_for_page(backlog) => {}
            }
            if let Err(source) = self.sink.replace_page(items) {
                return sink_failed(source);
            }
        }
        let Some(listed) = pages.listed() else {
            return sink_failed(CacheError::NoPagedReplace);
        };
        if let Err(source) = self.listed(count, || {
            self.sink.finish_paged_replace(&listed.resource_version)
        }) {
            return sink_failed(source);
        }
        info!(
            reflector = %self.name,
            count,
            resource_version = %listed.resource_version,
            paginated = listed.paginated,
            "listed (page by page)"
        );
        Some(Input::ListSucceeded {
            resource_version: listed.resource_version,
            paginated: listed.paginated,
        })
    }

    /// Runs `complete`, the sink write that completes a list of `count` objects, counting
    /// them first: whoever sees the list's effect (the cache, the informer synced) then sees
    /// it counted. Uncounted again if the write fails.
    pub(super) fn listed<E>(
        &self,
        count: usize,
        complete: impl FnOnce() -> Result<(), E>,
    ) -> Result<(), E> {
        let listed = &self.stats.listed_objects;
        listed.fetch_add(count as u64, Ordering::Relaxed);
        let r = complete();
        if r.is_err() {
            listed.fetch_sub(count as u64, Ordering::Relaxed);
        }
        r
    }
}
