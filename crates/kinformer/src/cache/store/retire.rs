//! Dropping the objects a write replaced off the writer's thread.
//!
//! A typed object such as a `Pod` is a large nested struct: freeing it piece by piece costs
//! more than the rest of an update. The writes that discard the object they replaced
//! ([`Indexer::add`](super::Indexer::add), [`Indexer::update`](super::Indexer::update)), and a
//! listener once its handler has seen a notification's objects, hand them to [`retire`]
//! instead, which drops them on a background thread:
//!
//! - Only a last reference is deferred; an object still shared elsewhere is released at once
//!   (that is only a reference count). Except with [`retire_unread`]: an indexer's typed write
//!   hands over every reference it takes out of its tables (the replaced object and its index
//!   entries) without reading the object's count, so the writer does not touch the replaced
//!   object's memory at all; the references of one object count as one object.
//! - Objects are collected per thread in batches of [`BATCH`] (of at most [`BATCH_REFS`]
//!   references); a full batch goes to one background thread per process, which drops it.
//! - Bounded: at most [`QUEUED`] batches wait for that thread. When they are all taken (the
//!   thread cannot keep up), or the thread cannot be started, the writer drops the batch
//!   itself. So at most `BATCH` objects per writing thread and `BATCH × QUEUED` queued ones
//!   live longer than they would have.
//! - A thread's partial batch is dropped when the thread exits.
//! - The dropping thread gives the emptied batches back (up to [`SPARES`]) for the writers to
//!   fill again, so a writer allocates no batch in the steady state. (A batch is 4 KiB: with
//!   glibc, each such allocation made the writer consolidate every small chunk the dropping
//!   thread had freed since the last one — under `perf`, a tenth of W4's update loop.)

use std::cell::Cell;
use std::sync::mpsc::{SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

/// An object waiting to be dropped.
type Garbage = Arc<dyn Send + Sync>;

/// Objects per batch.
const BATCH: usize = 64;
/// References per batch at most: several references of one object (an indexer's stored
/// value and its index entries, see [`retire_unread_also`]) count as one object.
const BATCH_REFS: usize = 4 * BATCH;
/// Batches that may wait for the dropping thread.
const QUEUED: usize = 16;
/// Emptied batches kept for the writers to fill again.
const SPARES: usize = QUEUED + 8;

/// The emptied batches (each with room for [`BATCH_REFS`] references).
static SPARE: Mutex<Vec<Vec<Garbage>>> = Mutex::new(Vec::new());

/// A thread's partial batch: the references, and the number of objects they are of.
#[derive(Default)]
struct Pending {
    batch: Vec<Garbage>,
    objects: usize,
}

thread_local! {
    /// This thread's partial batch.
    static PENDING: Cell<Pending> = const {
        Cell::new(Pending {
            batch: Vec::new(),
            objects: 0,
        })
    };
}

/// The dropping thread's queue; `None` if it could not be started.
static DROPPER: OnceLock<Option<SyncSender<Vec<Garbage>>>> = OnceLock::new();

fn dropper() -> Option<&'static SyncSender<Vec<Garbage>>> {
    DROPPER
        .get_or_init(|| {
            let (tx, rx) = sync_channel::<Vec<Garbage>>(QUEUED);
            std::thread::Builder::new()
                .name("kinformer-drop".into())
                .spawn(move || {
                    // A batch at a time, without yielding in between: a dropper that gives way
                    // per object falls behind whenever the machine is busy, and the writers
                    // then drop their objects themselves (once its queue is full).
                    for batch in rx {
                        give_back(batch);
                    }
                })
                .ok()?;
            Some(tx)
        })
        .as_ref()
}

/// Releases `obj`, which the caller no longer needs: dropped now if it is shared, else on the
/// background thread (see the module docs).
pub(crate) fn retire<K: Send + Sync + 'static>(obj: Arc<K>) {
    if Arc::strong_count(&obj) > 1 {
        return;
    }
    hand_over(obj, true);
}

/// Hands `obj` to the background thread without reading its reference count: this thread
/// does not touch the object's memory at all (the background thread drops the reference,
/// and the object with it if it was the last). For references to an object that this thread
/// has not read and need not (an indexer write's replaced object).
pub(crate) fn retire_unread<K: Send + Sync + 'static>(obj: Arc<K>) {
    hand_over(obj, true);
}

/// As [`retire_unread`], for another reference of the object this thread handed over last
/// (an index entry of an indexer write's replaced object): it does not count as one more
/// object towards the bound.
pub(crate) fn retire_unread_also<K: Send + Sync + 'static>(obj: Arc<K>) {
    hand_over(obj, false);
}

/// Puts `obj` in this thread's batch (as one more object if `counts`), and the batch on the
/// queue once full.
fn hand_over(obj: Garbage, counts: bool) {
    // If this thread is exiting, the closure (and `obj` with it) is dropped here.
    let full = PENDING.try_with(move |cell| {
        let mut pending = cell.take();
        if pending.batch.capacity() == 0 {
            pending.batch = take_spare();
        }
        pending.batch.push(obj);
        pending.objects += usize::from(counts);
        if pending.objects < BATCH && pending.batch.len() < BATCH_REFS {
            cell.set(pending);
            None
        } else {
            Some(pending.batch)
        }
    });
    if let Ok(Some(batch)) = full {
        // Dropped here if the queue is full or the thread is missing.
        match dropper() {
            Some(tx) => {
                if let Err(TrySendError::Full(batch) | TrySendError::Disconnected(batch)) =
                    tx.try_send(batch)
                {
                    give_back(batch);
                }
            }
            None => give_back(batch),
        }
    }
}

