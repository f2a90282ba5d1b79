//! Encoding objects to compact blobs and back.

use std::cell::RefCell;
use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use serde::Serialize;
use serde::de::DeserializeOwned;
use zstd::zstd_safe::{self, CCtx, CParameter, DCtx};

use crate::cache::meta::{Lazy, StoredBody, deferred};
use crate::cache::store::CodecError;
use crate::cache::store::compact::dictionary::Dictionary;
use crate::cache::store::{CompactOptions, Format};

/// One stored object: a tag byte, the object's resourceVersion (a length byte, then its bytes),
/// then the payload.
pub(crate) type Blob = Arc<[u8]>;

const TAG_RAW: u8 = 0;
const TAG_ZSTD: u8 = 1;
/// The length byte of a resourceVersion too long to keep beside the object (it is then read
/// from the decoded object).
const VERSION_NOT_KEPT: u8 = u8::MAX;

/// A blob's parts: its tag, the resourceVersion kept beside the object (if kept), the payload.
fn parts(blob: &[u8]) -> Result<(u8, Option<&str>, &[u8]), CodecError> {
    let bad = || CodecError::Decode("truncated blob header".into());
    let (&tag, rest) = blob.split_first().ok_or_else(bad)?;
    let (&len, rest) = rest.split_first().ok_or_else(bad)?;
    if len == VERSION_NOT_KEPT {
        return Ok((tag, None, rest));
    }
    let (version, payload) = rest.split_at_checked(usize::from(len)).ok_or_else(bad)?;
    let version = std::str::from_utf8(version).map_err(|_| {
        CodecError::Decode("resourceVersion in the blob header is not UTF-8".into())
    })?;
    Ok((tag, Some(version), payload))
}

/// The resourceVersion kept in `blob`'s header: `None` if not kept (too long) or the header is
/// malformed (then the object itself must be read).
pub(crate) fn stored_version(blob: &[u8]) -> Option<&str> {
    parts(blob).ok().and_then(|(_, version, _)| version)
}
/// Refuse to inflate a blob to more than this (a corrupt size field must not allocate wildly).
const MAX_DECODED_BYTES: u64 = 256 << 20;

struct WriteCtx {
    cctx: CCtx<'static>,
    serialized: Vec<u8>,
    compressed: Vec<u8>,
}

thread_local! {
    /// Per-thread decompression context and buffer, reused by every compact indexer.
    static READ_CTX: RefCell<Option<(DCtx<'static>, Vec<u8>)>> = const { RefCell::new(None) };
}

/// The type-independent part of the codec: format, dictionary, compression context.
pub(crate) struct Codec {
    format: Format,
    level: i32,
    train_after: usize,
    dictionary_size: usize,
    dict: OnceLock<Dictionary>,
    /// The number of samples of the last failed training (0: none failed).
    failed_at: AtomicUsize,
    write: Mutex<WriteCtx>,
}

impl fmt::Debug for Codec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Codec")
            .field("format", &self.format)
            .field("dictionary", &self.dict.get())
            .finish()
    }
}

impl Codec {
    pub(crate) fn new(opts: &CompactOptions) -> Result<Self, CodecError> {
        let cctx = CCtx::try_create()
            .ok_or_else(|| CodecError::Encode("cannot create a zstd context".into()))?;
        let dict = OnceLock::new();
        let mut write = WriteCtx {
            cctx,
            serialized: Vec::new(),
            compressed: Vec::new(),
        };
        if let Some(raw) = &opts.dictionary {
            let d = Dictionary::new(raw)?;
            load(&mut write.cctx, &d, opts.level)?;
            let _ = dict.set(d);
        }
        Ok(Codec {
            format: opts.format,
            level: opts.level,
            train_after: opts.train_after,
            dictionary_size: opts.dictionary_size,
            dict,
            failed_at: AtomicUsize::new(0),
            write: Mutex::new(write),
        })
    }

    /// The size of the dictionary in use, if any.
    pub(crate) fn dictionary_len(&self) -> Option<usize> {
        self.dict.get().map(|d| d.len)
    }

    fn encode<K: Serialize>(&self, obj: &K, version: &str) -> Result<Blob, CodecError> {
        let mut guard = self.write.lock();
        let ctx = &mut *guard;
        ctx.serialized.clear();
        let res = match self.format {
            Format::MessagePack => {
                rmp_serde::encode::write_named(&mut ctx.serialized, obj).map_err(|e| e.to_string())
            }
            Format::Json => {
                serde_json::to_writer(&mut ctx.serialized, obj).map_err(|e| e.to_string())
            }
        };
        res.map_err(CodecError::Encode)?;
        Self::pack(self.dict.get(), ctx, Some(version))
    }

