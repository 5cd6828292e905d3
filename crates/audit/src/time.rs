//! Audit timestamps: `meta/v1.MicroTime`, RFC 3339 with microseconds
//! (`2024-05-01T12:00:00.104512Z`), as microseconds since the Unix epoch.
//! Nothing here reads a clock: times only come from the logs (or, for a
//! simulated run, from its virtual time).

/// Microseconds since 1970-01-01T00:00:00Z.
pub type Micros = i64;

/// A simulated run's virtual time in the audit format: milliseconds from
/// the Unix epoch, written with microsecond precision as API servers
/// write `MicroTime`.
pub fn from_virtual_ms(ms: u64) -> String {
    let text = recon_abi::format_timestamp(ms);
    // format_timestamp writes milliseconds ("…05.003Z"); MicroTime has six digits.
    match text.strip_suffix('Z') {
        Some(rest) => format!("{rest}000Z"),
        None => text,
    }
}

/// Parses an RFC 3339 timestamp (`Z` or a `±hh:mm` offset, any number of
/// fractional digits, of which the first six count).
pub fn parse(text: &str) -> Result<Micros, String> {
    let bad = || format!("not an RFC 3339 time: {text:?}");
    let b = text.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't' | b' ')
        || b[13] != b':'
        || b[16] != b':'
    {
        return Err(bad());
    }
    let num = |from: usize, to: usize| -> Result<i64, String> {
        let s = text.get(from..to).ok_or_else(bad)?;
        if !s.bytes().all(|c| c.is_ascii_digit()) {
            return Err(bad());
        }
        s.parse::<i64>().map_err(|_| bad())
    };
    let (year, month, day) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (hour, minute, second) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return Err(bad());
    }
    let mut i = 19;
    let mut micros = 0i64;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            if i - start < 6 {
                micros = micros * 10 + i64::from(b[i] - b'0');
            }
            i += 1;
        }
        if i == start {
            return Err(bad());
        }
        for _ in (i - start)..6 {
            micros *= 10;
        }
    }
    let offset_s = match b.get(i) {
        Some(b'Z' | b'z') if i + 1 == b.len() => 0,
        Some(sign @ (b'+' | b'-')) if i + 6 == b.len() && b[i + 3] == b':' => {
            let off = num(i + 1, i + 3)? * 3600 + num(i + 4, i + 6)? * 60;
            if *sign == b'+' { off } else { -off }
        }
        _ => return Err(bad()),
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offset_s;
    Ok(secs * 1_000_000 + micros)
}

/// Formats a time as RFC 3339 in UTC with microseconds, as the logs write it.
pub fn format(t: Micros) -> String {
    let secs = t.div_euclid(1_000_000);
    let micros = t.rem_euclid(1_000_000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = recon_abi::civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{micros:06}Z", rem / 3600, (rem / 60) % 60, rem % 60)
}

/// A time for prose: the time of day in UTC with milliseconds
/// (`12:00:05.003`), or microseconds when they are not whole milliseconds.
pub fn format_short(t: Micros) -> String {
    let full = format(t);
    let clock = &full[11..full.len() - 1];
    match clock.strip_suffix("000") {
        Some(ms) => ms.to_string(),
        None => clock.to_string(),
    }
}

/// A duration for prose: `2.996 s`, `850 ms`, `120 µs`.
pub fn format_duration(d: Micros) -> String {
    if d >= 1_000_000 {
        format!("{}.{:03} s", d / 1_000_000, (d % 1_000_000) / 1000)
    } else if d >= 1000 {
        format!("{} ms", d / 1000)
    } else {
        format!("{d} µs")
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// algorithm, the inverse of the one `recon_abi::format_timestamp` uses).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micro_time_parses_and_formats_back() {
        let t = parse("2024-05-01T12:00:00.104512Z").unwrap();
        assert_eq!(format(t), "2024-05-01T12:00:00.104512Z");
        assert_eq!(parse("1970-01-01T00:00:00Z"), Ok(0));
        assert_eq!(parse("1970-01-01T00:00:01.5Z"), Ok(1_500_000));
        // Offsets are folded into UTC; digits past the sixth are dropped.
        assert_eq!(parse("1970-01-01T01:00:00.0000019+01:00"), Ok(1));
        assert_eq!(parse("2000-02-29T00:00:00Z").map(format), Ok("2000-02-29T00:00:00.000000Z".into()));
    }

    #[test]
    fn virtual_time_becomes_micro_time_from_the_epoch() {
        assert_eq!(from_virtual_ms(5_003), "1970-01-01T00:00:05.003000Z");
        assert_eq!(parse(&from_virtual_ms(5_003)), Ok(5_003_000));
    }

    #[test]
    fn malformed_times_are_refused_not_guessed() {
        for bad in
            ["", "yesterday", "2024-05-01", "2024-13-01T00:00:00Z", "2024-05-01T12:00:00", "2024-05-01T12:00:00.Z"]
        {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn prose_times_and_durations_are_short() {
        assert_eq!(format_short(5_003_000), "00:00:05.003");
        assert_eq!(format_short(5_003_001), "00:00:05.003001");
        assert_eq!(format_duration(2_996_000), "2.996 s");
        assert_eq!(format_duration(850_000), "850 ms");
    }
}
