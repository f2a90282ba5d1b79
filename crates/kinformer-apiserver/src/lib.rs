//! An embedded, in-memory Kubernetes API server for development and tests.
//!
//! It speaks the real wire protocol (HTTP, JSON, chunked watch streams), so clients such as
//! `kube` and kubectl work unmodified, and it keeps etcd's storage semantics: one global
//! revision, a bounded event history, compaction and 410 Gone. It can also misbehave on
//! purpose ([`faults`]), which makes it the instrument for proving that informers converge.
//!
//! Where to start: [`TestServer::start`] (in-process), then [`ApiServer::client`],
//! [`ApiServer::store`] ([`Store::create`], [`Store::state`], ...) and [`ApiServer::faults`].
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use kinformer_apiserver::{Fault, TestServer, bench_pod};
//! use serde_json::json;
//!
//! let server = TestServer::start().await.unwrap();
//! // Write directly (no HTTP): same revisions and watch events as a client write.
//! server.store().create("pods", "", bench_pod(7)).unwrap();
//! server.store().patch("pods", "ns-7", "pod-7", &json!({"metadata": {"labels": {"x": "y"}}})).unwrap();
//! // Talk to it as a client does.
//! let client = server.client().unwrap();
//! let list = client
//!     .request_text(http::Request::get("/api/v1/pods").body(Vec::new()).unwrap())
//!     .await
//!     .unwrap();
//! assert!(list.contains("\"kind\":\"PodList\""));
//! // Misbehave once, then compare the server's state with what a cache holds.
//! server.faults().inject(Fault::InternalError);
//! let (revision, pods) = server.store().state("pods").unwrap();
//! assert_eq!((revision, pods.len()), (2, 1));
//! # }
//! ```
//!
//! Module map: [`audit`] (who wrote what, and the sharding invariant's checker), [`store`] (revisions, history, writes), [`list`] and [`watch`] (reads),
//! [`media`] (JSON, and protobuf for built-in kinds),
//! [`selector`], [`query`], [`resource`] and [`discovery`], [`status`] (errors), [`faults`],
//! [`synthetic`] (bench pods), [`table`] (server-side printing for kubectl),
//! [`namespaces`] (namespaces implied by their objects), [`requests`] (the requests received), [`openapi`] (what kubectl reads
//! before it creates and applies), [`validate`] (what is refused, and how), [`config`] and
//! [`server`].

pub mod audit;
pub mod config;
mod conn;
pub mod discovery;
pub mod faults;
mod handle;
mod host;
pub mod list;
pub mod media;
pub mod namespaces;
pub mod object;
pub mod openapi;
pub mod query;
pub mod requests;
pub mod resource;
mod routes;
pub mod selector;
pub mod server;
mod stats;
pub mod status;
pub mod store;
pub mod synthetic;
pub mod table;
pub mod validate;
pub mod watch;
mod watch_chunks;

pub use audit::{WriteAudit, WriteRecord};
pub use config::ServerConfig;
pub use faults::{Fault, FaultRule, Faults, InjectedFault, Target};
pub use handle::typed_name;
pub use requests::RequestLog;
pub use resource::ResourceDef;
pub use server::{ApiServer, ServerError, TestServer};
pub use status::ApiError;
pub use store::{PatchType, Store, StoreConfig};
pub use synthetic::{BenchPod, bench_pod, bench_pod_update, seed_bench_pods};
