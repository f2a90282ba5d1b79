//! Connection limits: slow or idle clients are cut off, connections beyond the cap are refused
//! with a clear answer, and long-running watches are not affected.
// Helpers outside #[test] functions fail the test by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::raw;
use kinformer_apiserver::{ServerConfig, TestServer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

async fn server(config: ServerConfig) -> TestServer {
    TestServer::start_with(config).await.unwrap()
}

fn short_timeouts() -> ServerConfig {
    ServerConfig {
        header_read_timeout: Duration::from_millis(300),
        body_read_timeout: Duration::from_millis(300),
        ..ServerConfig::for_tests()
    }
}

/// Reads until the peer closes (or errors); `None` if it is still open after `within`.
async fn read_until_closed(s: &mut TcpStream, within: Duration) -> Option<String> {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    let read_all = async {
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => out.extend_from_slice(&buf[..n]),
            }
        }
    };
    tokio::time::timeout(within, read_all).await.ok()?;
    Some(String::from_utf8_lossy(&out).into_owned())
}

#[tokio::test]
async fn a_client_trickling_its_headers_is_cut_off() {
    let server = server(short_timeouts()).await;
    let addr = server.addr();
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET /api/v1/pods HTTP/1.1\r\n").await.unwrap();
    let trickle = async {
        // One header byte every 100 ms, never finishing the head.
        for b in b"X-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
            .iter()
            .cycle()
        {
            if s.write_all(&[*b]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let cut = tokio::time::timeout(Duration::from_secs(5), trickle).await;
    assert!(cut.is_ok(), "the connection stayed open for 5 s");
}

#[tokio::test]
async fn idle_connections_are_closed_after_the_timeout() {
    let server = server(short_timeouts()).await;
    // Never sends anything.
    let mut silent = TcpStream::connect(server.addr()).await.unwrap();
    assert!(
        read_until_closed(&mut silent, Duration::from_secs(5))
            .await
            .is_some(),
        "a silent connection stayed open"
    );
    // One request on a keep-alive connection, then silence.
    let mut kept = TcpStream::connect(server.addr()).await.unwrap();
    let req = format!("GET /version HTTP/1.1\r\nHost: {}\r\n\r\n", server.addr());
    kept.write_all(req.as_bytes()).await.unwrap();
    let answer = read_until_closed(&mut kept, Duration::from_secs(5))
        .await
        .expect("an idle keep-alive connection stayed open");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

#[tokio::test]
async fn a_body_that_does_not_arrive_gets_408() {
    let server = server(short_timeouts()).await;
    let mut s = TcpStream::connect(server.addr()).await.unwrap();
    let head = format!(
        "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"meta",
        server.addr()
    );
    s.write_all(head.as_bytes()).await.unwrap();
    let answer = read_until_closed(&mut s, Duration::from_secs(5))
        .await
        .expect("no answer to a stalled body");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("\"reason\":\"Timeout\""), "{answer}");
}

#[tokio::test]
async fn connections_beyond_the_cap_are_refused_with_503_and_open_ones_still_work() {
    let server = server(ServerConfig {
        max_connections: 2,
        ..ServerConfig::for_tests()
    })
    .await;
    let url = server.url();
    // Two connections hold the two slots (each proves it is served).
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut s = TcpStream::connect(server.addr()).await.unwrap();
        let req = format!("GET /version HTTP/1.1\r\nHost: {}\r\n\r\n", server.addr());
        s.write_all(req.as_bytes()).await.unwrap();
        let mut buf = [0u8; 1024];
        let n = s.read(&mut buf).await.unwrap();
        assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
        held.push(s);
    }
    let (code, body) = raw(&url, "GET", "/version", None, Vec::new()).await;
    assert_eq!(code, 503, "{body}");
    assert!(body.contains("too many open connections"), "{body}");
    assert!(body.contains("\"reason\":\"ServiceUnavailable\""), "{body}");
    // A held connection is still served.
    let req = format!("GET /version HTTP/1.1\r\nHost: {}\r\n\r\n", server.addr());
    held[0].write_all(req.as_bytes()).await.unwrap();
    let mut buf = [0u8; 1024];
    let n = held[0].read(&mut buf).await.unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
    // Closing one frees its slot (the server notices the close asynchronously).
    drop(held.pop());
    let mut served = false;
    for _ in 0..100 {
        if raw(&url, "GET", "/version", None, Vec::new()).await.0 == 200 {
            served = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(served, "a freed slot was not reused");
}

#[tokio::test]
async fn a_watch_outlives_the_header_and_body_timeouts() {
    let server = server(short_timeouts()).await;
    let mut s = TcpStream::connect(server.addr()).await.unwrap();
    let req = format!(
        "GET /api/v1/namespaces/default/configmaps?watch=true&resourceVersion=0 HTTP/1.1\r\nHost: {}\r\n\r\n",
        server.addr()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut buf = [0u8; 4096];
    let n = s.read(&mut buf).await.unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
    // Three times the timeouts, then a change must still arrive on the same connection.
    tokio::time::sleep(Duration::from_millis(900)).await;
    server
        .store()
        .create(
            "configmaps",
            "default",
            serde_json::json!({"metadata": {"name": "late"}}),
        )
        .unwrap();
    let mut got = Vec::new();
    let found = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            let n = s.read(&mut buf).await.unwrap();
            assert!(n > 0, "the watch was closed");
            got.extend_from_slice(&buf[..n]);
            if String::from_utf8_lossy(&got).contains("\"late\"") {
                break;
            }
        }
    })
    .await;
    assert!(found.is_ok(), "{}", String::from_utf8_lossy(&got));
}
