//! Memory figures of a process, read from its `/proc/<pid>/status`.

/// Peak resident set size (VmHWM) of this process in MiB.
pub(crate) fn peak_rss_mib() -> Result<f64, String> {
    own_mib("VmHWM:")
}

/// A size line of /proc/self/status (`VmHWM:`, `VmRSS:`) in MiB.
pub(crate) fn own_mib(field: &str) -> Result<f64, String> {
    status_mib("/proc/self/status", field)
}

/// A size line (`VmHWM:`, `VmRSS:`) of a process's status file in MiB.
pub(crate) fn status_mib(path: &str, field: &str) -> Result<f64, String> {
    let status = std::fs::read_to_string(path).map_err(|e| format!("reading {path}: {e}"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|kib| kib.parse::<f64>().ok())
        .map(|kib| kib / 1024.0)
        .ok_or_else(|| format!("no {field} in {path}"))
}
