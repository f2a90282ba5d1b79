//! `--plot FILE`: the run's medians as a chart against their references (an SVG).
//!
//! Every bar is one comparison: a kinformer metric divided by its reference — client-go's figure
//! of BENCHMARKS.md (fixed, taken on the same machine type) or a peer measured in the same run
//! (kube-runtime's E1 rows, the L0 decode floor). Bars are oriented so that **left of 1 is
//! better** whatever the metric (a throughput's ratio is taken the other way round), drawn on a
//! log scale, green where the target (the tick on the bar; 1 without one) holds and red
//! where it does not. Comparisons whose workloads did not run are left out.

use std::path::Path;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::group::Metrics;

/// What a metric is compared with.
#[derive(Debug, Clone, Copy)]
enum Against {
    /// A fixed figure measured elsewhere (client-go's, BENCHMARKS.md).
    Fixed(&'static str, f64),
    /// A metric of another workload in the same run.
    SameRun(&'static str, &'static str),
}

/// One comparison the chart can draw.
#[derive(Debug, Clone, Copy)]
struct Comparison {
    workload: &'static str,
    metric: &'static str,
    against: Against,
    /// Higher values are better (throughputs): the ratio is reference / value.
    higher_is_better: bool,
    /// The ratio the issues aim for (≤), if any.
    target: Option<f64>,
}

const fn fixed(
    workload: &'static str,
    metric: &'static str,
    client_go: f64,
    target: Option<f64>,
) -> Comparison {
    Comparison {
        workload,
        metric,
        against: Against::Fixed("client-go", client_go),
        higher_is_better: false,
        target,
    }
}

const fn same_run(
    workload: &'static str,
    metric: &'static str,
    peer: &'static str,
    peer_metric: &'static str,
    target: Option<f64>,
) -> Comparison {
    Comparison {
        workload,
        metric,
        against: Against::SameRun(peer, peer_metric),
        higher_is_better: false,
        target,
    }
}

/// The comparisons, in drawing order (top to bottom). Client-go's figures are BENCHMARKS.md's
/// reference figures (v0.26.15, re-taken 2026-12-01); targets are the open issues'.
const COMPARISONS: &[Comparison] = &[
    Comparison {
        workload: "W1",
        metric: "adds_per_s",
        against: Against::Fixed("client-go", 4.03e6),
        higher_is_better: true,
        target: Some(1.0 / 3.0),
    },
    fixed("W2", "ns_per_item", 810.0, None),
    fixed("W3", "p99_lateness_ms", 3.4, Some(0.25)),
    fixed("W4", "add_ns_per_op", 1054.0, Some(0.5)),
    fixed("W4", "byindex_ns_per_item", 65.0, None),
    fixed("W4", "update_ns_per_op", 1453.0, Some(0.7)),
    fixed("W4", "heap_bytes_per_obj_total", 2129.0, None),
    fixed(
        "W4-compact",
        "heap_bytes_per_obj_total_compact",
        2129.0,
        None,
    ),
    fixed("W5", "p1_replace_plus_pop_all_ms", 294.0, None),
    fixed("W5", "p2_wall_ms", 1086.0, None),
    fixed("W6", "run_to_hassynced_ms", 942.0, None),
    fixed("W6", "modify_to_all_updates_ms", 329.0, Some(0.7)),
    same_run("E1", "synced_ms", "E1-kube-runtime", "synced_ms", None),
    same_run("E1", "synced_ms", "L0", "decode_ms", Some(1.0)),
    same_run(
        "E1",
        "p99_delivery_ms",
        "E1-kube-runtime",
        "p99_delivery_ms",
        Some(1.0),
    ),
    same_run(
        "E1",
        "peak_rss_mib",
        "E1-kube-runtime",
        "peak_rss_mib",
        None,
    ),
    same_run(
        "E1C",
        "synced_ms",
        "E1-kube-runtime",
        "synced_ms",
        Some(0.3),
    ),
    same_run(
        "E1C",
        "p99_delivery_ms",
        "E1-kube-runtime",
        "p99_delivery_ms",
        Some(1.0),
    ),
    same_run(
        "E1C",
        "peak_rss_mib",
        "E1-kube-runtime",
        "peak_rss_mib",
        Some(0.1),
    ),
    same_run("E1P", "synced_ms", "E1", "synced_ms", Some(0.7)),
    same_run("E1PC", "synced_ms", "E1C", "synced_ms", Some(0.7)),
    same_run("L0P", "decode_ms", "L0", "decode_ms", Some(0.5)),
    same_run(
        "E1R",
        "synced_ms",
        "E1R-kube-runtime",
        "synced_ms",
        Some(0.5),
    ),
    same_run(
        "E1R",
        "peak_rss_mib",
        "E1R-kube-runtime",
        "peak_rss_mib",
        Some(0.05),
    ),
    same_run("S1", "peak_rss_mib_r4", "S1", "peak_rss_mib_r1", Some(0.35)),
];

/// One drawn bar.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Bar {
    /// `W4 update_ns_per_op vs client-go`.
    pub(crate) label: String,
    /// Value relative to the reference; below 1 is better.
    pub(crate) ratio: f64,
    /// The target ratio, if the issues set one.
    pub(crate) target: Option<f64>,
}

