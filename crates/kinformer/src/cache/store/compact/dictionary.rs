//! A zstd dictionary prepared for compression and decompression.

use std::fmt;

use zstd::zstd_safe::DDict;

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
