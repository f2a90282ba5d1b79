//! Making room on the heap for a batch of decoded objects in one step.
//!
//! A list page of typed objects becomes several times its size in memory (a bench pod: about
//! 400 bytes of JSON or 170 of protobuf, 6.2 KB as a k8s-openapi `Pod`). With glibc's
//! allocator, a thread other than the main one allocates from an arena of its own, and glibc
//! grows such an arena by exactly what each request lacks: one `mprotect` call per 4 KiB page
//! while a page of objects is decoded, each under the lock of the address space that the
//! page faults of the other threads need too. In a profile of E1 (a typed informer over HTTP,
//! decoding on the runtime's worker threads) `mprotect` was 30 % of the client's CPU during
//! the list in a slow run.
//!
//! So before decoding a batch of typed objects (a list page, or the events of one chunk of a
//! watch stream), the decoding thread asks for room about as large as the objects will be,
//! in blocks of at most [`MAX_BLOCK`], and frees it at once. glibc serves a large request
//! from the top of the thread's arena, growing it in one step, and the freed blocks go back
//! to that top, where the objects are then carved from. The blocks are never written, so they
//! cost address space, not memory (peak RSS unchanged in the benchmarks). Other allocators
//! (jemalloc, mimalloc) serve and take back a block as a large allocation of their own, at
//! the cost of a call each.
//!
//! Not for `Lazy` objects: a lean informer's objects are about as small as their bytes, and
//! reserving for them only raised the peak RSS (E1C: 57–64 MiB against 53–57).

use super::Wire;

/// How many times its wire size a typed object takes in memory, at most, for the formats
/// here: a bench pod is 15.5× its JSON and 36× its protobuf. Over-reserving costs address
/// space only; a batch whose objects outgrow the reservation grows the arena as before for
/// the rest.
const JSON_EXPANSION: usize = 16;
const PROTOBUF_EXPANSION: usize = 40;

/// The largest block asked for at once. glibc serves a request above its mmap threshold
/// with a mapping of its own, which is of no use here, and raises the threshold to the size
/// of such a block when it is freed: from the second reservation on, blocks of this size
/// are served from the arena. A thread's arena is made of heaps of 64 MiB, and a block that
/// does not fit in what is left of the current one is served by a new heap, which glibc
/// unmaps again as soon as the block is freed: the objects then grow the next heap page by
/// page until the next reservation. Small blocks lose little at each such boundary (an
/// strace of L0P's decode thread: 7,370 one-page `mprotect` calls with blocks of 16 MiB,
/// 3,660 with blocks of 4 MiB).
pub(crate) const MAX_BLOCK: usize = 4 << 20;

/// The most reserved at once, in blocks of at most [`MAX_BLOCK`].
const MAX_RESERVE: usize = 16 << 20;

/// The most blocks one reservation asks for.
const MAX_BLOCKS: usize = MAX_RESERVE.div_ceil(MAX_BLOCK);

/// The bytes to reserve per item for `items` objects of type `K` decoded from `body_len`
/// bytes of `wire`: `0` for `Lazy` objects (see the module docs).
pub(crate) fn per_item<K: serde::de::DeserializeOwned>(
    body_len: usize,
    items: usize,
    wire: Wire,
) -> usize {
    if crate::codec::keeps_bytes::<K>() || items == 0 {
        return 0;
    }
    let expansion = match wire {
        Wire::Json => JSON_EXPANSION,
        Wire::Protobuf => PROTOBUF_EXPANSION,
    };
    (body_len / items).saturating_mul(expansion)
}

/// The bytes to reserve for the typed objects of a `body_len`-byte body of `wire` decoded as
/// a whole: `0` for `Lazy` objects.
pub(crate) fn for_body<K: serde::de::DeserializeOwned>(body_len: usize, wire: Wire) -> usize {
    per_item::<K>(body_len, 1, wire)
}

/// Makes room for the typed objects of a `body_len`-byte body of `wire` (see [`for_body`]).
pub(crate) fn reserve_for_body<K: serde::de::DeserializeOwned>(body_len: usize, wire: Wire) {
    reserve(for_body::<K>(body_len, wire));
}

/// The sizes of the blocks [`reserve`] asks for, for `bytes` of objects.
fn block_lens(bytes: usize) -> impl Iterator<Item = usize> {
    let total = bytes.min(MAX_RESERVE);
    (0..total.div_ceil(MAX_BLOCK)).map(move |i| (total - i * MAX_BLOCK).min(MAX_BLOCK))
}

/// Makes room for `bytes` of objects on the calling thread's heap (see the module docs);
/// nothing for `0`. The blocks are all held, then freed: they lie one after the other at
/// the top of the arena and go back to it together.
pub(crate) fn reserve(bytes: usize) {
    // Held in an array, not a vector: a watch stream reserves per chunk, and the blocks are
    // the only allocations this should make (an unused slot's empty vector allocates nothing).
    let mut lens = block_lens(bytes);
    let blocks: [Vec<u8>; MAX_BLOCKS] =
        std::array::from_fn(|_| Vec::with_capacity(lens.next().unwrap_or(0)));
    // Without this the compiler may leave out allocations nothing reads.
    std::hint::black_box(&blocks);
    drop(blocks);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::lazy::Lazy;
    use k8s_openapi::api::core::v1::Pod;

    #[test]
    fn typed_objects_get_room_for_their_expansion_and_lazy_ones_none() {
        assert_eq!(per_item::<Pod>(400_000, 1_000, Wire::Json), 400 * 16);
        assert_eq!(per_item::<Pod>(170_000, 1_000, Wire::Protobuf), 170 * 40);
        assert_eq!(per_item::<Lazy<Pod>>(400_000, 1_000, Wire::Json), 0);
        assert_eq!(per_item::<Lazy<Pod>>(170_000, 1_000, Wire::Protobuf), 0);
        assert_eq!(per_item::<Pod>(400_000, 0, Wire::Json), 0);
        assert_eq!(for_body::<Pod>(400_000, Wire::Json), 400_000 * 16);
        assert_eq!(for_body::<Lazy<Pod>>(400_000, Wire::Json), 0);
    }

    #[test]
    fn a_reservation_is_blocks_of_at_most_the_cap() {
        let lens = |bytes| block_lens(bytes).collect::<Vec<_>>();
        assert_eq!(lens(0), Vec::<usize>::new());
        assert_eq!(lens(1 << 20), [1 << 20]);
        assert_eq!(lens(MAX_BLOCK), [MAX_BLOCK]);
        assert_eq!(lens(MAX_BLOCK + 1), [MAX_BLOCK, 1]);
        assert_eq!(lens(usize::MAX).iter().sum::<usize>(), MAX_RESERVE);
        assert!(lens(usize::MAX).iter().all(|l| *l == MAX_BLOCK));
        // Reserving returns (and frees what it took) for any size.
        reserve(0);
        reserve(4 << 20);
        reserve(usize::MAX);
    }
}
