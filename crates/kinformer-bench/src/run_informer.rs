//! An informer run by a bench: its task, and the wait for its first sync.

use std::time::Duration;

use kinformer::cache::{HasSynced, SharedIndexInformer};
use kube::Resource;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Runs `informer` on a task of its own until `cancel` (an error it ends with is printed,
/// after `who`), and waits at most `within` for its first sync.
///
/// # Errors
/// No sync within `within`.
pub(crate) async fn run_until_synced<K: Resource + Send + Sync + 'static>(
    informer: &SharedIndexInformer<K>,
    cancel: &CancellationToken,
    within: Duration,
    who: &str,
) -> Result<JoinHandle<()>, String> {
    let task = tokio::spawn({
        let (informer, cancel, who) = (informer.clone(), cancel.clone(), who.to_owned());
        async move {
            if let Err(e) = informer.run(cancel).await {
                eprintln!("{who}: informer stopped: {e}");
            }
        }
    });
    tokio::time::timeout(within, informer.wait_synced())
        .await
        .map_err(|_| format!("{who}: an informer did not sync within {within:?}"))?;
    Ok(task)
}
