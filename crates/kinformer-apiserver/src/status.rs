//! Kubernetes `meta.k8s.io/v1` `Status` errors, as the API server returns them.
//!
//! Every failed request answers with a `Status` object whose `code` is the HTTP status, whose
//! `reason` is one of Kubernetes' `StatusReason` values and whose `details` name the object.

use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use serde_json::{Value, json};

/// An API error, rendered as a `meta.k8s.io/v1` `Status`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{code} {reason}: {message}")]
pub struct ApiError {
    /// HTTP status code.
    pub code: u16,
    /// Kubernetes `StatusReason` (`NotFound`, `AlreadyExists`, `Conflict`, `Invalid`, ...).
    pub reason: &'static str,
    /// Human-readable message.
    pub message: String,
    /// `details` (name, group, kind, causes, retryAfterSeconds), if any.
    pub details: Option<Value>,
    /// Seconds for a `Retry-After` header (429 and 504 responses).
    pub retry_after: Option<u32>,
}

impl ApiError {
    /// A new error without details.
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            details: None,
            retry_after: None,
        }
    }

    /// Attaches `details`.
    #[must_use]
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 404 NotFound for a named object: `pods "x" not found`.
    pub fn not_found(group: &str, plural: &str, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", qualified(group, plural)),
        )
        .with_details(json!({"name": name, "group": group, "kind": plural}))
    }

    /// 404 NotFound for a path that names no resource.
    pub fn unknown_path(path: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("the server could not find the requested resource ({path})"),
        )
        .with_details(json!({}))
    }

    /// 409 AlreadyExists.
    pub fn already_exists(group: &str, plural: &str, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", qualified(group, plural)),
        )
        .with_details(json!({"name": name, "group": group, "kind": plural}))
    }

    /// 409 Conflict on a stale `resourceVersion`.
    pub fn conflict(group: &str, plural: &str, name: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; \
                 please apply your changes to the latest version and try again",
                qualified(group, plural)
            ),
        )
        .with_details(json!({"name": name, "group": group, "kind": plural}))
    }

    /// 422 Invalid with one field cause.
    pub fn invalid(kind: &str, group: &str, name: &str, field: &str, message: &str) -> Self {
        Self::new(
            422,
            "Invalid",
            format!("{kind} \"{name}\" is invalid: {field}: {message}"),
        )
        .with_details(json!({
            "name": name, "group": group, "kind": kind,
            "causes": [{"reason": "FieldValueInvalid", "message": message, "field": field}]
        }))
    }

    /// 410 Gone (reason `Expired`).
    pub fn gone(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    /// 410 Gone for a watch or list at a compacted resourceVersion.
    pub fn too_old(rv: u64) -> Self {
        Self::gone(format!("too old resource version: {rv}"))
    }

    /// 504 Timeout for a resourceVersion newer than the server's (cause `ResourceVersionTooLarge`).
    pub fn rv_too_large(requested: u64, current: u64) -> Self {
        let mut e = Self::new(
            504,
            "Timeout",
            format!("Too large resource version: {requested}, current: {current}"),
        )
        .with_details(json!({
            "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
            "retryAfterSeconds": 1
        }));
        e.retry_after = Some(1);
        e
    }

    /// 429 TooManyRequests with `Retry-After`.
    pub fn too_many_requests(retry_after: u32) -> Self {
        let mut e = Self::new(
            429,
            "TooManyRequests",
            "the server has received too many requests and has asked us to try again later",
        )
        .with_details(json!({"retryAfterSeconds": retry_after}));
        e.retry_after = Some(retry_after);
        e
    }

    /// 500 InternalError.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "InternalError", message)
    }

    /// 405 MethodNotAllowed.
    pub fn method_not_allowed() -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
    }

    /// 413 RequestEntityTooLarge.
    pub fn too_large(limit: usize) -> Self {
        Self::new(
            413,
            "RequestEntityTooLarge",
            format!("the request body is larger than {limit} bytes"),
        )
    }

    /// 408 `Timeout`: the request body did not arrive within `limit`.
    pub fn body_timeout(limit: std::time::Duration) -> Self {
        Self::new(
            408,
            "Timeout",
            format!("the request body was not received within {limit:?}"),
        )
    }

    /// 415 UnsupportedMediaType.
    pub fn unsupported_media_type(ct: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!("the body of the request was in an unknown format: {ct}"),
        )
    }

    /// The `Status` object as JSON.
    pub fn to_status(&self) -> Value {
        let mut v = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let (Some(d), Some(obj)) = (&self.details, v.as_object_mut()) {
            obj.insert("details".into(), d.clone());
        }
        v
    }
}

fn qualified(group: &str, plural: &str) -> String {
    if group.is_empty() {
        plural.to_string()
    } else {
        format!("{plural}.{group}")
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = Bytes::from(self.to_status().to_string());
        let mut resp = (code, body).into_response();
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Some(s) = self.retry_after {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(s));
        }
        resp
    }
}
