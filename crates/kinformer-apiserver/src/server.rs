//! Starting and stopping the server; the in-process handle for tests.
//!
//! Where to start: [`ApiServer::start`] binds `127.0.0.1:0`, serves the built-in resources and
//! hands back the URL, a `kube::Client`, the [`Store`] (write and read objects directly) and
//! the [`Faults`] handle.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_util::sync::{CancellationToken, ReusableBoxFuture};

use crate::audit::WriteAudit;
pub use crate::config::ServerConfig;
use crate::conn::{self, ConnLimits};
use crate::faults::Faults;
use crate::requests::RequestLog;
use crate::routes::{AppState, handle};
use crate::stats::ServerStats;
use crate::store::Store;

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
    audit: WriteAudit,
    requests: RequestLog,
    shutdown: CancellationToken,
    config: Arc<ServerConfig>,
    stats: Arc<ServerStats>,
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
        let audit = WriteAudit::default();
        let requests = RequestLog::default();
        let state = AppState {
            store: store.clone(),
            faults: faults.clone(),
            audit: audit.clone(),
            requests: requests.clone(),
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
            audit,
            requests,
            shutdown,
            config,
            stats,
        })
    }

    /// How many watch-list requests the server refused ([`ServerConfig::no_watch_list`]).
    pub fn watch_lists_refused(&self) -> u64 {
        self.stats.watch_lists_refused.load(Ordering::Relaxed)
    }

    /// How the server's watch streams have cut their events into chunks so far: whether
    /// watchers keep up event by event (see [`WatchChunks`](crate::watch::WatchChunks)).
    pub fn watch_chunks(&self) -> crate::watch::WatchChunkCounts {
        self.stats.watch_chunks.counts()
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

    /// The write audit: off until [`WriteAudit::enable`]; then every write over HTTP is
    /// recorded with its writer (see [`crate::audit`]).
    pub fn audit(&self) -> &WriteAudit {
        &self.audit
    }

    /// The log of the resource requests received: off until [`RequestLog::enable`].
    pub fn requests(&self) -> &RequestLog {
        &self.requests
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
