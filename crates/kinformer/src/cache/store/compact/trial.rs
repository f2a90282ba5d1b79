//! A new dictionary on trial: the writes after it was trained are compressed with it as well
//! as with the dictionary in use, and it replaces that one only if it stores them clearly
//! smaller.
//!
//! The drift detector tells that writes compress worse than expected, not that a dictionary
//! trained on recent writes will do better on the next ones: when the objects are simply
//! diverse (a list of many different workloads, in key order), each window is new to any
//! dictionary. Measured on the writes that follow, the trial also gives the baseline the
//! detector should expect of whichever dictionary is kept.

use zstd::zstd_safe::{self, CCtx};

use crate::cache::store::CodecError;
use crate::cache::store::compact::dictionary::Dictionary;

/// The candidate must store the trial's writes in at most this share of the bytes the
/// dictionary in use takes.
const ADOPT_BELOW: f64 = 0.85;

/// The outcome of a trial.
pub(crate) enum Verdict {
    /// The candidate stores writes clearly smaller: use it, with its context (loaded), and
    /// expect this many output bytes per input byte of it.
    Adopt {
        dict: Dictionary,
        cctx: CCtx<'static>,
        baseline: f64,
    },
    /// The candidate is no better; the dictionary in use takes this many output bytes per
    /// input byte of the current writes (its new baseline).
    Reject { baseline: f64 },
}

/// A candidate dictionary and its tally against the dictionary in use.
pub(crate) struct Trial {
    dict: Dictionary,
    cctx: CCtx<'static>,
    frame: Vec<u8>,
    /// Writes still to compare.
    left: usize,
    input: usize,
    current: usize,
    candidate: usize,
}

impl Trial {
    /// A trial of `dict` (loaded for `level`) over the next `writes` writes (at least one).
    pub(crate) fn new(dict: Dictionary, level: i32, writes: usize) -> Result<Self, CodecError> {
        let mut cctx = CCtx::try_create()
            .ok_or_else(|| CodecError::Encode("cannot create a zstd context".into()))?;
        dict.load(&mut cctx, level)?;
        Ok(Trial {
            dict,
            cctx,
            frame: Vec::new(),
            left: writes.max(1),
            input: 0,
            current: 0,
            candidate: 0,
        })
    }

    /// Records a write of `serialized`, which the dictionary in use compressed into `current`
    /// bytes; true when the trial is over ([`Self::verdict`]).
    pub(crate) fn observe(
        &mut self,
        serialized: &[u8],
        current: usize,
    ) -> Result<bool, CodecError> {
        self.frame.clear();
        self.frame
            .reserve(zstd_safe::compress_bound(serialized.len()));
        let candidate = self
            .cctx
            .compress2(&mut self.frame, serialized)
            .map_err(|code| {
                CodecError::Encode(format!("zstd: {}", zstd_safe::get_error_name(code)))
            })?;
        self.input += serialized.len();
        self.current += current;
        self.candidate += candidate;
        self.left = self.left.saturating_sub(1);
        Ok(self.left == 0)
    }

    /// The verdict on the writes observed.
    pub(crate) fn verdict(self) -> Verdict {
        let per_input = |bytes: usize| bytes as f64 / self.input.max(1) as f64;
        if (self.candidate as f64) <= self.current as f64 * ADOPT_BELOW {
            tracing::debug!(
                candidate = self.candidate,
                current = self.current,
                "compact indexer: the new dictionary stores recent writes smaller, it is used from now on"
            );
            Verdict::Adopt {
                baseline: per_input(self.candidate),
                dict: self.dict,
                cctx: self.cctx,
            }
        } else {
            tracing::debug!(
                candidate = self.candidate,
                current = self.current,
                "compact indexer: the new dictionary does no better, keeping the one in use"
            );
            Verdict::Reject {
                baseline: per_input(self.current),
            }
        }
    }
}