    /// Wraps `ctx.serialized` into a blob, compressing it if a dictionary exists; `version`
    /// goes into the header when given and short enough.
    fn pack(
        dict: Option<&Dictionary>,
        ctx: &mut WriteCtx,
        version: Option<&str>,
    ) -> Result<Blob, CodecError> {
        // The blob is built in the reused buffer, then copied once into its `Arc`.
        ctx.compressed.clear();
        // The version and its length byte, if short enough to keep.
        let kept = version.and_then(|v| match u8::try_from(v.len()) {
            Ok(len) if len != VERSION_NOT_KEPT => Some((len, v)),
            _ => None,
        });
        let header = 2 + kept.map_or(0, |(_, v)| v.len());
        let bound = if dict.is_some() {
            zstd_safe::compress_bound(ctx.serialized.len())
        } else {
            ctx.serialized.len()
        };
        ctx.compressed.reserve(header + bound);
        ctx.compressed
            .push(if dict.is_some() { TAG_ZSTD } else { TAG_RAW });
        match kept {
            Some((len, v)) => {
                ctx.compressed.push(len);
                ctx.compressed.extend_from_slice(v.as_bytes());
            }
            None => ctx.compressed.push(VERSION_NOT_KEPT),
        }
        if dict.is_none() {
            ctx.compressed.extend_from_slice(&ctx.serialized);
            return Ok(Blob::from(ctx.compressed.as_slice()));
        };
        // The dictionary is loaded in the context (see `load`). The cursor makes `compress2`
        // write after the header.
        let mut after_tag = std::io::Cursor::new(&mut ctx.compressed);
        after_tag.set_position(header as u64);
        ctx.cctx
            .compress2(&mut after_tag, &ctx.serialized)
            .map_err(|code| {
                CodecError::Encode(format!("zstd: {}", zstd_safe::get_error_name(code)))
            })?;
        Ok(Blob::from(ctx.compressed.as_slice()))
    }

    fn decode<K: DeserializeOwned>(&self, blob: &[u8]) -> Result<K, CodecError> {
        if blob.is_empty() {
            return Err(CodecError::Decode("empty blob".into()));
        }
        let (tag, _, payload) = parts(blob)?;
        match tag {
            TAG_RAW => self.deserialize(payload),
            TAG_ZSTD => {
                let dict = self.dict.get().ok_or_else(|| {
                    CodecError::Decode("compressed blob but no dictionary".into())
                })?;
                let size = match zstd_safe::get_frame_content_size(payload) {
                    Ok(Some(n)) if n <= MAX_DECODED_BYTES => n as usize,
                    Ok(_) => return Err(CodecError::Decode("bad zstd frame size".into())),
                    Err(_) => return Err(CodecError::Decode("bad zstd frame header".into())),
                };
                READ_CTX.with(|cell| {
                    let mut slot = cell.borrow_mut();
                    if slot.is_none() {
                        let dctx = DCtx::try_create().ok_or_else(|| {
                            CodecError::Decode("cannot create a zstd context".into())
                        })?;
                        *slot = Some((dctx, Vec::new()));
                    }
                    let Some((dctx, buf)) = slot.as_mut() else {
                        return Err(CodecError::Decode("no zstd context".into()));
                    };
                    buf.clear();
                    buf.reserve(size);
                    dctx.decompress_using_ddict(buf, payload, &dict.ddict)
                        .map_err(|code| {
                            CodecError::Decode(format!("zstd: {}", zstd_safe::get_error_name(code)))
                        })?;
                    let out = self.deserialize(buf);
                    if buf.capacity() > 1 << 20 {
                        // Do not keep a huge buffer around after an unusually large object.
                        *buf = Vec::new();
                    }
                    out
                })
            }
            other => Err(CodecError::Decode(format!("unknown blob tag {other}"))),
        }
    }

    fn deserialize<K: DeserializeOwned>(&self, bytes: &[u8]) -> Result<K, CodecError> {
        match self.format {
            Format::MessagePack => {
                rmp_serde::from_slice(bytes).map_err(|e| CodecError::Decode(e.to_string()))
            }
            Format::Json => {
                serde_json::from_slice(bytes).map_err(|e| CodecError::Decode(e.to_string()))
            }
        }
    }

