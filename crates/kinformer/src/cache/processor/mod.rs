//! Fan-out from the informer to its handlers: one [`ProcessorListener`] per handler, each with
//! a growing buffer and its own task, managed by a [`SharedProcessor`].
//!
//! Properties:
//! - *Isolation*: the consumer stage appends to buffers and never waits for a handler; a slow
//!   handler grows only its own buffer (visible through `pending` and `buffer_capacity`).
//!   The exception is opt-in: a handler registered as non-blocking may be called by the
//!   distributing task itself when nothing is buffered for it (no task wake-up per event); a
//!   call over budget sends it back to its own task.
//! - *Order*: each handler sees notifications in the order they were distributed.
//! - *Resync*: sync notifications go only to listeners whose own period is due; periods follow
//!   client-go's rules ([`plan_handler_resync`]).
//! - *Per-handler sync*: a [`ResourceEventHandlerRegistration`] is synced once the informer is
//!   and the handler has returned from every initial add.
//! - *Clean stop*: [`SharedProcessor::shutdown`] leaves no listener task behind.

mod delivery;
mod error;
mod listener;
mod notification;
mod registration;
mod resync;
mod shared_processor;

pub(crate) use delivery::Delivery;
pub use error::ProcessorError;
pub(crate) use listener::{Consumer, INLINE_BUDGET, ProcessorListener};
#[cfg(test)]
use listener::{INITIAL_BUFFER_SIZE, PROMOTE_AFTER};
pub use notification::Notification;
pub use registration::ResourceEventHandlerRegistration;
pub(crate) use resync::{ResyncPeriods, determine_resync_period, plan_handler_resync};
pub(crate) use shared_processor::{SharedProcessor, is_sync};

#[cfg(test)]
mod tests;
