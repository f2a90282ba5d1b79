//! Yielding a worker thread so that a thread blocked elsewhere cannot hold the task up.
//!
//! `tokio::task::yield_now` (and tokio's budget, once spent) hands the task to its worker's
//! *deferred* list, which only that worker wakes, when it next returns to its scheduler. If
//! the worker then runs an event handler that blocks (waits on a lock, a channel, I/O — which
//! handlers do), the deferred task waits for the handler to return, however many other
//! workers are idle: a slow handler would stall the process loop or the other handlers'
//! listeners, which must not wait for it. [`give_way`] wakes the task itself instead, so it
//! goes to the back of its worker's run queue, from where an idle worker steals it.

use std::future::poll_fn;
use std::task::Poll;

/// Lets the other ready tasks of the worker run, then resumes (on whichever worker takes the
/// task first).
pub(crate) async fn give_way() {
    let mut yielded = false;
    poll_fn(|cx| {
        if yielded {
            return Poll::Ready(());
        }
        yielded = true;
        // Woken while it runs: the runtime queues the task again, at the back of the run
        // queue, once this poll returns.
        cx.waker().wake_by_ref();
        Poll::Pending
    })
    .await;
}
