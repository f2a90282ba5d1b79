//! How a compact indexer encodes objects.

use std::sync::Arc;

/// The serialization inside a compact blob (before compression).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Format {
    /// MessagePack with field names (`rmp-serde`'s named encoding): smaller and faster to
    /// decode than JSON for Kubernetes objects.
    #[default]
    MessagePack,
    /// JSON, as served by the API server.
    Json,
}

/// Options of a compact [`Indexer`](crate::cache::store::Indexer).
///
/// ```
/// use kinformer::cache::store::{CompactOptions, Format};
/// let opts = CompactOptions::default().train_after(500).format(Format::Json);
/// assert_eq!(opts.train_after_objects(), 500);
/// ```
#[derive(Clone)]
pub struct CompactOptions {
    pub(crate) format: Format,
    pub(crate) level: i32,
    pub(crate) train_after: usize,
    pub(crate) dictionary_size: usize,
    pub(crate) dictionary: Option<Arc<[u8]>>,
    pub(crate) hot_objects: usize,
    pub(crate) retrain: bool,
}

impl std::fmt::Debug for CompactOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompactOptions")
            .field("format", &self.format)
            .field("level", &self.level)
            .field("train_after", &self.train_after)
            .field("dictionary_size", &self.dictionary_size)
            .field("dictionary", &self.dictionary.as_ref().map(|d| d.len()))
            .field("hot_objects", &self.hot_objects)
            .field("retrain", &self.retrain)
            .finish()
    }
}

impl Default for CompactOptions {
    /// MessagePack, zstd level 3, a 16 KiB dictionary trained after 1,000 objects and
    /// retrained when the writes drift from it, no hot-object cache.
    fn default() -> Self {
        CompactOptions {
            format: Format::MessagePack,
            level: 3,
            train_after: 1_000,
            dictionary_size: 16 * 1024,
            dictionary: None,
            hot_objects: 0,
            retrain: true,
        }
    }
}

impl CompactOptions {
    /// The serialization format.
    pub fn format(mut self, format: Format) -> Self {
        self.format = format;
        self
    }

    /// The zstd compression level (1–19; higher is smaller and slower to write, reads barely
    /// change). Up to level 3 the match-finding tables are sized for the dictionary (a
    /// quarter entry per dictionary byte) rather than for a long stream, since every object
    /// is compressed on its own against the dictionary.
    pub fn level(mut self, level: i32) -> Self {
        self.level = level;
        self
    }

    /// Trains the dictionary once this many objects are stored (or given to a `replace`);
    /// `0` never trains (objects stay uncompressed unless a dictionary is given).
    pub fn train_after(mut self, objects: usize) -> Self {
        self.train_after = objects;
        self
    }

    /// The number of objects after which the dictionary is trained.
    pub fn train_after_objects(&self) -> usize {
        self.train_after
    }

    /// The maximum size of a trained dictionary in bytes.
    pub fn dictionary_size(mut self, bytes: usize) -> Self {
        self.dictionary_size = bytes;
        self
    }

    /// Uses this zstd dictionary from the start instead of training one (e.g. one shared by
    /// several indexers of the same kind of object).
    pub fn dictionary(mut self, dictionary: impl Into<Arc<[u8]>>) -> Self {
        self.dictionary = Some(dictionary.into());
        self
    }

    /// Keeps up to `objects` decoded objects for reads (`0`, the default, keeps none). A read
    /// of a cached object costs a lookup instead of a decode, and so does the old object of an
    /// update; written objects enter the cache, and CLOCK eviction keeps the ones read since
    /// the hand last passed. The cache holds typed objects, so it adds up to `objects` times
    /// a typed object's decoded size to the compact store's memory; lists read past it.
    ///
    /// ```
    /// use kinformer::cache::store::CompactOptions;
    /// let opts = CompactOptions::default().hot_objects(1_024);
    /// assert_eq!(opts.hot_objects_capacity(), 1_024);
    /// ```
    pub fn hot_objects(mut self, objects: usize) -> Self {
        self.hot_objects = objects;
        self
    }

    /// The capacity of the hot-object cache.
    pub fn hot_objects_capacity(&self) -> usize {
        self.hot_objects
    }

    /// Whether a new dictionary is trained when the objects written no longer compress as
    /// well with the current one as expected (on by default).
    ///
    /// Each window of writes (`train_after` of them, at least 256) is compared with what the
    /// dictionary made of samples it was not trained on; two windows in a row that take 40 %
    /// more bytes per input byte start a new dictionary, trained on the next window's objects
    /// (at most 100 dictionaries' worth of bytes) on a thread of its own while writes go on
    /// with the current one. It is then tried on the next quarter window of writes, each
    /// compressed both ways, and used from then on only if it stores them in at most 85 % of
    /// the bytes; if not, the current one stays and twice as many drifted windows are needed
    /// before the next try. Objects already stored keep the dictionary they were written with,
    /// so every dictionary used stays in memory (16 KiB each by default), at most eight.
    ///
    /// Training runs on a thread of its own, with scratch memory of a few times the samples'
    /// size while it runs. (What retraining saves on the E1C workload: `docs/benchmarks.md`.)
    ///
    /// ```
    /// use kinformer::cache::store::CompactOptions;
    /// let opts = CompactOptions::default().retrain(false);
    /// assert!(!opts.retrains());
    /// assert!(CompactOptions::default().retrains());
    /// ```
    pub fn retrain(mut self, retrain: bool) -> Self {
        self.retrain = retrain;
        self
    }

    /// Whether dictionaries are retrained (see [`retrain`](Self::retrain)).
    pub fn retrains(&self) -> bool {
        self.retrain
    }
}
