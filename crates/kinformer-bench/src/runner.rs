//! The runner: runs the fixed benchmark workloads (W1–W6, E1, L0, ...) of a group and prints
//! their metrics.
//!
//! Every run of a workload happens in a fresh process: the parent re-executes its own binary as
//! `kinformer-bench run <workload>` (a hidden subcommand), which runs the workload once and
//! prints one JSON line `{"workload":"W1","metrics":{"adds_per_s":2450000.0,...}}`. The parent
//! collects `--runs N` such lines per workload and prints, per metric, the median with the
//! minimum and maximum:
//!
//! ```text
//! W1  adds_per_s  2450000  1/s   (min 2310000 max 2600000)
//! ```
//!
//! With `--json` it prints the runs' JSON lines instead. Fresh processes keep runs independent
//! (allocator state, caches, peak RSS), which memory workloads need.
//!
//! # Adding a group
//!
//! 1. Write `src/<group>.rs` with a `pub(crate) const GROUP: Group` naming the group, its
//!    workload ids in running order, and a `fn(&str) -> Result<Metrics, BenchError>` that runs
//!    one workload (by id) in the current process and returns its metrics in display order.
//!    Use exactly the metric names of BENCHMARKS.md; the unit column is derived from the name
//!    (see [`unit_of`]).
//! 2. Declare the module in `lib.rs` and add its `GROUP` to [`GROUPS`]. `kinformer-bench all`
//!    then includes it, and `kinformer-bench run` finds its workloads by id.

use std::io::Write;
use std::process::{Command, Stdio};

use serde::de::{Deserializer, MapAccess, Visitor};

pub use crate::group::{BenchError, Group, Metrics};
use crate::group::{median, rows_to_metrics};
use crate::{cache, e1, plot, workqueue};

/// Every group; `all` runs them in this order.
pub const GROUPS: &[Group] = &[
    workqueue::GROUP,
    Group {
        name: "cache",
        workloads: cache::WORKLOADS,
        run: |w| rows_to_metrics(w, cache::run(w)),
    },
    e1::GROUP,
    crate::sharding::GROUP,
    crate::soak::GROUP,
];

/// Arguments of `kinformer-bench <group>`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// The group to run: workqueue, cache, informer, sharding, soak, or all.
    group: String,
    /// Runs per workload (each in a fresh process); the median is printed.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
    /// Print one JSON line per run instead of the table.
    #[arg(long)]
    json: bool,
    /// Run only these workloads of the group (repeatable).
    #[arg(long = "only")]
    only: Vec<String>,
    /// Also write the medians as a chart against their references (client-go's figures,
    /// same-run peers) to this SVG file.
    #[arg(long, value_name = "FILE")]
    plot: Option<std::path::PathBuf>,
}

/// `kinformer-bench <group>`: runs every workload of the group `runs` times, each in a fresh
/// process (this binary re-executed as `run <workload>`), and prints the summary or the JSON
/// lines.
///
/// # Errors
/// An unknown group, a workload process that fails or prints no result line, or an I/O error.
pub fn run(args: &BenchArgs) -> Result<(), BenchError> {
    let groups: Vec<&Group> = if args.group == "all" {
        GROUPS.iter().collect()
    } else {
        let known = GROUPS.iter().map(|g| g.name).collect::<Vec<_>>().join(", ");
        vec![
            GROUPS
                .iter()
                .find(|g| g.name == args.group)
                .ok_or_else(|| BenchError::UnknownGroup(args.group.clone(), known))?,
        ]
    };
    let exe = std::env::current_exe()?;
    eprintln!("bench: allocator {}", crate::alloc::ALLOCATOR);
    let mut stdout = std::io::stdout().lock();
    let mut medians: Vec<(String, Metrics)> = Vec::new();
    for group in groups {
        for &workload in group.workloads {
            if !args.only.is_empty() && !args.only.iter().any(|w| w == workload) {
                continue;
            }
            let mut runs = Vec::new();
            for i in 0..args.runs {
                eprintln!("bench: {workload} run {}/{}", i + 1, args.runs);
                let output = Command::new(&exe)
                    .arg("run")
                    .arg(workload)
                    .stdin(Stdio::null())
                    .stderr(Stdio::inherit())
                    .output()?;
                if !output.status.success() {
                    return Err(BenchError::ChildFailed {
                        workload: workload.to_string(),
                        status: output.status,
                    });
                }
                let text = String::from_utf8_lossy(&output.stdout);
                let line = text
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or_default();
                let parsed = parse_line(line).map_err(|reason| BenchError::BadOutput {
                    workload: workload.to_string(),
                    reason,
                })?;
                if args.json {
                    writeln!(stdout, "{}", line.trim())?;
                    stdout.flush()?;
                }
                runs.push(parsed);
            }
            if !args.json {
                write!(stdout, "{}", summarize(workload, &runs))?;
                stdout.flush()?;
            }
            medians.push((workload.to_string(), median_metrics(&runs)));
        }
    }
    if let Some(path) = &args.plot {
        plot::write_svg(&plot::bars(&medians), path).map_err(BenchError::Plot)?;
        eprintln!("bench: chart written to {}", path.display());
    }
    Ok(())
}

