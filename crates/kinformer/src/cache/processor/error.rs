//! Errors of the shared processor.

/// Why the processor refused a request. Neither is retryable on the same processor.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProcessorError {
    /// The processor was shut down; it takes no new handlers and cannot run again.
    #[error("the shared processor has stopped")]
    Stopped,
    /// `start` was called outside a tokio runtime.
    #[error("the shared processor must be started inside a tokio runtime")]
    NoRuntime,
}
