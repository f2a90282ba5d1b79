//! Starting and stopping the server; the in-process handle for tests.
//!
//! Where to start: [`ApiServer::start`] binds `127.0.0.1:0`, serves the built-in resources and
//! hands back the URL, a `kube::Client`, the [`Store`] (write and read objects directly) and
//! the [`Faults`] handle.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_util::sync::{CancellationToken, ReusableBoxFuture};

use crate::conn::{self, ConnLimits};
use crate::faults::Faults;
use crate::resource::ResourceDef;
use crate::routes::{AppState, handle};
use crate::store::{Store, StoreConfig};

/// Server settings. The defaults are kube-apiserver's where it has one; tests shorten the
/// intervals.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Address to bind; `127.0.0.1:0` by default (a free port on loopback only).
    pub bind: SocketAddr,
    /// History bounds.
    pub store: StoreConfig,
    /// Interval of BOOKMARK events on watches that allow them.
    pub bookmark_interval: Duration,
    /// Watch length when the client sends no `timeoutSeconds`.
    pub default_watch_timeout: Duration,
    /// How long a request for a future resourceVersion waits before 504.
    pub rv_wait: Duration,
    /// Largest accepted request body (413 beyond; Kubernetes' limit is 3 MiB).
    pub max_body_bytes: usize,
    /// A connection must send a request's headers within this time, and an idle keep-alive
    /// connection is closed after it (one hyper timer serves both). Never applies while a
    /// response (a watch) is being sent. 30 s by default.
    pub header_read_timeout: Duration,
    /// A request body must arrive within this time (408 `Timeout` otherwise). 60 s by default.
    pub body_read_timeout: Duration,
    /// Open connections at most; a connection beyond gets `503 ServiceUnavailable` and is
    /// closed. 1024 by default.
    pub max_connections: usize,
    /// Answer requests whatever their `Host` header (needed when binding a non-loopback
    /// address). Off by default: only loopback host names are answered (403 otherwise), which
    /// keeps web pages from reaching the server through DNS rebinding.
    pub allow_remote: bool,
    /// Seed of random faults.
    pub seed: u64,
    /// Resources served (the built-ins by default).
    pub resources: Vec<ResourceDef>,
    /// Refuse watch-list requests (`watch=true&sendInitialEvents=true`) with `422 Invalid`,
    /// as Kubernetes 1.26–1.31 do by default (the `WatchList` feature off). Off by default:
    /// watch-list is served. [`ApiServer::watch_lists_refused`] counts the refusals.
    pub no_watch_list: bool,
    /// Answer JSON whatever the client asks for, as a server without protobuf does (406 to a
    /// request that accepts protobuf only). Off by default: built-in kinds speak protobuf.
    pub json_only: bool,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            store: StoreConfig::default(),
            bookmark_interval: Duration::from_secs(60),
            default_watch_timeout: Duration::from_secs(1800),
            rv_wait: Duration::from_secs(1),
            max_body_bytes: 3 * 1024 * 1024,
            header_read_timeout: Duration::from_secs(30),
            body_read_timeout: Duration::from_secs(60),
            max_connections: 1024,
            allow_remote: false,
            seed: 0,
            resources: ResourceDef::builtins(),
            no_watch_list: false,
            json_only: false,
        }
    }
}

impl ServerConfig {
    /// Settings for fast tests: bookmarks every 100 ms, 200 ms wait for future revisions.
    pub fn for_tests() -> Self {
        Self {
            bookmark_interval: Duration::from_millis(100),
            rv_wait: Duration::from_millis(200),
            ..Self::default()
        }
    }

    /// Answers any `Host` header (see [`ServerConfig::allow_remote`]).
    #[must_use]
    pub fn with_allow_remote(mut self, allow: bool) -> Self {
        self.allow_remote = allow;
        self
    }

    /// Refuses watch-list requests as Kubernetes 1.26–1.31 do (see
    /// [`ServerConfig::no_watch_list`]).
    #[must_use]
    pub fn with_no_watch_list(mut self, refuse: bool) -> Self {
        self.no_watch_list = refuse;
        self
    }

    /// Answers JSON only (see [`ServerConfig::json_only`]).
    #[must_use]
    pub fn with_json_only(mut self, json_only: bool) -> Self {
        self.json_only = json_only;
        self
    }

