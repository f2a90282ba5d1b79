//! Serving HTTP/1.1 connections with limits, so that bad clients cannot stall the server.
//!
//! - **Header read timeout** ([`ServerConfig::header_read_timeout`]): a connection that does
//!   not finish sending a request's headers in time is closed. hyper runs this timer whenever
//!   a connection waits for a request, so it is also the **idle keep-alive timeout**: an idle
//!   connection is closed after the same time. A response in progress (a long watch) never
//!   runs it.
//! - **Body read timeout** ([`ServerConfig::body_read_timeout`]) is applied by the request
//!   handler while it reads a body (408 `Timeout`).
//! - **Connection cap** ([`ServerConfig::max_connections`]): beyond it, a new connection gets
//!   a `503 ServiceUnavailable` `Status` with `Connection: close` and is closed; open
//!   connections (and their watches) are not affected.

use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::serve::Listener;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

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
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    loop {
        let (io, _) = tokio::select! {
            biased;
            () = shutdown.cancelled() => return,
            c = listener.accept() => c,
        };
        let Ok(permit) = Arc::clone(&permits).try_acquire_owned() else {
            tracing::warn!(
                limit = limits.max_connections,
                "connection refused: too many open connections"
            );
            tokio::spawn(refuse(io, limits.max_connections));
            continue;
        };
        let service = TowerToHyperService::new(app.clone());
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let mut builder = http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_read_timeout);
            let mut conn = pin!(builder.serve_connection(TokioIo::new(io), service));
            let result = tokio::select! {
                r = conn.as_mut() => r,
                () = shutdown.cancelled() => {
                    conn.as_mut().graceful_shutdown();
                    conn.await
                }
            };
            if let Err(e) = result {
                tracing::debug!(error = %e, "connection ended with an error");
            }
        });
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
