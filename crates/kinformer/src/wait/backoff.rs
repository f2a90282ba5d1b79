//! [`Backoff`]: a capped, jittered, exponentially growing sequence of delays.

use std::time::Duration;

use super::error::InvalidBackoff;
use super::jitter::{jitter, scale};

/// Parameters and state of an exponential backoff (client-go's `wait.Backoff`).
///
/// Each [`step`](Backoff::step) hands out the current delay and grows the next one by
/// `factor`, for at most `steps` steps; then the delay stays where it is. The fields are
/// public so that a backoff can be written as a struct literal, as in client-go; prefer
/// [`Backoff::new`] when the values come from configuration, since it rejects negative and
/// NaN factors.
///
/// Invariants kept by [`step`](Backoff::step):
/// 1. `duration` only changes while `steps > 0`.
/// 2. If `cap > 0`, `duration` never grows past `cap`; the step that would pass it sets
///    `duration = cap` and `steps = 0`.
/// 3. Jitter is applied to the value handed out, never to the stored `duration`, so it can
///    take the returned delay above `cap` (up to `cap × (1 + jitter)`).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use kinformer::wait::Backoff;
///
/// let mut b = Backoff {
///     duration: Duration::from_millis(100),
///     factor: 2.0,
///     jitter: 0.0,
///     steps: 10,
///     cap: Duration::from_millis(500),
/// };
/// let delays: Vec<_> = (0..5).map(|_| b.step().as_millis()).collect();
/// // 800 ms would pass the cap: the cap is reached and the steps are used up.
/// assert_eq!(delays, [100, 200, 400, 500, 500]);
/// assert_eq!(b.steps, 0);
/// ```
///
/// [`Default`] is client-go's zero value: every field zero, so [`step`](Backoff::step)
/// always returns zero. Use it to fill the fields left out of a literal:
///
/// ```
/// use std::time::Duration;
/// use kinformer::wait::Backoff;
///
/// let mut b = Backoff { duration: Duration::from_secs(1), steps: 3, ..Backoff::default() };
/// // No factor: the delay stays constant while the steps count down.
/// assert_eq!([b.step(), b.step()], [Duration::from_secs(1); 2]);
/// assert_eq!(b.steps, 1);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Backoff {
    /// The delay the next [`step`](Backoff::step) hands out, before jitter.
    pub duration: Duration,
    /// What `duration` is multiplied by after each step; `0.0` keeps it constant.
    /// Must be `>= 0` and finite.
    pub factor: f64,
    /// Each delay handed out is [`jitter`]ed by this factor when it is `> 0`.
    /// Must be `>= 0` and finite.
    pub jitter: f64,
    /// How many more steps may change `duration`. For
    /// [`exponential_backoff`](super::exponential_backoff) it is also the maximum number of
    /// condition calls.
    pub steps: u32,
    /// Upper bound for `duration` (not for the jitter added on top); zero means no cap.
    pub cap: Duration,
}

impl Backoff {
    /// Builds a backoff after checking its parameters.
    ///
    /// # Errors
    ///
    /// [`InvalidBackoff::Factor`] or [`InvalidBackoff::Jitter`] if the factor or the jitter
    /// is negative, NaN or infinite.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use kinformer::wait::{Backoff, InvalidBackoff};
    ///
    /// let b = Backoff::new(Duration::from_secs(1), 1.5, 0.1, 5, Duration::ZERO)?;
    /// assert_eq!(b.steps, 5);
    /// assert_eq!(
    ///     Backoff::new(Duration::from_secs(1), -1.0, 0.0, 5, Duration::ZERO),
    ///     Err(InvalidBackoff::Factor(-1.0)),
    /// );
    /// # Ok::<(), InvalidBackoff>(())
    /// ```
    pub fn new(
        duration: Duration,
        factor: f64,
        jitter: f64,
        steps: u32,
        cap: Duration,
    ) -> Result<Self, InvalidBackoff> {
        let b = Backoff {
            duration,
            factor,
            jitter,
            steps,
            cap,
        };
        b.validate()?;
        Ok(b)
    }

    /// Checks the parameters of a backoff built as a struct literal.
    ///
    /// # Errors
    ///
    /// As [`Backoff::new`].
    pub fn validate(&self) -> Result<(), InvalidBackoff> {
        if !(self.factor.is_finite() && self.factor >= 0.0) {
            return Err(InvalidBackoff::Factor(self.factor));
        }
        if !(self.jitter.is_finite() && self.jitter >= 0.0) {
            return Err(InvalidBackoff::Jitter(self.jitter));
        }
        Ok(())
    }

