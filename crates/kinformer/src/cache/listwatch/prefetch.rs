//! A list page with the next page's request already under way
//! ([`ListerWatcher::list_prefetching`](super::ListerWatcher::list_prefetching)), so that the
//! server's work on page n+1 overlaps the client's decoding of page n.

use std::fmt;
use std::future::Future;

use futures::StreamExt;
use futures::future::{BoxFuture, FutureExt};
use futures::stream::BoxStream;
use tokio_util::task::AbortOnDropHandle;

use crate::cache::listwatch::{ListWatchError, ObjectList};

/// A listed page and, when its source started it, the request for the page after it; or,
/// when the page's response streams in, the part of it decoded so far and the rest.
#[derive(Debug)]
pub struct PrefetchedPage<K> {
    /// The page, or with `rest` set, a part of it: its items only, no metadata.
    pub list: ObjectList<K>,
    /// The request for the page that `list.continue_token` continues to, if already started.
    pub next: Option<NextPage<K>>,
    /// The rest of the page's response, when it streams in ([`ListRest`]): `list` is then a
    /// part, and the page's last part carries the page's metadata.
    pub rest: Option<ListRest<K>>,
}

impl<K> PrefetchedPage<K> {
    /// A page whose next page is not being fetched.
    pub fn alone(list: ObjectList<K>) -> Self {
        Self {
            list,
            next: None,
            rest: None,
        }
    }

    /// A page and the request for the page after it.
    pub fn with_next(list: ObjectList<K>, next: Option<NextPage<K>>) -> Self {
        Self {
            list,
            next,
            rest: None,
        }
    }
}

/// One part of a page that streams in, and whether it is the last (then it carries the page's
/// resource version, continue token and remaining item count).
pub type ListPart<K> = (ObjectList<K>, bool);

/// The rest of a list response decoded as it streams in: its parts in order, items only,
/// the last with the page's metadata.
///
/// A source hands one out ([`PrefetchedPage::rest`]) when a response is too large to hold
/// whole (say a list at `resourceVersion=0`, which a real API server's watch cache answers in
/// one response whatever `limit` says): the pager then hands its parts over one by one, as it
/// does pages, and a reflector applies them as they come instead of holding the list.
pub struct ListRest<K> {
    parts: BoxStream<'static, Result<ListPart<K>, ListWatchError>>,
}

impl<K> fmt::Debug for ListRest<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ListRest").finish_non_exhaustive()
    }
}

impl<K> ListRest<K> {
    /// The rest of a response as a stream of parts; the last part says so. A stream that
    /// ends without its last part is a failed list.
    pub fn new(parts: BoxStream<'static, Result<ListPart<K>, ListWatchError>>) -> Self {
        Self { parts }
    }

    /// The next part: a [`PrefetchedPage`] with `rest` set while more parts follow, or the
    /// last part, with the page's metadata and no `rest`.
    ///
    /// # Errors
    /// The response's failure (a body cut off, a malformed item framing, a transport error).
    ///
    /// # Cancel safety
    /// Dropping the future abandons the response.
    pub async fn next(mut self) -> Result<PrefetchedPage<K>, ListWatchError> {
        match self.parts.next().await {
            Some(Ok((list, true))) => Ok(PrefetchedPage::alone(list)),
            Some(Ok((list, false))) => Ok(PrefetchedPage {
                list,
                next: None,
                rest: Some(self),
            }),
            Some(Err(e)) => Err(e),
            None => Err(ListWatchError::transport(
                "the list response ended before its last part",
            )),
        }
    }

    /// Every remaining part joined onto `list` (a part), as one page: for a caller that
    /// wants the page whole.
    ///
    /// # Errors
    /// As [`next`](Self::next).
    ///
    /// # Cancel safety
    /// Dropping the future abandons the response.
    pub async fn join(self, mut list: ObjectList<K>) -> Result<ObjectList<K>, ListWatchError> {
        let mut rest = self;
        loop {
            let part = rest.next().await?;
            let mut more = part.list;
            list.items.append(&mut more.items);
            list.undecodable.append(&mut more.undecodable);
            match part.rest {
                Some(r) => rest = r,
                None => {
                    list.resource_version = more.resource_version;
                    list.continue_token = more.continue_token;
                    list.remaining_item_count = more.remaining_item_count;
                    return Ok(list);
                }
            }
        }
    }
}

/// The request for a list's next page, started before that page was asked for.
///
/// [`page`](Self::page) waits for it and decodes it; dropping it abandons the request (a
/// spawned fetch is aborted, see [`NextPage::start`]).
pub struct NextPage<K> {
    continue_token: String,
    page: BoxFuture<'static, Result<PrefetchedPage<K>, ListWatchError>>,
}

