//! The quick start (`src/bin/quickstart.rs`), run as the program it is: against the embedded API
//! server it reconciles every pod it hears of, against a dead port it fails within seconds with
//! an error naming the server; and the README shows exactly its text.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] functions

use std::process::Stdio;
use std::time::Duration;

use kinformer_apiserver::{ServerConfig, TestServer};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};
use tokio::time::timeout;

/// An upper bound for things that take milliseconds: reaching it is a failure, never a wait.
const BOUND: Duration = Duration::from_secs(60);

fn pod(name: &str) -> serde_json::Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "app", "image": "registry.example/app:1"}]},
        "status": {"phase": "Running"}
    })
}

fn quickstart(url: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_quickstart"));
    cmd.arg(url)
        .env_remove("RUST_LOG")
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    cmd
}

/// Reads the program's output until a line equal to `want` (failing at the bound or at the
/// end of the output); returns the lines read before it.
async fn read_until(lines: &mut Lines<BufReader<ChildStdout>>, want: &str) -> Vec<String> {
    let mut seen = Vec::new();
    let found = timeout(BOUND, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line == want {
                return true;
            }
            seen.push(line);
        }
        false
    })
    .await;
    assert_eq!(found, Ok(true), "no {want:?} in the output; saw {seen:?}");
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_quick_start_reconciles_every_pod_it_hears_of() {
    let server = TestServer::start_with(ServerConfig::for_tests())
        .await
        .unwrap();
    for name in ["a", "b", "c"] {
        server.store().create("pods", "default", pod(name)).unwrap();
    }

    let mut child: Child = quickstart(&server.url())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();

    // The initial list: each pod once, in any order.
    let mut initial = Vec::new();
    for _ in 0..3 {
        let line = timeout(BOUND, lines.next_line()).await.unwrap().unwrap();
        initial.push(line.expect("the program ended early"));
    }
    initial.sort();
    assert_eq!(
        initial,
        [
            "reconciled default/a: Running",
            "reconciled default/b: Running",
            "reconciled default/c: Running"
        ]
    );

    // Then what happens while it runs: a new pod, a deleted one.
    server.store().create("pods", "default", pod("d")).unwrap();
    read_until(&mut lines, "reconciled default/d: Running").await;
    server.store().delete("pods", "default", "a").unwrap();
    read_until(&mut lines, "reconciled default/a: deleted").await;

    child.kill().await.unwrap();
}

#[tokio::test]
async fn against_a_dead_port_the_quick_start_fails_within_seconds_naming_the_server() {
    // A port nothing listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");

    let out = timeout(
        BOUND,
        quickstart(&url)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output(),
    )
    .await
    .expect("the quick start hung against a dead port")
    .unwrap();

    assert!(!out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let error = stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error line in {stderr}"));
    assert!(
        error.starts_with(&format!("error: no pods from {url}/: ")),
        "{error}"
    );
    assert!(error.contains("not synced after 10s"), "{error}");
    assert!(error.contains("last error: "), "{error}");
    assert!(String::from_utf8_lossy(&out.stdout).is_empty());
}

#[test]
fn the_readme_quick_start_is_the_quickstart_program() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    let program = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src/bin/quickstart.rs"
    ))
    .unwrap();
    let marker = "<!-- quickstart: examples/src/bin/quickstart.rs -->\n```rust\n";
    let start = readme
        .find(marker)
        .map(|i| i + marker.len())
        .expect("README.md has no quick start block");
    let len = readme[start..]
        .find("\n```\n")
        .expect("the quick start block is not closed");
    let shown = &readme[start..=start + len];
    assert!(
        shown == program,
        "README.md's quick start differs from examples/src/bin/quickstart.rs; copy the file into \
         the README"
    );
}
