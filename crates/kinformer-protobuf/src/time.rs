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

/// An RFC 3339 time of years 0000–9999 (up to jiff's last second) written without allocating (the decoder's hot path:
/// every object has a `creationTimestamp`): exactly what [`format_seconds`] and
/// [`format_micros`] write, which remain for other years and out-of-range values.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Text {
    buf: [u8; 27],
    len: usize,
}

impl Text {
    /// `Time`'s form of `seconds`, or `None` outside years 0000–9999.
    pub(crate) fn seconds(seconds: i64) -> Option<Text> {
        let mut t = Text::civil(seconds)?;
        t.buf[19] = b'Z';
        t.len = 20;
        Some(t)
    }

    /// `MicroTime`'s form, or `None` outside years 0000–9999 or for nanos out of range.
    pub(crate) fn micros(seconds: i64, nanos: i32) -> Option<Text> {
        if !(0..1_000_000_000).contains(&nanos) {
            return None;
        }
        let mut t = Text::civil(seconds)?;
        t.buf[19] = b'.';
        digits(&mut t.buf[20..26], (nanos / 1000) as u32);
        t.buf[26] = b'Z';
        t.len = 27;
        Some(t)
    }

    /// `YYYY-MM-DDTHH:MM:SS` in the first 19 bytes.
    fn civil(seconds: i64) -> Option<Text> {
        // Outside jiff's range, the formatted form is an error: so is this one.
        if seconds > Timestamp::MAX.as_second() {
            return None;
        }
        let (days, secs) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
        // Days since 1970-01-01 to a proleptic Gregorian date (H. Hinnant's `civil_from_days`).
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = doy - (153 * mp + 2) / 5 + 1;
        let month = if mp < 10 { mp + 3 } else { mp - 9 };
        let year = yoe + era * 400 + i64::from(month <= 2);
        if !(0..=9999).contains(&year) {
            return None;
        }
        let mut buf = [0u8; 27];
        digits(&mut buf[0..4], year as u32);
        buf[4] = b'-';
        digits(&mut buf[5..7], month as u32);
        buf[7] = b'-';
        digits(&mut buf[8..10], day as u32);
        buf[10] = b'T';
        digits(&mut buf[11..13], (secs / 3600) as u32);
        buf[13] = b':';
        digits(&mut buf[14..16], (secs / 60 % 60) as u32);
        buf[16] = b':';
        digits(&mut buf[17..19], (secs % 60) as u32);
        Some(Text { buf, len: 19 })
    }

    pub(crate) fn as_str(&self) -> &str {
        // Only ASCII digits and separators are written.
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or_default()
    }
}

/// `n` in decimal, zero-padded to `out.len()` digits.
fn digits(out: &mut [u8], mut n: u32) {
    for b in out.iter_mut().rev() {
        *b = b'0' + (n % 10) as u8;
        n /= 10;
    }
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

    #[test]
    fn the_fast_form_is_the_formatted_one_in_years_0_to_9999() {
        let min = -62_167_219_200; // 0000-01-01T00:00:00Z
        let max = Timestamp::MAX.as_second(); // 9999-12-30T22:00:00Z
        let mut seconds = vec![
            min,
            min + 1,
            max,
            max - 1,
            -1,
            0,
            1,
            951_782_400,
            1_700_000_000,
        ];
        // A spread over the whole range, leap days and year ends included.
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            seconds.push(min + (x % (max - min + 1) as u64) as i64);
        }
        for s in seconds {
            assert_eq!(
                Text::seconds(s).unwrap().as_str(),
                format_seconds(s).unwrap(),
                "{s}"
            );
            let nanos = (s.rem_euclid(1_000_000_000)) as i32;
            assert_eq!(
                Text::micros(s, nanos).unwrap().as_str(),
                format_micros(s, nanos).unwrap(),
                "{s} {nanos}"
            );
        }
        assert!(Text::seconds(min - 1).is_none() && Text::seconds(max + 1).is_none());
        assert!(Text::micros(0, -1).is_none() && Text::micros(0, 1_000_000_000).is_none());
    }
}
