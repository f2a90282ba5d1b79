//! What every stage names objects by: keys and tombstones, the typed error they share and
//! label selectors; `Lazy` (metadata parsed, body decoded on demand) is re-exported from the
//! codec layer below.

mod error;
mod key;
pub(crate) use key::with_key_str;
mod selector;

pub use crate::codec::lazy::{Lazy, full_decodes as lazy_full_decodes};
pub use error::CacheError;
pub use key::{
    DeletedFinalStateUnknown, DeletedObject, KeyError, ObjectKey, meta_namespace_key, split_key,
};
pub use selector::{Operator, Requirement, Selector, SelectorParseError};
