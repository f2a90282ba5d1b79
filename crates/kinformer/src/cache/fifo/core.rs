//! What [`DeltaFifo`](super::DeltaFifo) and [`RealFifo`](super::RealFifo) share: the lock,
//! waking poppers, closing, the pop loop and the accounting behind `has_synced`.
//!
//! `has_synced` turns true once the first `replace` happened and every item queued up to it
//! has been popped *and processed*: popped initial items are "in flight" until the pop's
//! `process` returns (or panics).

use parking_lot::{Mutex, MutexGuard};
use tokio::sync::Notify;

use crate::cache::fifo::Delta;
use crate::cache::fifo::Popped;
use crate::cache::meta::{CacheError, ObjectKey};
use crate::hash::FastSet;

/// Implements [`DeltaQueue`](crate::cache::fifo::DeltaQueue) for a FIFO over its inherent
/// `pop_with`, `has_synced`, `close` and `len` and its [`FifoCore`] field `core`; both FIFOs
/// get the trait this one way.
macro_rules! impl_delta_queue {
    ($fifo:ident) => {
        impl<K: Resource + Send + Sync + 'static> DeltaQueue<K> for $fifo<K> {
            fn pop<'a>(&'a self, process: ProcessFn<'a, K>) -> PopFuture<'a> {
                Box::pin(async move { self.pop_with(process).await })
            }
            fn has_synced(&self) -> bool {
                $fifo::has_synced(self)
            }
            fn close(&self) {
                $fifo::close(self)
            }
            fn is_closed(&self) -> bool {
                self.core.lock().closed
            }
            fn len(&self) -> usize {
                $fifo::len(self)
            }
            fn room_for<'a>(
                &'a self,
                limit: usize,
            ) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
                Box::pin(self.core.room_for(limit, $fifo::<K>::queued_len))
            }
        }
    };
}
pub(crate) use impl_delta_queue;

/// The state under a FIFO's lock; `data` is the queue's own content.
pub(crate) struct Locked<D> {
    pub(crate) data: D,
    /// The first `replace` happened.
    pub(crate) populated: bool,
    /// Items of the initial population not yet popped.
    pub(crate) initial_population_count: usize,
    /// Items of the initial population popped but still being processed.
    pub(crate) initial_in_flight: usize,
    pub(crate) closed: bool,
    /// A paged replace in progress.
    pub(crate) paged: Option<PagedReplace>,
}

/// A paged replace in progress (see
/// [`ReflectorSink::begin_paged_replace`](crate::cache::fifo::ReflectorSink::begin_paged_replace)).
#[derive(Debug, Default)]
pub(crate) struct PagedReplace {
    /// The keys listed so far; `None` when the replace began on an empty queue and an empty
    /// consumer store, so that everything queued or known at its end came from its pages and
    /// nothing needs a tombstone.
    pub(crate) seen: Option<FastSet<ObjectKey>>,
}

impl PagedReplace {
    /// Records a listed key.
    pub(crate) fn saw(&mut self, key: &ObjectKey) {
        if let Some(seen) = &mut self.seen {
            seen.insert(key.clone());
        }
    }
}

impl<D> Locked<D> {
    pub(crate) fn has_synced(&self) -> bool {
        self.populated && self.initial_population_count == 0 && self.initial_in_flight == 0
    }

    /// Marks the first population done once `items` items are queued (later calls change
    /// nothing).
    pub(crate) fn populate(&mut self, items: usize) {
        if !self.populated {
            self.initial_population_count = items;
        }
        self.populated = true;
    }
}

/// The lock and the wake-up of a FIFO.
pub(crate) struct FifoCore<D> {
    state: Mutex<Locked<D>>,
    notify: Notify,
    /// Notified after every pop: wakes a reflector waiting for room for its next page.
    popped: Notify,
    /// Relists go page by page too (not only the first list).
    pub(crate) paged_relists: bool,
}