impl Bar {
    /// Whether the bar meets its target (or beats its reference, without one).
    pub(crate) fn meets_target(&self) -> bool {
        self.ratio <= self.target.unwrap_or(1.0)
    }
}

/// The bars that the medians of a run allow, in [`COMPARISONS`] order.
pub(crate) fn bars(medians: &[(String, Metrics)]) -> Vec<Bar> {
    let value = |workload: &str, metric: &str| {
        medians
            .iter()
            .find(|(w, _)| w == workload)
            .and_then(|(_, m)| m.iter().find(|(n, _)| n == metric))
            .map(|(_, v)| *v)
            .filter(|v| v.is_finite() && *v > 0.0)
    };
    COMPARISONS
        .iter()
        .filter_map(|c| {
            let mine = value(c.workload, c.metric)?;
            let (name, reference) = match c.against {
                Against::Fixed(name, v) => (name.to_string(), v),
                Against::SameRun(w, m) if m == c.metric => (w.to_string(), value(w, m)?),
                Against::SameRun(w, m) => (format!("{w} {m}"), value(w, m)?),
            };
            let ratio = if c.higher_is_better {
                reference / mine
            } else {
                mine / reference
            };
            Some(Bar {
                label: format!("{} {} vs {name}", c.workload, c.metric),
                ratio,
                target: c.target,
            })
        })
        .collect()
}

