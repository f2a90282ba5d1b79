//! The consumer stage (client-go's `controller`): the reflector writes into it; it queues each
//! delta, pops it, applies it to the indexer and hands the resulting notifications to the
//! processor — on its own task (the process loop) until the initial sync and for backlogs, on
//! the writer's task for live events.

mod consumer;
mod process;
mod process_loop;

pub(crate) use consumer::DeltaConsumer;
pub(crate) use process::apply_deltas;
pub use process::process_deltas;
pub(crate) use process_loop::ProcessLoop;
