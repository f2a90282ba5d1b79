//! Errors of list and watch calls, keeping what the reflector needs to decide: the HTTP code,
//! the status reason and causes, and Retry-After; and the error of an object that could not be
//! decoded.

use std::fmt;
use std::time::Duration;

/// An object or watch event that could not be decoded (wrong type, missing metadata, bad JSON,
/// an unknown event type). The reflector skips and reports it in a list; in a watch it ends
/// the watch and resumes from the last synced version, so no change is lost.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("undecodable object{}: {message}", name.as_deref().map(|n| format!(" {n:?}")).unwrap_or_default())]
pub struct DecodeError {
    /// The object's name, when it could be read.
    pub name: Option<String>,
    /// What went wrong.
    pub message: String,
}

impl DecodeError {
    /// A decode error with a message and no name.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            name: None,
            message: message.into(),
        }
    }
}

/// `metav1.StatusCause` type for a list or watch at a version newer than the server has.
pub const CAUSE_RESOURCE_VERSION_TOO_LARGE: &str = "ResourceVersionTooLarge";

/// The message older API servers put on a too-large-version timeout.
const TOO_LARGE_MESSAGE: &str = "Too large resource version";

/// One `metav1.StatusCause`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatusCause {
    /// The cause type (`reason` on the wire), e.g. `ResourceVersionTooLarge`.
    pub reason: String,
    /// Human-readable detail.
    pub message: String,
    /// The field concerned, if any.
    pub field: String,
}

/// A failed `metav1.Status` as the API server returns it (in an error response or an `ERROR`
/// watch event).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApiStatus {
    /// HTTP status code (410, 429, 500, ...).
    pub code: u16,
    /// `reason`, e.g. `Expired`, `Gone`, `TooManyRequests`, `Timeout`.
    pub reason: String,
    /// `message`.
    pub message: String,
    /// `details.causes`.
    pub causes: Vec<StatusCause>,
    /// `details.retryAfterSeconds` (or the `Retry-After` header when the transport exposes it).
    pub retry_after: Option<Duration>,
}

impl ApiStatus {
    /// A status with `code`, `reason` and `message` and no details.
    pub fn new(code: u16, reason: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code,
            reason: reason.into(),
            message: message.into(),
            causes: Vec::new(),
            retry_after: None,
        }
    }

    /// 410 with reason `Expired`: the requested version (or continue token) was compacted.
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    /// 410 with reason `Gone`.
    pub fn gone(message: impl Into<String>) -> Self {
        Self::new(410, "Gone", message)
    }

    /// 429 `TooManyRequests`, optionally with Retry-After.
    pub fn too_many_requests(retry_after: Option<Duration>) -> Self {
        let mut s = Self::new(
            429,
            "TooManyRequests",
            "too many requests, please try again later",
        );
        s.retry_after = retry_after;
        s
    }

    /// 504 `Timeout` with the `ResourceVersionTooLarge` cause, as a current API server answers a
    /// request for a version it has not reached.
    pub fn too_large_resource_version(requested: &str, current: &str) -> Self {
        let mut s = Self::new(
            504,
            "Timeout",
            format!("Timeout: {TOO_LARGE_MESSAGE}: requested {requested}, current {current}"),
        );
        s.causes.push(StatusCause {
            reason: CAUSE_RESOURCE_VERSION_TOO_LARGE.to_owned(),
            message: TOO_LARGE_MESSAGE.to_owned(),
            field: String::new(),
        });
        s
    }

    /// 500 `InternalError`.
    pub fn internal_error(message: impl Into<String>) -> Self {
        Self::new(500, "InternalError", message)
    }

    /// True if any cause has type `cause`.
    pub fn has_cause(&self, cause: &str) -> bool {
        self.causes.iter().any(|c| c.reason == cause)
    }
}

impl fmt::Display for ApiStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: {}", self.code, self.reason, self.message)
    }
}

/// Where a transport error happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransportErrorKind {
    /// The server refused the connection (it is down or restarting).
    ConnectionRefused,
    /// Any other I/O or protocol failure.
    Other,
}

