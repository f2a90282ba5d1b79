//! What every stage names objects by: keys and tombstones, the typed error they share, `Lazy`
//! objects (metadata parsed, body decoded on demand) and label selectors.

mod error;
mod key;
pub(crate) use key::with_key_str;
mod lazy;
mod member_ahead;
mod selector;

pub use error::CacheError;
pub use key::{
    DeletedFinalStateUnknown, DeletedObject, KeyError, ObjectKey, meta_namespace_key, split_key,
};
#[cfg(feature = "kube")]
pub(crate) use lazy::is_lazy;
#[cfg(all(feature = "fast-json", feature = "kube"))]
pub(crate) use lazy::sonic_message;
pub use lazy::{Lazy, full_decodes as lazy_full_decodes};
#[cfg(feature = "compact")]
pub(crate) use lazy::{StoredBody, deferred};
#[cfg(feature = "kube")]
pub(crate) use member_ahead::member_ahead;
pub(crate) use member_ahead::member_ahead_str;
pub use selector::{Operator, Requirement, Selector, SelectorParseError};
