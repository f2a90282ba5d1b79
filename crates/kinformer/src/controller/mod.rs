//! What client-go's controllers are built from, beyond the informer: owner references and the
//! indexes over them ([`controller_of`], [`controller_uid_index_func`],
//! [`controller_key_index_func`]), [`ControllerExpectations`] (a sync never acts on a cache
//! that does not show its own writes yet), and [`run_workers`], the worker loop of client-go's
//! pattern:
//!
//! ```text
//! informers ─▶ handlers enqueue keys ─▶ rate-limited queue ─▶ N workers: reconcile(key)
//!                                                 ▲  Ok(Done) → forget · Ok(RequeueAfter) → add_after
//!                                                 └─ Err → add_rate_limited (per-key backoff)
//! ```
//!
//! A queue of one kind holds plain `String` keys; one that holds several kinds holds
//! [`QueueKey`]s (kind and `namespace/name`).
//!
//! `kinformer demo`'s ReplicaSet controller is written with these pieces.

mod expectations;
mod owner;
mod queue_key;
mod runner;

pub use expectations::ControllerExpectations;
pub use owner::{
    CONTROLLER_KEY_INDEX, CONTROLLER_UID_INDEX, controller_key_index_func, controller_of,
    controller_uid_index_func, controlling_owner_key,
};
pub use queue_key::QueueKey;
pub use runner::{Action, run_workers};
