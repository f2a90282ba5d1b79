//! The process loop (client-go's `controller`): pops deltas from the queue, applies them to the
//! indexer and hands the resulting notifications to the processor.

mod consumer;
mod process;
mod process_loop;

pub(crate) use consumer::DeltaConsumer;
pub(crate) use process::apply_deltas;
pub use process::process_deltas;
pub(crate) use process_loop::{ProcessLoop, SyncingSink};
