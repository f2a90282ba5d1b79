//! What the compact codec reports.

/// Why an object could not be encoded, or stored bytes could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    /// The object could not be serialized.
    #[error("cannot encode object: {0}")]
    Encode(String),
    /// Stored bytes are corrupt or not decodable as the object type.
    #[error("cannot decode stored object: {0}")]
    Decode(String),
    /// The dictionary could not be trained or loaded.
    #[error("dictionary: {0}")]
    Dictionary(String),
}
