//! A response read by the format its `Content-Type` names (JSON or protobuf), whatever was
//! asked for.

use futures::{StreamExt, TryStreamExt};
use serde::de::DeserializeOwned;

use super::error;
use crate::cache::listwatch::{DecodeError, ListWatchError, ObjectList, WatchEvent};
use crate::codec::json::{self, lines};
#[cfg(feature = "protobuf")]
use crate::codec::protobuf;

/// A whole list body's continue token, found without decoding the items (`None` when it is
/// not found that way, see [`json::continue_token_ahead`]).
pub(super) fn continue_token_ahead(content_type: &str, body: &[u8]) -> Option<String> {
    #[cfg(feature = "protobuf")]
    if protobuf::is_protobuf(content_type) {
        return protobuf::continue_token_ahead(body);
    }
    let _ = content_type;
    json::continue_token_ahead(body)
}

/// A whole list body, decoded by its content type.
pub(super) fn decode_whole<K: DeserializeOwned + Send + Sync + 'static>(
    content_type: &str,
    body: &[u8],
) -> Result<ObjectList<K>, ListWatchError> {
    #[cfg(feature = "protobuf")]
    if protobuf::is_protobuf(content_type) {
        return protobuf::decode_list::<K>(body);
    }
    let _ = content_type;
    let text = std::str::from_utf8(body).map_err(|e| {
        ListWatchError::Decode(DecodeError::new(format!("list response is not UTF-8: {e}")))
    })?;
    json::decode_list::<K>(text)
}

/// The events of a watch body, by its content type.
pub(super) fn watch_events<K>(
    content_type: &str,
    body: impl futures::Stream<Item = Result<bytes::Bytes, ::kube::Error>> + Send + Unpin + 'static,
) -> futures::stream::BoxStream<'static, Result<WatchEvent<K>, ListWatchError>>
where
    K: DeserializeOwned + Send + Sync + 'static,
{
    #[cfg(feature = "protobuf")]
    if protobuf::is_protobuf(content_type) {
        return protobuf::events::<K, _, _>(body.map_err(KubeReadError)).boxed();
    }
    let _ = content_type;
    lines::json_events::<K, _, _>(body.map_err(KubeReadError)).boxed()
}

/// A read error of a watch body.
pub(super) struct KubeReadError(pub(super) ::kube::Error);

impl From<KubeReadError> for ListWatchError {
    fn from(e: KubeReadError) -> Self {
        error::from_kube(e.0)
    }
}
