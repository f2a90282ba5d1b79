//! Panic containment for user callbacks (client-go's `runtime.HandleCrash` with
//! `ReallyCrash = false`): a panic is logged and the loop that called the callback goes on.

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};

use futures::FutureExt;

use super::condition::ConditionResult;

/// Calls `f` and awaits its future, catching a panic in either. Returns `None` after a panic.
///
/// Unwind safety is asserted: like client-go, the caller carries on with whatever state the
/// panicking callback left behind.
pub(crate) async fn handle_crash<F, Fut>(f: &mut F) -> Option<Fut::Output>
where
    F: FnMut() -> Fut,
    Fut: Future,
{
    let fut = match catch_unwind(AssertUnwindSafe(&mut *f)) {
        Ok(fut) => fut,
        Err(payload) => {
            log_panic(payload.as_ref());
            return None;
        }
    };
    match AssertUnwindSafe(fut).catch_unwind().await {
        Ok(out) => Some(out),
        Err(payload) => {
            log_panic(payload.as_ref());
            None
        }
    }
}

/// Runs one condition call with panic containment; a panic counts as "not done yet"
/// (what client-go's crash-protected condition call yields when it does not re-panic).
pub(crate) async fn run_condition<C, Fut>(
    condition: &mut C,
) -> Result<bool, <Fut::Output as ConditionResult>::Error>
where
    C: FnMut() -> Fut,
    Fut: Future,
    Fut::Output: ConditionResult,
{
    match handle_crash(condition).await {
        Some(out) => out.into_result(),
        None => Ok(false),
    }
}

fn log_panic(payload: &(dyn Any + Send)) {
    let message = if let Some(s) = payload.downcast_ref::<&str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.as_str()
    } else {
        "<non-string panic payload>"
    };
    tracing::error!(
        panic = message,
        "observed a panic in a wait callback; continuing"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn returns_the_output_when_nothing_panics() {
        let mut f = || async { 7 };
        assert_eq!(handle_crash(&mut f).await, Some(7));
    }

    #[tokio::test]
    async fn catches_a_panic_before_the_future_is_built() {
        let mut f = || -> std::future::Ready<()> { panic!("sync part") };
        assert_eq!(handle_crash(&mut f).await, None);
    }

    #[tokio::test]
    async fn catches_a_panic_inside_the_future() {
        let mut f = || async { panic!("async part {}", 1) };
        assert_eq!(handle_crash::<_, _>(&mut f).await, None::<()>);
    }

    #[tokio::test]
    async fn a_panicking_condition_counts_as_not_done() {
        let mut c = || async {
            if true {
                panic!("boom");
            }
            Ok::<bool, std::io::Error>(true)
        };
        assert!(matches!(run_condition(&mut c).await, Ok(false)));
    }
}
