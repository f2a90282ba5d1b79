//! kinformer: Kubernetes client-go's controller machinery for Rust — shared informers,
//! indexed caches, listers, rate-limited work queues and the worker loop, over the `kube`
//! client.
//!
//! # Start here
//!
//! A controller is a chain of five calls, each a link to its documentation:
//!
//! 1. [`SharedInformerFactory::new`](cache::SharedInformerFactory::new) over a `kube::Client`
//!    — one factory per process, so that controllers share one watch and one cache per type;
//! 2. [`factory.informer::<K>()`](cache::SharedInformerFactory::informer) — the shared
//!    informer of a type (a k8s-openapi type, a custom resource, or [`Lazy<K>`](cache::Lazy)
//!    for a lean cache), then [`factory.start`](cache::SharedInformerFactory::start);
//! 3. [`informer.add_event_handler`](cache::SharedIndexInformer::add_event_handler) — handlers
//!    that only enqueue keys (`String`s, or [`QueueKey`](controller::QueueKey)s for several
//!    kinds);
//! 4. a [`RateLimitingQueue`](workqueue::RateLimitingQueue) with
//!    [`default_controller_rate_limiter`](workqueue::default_controller_rate_limiter), and the
//!    bounded wait [`wait_for_cache_sync_timeout`](cache::SharedInformerFactory::wait_for_cache_sync_timeout),
//!    whose error names the informers that did not sync and their last list/watch error;
//! 5. [`run_workers`](controller::run_workers) — N workers that reconcile each key, reading the
//!    cache (the indexer, or listers); an error retries the key with per-key backoff.
//!
//! [`prelude`] imports all of it (and `CancellationToken`, kube's `Resource` trait) at once.
//!
//! ```no_run
//! use std::time::Duration;
//!
//! use k8s_openapi::api::core::v1::Pod;
//! use kinformer::prelude::*;
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//!     let mut config = kube::Config::infer().await?; // $KUBECONFIG, ~/.kube/config or in-cluster
//!     config.default_retry = false; // the reflector and the work queue retry
//!     let factory = SharedInformerFactory::new(kube::Client::try_from(config)?);
//!     let pods = factory.informer::<Pod>();
//!
//!     let queue = RateLimitingQueue::new(default_controller_rate_limiter());
//!     let q = queue.clone();
//!     pods.add_event_handler(ResourceEventHandlerFuncs::new()
//!         .on_add(move |pod: &std::sync::Arc<Pod>, _| {
//!             if let Ok(key) = meta_namespace_key(pod.as_ref()) {
//!                 q.add(key.to_string());
//!             }
//!         }))?;
//!
//!     let cancel = CancellationToken::new();
//!     factory.start(&cancel);
//!     factory.wait_for_cache_sync_timeout(Duration::from_secs(30)).await?;
//!     let cache = pods.get_indexer();
//!     run_workers(&queue, 2, cancel, move |key: String| {
//!         let cache = cache.clone();
//!         async move {
//!             match cache.get_by_key(&key) {
//!                 Some(pod) => println!("{key}: {:?}", pod.meta().resource_version),
//!                 None => println!("{key}: deleted"),
//!             }
//!             Ok::<_, std::convert::Infallible>(Action::Done)
//!         }
//!     })
//!     .await;
//!     Ok(())
//! }
//! ```
//!
//! The README's quick start is the same program, complete (crate `kinformer-examples`, run by
//! CI against the embedded API server).
//!
//! # The modules, in the order data flows
//!
//! - [`cache`]: list & watch → reflector → delta queue → indexed cache → shared informer and
//!   its handlers, plus listers for reading the cache.
//! - [`workqueue`]: the deduplicating, delaying and rate-limiting work queues that controllers
//!   drain.
//! - [`controller`]: owner indexes, expectations, typed queue keys and the worker loop of
//!   client-go's controllers.
//! - [`leaderelection`]: run a controller in one replica at a time (over a `Lease`).
//! - [`sharding`]: split a controller's objects among replicas (membership Leases,
//!   rendezvous hashing, filtered or labelled mode with safe handover).
//! - [`wait`]: `until`, `jitter_until`, backoff and the `poll` family — the timing helpers
//!   everything else uses.
//! - `kube` (feature `kube`): the `ListerWatcher` over the `kube` client.
//!
//! An API server feeds a `ListerWatcher`, the `Reflector` turns list/watch results into
//! deltas, the informer applies them to an `Indexer` and fans them out to handlers, and
//! handlers enqueue keys on a work queue that workers drain.
//!
//! # Features
//!
//! Default: `kube` (the `kube` client transport, with `rustls-tls`), `protobuf` (Kubernetes
//! protobuf for built-in kinds), `compact` (compressed storage for lean caches), `prometheus`
//! (a workqueue metrics exporter). Optional: `kube-runtime` (informers as kube-runtime watcher
//! streams), `openssl-tls`, `testing` (an in-memory `ListerWatcher` and lease lock for tests),
//! `fast-json` (SIMD JSON decoding). Items that need a feature say so on their page.

#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod cache;
mod codec;
pub mod controller;
mod hash;
#[cfg(feature = "kube")]
#[cfg_attr(docsrs, doc(cfg(feature = "kube")))]
pub mod kube;
pub mod leaderelection;
pub mod prelude;
pub mod sharding;
#[cfg(test)]
mod test_support;
pub mod wait;
pub mod workqueue;
