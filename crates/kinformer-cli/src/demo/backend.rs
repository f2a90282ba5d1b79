//! Where the demo's workload lives: the embedded API server (written directly, without HTTP
//! and without faults: the demo's "user" is not what is being tested) or a remote server
//! (`kinformer serve`, a real cluster) written through a retrying client.

use std::time::Duration;

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use kinformer::wait::Backoff;
use kinformer_apiserver::{ApiError, ApiServer, typed_name};
use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

/// A failed workload operation.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The embedded server refused it.
    #[error("api server: {0}")]
    Embedded(#[from] ApiError),
    /// The remote server refused it (after retries).
    #[error("api server: {0}")]
    Remote(#[from] kube::Error),
}

/// The server the demo's workload is written to and verified against.
pub enum Backend {
    /// The in-process server.
    Embedded(ApiServer),
    /// A remote server, optionally restricted to one namespace.
    Remote {
        /// A client that retries throttling itself (kube's default).
        client: kube::Client,
        /// The namespace of the workload (all namespaces when `None`).
        namespace: Option<String>,
        /// What the writes learnt about the server (a refusal of protobuf bodies).
        capabilities: kinformer::kube::ServerCapabilities,
    },
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Backend::Embedded(s) => f.debug_tuple("Embedded").field(&s.url()).finish(),
            Backend::Remote { namespace, .. } => f
                .debug_struct("Remote")
                .field("namespace", namespace)
                .finish_non_exhaustive(),
        }
    }
}

const REMOTE_ATTEMPTS: u32 = 5;

async fn retry<T, F, Fut>(mut op: F) -> Result<T, kube::Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, kube::Error>>,
{
    // 200 ms doubling, with 10% jitter, for REMOTE_ATTEMPTS attempts in all.
    let mut backoff = Backoff {
        duration: Duration::from_millis(200),
        factor: 2.0,
        jitter: 0.1,
        steps: REMOTE_ATTEMPTS - 1,
        cap: Duration::from_secs(5),
    };
    loop {
        match op().await {
            Ok(v) => return Ok(v),
            Err(e) if backoff.steps > 0 && !is_final(&e) => {
                tokio::time::sleep(backoff.step()).await;
            }
            Err(e) => return Err(e),
        }
    }
}

fn is_final(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.is_not_found() || s.is_already_exists() || s.code == 422 || s.code == 403)
}

fn ignore_remote(r: Result<(), kube::Error>, not_found: bool) -> Result<(), BackendError> {
    match r {
        Err(kube::Error::Api(s))
            if (not_found && s.is_not_found()) || (!not_found && s.is_already_exists()) =>
        {
            Ok(())
        }
        other => Ok(other?),
    }
}

fn ignore_embedded(r: Result<(), ApiError>, code: u16) -> Result<(), BackendError> {
    match r {
        Err(e) if e.code == code => Ok(()),
        other => Ok(other?),
    }
}

impl Backend {
    /// Creates a ReplicaSet (already existing is fine).
    ///
    /// # Errors
    /// [`BackendError`] when the server refuses it (after retries for a remote one).
    ///
    /// # Cancel safety
    /// Dropping it may leave the write done or not.
    pub async fn create_replicaset(&self, rs: &ReplicaSet) -> Result<(), BackendError> {
        match self {
            Backend::Embedded(s) => ignore_embedded(s.store().create_typed(rs).map(drop), 409),
            Backend::Remote {
                client,
                capabilities,
                ..
            } => {
                let ns = rs.metadata.namespace.as_deref().unwrap_or("default");
                let api: Api<ReplicaSet> = Api::namespaced(client.clone(), ns);
                let pp = PostParams::default();
                let r = retry(|| kinformer::kube::create_with(&api, capabilities, &pp, rs))
                    .await
                    .map(drop);
                ignore_remote(r, false)
            }
        }
    }