/// Writes the chart of `bars` as an SVG to `path`.
///
/// # Errors
/// No bar to draw, or the file cannot be written.
pub(crate) fn write_svg(bars: &[Bar], path: &Path) -> Result<(), String> {
    if bars.is_empty() {
        return Err("nothing to plot: no workload with a reference ran".into());
    }
    let rows = bars.len();
    let height = 90 + 26 * u32::try_from(rows).map_err(|e| e.to_string())?;
    let root = SVGBackend::new(path, (1000, height)).into_drawing_area();
    let draw = |e: &dyn std::fmt::Display| format!("drawing {}: {e}", path.display());
    root.fill(&WHITE).map_err(|e| draw(&e))?;
    let (lo, hi) = bars.iter().fold((0.5_f64, 2.0_f64), |(lo, hi), b| {
        let t = b.target.unwrap_or(1.0);
        (lo.min(b.ratio).min(t), hi.max(b.ratio).max(t))
    });
    let (lo, hi) = (lo / 1.6, hi * 1.6);
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "kinformer / reference (log scale; left of 1 is better, tick = target)",
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(30)
        .y_label_area_size(400)
        .build_cartesian_2d((lo..hi).log_scale(), 0.0..rows as f64)
        .map_err(|e| draw(&e))?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .label_style(("sans-serif", 13))
        .x_label_formatter(&|x| format!("{x}×"))
        .draw()
        .map_err(|e| draw(&e))?;
    let green = RGBColor(46, 139, 87);
    let red = RGBColor(200, 60, 50);
    // Row `i` spans [top - i - 1, top - i]: the first bar goes on top.
    let top = |i: usize| (rows - i) as f64;
    chart
        .draw_series(bars.iter().enumerate().map(|(i, b)| {
            let colour = if b.meets_target() { green } else { red };
            Rectangle::new(
                [(lo, top(i) - 0.85), (b.ratio, top(i) - 0.15)],
                colour.mix(0.8).filled(),
            )
        }))
        .map_err(|e| draw(&e))?;
    chart
        .draw_series(bars.iter().enumerate().filter_map(|(i, b)| {
            let t = b.target?;
            Some(PathElement::new(
                vec![(t, top(i) - 1.0), (t, top(i))],
                BLACK.stroke_width(2),
            ))
        }))
        .map_err(|e| draw(&e))?;
    chart
        .draw_series(bars.iter().enumerate().map(|(i, b)| {
            Text::new(
                format!("{:.2}×", b.ratio),
                (b.ratio * 1.05, top(i) - 0.3),
                ("sans-serif", 13),
            )
        }))
        .map_err(|e| draw(&e))?;
    chart
        .draw_series(std::iter::once(PathElement::new(
            vec![(1.0, 0.0), (1.0, rows as f64)],
            BLACK.mix(0.5).stroke_width(1),
        )))
        .map_err(|e| draw(&e))?;
    // The labels, right-aligned left of the plotting area.
    let label_style =
        TextStyle::from(("sans-serif", 13).into_font()).pos(Pos::new(HPos::Right, VPos::Center));
    for (i, b) in bars.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(lo, top(i) - 0.5));
        root.draw(&Text::new(b.label.clone(), (x - 8, y), &label_style))
            .map_err(|e| draw(&e))?;
    }
    root.present().map_err(|e| draw(&e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(workload: &str, metrics: &[(&str, f64)]) -> (String, Metrics) {
        (
            workload.to_string(),
            metrics
                .iter()
                .map(|(n, v)| ((*n).to_string(), *v))
                .collect(),
        )
    }

    #[test]
    fn bars_compare_with_client_go_and_same_run_peers() {
        let medians = [
            run("W1", &[("adds_per_s", 12.09e6)]),
            run("W4", &[("update_ns_per_op", 2906.0)]),
            run("E1C", &[("synced_ms", 250.0), ("peak_rss_mib", 50.0)]),
            run("E1-kube-runtime", &[("synced_ms", 1000.0)]),
        ];
        let bars = bars(&medians);
        let by = |label: &str| {
            bars.iter()
                .find(|b| b.label == label)
                .unwrap_or_else(|| panic!("no bar {label}: {bars:?}"))
        };
        // A throughput: client-go / kinformer, so 3× the throughput is 1/3.
        let w1 = by("W1 adds_per_s vs client-go");
        assert!((w1.ratio - 4.03 / 12.09).abs() < 1e-9);
        assert!(w1.meets_target());
        let w4 = by("W4 update_ns_per_op vs client-go");
        assert!((w4.ratio - 2.0).abs() < 1e-9);
        assert!(!w4.meets_target());
        let e1c = by("E1C synced_ms vs E1-kube-runtime");
        assert!((e1c.ratio - 0.25).abs() < 1e-9);
        assert_eq!(e1c.target, Some(0.3));
        // No kube-runtime RSS in this run: no RSS bar.
        assert!(bars.iter().all(|b| !b.label.contains("peak_rss")));
        assert_eq!(bars.len(), 3);
    }

    #[test]
    fn a_chart_is_written_and_nothing_to_plot_is_an_error() {
        let dir = std::env::temp_dir().join(format!("kinformer-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("chart.svg");
        let bars = vec![
            Bar {
                label: "W4 update_ns_per_op vs client-go".into(),
                ratio: 1.4,
                target: Some(0.7),
            },
            Bar {
                label: "E1C peak_rss_mib vs E1-kube-runtime".into(),
                ratio: 0.07,
                target: Some(0.1),
            },
        ];
        write_svg(&bars, &path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(80)]);
        assert!(svg.contains("W4 update_ns_per_op vs client-go"));
        assert!(svg.contains("0.07×"));
        write_svg(&bars[..1], &path).unwrap();
        let one = std::fs::read_to_string(&path).unwrap();
        assert!(one.contains("1.40×") && one.contains("W4 update_ns_per_op vs client-go"));
        assert!(write_svg(&[], &path).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
