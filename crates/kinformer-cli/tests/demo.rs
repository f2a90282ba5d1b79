//! End-to-end: `kinformer demo` at small scale converges and verifies.

use std::process::Command;

fn demo(args: &[&str]) -> (bool, String) {
    demo_within("60", args)
}

// A test helper: failing to start the binary fails the test.
#[allow(clippy::expect_used)]
fn demo_within(deadline_secs: &str, args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kinformer"))
        .arg("demo")
        .args(["--quiet", "--deadline-secs", deadline_secs])
        .args(args)
        .output()
        .expect("the kinformer binary runs");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn small_demo_with_chaos_converges_and_verifies() {
    let (ok, out) = demo(&[
        "--seed",
        "3",
        "--replicasets",
        "8",
        "--chaos",
        "low",
        "--chaos-secs",
        "1.5",
    ]);
    assert!(ok, "demo failed:\n{out}");
    assert!(out.contains("VERIFIED: "), "{out}");
    assert!(out.contains("initial convergence: 8 ReplicaSets"), "{out}");
    // The chaos phase did something: faults fired and the workload changed.
    assert!(out.contains("chaos: "), "{out}");
    assert!(!out.contains("(faults: none)"), "{out}");
}

#[test]
fn demo_without_chaos_converges() {
    let (ok, out) = demo(&[
        "--seed",
        "5",
        "--replicasets",
        "5",
        "--chaos",
        "off",
        "--chaos-secs",
        "0.5",
        "--workers",
        "2",
    ]);
    assert!(ok, "demo failed:\n{out}");
    assert!(out.contains("(faults: none)"), "{out}");
    assert!(out.contains("VERIFIED: "), "{out}");
}

/// Chaos-high runs with several seeds (`KINFORMER_LONG_TESTS=1`).
#[test]
fn chaos_high_converges_for_several_seeds() {
    if std::env::var("KINFORMER_LONG_TESTS").is_err() {
        return;
    }
    for seed in 1..=5u64 {
        let seed = seed.to_string();
        let (ok, out) = demo(&[
            "--seed",
            &seed,
            "--replicasets",
            "30",
            "--chaos",
            "high",
            "--chaos-secs",
            "4",
        ]);
        assert!(ok, "seed {seed} failed:\n{out}");
        assert!(out.contains("VERIFIED: "), "seed {seed}:\n{out}");
    }
}

/// The names of the namespaces a server holds.
// A test helper: the server serves namespaces.
#[allow(clippy::expect_used)]
fn namespaces(server: &kinformer_apiserver::ApiServer) -> Vec<String> {
    let (_, objects) = server
        .store()
        .state("namespaces")
        .expect("namespaces are served");
    objects
        .iter()
        .filter_map(|o| o["metadata"]["name"].as_str().map(str::to_owned))
        .collect()
}

/// An embedded server on a runtime of its own (kept alive with it).
// A test helper: the embedded server must start.
#[allow(clippy::expect_used)]
fn start_server(
    config: kinformer_apiserver::ServerConfig,
) -> (tokio::runtime::Runtime, kinformer_apiserver::TestServer) {
    let rt = tokio::runtime::Runtime::new().expect("a runtime");
    let server = rt
        .block_on(kinformer_apiserver::TestServer::start_with(config))
        .expect("the server starts");
    (rt, server)
}

fn remote_demo(extra: &[&str]) -> (bool, String, Vec<String>) {
    let (_rt, server) = start_server(kinformer_apiserver::ServerConfig::for_tests());
    let url = server.url();
    let mut args = vec![
        "--server",
        &url,
        "--namespace",
        "demo-remote",
        "--replicasets",
        "3",
        "--chaos",
        "off",
        "--chaos-secs",
        "0.2",
        "--wire",
        "json",
    ];
    args.extend_from_slice(extra);
    let (ok, out) = demo(&args);
    let left = namespaces(&server);
    (ok, out, left)
}

#[test]
fn a_demo_against_a_server_deletes_the_namespace_it_created() {
    let (ok, out, left) = remote_demo(&[]);
    assert!(ok, "demo failed:\n{out}");
    assert!(out.contains("VERIFIED: "), "{out}");
    assert!(out.contains("deleted namespace demo-remote"), "{out}");
    assert!(!left.iter().any(|n| n == "demo-remote"), "{left:?}");
}

#[test]
fn keep_keeps_the_namespace() {
    let (ok, out, left) = remote_demo(&["--keep"]);
    assert!(ok, "demo failed:\n{out}");
    assert!(out.contains("kept namespace demo-remote (--keep)"), "{out}");
    assert!(left.iter().any(|n| n == "demo-remote"), "{left:?}");
}

/// The embedded server seen as a real cluster (through a kubeconfig): a control plane
/// without kubelets. `prepare` runs on it first.
// A test helper: the server must start and its kubeconfig be written.
#[allow(clippy::expect_used)]
fn cluster_demo(
    deadline_secs: &str,
    name: &str,
    prepare: impl FnOnce(&kinformer_apiserver::ApiServer),
) -> (bool, String) {
    // A control plane serves nodes, even when it has none.
    let mut config = kinformer_apiserver::ServerConfig::for_tests();
    config.resources.push(kinformer_apiserver::ResourceDef::new(
        "", "v1", "nodes", "Node", false,
    ));
    let (_rt, server) = start_server(config);
    prepare(&server);
    let kubeconfig = std::env::temp_dir().join(format!(
        "kinformer-{name}-{}.kubeconfig",
        std::process::id()
    ));
    std::fs::write(&kubeconfig, server.kubeconfig()).expect("the kubeconfig is written");
    let path = kubeconfig.to_string_lossy().into_owned();
    let result = demo_within(
        deadline_secs,
        &[
            "--kubeconfig",
            &path,
            "--replicasets",
            "3",
            "--chaos",
            "off",
            "--chaos-secs",
            "0.2",
        ],
    );
    let _ = std::fs::remove_file(&kubeconfig);
    result
}

#[test]
fn a_demo_on_a_cluster_without_nodes_runs_a_stand_in_kubelet_and_verifies() {
    let (ok, out) = cluster_demo("60", "no-nodes", |_| {});
    assert!(ok, "demo failed:\n{out}");
    assert!(
        out.contains("the cluster has no nodes: a stand-in kubelet"),
        "{out}"
    );
    assert!(out.contains("VERIFIED: "), "{out}");
}

#[test]
fn a_demo_whose_pods_stay_unready_names_the_likely_cause() {
    // A Node object, but no kubelet behind it: nothing schedules or starts the pods.
    let (ok, out) = cluster_demo("2", "unready", |server| {
        server
            .store()
            .create(
                "nodes",
                "",
                serde_json::json!({"metadata": {"name": "node-1"}}),
            )
            .expect("a node is created");
    });
    assert!(!ok, "demo verified without kubelets:\n{out}");
    assert!(out.contains("NOT VERIFIED"), "{out}");
    assert!(!out.contains("stand-in kubelet"), "{out}");
    assert!(
        out.contains("likely cause: ") && out.contains("pods not scheduled to a node"),
        "{out}"
    );
}

/// About 10 s per mode (lease expiry and join delays on the real clock): labelled by default,
/// both with `KINFORMER_LONG_TESTS=1`.
#[test]
fn sharded_demos_survive_a_killed_and_an_added_replica_and_verify_the_invariant() {
    let modes: &[&str] = if std::env::var_os("KINFORMER_LONG_TESTS").is_some() {
        &["labelled", "filtered"]
    } else {
        &["labelled"]
    };
    for &mode in modes {
        let (ok, out) = demo(&[
            "--seed",
            "2",
            "--replicasets",
            "8",
            "--chaos",
            "low",
            "--chaos-secs",
            "2",
            "--replicas",
            "3",
            "--sharding",
            mode,
        ]);
        assert!(ok, "{mode} demo failed:\n{out}");
        assert!(out.contains("killed replica-"), "{out}");
        assert!(out.contains("added replica-3"), "{out}");
        assert!(out.contains("invariant: "), "{out}");
        assert!(!out.contains("not settled"), "{out}");
        assert!(out.contains("VERIFIED: "), "{out}");
    }
}
