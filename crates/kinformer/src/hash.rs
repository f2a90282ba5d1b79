//! The hasher of the crate's internal maps and sets (the caches' indices, the FIFOs, the work
//! queues and the rate limiters): fast for short keys such as object keys, randomly seeded.

use std::collections::{HashMap, HashSet};

/// The hash builder: foldhash's fast hasher, seeded at random per instance.
pub(crate) type FastState = foldhash::fast::RandomState;
/// A map hashed with [`FastState`].
pub(crate) type FastMap<K, V> = HashMap<K, V, FastState>;
/// A set hashed with [`FastState`].
pub(crate) type FastSet<K> = HashSet<K, FastState>;
