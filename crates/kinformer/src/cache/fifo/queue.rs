//! The consumer side of a delta queue: the `DeltaQueue` trait both FIFOs implement.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use kube_core::Resource;

use crate::cache::fifo::{Delta, ReflectorSink};
use crate::cache::meta::{CacheError, ObjectKey};
use crate::cache::store::Indexer;

/// What one pop hands to the process function.
#[derive(Debug)]
pub struct Popped<K> {
    /// DeltaFIFO: all deltas of one key, oldest first. RealFIFO: up to the batch limit of
    /// consecutive deltas with distinct keys, or a single `ReplacedAll` / `SyncAll` /
    /// `Bookmark`.
    pub deltas: Vec<Delta<K>>,
    /// True while the initial list is being delivered (the queue has not synced yet).
    pub is_in_initial_list: bool,
}

/// The process function given to [`DeltaQueue::pop`].
pub type ProcessFn<'a, K> = &'a mut (dyn FnMut(Popped<K>) + Send);

/// A boxed pop future.
pub type PopFuture<'a> = Pin<Box<dyn Future<Output = Result<(), CacheError>> + Send + 'a>>;

/// A delta queue as the informer drives it: writes come through [`ReflectorSink`], the
/// informer's consumer stage pops. Implemented by [`DeltaFifo`](super::DeltaFifo) and
/// [`RealFifo`](super::RealFifo); object-safe, so an informer can hold `Arc<dyn DeltaQueue<K>>`.
pub trait DeltaQueue<K>: ReflectorSink<K> {
    /// Waits for the next item, removes it and calls `process` with it (without holding the
    /// queue's lock). Items popped during the initial list count towards `has_synced` only
    /// once `process` has returned.
    ///
    /// # Errors
    /// [`CacheError::Closed`] once the queue is closed *and* empty; items queued before
    /// `close` are still handed out.
    ///
    /// # Cancel safety
    /// Cancel-safe: an item is removed and processed synchronously in the same poll, so
    /// dropping the future either loses nothing (it was still waiting) or happens after
    /// `process` has run.
    fn pop<'a>(&'a self, process: ProcessFn<'a, K>) -> PopFuture<'a>;
    /// True once the first `replace` has happened and every item it queued (and everything
    /// queued before it) has been popped and processed.
    fn has_synced(&self) -> bool;
    /// Closes the queue: writes fail with [`CacheError::Closed`], waiting pops wake up and,
    /// once the queue is empty, return `Closed`.
    fn close(&self);
    /// True after [`close`](Self::close).
    fn is_closed(&self) -> bool;
    /// Number of items a pop could take (keys for DeltaFIFO, deltas for RealFIFO).
    fn len(&self) -> usize;
    /// True when nothing is queued.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Resolves once fewer than `limit` items of the first population wait to be popped (once
    /// populated: fewer than `limit` items in all, for a paged relist), or the queue is closed:
    /// a consumer that pops lets a paged list through a page at a time (see
    /// [`ReflectorSink::begin_paged_replace`]). The informer's reflector waits on it; a queue
    /// written by a bare reflector with nobody popping yet is never waited on.
    fn room_for<'a>(&'a self, limit: usize) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>>;
}

/// What a queue asks of the consumer's store: which keys it knows and their objects.
/// client-go's `KeyListerGetter`; implemented by [`Indexer`].
pub trait KnownObjects<K>: Send + Sync {
    /// Every known key.
    fn list_keys(&self) -> Vec<ObjectKey>;
    /// The object known under `key`.
    fn get_by_key(&self, key: &str) -> Option<Arc<K>>;
    /// True if nothing is known.
    fn is_empty(&self) -> bool {
        self.list_keys().is_empty()
    }
}

impl<K: Resource + Send + Sync> KnownObjects<K> for Indexer<K> {
    fn list_keys(&self) -> Vec<ObjectKey> {
        Indexer::list_keys(self)
    }
    fn get_by_key(&self, key: &str) -> Option<Arc<K>> {
        Indexer::get_by_key(self, key)
    }
    fn is_empty(&self) -> bool {
        Indexer::len(self) == 0
    }
}
