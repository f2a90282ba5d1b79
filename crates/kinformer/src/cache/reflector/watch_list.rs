//! The watch-list protocol (`sendInitialEvents`): a watch whose first events are the
//! collection's current state, closed by the initial-events-end bookmark, after which it goes
//! on as a watch.
//!
//! The initial state reaches the sink in one of two ways:
//! - **Streamed**, when the sink takes a paged replace
//!   ([`ReflectorSink::begin_paged_replace`]: informers' queues for the first list, and for
//!   relists unless their relists are atomic): the initial events are handed over in batches
//!   of a page as they arrive, waiting for room in the queue between batches, and the end
//!   bookmark finishes the replace. Memory holds the cache plus a window, never the list.
//!   A `DELETED` event among the initial events (servers send only `ADDED` there) cannot be
//!   taken back from batches already handed over: the attempt falls back to list + watch,
//!   whose list repairs the cache.
//! - **Gathered**, otherwise: a temporary store in arrival order (a `MODIFIED` replaces a key's
//!   object, a `DELETED` empties its slot), handed over in one `replace` at the bookmark.
//!
//! A stream that ends, errs or carries an undecodable event before the bookmark fails the
//! attempt; the reflector falls back to list + watch for it (nothing may be skipped in an
//! initial state).

use std::collections::HashMap;
use std::sync::Arc;

use futures::StreamExt;
use kube_core::Resource;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info};

use super::{ErrorClass, Input, Reflector, ReflectorError, watch_timeout};
use crate::cache::listwatch::{
    DEFAULT_PAGE_SIZE, ListWatchError, ListerWatcher, WatchEvent, WatchListProbe, WatchListSupport,
    WatchOptions, WatchStream,
};
use crate::cache::meta::ObjectKey;

/// What a watch-list attempt ends with: the machine's input, and the stream to go on
/// watching with once the initial state is synced.
type Outcome<K> = Option<(Input, Option<WatchStream<K>>)>;

/// One initial event, as the two ways of taking the initial state see it.
enum Initial<K> {
    /// `ADDED` or `MODIFIED` of a named object.
    Upsert(ObjectKey, Arc<K>),
    /// `DELETED` of a named object.
    Delete(ObjectKey),
    /// The initial-events-end bookmark, at this resource version.
    End(String),
}

