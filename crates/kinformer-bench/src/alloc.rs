//! A counting global allocator for the memory workloads: it forwards to jemalloc with the
//! opt-in `jemalloc` feature (as the `kinformer` command does with its own), else to the system
//! allocator, and keeps the number of bytes currently allocated.
//!
//! It only counts when installed as the program's global allocator (the `kinformer-bench`
//! binary installs it), and only once [`start_counting`] was called: the workloads that report
//! heap figures (the `cache` group) call it first, every other workload allocates without
//! counting at all. Each thread counts into a counter of its own (on a cache line of its own),
//! which [`live_bytes`] sums: a shared counter is contended whenever two threads allocate or
//! free, as an indexer's writer and its dropping thread do, and the timed phases of the
//! memory workloads would then include the instrument (measured on W4's typed update: 12 % of
//! the writer's samples were the shared counters' updates). A thread that has a counter to
//! itself updates it with a plain load and store, not an atomic read-modify-write: a locked
//! instruction waits for every store before it to reach the cache, so each count would make
//! the writer wait for the cold lines it just wrote (W4's add spent 16 % of its samples in the
//! allocator's `dealloc` when it counted that way). Only while a peak is watched
//! ([`reset_peak`] to [`peak_bytes`]) does every thread count into one shared counter, whose
//! highest value is the peak:
//!
//! ```
//! use kinformer_bench::alloc::{CountingAlloc, live_bytes, peak_bytes, reset_peak, start_counting};
//!
//! #[global_allocator]
//! static ALLOC: CountingAlloc = CountingAlloc;
//!
//! # fn main() {
//! start_counting();
//! let before = live_bytes();
//! let buffer = vec![0u8; 4096];
//! assert!(live_bytes() >= before + 4096);
//! // Counted on another thread, freed on this one: the sum is what is live.
//! let from_thread = std::thread::spawn(|| vec![0u8; 8192]).join().unwrap();
//! assert!(live_bytes() >= before + 4096 + 8192);
//! drop(from_thread);
//! reset_peak();
//! let start = live_bytes();
//! drop(std::hint::black_box(vec![0u8; 1 << 20]));
//! assert!(peak_bytes() >= start + (1 << 20));
//! # drop(buffer);
//! # }
//! ```
//!
//! Heap figures are then `live_bytes()` after a phase minus `live_bytes()` before it.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering};

/// The allocator [`CountingAlloc`] forwards to, and its name for the runner's report.
#[cfg(all(feature = "jemalloc", not(target_env = "msvc")))]
mod inner {
    pub(super) type Inner = tikv_jemallocator::Jemalloc;
    /// The allocator the workloads run on.
    pub const ALLOCATOR: &str = "jemalloc";
}
/// The allocator [`CountingAlloc`] forwards to, and its name for the runner's report.
#[cfg(not(all(feature = "jemalloc", not(target_env = "msvc"))))]
mod inner {
    pub(super) type Inner = std::alloc::System;
    /// The allocator the workloads run on.
    pub const ALLOCATOR: &str = "system";
}
pub use inner::ALLOCATOR;
const INNER: inner::Inner = inner::Inner {};

static COUNTING: AtomicBool = AtomicBool::new(false);
/// True from [`reset_peak`] to [`peak_bytes`]: every thread counts into [`SHARED`].
static WATCHING_PEAK: AtomicBool = AtomicBool::new(false);

/// One thread's count, on a cache line of its own. Signed: a block allocated on one thread
/// and freed on another subtracts from the other's count (and one allocated before counting
/// started and freed after subtracts too); only the sum means anything.
#[repr(align(128))]
struct Counter(AtomicIsize);

