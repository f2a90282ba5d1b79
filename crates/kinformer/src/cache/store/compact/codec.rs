//! Encoding objects to compact blobs and back.

use std::cell::RefCell;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;

use parking_lot::{Mutex, RwLock};
use serde::Serialize;
use serde::de::DeserializeOwned;
use zstd::zstd_safe::{self, CCtx, DCtx};

use crate::cache::store::CodecError;
use crate::cache::store::compact::dictionary::Dictionary;
use crate::cache::store::compact::drift::Drift;
use crate::cache::store::compact::trial::{Trial, Verdict};
use crate::cache::store::{CompactOptions, Format};
use crate::codec::lazy::{Lazy, StoredBody, deferred};

/// One stored object: a tag byte, the object's resourceVersion (a length byte, then its bytes),
/// then the payload.
pub(crate) type Blob = Arc<[u8]>;

const TAG_RAW: u8 = 0;
/// Compressed with the first dictionary; tag `TAG_ZSTD + g` with dictionary `g` (of at most
/// [`MAX_DICTIONARIES`]).
const TAG_ZSTD: u8 = 1;
/// The most dictionaries one codec makes: the first and its successors after drift (every
/// one is kept, since objects stored with it are not re-encoded).
pub(crate) const MAX_DICTIONARIES: usize = 8;

/// The tag of blobs compressed with dictionary `generation`.
fn tag_of(generation: usize) -> u8 {
    TAG_ZSTD + generation as u8
}
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
    /// The tag of the dictionary loaded in `cctx` (none: blobs are stored raw).
    current: Option<u8>,
    /// The size of the last zstd frame written (the blob without its header).
    frame_len: usize,
    drift: Drift,
    /// A new dictionary on trial against the one in use.
    trial: Option<Trial>,
}

/// A trained dictionary and its baseline (see [`train_measured`]).
type Measured = (Dictionary, Option<f64>);

/// A dictionary trained on a thread of its own, handed to the next write.
#[derive(Default)]
struct Pending {
    ready: AtomicBool,
    result: Mutex<Option<Result<Dictionary, CodecError>>>,
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
    retrain: bool,
    /// Every dictionary made, by generation (the last one compresses new writes).
    dicts: RwLock<Vec<Arc<Dictionary>>>,
    /// `dicts.len()`, read without the lock.
    generations: AtomicUsize,
    /// The number of samples of the last failed training (0: none failed).
    failed_at: AtomicUsize,
    write: Mutex<WriteCtx>,
    pending: Arc<Pending>,
    /// The thread training the next dictionary, if one was started.
    trainer: Mutex<Option<JoinHandle<()>>>,
}

impl fmt::Debug for Codec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Codec")
            .field("format", &self.format)
            .field("dictionaries", &*self.dicts.read())
            .finish()
    }
}

impl Codec {
    pub(crate) fn new(opts: &CompactOptions) -> Result<Self, CodecError> {
        let cctx = CCtx::try_create()
            .ok_or_else(|| CodecError::Encode("cannot create a zstd context".into()))?;
        let mut dicts = Vec::new();
        let mut write = WriteCtx {
            cctx,
            serialized: Vec::new(),
            compressed: Vec::new(),
            current: None,
            frame_len: 0,
            drift: Drift::new(opts.train_after, opts.dictionary_size.saturating_mul(100)),
            trial: None,
        };
        if let Some(raw) = &opts.dictionary {
            let d = Dictionary::new(raw)?;
            d.load(&mut write.cctx, opts.level)?;
            dicts.push(Arc::new(d));
            write.current = Some(tag_of(0));
        }
        Ok(Codec {
            format: opts.format,
            level: opts.level,
            train_after: opts.train_after,
            dictionary_size: opts.dictionary_size,
            retrain: opts.retrain,
            generations: AtomicUsize::new(dicts.len()),
            dicts: RwLock::new(dicts),
            failed_at: AtomicUsize::new(0),
            write: Mutex::new(write),
            pending: Arc::default(),
            trainer: Mutex::new(None),
        })
    }

    /// The size of the dictionary in use, if any.
    pub(crate) fn dictionary_len(&self) -> Option<usize> {
        self.dicts.read().last().map(|d| d.len)
    }

    /// The number of dictionaries made so far (the first one and its successors).
    pub(crate) fn dictionaries(&self) -> usize {
        self.generations.load(Ordering::Acquire)
    }

