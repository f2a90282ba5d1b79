//! Bad input gets the right 4xx `Status`, never a panic, and the server stays up.
// Helpers outside #[test] functions fail the test by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::raw;
use kinformer_apiserver::{ServerConfig, TestServer};
use serde_json::Value;

fn status(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not a Status ({e}): {body}"))
}

async fn expect(
    url: &str,
    method: &str,
    path: &str,
    ct: Option<&str>,
    body: &[u8],
    code: u16,
    reason: &str,
) {
    let (c, b) = raw(url, method, path, ct, body.to_vec()).await;
    assert_eq!(c, code, "{method} {path}: {b}");
    let s = status(&b);
    assert_eq!(s["kind"], "Status");
    assert_eq!(s["code"], code);
    assert_eq!(s["reason"], reason, "{b}");
}

#[tokio::test]
async fn malformed_requests_get_typed_statuses_and_the_server_survives() {
    let server = TestServer::start_with(ServerConfig {
        max_body_bytes: 1024,
        ..ServerConfig::for_tests()
    })
    .await
    .unwrap();
    let url = server.url();
    let cms = "/api/v1/namespaces/default/configmaps";
    let json = Some("application/json");
    expect(&url, "POST", cms, json, b"{not json", 400, "BadRequest").await;
    expect(&url, "POST", cms, json, b"[1,2]", 400, "BadRequest").await;
    expect(
        &url,
        "POST",
        cms,
        json,
        br#"{"metadata":{}}"#,
        422,
        "Invalid",
    )
    .await;
    expect(
        &url,
        "POST",
        cms,
        json,
        br#"{"metadata":{"name":"Bad_Name"}}"#,
        422,
        "Invalid",
    )
    .await;
    expect(
        &url,
        "POST",
        cms,
        json,
        br#"{"metadata":{"name":"a","namespace":"other"}}"#,
        400,
        "BadRequest",
    )
    .await;
    expect(
        &url,
        "POST",
        cms,
        json,
        &vec![b' '; 4096],
        413,
        "RequestEntityTooLarge",
    )
    .await;
    expect(&url, "GET", "/api/v1/widgets", None, b"", 404, "NotFound").await;
    expect(
        &url,
        "GET",
        "/apis/example.com/v1/things",
        None,
        b"",
        404,
        "NotFound",
    )
    .await;
    expect(&url, "GET", "/nothing/here", None, b"", 404, "NotFound").await;
    expect(
        &url,
        "GET",
        &format!("{cms}?labelSelector=a%20in%20b"),
        None,
        b"",
        400,
        "BadRequest",
    )
    .await;
    expect(
        &url,
        "GET",
        &format!("{cms}?fieldSelector=metadata.name"),
        None,
        b"",
        400,
        "BadRequest",
    )
    .await;
    expect(
        &url,
        "GET",
        &format!("{cms}?resourceVersion=abc"),
        None,
        b"",
        400,
        "BadRequest",
    )
    .await;
    expect(
        &url,
        "GET",
        &format!("{cms}?limit=x"),
        None,
        b"",
        400,
        "BadRequest",
    )
    .await;
    expect(
        &url,
        "GET",
        &format!("{cms}?continue=zzzz"),
        None,
        b"",
        400,
        "BadRequest",
    )
    .await;
    expect(
        &url,
        "GET",
        &format!("{cms}?resourceVersionMatch=Exact"),
        None,
        b"",
        422,
        "Invalid",
    )
    .await;
    expect(
        &url,
        "GET",
        &format!("{cms}?watch=true&sendInitialEvents=true"),
        None,
        b"",
        422,
        "Invalid",
    )
    .await;
    expect(
        &url,
        "PATCH",
        &format!("{cms}/missing"),
        Some("application/merge-patch+json"),
        b"{}",
        404,
        "NotFound",
    )
    .await;
    expect(
        &url,
        "PUT",
        &format!("{cms}/missing"),
        json,
        br#"{"metadata":{"name":"missing"}}"#,
        404,
        "NotFound",
    )
    .await;
    expect(
        &url,
        "DELETE",
        &format!("{cms}/missing"),
        None,
        b"",
        404,
        "NotFound",
    )
    .await;
    expect(&url, "PUT", cms, json, b"{}", 405, "MethodNotAllowed").await;
    // A body naming another object than the URL.
    server
        .store()
        .create(
            "configmaps",
            "default",
            serde_json::json!({"metadata": {"name": "a"}}),
        )
        .unwrap();
    expect(
        &url,
        "PUT",
        &format!("{cms}/a"),
        json,
        br#"{"metadata":{"name":"b"}}"#,
        400,
        "BadRequest",
    )
    .await;
    expect(
        &url,
        "PATCH",
        &format!("{cms}/a"),
        Some("text/plain"),
        b"{}",
        415,
        "UnsupportedMediaType",
    )
    .await;
    expect(
        &url,
        "PATCH",
        &format!("{cms}/a"),
        Some("application/json-patch+json"),
        br#"[{"op":"remove","path":"/nope"}]"#,
        422,
        "Invalid",
    )
    .await;
    expect(
        &url,
        "PATCH",
        &format!("{cms}/a"),
        Some("application/json-patch+json"),
        br#"{"op":"x"}"#,
        400,
        "BadRequest",
    )
    .await;
    expect(
        &url,
        "POST",
        "/api/v1/namespaces/default/configmaps/a/status",
        json,
        b"{}",
        404,
        "NotFound",
    )
    .await;
    // Still serving.
    let (c, b) = raw(&url, "GET", cms, None, vec![]).await;
    assert_eq!(c, 200, "{b}");
    assert_eq!(status(&b)["kind"], "ConfigMapList");
}

