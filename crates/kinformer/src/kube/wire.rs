//! What a [`KubeListerWatcher`](super::KubeListerWatcher) asks for: the `Accept` header of
//! protobuf, and which URLs are of built-in kinds ([`Wire`](crate::codec::Wire) itself is
//! the codec's).

/// `Accept` for protobuf with JSON as the fallback, as client-go sends for built-in types.
pub(crate) const PROTOBUF_ACCEPT: &str = "application/vnd.kubernetes.protobuf, application/json";

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
