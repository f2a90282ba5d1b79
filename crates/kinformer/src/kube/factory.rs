//! The [`SharedInformerFactory`] over a `kube::Client`: it builds each informer's
//! [`KubeListerWatcher`] itself, from the type's URL and the factory's namespace and selectors,
//! with the factory's [`Wire`] and one [`ServerCapabilities`] record shared by all of them
//! (so a server without watch-list is learnt once, not once per informer).
//!
//! Only a factory that has a client offers these informers; asking a client-less factory for
//! one does not compile (rather than failing at run time):
//!
//! ```compile_fail
//! use k8s_openapi::api::core::v1::Pod;
//! use kinformer::cache::SharedInformerFactory;
//!
//! let pods = SharedInformerFactory::without_client().informer::<Pod>();
//! ```

use std::any::TypeId;

use kube_core::{ApiResource, DynamicObject, NamespaceResourceScope, PartialObjectMeta, Resource};
use serde::de::DeserializeOwned;

use super::{KubeListerWatcher, ServerCapabilities, Wire};
use crate::cache::informer::FactoryKey;
use crate::cache::{SharedIndexInformer, SharedInformerFactory};

/// What a [`SharedInformerFactory`] over `kube` builds its sources from: the client, the wire
/// format to ask for, and what the sources have learnt of the server.
#[derive(Clone)]
pub struct KubeClient {
    client: ::kube::Client,
    wire: Wire,
    capabilities: ServerCapabilities,
}

impl std::fmt::Debug for KubeClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeClient")
            .field("wire", &self.wire)
            .field("capabilities", &self.capabilities)
            .finish_non_exhaustive()
    }
}

impl KubeClient {
    /// `client`, asking for the default wire format, knowing nothing of the server yet.
    pub fn new(client: ::kube::Client) -> Self {
        Self {
            client,
            wire: Wire::default(),
            capabilities: ServerCapabilities::new(),
        }
    }

    /// The `kube` client.
    pub fn client(&self) -> &::kube::Client {
        &self.client
    }

    /// The wire format the sources ask for.
    pub fn wire(&self) -> Wire {
        self.wire
    }

    /// What the sources have learnt of the server (one record, shared).
    pub fn capabilities(&self) -> &ServerCapabilities {
        &self.capabilities
    }
}

impl From<::kube::Client> for KubeClient {
    fn from(client: ::kube::Client) -> Self {
        Self::new(client)
    }
}

#[cfg_attr(docsrs, doc(cfg(feature = "kube")))]
impl SharedInformerFactory<KubeClient> {
    /// A factory whose informers list and watch through `client` ([`KubeListerWatcher`]).
    ///
    /// Runs against the embedded API server, `kinformer_apiserver::ApiServer` (the
    /// `kinformer-apiserver` crate, a dev-dependency); a cluster's client works the same way.
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use k8s_openapi::api::core::v1::{ConfigMap, Pod};
    /// use kinformer::cache::SharedInformerFactory;
    /// use kinformer_apiserver::ApiServer;
    /// use serde_json::json;
    /// use tokio_util::sync::CancellationToken;
    ///
    /// let server = ApiServer::start().await.unwrap();
    /// let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}});
    /// server.store().create("configmaps", "ns", cm).unwrap();
    ///
    /// let factory = SharedInformerFactory::new(server.client().unwrap()).with_namespace("ns");
    /// let configmaps = factory.informer::<ConfigMap>();
    /// assert!(configmaps.ptr_eq(&factory.informer::<ConfigMap>()), "one informer per type");
    /// let pods = factory.informer::<Pod>();
    ///
    /// let cancel = CancellationToken::new();
    /// factory.start(&cancel);
    /// let synced = factory.wait_for_cache_sync(&cancel).await;
    /// assert!(synced.values().all(|s| *s));
    /// assert_eq!(configmaps.get_indexer().list_keys()[0].as_str(), "ns/a");
    /// assert!(pods.get_indexer().is_empty());
    /// factory.shutdown().await;
    /// # });
    /// ```
    pub fn new(client: ::kube::Client) -> Self {
        Self::with_client(KubeClient::new(client))
    }

