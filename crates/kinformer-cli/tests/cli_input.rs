//! The command line refuses values that would overflow or spin, exits quietly on a closed
//! pipe and names the URL it could not reach.
// Test helpers: failing to run the binary fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn kinformer(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kinformer"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("the kinformer binary runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn out_of_range_numbers_are_usage_errors_not_panics() {
    for args in [
        &[
            "watch",
            "pods",
            "--server",
            "http://127.0.0.1:1",
            "--duration-secs",
            "inf",
        ][..],
        &[
            "watch",
            "pods",
            "--server",
            "http://127.0.0.1:1",
            "--duration-secs",
            "NaN",
        ],
        &[
            "watch",
            "pods",
            "--server",
            "http://127.0.0.1:1",
            "--duration-secs=-1",
        ],
        &[
            "watch",
            "pods",
            "--server",
            "http://127.0.0.1:1",
            "--summary-secs",
            "18446744073709551615",
        ],
        &["serve", "--port", "0", "--churn", "1e12"],
        &["serve", "--port", "0", "--churn", "inf"],
        &[
            "serve",
            "--port",
            "0",
            "--bookmark-interval",
            "18446744073709551615",
        ],
    ] {
        let out = kinformer(args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(
            err.contains("out of range") || err.contains("not in"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn an_unreachable_server_is_named_in_the_error() {
    let out = kinformer(&["watch", "pods", "--server", "http://127.0.0.1:1"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("http://127.0.0.1:1"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // Not a terminal: no colour codes.
    assert!(!err.contains('\u{1b}'), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_pipe_ends_watch_quietly() {
    let server = kinformer_apiserver::TestServer::start().await.unwrap();
    for i in 0..3 {
        server
            .store()
            .create(
                "configmaps",
                "default",
                serde_json::json!({"metadata": {"name": format!("cm-{i}")}}),
            )
            .unwrap();
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_kinformer"))
        .args(["watch", "configmaps", "--server", &server.url()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read one line, as `| head -1` does, then close the pipe.
    let stdout = child.stdout.take().unwrap();
    let line = tokio::task::spawn_blocking(move || {
        let mut first = String::new();
        BufReader::new(stdout).read_line(&mut first).unwrap();
        first
    })
    .await
    .unwrap();
    assert!(line.starts_with("ADDED"), "{line}");
    // More events: the next write meets the closed pipe.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut i = 0;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "watch kept running after its pipe closed"
        );
        server
            .store()
            .create(
                "configmaps",
                "default",
                serde_json::json!({"metadata": {"name": format!("more-{i}")}}),
            )
            .unwrap();
        i += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{status}: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn bench_runs_the_runner_beside_the_binary_or_says_how_to_build_it() {
    let out = kinformer(&["bench", "nope"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // Either the runner ran and refused the group, or it is missing and the error says how
    // to build it.
    assert!(
        err.contains("unknown bench group `nope`")
            || err.contains("cargo build --release -p kinformer-bench"),
        "{err}"
    );
}

/// `watch -o json` prints each object whole, from a protobuf body (converted when printed) as
/// from a JSON body (as it arrived), and says on stderr when it has synced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_prints_whole_objects_as_json_lines_from_either_wire() {
    let server = kinformer_apiserver::TestServer::start().await.unwrap();
    for i in 0..3 {
        let pod = kinformer_apiserver::bench_pod(i);
        let ns = pod["metadata"]["namespace"].as_str().unwrap().to_owned();
        server.store().create("pods", &ns, pod).unwrap();
    }
    for wire in ["protobuf", "json"] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_kinformer"))
            .args(["watch", "pods", "-o", "json", "--store", "compact"])
            .args(["--wire", wire, "--server", &server.url()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let lines = tokio::task::spawn_blocking(move || {
            let mut reader = BufReader::new(stdout);
            (0..3)
                .map(|_| {
                    let mut line = String::new();
                    reader.read_line(&mut line).unwrap();
                    line
                })
                .collect::<Vec<_>>()
        })
        .await
        .unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
        let mut names = Vec::new();
        for line in &lines {
            let event: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(event["type"], "ADDED", "{wire}: {line}");
            let pod = &event["object"];
            assert_eq!(
                pod["spec"]["containers"][0]["name"], "app",
                "{wire}: the whole object: {line}"
            );
            names.push(pod["metadata"]["name"].as_str().unwrap().to_owned());
        }
        names.sort();
        assert_eq!(names, ["pod-0", "pod-1", "pod-2"], "{wire}");
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        assert!(err.contains("synced: 3 objects"), "{wire}: {err}");
    }
}

/// A server that answers every request with 429 and `Retry-After: 100000` for 3 s: `watch`
/// says why it waits, retries when the reflector's cap on Retry-After (30 s) has passed, and
/// syncs instead of giving up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_outwaits_a_server_that_answers_429_with_a_long_retry_after() {
    use kinformer_apiserver::{Fault, FaultRule};
    let server = kinformer_apiserver::TestServer::start().await.unwrap();
    server
        .store()
        .create(
            "configmaps",
            "default",
            serde_json::json!({"metadata": {"name": "after-the-wait"}}),
        )
        .unwrap();
    server.faults().add_rule(FaultRule::random(
        Fault::TooManyRequests {
            retry_after_secs: 100_000,
        },
        1.0,
    ));
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_kinformer"))
        .args(["watch", "configmaps", "--server", &server.url()])
        .args(["--duration-secs", "0.5"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // The 429s begin with the informer's first request; they last 3 s from then.
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.faults().counts().get("429").copied().unwrap_or(0) == 0 {
        assert!(Instant::now() < deadline, "watch sent no request");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    server.faults().clear();
    let out = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .expect("watch still running 120 s later")
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(
            "waiting for the first sync: 429 from the server, which asks to retry after 100000 s; retrying in 30 s"
        ),
        "{err}"
    );
    assert!(err.contains("synced: 1 objects"), "{err}");
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(printed.contains("after-the-wait"), "{printed}");
}

/// After the process was stopped and resumed, `watch` prints one summary, not one per second
/// it missed.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_skips_the_summaries_it_missed_while_stopped() {
    let server = kinformer_apiserver::TestServer::start().await.unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_kinformer"))
        .args(["watch", "configmaps", "--server", &server.url()])
        .args(["--summary-secs", "1", "--duration-secs", "30"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id().to_string();
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if tx.send((Instant::now(), line)).is_err() {
                break;
            }
        }
    });
    let next_summary = |within: Duration| loop {
        let (at, line) = rx.recv_timeout(within).expect("no summary in time");
        if line.starts_with("cache:") {
            return at;
        }
    };
    next_summary(Duration::from_secs(30));
    let signal = |sig: &str| {
        let ok = Command::new("kill").args([sig, &pid]).status().unwrap();
        assert!(ok.success(), "kill {sig} failed");
    };
    signal("-STOP");
    std::thread::sleep(Duration::from_secs(4));
    signal("-CONT");
    // One summary at once; with every missed tick fired, three or four more would follow
    // within milliseconds.
    let first = next_summary(Duration::from_secs(10));
    let second = next_summary(Duration::from_secs(10));
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        second.duration_since(first) >= Duration::from_millis(500),
        "two summaries {:?} apart after a resume",
        second.duration_since(first)
    );
}