impl<D> FifoCore<D> {
    pub(crate) fn new(data: D) -> Self {
        FifoCore {
            state: Mutex::new(Locked {
                data,
                populated: false,
                initial_population_count: 0,
                initial_in_flight: 0,
                closed: false,
                paged: None,
            }),
            notify: Notify::new(),
            popped: Notify::new(),
            paged_relists: false,
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Locked<D>> {
        self.state.lock()
    }

    /// Locks, refusing a closed queue.
    pub(crate) fn lock_open(&self) -> Result<MutexGuard<'_, Locked<D>>, CacheError> {
        let s = self.state.lock();
        if s.closed {
            return Err(CacheError::Closed);
        }
        Ok(s)
    }

    /// Wakes every waiting popper (call after queuing, with the lock released).
    pub(crate) fn wake(&self) {
        self.notify.notify_waiters();
    }

    pub(crate) fn close(&self) {
        self.state.lock().closed = true;
        self.wake();
        self.popped.notify_waiters();
    }

    /// Ends the paged replace: `tombstone` queues deletions for what is queued or known but
    /// was not listed (only when the replace did not begin fresh); in the first list,
    /// everything `queued` counts then belongs to the first population, which is complete.
    ///
    /// # Errors
    /// [`CacheError::Closed`]; [`CacheError::NoPagedReplace`] if none was begun.
    pub(crate) fn finish_paged(
        &self,
        tombstone: impl FnOnce(&mut D, &FastSet<ObjectKey>),
        queued: impl FnOnce(&D) -> usize,
    ) -> Result<(), CacheError> {
        let mut s = self.lock_open()?;
        let paged = s.paged.take().ok_or(CacheError::NoPagedReplace)?;
        if let Some(seen) = paged.seen {
            tombstone(&mut s.data, &seen);
        }
        if !s.populated {
            s.initial_population_count = queued(&s.data);
            s.populated = true;
        }
        drop(s);
        self.wake();
        Ok(())
    }

    /// Waits until fewer than `limit` items of the first population are queued (after it,
    /// fewer than `limit` items in all, as `queued` counts them: a paged relist), or the
    /// queue is closed.
    ///
    /// # Cancel safety
    /// Cancel-safe: it only waits.
    pub(crate) async fn room_for(&self, limit: usize, queued: fn(&D) -> usize) {
        loop {
            let popped = self.popped.notified();
            tokio::pin!(popped);
            popped.as_mut().enable();
            {
                let s = self.state.lock();
                let waiting = if s.populated {
                    queued(&s.data)
                } else {
                    s.initial_population_count
                };
                if s.closed || waiting < limit {
                    return;
                }
            }
            popped.await;
        }
    }

    pub(crate) fn has_synced(&self) -> bool {
        self.state.lock().has_synced()
    }

    /// Begins a paged replace if the first population is still to come, or for a relist
    /// with [`paged_relists`](Self::paged_relists) set; `fresh` says whether the queue and the
    /// consumer's store are empty (then no key needs remembering).
    pub(crate) fn begin_paged(&self, fresh: impl FnOnce(&D) -> bool) -> bool {
        let mut s = self.state.lock();
        if s.closed || (s.populated && !self.paged_relists) {
            return false;
        }
        // Items of an earlier, failed list still being processed are not in the consumer's
        // store yet: the replace is not fresh then.
        let fresh = fresh(&s.data) && s.initial_in_flight == 0;
        let seen = (!fresh).then(FastSet::default);
        s.paged = Some(PagedReplace { seen });
        true
    }

    /// Waits until `take` yields a batch (deltas and how many queued items they were), then
    /// calls `process` with it, counting initial-population items in flight meanwhile.
    /// `take` is called under the lock; `None` means nothing is queued.
    ///
    /// # Errors
    /// [`CacheError::Closed`] when closed and nothing is queued.
    ///
    /// # Cancel safety
    /// Cancel-safe: taking and `process` happen synchronously in the poll that completes.
    pub(crate) async fn pop_with<K, R>(
        &self,
        mut take: impl FnMut(&mut Locked<D>) -> Option<(Vec<Delta<K>>, usize)>,
        process: impl FnOnce(Popped<K>) -> R,
    ) -> Result<R, CacheError> {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let popped = {
                let mut s = self.state.lock();
                let is_in_initial_list = !s.has_synced();
                // A paged replace (a relist) may be waiting for room too.
                let paging = s.paged.is_some();
                match take(&mut s) {
                    Some((deltas, items)) => {
                        let counted = items.min(s.initial_population_count);
                        s.initial_population_count -= counted;
                        s.initial_in_flight += counted;
                        let popped = Popped {
                            deltas,
                            is_in_initial_list,
                        };
                        Some((popped, counted, paging))
                    }
                    None if s.closed => return Err(CacheError::Closed),
                    None => None,
                }
            };
            if let Some((popped, counted, paging)) = popped {
                if counted > 0 || paging {
                    self.popped.notify_waiters();
                }
                let _done = InFlight {
                    state: &self.state,
                    counted,
                };
                return Ok(process(popped));
            }
            notified.await;
        }
    }
}

/// Marks initial-population items processed when dropped (also if `process` panics).
struct InFlight<'a, D> {
    state: &'a Mutex<Locked<D>>,
    counted: usize,
}

impl<D> Drop for InFlight<'_, D> {
    fn drop(&mut self) {
        if self.counted > 0 {
            let mut s = self.state.lock();
            s.initial_in_flight = s.initial_in_flight.saturating_sub(self.counted);
        }
    }
}
