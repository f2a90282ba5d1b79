//! An in-memory [`ListerWatcher`] for tests and benchmarks, behaving like an API server.
//!
//! - Holds objects and a global resource version bumped by every change, with a change log
//!   that watches replay from; [`FakeListerWatcher::reset_change_log`] compacts it, so older
//!   versions and continue tokens get 410 `Expired`.
//! - Lists page by key order with `limit`/`continue`; a version newer than the current one is
//!   refused as too large.
//! - Watches replay the log after the requested version, then stream live changes; bookmarks
//!   on demand; watch-list (`sendInitialEvents`) streams the state then the end bookmark;
//!   `timeoutSeconds` ends the stream cleanly.
//! - Scripted outcomes, consumed one per call: list errors, watch start errors, fully scripted
//!   watch streams.
//! - Records every [`ListOptions`] and [`WatchOptions`] it receives.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::stream;
use kube_core::Resource;
use parking_lot::Mutex;
use tokio::sync::mpsc;

use crate::cache::listwatch::{
    ApiStatus, Bookmark, DecodeError, ListOptions, ListWatchError, ListerWatcher, ObjectList,
    ResourceVersionMatch, WatchEvent, WatchOptions, WatchStream,
};
use crate::cache::meta::{KeyError, with_key_str};
use crate::cache::store::retire;

use super::objects::Objects;

/// One step of a scripted watch stream.
#[derive(Debug)]
pub enum WatchStep<K> {
    /// Yield this event.
    Event(WatchEvent<K>),
    /// Yield this error item (a [`ListWatchError::Decode`] is skipped by the reflector; any
    /// other ends the watch).
    Error(ListWatchError),
    /// Wait this long (on the tokio clock) before the next step.
    Sleep(Duration),
    /// Never yield again (the watch stays open until dropped).
    Pending,
}

/// What the next `watch` call does.
#[derive(Debug)]
enum WatchPlan<K> {
    Live,
    Fail(ListWatchError),
    Script(Vec<WatchStep<K>>),
}

type Item<K> = Result<WatchEvent<K>, ListWatchError>;

#[derive(Debug)]
struct LiveWatcher<K> {
    tx: mpsc::UnboundedSender<Item<K>>,
    bookmarks: bool,
}

#[derive(Debug)]
struct Inner<K> {
    objects: Objects<K>,
    /// The current resource version (0 = nothing written yet).
    rv: u64,
    /// Changes with versions in `(log_start, rv]`, oldest first.
    log: Vec<(u64, WatchEvent<K>)>,
    /// Versions below this are compacted: watches from them get 410.
    log_start: u64,
    /// Bumped by every compaction; continue tokens of an older epoch get 410.
    epoch: u64,
    list_calls: Vec<ListOptions>,
    watch_calls: Vec<WatchOptions>,
    list_plan: VecDeque<Option<ListWatchError>>,
    list_undecodable: Vec<DecodeError>,
    watch_plan: VecDeque<WatchPlan<K>>,
    watchers: Vec<LiveWatcher<K>>,
}

/// An in-memory list/watch source (see the module docs).
///
/// Cheap to clone; clones share the same state.
///
/// Needs the `testing` feature.
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use futures::StreamExt;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kinformer::cache::testing::FakeListerWatcher;
/// use kinformer::cache::listwatch::{ListOptions, ListerWatcher, WatchEvent, WatchOptions};
/// use kube_core::ObjectMeta;
///
/// let cm = |name: &str| ConfigMap {
///     metadata: ObjectMeta { name: Some(name.into()), namespace: Some("ns".into()), ..Default::default() },
///     ..Default::default()
/// };
/// let lw = FakeListerWatcher::new();
/// lw.add(cm("a")).unwrap();
/// let list = lw.list(&ListOptions::default()).await.unwrap();
/// assert_eq!(list.resource_version, "1");
///
/// let mut watch = lw.watch(&WatchOptions { resource_version: Some("1".into()), ..Default::default() }).await.unwrap();
/// lw.add(cm("b")).unwrap();
/// assert!(matches!(watch.next().await, Some(Ok(WatchEvent::Added(_)))));
/// assert_eq!(lw.watch_calls()[0].resource_version.as_deref(), Some("1"));
/// # });
/// ```
#[derive(Debug)]
pub struct FakeListerWatcher<K> {
    inner: Arc<Mutex<Inner<K>>>,
}

