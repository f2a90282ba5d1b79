//! What the soak watches in its own process: resident memory, live tokio tasks and open file
//! descriptors, sampled over time, and how much each grew over the second half of a run.

use std::time::Duration;

/// One sample of the process.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// Time since the churn began.
    pub at: Duration,
    /// Resident set size (VmRSS) in MiB.
    pub rss_mib: f64,
    /// Tasks alive on the current tokio runtime.
    pub tasks: usize,
    /// Open file descriptors (entries of /proc/self/fd).
    pub fds: usize,
    /// Live heap bytes in MiB, where the process counts them (the bench's counting allocator).
    pub heap_mib: Option<f64>,
}

/// Reads the live heap bytes (e.g. [`live_bytes`](crate::alloc::live_bytes)).
pub type LiveHeap = fn() -> usize;

/// Takes a sample now, with the live heap if `live_heap` reads it. Must run inside a tokio
/// runtime.
///
/// # Errors
/// /proc/self/status or /proc/self/fd could not be read (not Linux).
pub fn sample(at: Duration, live_heap: Option<LiveHeap>) -> Result<Sample, String> {
    Ok(Sample {
        heap_mib: live_heap.map(|f| f() as f64 / (1024.0 * 1024.0)),
        at,
        rss_mib: crate::proc_status::own_mib("VmRSS:")?,
        tasks: tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks(),
        fds: std::fs::read_dir("/proc/self/fd")
            .map_err(|e| format!("reading /proc/self/fd: {e}"))?
            .count(),
    })
}

/// Hands the allocator's whole free pages back to the system (glibc's `malloc_trim(0)`; a
/// no-op elsewhere), so that the next RSS reading counts live memory and fragmentation but not
/// the free pages glibc keeps after a peak. A heap that glibc grows step by step over its
/// first minutes (as S0's untrimmed samples show) is then not taken for a leak in a short run.
pub fn trim_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only releases free memory the allocator holds; it takes and hands
    // out no pointer, and glibc's allocator is thread-safe.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// How the process changed over the second half of a run: the median of the first samples of
/// that half against the median of its last ones. Medians of several samples, not single
/// samples, so that a relist or a burst of connections caught by one sample does not count as
/// growth.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Growth {
    /// Samples in the second half.
    pub samples: usize,
    /// Samples in each median (a sixth of the half, at least 3).
    pub window: usize,
    /// Median RSS at the start of the second half, MiB.
    pub rss_start_mib: f64,
    /// Median RSS at its end, MiB.
    pub rss_end_mib: f64,
    /// `(end - start) / start`, in per cent.
    pub rss_growth_pct: f64,
    /// Median live tasks at the end minus at the start.
    pub tasks_growth: f64,
    /// Median open descriptors at the end minus at the start.
    pub fds_growth: f64,
    /// Median live heap at the start and at the end, MiB, where the samples have it: unlike
    /// RSS, it does not count what the allocator keeps after freeing.
    pub heap_mib: Option<(f64, f64)>,
}

/// The growth over the second half of `samples` (in time order, covering the run); `None`
/// with fewer than 6 samples in that half.
pub fn growth(samples: &[Sample], run: Duration) -> Option<Growth> {
    let half: Vec<&Sample> = samples.iter().filter(|s| s.at >= run / 2).collect();
    if half.len() < 6 {
        return None;
    }
    let window = (half.len() / 6).max(3);
    let (first, last) = (&half[..window], &half[half.len() - window..]);
    let med = |part: &[&Sample], f: fn(&Sample) -> f64| {
        let mut v: Vec<f64> = part.iter().map(|s| f(s)).collect();
        crate::group::median(&mut v)
    };
    let rss_start_mib = med(first, |s| s.rss_mib);
    let rss_end_mib = med(last, |s| s.rss_mib);
    Some(Growth {
        samples: half.len(),
        window,
        rss_start_mib,
        rss_end_mib,
        rss_growth_pct: (rss_end_mib - rss_start_mib) / rss_start_mib * 100.0,
        tasks_growth: med(last, |s| s.tasks as f64) - med(first, |s| s.tasks as f64),
        fds_growth: med(last, |s| s.fds as f64) - med(first, |s| s.fds as f64),
        heap_mib: half.iter().all(|s| s.heap_mib.is_some()).then(|| {
            let heap = |s: &Sample| s.heap_mib.unwrap_or(0.0);
            (med(first, heap), med(last, heap))
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(secs: u64, rss: f64, tasks: usize, fds: usize) -> Sample {
        Sample {
            at: Duration::from_secs(secs),
            rss_mib: rss,
            tasks,
            fds,
            heap_mib: None,
        }
    }

    #[test]
    fn growth_compares_medians_of_the_second_half_only() {
        let run = Duration::from_secs(24);
        // First half: anything (warm-up growth is not counted).
        let mut samples: Vec<Sample> = (0..12).map(|i| s(i, 10.0 + i as f64, 5, 9)).collect();
        // Second half: 12 samples, windows of 3; one spike in each window is ignored.
        let rss = [
            100.0, 150.0, 100.0, 101.0, 101.0, 101.0, 102.0, 102.0, 102.0, 110.0, 300.0, 110.0,
        ];
        let tasks = [5, 5, 40, 5, 5, 5, 5, 5, 5, 7, 7, 7];
        for (i, (r, t)) in rss.iter().zip(tasks).enumerate() {
            samples.push(s(12 + i as u64, *r, t, 9 + i / 11));
        }
        let g = growth(&samples, run).unwrap();
        assert_eq!((g.samples, g.window), (12, 3));
        assert_eq!((g.rss_start_mib, g.rss_end_mib), (100.0, 110.0));
        assert!((g.rss_growth_pct - 10.0).abs() < 1e-9);
        assert_eq!(g.tasks_growth, 2.0);
        assert_eq!(g.fds_growth, 0.0);
        assert_eq!(g.heap_mib, None);
        assert!(growth(&samples[..17], run).is_none());
    }

    #[test]
    fn a_sample_reads_this_process() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let now = rt
            .block_on(async { sample(Duration::ZERO, Some(|| 3 << 20)) })
            .unwrap();
        assert_eq!(now.heap_mib, Some(3.0));
        assert!(now.rss_mib > 1.0, "{now:?}");
        assert!(now.fds >= 3, "{now:?}");
    }
}
