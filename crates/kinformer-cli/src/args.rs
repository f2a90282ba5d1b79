//! Argument parsing and process set-up shared by the subcommands: bounded durations and
//! rates (no value a user types can overflow a timer or spin a loop), logging that uses
//! colours only on a terminal, and running a subcommand's future to an exit code.

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

/// What a subcommand's main future returns, as a process exit code.
pub trait IntoExitCode {
    /// The exit code; errors are printed to stderr first.
    fn exit_code(self) -> i32;
}

impl IntoExitCode for i32 {
    fn exit_code(self) -> i32 {
        self
    }
}

/// `Ok(())`: 0.
impl<E: std::fmt::Display> IntoExitCode for Result<(), E> {
    fn exit_code(self) -> i32 {
        match self {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("error: {e}");
                1
            }
        }
    }
}

/// `Ok(true)`: 0 (success), `Ok(false)`: 1 (ran, but failed).
impl<E: std::fmt::Display> IntoExitCode for Result<bool, E> {
    fn exit_code(self) -> i32 {
        match self {
            Ok(true) => 0,
            Ok(false) => 1,
            Err(e) => {
                eprintln!("error: {e}");
                1
            }
        }
    }
}

/// Runs `main` to completion on a new multi-threaded runtime and returns its exit code
/// (1 if the runtime cannot start).
pub fn run_to_exit_code<F>(main: F) -> i32
where
    F: std::future::Future,
    F::Output: IntoExitCode,
{
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt.block_on(main).exit_code(),
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            1
        }
    }
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
