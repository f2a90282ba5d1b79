//! Helpers shared by the integration tests.
#![allow(dead_code)]
// Test helpers: a failure here is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use futures::{Stream, StreamExt};
use kube::api::WatchEvent;

/// Next watch event within 5 s (a generous bound; the event is normally immediate).
pub async fn next<K>(
    s: &mut (impl Stream<Item = kube::Result<WatchEvent<K>>> + Unpin),
) -> WatchEvent<K> {
    tokio::time::timeout(Duration::from_secs(5), s.next())
        .await
        .expect("no watch event within 5s")
        .expect("stream ended")
        .expect("watch error")
}

/// Raw GET/POST/... through reqwest-free plain hyper: returns (status, body).
pub async fn raw(
    url: &str,
    method: &str,
    path: &str,
    content_type: Option<&str>,
    body: Vec<u8>,
) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = url.trim_start_matches("http://");
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(ct) = content_type {
        req.push_str(&format!("Content-Type: {ct}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    s.write_all(&body).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    let text = String::from_utf8_lossy(&out).to_string();
    let code: u16 = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (code, body)
}