/// A spare batch, or a new one, with room for [`BATCH_REFS`] references.
fn take_spare() -> Vec<Garbage> {
    SPARE
        .lock()
        .pop()
        .unwrap_or_else(|| Vec::with_capacity(BATCH_REFS))
}

/// Drops the objects of `batch` (on this thread) and keeps it as a spare, if fewer than
/// [`SPARES`] are kept.
fn give_back(mut batch: Vec<Garbage>) {
    batch.clear();
    let mut spare = SPARE.lock();
    if spare.len() < SPARES {
        spare.push(batch);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Weak;

    use super::*;

    #[test]
    fn a_shared_object_is_only_released_and_a_retired_one_is_dropped_eventually() {
        let shared = Arc::new(String::from("shared"));
        retire(Arc::clone(&shared));
        assert_eq!(Arc::strong_count(&shared), 1);

        // A batch is handed over once full; the object is dropped on the other thread.
        let first = Arc::new(String::from("first"));
        let weak: Weak<String> = Arc::downgrade(&first);
        retire(first);
        for i in 0..BATCH {
            retire(Arc::new(i));
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while weak.upgrade().is_some() {
            assert!(std::time::Instant::now() < deadline, "never dropped");
            std::thread::yield_now();
        }
    }

    #[test]
    fn references_retired_unread_are_released_on_exit_and_the_last_drops_the_object() {
        // Three references of one object (an indexer's stored value and two index entries),
        // handed over unread by a thread that then exits: its partial batch releases them.
        let obj = Arc::new(String::from("replaced"));
        let weak = Arc::downgrade(&obj);
        let kept = Arc::clone(&obj);
        std::thread::spawn(move || {
            retire_unread(Arc::clone(&obj));
            retire_unread_also(Arc::clone(&obj));
            retire_unread_also(obj);
        })
        .join()
        .unwrap();
        assert_eq!(
            Arc::strong_count(&kept),
            1,
            "only the kept reference is left"
        );
        drop(kept);
        assert!(weak.upgrade().is_none());
    }

    /// The references in this thread's partial batch.
    fn pending_refs() -> usize {
        PENDING.with(|p| {
            let pending = p.take();
            let n = pending.batch.len();
            p.set(pending);
            n
        })
    }

    #[test]
    fn a_batch_is_full_at_batch_objects_however_many_references_each_has() {
        std::thread::spawn(|| {
            let objs: Vec<Arc<usize>> = (0..BATCH).map(Arc::new).collect();
            let weaks: Vec<Weak<usize>> = objs.iter().map(Arc::downgrade).collect();
            let mut objs = objs.into_iter();
            for obj in objs.by_ref().take(BATCH - 1) {
                retire_unread(Arc::clone(&obj));
                retire_unread_also(Arc::clone(&obj));
                retire_unread_also(obj);
            }
            assert_eq!(pending_refs(), 3 * (BATCH - 1), "not handed over yet");
            assert!(weaks[..BATCH - 1].iter().all(|w| w.strong_count() == 3));
            if let Some(last) = objs.next() {
                retire_unread(last);
            }
            assert_eq!(pending_refs(), 0, "the full batch went to the queue");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_batch_given_back_is_emptied_and_at_most_spares_are_kept() {
        let obj = Arc::new(String::from("in a batch"));
        let weak = Arc::downgrade(&obj);
        let mut batch = take_spare();
        assert!(batch.is_empty() && batch.capacity() >= BATCH_REFS);
        batch.push(obj);
        give_back(batch);
        assert!(weak.upgrade().is_none(), "dropped when given back");
        for _ in 0..SPARES + 5 {
            give_back(Vec::with_capacity(BATCH));
        }
        let spare = SPARE.lock();
        assert!(spare.len() <= SPARES);
        assert!(spare.iter().all(|b| b.is_empty()));
    }

    #[test]
    fn a_burst_past_the_queue_bound_neither_blocks_nor_leaks() {
        // Far more than the queue holds, from a thread that then exits (its partial batch is
        // dropped with it): every object is dropped, by the writer or the dropping thread.
        let count = BATCH * QUEUED * 8 + BATCH / 2;
        let weaks = std::thread::spawn(move || {
            (0..count)
                .map(|i| {
                    let obj = Arc::new(vec![i; 16]);
                    let weak = Arc::downgrade(&obj);
                    retire(obj);
                    weak
                })
                .collect::<Vec<Weak<Vec<usize>>>>()
        })
        .join()
        .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while weaks.iter().any(|w| w.strong_count() > 0) {
            assert!(std::time::Instant::now() < deadline, "some never dropped");
            std::thread::yield_now();
        }
    }
}
