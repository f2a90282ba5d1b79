//! The thread-safe indexed store: client-go's `Indexer` (`cache` over `threadSafeMap`), its
//! index functions, the two storages (typed `Arc<K>`, or compact encoded bytes with the
//! `compact` feature), the transform applied before storing, and client-go's TTL store
//! ([`ExpirationCache`]).
//!
//! The indexer's properties and invariants are documented on [`Indexer`]. Its logic is
//! written once (`core`, `reads`, `indices`, `replace`) over a private storage backend
//! (`backend`): typed (`typed`) or compact (`compact`, `relist`, `staged`).

mod backend;
#[cfg(feature = "compact")]
mod compact;
mod core;
mod entries;
mod error;
mod expiration_cache;
mod index;
mod indexer;
mod indices;
mod previous;
mod reads;
#[cfg(feature = "compact")]
mod relist;
mod replace;
mod retire;
mod scratch;
#[cfg(feature = "compact")]
mod staged;
mod tables;
#[cfg(test)]
mod tests;
mod transform;
mod typed;
mod value_ids;

#[cfg(feature = "compact")]
pub(crate) use compact::{Blob, HotObjects, ObjectCodec, TypedCodec};
#[cfg(feature = "compact")]
#[cfg_attr(docsrs, doc(cfg(feature = "compact")))]
pub use compact::{CompactOptions, Format};
pub use error::{CodecError, IndexerError};
pub use expiration_cache::{ExpirationCache, ExpirationPolicy, TimestampedEntry, TtlPolicy};
pub(crate) use index::{FastMap, FastState, Index, IndexValues};
pub use index::{
    IndexFunc, IndexFuncError, Indexers, NAMESPACE_INDEX, label_index_func, namespace_index_func,
};
pub use indexer::{Indexer, Upserted};
pub use previous::PreviousItems;
pub(crate) use retire::retire;
pub use transform::{TransformFunc, strip_managed_fields, strip_managed_fields_transform};
