//! kubectl, unmodified, against the embedded server: get, get -w, create, delete.
// Helpers outside #[test] functions fail the test by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Stdio;
use std::time::Duration;

use kinformer_apiserver::TestServer;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

/// The whitespace-separated cells of line `n` of kubectl's output (none past the end).
fn cells(out: &str, n: usize) -> Vec<&str> {
    out.lines()
        .nth(n)
        .unwrap_or_default()
        .split_whitespace()
        .collect()
}

fn kubectl_path() -> Option<String> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("kubectl"))
        .find(|p| p.is_file())
        .map(|p| p.to_string_lossy().into_owned())
}

fn kubectl(bin: &str, url: &str, cache: &std::path::Path) -> Command {
    let mut c = Command::new(bin);
    c.env("KUBECONFIG", "/dev/null")
        .arg("--server")
        .arg(url)
        .arg("--cache-dir")
        .arg(cache);
    c.kill_on_drop(true);
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_gets_watches_creates_and_deletes() {
    let Some(bin) = kubectl_path() else {
        eprintln!("SKIPPED: no kubectl on PATH");
        return;
    };
    let server = TestServer::start().await.unwrap();
    let url = server.url();
    let cache = std::env::temp_dir().join(format!("kinformer-kubectl-{}", server.addr().port()));
    server
        .store()
        .create("pods", "ns-1", kinformer_apiserver::bench_pod(1))
        .unwrap();
    server
        .store()
        .create(
            "configmaps",
            "default",
            json!({"metadata": {"name": "pre"}}),
        )
        .unwrap();

    let out = kubectl(&bin, &url, &cache)
        .args(["get", "pods", "-A", "-o", "json"])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "get failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list["items"][0]["metadata"]["name"], "pod-1");

    let out = kubectl(&bin, &url, &cache)
        .args(["get", "pods", "-A"])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "get table failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("pod-1"));

    // get -w prints one JSON event per change.
    let mut watch = kubectl(&bin, &url, &cache)
        .args([
            "get",
            "configmaps",
            "-n",
            "default",
            "-w",
            "--output-watch-events",
            "-o",
            "json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(watch.stdout.take().unwrap()).lines();
    // The watch is established once the pre-existing object has been printed.
    let mut seen = String::new();
    let ready = tokio::time::timeout(Duration::from_secs(20), async {
        while let Ok(Some(l)) = lines.next_line().await {
            seen.push_str(&l);
            if seen.contains("\"pre\"") {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(ready, Ok(true), "watch output: {seen}");
    // Let kubectl move from its list to its watch (it watches from the list's revision, so
    // nothing is missed either way).
    seen.clear();

    // create --validate=false from a file.
    let file = cache.with_extension("cm.json");
    std::fs::write(&file, json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "made-by-kubectl"}, "data": {"a": "1"}}).to_string()).unwrap();
    let out = kubectl(&bin, &url, &cache)
        .args(["create", "--validate=false", "-n", "default", "-f"])
        .arg(&file)
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "create failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        server
            .store()
            .get("configmaps", "default", "made-by-kubectl")
            .unwrap()
            .is_some()
    );

    server
        .store()
        .patch(
            "configmaps",
            "default",
            "made-by-kubectl",
            &json!({"data": {"a": "2"}}),
        )
        .unwrap();
    let out = kubectl(&bin, &url, &cache)
        .args(["delete", "configmap", "made-by-kubectl", "-n", "default"])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "delete failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        server
            .store()
            .get("configmaps", "default", "made-by-kubectl")
            .unwrap()
            .is_none()
    );

    // -o json pretty-prints each event over several lines: collect until all three types appear.
    let types = ["\"ADDED\"", "\"MODIFIED\"", "\"DELETED\""];
    let collected = tokio::time::timeout(Duration::from_secs(20), async {
        while let Ok(Some(l)) = lines.next_line().await {
            seen.push_str(&l);
            if types.iter().all(|t| seen.contains(t)) && seen.contains("made-by-kubectl") {
                return true;
            }
        }
        false
    })
    .await;
    let _ = watch.kill().await;
    assert_eq!(collected, Ok(true), "watch output: {seen}");
    let _ = std::fs::remove_file(&file);
    let _ = std::fs::remove_dir_all(&cache);
}

/// kubectl on PATH and every bundled 1.27–1.33: server-side tables, implied
/// namespaces, typed creates and `apply` with client-side validation on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_prints_tables_lists_namespaces_and_applies() {
    let Some(default_bin) = kubectl_path() else {
        eprintln!("SKIPPED: no kubectl on PATH");
        return;
    };
    // The PATH kubectl may be a dispatcher that picks the bundled version closest to the
    // server's (1.33); name the bundled ones too.
    let mut bins = vec![default_bin];
    for minor in 27..=33 {
        let b = format!("/usr/lib/google-cloud-sdk/bin/kubectl.1.{minor}");
        if std::path::Path::new(&b).is_file() {
            bins.push(b);
        }
    }
    for bin in bins {
        let server = TestServer::start().await.unwrap();
        let url = server.url();
        let cache =
            std::env::temp_dir().join(format!("kinformer-kubectl-t-{}", server.addr().port()));
        let _ = std::fs::remove_dir_all(&cache);
        server
            .store()
            .create(
                "pods",
                "ns-1",
                json!({
                    "metadata": {"name": "pod-1"},
                    "spec": {"containers": [{"name": "app", "image": "nginx"}]},
                    "status": {"phase": "Running", "containerStatuses": [{"name": "app", "ready": true, "restartCount": 2}]},
                }),
            )
            .unwrap();
        server
            .store()
            .create("namespaces", "", json!({"metadata": {"name": "made"}}))
            .unwrap();
        let run = |args: &[&str]| {
            let mut c = kubectl(&bin, &url, &cache);
            c.args(args);
            c
        };
        let ok = |out: std::process::Output, what: &str| -> String {
            assert!(
                out.status.success(),
                "{bin} {what}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stdout).into_owned()
        };

        let out = ok(
            run(&["create", "configmap", "x", "--from-literal=a=1"])
                .output()
                .await
                .unwrap(),
            "create configmap",
        );
        assert!(out.contains("configmap/x created"), "{out}");
        let out = ok(
            run(&["create", "deployment", "d", "--image=nginx"])
                .output()
                .await
                .unwrap(),
            "create deployment",
        );
        assert!(out.contains("deployment.apps/d created"), "{out}");

        // Pods: Kubernetes' columns, NAMESPACE first with -A.
        let out = ok(
            run(&["get", "pods", "-A"]).output().await.unwrap(),
            "get pods -A",
        );
        assert_eq!(
            cells(&out, 0),
            ["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE"],
            "{out}"
        );
        assert_eq!(
            &cells(&out, 1)[..5],
            ["ns-1", "pod-1", "1/1", "Running", "2"],
            "{out}"
        );
        // -o wide adds the priority-1 columns.
        let out = ok(
            run(&["get", "pods", "-A", "-o", "wide"])
                .output()
                .await
                .unwrap(),
            "get pods -A -o wide",
        );
        assert_eq!(
            cells(&out, 0),
            [
                "NAMESPACE",
                "NAME",
                "READY",
                "STATUS",
                "RESTARTS",
                "AGE",
                "IP",
                "NODE",
                "NOMINATED",
                "NODE",
                "READINESS",
                "GATES"
            ],
            "{out}"
        );

        let out = ok(
            run(&["get", "deployments"]).output().await.unwrap(),
            "get deployments",
        );
        assert_eq!(
            cells(&out, 0),
            ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"],
            "{out}"
        );
        assert!(out.contains("d ") && out.contains("0/1"), "{out}");
        let out = ok(
            run(&["get", "configmaps"]).output().await.unwrap(),
            "get configmaps",
        );
        assert!(out.starts_with("NAME") && out.contains("DATA"), "{out}");

        // get all: the resources in the `all` category, each as a table.
        let out = ok(
            run(&["get", "all", "-n", "default"])
                .output()
                .await
                .unwrap(),
            "get all",
        );
        assert!(
            out.contains("deployment.apps/d") && out.contains("UP-TO-DATE"),
            "{out}"
        );

        // get -w: table rows for the watch events too, under the one header.
        let mut watch = run(&["get", "configmaps", "-n", "default", "-w"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(watch.stdout.take().unwrap()).lines();
        let mut seen = Vec::new();
        let watched = tokio::time::timeout(Duration::from_secs(20), async {
            while let Ok(Some(l)) = lines.next_line().await {
                if l.starts_with("x ") && seen.iter().all(|s: &String| !s.starts_with("w1 ")) {
                    // The list was printed: the watch follows.
                    server
                        .store()
                        .create(
                            "configmaps",
                            "default",
                            json!({"metadata": {"name": "w1"}, "data": {"a": "1", "b": "2"}}),
                        )
                        .unwrap();
                }
                seen.push(l);
                if seen.iter().any(|s| s.starts_with("w1 ")) {
                    return true;
                }
            }
            false
        })
        .await;
        let _ = watch.kill().await;
        assert_eq!(watched, Ok(true), "{bin} get -w: {seen:?}");
        let headers = seen.iter().filter(|l| l.starts_with("NAME")).count();
        assert_eq!(headers, 1, "{bin} get -w: {seen:?}");
        let w1: Vec<&str> = seen
            .iter()
            .find(|l| l.starts_with("w1 "))
            .map(|l| l.split_whitespace().collect())
            .unwrap_or_default();
        assert_eq!(&w1[..2], ["w1", "2"], "{bin} get -w: {seen:?}");

        // Namespaces: the created one and those objects live in.
        let out = ok(
            run(&["get", "namespaces"]).output().await.unwrap(),
            "get namespaces",
        );
        let names: Vec<&str> = out
            .lines()
            .skip(1)
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        assert_eq!(names, ["default", "made", "ns-1"], "{out}");
        assert!(out.contains("Active"), "{out}");
        let out = ok(
            run(&["get", "namespace", "ns-1", "-o", "jsonpath={.status.phase}"])
                .output()
                .await
                .unwrap(),
            "get namespace ns-1",
        );
        assert_eq!(out, "Active");
        // Labelling an implied namespace creates it; deleting a namespace deletes its objects.
        ok(
            run(&["label", "namespace", "ns-1", "team=a"])
                .output()
                .await
                .unwrap(),
            "label namespace",
        );
        let stored = server
            .store()
            .get("namespaces", "", "ns-1")
            .unwrap()
            .unwrap();
        assert_eq!(stored["metadata"]["labels"]["team"], "a");
        server
            .store()
            .create("configmaps", "gone", json!({"metadata": {"name": "c"}}))
            .unwrap();
        for ns in ["ns-1", "gone"] {
            let out = ok(
                run(&["delete", "namespace", ns]).output().await.unwrap(),
                "delete namespace",
            );
            assert!(
                out.contains(&format!("namespace \"{ns}\" deleted")),
                "{out}"
            );
        }
        assert!(
            server
                .store()
                .get("pods", "ns-1", "pod-1")
                .unwrap()
                .is_none()
        );
        assert!(
            server
                .store()
                .get("configmaps", "gone", "c")
                .unwrap()
                .is_none()
        );
        let out = ok(
            run(&["get", "namespaces", "-o", "name"])
                .output()
                .await
                .unwrap(),
            "get namespaces",
        );
        assert_eq!(out, "namespace/default\nnamespace/made\n");

        // apply -f with validation on: create, then patch.
        let file = cache.with_extension("apply.yaml");
        let manifest = |v: &str| {
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\n  namespace: default\ndata:\n  mode: \"{v}\"\n"
            )
        };
        std::fs::write(&file, manifest("one")).unwrap();
        let out = ok(
            run(&["apply", "-f"]).arg(&file).output().await.unwrap(),
            "apply (create)",
        );
        assert!(out.contains("configmap/applied created"), "{out}");
        std::fs::write(&file, manifest("two")).unwrap();
        let out = run(&["apply", "-f"]).arg(&file).output().await.unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let out = ok(out, "apply (patch)");
        assert!(out.contains("configmap/applied configured"), "{out}");
        assert!(!stderr.contains("warning"), "{stderr}");
        let cm = server
            .store()
            .get("configmaps", "default", "applied")
            .unwrap()
            .unwrap();
        assert_eq!(cm["data"]["mode"], "two");
        // A Deployment: kubectl sends a strategic merge patch computed from its built-in types.
        let deploy = |image: &str| {
            format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: default\nspec:\n  replicas: 2\n  selector:\n    matchLabels: {{app: web}}\n  template:\n    metadata:\n      labels: {{app: web}}\n    spec:\n      containers:\n      - name: web\n        image: {image}\n"
            )
        };
        for (image, verb) in [("nginx:1.26", "created"), ("nginx:1.27", "configured")] {
            std::fs::write(&file, deploy(image)).unwrap();
            let out = run(&["apply", "-f"]).arg(&file).output().await.unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            let out = ok(out, "apply deployment");
            assert!(
                out.contains(&format!("deployment.apps/web {verb}")),
                "{out}"
            );
            assert!(!stderr.contains("warning"), "{stderr}");
        }
        let d = server
            .store()
            .get("deployments.apps", "default", "web")
            .unwrap()
            .unwrap();
        let c = &d["spec"]["template"]["spec"]["containers"];
        assert_eq!(c.as_array().map(Vec::len), Some(1), "{d}");
        assert_eq!(c[0]["image"], "nginx:1.27");
        assert!(!d.to_string().contains("$setElementOrder"), "{d}");
        let _ = std::fs::remove_file(&file);
        let _ = std::fs::remove_dir_all(&cache);
    }
}