    fn encode<K: Serialize>(&self, obj: &K, version: &str) -> Result<Blob, CodecError> {
        let mut guard = self.write.lock();
        let ctx = &mut *guard;
        self.install_pending(ctx);
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
        let blob = Self::pack(ctx, Some(version))?;
        if self.retrain && ctx.current.is_some() {
            self.observe_write(ctx);
        }
        Ok(blob)
    }

    /// Feeds the write just compressed to the trial of a new dictionary if one is on, else
    /// to the drift detector.
    fn observe_write(&self, ctx: &mut WriteCtx) {
        let Some(trial) = ctx.trial.as_mut() else {
            if let Some(samples) = ctx.drift.observe(&ctx.serialized, ctx.frame_len) {
                self.start_training(samples, ctx);
            }
            return;
        };
        match trial.observe(&ctx.serialized, ctx.frame_len) {
            Ok(false) => {}
            Ok(true) => {
                let Some(trial) = ctx.trial.take() else {
                    return;
                };
                match trial.verdict() {
                    Verdict::Adopt {
                        dict,
                        cctx,
                        baseline,
                    } => {
                        let mut dicts = self.dicts.write();
                        let generation = dicts.len();
                        dicts.push(Arc::new(dict));
                        self.generations.store(dicts.len(), Ordering::Release);
                        ctx.cctx = cctx;
                        ctx.current = Some(tag_of(generation));
                        ctx.drift.loaded(Some(baseline));
                    }
                    Verdict::Reject { baseline } => ctx.drift.kept(baseline),
                }
            }
            Err(e) => {
                tracing::debug!(error = %e, "compact indexer: the trial of a new dictionary failed");
                ctx.trial = None;
                ctx.drift.training_failed();
            }
        }
    }

    /// Starts training a successor dictionary on `samples` on a thread of its own; the first
    /// write after it is done puts it on trial ([`Self::install_pending`]).
    fn start_training(&self, samples: Vec<Vec<u8>>, ctx: &mut WriteCtx) {
        if self.dictionaries() >= MAX_DICTIONARIES {
            tracing::debug!(
                dictionaries = MAX_DICTIONARIES,
                "compact indexer: writes drifted, but no more dictionaries are made"
            );
            ctx.drift.stop();
            return;
        }
        let pending = Arc::clone(&self.pending);
        let size = self.dictionary_size;
        let spawned = std::thread::Builder::new()
            .name("kinformer-dict".into())
            .spawn(move || {
                let trained = Dictionary::train(&samples, size);
                *pending.result.lock() = Some(trained);
                pending.ready.store(true, Ordering::Release);
            });
        match spawned {
            Ok(handle) => *self.trainer.lock() = Some(handle),
            Err(e) => {
                tracing::debug!(error = %e, "compact indexer: cannot start training a dictionary");
                ctx.drift.training_failed();
            }
        }
    }

    /// Puts a dictionary trained since the last write, if any, on trial: the next writes
    /// tell whether it replaces the one in use ([`Trial`]).
    fn install_pending(&self, ctx: &mut WriteCtx) {
        if !self.pending.ready.swap(false, Ordering::Acquire) {
            return;
        }
        let Some(result) = self.pending.result.lock().take() else {
            return;
        };
        let writes = (ctx.drift.window() / 4).max(MIN_TRIAL_WRITES);
        match result.and_then(|d| Trial::new(d, self.level, writes)) {
            Ok(trial) => ctx.trial = Some(trial),
            Err(e) => {
                tracing::debug!(error = %e, "compact indexer: keeping the dictionary in use");
                ctx.drift.training_failed();
            }
        }
    }

    /// Waits for the training started last (tests).
    #[cfg(test)]
    pub(crate) fn finish_training(&self) {
        let handle = self.trainer.lock().take();
        if let Some(handle) = handle {
            handle.join().expect("training thread");
        }
    }

