//! Rendering virtual time the way Kubernetes renders timestamps.

/// Formats virtual milliseconds since the simulation epoch (1970-01-01) as an
/// RFC 3339 timestamp, e.g. `1970-01-01T00:00:04.250Z`.
pub fn format_timestamp(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days as i64);
    // Digit by digit rather than with `format!`, whose machinery cost ten
    // times as much: every create and patch stamps a time.
    let mut text = String::with_capacity(24);
    let mut digits = |value: u64, width: u32, after: char| {
        for place in (0..width).rev() {
            text.push(char::from(b'0' + (value / 10u64.pow(place) % 10) as u8));
        }
        text.push(after);
    };
    // At least four digits for the year, as RFC 3339 spells it; more past 9999.
    let year = year as u64;
    digits(year, (year.checked_ilog10().unwrap_or(0) + 1).max(4), '-');
    digits(u64::from(month), 2, '-');
    digits(u64::from(day), 2, 'T');
    digits(rem / 3600, 2, ':');
    digits((rem / 60) % 60, 2, ':');
    digits(rem % 60, 2, '.');
    digits(ms % 1000, 3, 'Z');
    text
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian.
/// Howard Hinnant's algorithm: exact for every day, no tables.
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_and_millis_render_as_rfc3339() {
        assert_eq!(format_timestamp(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_timestamp(4_250), "1970-01-01T00:00:04.250Z");
        assert_eq!(format_timestamp(3_723_001), "1970-01-01T01:02:03.001Z");
    }

    #[test]
    fn day_rollover_and_leap_years_are_exact() {
        assert_eq!(format_timestamp(86_400_000), "1970-01-02T00:00:00.000Z");
        // 2000-02-29 is day 11016 since the epoch.
        assert_eq!(format_timestamp(11_016 * 86_400_000), "2000-02-29T00:00:00.000Z");
    }

    /// Written digit by digit, it reads as `format!` would write it, for
    /// times spread over the years RFC 3339 spells and past them.
    #[test]
    fn every_time_reads_as_the_formatted_one() {
        let formatted = |ms: u64| {
            let secs = ms / 1000;
            let (days, rem) = (secs / 86_400, secs % 86_400);
            let (year, month, day) = civil_from_days(days as i64);
            format!(
                "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
                rem / 3600,
                (rem / 60) % 60,
                rem % 60,
                ms % 1000
            )
        };
        let mut ms = 1_u64;
        while ms < 400_000_000_000_000 {
            for t in [ms, ms * 7 + 999, ms * 13 + 59_001] {
                assert_eq!(format_timestamp(t), formatted(t), "{t}");
            }
            ms = ms * 3 + 17;
        }
        assert_eq!(format_timestamp(u64::MAX), formatted(u64::MAX), "a five-digit year");
    }
}
