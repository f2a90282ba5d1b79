//! What both delta queues take from the consumer's side: the store of known objects and the
//! transform, with their builders written once.

use std::sync::Arc;

use crate::cache::fifo::KnownObjects;
use crate::cache::store::TransformFunc;

/// A queue's known objects and transform.
pub(crate) struct Inputs<K> {
    /// The consumer's store, if set.
    pub(crate) known_objects: Option<Arc<dyn KnownObjects<K>>>,
    /// The transform, if set.
    pub(crate) transformer: Option<TransformFunc<K>>,
}

impl<K> Inputs<K> {
    /// Neither set.
    pub(crate) fn none() -> Self {
        Self {
            known_objects: None,
            transformer: None,
        }
    }

    /// Runs the transform, if any, on an incoming object.
    pub(crate) fn transform(&self, obj: Arc<K>) -> Arc<K> {
        match &self.transformer {
            Some(t) => t(obj),
            None => obj,
        }
    }
}

/// The `with_known_objects` and `with_transformer` builders of a FIFO over its [`Inputs`]
/// field `inputs`.
macro_rules! impl_inputs_builders {
    ($fifo:ident) => {
        impl<K> $fifo<K> {
            /// Sets the consumer's store (normally the informer's
            /// [`Indexer`](crate::cache::store::Indexer)): used to find deletions missed
            /// during a relist, to resync, and (DeltaFIFO) to decide whether a delete of an
            /// unqueued key is relevant.
            #[must_use]
            pub fn with_known_objects(
                mut self,
                known: std::sync::Arc<dyn crate::cache::fifo::KnownObjects<K>>,
            ) -> Self {
                self.inputs.known_objects = Some(known);
                self
            }

            /// Sets a transformer run once per incoming object (never on tombstones or
            /// resyncs).
            #[must_use]
            pub fn with_transformer(
                mut self,
                transformer: crate::cache::store::TransformFunc<K>,
            ) -> Self {
                self.inputs.transformer = Some(transformer);
                self
            }
        }
    };
}
pub(crate) use impl_inputs_builders;
