//! End-to-end: `kinformer demo` at small scale converges and verifies.

use std::process::Command;

// A test helper: failing to start the binary fails the test.
#[allow(clippy::expect_used)]
fn demo(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kinformer"))
        .arg("demo")
        .args(["--quiet", "--deadline-secs", "60"])
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
