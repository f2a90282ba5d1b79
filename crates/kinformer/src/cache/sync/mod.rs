//! Knowing when a cache has synced: [`HasSynced`], the [`SyncedFlag`] behind it, the waits on
//! one or many sources, and the tracker that tells when a handler has seen its initial list.

mod tracker;
mod wait;

pub(crate) use tracker::SingleFileTracker;
pub(crate) use wait::wait_named_for_cache_sync;
pub use wait::{
    CacheSyncTimeout, HasSynced, SyncedFlag, wait_for_cache_sync, wait_for_cache_sync_timeout,
    wait_for_named_cache_sync,
};
