//! Test doubles (client-go's `tools/cache/testing`), behind the `testing` feature: an
//! in-memory [`ListerWatcher`](super::listwatch::ListerWatcher) scripted step by step.

mod fake_listwatch;
mod objects;

pub use fake_listwatch::{FakeListerWatcher, WatchStep};
