//! Decoding the items of one large list body on several threads.
//!
//! A paged list decodes two pages at once (see the kube `KubeListerWatcher`),
//! but some lists come in one body: an unpaginated list, or a list at `resourceVersion=0`,
//! which an API server serves from its watch cache ignoring `limit` (Kubernetes before 1.27
//! does; 100,000 pods then arrive in one response). Such a body's items are decoded on several
//! threads, the calling thread one of them: objects and errors are the same and in the same
//! order as a decode on one thread.
//!
//! The items are cut into many small chunks that the threads claim in turn (each starts with
//! one of its own), not into one equal share per thread: the threads do not decode equally
//! fast. With glibc's allocator, a spawned thread allocates from an arena of its own that
//! grows one `mprotect` call per page it needs, where the calling thread's grows its heap in
//! larger steps: in one measured decode of 100,000 protobuf pods in two equal halves, the
//! spawned thread took 1.3–1.5× as long as the calling thread, which then waited for it.
//! Each thread also makes room on its heap for a chunk's typed objects before decoding it
//! (see [`heap_reserve`]).

use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::heap_reserve;

/// Bodies at least this large are decoded on several threads; smaller ones (a default page of
/// 500 objects of up to a few KiB each) on the calling thread.
const MIN_SPLIT_BYTES: usize = 8 << 20;

/// The most threads one body's decode uses (the calling thread included).
const MAX_THREADS: usize = 4;

/// No more threads are used than give each this many items (on average: chunks are claimed).
const MIN_ITEMS_PER_THREAD: usize = 64;

/// The chunks per thread the items are cut into (see the module docs).
const CHUNKS_PER_THREAD: usize = 16;

/// The threads to decode `items` items on: the machine's parallelism, at most
/// [`MAX_THREADS`], and no more than gives each [`MIN_ITEMS_PER_THREAD`] items.
fn threads_for(items: usize) -> usize {
    let available = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
    available
        .min(MAX_THREADS)
        .min(items / MIN_ITEMS_PER_THREAD)
        .max(1)
}

/// The items per chunk: [`CHUNKS_PER_THREAD`] chunks per thread, and no more items than
/// one block of a reservation makes room for ([`heap_reserve::MAX_BLOCK`] bytes: see there).
fn chunk_len(items: usize, threads: usize, reserve_per_item: usize) -> usize {
    let per_thread = items.div_ceil(threads * CHUNKS_PER_THREAD);
    match heap_reserve::MAX_BLOCK.checked_div(reserve_per_item) {
        Some(fit) => per_thread.min(fit),
        None => per_thread,
    }
    .max(1)
}

/// Whether a body of `len` bytes is large enough to be decoded on several threads.
pub(crate) fn is_large(len: usize) -> bool {
    len >= MIN_SPLIT_BYTES
}

/// `decode` of every item of a body of `body_len` bytes, in order: on several threads if the
/// body [`is_large`], else on the calling thread. Each thread first makes room on its heap
/// for `reserve_per_item` bytes per item it is about to decode ([`heap_reserve`]).
pub(crate) fn decode_body_items<I, T, F>(
    body_len: usize,
    items: &[I],
    reserve_per_item: usize,
    decode: F,
) -> Vec<T>
where
    I: Sync,
    T: Send,
    F: Fn(&I) -> T + Sync,
{
    if is_large(body_len) {
        decode_items(items, reserve_per_item, decode)
    } else {
        heap_reserve::reserve(reserve_per_item.saturating_mul(items.len()));
        items.iter().map(decode).collect()
    }
}

