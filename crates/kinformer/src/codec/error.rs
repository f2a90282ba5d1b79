//! The error of an object that could not be decoded.

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
