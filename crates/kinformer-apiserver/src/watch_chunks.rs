//! How the server's watch streams cut their events into chunks: whether watchers keep up event
//! by event.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

/// How the server's watch streams cut their events into chunks (a chunk is what a stream
/// hands to the connection at once). A stream drains the history written since its last
/// chunk (up to 512 events at a time) and sends what it gathered: a watcher that keeps up gets
/// one event per chunk, one that reads late gets the events written meanwhile in one chunk.
/// Counted over all the server's watches.
#[derive(Debug, Default)]
pub struct WatchChunks {
    chunks: AtomicU64,
    by_size: [AtomicU64; 4],
}

impl WatchChunks {
    /// The first chunk size of each of [`WatchChunkCounts::events_by_chunk_size`]'s classes.
    pub const CLASSES: [usize; 4] = [1, 2, 8, 64];

    /// Counts a chunk of `events` events (none: nothing is counted).
    pub fn record(&self, events: usize) {
        if events == 0 {
            return;
        }
        let class = Self::CLASSES
            .iter()
            .rposition(|&first| events >= first)
            .unwrap_or(0);
        self.chunks.fetch_add(1, Ordering::Relaxed);
        self.by_size[class].fetch_add(events as u64, Ordering::Relaxed);
    }

    /// The counts so far.
    pub fn counts(&self) -> WatchChunkCounts {
        WatchChunkCounts {
            chunks: self.chunks.load(Ordering::Relaxed),
            events_by_chunk_size: std::array::from_fn(|i| self.by_size[i].load(Ordering::Relaxed)),
        }
    }
}

/// A reading of [`WatchChunks`].
///
/// ```
/// use kinformer_apiserver::watch::{WatchChunkCounts, WatchChunks};
///
/// let chunks = WatchChunks::default();
/// chunks.record(1);
/// let before = chunks.counts();
/// chunks.record(1);
/// chunks.record(30);
/// let round = chunks.counts().since(&before);
/// assert_eq!(round.chunks, 2);
/// assert_eq!(round.events(), 31);
/// assert_eq!(round.events_by_chunk_size, [1, 0, 30, 0]);
/// assert_eq!(WatchChunkCounts::class_name(2), "8–63");
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchChunkCounts {
    /// Chunks that carried at least one event.
    pub chunks: u64,
    /// Events, by the number of events in their chunk: 1, 2–7, 8–63, 64 or more (see
    /// [`WatchChunks::CLASSES`]).
    pub events_by_chunk_size: [u64; 4],
}

impl WatchChunkCounts {
    /// All events counted.
    pub fn events(&self) -> u64 {
        self.events_by_chunk_size.iter().sum()
    }

    /// The name of size class `i` of [`events_by_chunk_size`](Self::events_by_chunk_size):
    /// `1`, `2–7`, `8–63`, `64 or more`.
    pub fn class_name(i: usize) -> String {
        let classes = WatchChunks::CLASSES;
        match (classes.get(i), classes.get(i + 1)) {
            (Some(first), Some(next)) if next - 1 == *first => first.to_string(),
            (Some(first), Some(next)) => format!("{first}–{}", next - 1),
            (Some(first), None) => format!("{first} or more"),
            (None, _) => String::new(),
        }
    }

    /// The counts since the reading `earlier`.
    pub fn since(&self, earlier: &WatchChunkCounts) -> WatchChunkCounts {
        WatchChunkCounts {
            chunks: self.chunks.saturating_sub(earlier.chunks),
            events_by_chunk_size: std::array::from_fn(|i| {
                self.events_by_chunk_size[i].saturating_sub(earlier.events_by_chunk_size[i])
            }),
        }
    }
}
