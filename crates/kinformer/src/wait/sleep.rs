//! Cancellable sleeping shared by the loops of this module.

use std::time::Duration;

use tokio::time::{Instant, sleep_until};
use tokio_util::sync::CancellationToken;

/// The instant `delay` after `from`, or `None` if that is too far to represent (treated as
/// "never").
pub(crate) fn deadline_after(from: Instant, delay: Duration) -> Option<Instant> {
    from.checked_add(delay)
}

/// Sleeps until `deadline` (`None`: forever) unless `cancel` fires first.
///
/// Returns `true` if cancelled. Cancellation wins a tie with the deadline, so a cancelled
/// token never lets another attempt through.
pub(crate) async fn sleep_until_or_cancelled(
    cancel: &CancellationToken,
    deadline: Option<Instant>,
) -> bool {
    match deadline {
        Some(deadline) => tokio::select! {
            biased;
            () = cancel.cancelled() => true,
            () = sleep_until(deadline) => cancel.is_cancelled(),
        },
        None => {
            cancel.cancelled().await;
            true
        }
    }
}