impl<K> fmt::Debug for NextPage<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NextPage")
            .field("continue_token", &self.continue_token)
            .finish_non_exhaustive()
    }
}

impl<K> NextPage<K> {
    /// Starts the request for the next page of a list, continued with `continue_token`:
    /// `fetch` runs on a task of its own from now on, and `then` turns its output into the
    /// page on the task that awaits [`page`](Self::page). Dropping the `NextPage` aborts
    /// `fetch`; a panic in `fetch` resumes on the awaiting task.
    ///
    /// `fetch` starts while the caller goes on (say, decoding the previous page): on another
    /// worker of a multi-thread runtime, the caller keeping its own; on a current-thread
    /// runtime the caller yields once, so that `fetch` runs (and sends its request) first.
    ///
    /// # Panics
    /// Outside a tokio runtime.
    pub async fn start<T, F, D, P>(continue_token: String, fetch: F, then: D) -> Self
    where
        T: Send + 'static,
        F: Future<Output = T> + Send + 'static,
        D: FnOnce(T) -> P + Send + 'static,
        P: Future<Output = Result<PrefetchedPage<K>, ListWatchError>> + Send + 'static,
    {
        let mut fetch = AbortOnDropHandle::new(tokio::spawn(fetch));
        let page = async move {
            match (&mut fetch).await {
                Ok(fetched) => then(fetched).await,
                Err(e) => match e.try_into_panic() {
                    Ok(panic) => std::panic::resume_unwind(panic),
                    // Only a runtime shutting down cancels it (the handle is alive).
                    Err(e) => Err(ListWatchError::transport(format!(
                        "the next page's request did not finish: {e}"
                    ))),
                },
            }
        }
        .boxed();
        let_it_start().await;
        Self {
            continue_token,
            page,
        }
    }

    /// The continue token the request was made with: the previous page's.
    pub fn continue_token(&self) -> &str {
        &self.continue_token
    }

    /// The page (and possibly the request for the page after it).
    ///
    /// # Errors
    /// The page's error, as [`ListerWatcher::list`](super::ListerWatcher::list) gives it.
    ///
    /// # Cancel safety
    /// Dropping the future abandons the request.
    pub async fn page(self) -> Result<PrefetchedPage<K>, ListWatchError> {
        self.page.await
    }
}

/// Lets the task just spawned by the calling task start while the caller goes on.
///
/// tokio puts a task spawned on a worker of its multi-thread runtime in that worker's LIFO
/// slot, which the other workers do not steal from: it would wait until the spawning task
/// returns to the scheduler. Spawning an empty task moves it to the worker's run queue and
/// wakes an idle worker, which takes it at once, while the caller keeps its worker (a
/// `yield_now` would instead queue the caller behind whatever else its worker has to run, such
/// as the consumer of the pages). On a current-thread runtime the caller yields, so that the
/// spawned task runs first.
async fn let_it_start() {
    use tokio::runtime::{Handle, RuntimeFlavor};
    if Handle::current().runtime_flavor() == RuntimeFlavor::CurrentThread {
        tokio::task::yield_now().await;
    } else {
        drop(tokio::spawn(async {}));
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;

    fn page(
        n: usize,
    ) -> impl Future<Output = Result<PrefetchedPage<ConfigMap>, ListWatchError>> + Send {
        std::future::ready(Ok(PrefetchedPage::alone(ObjectList {
            resource_version: n.to_string(),
            ..ObjectList::default()
        })))
    }

    #[tokio::test]
    async fn the_fetch_runs_before_the_caller_goes_on_and_then_makes_the_page() {
        let (tx, mut rx) = tokio::sync::oneshot::channel();
        let fetch = async move {
            let _ = tx.send(());
            7
        };
        let next = NextPage::start("tok".into(), fetch, page).await;
        assert!(rx.try_recv().is_ok(), "the fetch has run");
        assert_eq!(next.continue_token(), "tok");
        let got = next.page().await.unwrap();
        assert_eq!(got.list.resource_version, "7");
        assert!(got.next.is_none());
    }

    #[tokio::test]
    #[should_panic(expected = "broken fetch")]
    async fn a_panic_in_the_fetch_resumes_on_the_awaiting_task() {
        let fetch = async { panic!("broken fetch") };
        let next = NextPage::<ConfigMap>::start("tok".into(), fetch, page).await;
        let _ = next.page().await;
    }
}
