//! Randomised stretching of a duration, so that many clients do not act in lockstep.

use std::time::Duration;

/// Returns `duration` stretched by a random amount in `[0, max_factor × duration)`.
///
/// The result lies in `[duration, duration + max_factor × duration)`. A `max_factor` that is
/// not positive (including NaN) is treated as `1.0`, so the result is then between `duration`
/// and twice `duration`. This is client-go's `wait.Jitter`.
///
/// Arithmetic saturates: a result that does not fit a [`Duration`] becomes the largest
/// duration of `u64::MAX` nanoseconds.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use kinformer::wait::jitter;
///
/// let d = jitter(Duration::from_secs(10), 0.5);
/// assert!(d >= Duration::from_secs(10) && d < Duration::from_secs(15));
///
/// // A non-positive factor means "up to 100 %".
/// let d = jitter(Duration::from_secs(1), 0.0);
/// assert!(d >= Duration::from_secs(1) && d < Duration::from_secs(2));
/// ```
pub fn jitter(duration: Duration, max_factor: f64) -> Duration {
    // `!(x > 0.0)` also catches NaN, which client-go would turn into a garbage duration.
    let max_factor = if max_factor > 0.0 { max_factor } else { 1.0 };
    let extra = scale(duration, rand::random::<f64>() * max_factor);
    duration.saturating_add(extra)
}

/// Multiplies `duration` by `factor` the way Go does with `time.Duration(float64(d) * f)`:
/// in floating-point nanoseconds, truncated towards zero.
///
/// Negative or NaN products become zero; products beyond `u64::MAX` nanoseconds saturate.
pub(crate) fn scale(duration: Duration, factor: f64) -> Duration {
    let nanos = duration.as_nanos() as f64 * factor;
    // `as` from f64 to u64 truncates towards zero, maps NaN and negatives to 0 and saturates
    // at u64::MAX: exactly the clamping wanted here.
    Duration::from_nanos(nanos as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_stays_within_its_bounds() {
        let base = Duration::from_millis(100);
        for (factor, upper) in [
            (0.5, Duration::from_millis(150)),
            (1.0, Duration::from_millis(200)),
            (2.0, Duration::from_millis(300)),
            (0.0, Duration::from_millis(200)),
            (-3.0, Duration::from_millis(200)),
            (f64::NAN, Duration::from_millis(200)),
        ] {
            for _ in 0..1000 {
                let d = jitter(base, factor);
                assert!(
                    d >= base && d < upper,
                    "factor {factor}: {d:?} not in [{base:?}, {upper:?})"
                );
            }
        }
    }

    #[test]
    fn jitter_actually_varies() {
        let base = Duration::from_secs(1);
        let first = jitter(base, 1.0);
        assert!((0..100).any(|_| jitter(base, 1.0) != first));
    }

    #[test]
    fn jitter_of_zero_is_zero() {
        assert_eq!(jitter(Duration::ZERO, 1.0), Duration::ZERO);
    }

    #[test]
    fn jitter_saturates_instead_of_overflowing() {
        assert!(jitter(Duration::MAX, 1.0) >= Duration::from_nanos(u64::MAX));
    }

    #[test]
    fn scale_truncates_like_go() {
        let cases = [
            (Duration::from_nanos(3), 0.5, Duration::from_nanos(1)),
            (Duration::from_secs(1), 2.0, Duration::from_secs(2)),
            (Duration::from_millis(800), 2.0, Duration::from_millis(1600)),
            (Duration::from_secs(1), 0.0, Duration::ZERO),
            (Duration::from_secs(1), -1.0, Duration::ZERO),
            (Duration::from_secs(1), f64::NAN, Duration::ZERO),
            (
                Duration::from_secs(1),
                f64::INFINITY,
                Duration::from_nanos(u64::MAX),
            ),
        ];
        for (d, f, want) in cases {
            assert_eq!(scale(d, f), want, "{d:?} × {f}");
        }
    }
}
