//! The wire format a [`KubeListerWatcher`](super::KubeListerWatcher) asks for, and the
//! reading of a response by the format its `Content-Type` names.

use futures::{StreamExt, TryStreamExt};
use serde::de::DeserializeOwned;

#[cfg(feature = "protobuf")]
use super::protobuf;
use super::{decode, error, lines};
use crate::cache::listwatch::{DecodeError, ListWatchError, ObjectList, WatchEvent};

/// `Accept` for protobuf with JSON as the fallback, as client-go sends for built-in types.
pub(crate) const PROTOBUF_ACCEPT: &str = "application/vnd.kubernetes.protobuf, application/json";

/// Which encoding lists and watches ask the API server for.
///
/// Whatever is asked, the response's `Content-Type` decides how it is decoded, so a server
/// that answers JSON to a protobuf request is read all the same.
///
/// ```
/// use kinformer::kube::Wire;
///
/// assert_eq!(Wire::default(), Wire::Protobuf);
/// assert_eq!("json".parse::<Wire>(), Ok(Wire::Json));
/// assert!("yaml".parse::<Wire>().is_err());
/// assert_eq!(Wire::Protobuf.to_string(), "protobuf");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Wire {
    /// JSON for everything.
    Json,
    /// Kubernetes protobuf for built-in kinds (the core group and the other Kubernetes API
    /// groups), as Kubernetes' own controllers do; JSON for custom resources and
    /// metadata-only lists (the default). Without the `protobuf` feature, JSON.
    #[default]
    Protobuf,
}

impl std::fmt::Display for Wire {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Wire::Json => "json",
            Wire::Protobuf => "protobuf",
        })
    }
}

impl std::str::FromStr for Wire {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "json" => Ok(Wire::Json),
            "protobuf" => Ok(Wire::Protobuf),
            other => Err(format!("unknown wire format {other:?} (json or protobuf)")),
        }
    }
}

/// True if a resource URL path belongs to a built-in API group.
pub(crate) fn is_builtin_url(url_path: &str) -> bool {
    let mut segments = url_path.split('/').filter(|s| !s.is_empty());
    match (segments.next(), segments.next()) {
        (Some("api"), _) => true,
        #[cfg(feature = "protobuf")]
        (Some("apis"), Some(group)) => kinformer_protobuf::is_builtin_group(group),
        _ => false,
    }
}

/// A whole list body's continue token, found without decoding the items (`None` when it is
/// not found that way, see [`decode::continue_token_ahead`](super::decode::continue_token_ahead)).
pub(super) fn continue_token_ahead(content_type: &str, body: &[u8]) -> Option<String> {
    #[cfg(feature = "protobuf")]
    if protobuf::is_protobuf(content_type) {
        return protobuf::continue_token_ahead(body);
    }
    let _ = content_type;
    decode::continue_token_ahead(body)
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
    decode::decode_list::<K>(text)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_groups_are_recognised_from_the_url() {
        assert!(is_builtin_url("/api/v1/namespaces/ns/pods"));
        #[cfg(feature = "protobuf")]
        assert!(is_builtin_url("/apis/apps/v1/deployments"));
        assert!(!is_builtin_url("/apis/example.com/v1/widgets"));
        assert!(!is_builtin_url("/apis/apps.example.com/v1/widgets"));
    }
}