#[tokio::test]
async fn the_store_handle_reports_the_same_errors() {
    let server = TestServer::start().await.unwrap();
    let s = server.store();
    assert_eq!(
        s.create("widgets", "", serde_json::json!({}))
            .unwrap_err()
            .code,
        404
    );
    assert_eq!(
        s.create("configmaps", "default", serde_json::json!("x"))
            .unwrap_err()
            .code,
        400
    );
    s.create(
        "configmaps",
        "default",
        serde_json::json!({"metadata": {"name": "a"}}),
    )
    .unwrap();
    let e = s
        .create(
            "configmaps",
            "default",
            serde_json::json!({"metadata": {"name": "a"}}),
        )
        .unwrap_err();
    assert_eq!((e.code, e.reason), (409, "AlreadyExists"));
    let e = s
        .update(
            "configmaps",
            "default",
            serde_json::json!({"metadata": {"name": "a", "resourceVersion": "999"}}),
        )
        .unwrap_err();
    assert_eq!((e.code, e.reason), (409, "Conflict"));
}

/// Opens `path` as a streaming GET and reads until `needle` shows up, the connection ends or
/// 5 s pass; returns what was read.
async fn read_stream_until(url: &str, path: &str, needle: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = url.trim_start_matches("http://");
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let n = match tokio::time::timeout_at(deadline, s.read(&mut buf)).await {
            Ok(Ok(n)) => n,
            Ok(Err(_)) | Err(_) => break,
        };
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
        if String::from_utf8_lossy(&out).contains(needle) {
            break;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn a_huge_watch_timeout_is_clamped_not_a_panic() {
    let server = TestServer::start().await.unwrap();
    server
        .store()
        .create(
            "configmaps",
            "default",
            serde_json::json!({"metadata": {"name": "cm"}}),
        )
        .unwrap();
    let url = server.url();
    for secs in ["9223372036854775807", "18446744073709551615"] {
        let path =
            format!("/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds={secs}");
        let got = read_stream_until(&url, &path, "\"ADDED\"").await;
        assert!(got.starts_with("HTTP/1.1 200"), "{got}");
        assert!(got.contains("\"ADDED\""), "no event for {secs}: {got}");
    }
    // The server is still up.
    let (code, _) = raw(
        &url,
        "GET",
        "/api/v1/namespaces/default/configmaps",
        None,
        vec![],
    )
    .await;
    assert_eq!(code, 200);
}
