//! How a handler is registered: its resync period and whether it may be called on the
//! informer's watch task.

use std::time::Duration;

/// Options for [`SharedIndexInformer::add_event_handler_with_options`](crate::cache::SharedIndexInformer::add_event_handler_with_options)
/// (client-go's `HandlerOptions`, with one addition: `nonblocking`).
///
/// ```
/// use std::time::Duration;
/// use kinformer::cache::HandlerOptions;
///
/// let options = HandlerOptions::new()
///     .resync_period(Duration::from_secs(30))
///     .nonblocking(true);
/// assert_eq!(options.resync, Some(Duration::from_secs(30)));
/// assert!(options.nonblocking);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HandlerOptions {
    /// The handler's resync period (zero: never); `None` takes the informer's default. The
    /// period rules of [`add_event_handler_with_resync`](crate::cache::SharedIndexInformer::add_event_handler_with_resync) apply.
    pub resync: Option<Duration>,
    /// The handler returns quickly and never blocks — it enqueues a key, counts, sends on an
    /// unbounded channel. Once the informer has synced, a live notification may then be
    /// delivered on the informer's watch task when nothing is buffered for the handler,
    /// instead of waking the handler's own task: over HTTP, a burst of updates reaches such a
    /// handler sooner (the watch is read as the events arrive). Order, `has_synced` and panic
    /// handling are unchanged; a call that takes longer than its
    /// [`call_budget`](Self::call_budget) moves the handler back to its own task until it has
    /// been quick there for a while (1,024 calls in a row).
    ///
    /// A handler that may block (waits on a lock another handler holds, on a bounded channel,
    /// on I/O) must not set it: while it blocks, the watch and the cache wait too.
    pub nonblocking: bool,
    /// The longest call of a `nonblocking` handler before it is moved back to its own task;
    /// `None`: half a millisecond.
    pub call_budget: Option<Duration>,
}

impl HandlerOptions {
    /// The defaults: the informer's resync period, called on the handler's own task.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets [`resync`](Self::resync).
    #[must_use]
    pub fn resync_period(mut self, period: Duration) -> Self {
        self.resync = Some(period);
        self
    }

    /// Sets [`nonblocking`](Self::nonblocking).
    #[must_use]
    pub fn nonblocking(mut self, nonblocking: bool) -> Self {
        self.nonblocking = nonblocking;
        self
    }

    /// Sets [`call_budget`](Self::call_budget).
    #[must_use]
    pub fn call_budget(mut self, budget: Duration) -> Self {
        self.call_budget = Some(budget);
        self
    }
}
