//! The one error type of this crate.

use std::fmt::Display;

/// Why bytes could not be decoded, or a value could not be encoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The bytes end inside a field, a length or a frame.
    #[error("truncated protobuf: {0}")]
    Truncated(&'static str),
    /// The bytes do not start with the Kubernetes protobuf magic `k8s\0`.
    #[error("not Kubernetes protobuf: the magic prefix k8s\\0 is missing")]
    MissingMagic,
    /// Structurally invalid protobuf (bad wire type, bad varint, invalid UTF-8, ...).
    #[error("invalid protobuf: {0}")]
    Invalid(String),
    /// The schema has no message for this `apiVersion` and `kind` (a custom resource, or a
    /// kind newer than the vendored `generated.proto` files).
    #[error("no protobuf schema for apiVersion {api_version:?}, kind {kind:?}")]
    UnknownKind {
        /// The `apiVersion` asked for.
        api_version: String,
        /// The `kind` asked for.
        kind: String,
    },
    /// A field name that the message does not have (encoding).
    #[error("message {message} has no field {field:?}")]
    UnknownField {
        /// The protobuf message's full name.
        message: String,
        /// The JSON field name.
        field: String,
    },
    /// The envelope's content encoding is not the identity (e.g. gzip): not supported.
    #[error("unsupported content encoding {0:?} in the protobuf envelope")]
    ContentEncoding(String),
    /// Nesting deeper than the decoder allows.
    #[error("protobuf nested deeper than {0} levels")]
    TooDeep(usize),
    /// A frame longer than the decoder allows.
    #[error("watch frame of {len} bytes exceeds the limit of {limit} bytes")]
    FrameTooLarge {
        /// The frame's announced length.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// Anything the serde data model reports (a value of the wrong shape for its field, a
    /// missing required field, ...).
    #[error("{0}")]
    Custom(String),
}

impl serde::de::Error for Error {
    fn custom<T: Display>(msg: T) -> Self {
        Error::Custom(msg.to_string())
    }
}

impl serde::ser::Error for Error {
    fn custom<T: Display>(msg: T) -> Self {
        Error::Custom(msg.to_string())
    }
}
