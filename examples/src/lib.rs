//! Small programs that use kinformer, for copying from. The programs are the crate's binaries
//! and examples:
//!
//! - `quickstart` (`src/bin/quickstart.rs`): the README's quick start — a Pod informer, a
//!   handler that enqueues keys, a rate-limited work queue drained by workers. CI builds it and
//!   runs it against the embedded API server (`tests/quickstart.rs`).
//! - `two_kinds` (`examples/two_kinds.rs`): one work queue holding keys of two kinds.
//! - `replicaset_controller` (`examples/replicaset_controller.rs`): the controller of
//!   `kinformer demo`, wired up in one file.
//! - `projection` (`examples/projection.rs`): a lean typed cache of a projection type.
//!
//! The crate is not published: copy what you need.
