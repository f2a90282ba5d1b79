//! Work queues: deduplicating, delaying and rate-limited.
