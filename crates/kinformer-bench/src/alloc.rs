//! A counting global allocator for the memory workloads: it forwards to jemalloc with the
//! opt-in `jemalloc` feature (as the `kinformer` command does with its own), else to the system
//! allocator, and keeps the number of bytes currently allocated.
//!
//! It only counts when installed as the program's global allocator (the `kinformer-bench`
//! binary installs it), and only once [`start_counting`] was called: the workloads that report
//! heap figures (the `cache` group) call it first, every other workload allocates without the
//! counters' two shared atomic updates per allocation (contended when several threads
//! allocate, as an informer's reflector and process loop do), so that their timings do not
//! include the instrument:
//!
//! ```
//! use kinformer_bench::alloc::{CountingAlloc, live_bytes, start_counting};
//!
//! #[global_allocator]
//! static ALLOC: CountingAlloc = CountingAlloc;
//!
//! # fn main() {
//! start_counting();
//! let before = live_bytes();
//! let buffer = vec![0u8; 4096];
//! assert!(live_bytes() >= before + 4096);
//! # drop(buffer);
//! # }
//! ```
//!
//! Heap figures are then `live_bytes()` after a phase minus `live_bytes()` before it.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};

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
/// Signed: a block allocated before counting started and freed after subtracts its size.
static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

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
        let now = LIVE.fetch_add(signed(size), Ordering::Relaxed) + signed(size);
        PEAK.fetch_max(now, Ordering::Relaxed);
    }
}

fn shrank(size: usize) {
    if counting() {
        LIVE.fetch_sub(signed(size), Ordering::Relaxed);
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
    usize::try_from(LIVE.load(Ordering::Relaxed)).unwrap_or(0)
}

/// The highest [`live_bytes`] since the last [`reset_peak`] (or the start).
pub fn peak_bytes() -> usize {
    usize::try_from(PEAK.load(Ordering::Relaxed)).unwrap_or(0)
}

/// Starts a new peak measurement from the current live bytes.
pub fn reset_peak() {
    PEAK.store(LIVE.load(Ordering::Relaxed), Ordering::Relaxed);
}
