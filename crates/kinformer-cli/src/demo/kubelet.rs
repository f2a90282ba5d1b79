//! A stand-in kubelet: there are no nodes here, so something has to mark new pods as
//! running and ready. It is a second small controller on the *same* shared pod informer as
//! the ReplicaSet controller (one watch, one cache, two handlers), with its own queue.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use k8s_openapi::api::core::v1::Pod;
use kinformer::cache::{
    HandlerOptions, InformerError, ResourceEventHandler, SharedIndexInformer, meta_namespace_key,
    split_key,
};
use kinformer::workqueue::{RateLimitingQueue, default_controller_rate_limiter};
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::controller::{is_pod_active, is_pod_ready};

/// Marks pods ready.
#[derive(Clone)]
pub struct Kubelet {
    pods: SharedIndexInformer<Pod>,
    client: kube::Client,
    queue: RateLimitingQueue<String>,
    started: Arc<AtomicU64>,
}

impl std::fmt::Debug for Kubelet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kubelet")
            .field("queue", &self.queue)
            .finish_non_exhaustive()
    }
}

struct Handler {
    queue: RateLimitingQueue<String>,
}

impl Handler {
    fn consider(&self, pod: &Pod) {
        if is_pod_active(pod)
            && !is_pod_ready(pod)
            && let Ok(key) = meta_namespace_key(pod)
        {
            self.queue.add(key.as_str().to_owned());
        }
    }
}

impl ResourceEventHandler<Pod> for Handler {
    fn on_add(&self, obj: &Arc<Pod>, _: bool) {
        self.consider(obj);
    }
    fn on_update(&self, _: &Arc<Pod>, new: &Arc<Pod>) {
        self.consider(new);
    }
}

impl Kubelet {
    /// Registers on the shared pod informer.
    ///
    /// # Errors
    /// [`InformerError`] if the informer has stopped.
    pub fn new(
        pods: SharedIndexInformer<Pod>,
        client: kube::Client,
    ) -> Result<Self, InformerError> {
        let queue = RateLimitingQueue::new(default_controller_rate_limiter());
        pods.add_event_handler_with_options(
            Handler {
                queue: queue.clone(),
            },
            HandlerOptions::new().nonblocking(true),
        )?;
        Ok(Self {
            pods,
            client,
            queue,
            started: Arc::new(AtomicU64::new(0)),
        })
    }

    /// Pods marked ready so far.
    pub fn started(&self) -> u64 {
        self.started.load(Ordering::Relaxed)
    }

    /// Runs `workers` workers until `cancel` fires.
    ///
    /// # Cancel safety
    /// Prefer `cancel`; dropping abandons patches in flight (they are retried by nobody, and
    /// the pod stays unready until its next event).
    pub async fn run(&self, workers: usize, cancel: CancellationToken) {
        let tasks: Vec<_> = (0..workers.max(1))
            .map(|_| {
                let me = self.clone();
                let cancel = cancel.clone();
                tokio::spawn(async move {
                    while let Some(key) = me.queue.get().await {
                        if !cancel.is_cancelled() {
                            match me.start_pod(&key).await {
                                Ok(()) => me.queue.forget(&key),
                                Err(e) => {
                                    tracing::debug!(%key, error = %e, "kubelet retry");
                                    me.queue.add_rate_limited(key.clone());
                                }
                            }
                        }
                        me.queue.done(&key);
                    }
                })
            })
            .collect();
        cancel.cancelled().await;
        self.queue.shut_down();
        for t in tasks {
            let _ = t.await;
        }
    }

    async fn start_pod(&self, key: &str) -> Result<(), kube::Error> {
        let Some(pod) = self.pods.get_indexer().get_by_key(key) else {
            return Ok(()); // gone
        };
        if !is_pod_active(&pod) || is_pod_ready(&pod) {
            return Ok(());
        }
        let Ok((Some(ns), name)) = split_key(key) else {
            return Ok(());
        };
        let api: Api<Pod> = Api::namespaced(self.client.clone(), ns);
        let patch = json!({"status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}],
        }});
        match api
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {
                self.started.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Err(kube::Error::Api(s)) if s.is_not_found() => Ok(()),
            Err(e) => Err(e),
        }
    }
}
