//! [`InformerMetrics`]: what an informer has done and holds, as one snapshot.

use crate::cache::reflector::ReflectorMetrics;

/// A snapshot of an informer: its reflector's counters (lists, relists, watches, events,
/// errors, the last synced version), the size of its cache and how many handlers it feeds.
/// Each handler's buffer depth is on its registration
/// ([`ResourceEventHandlerRegistration::pending`](crate::cache::ResourceEventHandlerRegistration::pending)).
///
/// Runs against the embedded API server, `kinformer_apiserver::ApiServer` (the
/// `kinformer-apiserver` crate, a dev-dependency); a cluster's client works the same way.
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kinformer::cache::{InformerOptions, SharedIndexInformer};
/// use kinformer::kube::KubeListerWatcher;
/// use kinformer_apiserver::ApiServer;
/// use kube::Api;
///
/// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
/// let server = ApiServer::start().await.unwrap();
/// let api = Api::<ConfigMap>::namespaced(server.client().unwrap(), "default");
/// let informer = SharedIndexInformer::new(KubeListerWatcher::new(api), InformerOptions::new("cms"));
/// assert_eq!(informer.metrics().reflector.lists, 0, "not started");
/// let cancel = tokio_util::sync::CancellationToken::new();
/// let task = tokio::spawn({
///     let (informer, cancel) = (informer.clone(), cancel.clone());
///     async move { informer.run(cancel).await }
/// });
/// kinformer::cache::HasSynced::wait_synced(&informer).await;
/// let m = informer.metrics();
/// assert!(m.synced && m.reflector.lists >= 1 && m.cached_objects == 0);
/// cancel.cancel();
/// task.await.unwrap().unwrap();
/// # });
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InformerMetrics {
    /// The reflector's counters (all zero before the start; kept after the stop).
    pub reflector: ReflectorMetrics,
    /// Objects in the cache.
    pub cached_objects: usize,
    /// Registered handlers (streams included).
    pub handlers: usize,
    /// Whether the cache has synced.
    pub synced: bool,
}