impl<K> Clone for FakeListerWatcher<K> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<K: Resource + Clone + Send + Sync + 'static> Default for FakeListerWatcher<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Resource + Clone + Send + Sync + 'static> FakeListerWatcher<K> {
    /// An empty source at resource version 0.
    pub fn new() -> Self {
        Self {
            inner: Arc::new(Mutex::new(Inner {
                objects: Objects::new(),
                rv: 0,
                log: Vec::new(),
                log_start: 0,
                epoch: 0,
                list_calls: Vec::new(),
                watch_calls: Vec::new(),
                list_plan: VecDeque::new(),
                list_undecodable: Vec::new(),
                watch_plan: VecDeque::new(),
                watchers: Vec::new(),
            })),
        }
    }

    /// Creates an object (watch `ADDED`); returns it with its new resource version.
    ///
    /// Takes the object or an `Arc` of it: an `Arc` held nowhere else is stored as it is (no
    /// copy), a shared one is copied so that the caller's object keeps its version.
    ///
    /// # Errors
    /// [`KeyError::MissingName`] if the object has no name.
    pub fn add(&self, obj: impl Into<Arc<K>>) -> Result<Arc<K>, KeyError> {
        self.write(obj, WatchEvent::Added)
    }

    /// Creates many objects under one lock (seeding large sources); returns how many.
    ///
    /// # Errors
    /// [`KeyError::MissingName`] at the first object without a name; the ones before it stay.
    pub fn add_all(&self, objs: impl IntoIterator<Item = K>) -> Result<usize, KeyError> {
        let mut inner = self.inner.lock();
        let mut replaced = Vec::new();
        let mut n = 0;
        let result = objs.into_iter().try_for_each(|obj| {
            named(&obj)?;
            replaced.extend(inner.put(Arc::new(obj), WatchEvent::Added).1);
            n += 1;
            Ok(())
        });
        drop(inner);
        replaced.into_iter().for_each(retire);
        result.map(|()| n)
    }

    /// Replaces an object (watch `MODIFIED`); returns it with its new resource version.
    ///
    /// Takes the object or an `Arc` of it, as [`add`](Self::add) does.
    ///
    /// # Errors
    /// [`KeyError::MissingName`] if the object has no name.
    pub fn update(&self, obj: impl Into<Arc<K>>) -> Result<Arc<K>, KeyError> {
        self.write(obj, WatchEvent::Modified)
    }

    /// Deletes the object with `key` (watch `DELETED`, carrying its last state at a new
    /// version). Returns that final state, or `None` if there was no such object.
    pub fn delete(&self, key: &str) -> Option<Arc<K>> {
        let mut inner = self.inner.lock();
        let old = inner.objects.remove(key)?;
        inner.rv += 1;
        let rv = inner.rv;
        let mut last = (*old).clone();
        last.meta_mut().resource_version = Some(rv.to_string());
        let last = Arc::new(last);
        inner.publish(rv, WatchEvent::Deleted(Arc::clone(&last)));
        Some(last)
    }

    fn write(
        &self,
        obj: impl Into<Arc<K>>,
        make: fn(Arc<K>) -> WatchEvent<K>,
    ) -> Result<Arc<K>, KeyError> {
        let obj = obj.into();
        named(&*obj)?;
        let (obj, replaced) = self.inner.lock().put(obj, make);
        // The replaced version is released after the lock, and off this thread if this was
        // its last reference.
        if let Some(old) = replaced {
            retire(old);
        }
        Ok(obj)
    }

    /// The current resource version.
    pub fn resource_version(&self) -> String {
        self.inner.lock().rv.to_string()
    }

    /// The stored objects, in key order.
    pub fn objects(&self) -> Vec<Arc<K>> {
        self.inner.lock().objects.values().cloned().collect()
    }

    /// The number of stored objects.
    pub fn len(&self) -> usize {
        self.inner.lock().objects.len()
    }

    /// True when no object is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Compacts the change log: watches from any earlier version and continue tokens issued so
    /// far get 410 `Expired` from now on.
    pub fn reset_change_log(&self) {
        let mut inner = self.inner.lock();
        inner.log.clear();
        inner.log_start = inner.rv;
        inner.epoch += 1;
    }