    /// Returns the next delay and advances the backoff (client-go's `Backoff.Step`).
    ///
    /// - With `steps == 0`: returns `duration` (jittered if `jitter > 0`) and changes nothing.
    /// - Otherwise: decrements `steps`, returns the current `duration` (jittered if
    ///   `jitter > 0`) and, unless `factor == 0`, sets `duration = duration × factor`; if
    ///   `cap > 0` and that passes `cap`, sets `duration = cap` and `steps = 0`.
    ///
    /// This records a step: call it once per wait.
    pub fn step(&mut self) -> Duration {
        if self.steps < 1 {
            return self.jittered(self.duration);
        }
        self.steps -= 1;
        let current = self.duration;
        if self.factor != 0.0 {
            self.duration = scale(self.duration, self.factor);
            if !self.cap.is_zero() && self.duration > self.cap {
                self.duration = self.cap;
                self.steps = 0;
            }
        }
        self.jittered(current)
    }

    fn jittered(&self, d: Duration) -> Duration {
        if self.jitter > 0.0 {
            jitter(d, self.jitter)
        } else {
            d
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn backoff(duration: u64, factor: f64, steps: u32, cap: u64) -> Backoff {
        Backoff {
            duration: ms(duration),
            factor,
            jitter: 0.0,
            steps,
            cap: ms(cap),
        }
    }

    #[test]
    fn step_table() {
        struct Case {
            name: &'static str,
            start: Backoff,
            want: &'static [u64],
            end_duration: u64,
            end_steps: u32,
        }
        let cases = [
            Case {
                name: "no steps: constant and unchanged",
                start: backoff(100, 2.0, 0, 0),
                want: &[100, 100, 100],
                end_duration: 100,
                end_steps: 0,
            },
            Case {
                name: "doubling without cap, then steps exhausted",
                start: backoff(100, 2.0, 3, 0),
                want: &[100, 200, 400, 800, 800, 800],
                end_duration: 800,
                end_steps: 0,
            },
            Case {
                name: "doubling with cap reached exactly keeps stepping",
                start: backoff(100, 2.0, 5, 400),
                want: &[100, 200, 400, 400, 400, 400],
                end_duration: 400,
                end_steps: 0,
            },
            Case {
                name: "cap passed: duration = cap, steps = 0",
                start: backoff(100, 3.0, 10, 500),
                want: &[100, 300, 500, 500],
                end_duration: 500,
                end_steps: 0,
            },
            Case {
                name: "factor zero keeps duration but uses steps",
                start: backoff(100, 0.0, 2, 0),
                want: &[100, 100, 100],
                end_duration: 100,
                end_steps: 0,
            },
            Case {
                name: "factor below one shrinks",
                start: backoff(1000, 0.5, 3, 0),
                want: &[1000, 500, 250, 125, 125],
                end_duration: 125,
                end_steps: 0,
            },
            Case {
                name: "zero duration stays zero",
                start: backoff(0, 2.0, 3, 0),
                want: &[0, 0, 0, 0],
                end_duration: 0,
                end_steps: 0,
            },
        ];
        for case in cases {
            let mut b = case.start;
            let got: Vec<u64> = case
                .want
                .iter()
                .map(|_| b.step().as_millis() as u64)
                .collect();
            assert_eq!(got, case.want, "{}", case.name);
            assert_eq!(b.duration, ms(case.end_duration), "{}", case.name);
            assert_eq!(b.steps, case.end_steps, "{}", case.name);
        }
    }

    #[test]
    fn cap_step_counts_down_steps_exactly() {
        let mut b = backoff(100, 2.0, 10, 1000);
        b.step();
        assert_eq!(b.steps, 9);
        assert_eq!(b.duration, ms(200));
    }

    #[test]
    fn jitter_is_applied_to_the_returned_delay_only() {
        for _ in 0..200 {
            let mut b = Backoff {
                duration: ms(100),
                factor: 2.0,
                jitter: 0.5,
                steps: 2,
                cap: ms(150),
            };
            let first = b.step();
            assert!(first >= ms(100) && first < ms(150), "{first:?}");
            assert_eq!(b.duration, ms(150));
            assert_eq!(b.steps, 0);
            // Capped, and jitter may take the returned delay above the cap.
            let second = b.step();
            assert!(second >= ms(150) && second < ms(225), "{second:?}");
            assert_eq!(b.duration, ms(150));
        }
    }

    #[test]
    fn new_validates_factor_and_jitter() {
        let d = ms(1);
        assert!(Backoff::new(d, 0.0, 0.0, 1, Duration::ZERO).is_ok());
        assert!(Backoff::new(d, 2.0, 1.0, 1, d).is_ok());
        assert_eq!(
            Backoff::new(d, -0.1, 0.0, 1, d),
            Err(InvalidBackoff::Factor(-0.1))
        );
        assert_eq!(
            Backoff::new(d, 1.0, -2.0, 1, d),
            Err(InvalidBackoff::Jitter(-2.0))
        );
        assert_eq!(
            Backoff::new(d, f64::INFINITY, 0.0, 1, d),
            Err(InvalidBackoff::Factor(f64::INFINITY))
        );
        assert!(matches!(
            Backoff::new(d, f64::NAN, 0.0, 1, d),
            Err(InvalidBackoff::Factor(f)) if f.is_nan()
        ));
        assert!(matches!(
            Backoff::new(d, 1.0, f64::NAN, 1, d),
            Err(InvalidBackoff::Jitter(f)) if f.is_nan()
        ));
    }
}
