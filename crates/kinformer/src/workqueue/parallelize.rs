//! Running a number of pieces of work with bounded concurrency.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio_util::sync::CancellationToken;

/// Runs `f(0)`, `f(1)`, …, `f(pieces - 1)` with at most `workers` of them in progress at once
/// (`min(workers, pieces)` workers, each taking the next piece when it finishes one). The token
/// is checked before every piece: once it is cancelled no new piece starts, and the call returns
/// when the pieces in progress finish. Returns the number of pieces started.
///
/// The workers are futures polled concurrently by the calling task, which suits work that
/// waits (API calls); spawn tasks inside `f` for CPU-heavy pieces. `workers == 0` is treated
/// as 1.
///
/// # Cancel safety
///
/// Dropping the future drops the pieces in progress; pieces not yet started never start.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use tokio_util::sync::CancellationToken;
/// use kinformer::workqueue::parallelize_until;
///
/// let sum = AtomicUsize::new(0);
/// let started = parallelize_until(&CancellationToken::new(), 4, 10, |piece| {
///     let sum = &sum;
///     async move {
///         sum.fetch_add(piece, Ordering::Relaxed);
///     }
/// })
/// .await;
/// assert_eq!(started, 10);
/// assert_eq!(sum.load(Ordering::Relaxed), 45);
/// # }
/// ```
pub async fn parallelize_until<F, Fut>(
    cancel: &CancellationToken,
    workers: usize,
    pieces: usize,
    f: F,
) -> usize
where
    F: Fn(usize) -> Fut,
    Fut: Future<Output = ()>,
{
    let workers = workers.max(1).min(pieces);
    let next = AtomicUsize::new(0);
    let started = AtomicUsize::new(0);
    let worker = || async {
        loop {
            if cancel.is_cancelled() {
                return;
            }
            let piece = next.fetch_add(1, Ordering::Relaxed);
            if piece >= pieces {
                return;
            }
            started.fetch_add(1, Ordering::Relaxed);
            f(piece).await;
        }
    };
    futures::future::join_all((0..workers).map(|_| worker())).await;
    started.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn runs_every_piece_once_with_at_most_workers_in_flight() {
        let seen = parking_lot::Mutex::new(vec![0u32; 50]);
        let in_flight = AtomicUsize::new(0);
        let peak = AtomicUsize::new(0);
        let n = parallelize_until(&CancellationToken::new(), 4, 50, |piece| {
            let (seen, in_flight, peak) = (&seen, &in_flight, &peak);
            async move {
                let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(10)).await;
                seen.lock()[piece] += 1;
                in_flight.fetch_sub(1, Ordering::SeqCst);
            }
        })
        .await;
        assert_eq!(n, 50);
        assert!(seen.lock().iter().all(|&c| c == 1));
        assert_eq!(peak.load(Ordering::SeqCst), 4);
    }

    #[tokio::test(start_paused = true)]
    async fn uses_no_more_workers_than_pieces() {
        let peak = AtomicUsize::new(0);
        let in_flight = AtomicUsize::new(0);
        parallelize_until(&CancellationToken::new(), 10, 3, |_| {
            let (in_flight, peak) = (&in_flight, &peak);
            async move {
                let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(1)).await;
                in_flight.fetch_sub(1, Ordering::SeqCst);
            }
        })
        .await;
        assert_eq!(peak.load(Ordering::SeqCst), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn cancellation_stops_new_pieces() {
        let token = CancellationToken::new();
        let done = AtomicUsize::new(0);
        let n = parallelize_until(&token, 2, 100, |piece| {
            let (token, done) = (&token, &done);
            async move {
                tokio::time::sleep(Duration::from_millis(1)).await;
                done.fetch_add(1, Ordering::SeqCst);
                if piece == 5 {
                    token.cancel();
                }
            }
        })
        .await;
        // Pieces 0..=5 plus at most the one the other worker had started.
        assert!((6..=7).contains(&n), "started {n}");
        assert_eq!(done.load(Ordering::SeqCst), n);
    }

    #[tokio::test]
    async fn cancelled_token_runs_nothing() {
        let token = CancellationToken::new();
        token.cancel();
        assert_eq!(parallelize_until(&token, 3, 10, |_| async {}).await, 0);
    }
}
