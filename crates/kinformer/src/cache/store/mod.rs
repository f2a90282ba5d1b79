//! The thread-safe indexed store: client-go's `Indexer` (`cache` over `threadSafeMap`), its
//! index functions, the two storage modes (typed `Arc<K>` or compact encoded bytes), the
//! transform applied before storing, and client-go's TTL store ([`ExpirationCache`]).
//!
//! The indexer's properties and invariants are documented on [`Indexer`].

mod compact;
mod entries;
mod error;
mod expiration_cache;
mod index;
mod indexer;
mod indices;
mod previous;
mod relist;
mod replace;
mod staged;
mod tables;
#[cfg(test)]
mod tests;
mod transform;

pub(crate) use compact::{Blob, HotObjects, ObjectCodec, TypedCodec};
pub use compact::{CodecError, CompactOptions, Format};
pub use error::IndexerError;
pub use expiration_cache::{ExpirationCache, ExpirationPolicy, TimestampedEntry, TtlPolicy};
pub(crate) use index::{EntrySet, FastMap, FastSet, FastState, Index, IndexValues};
pub use index::{
    IndexFunc, IndexFuncError, Indexers, NAMESPACE_INDEX, label_index_func, namespace_index_func,
};
pub use indexer::{Indexer, Upserted};
pub use previous::PreviousItems;
pub use transform::{TransformFunc, strip_managed_fields, strip_managed_fields_transform};
