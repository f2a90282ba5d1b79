//! Owned values: a k8s-openapi type with a direct path (feature `k8s-openapi`, see `typed`)
//! is built by it, any other type through the serde [`Deserializer`](serde::Deserializer)
//! of `de`. Above both, so that the generic walk does not know the direct paths.

use serde::de::DeserializeOwned;

use crate::de;
use crate::error::Error;
use crate::schema::{MessageId, Schema};

/// As [`de::from_message`], for an owned type: a k8s-openapi type with a direct path
/// (feature `k8s-openapi`) is built by it, which decodes the same value.
pub(crate) fn from_message_owned<T: DeserializeOwned + 'static>(
    schema: &'static Schema,
    id: MessageId,
    bytes: &[u8],
    type_meta: Option<(&str, &str)>,
) -> Result<T, Error> {
    #[cfg(feature = "k8s-openapi")]
    {
        let m = de::MessageDe {
            schema,
            id,
            bytes,
            depth: 0,
            type_meta,
        };
        if let Some(decoded) = crate::typed::decode(m) {
            return Ok(decoded);
        }
    }
    de::from_message(schema, id, bytes, type_meta)
}