    /// Sends a `BOOKMARK` at the current version to every live watch that allowed bookmarks.
    pub fn send_bookmark(&self) {
        let mut inner = self.inner.lock();
        let rv = inner.rv.to_string();
        inner.watchers.retain(|w| {
            !w.bookmarks
                || w.tx
                    .send(Ok(WatchEvent::Bookmark(Bookmark::new(rv.clone()))))
                    .is_ok()
        });
    }

    /// Sends an undecodable-object error item to every live watch.
    pub fn send_undecodable(&self, err: DecodeError) {
        let mut inner = self.inner.lock();
        inner
            .watchers
            .retain(|w| w.tx.send(Err(ListWatchError::Decode(err.clone()))).is_ok());
    }

    /// Sends an `ERROR` event with `status` to every live watch and closes them.
    pub fn send_watch_error(&self, status: ApiStatus) {
        let mut inner = self.inner.lock();
        for w in inner.watchers.drain(..) {
            let _ = w.tx.send(Ok(WatchEvent::Error(status.clone())));
        }
    }

    /// Closes every live watch cleanly (as a server timeout does).
    pub fn close_watches(&self) {
        self.inner.lock().watchers.clear();
    }

    /// The number of live watches still open.
    pub fn active_watches(&self) -> usize {
        let mut inner = self.inner.lock();
        inner.watchers.retain(|w| !w.tx.is_closed());
        inner.watchers.len()
    }

    /// The next list call fails with `err` (calls are scripted in order).
    pub fn push_list_error(&self, err: impl Into<ListWatchError>) {
        self.inner.lock().list_plan.push_back(Some(err.into()));
    }

    /// The next list call is served normally (to script an error after a success).
    pub fn push_list_ok(&self) {
        self.inner.lock().list_plan.push_back(None);
    }

    /// The next served list page reports `err` as an undecodable item.
    pub fn push_list_undecodable(&self, err: DecodeError) {
        self.inner.lock().list_undecodable.push(err);
    }

    /// The next watch call fails to start with `err`.
    pub fn push_watch_error(&self, err: impl Into<ListWatchError>) {
        self.inner
            .lock()
            .watch_plan
            .push_back(WatchPlan::Fail(err.into()));
    }

    /// The next watch call is served live (to script something after it).
    pub fn push_watch_live(&self) {
        self.inner.lock().watch_plan.push_back(WatchPlan::Live);
    }

    /// The next watch call returns exactly these steps, then closes cleanly (unless a step is
    /// [`WatchStep::Pending`]).
    pub fn push_watch_script(&self, steps: Vec<WatchStep<K>>) {
        self.inner
            .lock()
            .watch_plan
            .push_back(WatchPlan::Script(steps));
    }

    /// Every list call's options, in order.
    pub fn list_calls(&self) -> Vec<ListOptions> {
        self.inner.lock().list_calls.clone()
    }

    /// Every watch call's options, in order.
    pub fn watch_calls(&self) -> Vec<WatchOptions> {
        self.inner.lock().watch_calls.clone()
    }

