//! kubectl 1.32 and 1.33 send protobuf request bodies for typed creates (`create configmap`,
//! `create deployment`): both work against the embedded server. A byte-copying proxy between
//! kubectl and the server keeps the bodies: they are Kubernetes-produced protobuf, and decode to
//! what the server stored. With `KINFORMER_CAPTURE_DIR=<dir>` the bodies are also written there
//! (`kubectl-<version>-<kind>.pb`), which is how `crates/kinformer-protobuf/tests/data/kubectl-*.pb` were made.
// Helpers outside #[test] functions fail the test by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use kinformer_apiserver::TestServer;
use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::Command;

/// Forwards connections to `upstream`, keeping a copy of everything clients send.
async fn sniffing_proxy(upstream: std::net::SocketAddr) -> (String, Arc<Mutex<Vec<u8>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let sent = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&sent);
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let log = Arc::clone(&log);
            tokio::spawn(async move {
                let server = TcpStream::connect(upstream).await.unwrap();
                let (mut cr, mut cw) = client.into_split();
                let (mut sr, mut sw) = server.into_split();
                tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut sr, &mut cw).await;
                });
                let mut buf = vec![0u8; 64 * 1024];
                while let Ok(n) = cr.read(&mut buf).await {
                    if n == 0 || sw.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                    log.lock().extend_from_slice(&buf[..n]);
                }
            });
        }
    });
    (url, sent)
}

/// The body of the first request to `request_line` (e.g. `POST /api/v1/...`) in `sent`, with
/// its content type.
fn request_body(sent: &[u8], request_line: &str) -> Option<(String, Vec<u8>)> {
    let start = sent
        .windows(request_line.len())
        .position(|w| w == request_line.as_bytes())?;
    let rest = &sent[start..];
    let end = rest.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&rest[..end]).to_ascii_lowercase();
    let header = |name: &str| {
        head.lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_owned())
    };
    let len: usize = header("content-length:")?.parse().ok()?;
    let body = rest.get(end + 4..end + 4 + len)?.to_vec();
    Some((header("content-type:").unwrap_or_default(), body))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_creates_config_maps_and_deployments_in_protobuf() {
    for version in ["1.32", "1.33"] {
        let bin = format!("/usr/lib/google-cloud-sdk/bin/kubectl.{version}");
        if !std::path::Path::new(&bin).is_file() {
            eprintln!("SKIPPED: no {bin}");
            continue;
        }
        let server = TestServer::start().await.unwrap();
        let (url, sent) = sniffing_proxy(server.addr()).await;
        let cache = tempdir(&format!(
            "kinformer-kubectl-pb-{version}-{}",
            server.addr().port()
        ));
        let run = |args: &[&str]| {
            let mut c = Command::new(&bin);
            c.env("KUBECONFIG", "/dev/null")
                .args(["--server", &url, "--cache-dir"])
                .arg(&cache)
                .args(args)
                .kill_on_drop(true);
            c
        };
        let out = run(&[
            "create",
            "configmap",
            "settings",
            "-n",
            "default",
            "--from-literal=mode=fast",
            "--from-literal=greeting=grüß dich",
        ])
        .output()
        .await
        .unwrap();
        assert!(
            out.status.success(),
            "kubectl {version} create configmap: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let out = run(&[
            "create",
            "deployment",
            "web",
            "-n",
            "default",
            "--image=nginx:1.27",
            "--replicas=2",
            "--port=8080",
        ])
        .output()
        .await
        .unwrap();
        assert!(
            out.status.success(),
            "kubectl {version} create deployment: {}",
            String::from_utf8_lossy(&out.stderr)
        );

        let sent = sent.lock().clone();
        let capture = std::env::var_os("KINFORMER_CAPTURE_DIR").map(std::path::PathBuf::from);
        for (kind, line) in [
            ("configmap", "POST /api/v1/namespaces/default/configmaps"),
            (
                "deployment",
                "POST /apis/apps/v1/namespaces/default/deployments",
            ),
        ] {
            let (ct, body) =
                request_body(&sent, line).unwrap_or_else(|| panic!("kubectl {version}: no {line}"));
            assert_eq!(
                ct,
                kinformer_protobuf::CONTENT_TYPE,
                "kubectl {version} {kind}"
            );
            let decoded: serde_json::Value = kinformer_protobuf::from_slice(&body).unwrap();
            assert!(decoded["metadata"]["name"].is_string(), "{decoded}");
            if let Some(dir) = &capture {
                std::fs::write(dir.join(format!("kubectl-{version}-{kind}.pb")), &body).unwrap();
            }
        }
        let cm = server
            .store()
            .get("configmaps", "default", "settings")
            .unwrap()
            .unwrap();
        assert_eq!(cm["data"]["mode"], "fast");
        assert_eq!(cm["data"]["greeting"], "grüß dich");
        // Go's zero values (generateName "", an empty creationTimestamp, ...) did not become fields.
        assert!(cm["metadata"].get("generateName").is_none(), "{cm}");
        let d = server
            .store()
            .get("deployments.apps", "default", "web")
            .unwrap()
            .unwrap();
        assert_eq!(d["spec"]["replicas"], 2);
        assert_eq!(d["spec"]["selector"]["matchLabels"]["app"], "web");
        let c = &d["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(
            (c["name"].as_str(), c["image"].as_str()),
            (Some("nginx"), Some("nginx:1.27"))
        );
        assert_eq!(c["ports"][0]["containerPort"], 8080);
        let _ = std::fs::remove_dir_all(&cache);
    }
}

fn tempdir(name: &str) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(name);
    let _ = std::fs::remove_dir_all(&p);
    p
}
