//! What a distribution left for the distributing task to deliver itself.

use std::sync::Arc;

use crate::cache::processor::ProcessorListener;

/// The non-blocking listeners that took a distribution's offer (see
/// [`SharedProcessor::distribute_marked`](crate::cache::processor::SharedProcessor::distribute_marked)):
/// their tasks were not woken, so the processor delivers to them on the distributing task when
/// [`deliver`](Self::deliver) is called, once the caller holds no lock a handler could need
/// (a handler may register another handler, which takes the informer's delta lock).
///
/// Dropped without `deliver`, it wakes the listeners' tasks instead: nothing is left buffered
/// unseen.
#[must_use = "deliver it once no lock is held, or the listeners wait for their tasks"]
pub(crate) struct Delivery<K> {
    listeners: Vec<Arc<ProcessorListener<K>>>,
}

impl<K> Delivery<K> {
    /// Nothing to deliver.
    pub(crate) fn none() -> Self {
        Self {
            listeners: Vec::new(),
        }
    }

    pub(super) fn push(&mut self, listener: Arc<ProcessorListener<K>>) {
        self.listeners.push(listener);
    }

    /// Whether no listener took the offer.
    pub(crate) fn is_empty(&self) -> bool {
        self.listeners.is_empty()
    }
}

impl<K: Send + Sync + 'static> Delivery<K> {
    /// Delivers to each listener that took the offer, in registration order, on this task
    /// (each for about a delivery slice and within its call budget; what is left goes to the
    /// listener's task).
    pub(crate) fn deliver(mut self) {
        for listener in std::mem::take(&mut self.listeners) {
            listener.help();
        }
    }
}

impl<K> Drop for Delivery<K> {
    fn drop(&mut self) {
        for listener in &self.listeners {
            listener.wake();
        }
    }
}
