//! Resync period rules for handlers, as pure functions the informer calls when a handler is
//! added.
//!
//! Rules (client-go's `AddEventHandlerWithResyncPeriod` and `determineResyncPeriod`):
//! 1. A requested period of zero means "never resync" and stays zero.
//! 2. A requested period > 0 is raised to at least [`MINIMUM_RESYNC_PERIOD`] (1 s).
//! 3. A request shorter than the informer's check period: before the informer starts, it
//!    *lowers* the check period (and every listener's effective period is recomputed); after
//!    start the check period is fixed, so the request is *raised* to it.
//! 4. The effective period is `max(requested, check period)`, except that a zero check period
//!    (the informer never resyncs) makes it zero.

use std::time::Duration;

/// The shortest resync period a handler may ask for; shorter requests are raised to it.
pub const MINIMUM_RESYNC_PERIOD: Duration = Duration::from_secs(1);

/// A listener's resync periods: what its handler asked for (after the rules) and what it gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ResyncPeriods {
    /// The handler's period after rules 2 and 3; kept to recompute `effective` when the check
    /// period changes.
    pub requested: Duration,
    /// How often the listener actually receives resync notifications (zero: never).
    pub effective: Duration,
}

impl ResyncPeriods {
    /// A listener that never resyncs.
    #[cfg(test)]
    pub const NEVER: ResyncPeriods = ResyncPeriods {
        requested: Duration::ZERO,
        effective: Duration::ZERO,
    };
}

/// The outcome of adding a handler: its listener's periods and the informer's check period
/// afterwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HandlerResync {
    /// Periods for the new listener.
    pub periods: ResyncPeriods,
    /// The informer's resync check period after adding the handler. When it differs from the
    /// one passed in (only possible before start), the informer stores it and calls
    /// `SharedProcessor::resync_check_period_changed` with it.
    pub check_period: Duration,
}

/// The effective period of a listener: `desired` raised to `check_period`; zero when either
/// is zero. client-go's `determineResyncPeriod`.
///
/// ```text
/// use std::time::Duration;
/// use kinformer::cache::determine_resync_period;
/// let s = Duration::from_secs;
/// assert_eq!(determine_resync_period(s(5), s(10)), s(10));
/// assert_eq!(determine_resync_period(s(30), s(10)), s(30));
/// assert_eq!(determine_resync_period(s(30), s(0)), s(0));
/// assert_eq!(determine_resync_period(s(0), s(10)), s(0));
/// ```
pub fn determine_resync_period(desired: Duration, check_period: Duration) -> Duration {
    if desired.is_zero() {
        return desired;
    }
    if check_period.is_zero() {
        tracing::warn!(
            ?desired,
            "the informer does not resync (check period 0); the handler's resync period is ignored"
        );
        return Duration::ZERO;
    }
    if desired < check_period {
        tracing::warn!(
            ?desired,
            ?check_period,
            "handler resync period is shorter than the informer's check period; using the check period"
        );
        return check_period;
    }
    desired
}

/// Applies the rules above to a handler asking for `requested`, on an informer whose check
/// period is `check_period` and which has (`started`) or has not yet started.
///
/// ```text
/// use std::time::Duration;
/// use kinformer::cache::plan_handler_resync;
/// let s = Duration::from_secs;
/// // Before start, a shorter request lowers the check period.
/// let plan = plan_handler_resync(s(5), s(30), false);
/// assert_eq!((plan.periods.effective, plan.check_period), (s(5), s(5)));
/// // After start, it is raised to the check period.
/// let plan = plan_handler_resync(s(5), s(30), true);
/// assert_eq!((plan.periods.effective, plan.check_period), (s(30), s(30)));
/// ```
pub fn plan_handler_resync(
    requested: Duration,
    check_period: Duration,
    started: bool,
) -> HandlerResync {
    let mut requested = requested;
    let mut check = check_period;
    if !requested.is_zero() {
        if requested < MINIMUM_RESYNC_PERIOD {
            tracing::warn!(
                ?requested,
                "handler resync period is below the minimum; raised to 1s"
            );
            requested = MINIMUM_RESYNC_PERIOD;
        }
        if requested < check {
            if started {
                tracing::warn!(
                    ?requested,
                    ?check,
                    "handler added after start asks for a resync shorter than the check period; raised"
                );
                requested = check;
            } else {
                check = requested;
            }
        }
    }
    HandlerResync {
        periods: ResyncPeriods {
            requested,
            effective: determine_resync_period(requested, check),
        },
        check_period: check,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn period_rules_table() {
        // (requested, check, started) -> (requested', effective, check'), in milliseconds
        type Case = ((u64, u64, bool), (u64, u64, u64));
        let table: &[Case] = &[
            // zero stays zero, whatever the check period
            ((0, 0, false), (0, 0, 0)),
            ((0, 10_000, false), (0, 0, 10_000)),
            ((0, 10_000, true), (0, 0, 10_000)),
            // below the minimum: raised to 1 s, then it lowers the check period before start
            ((100, 10_000, false), (1_000, 1_000, 1_000)),
            // ... and is raised to the check period after start
            ((100, 10_000, true), (10_000, 10_000, 10_000)),
            // below the minimum with a check period below the minimum too (set by the
            // informer's own default): max(1 s, check)
            ((100, 500, false), (1_000, 1_000, 500)),
            ((100, 500, true), (1_000, 1_000, 500)),
            // shorter than check: lowers before start, raised after
            ((5_000, 30_000, false), (5_000, 5_000, 5_000)),
            ((5_000, 30_000, true), (30_000, 30_000, 30_000)),
            // longer than check: kept
            ((60_000, 30_000, false), (60_000, 60_000, 30_000)),
            ((60_000, 30_000, true), (60_000, 60_000, 30_000)),
            // equal to check
            ((30_000, 30_000, true), (30_000, 30_000, 30_000)),
            // the informer never resyncs (check 0): effective stays 0
            ((5_000, 0, false), (5_000, 0, 0)),
            ((5_000, 0, true), (5_000, 0, 0)),
        ];
        for &((req, check, started), (want_req, want_eff, want_check)) in table {
            let plan = plan_handler_resync(ms(req), ms(check), started);
            assert_eq!(
                plan,
                HandlerResync {
                    periods: ResyncPeriods {
                        requested: ms(want_req),
                        effective: ms(want_eff),
                    },
                    check_period: ms(want_check),
                },
                "requested={req}ms check={check}ms started={started}"
            );
        }
    }

    #[test]
    fn determine_resync_period_table() {
        let table = [
            (0, 0, 0),
            (0, 5, 0),
            (5, 0, 0),
            (5, 10, 10),
            (10, 10, 10),
            (20, 10, 20),
        ];
        for (desired, check, want) in table {
            assert_eq!(
                determine_resync_period(ms(desired), ms(check)),
                ms(want),
                "desired={desired} check={check}"
            );
        }
    }
}