    /// Sets a ReplicaSet's `spec.replicas` (a missing ReplicaSet is fine).
    ///
    /// # Errors
    /// [`BackendError`] when the server refuses it (after retries for a remote one).
    ///
    /// # Cancel safety
    /// Dropping it may leave the write done or not.
    pub async fn scale_replicaset(
        &self,
        ns: &str,
        name: &str,
        replicas: i32,
    ) -> Result<(), BackendError> {
        let patch = json!({"spec": {"replicas": replicas}});
        match self {
            Backend::Embedded(s) => ignore_embedded(
                s.store()
                    .patch(&typed_name::<ReplicaSet>(), ns, name, &patch)
                    .map(drop),
                404,
            ),
            Backend::Remote { client, .. } => {
                let api: Api<ReplicaSet> = Api::namespaced(client.clone(), ns);
                let pp = PatchParams::default();
                let patch = Patch::Merge(&patch);
                let r = retry(|| api.patch(name, &pp, &patch)).await.map(drop);
                ignore_remote(r, true)
            }
        }
    }

    /// Deletes a ReplicaSet (a missing one is fine).
    ///
    /// # Errors
    /// [`BackendError`] when the server refuses it (after retries for a remote one).
    ///
    /// # Cancel safety
    /// Dropping it may leave the write done or not.
    pub async fn delete_replicaset(&self, ns: &str, name: &str) -> Result<(), BackendError> {
        match self {
            Backend::Embedded(s) => ignore_embedded(
                s.store().delete_typed::<ReplicaSet>(ns, name).map(drop),
                404,
            ),
            Backend::Remote { client, .. } => {
                let api: Api<ReplicaSet> = Api::namespaced(client.clone(), ns);
                let dp = DeleteParams::default();
                let r = retry(|| api.delete(name, &dp)).await.map(drop);
                ignore_remote(r, true)
            }
        }
    }

    /// Deletes a pod (a missing one is fine): a node failure, as far as the controller knows.
    ///
    /// # Errors
    /// [`BackendError`] when the server refuses it (after retries for a remote one).
    ///
    /// # Cancel safety
    /// Dropping it may leave the write done or not.
    pub async fn delete_pod(&self, ns: &str, name: &str) -> Result<(), BackendError> {
        match self {
            Backend::Embedded(s) => {
                ignore_embedded(s.store().delete_typed::<Pod>(ns, name).map(drop), 404)
            }
            Backend::Remote { client, .. } => {
                let api: Api<Pod> = Api::namespaced(client.clone(), ns);
                let dp = DeleteParams::default();
                let r = retry(|| api.delete(name, &dp)).await.map(drop);
                ignore_remote(r, true)
            }
        }
    }

    /// Every ReplicaSet, as the server has it now.
    ///
    /// # Errors
    /// [`BackendError`] when the server refuses it (after retries for a remote one).
    ///
    /// # Cancel safety
    /// Cancel-safe: it only reads.
    pub async fn replicasets(&self) -> Result<Vec<ReplicaSet>, BackendError> {
        match self {
            Backend::Embedded(s) => Ok(s.store().list_typed::<ReplicaSet>()?),
            Backend::Remote {
                client, namespace, ..
            } => Ok(list_remote(client, namespace).await?),
        }
    }

    /// Every pod, as the server has it now.
    ///
    /// # Errors
    /// [`BackendError`] when the server refuses it (after retries for a remote one).
    ///
    /// # Cancel safety
    /// Cancel-safe: it only reads.
    pub async fn pods(&self) -> Result<Vec<Pod>, BackendError> {
        match self {
            Backend::Embedded(s) => Ok(s.store().list_typed::<Pod>()?),
            Backend::Remote {
                client, namespace, ..
            } => Ok(list_remote(client, namespace).await?),
        }
    }
}

async fn list_remote<K>(
    client: &kube::Client,
    namespace: &Option<String>,
) -> Result<Vec<K>, kube::Error>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<K> = match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    };
    let lp = ListParams::default();
    Ok(retry(|| api.list(&lp)).await?.items)
}
