//! The buffers a write computes index values into, reused from one write to the next so that
//! indexing an object allocates only the values themselves.
//!
//! - One set per thread, not per indexer: an indexer stays as small as it was, and writers of
//!   different indexers on the same thread share the buffers.
//! - Empty between writes: the values of a write are dropped when it ends.
//! - A write nested in another on the same thread (an index function writing to a second
//!   indexer) gets fresh buffers instead of the borrowed ones.

use std::cell::Cell;

use super::IndexValues;

/// The index values of the object being written (those of the object it replaces are kept
/// beside it in the tables).
#[derive(Debug, Default)]
pub(super) struct Scratch {
    pub(super) new: IndexValues,
}

thread_local! {
    /// This thread's buffers while no write on it uses them (empty ones while one does).
    static SCRATCH: Cell<Scratch> = Cell::default();
}

/// Runs `f` with this thread's buffers (fresh ones if they are in use or gone), emptied
/// afterwards.
pub(super) fn with_scratch<R>(f: impl FnOnce(&mut Scratch) -> R) -> R {
    let mut s = SCRATCH.try_with(Cell::take).unwrap_or_default();
    let r = f(&mut s);
    s.new.clear();
    // During thread exit the buffers are simply dropped.
    let _ = SCRATCH.try_with(|cell| cell.set(s));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nested_write_gets_fresh_buffers_and_both_end_empty() {
        with_scratch(|outer| {
            outer.new.values.push("a".into());
            with_scratch(|inner| {
                assert!(inner.new.values.is_empty());
                inner.new.values.push("b".into());
            });
            assert_eq!(outer.new.values, ["a"]);
        });
        with_scratch(|s| {
            assert!(s.new.values.is_empty());
        });
    }
}
