//! Telling when the objects being written no longer look like the ones the dictionary was
//! trained on, and collecting the writes to train its successor on.
//!
//! A dictionary is trained on the first objects an indexer stores. Objects change over an
//! informer's life (new images, labels and annotations; new workloads; a list that went
//! namespace by namespace), and objects the dictionary does not know compress worse: in the
//! E1C benchmark, pods that gained an annotation took 155 B each against 82 B at sync. The
//! detector compares the compressed size (per input byte) of each window of writes with the
//! dictionary's baseline: what it made of held-out samples when it was trained, or, for a
//! dictionary given up front, of the first window of writes; after a trial (see `trial`),
//! what the dictionary kept made of the trial's writes. Two windows in a row 40 % worse mean
//! the writes drifted, and the next window's objects (at most 100 dictionaries' worth of
//! bytes) are kept as the samples of a new dictionary.
//!
//! Why these numbers: the held-out samples come from the same stretch of writes as the
//! training samples, so later windows of unchanged objects come out up to ~25 % worse than the
//! baseline (E1PC's list, bench pods in key order: 0.33–0.35 against 0.28), and single windows
//! up to 60 % worse now and then. A threshold of 25 % on single windows made 7–8 dictionaries
//! during that list; objects that really drifted (E1C's updated pods) come out 70–90 % worse.

/// Windows are at least this many writes: fewer would make the ratio noisy.
pub(crate) const MIN_WINDOW: usize = 256;

/// A window whose compressed size is this much larger (relative to its input) than the
/// baseline's counts as drifted.
const DRIFT_FACTOR: f64 = 1.4;

/// This many drifted windows in a row are drift (doubled after each dictionary that did no
/// better than the one in use, up to [`MAX_DRIFTED_WINDOWS`]).
const DRIFTED_WINDOWS: usize = 2;
const MAX_DRIFTED_WINDOWS: usize = 64;

/// What the detector does with the next writes.
#[derive(Debug)]
enum Phase {
    /// Measuring windows.
    Measuring,
    /// Keeping each written object's serialization as a training sample.
    Collecting(Vec<Vec<u8>>),
    /// A new dictionary is being trained on the collected samples; nothing to do until it
    /// is loaded ([`Drift::loaded`]) or its training failed ([`Drift::training_failed`]).
    Training,
}

/// The drift detector of one codec (kept under its write lock).
#[derive(Debug)]
pub(crate) struct Drift {
    window: usize,
    /// Collecting stops at this many bytes of samples (a window of large objects would
    /// make training slow and no better).
    max_sample_bytes: usize,
    /// Input and output bytes and writes of the current window.
    bytes_in: u64,
    bytes_out: u64,
    writes: usize,
    /// Output per input byte expected of the dictionary in use (`None`: the next window
    /// sets it).
    baseline: Option<f64>,
    /// Drifted windows in a row.
    drifted: usize,
    /// Drifted windows in a row that make drift.
    needed: usize,
    phase: Phase,
}

impl Drift {
    /// A detector over windows of `window` writes (at least [`MIN_WINDOW`]) that collects
    /// at most `max_sample_bytes` of samples.
    pub(crate) fn new(window: usize, max_sample_bytes: usize) -> Self {
        Drift {
            window: window.max(MIN_WINDOW),
            max_sample_bytes,
            bytes_in: 0,
            bytes_out: 0,
            writes: 0,
            baseline: None,
            drifted: 0,
            needed: DRIFTED_WINDOWS,
            phase: Phase::Measuring,
        }
    }

    /// Records a write that compressed `serialized` into `compressed` bytes. Returns the
    /// samples to train a new dictionary on once a whole window of them is collected.
    pub(crate) fn observe(&mut self, serialized: &[u8], compressed: usize) -> Option<Vec<Vec<u8>>> {
        match &mut self.phase {
            Phase::Training => None,
            Phase::Collecting(samples) => {
                samples.push(serialized.to_vec());
                self.bytes_in += serialized.len() as u64;
                if samples.len() < self.window && self.bytes_in < self.max_sample_bytes as u64 {
                    return None;
                }
                self.bytes_in = 0;
                let Phase::Collecting(samples) =
                    std::mem::replace(&mut self.phase, Phase::Training)
                else {
                    return None;
                };
                Some(samples)
            }
            Phase::Measuring => {
                self.bytes_in += serialized.len() as u64;
                self.bytes_out += compressed as u64;
                self.writes += 1;
                if self.writes < self.window {
                    return None;
                }
                let ratio = self.bytes_out as f64 / self.bytes_in.max(1) as f64;
                (self.bytes_in, self.bytes_out, self.writes) = (0, 0, 0);
                match self.baseline {
                    None => self.baseline = Some(ratio),
                    Some(base) if ratio > base * DRIFT_FACTOR => {
                        self.drifted += 1;
                        if self.drifted >= self.needed {
                            tracing::debug!(
                                baseline = base,
                                window = ratio,
                                "compact indexer: writes drifted from the dictionary, collecting samples for a new one"
                            );
                            self.drifted = 0;
                            self.phase = Phase::Collecting(Vec::new());
                        }
                    }
                    Some(_) => self.drifted = 0,
                }
                None
            }
        }
    }

    /// The number of writes in a window.
    pub(crate) fn window(&self) -> usize {
        self.window
    }

    /// A new dictionary is in use: expect `baseline` of it (`None`: the next window sets
    /// it).
    pub(crate) fn loaded(&mut self, baseline: Option<f64>) {
        (self.bytes_in, self.bytes_out, self.writes, self.drifted) = (0, 0, 0, 0);
        self.needed = DRIFTED_WINDOWS;
        self.baseline = baseline;
        self.phase = Phase::Measuring;
    }

