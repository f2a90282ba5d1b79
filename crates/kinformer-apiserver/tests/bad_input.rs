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

/// Sends `request` (a full HTTP/1.1 request, `{addr}` replaced by the server's address) and
/// returns (status, body) of the answer.
async fn raw_request(url: &str, request: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = url.trim_start_matches("http://");
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(request.replace("{addr}", addr).as_bytes())
        .await
        .unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), s.read_to_end(&mut out)).await;
    let text = String::from_utf8_lossy(&out).to_string();
    let code = text
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

#[tokio::test]
async fn validation_answers_as_kubernetes_does() {
    let server = TestServer::start().await.unwrap();
    let url = server.url();
    let cms = "/api/v1/namespaces/default/configmaps";
    let json = Some("application/json");
    let post = |path: &'static str, body: &'static str, code: u16, reason: &'static str| {
        let url = url.clone();
        async move { expect(&url, "POST", path, json, body.as_bytes(), code, reason).await }
    };
    // Names: a DNS-1123 subdomain, starting and ending alphanumeric.
    post(cms, r#"{"metadata":{"name":"-lead-dash"}}"#, 422, "Invalid").await;
    post(cms, r#"{"metadata":{"name":"trail."}}"#, 422, "Invalid").await;
    // Namespace names: a DNS-1123 label, in the URL or in the body.
    for ns in ["UPPER", "a.b", "-x"] {
        let path = format!("/api/v1/namespaces/{ns}/configmaps");
        expect(
            &url,
            "POST",
            &path,
            json,
            br#"{"metadata":{"name":"a"}}"#,
            422,
            "Invalid",
        )
        .await;
    }
    let e = server
        .store()
        .create(
            "configmaps",
            "",
            serde_json::json!({"metadata": {"name": "a", "namespace": "a/b"}}),
        )
        .unwrap_err();
    assert_eq!((e.code, e.reason), (422, "Invalid"));
    post(
        "/api/v1/namespaces",
        r#"{"metadata":{"name":"dotted.name"}}"#,
        422,
        "Invalid",
    )
    .await;
    // apiVersion / kind of another resource.
    post(
        cms,
        r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"a"}}"#,
        400,
        "BadRequest",
    )
    .await;
    post(
        cms,
        r#"{"apiVersion":"apps/v1","kind":"ConfigMap","metadata":{"name":"a"}}"#,
        400,
        "BadRequest",
    )
    .await;
    // Labels: strings only (400 in a body, 422 through a patch), valid keys and values.
    post(
        cms,
        r#"{"metadata":{"name":"a","labels":{"x":1}}}"#,
        400,
        "BadRequest",
    )
    .await;
    post(
        cms,
        r#"{"metadata":{"name":"a","labels":{"x":"-bad-"}}}"#,
        422,
        "Invalid",
    )
    .await;
    let (c, b) = raw(
        &url,
        "POST",
        cms,
        json,
        br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"x":"y"}}}"#
            .to_vec(),
    )
    .await;
    assert_eq!(c, 201, "{b}");
    for patch in [
        r#"{"metadata":{"labels":{"x":5}}}"#,
        r#"{"metadata":{"labels":{"x":{"y":"z"}}}}"#,
        r#"{"metadata":{"annotations":{"x":true}}}"#,
    ] {
        expect(
            &url,
            "PATCH",
            &format!("{cms}/a"),
            Some("application/merge-patch+json"),
            patch.as_bytes(),
            422,
            "Invalid",
        )
        .await;
    }
    // Field selectors: only the fields the resource supports.
    expect(
        &url,
        "GET",
        &format!("{cms}?fieldSelector=spec.nope%3Dx"),
        None,
        b"",
        400,
        "BadRequest",
    )
    .await;
    let (c, b) = raw(
        &url,
        "GET",
        &format!("{cms}?fieldSelector=metadata.name%3Da"),
        None,
        vec![],
    )
    .await;
    assert_eq!(c, 200, "{b}");
    let (c, b) = raw(
        &url,
        "GET",
        "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1",
        None,
        vec![],
    )
    .await;
    assert_eq!(c, 200, "{b}");
    // A malformed chunked body is a bad request, not "too large".
    let (c, b) = raw_request(
        &url,
        "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
    )
    .await;
    assert_eq!(c, 400, "{b}");
    // Objects cannot grow past 1.5 MiB through patches.
    let big = "x".repeat(1024 * 1024);
    let grow = |k: &str| serde_json::json!({"metadata": {"annotations": {k: big}}}).to_string();
    let (c, b) = raw(
        &url,
        "PATCH",
        &format!("{cms}/a"),
        Some("application/merge-patch+json"),
        grow("one").into_bytes(),
    )
    .await;
    assert_eq!(c, 200, "{b}");
    let (c, b) = raw(
        &url,
        "PATCH",
        &format!("{cms}/a"),
        Some("application/merge-patch+json"),
        grow("two").into_bytes(),
    )
    .await;
    assert_eq!(c, 413, "{b}");
    assert_eq!(status(&b)["reason"], "RequestEntityTooLarge");
}

#[tokio::test]
async fn loopback_hygiene_host_content_type_and_collection_delete() {
    let server = TestServer::start().await.unwrap();
    let url = server.url();
    server
        .store()
        .create(
            "configmaps",
            "default",
            serde_json::json!({"metadata": {"name": "keep"}}),
        )
        .unwrap();
    // DNS rebinding: a foreign Host is refused, loopback names are served.
    let get = |host: &str| {
        format!(
            "GET /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
        )
    };
    let (c, b) = raw_request(&url, &get("evil.example:80")).await;
    assert_eq!(c, 403, "{b}");
    assert_eq!(status(&b)["reason"], "Forbidden");
    for host in ["{addr}", "localhost:1", "[::1]:1"] {
        let (c, b) = raw_request(&url, &get(host)).await;
        assert_eq!(c, 200, "{host}: {b}");
    }
    // Cross-site form posts: writes need JSON.
    for ct in [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
    ] {
        expect(
            &url,
            "POST",
            "/api/v1/namespaces/default/configmaps",
            Some(ct),
            br#"{"metadata":{"name":"x"}}"#,
            415,
            "UnsupportedMediaType",
        )
        .await;
    }
    expect(
        &url,
        "PUT",
        "/api/v1/namespaces/default/configmaps/keep",
        Some("text/plain"),
        br#"{"metadata":{"name":"keep"}}"#,
        415,
        "UnsupportedMediaType",
    )
    .await;
    // No cluster-wide collection delete.
    expect(
        &url,
        "DELETE",
        "/api/v1/configmaps",
        None,
        b"",
        405,
        "MethodNotAllowed",
    )
    .await;
    expect(
        &url,
        "DELETE",
        "/api/v1/namespaces",
        None,
        b"",
        405,
        "MethodNotAllowed",
    )
    .await;
    assert_eq!(server.store().state("configmaps").unwrap().1.len(), 1);
    // A namespaced collection delete still works.
    let (c, b) = raw(
        &url,
        "DELETE",
        "/api/v1/namespaces/default/configmaps",
        None,
        vec![],
    )
    .await;
    assert_eq!(c, 200, "{b}");
    assert!(server.store().state("configmaps").unwrap().1.is_empty());

    // With remote access allowed, any Host is served.
    let open = TestServer::start_with(ServerConfig::for_tests().with_allow_remote(true))
        .await
        .unwrap();
    let (c, b) = raw_request(&open.url(), &get("evil.example:80")).await;
    assert_eq!(c, 200, "{b}");
}
