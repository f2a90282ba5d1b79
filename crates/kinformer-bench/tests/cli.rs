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