    /// The dictionary trained on the samples did no better than the one in use, which made
    /// `baseline` of the latest writes: expect that, and ask for twice as many drifted
    /// windows before trying again (so objects that are merely diverse do not keep a
    /// training going).
    pub(crate) fn kept(&mut self, baseline: f64) {
        (self.bytes_in, self.bytes_out, self.writes, self.drifted) = (0, 0, 0, 0);
        self.needed = (self.needed * 2).min(MAX_DRIFTED_WINDOWS);
        self.baseline = Some(baseline);
        self.phase = Phase::Measuring;
    }

    /// The new dictionary could not be trained: keep the baseline and measure again (a later
    /// drifted window collects new samples).
    pub(crate) fn training_failed(&mut self) {
        (self.bytes_in, self.bytes_out, self.writes, self.drifted) = (0, 0, 0, 0);
        self.phase = Phase::Measuring;
    }

    /// No more dictionaries can be made: stop collecting.
    pub(crate) fn stop(&mut self) {
        self.phase = Phase::Training;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(d: &mut Drift, n: usize, len: usize, out: usize) -> Option<Vec<Vec<u8>>> {
        let bytes = vec![7u8; len];
        let mut got = None;
        for _ in 0..n {
            if let Some(s) = d.observe(&bytes, out) {
                got = Some(s);
            }
        }
        got
    }

    #[test]
    fn steady_writes_and_single_bad_windows_never_ask_for_a_dictionary() {
        let mut d = Drift::new(10, usize::MAX);
        assert_eq!(d.window, MIN_WINDOW);
        assert!(feed(&mut d, 20 * MIN_WINDOW, 300, 90).is_none());
        // 30 % worse is within the noise.
        assert!(feed(&mut d, 5 * MIN_WINDOW, 300, 117).is_none());
        // Bad windows, but never two in a row.
        for _ in 0..5 {
            assert!(feed(&mut d, MIN_WINDOW, 300, 150).is_none());
            assert!(feed(&mut d, MIN_WINDOW, 300, 100).is_none());
        }
    }

    #[test]
    fn two_drifted_windows_collect_the_next_window_as_samples_once() {
        let mut d = Drift::new(MIN_WINDOW, usize::MAX);
        assert!(feed(&mut d, MIN_WINDOW, 300, 90).is_none()); // baseline 0.3
        assert!(feed(&mut d, 2 * MIN_WINDOW, 300, 150).is_none()); // 0.5: drift
        let samples = feed(&mut d, MIN_WINDOW, 320, 150).expect("samples");
        assert_eq!(samples.len(), MIN_WINDOW);
        assert!(samples.iter().all(|s| s.len() == 320));
        // Training: nothing more until it ends.
        assert!(feed(&mut d, 3 * MIN_WINDOW, 300, 150).is_none());
        d.loaded(None);
        assert!(feed(&mut d, MIN_WINDOW, 300, 150).is_none()); // new baseline 0.5
        assert!(feed(&mut d, 3 * MIN_WINDOW, 300, 160).is_none());
        // A baseline given with the dictionary judges the first windows already.
        d.loaded(Some(0.3));
        assert!(feed(&mut d, 2 * MIN_WINDOW, 300, 150).is_none());
        assert!(feed(&mut d, MIN_WINDOW, 300, 150).is_some());
    }

    #[test]
    fn a_kept_dictionary_resets_the_baseline_and_doubles_the_windows_needed() {
        let mut d = Drift::new(MIN_WINDOW, usize::MAX);
        feed(&mut d, MIN_WINDOW, 300, 90);
        feed(&mut d, 2 * MIN_WINDOW, 300, 150);
        assert!(feed(&mut d, MIN_WINDOW, 300, 150).is_some());
        d.kept(0.5);
        // 0.5 is expected now; 0.75 drifts, but only after four windows.
        assert!(feed(&mut d, 10 * MIN_WINDOW, 300, 150).is_none());
        assert!(feed(&mut d, 4 * MIN_WINDOW, 300, 225).is_none());
        assert!(feed(&mut d, MIN_WINDOW, 300, 225).is_some());
        // A new dictionary brings back two.
        d.loaded(Some(0.3));
        assert!(feed(&mut d, 2 * MIN_WINDOW, 300, 150).is_none());
        assert!(feed(&mut d, MIN_WINDOW, 300, 150).is_some());
    }

    #[test]
    fn samples_stop_at_their_byte_budget() {
        let mut d = Drift::new(MIN_WINDOW, 10_000);
        feed(&mut d, MIN_WINDOW, 300, 90);
        feed(&mut d, 2 * MIN_WINDOW, 300, 150);
        let mut samples = None;
        for n in 1..=MIN_WINDOW {
            if let Some(s) = d.observe(&[1; 1_000], 500) {
                samples = Some((n, s.len()));
                break;
            }
        }
        assert_eq!(samples, Some((10, 10)));
    }

    #[test]
    fn after_a_failed_training_the_old_baseline_still_judges() {
        let mut d = Drift::new(MIN_WINDOW, usize::MAX);
        feed(&mut d, MIN_WINDOW, 300, 90);
        feed(&mut d, 2 * MIN_WINDOW, 300, 150);
        assert!(feed(&mut d, MIN_WINDOW, 300, 150).is_some());
        d.training_failed();
        assert!(feed(&mut d, 2 * MIN_WINDOW, 300, 150).is_none()); // drift seen again
        assert!(feed(&mut d, MIN_WINDOW, 300, 150).is_some());
        d.stop();
        assert!(feed(&mut d, 4 * MIN_WINDOW, 300, 150).is_none());
    }
}
