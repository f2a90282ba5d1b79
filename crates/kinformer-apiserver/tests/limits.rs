//! Connection limits: slow or idle clients are cut off, a connection beyond the cap takes the
//! place of the oldest idle one (or is refused with a clear answer when none is idle), and
//! long-running watches are not affected.
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

/// Opens a watch on `addr` and reads its response head: the connection is then busy for as
/// long as it is open.
async fn open_watch(addr: std::net::SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "GET /api/v1/namespaces/default/configmaps?watch=true&resourceVersion=0 HTTP/1.1\r\nHost: {addr}\r\n\r\n"
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut buf = [0u8; 4096];
    let n = s.read(&mut buf).await.unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"), "{:?}", &buf[..n]);
    s
}

/// A keep-alive connection that has been answered once and is now idle.
async fn idle_keep_alive(addr: std::net::SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let req = format!("GET /version HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut buf = [0u8; 1024];
    let n = s.read(&mut buf).await.unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
    s
}

/// Reads a watch until `name` appears in it.
async fn watch_sees(s: &mut TcpStream, name: &str) -> bool {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let found = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            let n = s.read(&mut buf).await.unwrap();
            assert!(n > 0, "the watch was closed");
            got.extend_from_slice(&buf[..n]);
            if String::from_utf8_lossy(&got).contains(name) {
                break;
            }
        }
    })
    .await;
    found.is_ok()
}

#[tokio::test]
async fn a_new_connection_beyond_the_cap_replaces_the_oldest_idle_one() {
    let server = server(ServerConfig {
        max_connections: 2,
        ..ServerConfig::for_tests()
    })
    .await;
    let addr = server.addr();
    let mut oldest = idle_keep_alive(addr).await;
    let mut newer = idle_keep_alive(addr).await;
    let (code, body) = raw(&server.url(), "GET", "/version", None, Vec::new()).await;
    assert_eq!(code, 200, "{body}");
    assert!(
        read_until_closed(&mut oldest, Duration::from_secs(5))
            .await
            .is_some(),
        "the oldest idle connection was not closed"
    );
    // The newer one keeps its place and is still served.
    let req = format!("GET /version HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    newer.write_all(req.as_bytes()).await.unwrap();
    let mut buf = [0u8; 1024];
    let n = newer.read(&mut buf).await.unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
}

#[tokio::test]
async fn connections_beyond_the_cap_are_refused_with_503_when_all_are_busy() {
    let server = server(ServerConfig {
        max_connections: 2,
        ..ServerConfig::for_tests()
    })
    .await;
    let url = server.url();
    // Two watches hold the two places; neither is idle, so neither may be closed.
    let mut watches = vec![
        open_watch(server.addr()).await,
        open_watch(server.addr()).await,
    ];
    let (code, body) = raw(&url, "GET", "/version", None, Vec::new()).await;
    assert_eq!(code, 503, "{body}");
    assert!(body.contains("too many open connections"), "{body}");
    assert!(body.contains("\"reason\":\"ServiceUnavailable\""), "{body}");
    // Both watches still deliver.
    server
        .store()
        .create(
            "configmaps",
            "default",
            serde_json::json!({"metadata": {"name": "after-refusal"}}),
        )
        .unwrap();
    for w in &mut watches {
        assert!(watch_sees(w, "after-refusal").await, "a watch stopped");
    }
    // Closing one frees its place (the server notices the close asynchronously).
    drop(watches.pop());
    let mut served = false;
    for _ in 0..100 {
        if raw(&url, "GET", "/version", None, Vec::new()).await.0 == 200 {
            served = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(served, "a freed place was not reused");
}

/// Lets this process open `want` file descriptors if its hard limit allows it.
fn raise_fd_limit(want: u64) {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current.is_some_and(|c| c < want) {
        limit.current = Some(limit.maximum.map_or(want, |m| m.min(want)));
        setrlimit(Resource::Nofile, limit).unwrap();
    }
}

#[tokio::test]
async fn a_flood_of_idle_connections_does_not_lock_clients_out() {
    const FLOOD: usize = 2_000;
    // The flood's client ends, the server's ends (up to the default cap of 1,024) and slack.
    raise_fd_limit(8_192);
    let server = server(ServerConfig::for_tests()).await;
    assert!(server.config().max_connections < FLOOD);
    let mut watch = open_watch(server.addr()).await;
    let mut flood = Vec::with_capacity(FLOOD);
    for _ in 0..FLOOD {
        flood.push(TcpStream::connect(server.addr()).await.unwrap());
    }
    let answer = tokio::time::timeout(
        Duration::from_secs(1),
        raw(&server.url(), "GET", "/version", None, Vec::new()),
    )
    .await;
    let (code, body) = answer.unwrap_or_else(|_| {
        panic!("no answer within 1 s during a flood of {FLOOD} idle connections")
    });
    assert_eq!(code, 200, "{body}");
    // The watch opened before the flood is busy, so it was not closed to make room.
    server
        .store()
        .create(
            "configmaps",
            "default",
            serde_json::json!({"metadata": {"name": "during-flood"}}),
        )
        .unwrap();
    assert!(
        watch_sees(&mut watch, "during-flood").await,
        "the watch stopped"
    );
    drop(flood);
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