/// `decode` of every item, in order: on the calling thread alone for fewer than two threads'
/// worth of items, else on several threads claiming chunks in turn (see the module docs). A
/// chunk left by a thread that cannot be started is decoded on the calling thread.
fn decode_items<I, T, F>(items: &[I], reserve_per_item: usize, decode: F) -> Vec<T>
where
    I: Sync,
    T: Send,
    F: Fn(&I) -> T + Sync,
{
    let threads = threads_for(items.len());
    if threads < 2 {
        return items.iter().map(&decode).collect();
    }
    let chunks: Vec<&[I]> = items
        .chunks(chunk_len(items.len(), threads, reserve_per_item))
        .collect();
    // Thread `t` starts with chunk `t`; the chunks after the first `threads` are claimed.
    let next = AtomicUsize::new(threads);
    let work = |first: usize| -> Vec<(usize, Vec<T>)> {
        let mut done = Vec::new();
        let mut i = first;
        while let Some(part) = chunks.get(i) {
            heap_reserve::reserve(reserve_per_item.saturating_mul(part.len()));
            done.push((i, part.iter().map(&decode).collect()));
            i = next.fetch_add(1, Ordering::Relaxed);
        }
        done
    };
    let work = &work;
    std::thread::scope(|scope| {
        let spawned: Vec<_> = (1..threads)
            .map(|t| {
                std::thread::Builder::new()
                    .name("kinformer-decode".into())
                    .spawn_scoped(scope, move || work(t))
                    .ok()
            })
            .collect();
        let mut parts: Vec<Option<Vec<T>>> =
            std::iter::repeat_with(|| None).take(chunks.len()).collect();
        let mut keep = |done: Vec<(usize, Vec<T>)>| {
            for (i, part) in done {
                parts[i] = Some(part);
            }
        };
        keep(work(0));
        for handle in spawned.into_iter().flatten() {
            match handle.join() {
                Ok(done) => keep(done),
                // A panic in `decode` resumes here, as it would have on one thread.
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        let mut out: Vec<T> = Vec::with_capacity(items.len());
        for (part, chunk) in parts.into_iter().zip(&chunks) {
            match part {
                Some(decoded) => out.extend(decoded),
                None => out.extend(chunk.iter().map(&decode)),
            }
        }
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_come_back_in_order_whatever_the_split() {
        for n in [0, 1, 63, 64, 127, 128, 129, 1_000, 10_007] {
            let items: Vec<usize> = (0..n).collect();
            let decoded = decode_items(&items, 0, |i| i * 2);
            assert_eq!(decoded, (0..n).map(|i| i * 2).collect::<Vec<_>>(), "{n}");
        }
    }

    #[test]
    fn a_chunk_holds_no_more_than_one_block_of_objects() {
        let block = heap_reserve::MAX_BLOCK;
        // 100,000 protobuf pods on 2 threads: 32 chunks would hold 3,125 pods, 21 MB.
        assert_eq!(chunk_len(100_000, 2, 6_800), block / 6_800);
        assert_eq!(chunk_len(100_000, 2, 0), 3_125);
        assert_eq!(chunk_len(1_000, 2, 100), 32);
        assert_eq!(chunk_len(10, 2, usize::MAX), 1);
    }

    #[test]
    fn large_inputs_are_decoded_on_more_than_one_thread_where_there_are_cores() {
        let items: Vec<usize> = (0..10_000).collect();
        let threads = decode_items(&items, 0, |_| std::thread::current().id());
        let distinct: std::collections::HashSet<_> = threads.into_iter().collect();
        assert_eq!(distinct.len(), threads_for(items.len()));
        assert!(distinct.contains(&std::thread::current().id()));
    }

    #[test]
    fn a_faster_thread_decodes_more_than_an_equal_share() {
        let items: Vec<usize> = (0..2_048).collect();
        let threads = threads_for(items.len());
        let me = std::thread::current().id();
        // Every other thread is slowed down: the calling thread claims the chunks they leave.
        let decoded = decode_items(&items, 0, |i| {
            if std::thread::current().id() != me {
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
            (*i, std::thread::current().id())
        });
        assert_eq!(
            decoded.iter().map(|(i, _)| *i).collect::<Vec<_>>(),
            items,
            "in order"
        );
        let mine = decoded.iter().filter(|(_, t)| *t == me).count();
        if threads > 1 {
            assert!(
                mine > items.len() / threads,
                "{mine} of {} on the calling thread",
                items.len()
            );
        }
    }

    #[test]
    fn few_items_stay_on_the_calling_thread() {
        let items: Vec<usize> = (0..100).collect();
        let me = std::thread::current().id();
        assert!(
            decode_items(&items, 0, |_| std::thread::current().id())
                .iter()
                .all(|t| *t == me)
        );
    }
}