    /// Wraps `ctx.serialized` into a blob, compressing it if a dictionary is loaded;
    /// `version` goes into the header when given and short enough.
    fn pack(ctx: &mut WriteCtx, version: Option<&str>) -> Result<Blob, CodecError> {
        let dict = ctx.current;
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
        ctx.compressed.push(dict.unwrap_or(TAG_RAW));
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
        ctx.frame_len = ctx
            .cctx
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
            tag if tag >= TAG_ZSTD && usize::from(tag - TAG_ZSTD) < MAX_DICTIONARIES => {
                let dict = self
                    .dicts
                    .read()
                    .get(usize::from(tag - TAG_ZSTD))
                    .cloned()
                    .ok_or_else(|| {
                        CodecError::Decode(format!("blob tag {tag}: no such dictionary"))
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
            && self.dictionaries() == 0
            && stored
                >= self
                    .train_after
                    .max(self.failed_at.load(Ordering::Relaxed).saturating_mul(2))
    }

    /// Trains the dictionary from uncompressed blobs (tagged raw); returns whether a
    /// dictionary now exists. A failure is logged; objects stay uncompressed until a later
    /// training (with twice the samples) succeeds.
    pub(crate) fn train(&self, samples: &[Blob]) -> bool {
        if self.dictionaries() > 0 {
            return true;
        }
        let payloads: Vec<&[u8]> = samples
            .iter()
            .filter_map(|b| match parts(b) {
                Ok((TAG_RAW, _, p)) => Some(p),
                _ => None,
            })
            .collect();
        let trained = train_measured(&payloads, self.dictionary_size, self.level);
        let mut guard = self.write.lock();
        let ctx = &mut *guard;
        let trained = trained
            .and_then(|(d, baseline)| d.load(&mut ctx.cctx, self.level).map(|()| (d, baseline)));
        match trained {
            Ok((d, baseline)) => {
                tracing::debug!(
                    samples = payloads.len(),
                    bytes = d.len,
                    "compact indexer: dictionary trained"
                );
                let mut dicts = self.dicts.write();
                dicts.push(Arc::new(d));
                self.generations.store(dicts.len(), Ordering::Release);
                ctx.current = Some(tag_of(0));
                ctx.drift.loaded(baseline);
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
        let Ok((TAG_RAW, version, payload)) = parts(blob) else {
            return Ok(None);
        };
        let mut guard = self.write.lock();
        let ctx = &mut *guard;
        if ctx.current.is_none() {
            return Ok(None);
        }
        ctx.serialized.clear();
        ctx.serialized.extend_from_slice(payload);
        Self::pack(ctx, version).map(Some)
    }
}

/// A new dictionary is tried on a quarter of a drift window of writes, and at least this many.
const MIN_TRIAL_WRITES: usize = 64;

/// Below this many samples a dictionary is trained on all of them and has no baseline (the
/// drift detector measures one on the first window of writes).
const MIN_SAMPLES_FOR_BASELINE: usize = 20;

/// A dictionary trained on nine in ten of `samples`, and the compressed bytes per input byte
/// it makes of the tenth it did not see: the baseline the drift detector compares later writes
/// with, measured out of sample so that a dictionary which learned its samples by heart does
/// not make every later write look drifted.
fn train_measured<S: AsRef<[u8]>>(
    samples: &[S],
    size: usize,
    level: i32,
) -> Result<Measured, CodecError> {
    let measure = samples.len() >= MIN_SAMPLES_FOR_BASELINE;
    let held_out = |i: usize| measure && i.is_multiple_of(10);
    let training: Vec<&[u8]> = samples
        .iter()
        .enumerate()
        .filter(|(i, _)| !held_out(*i))
        .map(|(_, s)| s.as_ref())
        .collect();
    let dict = Dictionary::train(&training, size)?;
    if !measure {
        return Ok((dict, None));
    }
    let mut cctx = CCtx::try_create()
        .ok_or_else(|| CodecError::Encode("cannot create a zstd context".into()))?;
    dict.load(&mut cctx, level)?;
    let (mut input, mut output) = (0usize, 0usize);
    let mut frame = Vec::new();
    for sample in samples.iter().step_by(10) {
        let sample = sample.as_ref();
        frame.clear();
        frame.reserve(zstd_safe::compress_bound(sample.len()));
        let n = cctx.compress2(&mut frame, sample).map_err(|code| {
            CodecError::Encode(format!("zstd: {}", zstd_safe::get_error_name(code)))
        })?;
        (input, output) = (input + sample.len(), output + n);
    }
    Ok((dict, Some(output as f64 / input.max(1) as f64)))
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
    use crate::cache::store::compact::drift;
    use crate::test_support::pod;

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

    /// A pod unlike `trained`'s samples: annotations and containers they never had, the same
    /// in every such pod but for its index.
    fn drifted(i: usize) -> Pod {
        use k8s_openapi::api::core::v1::{Container, EnvVar, PodSpec};
        let mut p = (*pod(&format!("team-{}", i % 5), &format!("worker-{i}"), &[])).clone();
        p.metadata.annotations = Some(
            [
                ("deployment.kubernetes.io/revision", "17"),
                (
                    "checksum/config",
                    "the configuration of the worker fleet, version three",
                ),
                (
                    "owner",
                    "platform-team@example.com, escalation through the pager rota",
                ),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        );
        p.spec = Some(PodSpec {
            containers: vec![Container {
                name: "worker".into(),
                image: Some(format!("registry.example/fleet/worker:2.{}", i % 3)),
                env: Some(
                    ["QUEUE_URL", "LOG_LEVEL", "CACHE_DIRECTORY", "REGION"]
                        .iter()
                        .map(|n| EnvVar {
                            name: (*n).into(),
                            value: Some(format!("{}-value-for-{}", n.to_lowercase(), i % 2)),
                            ..EnvVar::default()
                        })
                        .collect(),
                ),
                ..Container::default()
            }],
            ..PodSpec::default()
        });
        p
    }

    fn trained_with(opts: CompactOptions) -> TypedCodec<Pod> {
        let c = TypedCodec::<Pod>::new(&opts).unwrap();
        let samples: Vec<Blob> = (0..300)
            .map(|i| {
                c.encode(&pod("ns", &format!("p-{i}"), &[("app", "x")]), "7")
                    .unwrap()
            })
            .collect();
        assert!(c.core().train(&samples));
        c
    }

    #[test]
    fn writes_that_drift_get_a_new_dictionary_and_every_blob_still_reads() {
        let window = drift::MIN_WINDOW;
        let c = trained_with(
            CompactOptions::default()
                .format(Format::Json)
                .train_after(window),
        );
        // Like the samples: the baseline window and one more; no new dictionary.
        let like: Vec<(Pod, Blob)> = (0..2 * window)
            .map(|i| {
                let p = (*pod("ns", &format!("q-{i}"), &[("app", "x")])).clone();
                let b = c.encode(&p, "8").unwrap();
                (p, b)
            })
            .collect();
        assert_eq!(c.core().dictionaries(), 1);
        // Two drifted windows, then the window collected as samples.
        let first: Vec<(Pod, Blob)> = (0..3 * window)
            .map(|i| {
                let p = drifted(i);
                let b = c.encode(&p, "9").unwrap();
                (p, b)
            })
            .collect();
        c.core().finish_training();
        // The trial: the next quarter window still uses the first dictionary.
        let encode = |range: std::ops::Range<usize>| -> Vec<(Pod, Blob)> {
            range
                .map(|i| {
                    let p = drifted(i);
                    let b = c.encode(&p, "9").unwrap();
                    (p, b)
                })
                .collect()
        };
        let trial = encode(3 * window..3 * window + window / 4);
        assert_eq!(c.core().dictionaries(), 2);
        let later = encode(4 * window..5 * window);
        assert!(first.iter().chain(&trial).all(|(_, b)| b[0] == TAG_ZSTD));
        assert!(later.iter().all(|(_, b)| b[0] == TAG_ZSTD + 1));
        let size = |blobs: &[(Pod, Blob)]| blobs.iter().map(|(_, b)| b.len()).sum::<usize>();
        let (before, after) = (size(&first[..window]), size(&later));
        assert!(
            after * 10 < before * 8,
            "the new dictionary stores drifted pods in {after} B, the old one in {before} B"
        );
        for (p, b) in like.iter().chain(&first).chain(&trial).chain(&later) {
            assert_eq!(&c.decode(b).unwrap(), p);
        }
    }

    #[test]
    fn a_new_dictionary_that_does_no_better_is_not_kept() {
        let window = drift::MIN_WINDOW;
        // Its first dictionary promised more than the plain pods give (it was given the
        // measured baseline of far smaller ones), so they look drifted; the dictionary
        // trained on them does no better, so it is dropped and the baseline corrected.
        let c = trained_with(
            CompactOptions::default()
                .format(Format::Json)
                .train_after(window),
        );
        c.core().write.lock().drift.loaded(Some(0.01));
        let plain = |i: usize| (*pod("ns", &format!("p-{}", 300 + i), &[("app", "x")])).clone();
        for i in 0..3 * window {
            c.encode(&plain(i), "8").unwrap();
        }
        c.core().finish_training();
        for i in 0..window / 4 {
            c.encode(&plain(i), "8").unwrap();
        }
        assert_eq!(c.core().dictionaries(), 1);
        // Corrected: more plain pods train nothing.
        for i in 0..4 * window {
            let b = c.encode(&plain(i), "8").unwrap();
            assert_eq!(b[0], TAG_ZSTD);
        }
        assert!(c.core().trainer.lock().is_none(), "a training started");
        assert_eq!(c.core().dictionaries(), 1);
    }

    #[test]
    fn without_retraining_drift_changes_nothing() {
        let window = drift::MIN_WINDOW;
        let c = trained_with(CompactOptions::default().train_after(window).retrain(false));
        for i in 0..window {
            c.encode(&pod("ns", &format!("q-{i}"), &[("app", "x")]), "8")
                .unwrap();
        }
        for i in 0..4 * window {
            let b = c.encode(&drifted(i), "9").unwrap();
            assert_eq!(b[0], TAG_ZSTD);
        }
        c.core().finish_training();
        assert_eq!(c.core().dictionaries(), 1);
    }

    /// Pod `i` like `trained`'s samples (kind `None`), or a drifted pod with an annotation
    /// of `kind`'s own words (no two kinds share any).
    fn of_kind(kind: Option<usize>, i: usize) -> Pod {
        let Some(kind) = kind else {
            return (*pod("ns", &format!("q-{i}"), &[("app", "x")])).clone();
        };
        let mut p = drifted(i);
        let mut x = (kind as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let words: String = (0..40)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                format!("{:x} ", x % 0xfff_ffff)
            })
            .collect();
        p.metadata
            .annotations
            .get_or_insert_default()
            .insert("kind-notes".into(), words);
        p
    }

    #[test]
    fn at_most_max_dictionaries_are_made() {
        let window = drift::MIN_WINDOW;
        let c = trained_with(
            CompactOptions::default()
                .format(Format::Json)
                .train_after(window),
        );
        // Each round: a window of the last kind (whose dictionary is tried and kept), then
        // pods of a new kind until a training for them starts (two drifted windows and one
        // of samples, give or take the windows' alignment) — at once waited for, so that its
        // trial is always in the next round, however quick the training thread is.
        let mut blobs = Vec::new();
        for round in 0..MAX_DICTIONARIES + 2 {
            let mut started = false;
            for i in 0..8 * window {
                let kind = if i < window {
                    round.checked_sub(1)
                } else {
                    Some(round)
                };
                let p = of_kind(kind, i);
                blobs.push((c.encode(&p, "1").unwrap(), p));
                if c.core().trainer.lock().is_some() {
                    started = true;
                    break;
                }
            }
            c.core().finish_training();
            // The last round's dictionary was kept in this round's first window; this
            // round's is loaded by the next write. None is trained once there are eight.
            assert_eq!(c.core().dictionaries(), round.min(MAX_DICTIONARIES - 1) + 1);
            assert_eq!(started, round + 1 < MAX_DICTIONARIES, "round {round}");
        }
        assert_eq!(c.core().dictionaries(), MAX_DICTIONARIES);
        let tags: std::collections::BTreeSet<u8> = blobs.iter().map(|(b, _)| b[0]).collect();
        assert_eq!(tags.len(), MAX_DICTIONARIES);
        for (b, p) in &blobs {
            assert_eq!(&c.decode(b).unwrap(), p);
        }
    }

    #[test]
    fn a_replaced_lazy_object_reads_from_its_own_dictionary_after_a_new_one() {
        use crate::cache::Lazy;
        let window = drift::MIN_WINDOW;
        let c =
            TypedCodec::<Lazy<Pod>>::new(&CompactOptions::default().train_after(window)).unwrap();
        let lazy = |p: &Pod| Lazy::<Pod>::from_json(serde_json::to_string(p).unwrap()).unwrap();
        let samples: Vec<Blob> = (0..300)
            .map(|i| {
                c.encode(&lazy(&pod("ns", &format!("p-{i}"), &[("app", "x")])), "7")
                    .unwrap()
            })
            .collect();
        assert!(c.core().train(&samples));
        let mut first = Vec::new();
        for i in 0..4 * window {
            let p = of_kind((i >= window).then_some(1), i);
            first.push((c.encode(&lazy(&p), "1").unwrap(), p));
        }
        c.core().finish_training();
        for i in 0..window / 4 {
            c.encode(&lazy(&of_kind(Some(1), i)), "2").unwrap();
        }
        assert_eq!(c.core().dictionaries(), 2);
        for (b, p) in first.iter().step_by(97) {
            let later = c.decode_later("ns/x", b).expect("a Lazy");
            assert_eq!(kube_core::Resource::meta(&later).name, p.metadata.name);
            assert_eq!(&*later.object().unwrap(), p);
        }
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