/// `kinformer-bench plot <FILE>... --out <SVG>`: the chart `--plot` draws, from runs
/// saved with `--json` (one JSON line per run; several files and groups may be combined). The
/// median of each workload's runs is drawn.
///
/// # Errors
/// A file that cannot be read, a line that is not a run, or a chart that cannot be drawn.
pub fn plot_saved(files: &[std::path::PathBuf], out: &std::path::Path) -> Result<(), BenchError> {
    let mut runs: Vec<(String, Vec<(String, Metrics)>)> = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file)?;
        for line in text.lines().filter(|l| l.trim_start().starts_with('{')) {
            let run = parse_line(line).map_err(|reason| BenchError::BadOutput {
                workload: file.display().to_string(),
                reason,
            })?;
            match runs.iter_mut().find(|(w, _)| *w == run.0) {
                Some((_, list)) => list.push(run),
                None => runs.push((run.0.clone(), vec![run])),
            }
        }
    }
    let medians: Vec<(String, Metrics)> = runs
        .iter()
        .map(|(w, list)| (w.clone(), median_metrics(list)))
        .collect();
    plot::write_svg(&plot::bars(&medians), out).map_err(BenchError::Plot)
}

/// `kinformer-bench run <workload>`: runs one workload here and prints its JSON line.
///
/// # Errors
/// An unknown workload, the workload's own failure, or an I/O error.
pub fn run_one(workload: &str) -> Result<(), BenchError> {
    let group = GROUPS
        .iter()
        .find(|g| g.workloads.contains(&workload))
        .ok_or_else(|| BenchError::UnknownWorkload(workload.to_string()))?;
    let metrics = (group.run)(workload)?;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{}", json_line(workload, &metrics))?;
    stdout.flush()?;
    Ok(())
}

/// Prints the error of a runner command and exits with status 1.
pub fn exit_on_error(result: Result<(), BenchError>) {
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

/// `{"workload":"W1","metrics":{"adds_per_s":2450000.0,...}}`, metrics in the given order.
fn json_line(workload: &str, metrics: &Metrics) -> String {
    let body = metrics
        .iter()
        .map(|(name, value)| {
            let value = serde_json::Number::from_f64(*value)
                .map_or_else(|| "null".to_string(), |n| format!("{n}"));
            // Keep floats recognisable as floats, as the format shows (`2450000.0`).
            let value = if value.contains(['.', 'e', 'E']) || value == "null" {
                value
            } else {
                format!("{value}.0")
            };
            format!("{}:{value}", serde_json::Value::String(name.clone()))
        })
        .collect::<Vec<_>>()
        .join(",");
    format!(
        "{{\"workload\":{},\"metrics\":{{{body}}}}}",
        serde_json::Value::String(workload.to_string())
    )
}

/// One run as printed by `kinformer-bench run`.
#[derive(Debug, serde::Deserialize)]
struct RunLine {
    workload: String,
    #[serde(deserialize_with = "ordered_metrics")]
    metrics: Metrics,
}

/// Reads a JSON object of numbers keeping its key order (`null` becomes NaN).
fn ordered_metrics<'de, D: Deserializer<'de>>(d: D) -> Result<Metrics, D::Error> {
    struct Ordered;
    impl<'de> Visitor<'de> for Ordered {
        type Value = Metrics;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object of metric values")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Metrics, A::Error> {
            let mut out = Vec::new();
            while let Some((k, v)) = map.next_entry::<String, Option<f64>>()? {
                out.push((k, v.unwrap_or(f64::NAN)));
            }
            Ok(out)
        }
    }
    d.deserialize_map(Ordered)
}

