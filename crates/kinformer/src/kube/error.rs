//! Mapping `kube::Error` onto [`ListWatchError`].

use crate::cache::listwatch::{DecodeError, ListWatchError};
use crate::codec::api_status;

/// True if any error in the chain is an I/O "connection refused" (or says so, for wrappers
/// that keep only the text).
fn refused(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = Some(err);
    while let Some(e) = cur {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            return true;
        }
        if e.to_string()
            .to_ascii_lowercase()
            .contains("connection refused")
        {
            return true;
        }
        cur = e.source();
    }
    false
}

/// Maps a kube client error. API errors keep code, reason, causes and Retry-After (from the
/// status body's `details.retryAfterSeconds`: kube does not expose response headers, and the
/// API server sets both to the same value).
pub(crate) fn from_kube(err: ::kube::Error) -> ListWatchError {
    match err {
        ::kube::Error::Api(status) => ListWatchError::Api(api_status(&status)),
        ::kube::Error::SerdeError(e) => ListWatchError::Decode(DecodeError::new(e.to_string())),
        ::kube::Error::BuildRequest(e) => ListWatchError::InvalidRequest(e.to_string()),
        other => {
            let message = other.to_string();
            if refused(&other) {
                ListWatchError::connection_refused(message)
            } else {
                ListWatchError::transport(message)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_errors_keep_their_status() {
        let status = kube_core::Status::failure("slow down", "TooManyRequests").with_code(429);
        let e = from_kube(::kube::Error::Api(status.boxed()));
        assert!(e.is_too_many_requests());
    }

    #[test]
    fn refused_connections_are_recognised_through_the_chain() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "nope");
        let e = from_kube(::kube::Error::ReadEvents(io));
        assert!(e.is_connection_refused());
        let other = from_kube(::kube::Error::ReadEvents(std::io::Error::other("reset")));
        assert!(!other.is_connection_refused());
    }
}
