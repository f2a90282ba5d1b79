//! Argument parsing and process set-up shared by the subcommands: bounded durations and
//! rates (no value a user types can overflow a timer or spin a loop) and logging that uses
//! colours only on a terminal.

use std::io::IsTerminal;
use std::time::Duration;

/// The longest duration any option accepts: one year, in seconds.
pub const MAX_SECS: u64 = 365 * 24 * 60 * 60;

/// Parses a number of seconds (fractions allowed) between 0 and [`MAX_SECS`].
///
/// # Errors
/// A message for values that are not numbers, negative, not finite or too large.
pub fn parse_secs(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds"))?;
    if !secs.is_finite() || !(0.0..=MAX_SECS as f64).contains(&secs) {
        return Err(format!(
            "{s:?} is out of range: use a number of seconds from 0 to {MAX_SECS}"
        ));
    }
    Duration::try_from_secs_f64(secs).map_err(|e| format!("{s:?}: {e}"))
}

/// Parses a rate (per second) between 0 and `max`.
///
/// # Errors
/// A message for values that are not numbers, negative, not finite or above `max`.
pub fn parse_rate(s: &str, max: f64) -> Result<f64, String> {
    let rate: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number"))?;
    if rate.is_finite() && (0.0..=max).contains(&rate) {
        Ok(rate)
    } else {
        Err(format!(
            "{s:?} is out of range: use a rate from 0 to {max} per second"
        ))
    }
}

/// Sends `tracing` output to stderr, filtered by `RUST_LOG` or `default_filter`, with ANSI
/// colours only when stderr is a terminal.
pub fn init_logging(default_filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_bounded_and_finite() {
        assert_eq!(parse_secs("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_secs("0"), Ok(Duration::ZERO));
        for bad in ["inf", "-inf", "NaN", "-1", "1e300", "31536001", "x", ""] {
            assert!(parse_secs(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rates_are_bounded_and_finite() {
        assert_eq!(parse_rate("100", 1e6), Ok(100.0));
        for bad in ["inf", "NaN", "-1", "1e12", "y"] {
            assert!(parse_rate(bad, 1e6).is_err(), "{bad}");
        }
    }
}