    fn serve_list(&self, options: &ListOptions) -> Result<ObjectList<K>, ListWatchError> {
        let mut inner = self.inner.lock();
        inner.list_calls.push(options.clone());
        if let Some(Some(err)) = inner.list_plan.pop_front() {
            return Err(err);
        }
        let current = inner.rv;
        let mut after: Option<String> = None;
        if let Some(token) = options.continue_token.as_deref() {
            let (rv, key) = token
                .split_once(':')
                .and_then(|(rv, key)| Some((rv.parse::<u64>().ok()?, key)))
                .ok_or_else(|| {
                    ListWatchError::from(ApiStatus::new(
                        400,
                        "BadRequest",
                        "invalid continue token",
                    ))
                })?;
            if rv < inner.log_start {
                return Err(ApiStatus::expired(
                    "The provided continue parameter is too old to display a consistent list result.",
                )
                .into());
            }
            after = Some(key.to_owned());
        } else if let Some(rv) = options
            .resource_version
            .as_deref()
            .filter(|rv| !rv.is_empty())
        {
            let requested: u64 = rv.parse().map_err(|_| {
                ListWatchError::from(ApiStatus::new(400, "BadRequest", "invalid resourceVersion"))
            })?;
            if requested > current {
                return Err(ApiStatus::too_large_resource_version(rv, &current.to_string()).into());
            }
            if options.resource_version_match == Some(ResourceVersionMatch::Exact)
                && requested < inner.log_start
            {
                return Err(ApiStatus::expired("too old resource version").into());
            }
        }
        let limit = options.limit.filter(|l| *l > 0).map(|l| l as usize);
        let mut iter = inner.objects.iter_after(after.as_deref());
        let mut items = Vec::new();
        let mut last_key = None;
        while limit.is_none_or(|l| items.len() < l) {
            match iter.next() {
                Some((k, o)) => {
                    items.push(Arc::clone(o));
                    last_key = Some(k.clone());
                }
                None => break,
            }
        }
        let remaining = iter.count();
        let continue_token = match (remaining, last_key) {
            (r, Some(k)) if r > 0 => Some(format!("{}:{k}", inner.epoch)),
            _ => None,
        };
        let undecodable = std::mem::take(&mut inner.list_undecodable);
        Ok(ObjectList {
            items,
            resource_version: current.to_string(),
            continue_token,
            remaining_item_count: (remaining > 0).then_some(remaining as i64),
            undecodable,
        })
    }

    fn serve_watch(&self, options: &WatchOptions) -> Result<WatchStream<K>, ListWatchError> {
        let mut inner = self.inner.lock();
        inner.watch_calls.push(options.clone());
        match inner.watch_plan.pop_front() {
            Some(WatchPlan::Fail(err)) => return Err(err),
            Some(WatchPlan::Script(steps)) => return Ok(scripted(steps)),
            Some(WatchPlan::Live) | None => {}
        }
        let current = inner.rv;
        let rv = options.resource_version_str();
        let mut initial: Vec<Item<K>> = Vec::new();
        if options.send_initial_events {
            let requested: u64 = rv.parse().unwrap_or(0);
            if requested > current {
                return Err(ApiStatus::too_large_resource_version(rv, &current.to_string()).into());
            }
            initial.extend(
                inner
                    .objects
                    .values()
                    .map(|o| Ok(WatchEvent::Added(Arc::clone(o)))),
            );
            initial.push(Ok(WatchEvent::Bookmark(Bookmark::initial_events_end(
                current.to_string(),
            ))));
        } else if rv == "0" {
            initial.extend(
                inner
                    .objects
                    .values()
                    .map(|o| Ok(WatchEvent::Added(Arc::clone(o)))),
            );
        } else if !rv.is_empty() {
            let requested: u64 = rv.parse().map_err(|_| {
                ListWatchError::from(ApiStatus::new(400, "BadRequest", "invalid resourceVersion"))
            })?;
            if requested > current {
                return Err(ApiStatus::too_large_resource_version(rv, &current.to_string()).into());
            }
            if requested < inner.log_start {
                let gone: Item<K> = Ok(WatchEvent::Error(ApiStatus::expired(format!(
                    "too old resource version: {requested} ({})",
                    inner.log_start
                ))));
                return Ok(with_timeout(stream::iter([gone]).boxed(), options.timeout));
            }
            initial.extend(
                inner
                    .log
                    .iter()
                    .filter(|(v, _)| *v > requested)
                    .map(|(_, e)| Ok(e.clone())),
            );
        }
        let (tx, rx) = mpsc::unbounded_channel();
        inner.watchers.push(LiveWatcher {
            tx,
            bookmarks: options.allow_bookmarks,
        });
        let live = stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (e, rx)) });
        Ok(with_timeout(
            stream::iter(initial).chain(live).boxed(),
            options.timeout,
        ))
    }
}

impl<K> Inner<K> {
    /// Stores `obj` (which has a name) at the next version and publishes `make` of it;
    /// returns it and the object it replaced. The object is copied only if the caller still
    /// shares it: the caller's object keeps its version.
    fn put(
        &mut self,
        mut obj: Arc<K>,
        make: fn(Arc<K>) -> WatchEvent<K>,
    ) -> (Arc<K>, Option<Arc<K>>)
    where
        K: Resource + Clone,
    {
        self.rv += 1;
        let rv = self.rv;
        Arc::make_mut(&mut obj).meta_mut().resource_version = Some(rv.to_string());
        let meta = obj.meta();
        let name = meta.name.as_deref().unwrap_or_default();
        let replaced = with_key_str(meta.namespace.as_deref(), name, |key| {
            self.objects.put(key, Arc::clone(&obj))
        });
        self.publish(rv, make(Arc::clone(&obj)));
        (obj, replaced)
    }

