//! Errors of the shared informer.

use crate::cache::processor::ProcessorError;
use crate::cache::store::IndexerError;

/// Why a [`SharedIndexInformer`](super::SharedIndexInformer) refused a request.
///
/// None is retryable on the same informer: `Stopped` and `AlreadyStarted` describe its
/// lifecycle, `Indexer` a bad index set-up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InformerError {
    /// The informer has stopped: it takes no new handlers and cannot run again.
    #[error("the informer has stopped")]
    Stopped,
    /// The request is only allowed before [`run`](super::SharedIndexInformer::run)
    /// (`run` itself, `set_watch_error_handler`).
    #[error("the informer has already started")]
    AlreadyStarted,
    /// `add_indexers` failed (a name conflict or an index function error).
    #[error(transparent)]
    Indexer(#[from] IndexerError),
    /// The shared processor refused the request.
    #[error(transparent)]
    Processor(ProcessorError),
}

impl From<ProcessorError> for InformerError {
    fn from(e: ProcessorError) -> Self {
        match e {
            ProcessorError::Stopped => InformerError::Stopped,
            other => InformerError::Processor(other),
        }
    }
}
