//! The handle returned when a handler is added.

use std::sync::Arc;

use futures::future::BoxFuture;

use crate::cache::processor::listener::ListenerShared;
use crate::cache::sync::HasSynced;

/// Identifies one added handler; client-go's `ResourceEventHandlerRegistration`. Cheap to
/// clone; pass it to `SharedProcessor::remove_listener` to remove the handler.
///
/// Its [`has_synced`](HasSynced::has_synced) is true once the upstream (the informer) has
/// synced *and* this handler has returned from every initial add
/// (`is_in_initial_list = true`) it was given — so a controller can wait until its own
/// handler has seen the initial list, not merely until the cache has it.
#[derive(Debug, Clone)]
pub struct ResourceEventHandlerRegistration {
    shared: Arc<ListenerShared>,
}

impl ResourceEventHandlerRegistration {
    pub(crate) fn new(shared: Arc<ListenerShared>) -> Self {
        Self { shared }
    }

    pub(crate) fn id(&self) -> u64 {
        self.shared.id
    }

    /// Notifications buffered for this handler and not yet delivered.
    pub fn pending(&self) -> usize {
        self.shared.pending()
    }

    /// The capacity of this handler's buffer (starts at 1024, doubles when full, never
    /// shrinks).
    pub fn buffer_capacity(&self) -> usize {
        self.shared.capacity()
    }

    /// Notifications delivered to the handler so far.
    pub fn delivered(&self) -> u64 {
        self.shared.delivered()
    }

    /// Initial adds given to the handler that it has not yet returned from.
    pub fn pending_initial_adds(&self) -> u64 {
        self.shared.tracker.pending()
    }

    /// True once the handler was removed or the processor stopped.
    pub fn is_removed(&self) -> bool {
        self.shared.is_closed()
    }

    /// Resolves once the handler's listener task has exited (after removal or shutdown); at
    /// once if the handler was removed before its task ever started. Never resolves while the
    /// handler is registered.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn stopped(&self) {
        self.shared.stopped.wait().await;
    }
}

impl HasSynced for ResourceEventHandlerRegistration {
    fn has_synced(&self) -> bool {
        self.shared.tracker.has_synced()
    }

    fn wait_synced(&self) -> BoxFuture<'_, ()> {
        self.shared.tracker.wait_synced()
    }
}
