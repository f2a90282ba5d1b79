//! [`EventStream`]: an informer's notifications as a `futures::Stream`, for code that would
//! rather `.next().await` than write a handler.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::Stream;
use kube_core::Resource;
use tokio::sync::mpsc;

use crate::cache::informer::{InformerError, SharedIndexInformer};
use crate::cache::processor::{Consumer, Notification, ResourceEventHandlerRegistration};
use crate::cache::sync::HasSynced;

/// The notifications of one informer, as a stream: the same adds, updates and deletes, in the
/// same order, as a handler registered at the same moment would get (an informer already
/// running first replays its cache as adds with `is_in_initial_list = true`).
///
/// **Back-pressure**: the stream holds at most `capacity` notifications; while it is full,
/// the stream's own listener waits and its buffer grows, exactly as a slow handler's would.
/// The informer, its cache and other handlers never wait for the stream's reader.
///
/// The stream ends when the informer stops. Dropping it unregisters it.
///
/// Runs against the embedded API server, `kinformer_apiserver::ApiServer` (the
/// `kinformer-apiserver` crate, a dev-dependency); a cluster's client works the same way.
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use futures::StreamExt;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kinformer::cache::{InformerOptions, Notification, SharedIndexInformer};
/// use kinformer::kube::KubeListerWatcher;
/// use kinformer_apiserver::ApiServer;
/// use kube::Api;
/// use serde_json::json;
/// use tokio_util::sync::CancellationToken;
///
/// let server = ApiServer::start().await.unwrap();
/// let cm = |name: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
/// server.store().create("configmaps", "ns", cm("a")).unwrap();
/// let api: Api<ConfigMap> = Api::namespaced(server.client().unwrap(), "ns");
/// let informer = SharedIndexInformer::new(KubeListerWatcher::new(api), InformerOptions::new("configmaps"));
/// let mut events = informer.event_stream(64).unwrap();
/// let cancel = CancellationToken::new();
/// tokio::spawn({
///     let (informer, cancel) = (informer.clone(), cancel.clone());
///     async move { informer.run(cancel).await }
/// });
/// let name = |n: Option<Notification<ConfigMap>>| match n {
///     Some(Notification::Add { obj, .. }) => obj.metadata.name.clone(),
///     _ => None,
/// };
/// assert_eq!(name(events.next().await).as_deref(), Some("a"));
/// server.store().create("configmaps", "ns", cm("b")).unwrap();
/// assert_eq!(name(events.next().await).as_deref(), Some("b"));
/// cancel.cancel();
/// assert!(events.next().await.is_none(), "ends when the informer stops");
/// # });
/// ```
pub struct EventStream<K: Resource + Send + Sync + 'static> {
    rx: mpsc::Receiver<Notification<K>>,
    registration: ResourceEventHandlerRegistration,
    informer: SharedIndexInformer<K>,
}

impl<K: Resource + Send + Sync + 'static> fmt::Debug for EventStream<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventStream")
            .field("buffered", &self.rx.len())
            .field("registration", &self.registration)
            .finish_non_exhaustive()
    }
}

impl<K: Resource + Send + Sync + 'static> EventStream<K> {
    /// The stream's registration: its `has_synced` is true once the informer has synced and
    /// every initial add is in the stream (read or not).
    pub fn registration(&self) -> &ResourceEventHandlerRegistration {
        &self.registration
    }
}

impl<K: Resource + Send + Sync + 'static> EventStream<K> {
    /// The next notification if one is buffered now, without waiting.
    #[cfg(feature = "kube-runtime")]
    pub(crate) fn try_next(&mut self) -> Option<Notification<K>> {
        self.rx.try_recv().ok()
    }
}

impl<K: Resource + Send + Sync + 'static> HasSynced for EventStream<K> {
    fn has_synced(&self) -> bool {
        self.registration.has_synced()
    }

    fn wait_synced(&self) -> futures::future::BoxFuture<'_, ()> {
        self.registration.wait_synced()
    }
}

impl<K: Resource + Send + Sync + 'static> Stream for EventStream<K> {
    type Item = Notification<K>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx)
    }
}

impl<K: Resource + Send + Sync + 'static> Drop for EventStream<K> {
    fn drop(&mut self) {
        self.informer.remove_event_handler(&self.registration);
    }
}

impl<K: Resource + Send + Sync + 'static> SharedIndexInformer<K> {
    /// The informer's notifications as a [`Stream`] holding at most `capacity` (at least 1)
    /// of them; see [`EventStream`] for order and back-pressure. No resyncs.
    ///
    /// # Errors
    /// [`InformerError::Stopped`] once the informer has stopped.
    pub fn event_stream(&self, capacity: usize) -> Result<EventStream<K>, InformerError> {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        let registration = self.add_consumer(Consumer::Channel(tx), Duration::ZERO)?;
        Ok(EventStream {
            rx,
            registration,
            informer: self.clone(),
        })
    }
}