    /// After how many objects the dictionary is trained (`0`: never).
    pub(crate) fn train_after(&self) -> usize {
        self.train_after
    }

    /// True when a dictionary should be trained now that `stored` objects are held: at
    /// `train_after` objects, and after a failed training (too little data) again at twice
    /// the sample count.
    pub(crate) fn wants_training(&self, stored: usize) -> bool {
        self.train_after > 0
            && self.dict.get().is_none()
            && stored
                >= self
                    .train_after
                    .max(self.failed_at.load(Ordering::Relaxed).saturating_mul(2))
    }

    /// Trains the dictionary from uncompressed blobs (tagged raw); returns whether a
    /// dictionary now exists. A failure is logged; objects stay uncompressed until a later
    /// training (with twice the samples) succeeds.
    pub(crate) fn train(&self, samples: &[Blob]) -> bool {
        if self.dict.get().is_some() {
            return true;
        }
        let payloads: Vec<&[u8]> = samples
            .iter()
            .filter_map(|b| match parts(b) {
                Ok((TAG_RAW, _, p)) => Some(p),
                _ => None,
            })
            .collect();
        let trained = Dictionary::train(&payloads, self.dictionary_size)
            .and_then(|d| load(&mut self.write.lock().cctx, &d, self.level).map(|()| d));
        match trained {
            Ok(d) => {
                tracing::debug!(
                    samples = payloads.len(),
                    bytes = d.len,
                    "compact indexer: dictionary trained"
                );
                let _ = self.dict.set(d);
                true
            }
            Err(e) => {
                self.failed_at
                    .store(samples.len().max(1), Ordering::Relaxed);
                tracing::debug!(error = %e, "compact indexer: objects stay uncompressed for now");
                false
            }
        }
    }

    /// Compresses an uncompressed blob with the dictionary; `None` if it needs no change.
    pub(crate) fn recompress(&self, blob: &[u8]) -> Result<Option<Blob>, CodecError> {
        let (Some(dict), Ok((TAG_RAW, version, payload))) = (self.dict.get(), parts(blob)) else {
            return Ok(None);
        };
        let mut guard = self.write.lock();
        let ctx = &mut *guard;
        ctx.serialized.clear();
        ctx.serialized.extend_from_slice(payload);
        Self::pack(Some(dict), ctx, version).map(Some)
    }
}