    /// The wire format the informers ask for (default [`Wire::Protobuf`]: protobuf for
    /// built-in kinds, JSON for the rest; see [`KubeListerWatcher::with_wire`]).
    ///
    /// ```
    /// use kinformer::cache::SharedInformerFactory;
    /// use kinformer::kube::Wire;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let mut config = kube::Config::new("http://127.0.0.1:6443".parse().unwrap());
    /// config.default_retry = false;
    /// let client = kube::Client::try_from(config).unwrap();
    /// let factory = SharedInformerFactory::new(client).with_wire(Wire::Json);
    /// assert_eq!(factory.wire(), Wire::Json);
    /// # });
    /// ```
    #[must_use]
    pub fn with_wire(mut self, wire: Wire) -> Self {
        self.client_mut().wire = wire;
        self
    }

    /// The wire format the informers ask for.
    pub fn wire(&self) -> Wire {
        self.client().wire
    }

    /// What the factory's informers have learnt of the server (shared by all of them).
    pub fn capabilities(&self) -> &ServerCapabilities {
        &self.client().capabilities
    }

    /// The shared informer for the typed resource `K` (a `k8s-openapi` type or a custom
    /// resource): in the factory's namespace if `K` is namespaced and one is set, else in
    /// all namespaces; with the factory's selectors and resync period.
    pub fn informer<K>(&self) -> SharedIndexInformer<K>
    where
        K: Resource + DeserializeOwned + Send + Sync + 'static,
        K::DynamicType: Default,
        K::Scope: 'static,
    {
        let namespace = self.namespace_for::<K::Scope>();
        let url = K::url_path(&K::DynamicType::default(), namespace.as_deref());
        self.kube_informer::<K>(url, namespace, false)
    }

    /// The shared informer for a resource known at run time, as `DynamicObject`s: in the
    /// factory's namespace if one is set (so use a factory without a namespace for
    /// cluster-scoped resources).
    pub fn dynamic_informer(&self, resource: &ApiResource) -> SharedIndexInformer<DynamicObject> {
        let namespace = self.namespace().map(str::to_owned);
        let url = DynamicObject::url_path(resource, namespace.as_deref());
        self.kube_informer::<DynamicObject>(url, namespace, false)
    }

    /// The shared informer for a resource known at run time, as
    /// [`Lazy`](crate::cache::Lazy)`<DynamicObject>`s: each object's metadata parsed, its body
    /// kept as it arrived (protobuf for built-in kinds, JSON otherwise) and decoded only when
    /// read. The lean form of [`dynamic_informer`](Self::dynamic_informer) (and a separate
    /// informer from it).
    pub fn dynamic_lazy_informer(
        &self,
        resource: &ApiResource,
    ) -> SharedIndexInformer<crate::cache::Lazy<DynamicObject>> {
        let namespace = self.namespace().map(str::to_owned);
        let url = DynamicObject::url_path(resource, namespace.as_deref());
        self.kube_informer::<crate::cache::Lazy<DynamicObject>>(url, namespace, false)
    }

    /// The shared informer for the metadata of `K` only (`PartialObjectMeta<K>`): far less
    /// memory for large objects when handlers need names, labels and owners only.
    pub fn metadata_informer<K>(&self) -> SharedIndexInformer<PartialObjectMeta<K>>
    where
        K: Resource + Send + Sync + 'static,
        K::DynamicType: Default,
        K::Scope: 'static,
        PartialObjectMeta<K>: Resource + DeserializeOwned,
    {
        let namespace = self.namespace_for::<K::Scope>();
        let url = K::url_path(&K::DynamicType::default(), namespace.as_deref());
        self.kube_informer::<PartialObjectMeta<K>>(url, namespace, true)
    }

    fn namespace_for<S: 'static>(&self) -> Option<String> {
        if TypeId::of::<S>() == TypeId::of::<NamespaceResourceScope>() {
            self.namespace().map(str::to_owned)
        } else {
            None
        }
    }

    fn kube_informer<K>(
        &self,
        url: String,
        namespace: Option<String>,
        metadata: bool,
    ) -> SharedIndexInformer<K>
    where
        K: Resource + DeserializeOwned + Send + Sync + 'static,
    {
        let KubeClient {
            client,
            wire,
            capabilities,
        } = self.client().clone();
        let selectors = self.selectors().clone();
        let key = FactoryKey::of::<K>(url.clone(), namespace, selectors.clone());
        self.informer_keyed(key, move |options| {
            let mut lw = KubeListerWatcher::<K>::from_parts(url, client, metadata)
                .with_wire(wire)
                .with_capabilities(capabilities);
            if let Some(l) = &selectors.label_selector {
                lw = lw.labels(l);
            }
            if let Some(f) = &selectors.field_selector {
                lw = lw.fields(f);
            }
            SharedIndexInformer::new(lw, options)
        })
    }
}
