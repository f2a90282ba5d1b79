//! Decoding the items of one large list body on several threads.
//!
//! A paged list decodes two pages at once (see [`KubeListerWatcher`](super::KubeListerWatcher)),
//! but some lists come in one body: an unpaginated list, or a list at `resourceVersion=0`,
//! which an API server serves from its watch cache ignoring `limit` (Kubernetes before 1.27
//! does; 100,000 pods then arrive in one response). Such a body's items are decoded in
//! chunks, one per thread, the calling thread decoding the first: objects and errors are the
//! same and in the same order as a decode on one thread.

use std::num::NonZeroUsize;

/// Bodies at least this large are decoded on several threads; smaller ones (a default page of
/// 500 objects of up to a few KiB each) on the calling thread.
const MIN_SPLIT_BYTES: usize = 8 << 20;

/// The most threads one body's decode uses (the calling thread included).
const MAX_THREADS: usize = 4;

/// The fewest items a thread is given.
const MIN_ITEMS_PER_THREAD: usize = 64;

/// The threads to decode `items` items on: the machine's parallelism, at most
/// [`MAX_THREADS`], and no more than gives each [`MIN_ITEMS_PER_THREAD`] items.
fn threads_for(items: usize) -> usize {
    let available = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
    available
        .min(MAX_THREADS)
        .min(items / MIN_ITEMS_PER_THREAD)
        .max(1)
}

/// Whether a body of `len` bytes is large enough to be decoded on several threads.
pub(crate) fn is_large(len: usize) -> bool {
    len >= MIN_SPLIT_BYTES
}

/// `decode` of every item of a body of `body_len` bytes, in order: on several threads if the
/// body [`is_large`], else on the calling thread.
pub(crate) fn decode_body_items<I, T, F>(body_len: usize, items: &[I], decode: F) -> Vec<T>
where
    I: Sync,
    T: Send,
    F: Fn(&I) -> T + Sync,
{
    if is_large(body_len) {
        decode_items(items, decode)
    } else {
        items.iter().map(decode).collect()
    }
}

/// `decode` of every item, in order: on the calling thread alone for fewer than two threads'
/// worth of items, else in one chunk per thread. A chunk whose thread cannot be started is
/// decoded on the calling thread.
fn decode_items<I, T, F>(items: &[I], decode: F) -> Vec<T>
where
    I: Sync,
    T: Send,
    F: Fn(&I) -> T + Sync,
{
    let threads = threads_for(items.len());
    if threads < 2 {
        return items.iter().map(&decode).collect();
    }
    let chunk = items.len().div_ceil(threads);
    let decode = &decode;
    std::thread::scope(|scope| {
        let mut chunks = items.chunks(chunk);
        let first = chunks.next().unwrap_or_default();
        let others: Vec<_> = chunks
            .map(|part| {
                let spawned = std::thread::Builder::new()
                    .name("kinformer-decode".into())
                    .spawn_scoped(scope, move || part.iter().map(decode).collect::<Vec<T>>());
                (part, spawned.ok())
            })
            .collect();
        let mut out: Vec<T> = Vec::with_capacity(items.len());
        out.extend(first.iter().map(decode));
        for (part, spawned) in others {
            match spawned.map(|h| h.join()) {
                Some(Ok(decoded)) => out.extend(decoded),
                // A panic in `decode` resumes here, as it would have on one thread.
                Some(Err(panic)) => std::panic::resume_unwind(panic),
                None => out.extend(part.iter().map(decode)),
            }
        }
        out
    })
}

/// What the large-list tests of the JSON and protobuf decoders share.
#[cfg(test)]
pub(crate) mod testing {
    use kube_core::Resource;

    use crate::cache::listwatch::ObjectList;

    /// The names of a list's items, in order.
    pub(crate) fn item_names<K: Resource>(list: &ObjectList<K>) -> Vec<String> {
        list.items
            .iter()
            .map(|o| o.meta().name.clone().unwrap_or_default())
            .collect()
    }

    /// `cm-0` … `cm-<n - 1>`, without `cm-<skip>`.
    pub(crate) fn config_map_names(n: usize, skip: Option<usize>) -> Vec<String> {
        (0..n)
            .filter(|i| Some(*i) != skip)
            .map(|i| format!("cm-{i}"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_come_back_in_order_whatever_the_split() {
        for n in [0, 1, 63, 64, 127, 128, 129, 1_000, 10_007] {
            let items: Vec<usize> = (0..n).collect();
            let decoded = decode_items(&items, |i| i * 2);
            assert_eq!(decoded, (0..n).map(|i| i * 2).collect::<Vec<_>>(), "{n}");
        }
    }

    #[test]
    fn large_inputs_are_decoded_on_more_than_one_thread_where_there_are_cores() {
        let items: Vec<usize> = (0..10_000).collect();
        let threads = decode_items(&items, |_| std::thread::current().id());
        let distinct: std::collections::HashSet<_> = threads.into_iter().collect();
        assert_eq!(distinct.len(), threads_for(items.len()));
        assert!(distinct.contains(&std::thread::current().id()));
    }

    #[test]
    fn few_items_stay_on_the_calling_thread() {
        let items: Vec<usize> = (0..100).collect();
        let me = std::thread::current().id();
        assert!(
            decode_items(&items, |_| std::thread::current().id())
                .iter()
                .all(|t| *t == me)
        );
    }
}