/// An error from a [`ListerWatcher`](crate::cache::listwatch::ListerWatcher) call or inside a
/// watch stream.
///
/// Retryability, as the reflector treats it: [`Api`](Self::Api) 410 / too-large-version →
/// relist (from `""`); 429 and connection refused → back off and retry the same call;
/// [`Decode`](Self::Decode) → in a list, skip and report the object; in a watch, end the watch
/// and resume from the last synced version; everything else → back off and relist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ListWatchError {
    /// The API server answered with a failed status.
    #[error("api error: {0}")]
    Api(ApiStatus),
    /// The request did not reach the server or the response broke off.
    #[error("transport error: {message}")]
    Transport {
        /// What kind of failure.
        kind: TransportErrorKind,
        /// The underlying error's text.
        message: String,
    },
    /// One object or watch event could not be decoded (a list skips the object; a watch ends).
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// The request could not be built from the options.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
}

impl From<ApiStatus> for ListWatchError {
    fn from(s: ApiStatus) -> Self {
        ListWatchError::Api(s)
    }
}

impl ListWatchError {
    /// A connection-refused transport error.
    pub fn connection_refused(message: impl Into<String>) -> Self {
        ListWatchError::Transport {
            kind: TransportErrorKind::ConnectionRefused,
            message: message.into(),
        }
    }

    /// Any other transport error.
    pub fn transport(message: impl Into<String>) -> Self {
        ListWatchError::Transport {
            kind: TransportErrorKind::Other,
            message: message.into(),
        }
    }

    /// The API status, for [`Api`](Self::Api) errors.
    pub fn status(&self) -> Option<&ApiStatus> {
        match self {
            ListWatchError::Api(s) => Some(s),
            _ => None,
        }
    }

    /// The HTTP status code, for [`Api`](Self::Api) errors.
    pub fn code(&self) -> Option<u16> {
        self.status().map(|s| s.code)
    }

    /// Reason `Expired` (a compacted version or continue token); apimachinery's
    /// `IsResourceExpired`.
    pub fn is_expired(&self) -> bool {
        self.status().is_some_and(|s| s.reason == "Expired")
    }

    /// HTTP 410 or reason `Gone`; apimachinery's `IsGone`.
    pub fn is_gone(&self) -> bool {
        self.status()
            .is_some_and(|s| s.reason == "Gone" || s.code == 410)
    }

    /// The version asked for is newer than the server's: a `ResourceVersionTooLarge` cause, or
    /// (older servers) a timeout whose cause or message says "Too large resource version".
    pub fn is_too_large_resource_version(&self) -> bool {
        let Some(s) = self.status() else {
            return false;
        };
        if s.has_cause(CAUSE_RESOURCE_VERSION_TOO_LARGE) {
            return true;
        }
        let is_timeout = s.reason == "Timeout" || s.code == 504;
        is_timeout
            && (s.causes.iter().any(|c| c.message == TOO_LARGE_MESSAGE)
                || s.message.contains(TOO_LARGE_MESSAGE))
    }

    /// HTTP 429 or reason `TooManyRequests`.
    pub fn is_too_many_requests(&self) -> bool {
        self.status()
            .is_some_and(|s| s.code == 429 || s.reason == "TooManyRequests")
    }

    /// HTTP 500 or reason `InternalError`.
    pub fn is_internal_error(&self) -> bool {
        self.status()
            .is_some_and(|s| s.code == 500 || s.reason == "InternalError")
    }

    /// The server refused a watch-list request (`sendInitialEvents`) as a server without the
    /// feature does: 422 `Invalid` (or 400 `BadRequest`) naming `sendInitialEvents` or
    /// `resourceVersionMatch`. Kubernetes 1.26 answers `resourceVersionMatch: Forbidden:
    /// resourceVersionMatch is forbidden for watch`; 1.27–1.31 with the `WatchList` feature
    /// gate off (their default) `sendInitialEvents: Forbidden: sendInitialEvents is forbidden
    /// for watch unless the WatchList feature gate is enabled`. The answer will not change on
    /// a retry, so the reflector lists and watches instead, and stops asking.
    pub fn is_watch_list_unsupported(&self) -> bool {
        const FIELDS: [&str; 2] = ["sendInitialEvents", "resourceVersionMatch"];
        let Some(s) = self.status() else {
            return false;
        };
        let refused =
            matches!(s.code, 400 | 422) || matches!(s.reason.as_str(), "Invalid" | "BadRequest");
        refused
            && (s.causes.iter().any(|c| FIELDS.contains(&c.field.as_str()))
                || FIELDS.iter().any(|f| s.message.contains(f)))
    }

