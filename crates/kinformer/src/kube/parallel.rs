//! Decoding a list page's objects on more than one thread.
//!
//! A list page of a few hundred objects takes milliseconds to decode into typed objects, on
//! the reflector's task, while the informer's process loop waits for it: the page's items are
//! cut into contiguous runs, one per thread, decoded side by side on scoped threads (the
//! calling thread takes the first run) and put back in their order. Small pages, and one
//! thread, decode on the calling thread.

use std::num::NonZeroUsize;
use std::sync::OnceLock;

/// No thread is started for fewer objects than this.
const MIN_RUN: usize = 64;

/// At most this many threads decode one page by default.
const MAX_DEFAULT_THREADS: usize = 4;

/// The default number of threads decoding a list page: the machine's parallelism, at most 4.
pub(crate) fn default_threads() -> NonZeroUsize {
    static THREADS: OnceLock<NonZeroUsize> = OnceLock::new();
    *THREADS.get_or_init(|| {
        let n = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
        NonZeroUsize::new(n.min(MAX_DEFAULT_THREADS)).unwrap_or(NonZeroUsize::MIN)
    })
}

/// `decode` applied to every item, in order, on up to `threads` threads.
pub(crate) fn map_items<I, T, F>(items: &[I], threads: NonZeroUsize, decode: F) -> Vec<T>
where
    I: Sync,
    T: Send,
    F: Fn(&I) -> T + Sync,
{
    let runs = threads.get().min(items.len() / MIN_RUN).max(1);
    if runs == 1 {
        return items.iter().map(&decode).collect();
    }
    let per_run = items.len().div_ceil(runs);
    let decode = &decode;
    let decode_run = move |run: &[I]| run.iter().map(decode).collect::<Vec<T>>();
    std::thread::scope(|scope| {
        let mut chunks = items.chunks(per_run);
        let first = chunks.next().unwrap_or_default();
        let others: Vec<_> = chunks
            .map(|run| {
                let spawned = std::thread::Builder::new()
                    .name("kinformer-decode".into())
                    .spawn_scoped(scope, move || decode_run(run));
                // No thread to be had: this run is decoded here, after the first.
                spawned.map_err(|_| run)
            })
            .collect();
        let mut out = decode_run(first);
        out.reserve(items.len() - out.len());
        for other in others {
            match other {
                Ok(handle) => match handle.join() {
                    Ok(decoded) => out.extend(decoded),
                    // A decode that panicked panics here, as it would have on this thread.
                    Err(panic) => std::panic::resume_unwind(panic),
                },
                Err(run) => out.extend(decode_run(run)),
            }
        }
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(v: usize) -> NonZeroUsize {
        NonZeroUsize::new(v).unwrap()
    }

    #[test]
    fn every_item_comes_back_in_order_for_any_length_and_thread_count() {
        for len in [0, 1, 63, 64, 127, 128, 129, 500, 1001] {
            let items: Vec<usize> = (0..len).collect();
            for threads in 1..=5 {
                let out = map_items(&items, n(threads), |i| i * 2);
                assert_eq!(out, items.iter().map(|i| i * 2).collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn large_pages_are_decoded_on_several_threads_small_ones_here() {
        let here = std::thread::current().id();
        let items: Vec<usize> = (0..4 * MIN_RUN).collect();
        let ids = map_items(&items, n(4), |_| std::thread::current().id());
        let mut distinct = ids.clone();
        distinct.dedup();
        assert_eq!(distinct.len(), 4, "one run per thread, in order");
        assert_eq!(ids[0], here, "the caller decodes the first run");
        let small: Vec<usize> = (0..MIN_RUN + 1).collect();
        let ids = map_items(&small, n(4), |_| std::thread::current().id());
        assert!(ids.iter().all(|id| *id == here));
    }

    #[test]
    fn the_default_is_between_one_and_four_threads() {
        assert!((1..=MAX_DEFAULT_THREADS).contains(&default_threads().get()));
    }
}
