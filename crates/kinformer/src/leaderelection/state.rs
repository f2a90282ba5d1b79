//! What an elector reports: its [`LeaderState`] and why a run stopped.

/// What a [`LeaderElector`](super::LeaderElector) publishes on its watch channel
/// ([`subscribe`](super::LeaderElector::subscribe)).
///
/// The changes of this value are client-go's callbacks: `leading` turning true is
/// *started leading*, turning false is *stopped leading*, and a change of `leader` is *new
/// leader observed*.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LeaderState {
    /// Whether this candidate is leading: it acquired the lease in the current run and has not
    /// yet given it up (lost it, or stopped).
    pub leading: bool,
    /// The holder identity most recently observed in the lock; `None` before the first
    /// observation and while nobody holds the lease (for example after a release).
    pub leader: Option<String>,
}

/// Why a run of a [`LeaderElector`](super::LeaderElector) returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopReason {
    /// The cancellation token fired (before or while leading).
    Cancelled,
    /// The leader could not renew within `renew_deadline` (or saw another holder), and gave up.
    LeadershipLost,
    /// The work given to [`run_while_leading`](super::LeaderElector::run_while_leading)
    /// returned by itself while this candidate was leading; it stepped down.
    WorkFinished,
}

/// The result of [`run_while_leading`](super::LeaderElector::run_while_leading).
#[derive(Debug)]
pub struct Stopped<T> {
    /// Why the run returned.
    pub reason: StopReason,
    /// The output of the work, if it was started (leadership was acquired).
    pub output: Option<T>,
    /// Whether the lease was released on the way out (only with `release_on_cancel`).
    pub released: bool,
}
