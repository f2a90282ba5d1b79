//! A zstd dictionary prepared for compression and decompression.

use std::fmt;

use zstd::zstd_safe::{self, CCtx, CParameter, DDict};

use crate::cache::store::CodecError;

/// One dictionary: its bytes (loaded into the compression context) and its prepared
/// decompression form (read-only, shared by all reading threads).
pub(crate) struct Dictionary {
    pub(crate) raw: Vec<u8>,
    pub(crate) ddict: DDict<'static>,
    pub(crate) len: usize,
}

impl fmt::Debug for Dictionary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dictionary")
            .field("len", &self.len)
            .finish()
    }
}

impl Dictionary {
    /// Prepares `raw` (zstd dictionary bytes).
    pub(crate) fn new(raw: &[u8]) -> Result<Self, CodecError> {
        let ddict = DDict::try_create(raw)
            .ok_or_else(|| CodecError::Dictionary("zstd refused the dictionary".into()))?;
        Ok(Dictionary {
            raw: raw.to_vec(),
            ddict,
            len: raw.len(),
        })
    }

    /// Loads this dictionary into `cctx` for compressing at `level` (see [`load_into`]).
    pub(crate) fn load(&self, cctx: &mut CCtx<'static>, level: i32) -> Result<(), CodecError> {
        load_into(cctx, self, level)
    }

    /// Trains a dictionary of at most `max_size` bytes on `samples`.
    pub(crate) fn train<S: AsRef<[u8]>>(
        samples: &[S],
        max_size: usize,
    ) -> Result<Self, CodecError> {
        let raw = zstd::dict::from_samples(samples, max_size)
            .map_err(|e| CodecError::Dictionary(format!("training failed: {e}")))?;
        Self::new(&raw)
    }
}

/// Loads `dict` into the compression context `cctx` (sticky: used for every later frame), with a
/// content checksum so corrupt stored bytes are detected, and without the dictionary id.
fn load_into(cctx: &mut CCtx<'static>, dict: &Dictionary, level: i32) -> Result<(), CodecError> {
    let err = |code| CodecError::Dictionary(format!("zstd: {}", zstd_safe::get_error_name(code)));
    cctx.set_parameter(CParameter::CompressionLevel(level))
        .map_err(err)?;
    if let Some(log) = match_table_log(dict.raw.len(), level) {
        cctx.set_parameter(CParameter::HashLog(log)).map_err(err)?;
        cctx.set_parameter(CParameter::ChainLog(log)).map_err(err)?;
    }
    cctx.set_parameter(CParameter::ChecksumFlag(true))
        .map_err(err)?;
    cctx.set_parameter(CParameter::DictIdFlag(false))
        .map_err(err)?;
    cctx.set_parameter(CParameter::ContentSizeFlag(true))
        .map_err(err)?;
    cctx.load_dictionary(&dict.raw).map_err(err)?;
    Ok(())
}

/// The size (log2 of entries) of the match-finding tables for a dictionary of `dict_len`
/// bytes at `level`, or `None` to keep the level's own.
///
/// Frames are single objects, so nearly every match is found in the dictionary, through the
/// tables zstd builds for it. At levels up to 3 zstd sizes those tables for a stream of
/// unknown length (2^17 and 2^16 entries, 768 KiB at level 3) whatever the dictionary's
/// size, and each lookup into them is a likely cache miss once other work has run between
/// two writes (an informer's updates). Tables of a quarter entry per dictionary byte (2^12
/// entries each for the default 16 KiB) store a bench pod in 61–62 B (61 with level 3's
/// tables) and took a third off the CPU spent compressing in E1C (profiles of three runs
/// each). Higher levels, chosen for their ratio, keep their tables.
fn match_table_log(dict_len: usize, level: i32) -> Option<u32> {
    const MIN_LOG: u32 = 10;
    const MAX_LOG: u32 = 16;
    if level > 3 {
        return None;
    }
    let log = dict_len.max(1).next_power_of_two().trailing_zeros();
    Some(log.saturating_sub(2).clamp(MIN_LOG, MAX_LOG))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn match_tables_follow_the_dictionary_at_low_levels_only() {
        assert_eq!(match_table_log(16 * 1024, 3), Some(12));
        assert_eq!(match_table_log(16 * 1024, 1), Some(12));
        // Rounded up to a power of two, within bounds.
        assert_eq!(match_table_log(100 * 1024, 3), Some(15));
        assert_eq!(match_table_log(1, 3), Some(10));
        assert_eq!(match_table_log(64 << 20, 3), Some(16));
        assert_eq!(match_table_log(16 * 1024, 4), None);
        assert_eq!(match_table_log(16 * 1024, 19), None);
    }
}
