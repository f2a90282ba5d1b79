//! Errors of the cache module.

use crate::cache::meta::KeyError;

/// An error from a store, index or delta queue.
///
/// None of these is retryable as such: they describe bad input (an object without a name) or a
/// misuse (an unknown index); the caller decides whether to skip the object or stop.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CacheError {
    /// The object's key could not be computed (no name, for instance).
    #[error(transparent)]
    Key(#[from] KeyError),
    /// The queue was closed; no more deltas are accepted or handed out.
    #[error("queue closed")]
    Closed,
    /// A page of a paged replace arrived, but no paged replace was begun (see
    /// [`ReflectorSink::begin_paged_replace`](crate::cache::fifo::ReflectorSink::begin_paged_replace)).
    #[error("no paged replace in progress")]
    NoPagedReplace,
}