    /// The server refused the connection.
    pub fn is_connection_refused(&self) -> bool {
        matches!(
            self,
            ListWatchError::Transport {
                kind: TransportErrorKind::ConnectionRefused,
                ..
            }
        )
    }

    /// An undecodable object or watch event (skipped in a list, the end of a watch).
    pub fn is_decode(&self) -> bool {
        matches!(self, ListWatchError::Decode(_))
    }

    /// How long the server asked us to wait, if it did.
    pub fn retry_after(&self) -> Option<std::time::Duration> {
        self.status().and_then(|s| s.retry_after)
    }
}

/// Converts a `metav1.Status` into an [`ApiStatus`].
#[cfg(feature = "kube")]
pub(crate) fn api_status(s: &kube_core::Status) -> ApiStatus {
    let (causes, retry_after) = match &s.details {
        Some(d) => (
            d.causes
                .iter()
                .map(|c| StatusCause {
                    reason: c.reason.clone(),
                    message: c.message.clone(),
                    field: c.field.clone(),
                })
                .collect(),
            (d.retry_after_seconds > 0)
                .then(|| Duration::from_secs(u64::from(d.retry_after_seconds))),
        ),
        None => (Vec::new(), None),
    };
    ApiStatus {
        code: s.code,
        reason: s.reason.clone(),
        message: s.message.clone(),
        causes,
        retry_after,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expired_and_gone_are_told_apart() {
        let e = ListWatchError::from(ApiStatus::expired("old"));
        assert!(e.is_expired() && e.is_gone());
        let g = ListWatchError::from(ApiStatus::gone("old"));
        assert!(!g.is_expired() && g.is_gone());
        assert!(!ListWatchError::from(ApiStatus::internal_error("x")).is_gone());
    }

    #[test]
    fn servers_without_watch_list_are_recognised() {
        // Kubernetes 1.26.
        let mut k126 = ApiStatus::new(
            422,
            "Invalid",
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch",
        );
        k126.causes.push(StatusCause {
            reason: "FieldValueForbidden".into(),
            message: "Forbidden: resourceVersionMatch is forbidden for watch".into(),
            field: "resourceVersionMatch".into(),
        });
        assert!(ListWatchError::from(k126).is_watch_list_unsupported());
        // Kubernetes 1.27–1.31 with the WatchList feature gate off, message only.
        let k130 = ApiStatus::new(
            422,
            "Invalid",
            "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
        );
        assert!(ListWatchError::from(k130).is_watch_list_unsupported());
        // Other refusals are not.
        let other = ApiStatus::new(422, "Invalid", "labelSelector: Invalid value: \"=\"");
        assert!(!ListWatchError::from(other).is_watch_list_unsupported());
        let busy = ApiStatus::internal_error("sendInitialEvents: etcd is down");
        assert!(!ListWatchError::from(busy).is_watch_list_unsupported());
        assert!(!ListWatchError::transport("resourceVersionMatch").is_watch_list_unsupported());
    }

    #[test]
    fn too_large_resource_version_is_recognised_by_cause_or_timeout_message() {
        assert!(
            ListWatchError::from(ApiStatus::too_large_resource_version("9", "5"))
                .is_too_large_resource_version()
        );
        let old = ApiStatus::new(504, "Timeout", "Too large resource version: 9, current: 5");
        assert!(ListWatchError::from(old).is_too_large_resource_version());
        let other = ApiStatus::new(500, "InternalError", "Too large resource version");
        assert!(!ListWatchError::from(other).is_too_large_resource_version());
    }

    #[test]
    fn too_many_requests_keeps_retry_after() {
        let e = ListWatchError::from(ApiStatus::too_many_requests(Some(Duration::from_secs(3))));
        assert!(e.is_too_many_requests());
        assert_eq!(e.retry_after(), Some(Duration::from_secs(3)));
        assert!(ListWatchError::connection_refused("down").is_connection_refused());
        assert!(!ListWatchError::transport("reset").is_connection_refused());
    }
}