/// Threads are given counters of their own in turn; threads beyond this number share
/// [`OVERFLOW`].
const COUNTERS: usize = 32;
static PER_THREAD: [Counter; COUNTERS] = [const { Counter(AtomicIsize::new(0)) }; COUNTERS];
/// The counter of the threads that came after every per-thread counter was given out.
static OVERFLOW: Counter = Counter(AtomicIsize::new(0));
/// The counter every thread uses while a peak is watched.
static SHARED: Counter = Counter(AtomicIsize::new(0));
/// The highest value of [`SHARED`] since the watch began.
static SHARED_PEAK: AtomicIsize = AtomicIsize::new(0);
static NEXT_COUNTER: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's counter (an index into [`PER_THREAD`], or [`COUNTERS`] for
    /// [`OVERFLOW`]), `usize::MAX` until the thread first counts. (A constant initialiser and
    /// no destructor: usable from the allocator, at any point of the thread's life.)
    static MY_COUNTER: Cell<usize> = const { Cell::new(usize::MAX) };
}

fn my_counter() -> usize {
    MY_COUNTER.with(|c| {
        if c.get() == usize::MAX {
            let n = NEXT_COUNTER.fetch_add(1, Ordering::Relaxed);
            c.set(n.min(COUNTERS));
        }
        c.get()
    })
}

fn count(delta: isize) {
    if WATCHING_PEAK.load(Ordering::Relaxed) {
        let now = SHARED.0.fetch_add(delta, Ordering::Relaxed) + delta;
        SHARED_PEAK.fetch_max(now, Ordering::Relaxed);
        return;
    }
    match PER_THREAD.get(my_counter()) {
        // This thread is the counter's only writer: no read-modify-write is needed.
        Some(mine) => mine
            .0
            .store(mine.0.load(Ordering::Relaxed) + delta, Ordering::Relaxed),
        None => {
            OVERFLOW.0.fetch_add(delta, Ordering::Relaxed);
        }
    }
}

/// The per-thread counters' sum (the live bytes less the shared counter's).
fn per_thread_sum() -> isize {
    PER_THREAD
        .iter()
        .chain([&OVERFLOW])
        .map(|c| c.0.load(Ordering::Relaxed))
        .sum()
}

/// Starts counting allocations (until the process ends); heap figures are differences of
/// [`live_bytes`] taken after this call.
pub fn start_counting() {
    COUNTING.store(true, Ordering::Relaxed);
}

fn counting() -> bool {
    COUNTING.load(Ordering::Relaxed)
}

fn signed(size: usize) -> isize {
    isize::try_from(size).unwrap_or(isize::MAX)
}

fn grew(size: usize) {
    if counting() {
        count(signed(size));
    }
}

fn shrank(size: usize) {
    if counting() {
        count(-signed(size));
    }
}

/// The counting allocator; install it with `#[global_allocator]` in a binary's `main.rs`.
#[derive(Debug, Clone, Copy, Default)]
pub struct CountingAlloc;

// SAFETY: every method forwards to the inner allocator with the caller's arguments
// unchanged; the counter is only bookkeeping and never affects the returned memory.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is; the caller upholds `alloc`'s contract.
        let p = unsafe { INNER.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is.
        let p = unsafe { INNER.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as is; `ptr` came from this allocator with `layout`.
        unsafe { INNER.dealloc(ptr, layout) };
        shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded as is.
        let p = unsafe { INNER.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            shrank(layout.size());
            grew(new_size);
        }
        p
    }
}

/// Bytes currently allocated through [`CountingAlloc`] (0 if it is not installed).
pub fn live_bytes() -> usize {
    usize::try_from(per_thread_sum() + SHARED.0.load(Ordering::Relaxed)).unwrap_or(0)
}

/// Starts watching the peak: from here to [`peak_bytes`], every thread counts into one shared
/// counter (so the instrument costs more while the watch lasts).
pub fn reset_peak() {
    let shared = SHARED.0.load(Ordering::Relaxed);
    SHARED_PEAK.store(shared, Ordering::Relaxed);
    WATCHING_PEAK.store(true, Ordering::SeqCst);
}

/// The highest [`live_bytes`] since [`reset_peak`], which ends the watch (the current live
/// bytes when no watch was on). The per-thread counters do not move during the watch, so the
/// peak of the sum is their sum plus the shared counter's peak.
pub fn peak_bytes() -> usize {
    if !WATCHING_PEAK.swap(false, Ordering::SeqCst) {
        return live_bytes();
    }
    usize::try_from(per_thread_sum() + SHARED_PEAK.load(Ordering::Relaxed)).unwrap_or(0)
}