/// Loads `dict` into the compression context (sticky: used for every later frame), with a
/// content checksum so corrupt stored bytes are detected, and without the dictionary id.
fn load(cctx: &mut CCtx<'static>, dict: &Dictionary, level: i32) -> Result<(), CodecError> {
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

/// A codec for objects of type `K`, type-erased so the indexer needs no serde bounds.
pub(crate) trait ObjectCodec<K>: Send + Sync {
    /// Encodes `obj`, whose resourceVersion is `version`, into a blob (which keeps `version`
    /// in its header, see [`stored_version`]).
    fn encode(&self, obj: &K, version: &str) -> Result<Blob, CodecError>;
    /// Decodes a blob.
    fn decode(&self, blob: &[u8]) -> Result<K, CodecError>;
    /// The object `blob` (stored under `key`) stands for, its body left in `blob` until it is
    /// read, if `K` can do that (a `Lazy`); `None` otherwise.
    fn decode_later(&self, key: &str, blob: &Blob) -> Option<K>;
    /// The type-independent part.
    fn core(&self) -> &Codec;
}

/// [`ObjectCodec`] for a serde type.
pub(crate) struct TypedCodec<K> {
    codec: Arc<Codec>,
    _k: PhantomData<fn() -> K>,
}

impl<K> TypedCodec<K> {
    pub(crate) fn new(opts: &CompactOptions) -> Result<Self, CodecError> {
        Ok(TypedCodec {
            codec: Arc::new(Codec::new(opts)?),
            _k: PhantomData,
        })
    }
}

/// A `Lazy`'s body left in its blob: decompressed and read when first needed.
struct LaterBody {
    key: Box<str>,
    blob: Blob,
    codec: Arc<Codec>,
}

impl StoredBody for LaterBody {
    fn read(&self) -> Result<Lazy<()>, String> {
        self.codec
            .decode(&self.blob)
            .map_err(|e| format!("{}: {e}", self.key))
    }
}

impl<K: Serialize + DeserializeOwned> ObjectCodec<K> for TypedCodec<K> {
    fn encode(&self, obj: &K, version: &str) -> Result<Blob, CodecError> {
        self.codec.encode(obj, version)
    }
    fn decode(&self, blob: &[u8]) -> Result<K, CodecError> {
        self.codec.decode(blob)
    }
    fn decode_later(&self, key: &str, blob: &Blob) -> Option<K> {
        deferred(|| {
            Arc::new(LaterBody {
                key: key.into(),
                blob: Arc::clone(blob),
                codec: Arc::clone(&self.codec),
            })
        })
    }
    fn core(&self) -> &Codec {
        &self.codec
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;

    use super::*;
    use crate::cache::test_util::pod;

    fn trained(format: Format) -> TypedCodec<Pod> {
        let c = TypedCodec::<Pod>::new(&CompactOptions::default().format(format)).unwrap();
        let samples: Vec<Blob> = (0..300)
            .map(|i| {
                let p = pod(&format!("ns-{}", i % 7), &format!("p-{i}"), &[("app", "x")]);
                c.encode(&p, "7").unwrap()
            })
            .collect();
        assert!(c.core().train(&samples));
        c
    }

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

    #[test]
    fn round_trips_raw_and_compressed_in_both_formats() {
        for format in [Format::MessagePack, Format::Json] {
            let c = TypedCodec::<Pod>::new(&CompactOptions::default().format(format)).unwrap();
            let p = pod("ns", "a", &[("app", "web")]);
            let raw = c.encode(&p, "7").unwrap();
            assert_eq!(raw[0], TAG_RAW);
            assert_eq!(c.decode(&raw).unwrap(), *p);
            let c = trained(format);
            let z = c.encode(&p, "7").unwrap();
            assert_eq!(z[0], TAG_ZSTD);
            assert_eq!(c.decode(&z).unwrap(), *p);
            // A raw blob of the same codec still decodes, and recompresses.
            let again = c.core().recompress(&raw).unwrap().unwrap();
            assert_eq!(c.decode(&again).unwrap(), *p);
        }
    }

    #[test]
    fn the_resource_version_is_kept_in_the_header_and_survives_recompression() {
        let c = TypedCodec::<Pod>::new(&CompactOptions::default()).unwrap();
        let p = pod("ns", "a", &[("app", "web")]);
        let raw = c.encode(&p, "12345").unwrap();
        assert_eq!(stored_version(&raw), Some("12345"));
        assert_eq!(stored_version(&c.encode(&p, "").unwrap()), Some(""));
        // Too long to keep: read from the object instead.
        let long = "9".repeat(300);
        let blob = c.encode(&p, &long).unwrap();
        assert_eq!(stored_version(&blob), None);
        assert_eq!(c.decode(&blob).unwrap(), *p);
        let c = trained(Format::MessagePack);
        let z = c.encode(&p, "77").unwrap();
        assert_eq!((z[0], stored_version(&z)), (TAG_ZSTD, Some("77")));
        assert_eq!(c.decode(&z).unwrap(), *p);
        let again = c.core().recompress(&raw).unwrap().unwrap();
        assert_eq!(
            (again[0], stored_version(&again)),
            (TAG_ZSTD, Some("12345"))
        );
        // A malformed header keeps no version.
        assert_eq!(stored_version(&[TAG_RAW, 9, b'1']), None);
        assert_eq!(stored_version(&[]), None);
    }

    #[test]
    fn corrupt_blobs_are_typed_errors() {
        let c = trained(Format::MessagePack);
        let p = pod("ns", "a", &[("app", "web")]);
        let good = c.encode(&p, "7").unwrap();
        let mut cases: Vec<Vec<u8>> = vec![
            vec![],
            vec![7, 1, 2],
            vec![TAG_RAW, 0xc1],
            vec![TAG_ZSTD, 1, 2, 3],
        ];
        let mut flipped = good.to_vec();
        let last = flipped.len() - 1;
        flipped[last] ^= 0xff;
        cases.push(flipped);
        let mut truncated = good.to_vec();
        truncated.truncate(good.len() / 2);
        cases.push(truncated);
        for case in cases {
            assert!(
                matches!(c.decode(&case), Err(CodecError::Decode(_))),
                "{case:?} decoded"
            );
        }
        // Compressed blobs need the dictionary.
        let untrained = TypedCodec::<Pod>::new(&CompactOptions::default()).unwrap();
        assert!(matches!(
            untrained.decode(&good),
            Err(CodecError::Decode(_))
        ));
    }
}
