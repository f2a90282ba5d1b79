//! The delta queues that order an informer's changes (its consumer stage queues each write and
//! pops it): [`Delta`]s, the [`ReflectorSink`] a reflector writes into, the [`DeltaQueue`]
//! contract a consumer pops from, and its two implementations, [`DeltaFifo`] (client-go's `DeltaFIFO`) and
//! [`RealFifo`] (client-go's `RealFIFO`), which share one locked core.

mod core;
mod delta;
mod delta_fifo;
mod inputs;
mod queue;
mod real_fifo;
mod sink;

#[cfg(test)]
mod paged_tests;

pub use delta::{Delta, DeltaType};
pub use delta_fifo::DeltaFifo;
pub use queue::{DeltaQueue, KnownObjects, PopFuture, Popped, ProcessFn};
pub(crate) use real_fifo::INFORMER_MAX_LIVE_BATCH;
pub use real_fifo::RealFifo;
pub use sink::ReflectorSink;