    fn publish(&mut self, rv: u64, event: WatchEvent<K>) {
        self.watchers
            .retain(|w| w.tx.send(Ok(event.clone())).is_ok());
        self.log.push((rv, event));
    }
}

/// `Ok` if `obj` has a name (it can be keyed).
fn named<K: Resource>(obj: &K) -> Result<(), KeyError> {
    match obj.meta().name.as_deref() {
        Some(name) if !name.is_empty() => Ok(()),
        _ => Err(KeyError::MissingName),
    }
}

fn with_timeout<K: Send + Sync + 'static>(
    s: WatchStream<K>,
    timeout: Option<Duration>,
) -> WatchStream<K> {
    match timeout {
        Some(d) => s.take_until(tokio::time::sleep(d)).boxed(),
        None => s,
    }
}

fn scripted<K: Send + Sync + 'static>(steps: Vec<WatchStep<K>>) -> WatchStream<K> {
    stream::unfold(VecDeque::from(steps), |mut steps| async move {
        loop {
            match steps.pop_front()? {
                WatchStep::Event(e) => return Some((Ok(e), steps)),
                WatchStep::Error(e) => return Some((Err(e), steps)),
                WatchStep::Sleep(d) => tokio::time::sleep(d).await,
                WatchStep::Pending => futures::future::pending::<()>().await,
            }
        }
    })
    .boxed()
}

