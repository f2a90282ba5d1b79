//! The `kinformer-bench` binary end to end: a group run re-executes the binary per run.

use std::process::Command;

fn bench() -> Command {
    Command::new(env!("CARGO_BIN_EXE_kinformer-bench"))
}

#[test]
fn a_json_run_prints_one_line_per_run_with_the_workloads_metrics() -> std::io::Result<()> {
    let out = bench()
        .args(["workqueue", "--only", "W2", "--runs", "2", "--json"])
        .output()?;
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    for line in lines {
        assert!(
            line.starts_with(r#"{"workload":"W2","metrics":{"ns_per_item":"#),
            "{line}"
        );
    }
    Ok(())
}

#[test]
fn the_summary_names_the_metric_and_its_unit() -> std::io::Result<()> {
    let out = bench()
        .args(["workqueue", "--only", "W2", "--runs", "1"])
        .output()?;
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let fields: Vec<&str> = stdout.split_whitespace().collect();
    assert_eq!(fields[..2], ["W2", "ns_per_item"]);
    assert_eq!(fields[3], "ns");
    Ok(())
}

#[test]
fn unknown_groups_and_workloads_are_refused() -> std::io::Result<()> {
    let out = bench().arg("nope").output()?;
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown bench group `nope`"));
    let out = bench().args(["run", "W99"]).output()?;
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown workload `W99`"));
    Ok(())
}

#[test]
fn plot_draws_a_run_and_saved_runs_against_client_go() -> std::io::Result<()> {
    let dir = std::env::temp_dir().join(format!("kinformer-bench-plot-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let live = dir.join("live.svg");
    let out = bench()
        .args(["workqueue", "--only", "W2", "--runs", "1", "--plot"])
        .arg(&live)
        .output()?;
    assert!(out.status.success(), "{out:?}");
    let svg = std::fs::read_to_string(&live)?;
    assert!(svg.contains("W2 ns_per_item vs client-go"), "{svg}");

    // Saved runs of two groups in two files, drawn together.
    let saved = [
        (
            "a.jsonl",
            "{\"workload\":\"W2\",\"metrics\":{\"ns_per_item\":405.0}}\n",
        ),
        (
            "b.jsonl",
            "{\"workload\":\"W4\",\"metrics\":{\"update_ns_per_op\":2906.0}}\n\
             {\"workload\":\"W4\",\"metrics\":{\"update_ns_per_op\":1453.0}}\n\
             {\"workload\":\"W4\",\"metrics\":{\"update_ns_per_op\":2179.5}}\n",
        ),
    ];
    for (name, text) in saved {
        std::fs::write(dir.join(name), text)?;
    }
    let chart = dir.join("saved.svg");
    let out = bench()
        .arg("plot")
        .arg(dir.join("a.jsonl"))
        .arg(dir.join("b.jsonl"))
        .arg("--out")
        .arg(&chart)
        .output()?;
    assert!(out.status.success(), "{out:?}");
    let svg = std::fs::read_to_string(&chart)?;
    // W2: 405 / 810; W4: the median 2,179.5 / 1,453.
    assert!(svg.contains("0.50×"), "{svg}");
    assert!(svg.contains("1.50×"), "{svg}");

    std::fs::write(dir.join("bad.jsonl"), "{\"workload\": 3}\n")?;
    let out = bench()
        .arg("plot")
        .arg(dir.join("bad.jsonl"))
        .arg("--out")
        .arg(&chart)
        .output()?;
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
