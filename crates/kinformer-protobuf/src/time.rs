//! `meta.v1.Time` and `MicroTime`: protobuf `{seconds, nanos}` ⇄ Go's RFC 3339 JSON strings.
//!
//! As in Go: `Time` carries whole seconds on both forms (Go writes no nanos for it), and
//! `MicroTime` microseconds, with six fractional digits in JSON.

use jiff::Timestamp;

use crate::error::Error;

fn timestamp(seconds: i64, nanos: i32) -> Result<Timestamp, Error> {
    Timestamp::new(seconds, nanos)
        .map_err(|e| Error::Invalid(format!("time out of range ({seconds} s, {nanos} ns): {e}")))
}

/// `Time`'s JSON form: `2006-01-02T15:04:05Z`.
pub(crate) fn format_seconds(seconds: i64) -> Result<String, Error> {
    let ts = timestamp(seconds, 0)?;
    jiff::fmt::strtime::format("%Y-%m-%dT%H:%M:%SZ", ts).map_err(|e| Error::Invalid(e.to_string()))
}

/// `MicroTime`'s JSON form: `2006-01-02T15:04:05.000000Z`.
pub(crate) fn format_micros(seconds: i64, nanos: i32) -> Result<String, Error> {
    let ts = timestamp(seconds, nanos - nanos.rem_euclid(1000))?;
    jiff::fmt::strtime::format("%Y-%m-%dT%H:%M:%S%.6fZ", ts)
        .map_err(|e| Error::Invalid(e.to_string()))
}

/// Seconds and nanoseconds of an RFC 3339 time.
pub(crate) fn parse(s: &str) -> Result<(i64, i32), Error> {
    let ts: Timestamp = s
        .parse()
        .map_err(|e| Error::Custom(format!("invalid time {s:?}: {e}")))?;
    Ok((ts.as_second(), ts.subsec_nanosecond()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_format_as_go_does_and_parse_back() {
        assert_eq!(format_seconds(0).unwrap(), "1970-01-01T00:00:00Z");
        assert_eq!(
            format_seconds(1_700_000_000).unwrap(),
            "2023-11-14T22:13:20Z"
        );
        assert_eq!(
            format_micros(1_700_000_000, 123_456_789).unwrap(),
            "2023-11-14T22:13:20.123456Z"
        );
        assert_eq!(format_micros(1, 0).unwrap(), "1970-01-01T00:00:01.000000Z");
        assert_eq!(parse("2023-11-14T22:13:20Z").unwrap(), (1_700_000_000, 0));
        assert_eq!(
            parse("2023-11-14T23:13:20.5+01:00").unwrap(),
            (1_700_000_000, 500_000_000)
        );
        assert!(parse("yesterday").is_err());
        assert!(format_seconds(i64::MAX).is_err());
    }
}
