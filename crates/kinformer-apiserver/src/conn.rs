//! Serving HTTP/1.1 connections with limits, so that bad clients cannot stall the server.
//!
//! - **Header read timeout** ([`ServerConfig::header_read_timeout`]): a connection that does
//!   not finish sending a request's headers in time is closed. hyper runs this timer whenever
//!   a connection waits for a request, so it is also the **idle keep-alive timeout**: an idle
//!   connection is closed after the same time. A response in progress (a long watch) never
//!   runs it.
//! - **Body read timeout** ([`ServerConfig::body_read_timeout`]) is applied by the request
//!   handler while it reads a body (408 `Timeout`).
//! - **Connection cap** ([`ServerConfig::max_connections`]): a new connection beyond it closes
//!   the oldest *idle* open connection (one waiting for a request: never one whose request or
//!   response, such as a watch, is in progress) and is served in its place, so that a flood of
//!   idle connections cannot lock clients out. Only when every open connection is busy does a
//!   new one get a `503 ServiceUnavailable` `Status` with `Connection: close`.
//!
//! [`ServerConfig::header_read_timeout`]: crate::ServerConfig::header_read_timeout
//! [`ServerConfig::body_read_timeout`]: crate::ServerConfig::body_read_timeout
//! [`ServerConfig::max_connections`]: crate::ServerConfig::max_connections

use std::collections::BTreeMap;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::serve::Listener;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::status::ApiError;

/// How long a refused connection may take to send its request head and read the refusal.
const REFUSAL_TIME: Duration = Duration::from_secs(1);

/// Connection limits (see the module docs).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnLimits {
    pub header_read_timeout: Duration,
    pub max_connections: usize,
}

/// Accepts connections from `listener` and serves `app` on each until `shutdown` fires; then
/// open connections finish their current response (watches are closed by the caller).
pub(crate) async fn serve<L>(
    mut listener: L,
    app: Router,
    limits: ConnLimits,
    shutdown: CancellationToken,
) where
    L: Listener,
    L::Io: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let open = Arc::new(OpenConns::new(limits.max_connections));
    loop {
        let (io, _) = tokio::select! {
            biased;
            () = shutdown.cancelled() => return,
            c = listener.accept() => c,
        };
        let Some(conn) = open.admit(&shutdown) else {
            tracing::warn!(
                limit = limits.max_connections,
                "connection refused: too many open connections, none of them idle"
            );
            tokio::spawn(refuse(io, limits.max_connections));
            continue;
        };
        let app = app.clone();
        tokio::spawn(async move {
            let state = Arc::clone(&conn.state);
            let service =
                hyper::service::service_fn(move |req| track(app.clone(), Arc::clone(&state), req));
            let mut builder = http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_read_timeout);
            let mut served = pin!(builder.serve_connection(TokioIo::new(io), service));
            let result = tokio::select! {
                r = served.as_mut() => r,
                () = conn.state.close.cancelled() => {
                    served.as_mut().graceful_shutdown();
                    served.await
                }
            };
            if let Err(e) = result {
                tracing::debug!(error = %e, "connection ended with an error");
            }
            drop(conn);
        });
    }
}

/// Serves one request on a tracked connection: the connection counts as busy from the
/// request's head until its response body is dropped (sent in full, or the connection gone).
async fn track(
    app: Router,
    state: Arc<ConnState>,
    req: http::Request<Incoming>,
) -> Result<http::Response<Body>, std::convert::Infallible> {
    let busy = Busy::new(state);
    let response = app.oneshot(req.map(Body::new)).await?;
    Ok(response.map(|body| {
        Body::new(body.map_frame(move |frame| {
            let _busy = &busy;
            frame
        }))
    }))
}

/// What the accept loop and a connection's task share about one connection.
#[derive(Debug)]
struct ConnState {
    /// Requests whose response is not yet sent in full (0 or 1: HTTP/1.1 does not overlap
    /// them on a connection).
    busy: AtomicUsize,
    /// Closes the connection gracefully (a child of the server's shutdown token).
    close: CancellationToken,
}

/// Marks a connection busy while it lives.
struct Busy(Arc<ConnState>);

impl Busy {
    fn new(state: Arc<ConnState>) -> Self {
        state.busy.fetch_add(1, Ordering::AcqRel);
        Self(state)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The open connections, oldest first, and the cap on their number.
#[derive(Debug)]
struct OpenConns {
    max: usize,
    inner: Mutex<OpenInner>,
}

#[derive(Debug, Default)]
struct OpenInner {
    next_id: u64,
    /// Accept order → state; a connection leaves when its task ends or it is evicted.
    conns: BTreeMap<u64, Arc<ConnState>>,
}

/// A connection's place among the open ones; leaving it (dropping) frees the place.
struct Admitted {
    id: u64,
    state: Arc<ConnState>,
    open: Arc<OpenConns>,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.open.inner.lock().conns.remove(&self.id);
    }
}

impl OpenConns {
    fn new(max: usize) -> Self {
        Self {
            max: max.max(1),
            inner: Mutex::default(),
        }
    }

    /// Takes a place for a new connection: a free one, or the place of the oldest idle
    /// connection, which is told to close. `None` when every open connection is busy.
    fn admit(self: &Arc<Self>, shutdown: &CancellationToken) -> Option<Admitted> {
        let mut inner = self.inner.lock();
        if inner.conns.len() >= self.max {
            let idle = inner
                .conns
                .iter()
                .find(|(_, c)| c.busy.load(Ordering::Acquire) == 0)
                .map(|(id, _)| *id)?;
            if let Some(evicted) = inner.conns.remove(&idle) {
                tracing::debug!("closing the oldest idle connection to admit a new one");
                evicted.close.cancel();
            }
        }
        let id = inner.next_id;
        inner.next_id += 1;
        let state = Arc::new(ConnState {
            busy: AtomicUsize::new(0),
            close: shutdown.child_token(),
        });
        inner.conns.insert(id, Arc::clone(&state));
        Some(Admitted {
            id,
            state,
            open: Arc::clone(self),
        })
    }
}

/// The refusal of a connection over the cap: reads (part of) the request head so the client
/// sees the answer rather than a reset, writes a 503 `Status`, closes.
async fn refuse<I: AsyncRead + AsyncWrite + Unpin>(mut io: I, limit: usize) {
    let body = ApiError::new(
        503,
        "ServiceUnavailable",
        format!("too many open connections (limit {limit}); retry later"),
    )
    .to_status()
    .to_string();
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let exchange = async {
        let mut head = Vec::new();
        let mut buf = [0u8; 1024];
        while head.len() < 16 * 1024 && !head.windows(4).any(|w| w == b"\r\n\r\n") {
            match io.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
        let _ = io.write_all(response.as_bytes()).await;
        let _ = io.shutdown().await;
    };
    let _ = tokio::time::timeout(REFUSAL_TIME, exchange).await;
}