impl<K: Resource + Clone + Send + Sync + 'static> ListerWatcher<K> for FakeListerWatcher<K> {
    fn list(
        &self,
        options: &ListOptions,
    ) -> impl Future<Output = Result<ObjectList<K>, ListWatchError>> + Send {
        let result = self.serve_list(options);
        async move { result }
    }

    fn watch(
        &self,
        options: &WatchOptions,
    ) -> impl Future<Output = Result<WatchStream<K>, ListWatchError>> + Send {
        let result = self.serve_watch(options);
        async move { result }
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube_core::ObjectMeta;

    use super::*;

    fn cm(name: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn at(rv: &str) -> WatchOptions {
        WatchOptions {
            resource_version: Some(rv.into()),
            ..WatchOptions::default()
        }
    }

    #[test]
    fn an_unshared_arc_is_stored_as_it_is_and_a_shared_one_is_copied() {
        let lw = FakeListerWatcher::new();
        lw.add(cm("a")).unwrap();

        let own = Arc::new(cm("a"));
        let ptr = Arc::as_ptr(&own);
        let stored = lw.update(own).unwrap();
        assert_eq!(Arc::as_ptr(&stored), ptr, "an unshared Arc is not copied");
        assert_eq!(stored.metadata.resource_version.as_deref(), Some("2"));

        let shared = Arc::new(cm("a"));
        let stored = lw.update(Arc::clone(&shared)).unwrap();
        assert_ne!(Arc::as_ptr(&stored), Arc::as_ptr(&shared));
        assert_eq!(stored.metadata.resource_version.as_deref(), Some("3"));
        assert_eq!(
            shared.metadata.resource_version, None,
            "the caller's object is unchanged"
        );
        assert_eq!(lw.objects().len(), 1);
        assert_eq!(lw.resource_version(), "3");

        let nameless = ConfigMap::default();
        assert!(matches!(lw.update(nameless), Err(KeyError::MissingName)));
        assert_eq!(
            lw.resource_version(),
            "3",
            "a refused write uses no version"
        );
    }

    #[tokio::test]
    async fn watch_replays_changes_after_the_version_then_streams_live() {
        let lw = FakeListerWatcher::new();
        lw.add(cm("a")).unwrap();
        lw.add(cm("b")).unwrap();
        lw.update(cm("a")).unwrap();
        let mut w = lw.watch(&at("1")).await.unwrap();
        assert!(
            matches!(w.next().await, Some(Ok(WatchEvent::Added(o))) if o.metadata.name.as_deref() == Some("b"))
        );
        assert!(matches!(w.next().await, Some(Ok(WatchEvent::Modified(_)))));
        let gone = lw.delete("ns/b").unwrap();
        assert_eq!(gone.metadata.resource_version.as_deref(), Some("4"));
        assert!(matches!(w.next().await, Some(Ok(WatchEvent::Deleted(_)))));
        assert!(lw.delete("ns/b").is_none());
        lw.close_watches();
        assert!(w.next().await.is_none());
    }

    #[tokio::test]
    async fn watch_from_a_compacted_version_gets_410() {
        let lw = FakeListerWatcher::new();
        lw.add(cm("a")).unwrap();
        lw.add(cm("b")).unwrap();
        lw.reset_change_log();
        let mut w = lw.watch(&at("1")).await.unwrap();
        match w.next().await {
            Some(Ok(WatchEvent::Error(s))) => assert_eq!(s.code, 410),
            other => panic!("{other:?}"),
        }
        assert!(w.next().await.is_none());
        // From the compaction point on, watching works.
        assert!(lw.watch(&at("2")).await.is_ok());
    }

    #[tokio::test]
    async fn versions_in_the_future_are_too_large() {
        let lw = FakeListerWatcher::<ConfigMap>::new();
        let err = lw
            .list(&ListOptions {
                resource_version: Some("5".into()),
                ..ListOptions::default()
            })
            .await
            .unwrap_err();
        assert!(err.is_too_large_resource_version());
        assert!(
            lw.watch(&at("5"))
                .await
                .err()
                .unwrap()
                .is_too_large_resource_version()
        );
    }

    #[tokio::test]
    async fn watch_list_sends_the_state_then_the_end_bookmark() {
        let lw = FakeListerWatcher::new();
        lw.add(cm("a")).unwrap();
        lw.add(cm("b")).unwrap();
        let mut w = lw
            .watch(&WatchOptions {
                send_initial_events: true,
                allow_bookmarks: true,
                ..WatchOptions::default()
            })
            .await
            .unwrap();
        assert!(matches!(w.next().await, Some(Ok(WatchEvent::Added(_)))));
        assert!(matches!(w.next().await, Some(Ok(WatchEvent::Added(_)))));
        match w.next().await {
            Some(Ok(WatchEvent::Bookmark(b))) => {
                assert!(b.is_initial_events_end());
                assert_eq!(b.resource_version, "2");
            }
            other => panic!("{other:?}"),
        }
        lw.send_bookmark();
        assert!(
            matches!(w.next().await, Some(Ok(WatchEvent::Bookmark(b))) if !b.is_initial_events_end())
        );
    }

    #[tokio::test(start_paused = true)]
    async fn watch_timeout_ends_the_stream_cleanly() {
        let lw = FakeListerWatcher::<ConfigMap>::new();
        let start = tokio::time::Instant::now();
        let mut w = lw
            .watch(&WatchOptions {
                timeout: Some(Duration::from_secs(300)),
                ..WatchOptions::default()
            })
            .await
            .unwrap();
        assert!(w.next().await.is_none());
        assert_eq!(start.elapsed(), Duration::from_secs(300));
        drop(w);
        assert_eq!(lw.active_watches(), 0);
    }

    #[tokio::test]
    async fn scripted_outcomes_are_used_once_in_order_and_calls_recorded() {
        let lw = FakeListerWatcher::<ConfigMap>::new();
        lw.push_watch_error(ApiStatus::too_many_requests(None));
        lw.push_watch_script(vec![WatchStep::Event(WatchEvent::Bookmark(Bookmark::new(
            "9",
        )))]);
        assert!(
            lw.watch(&at("0"))
                .await
                .err()
                .unwrap()
                .is_too_many_requests()
        );
        let events: Vec<_> = lw.watch(&at("0")).await.unwrap().collect().await;
        assert_eq!(events.len(), 1);
        assert!(lw.watch(&at("0")).await.is_ok());
        assert_eq!(lw.watch_calls().len(), 3);
        assert!(lw.add(ConfigMap::default()).is_err());
        assert_eq!(lw.add_all([cm("x"), cm("y")]).unwrap(), 2);
        assert_eq!(lw.resource_version(), "2");
        assert_eq!(lw.len(), 2);
    }
}
