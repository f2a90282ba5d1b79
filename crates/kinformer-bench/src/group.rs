//! What every workload group shares: its metrics, its description, its errors and the
//! median its runs are summed up by.

/// The metrics of one run, in display order: `(name, value)`.
pub type Metrics = Vec<(String, f64)>;

/// A set of workloads run together by `kinformer-bench <name>`.
#[derive(Debug, Clone, Copy)]
pub struct Group {
    /// The group's name on the command line.
    pub name: &'static str,
    /// Workload ids, in running order.
    pub workloads: &'static [&'static str],
    /// Runs one workload of this group in the current process.
    pub run: fn(&str) -> Result<Metrics, BenchError>,
}

/// Adapts a group that reports `(metric, value, unit)` rows; the unit column is derived from
/// the metric name by [`unit_of`](crate::unit_of), so the unit given here is dropped.
pub(crate) fn rows_to_metrics(
    workload: &str,
    rows: Result<Vec<(String, f64, String)>, String>,
) -> Result<Metrics, BenchError> {
    match rows {
        Ok(rows) => Ok(rows
            .into_iter()
            .map(|(name, value, _)| (name, value))
            .collect()),
        Err(e) => Err(BenchError::Workload(workload.to_owned(), e)),
    }
}

/// Errors of the runner and the workloads.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The group name is not known.
    #[error("unknown bench group `{0}` (known: {1}, all)")]
    UnknownGroup(String, String),
    /// No group has a workload with this id.
    #[error("unknown workload `{0}`")]
    UnknownWorkload(String),
    /// Starting or talking to the child process failed.
    #[error("running the workload process: {0}")]
    Io(#[from] std::io::Error),
    /// The child process failed.
    #[error("workload {workload} failed ({status})")]
    ChildFailed {
        /// The workload id.
        workload: String,
        /// How the child exited.
        status: std::process::ExitStatus,
    },
    /// The child printed no parsable result line.
    #[error("workload {workload} printed no result line: {reason}")]
    BadOutput {
        /// The workload id.
        workload: String,
        /// What was wrong.
        reason: String,
    },
    /// The workload itself failed.
    #[error("workload {0} failed: {1}")]
    Workload(String, String),
    /// The chart could not be drawn.
    #[error("plot: {0}")]
    Plot(String),
}

/// The median of `values` (mean of the middle two for an even count); NaN for none.
pub(crate) fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => values[n / 2],
        _ => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}