impl<K, L> Reflector<K, L>
where
    K: Resource + Send + Sync + 'static,
    L: ListerWatcher<K>,
{
    /// Runs a watch-list; `probe` is answered when this request is the one finding out
    /// whether the server supports watch-list.
    pub(super) async fn watch_list(
        &self,
        mut options: WatchOptions,
        probe: Option<WatchListProbe>,
        cancel: &CancellationToken,
    ) -> Outcome<K> {
        options.timeout = Some(watch_timeout(self.min_watch_timeout, rand::random()));
        debug!(reflector = %self.name, ?options, "starting watch-list");
        let started = tokio::select! {
            biased;
            () = cancel.cancelled() => return None,
            r = self.lw.watch(&options) => r,
        };
        let stream = match started {
            Ok(s) => {
                if let Some(probe) = probe {
                    probe.supported();
                }
                s
            }
            Err(e) if e.is_watch_list_unsupported() => {
                let news = self
                    .lw
                    .watch_list_support()
                    .is_none_or(WatchListSupport::set_unsupported);
                drop(probe);
                if news {
                    info!(
                        reflector = %self.name,
                        error = %e,
                        "the server does not support watch-list; listing and watching from now on"
                    );
                } else {
                    debug!(reflector = %self.name, error = %e, "watch-list refused (known)");
                }
                return Some((Input::WatchListUnsupported, None));
            }
            Err(e) => return self.watch_list_failed(e),
        };
        if self.sink.begin_paged_replace() {
            self.initial_events_streamed(stream, cancel).await
        } else {
            self.initial_events_gathered(stream, cancel).await
        }
    }

    /// The initial events handed over in batches as they arrive (see the module docs).
    async fn initial_events_streamed(
        &self,
        mut stream: WatchStream<K>,
        cancel: &CancellationToken,
    ) -> Outcome<K> {
        let page = DEFAULT_PAGE_SIZE as usize;
        let backlog = 2 * page;
        let mut batch: Vec<Arc<K>> = Vec::with_capacity(page);
        let mut count = 0usize;
        loop {
            let initial = match self.next_initial(&mut stream, cancel).await {
                Ok(Some(i)) => i,
                Ok(None) => continue,
                Err(outcome) => return outcome,
            };
            let end = match initial {
                Initial::Upsert(_, obj) => {
                    batch.push(obj);
                    None
                }
                Initial::Delete(key) => {
                    info!(
                        reflector = %self.name,
                        %key,
                        "a DELETED event among a watch-list's initial events; listing instead"
                    );
                    return Self::fall_back();
                }
                Initial::End(rv) => Some(rv),
            };
            if batch.len() >= page || (end.is_some() && !batch.is_empty()) {
                tokio::select! {
                    biased;
                    () = cancel.cancelled() => return None,
                    () = self.sink.room_for_page(backlog) => {}
                }
                count += batch.len();
                let items = std::mem::replace(&mut batch, Vec::with_capacity(page));
                if let Err(source) = self.sink.replace_page(items) {
                    return self.sink_failed(source);
                }
            }
            if let Some(rv) = end {
                if let Err(source) = self.listed(count, || self.sink.finish_paged_replace(&rv)) {
                    return self.sink_failed(source);
                }
                return self.watch_list_synced(count, rv, stream);
            }
        }
    }

    /// The initial events gathered in a temporary store and handed over in one `replace`.
    async fn initial_events_gathered(
        &self,
        mut stream: WatchStream<K>,
        cancel: &CancellationToken,
    ) -> Outcome<K> {
        // Objects in arrival order, a key's slot emptied on delete.
        let mut slots: Vec<Option<Arc<K>>> = Vec::new();
        let mut index: HashMap<ObjectKey, usize> = HashMap::new();
        loop {
            let initial = match self.next_initial(&mut stream, cancel).await {
                Ok(Some(i)) => i,
                Ok(None) => continue,
                Err(outcome) => return outcome,
            };
            match initial {
                Initial::Upsert(key, obj) => match index.get(&key) {
                    Some(&i) => slots[i] = Some(obj),
                    None => {
                        index.insert(key, slots.len());
                        slots.push(Some(obj));
                    }
                },
                Initial::Delete(key) => {
                    if let Some(i) = index.remove(&key) {
                        slots[i] = None;
                    }
                }
                Initial::End(rv) => {
                    let items: Vec<Arc<K>> = slots.into_iter().flatten().collect();
                    let count = items.len();
                    if let Err(source) = self.listed(count, || self.sink.replace(items, &rv)) {
                        return self.sink_failed(source);
                    }
                    return self.watch_list_synced(count, rv, stream);
                }
            }
        }
    }

    /// The next initial event: `Ok(None)` for one that changes nothing (a bookmark before the
    /// end, a nameless object, reported); `Err` with the attempt's outcome when the stream
    /// ends, fails or `cancel` fires.
    async fn next_initial(
        &self,
        stream: &mut WatchStream<K>,
        cancel: &CancellationToken,
    ) -> Result<Option<Initial<K>>, Outcome<K>> {
        let item = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(None),
            i = stream.next() => i,
        };
        let event = match item {
            None => {
                self.report(ReflectorError::WatchListIncomplete);
                return Err(Self::fall_back());
            }
            Some(Err(ListWatchError::Decode(d))) => {
                // Skipping it could lose an object from the initial state: fall back to a
                // list for this attempt.
                self.report(ReflectorError::WatchUndecodable(d));
                return Err(Self::fall_back());
            }
            Some(Err(e)) => return Err(self.watch_list_failed(e)),
            Some(Ok(event)) => event,
        };
        let type_name = event.type_name();
        Ok(match event {
            WatchEvent::Added(o) | WatchEvent::Modified(o) => self
                .has_key(&o, type_name)
                .map(|key| Initial::Upsert(key, o)),
            WatchEvent::Deleted(o) => self.has_key(&o, type_name).map(Initial::Delete),
            WatchEvent::Bookmark(b) if b.is_initial_events_end() => {
                Some(Initial::End(b.resource_version))
            }
            WatchEvent::Bookmark(_) => None,
            WatchEvent::Error(status) => {
                return Err(self.watch_list_failed(ListWatchError::Api(status)));
            }
        })
    }

    fn watch_list_failed(&self, e: ListWatchError) -> Outcome<K> {
        let class = ErrorClass::of(&e);
        self.report(ReflectorError::WatchList(e));
        Some((Input::WatchListFailed(class), None))
    }

    fn sink_failed(&self, source: crate::cache::meta::CacheError) -> Outcome<K> {
        self.report(ReflectorError::Sink {
            operation: "replace",
            source,
        });
        Self::fall_back()
    }

    /// Falls back to list + watch for this attempt.
    fn fall_back() -> Outcome<K> {
        Some((
            Input::WatchListFailed(ErrorClass::Other { retry_after: None }),
            None,
        ))
    }

    fn watch_list_synced(&self, count: usize, rv: String, stream: WatchStream<K>) -> Outcome<K> {
        info!(
            reflector = %self.name,
            count,
            resource_version = %rv,
            "watch-list synced"
        );
        Some((
            Input::WatchListSynced {
                resource_version: rv,
            },
            Some(stream),
        ))
    }
}