fn parse_line(line: &str) -> Result<(String, Metrics), String> {
    let run: RunLine = serde_json::from_str(line.trim()).map_err(|e| format!("{e}: {line:?}"))?;
    Ok((run.workload, run.metrics))
}

/// The unit printed for a metric, derived from its name.
pub fn unit_of(metric: &str) -> &'static str {
    if metric.contains("ns_per") {
        "ns"
    } else if metric.ends_with("_ms") || metric.contains("_ms_") {
        "ms"
    } else if metric.starts_with("mb_per_s") {
        "MB/s"
    } else if metric.ends_with("_per_s") {
        "1/s"
    } else if metric.contains("bytes") {
        "B"
    } else if metric.ends_with("_mib") || metric.contains("_mib_") {
        "MiB"
    } else if metric.ends_with("_pct") {
        "%"
    } else {
        "count"
    }
}

fn fmt_value(v: f64) -> String {
    let a = v.abs();
    if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// The values of metric `name` over `runs` (runs without it left out).
fn metric_values(runs: &[(String, Metrics)], name: &str) -> Vec<f64> {
    runs.iter()
        .filter_map(|(_, m)| m.iter().find(|(n, _)| n == name).map(|(_, v)| *v))
        .collect()
}

/// The median of each metric over `runs`, in the first run's order.
fn median_metrics(runs: &[(String, Metrics)]) -> Metrics {
    let Some((_, first)) = runs.first() else {
        return Metrics::new();
    };
    first
        .iter()
        .map(|(name, _)| (name.clone(), median(&mut metric_values(runs, name))))
        .collect()
}

/// The table rows of one workload: one per metric, in the first run's order.
fn summarize(workload: &str, runs: &[(String, Metrics)]) -> String {
    let mut out = String::new();
    let Some((_, first)) = runs.first() else {
        return out;
    };
    for (name, _) in first {
        let mut values = metric_values(runs, name);
        let med = median(&mut values);
        let (min, max) = (values[0], values[values.len() - 1]);
        out.push_str(&format!(
            "{workload:<4} {name:<24} {:>12}  {:<6} (min {} max {})\n",
            fmt_value(med),
            unit_of(name),
            fmt_value(min),
            fmt_value(max),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_line_round_trips_in_order() {
        let metrics = vec![
            ("wall_ms".to_string(), 12.5),
            ("adds_per_s".to_string(), 2_450_000.0),
            ("gets".to_string(), 10_000.0),
        ];
        let line = json_line("W1", &metrics);
        assert_eq!(
            line,
            r#"{"workload":"W1","metrics":{"wall_ms":12.5,"adds_per_s":2450000.0,"gets":10000.0}}"#
        );
        assert_eq!(parse_line(&line).unwrap(), ("W1".to_string(), metrics));
    }

    #[test]
    fn summary_prints_median_min_max_with_units() {
        let run = |v: f64| ("W1".to_string(), vec![("adds_per_s".to_string(), v)]);
        let text = summarize(
            "W1",
            &[run(2_600_000.0), run(2_310_000.0), run(2_450_000.0)],
        );
        let fields: Vec<&str> = text.split_whitespace().collect();
        assert_eq!(
            fields,
            [
                "W1",
                "adds_per_s",
                "2450000",
                "1/s",
                "(min",
                "2310000",
                "max",
                "2600000)"
            ]
        );
    }

    #[test]
    fn units_follow_metric_names() {
        assert_eq!(unit_of("ns_per_item"), "ns");
        assert_eq!(unit_of("add_ns_per_op"), "ns");
        assert_eq!(unit_of("p99_lateness_ms"), "ms");
        assert_eq!(unit_of("adds_per_s"), "1/s");
        assert_eq!(unit_of("mb_per_s"), "MB/s");
        assert_eq!(unit_of("heap_bytes_per_obj_total"), "B");
        assert_eq!(unit_of("peak_rss_mib"), "MiB");
        assert_eq!(unit_of("peak_rss_mib_r4"), "MiB");
        assert_eq!(unit_of("synced_ms_r4"), "ms");
        assert_eq!(unit_of("rss_growth_pct"), "%");
        assert_eq!(unit_of("gets"), "count");
    }

    #[test]
    fn median_of_even_and_odd_counts() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
    }

    #[test]
    fn every_workload_id_belongs_to_one_group() {
        let mut ids: Vec<&str> = GROUPS
            .iter()
            .flat_map(|g| g.workloads.iter().copied())
            .collect();
        let n = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), n);
    }
}