    /// Adds a resource (e.g. a custom resource) to serve.
    #[must_use]
    pub fn with_resource(mut self, def: ResourceDef) -> Self {
        self.resources.push(def);
        self
    }
}

/// Errors starting the server.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The address could not be bound.
    #[error("cannot bind {0}: {1}")]
    Bind(SocketAddr, #[source] io::Error),
    /// The kube client could not be built.
    #[error("cannot build a kube client: {0}")]
    Client(#[from] kube::Error),
}

/// A running server. Dropping it stops the server and closes every watch.
#[derive(Debug)]
pub struct ApiServer {
    addr: SocketAddr,
    store: Store,
    faults: Faults,
    shutdown: CancellationToken,
    config: Arc<ServerConfig>,
    stats: Arc<ServerStats>,
}

/// Counters of what the server answered (for tests).
#[derive(Debug, Default)]
pub(crate) struct ServerStats {
    /// Watch-list requests refused because of [`ServerConfig::no_watch_list`].
    pub(crate) watch_lists_refused: AtomicU64,
}

/// The name tests use for [`ApiServer`].
pub type TestServer = ApiServer;

impl ApiServer {
    /// Starts a server with [`ServerConfig::for_tests`] on a free loopback port.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use kinformer_apiserver::TestServer;
    /// let server = TestServer::start().await.unwrap();
    /// server.store().create("configmaps", "default", serde_json::json!({
    ///     "metadata": {"name": "cm"}, "data": {"k": "v"}})).unwrap();
    /// assert!(server.url().starts_with("http://127.0.0.1:"));
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`ServerError::Bind`] if no port can be bound.
    ///
    /// # Cancel safety
    /// Cancel safe: a dropped start leaves nothing running.
    pub async fn start() -> Result<Self, ServerError> {
        Self::start_with(ServerConfig::for_tests()).await
    }

    /// Starts a server with `config`.
    ///
    /// # Errors
    /// [`ServerError::Bind`] if the address cannot be bound.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn start_with(config: ServerConfig) -> Result<Self, ServerError> {
        let listener = TcpListener::bind(config.bind)
            .await
            .map_err(|e| ServerError::Bind(config.bind, e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| ServerError::Bind(config.bind, e))?;
        let store = Store::new(config.resources.clone(), config.store.clone());
        let faults = Faults::new(store.clone(), config.seed);
        let config = Arc::new(config);
        let stats = Arc::new(ServerStats::default());
        let state = AppState {
            store: store.clone(),
            faults: faults.clone(),
            config: config.clone(),
            stats: stats.clone(),
        };
        let app = Router::new().fallback(handle).with_state(state);
        let shutdown = CancellationToken::new();
        let listener = FaultyListener {
            inner: listener,
            faults: faults.clone(),
            restarts: faults.restarts(),
        };
        let limits = ConnLimits {
            header_read_timeout: config.header_read_timeout,
            max_connections: config.max_connections.max(1),
        };
        tokio::spawn(conn::serve(listener, app, limits, shutdown.clone()));
        Ok(Self {
            addr,
            store,
            faults,
            shutdown,
            config,
            stats,
        })
    }

    /// How many watch-list requests the server refused ([`ServerConfig::no_watch_list`]).
    pub fn watch_lists_refused(&self) -> u64 {
        self.stats.watch_lists_refused.load(Ordering::Relaxed)
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL, e.g. `http://127.0.0.1:43127`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A `kube::Client` for this server (plain HTTP, no auth).
    ///
    /// # Errors
    /// [`ServerError::Client`] if the client cannot be built (must be called inside a tokio
    /// runtime).
    pub fn client(&self) -> Result<kube::Client, ServerError> {
        Ok(kube::Client::try_from(self.kube_config()?)?)
    }

    /// A `kube::Client` that does not retry 429/503/504 (kube retries those by default), for
    /// tests that want to see the error itself.
    ///
    /// # Errors
    /// As [`ApiServer::client`].
    pub fn client_without_retries(&self) -> Result<kube::Client, ServerError> {
        let mut config = self.kube_config()?;
        config.default_retry = false;
        Ok(kube::Client::try_from(config)?)
    }

    /// A `kube::Config` for this server, to customise before building a client.
    ///
    /// # Errors
    /// [`ServerError::Client`] if the URL does not parse (it always does).
    pub fn kube_config(&self) -> Result<kube::Config, ServerError> {
        let uri: http::Uri = self.url().parse().map_err(|e: http::uri::InvalidUri| {
            ServerError::Client(kube::Error::Service(Box::new(e)))
        })?;
        Ok(kube::Config::new(uri))
    }

    /// The object store: create/update/delete/read objects without HTTP.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The fault-injection handle.
    pub fn faults(&self) -> &Faults {
        &self.faults
    }

    /// The settings the server runs with.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// A kubeconfig (YAML) pointing at this server, for kubectl and other clients.
    pub fn kubeconfig(&self) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: kinformer\n  cluster:\n    server: {url}\ncontexts:\n- name: kinformer\n  context:\n    cluster: kinformer\n    user: kinformer\ncurrent-context: kinformer\nusers:\n- name: kinformer\n  user: {{}}\n",
            url = self.url()
        )
    }

    /// Stops the server: closes watches and stops accepting connections.
    pub fn shutdown(&self) {
        self.faults.close_all_watches();
        self.shutdown.cancel();
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// A listener that refuses connections during a simulated restart and breaks the
/// connections accepted before it.
struct FaultyListener {
    inner: TcpListener,
    faults: Faults,
    restarts: watch::Receiver<u64>,
}

impl axum::serve::Listener for FaultyListener {
    type Io = RestartableIo;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            match self.inner.accept().await {
                Ok((s, a)) => {
                    if self.faults.refusing() {
                        drop(s);
                        continue;
                    }
                    let _ = s.set_nodelay(true);
                    let epoch = *self.restarts.borrow();
                    return (RestartableIo::new(s, epoch, self.restarts.clone()), a);
                }
                Err(e) => {
                    tracing::debug!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

/// A connection that breaks when a restart is simulated: an idle keep-alive connection is
/// woken and closed at once (as a real restart would), so clients drop it from their pools
/// instead of reusing a dead connection.
struct RestartableIo {
    inner: TcpStream,
    epoch: u64,
    restarts: watch::Receiver<u64>,
    /// Completes when the restart counter moves past `epoch`; polled by reads so that a
    /// connection parked in a read is woken by the restart. Never polled again once `broken`.
    restarted: ReusableBoxFuture<'static, ()>,
}

impl RestartableIo {
    fn new(inner: TcpStream, epoch: u64, restarts: watch::Receiver<u64>) -> Self {
        let mut rx = restarts.clone();
        let restarted = ReusableBoxFuture::new(async move {
            loop {
                if *rx.borrow_and_update() != epoch {
                    return;
                }
                if rx.changed().await.is_err() {
                    // The server is gone; its shutdown closes the connection.
                    std::future::pending::<()>().await;
                }
            }
        });
        RestartableIo {
            inner,
            epoch,
            restarts,
            restarted,
        }
    }

    fn broken(&self) -> bool {
        *self.restarts.borrow() != self.epoch
    }

    /// True once a restart happened; registers the waker otherwise.
    fn poll_restarted(&mut self, cx: &mut Context<'_>) -> bool {
        self.broken() || self.restarted.poll(cx).is_ready()
    }
}

fn reset() -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionReset, "simulated server restart")
}

impl AsyncRead for RestartableIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.poll_restarted(cx) {
            return Poll::Ready(Err(reset()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for RestartableIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.broken() {
            return Poll::Ready(Err(reset()));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if self.broken() {
            return Poll::Ready(Err(reset()));
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync + 'static>() {}

    #[test]
    fn public_handles_are_send_and_sync() {
        assert_send_sync::<ApiServer>();
        assert_send_sync::<Store>();
        assert_send_sync::<Faults>();
    }

    #[tokio::test]
    async fn dropping_the_server_ends_open_watches() {
        let server = ApiServer::start().await.unwrap();
        let mut restarts = server.faults().watch_closes();
        restarts.borrow_and_update();
        drop(server);
        assert!(restarts.has_changed().unwrap_or(true));
    }
}
