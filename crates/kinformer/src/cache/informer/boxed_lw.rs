//! A type-erased [`ListerWatcher`], so that an informer is generic over the object type only.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::future::{BoxFuture, FutureExt};

use crate::cache::listwatch::{
    ListOptions, ListWatchError, ListerWatcher, ObjectList, PrefetchedPage, WatchListSupport,
    WatchOptions, WatchStream,
};

/// The object-safe twin of [`ListerWatcher`] (which returns `impl Future`).
trait DynListerWatcher<K>: Send + Sync + 'static {
    fn list_boxed(
        &self,
        options: ListOptions,
    ) -> BoxFuture<'_, Result<ObjectList<K>, ListWatchError>>;
    fn list_prefetching_boxed(
        &self,
        options: ListOptions,
    ) -> BoxFuture<'_, Result<PrefetchedPage<K>, ListWatchError>>;
    fn watch_boxed(
        &self,
        options: WatchOptions,
    ) -> BoxFuture<'_, Result<WatchStream<K>, ListWatchError>>;
    fn dyn_watch_list_support(&self) -> Option<&WatchListSupport>;
}

impl<K: 'static, L: ListerWatcher<K>> DynListerWatcher<K> for L {
    fn list_boxed(
        &self,
        options: ListOptions,
    ) -> BoxFuture<'_, Result<ObjectList<K>, ListWatchError>> {
        async move { self.list(&options).await }.boxed()
    }
    fn list_prefetching_boxed(
        &self,
        options: ListOptions,
    ) -> BoxFuture<'_, Result<PrefetchedPage<K>, ListWatchError>> {
        async move { self.list_prefetching(&options).await }.boxed()
    }
    fn watch_boxed(
        &self,
        options: WatchOptions,
    ) -> BoxFuture<'_, Result<WatchStream<K>, ListWatchError>> {
        async move { self.watch(&options).await }.boxed()
    }
    fn dyn_watch_list_support(&self) -> Option<&WatchListSupport> {
        self.watch_list_support()
    }
}

/// Any [`ListerWatcher<K>`] behind an `Arc`; cheap to clone.
pub(crate) struct BoxedListerWatcher<K> {
    inner: Arc<dyn DynListerWatcher<K>>,
}

impl<K> Clone for BoxedListerWatcher<K> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<K> fmt::Debug for BoxedListerWatcher<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BoxedListerWatcher").finish_non_exhaustive()
    }
}

impl<K: 'static> BoxedListerWatcher<K> {
    pub(crate) fn new(lw: impl ListerWatcher<K>) -> Self {
        Self {
            inner: Arc::new(lw),
        }
    }
}

impl<K: Send + 'static> ListerWatcher<K> for BoxedListerWatcher<K> {
    fn list(
        &self,
        options: &ListOptions,
    ) -> impl Future<Output = Result<ObjectList<K>, ListWatchError>> + Send {
        self.inner.list_boxed(options.clone())
    }

    fn list_prefetching(
        &self,
        options: &ListOptions,
    ) -> impl Future<Output = Result<PrefetchedPage<K>, ListWatchError>> + Send {
        self.inner.list_prefetching_boxed(options.clone())
    }

    fn watch(
        &self,
        options: &WatchOptions,
    ) -> impl Future<Output = Result<WatchStream<K>, ListWatchError>> + Send {
        self.inner.watch_boxed(options.clone())
    }

    fn watch_list_support(&self) -> Option<&WatchListSupport> {
        self.inner.dyn_watch_list_support()
    }
}
