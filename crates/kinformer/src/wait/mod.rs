//! Timing helpers: `until`, `jitter_until`, `backoff_until`, [`Backoff`], `poll` and friends.
