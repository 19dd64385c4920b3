//! Parsing of the human units used on the command line and in files: durations
//! (`10s`, `300ms`, `1.5m`, `250us`), duration ranges (`300ms..1s`) and sizes.
//! Every parser returns a one-line message naming the input it rejected.
use std::time::Duration;

/// Parses `10s`, `300ms`, `250us`, `2m`, `1h`, `1.5s`. A bare number is seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    if t.is_empty() {
        return Err("empty duration (expected e.g. 10s, 300ms)".into());
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("invalid duration '{s}' (expected e.g. 10s, 300ms, 1.5m)"))?;
    let scale = match unit.trim() {
        "" | "s" | "sec" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "ns" => 1e-9,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        other => {
            return Err(format!(
                "invalid duration unit '{other}' in '{s}' (use ns, us, ms, s, m or h)"
            ))
        }
    };
    let secs = value * scale;
    if !secs.is_finite() || secs > 1e9 {
        return Err(format!("duration '{s}' is out of range"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Parses `300ms..1s` (uniform range) or a single duration (a fixed value).
pub fn parse_duration_range(s: &str) -> Result<(Duration, Duration), String> {
    match s.split_once("..") {
        Some((a, b)) => {
            let lo = parse_duration(a)?;
            let hi = parse_duration(b)?;
            if hi < lo {
                return Err(format!(
                    "range '{s}': the upper bound is below the lower one"
                ));
            }
            Ok((lo, hi))
        }
        None => {
            let d = parse_duration(s)?;
            Ok((d, d))
        }
    }
}

/// Splits a `k`/`M` suffix (thousands, millions) off a number: `1.5k` → ("1.5", 1e3).
fn split_multiplier(t: &str) -> (&str, f64) {
    if let Some(n) = t.strip_suffix(['k', 'K']) {
        (n, 1e3)
    } else if let Some(n) = t.strip_suffix('M') {
        (n, 1e6)
    } else {
        (t, 1.0)
    }
}

/// The highest rate the engine is asked for, requests/s (`--rate`, and a replay's mean rate).
pub const MAX_RATE: f64 = 10_000_000.0;

/// Parses a positive rate in requests per second (`2000`, `1.5k`, `2500.5`, `1M`).
pub fn parse_rate(s: &str) -> Result<f64, String> {
    let (num, mult) = split_multiplier(s.trim());
    let v: f64 = num
        .parse()
        .map_err(|_| format!("invalid rate '{s}' (expected requests per second, e.g. 2000)"))?;
    let v = v * mult;
    if !v.is_finite() || v <= 0.0 {
        return Err(format!("rate '{s}' must be a positive number"));
    }
    if v > MAX_RATE {
        return Err(format!("rate '{s}' is above the supported 10M req/s"));
    }
    Ok(v)
}

/// Parses a positive speed factor (`2` twice as fast, `0.5` half as fast, `1k`).
pub fn parse_speed(s: &str) -> Result<f64, String> {
    let (num, mult) = split_multiplier(s.trim());
    let v: f64 = num.parse().map_err(|_| {
        format!("invalid speed '{s}' (expected a factor, e.g. 2 for twice as fast)")
    })?;
    let v = v * mult;
    if !v.is_finite() || v <= 0.0 {
        return Err(format!("speed '{s}' must be a positive factor"));
    }
    Ok(v)
}

/// Parses a whole count (`1000`, `10k`, `1.5k`, `10M`): requests, users, connections.
pub fn parse_count(s: &str) -> Result<u64, String> {
    let (num, mult) = split_multiplier(s.trim());
    let v: f64 = num
        .parse()
        .map_err(|_| format!("invalid number '{s}' (expected e.g. 1000, 10k, 2M)"))?;
    let v = v * mult;
    if !v.is_finite() || !(0.0..=1e15).contains(&v) || v.fract() != 0.0 {
        return Err(format!("'{s}' is not a whole number in range"));
    }
    Ok(v as u64)
}

/// Parses a share: `20%` or `0.2`, between 0 and 1.
pub fn parse_share(s: &str) -> Result<f64, String> {
    let v = match s.trim().strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
        None => s.trim().parse::<f64>(),
    }
    .map_err(|_| format!("'{s}' is not a percentage (e.g. 20%)"))?;
    if !(0.0..=1.0).contains(&v) {
        return Err(format!("'{s}' must be between 0% and 100%"));
    }
    Ok(v)
}

/// Formats a duration as a user would type it: `850µs`, `300ms`, `5s`, `1.5s`, `2m`.
pub fn fmt_duration(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 60.0 && s % 60.0 == 0.0 {
        format!("{}m", s as u64 / 60)
    } else if s >= 1.0 {
        let t = format!("{s:.3}");
        format!("{}s", t.trim_end_matches('0').trim_end_matches('.'))
    } else if d.subsec_micros() % 1000 == 0 {
        format!("{}ms", d.as_millis())
    } else {
        format!("{}µs", d.as_micros())
    }
}

/// Formats a millisecond value compactly.
pub fn fmt_ms(ms: f64) -> String {
    if ms < 1.0 {
        format!("{:.0}µs", ms * 1e3)
    } else if ms < 100.0 {
        format!("{ms:.2}ms")
    } else if ms < 10_000.0 {
        format!("{ms:.0}ms")
    } else {
        format!("{:.1}s", ms / 1e3)
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm): the
/// inverse of [`utc_fields`]' date, for the dates of access logs and cookies.
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// UTC calendar fields (year, month, day, hour, minute, second) of Unix seconds; the civil
/// date from days since 1970-01-01 (Howard Hinnant's algorithm), no time-zone database needed.
pub fn utc_fields(secs: u64) -> (i64, i64, i64, u64, u64, u64) {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d, rem / 3600, rem % 3600 / 60, rem % 60)
}

/// A number without needless decimals: 400, 12.5, 0.25.
pub fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        "n/a".to_string()
    } else if v == v.round() || v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// A count or a rate with the suffixes the flags take: 400, 1.5k, 100M.
pub fn fmt_si(v: f64) -> String {
    if v >= 1e6 {
        format!("{}M", fmt_num(v / 1e6))
    } else if v >= 1e3 {
        format!("{}k", fmt_num(v / 1e3))
    } else {
        fmt_num(v)
    }
}

/// Formats Unix milliseconds as `YYYY-MM-DD HH:MM:SS UTC`.
pub fn fmt_unix_ms(ms: u64) -> String {
    let (y, m, d, hh, mm, ss) = crate::units::utc_fields(ms / 1000);
    format!("{y:04}-{m:02}-{d:02} {hh:02}:{mm:02}:{ss:02} UTC")
}

/// A command line as one could paste it into a shell.
pub fn shell_join(args: &[String]) -> String {
    args.iter()
        .map(|a| {
            let plain = !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./:=,@%+".contains(c));
            if plain {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `s` with control characters written as `\xNN` (and `\\` doubled), so text from a file, a
/// URL or a results folder cannot move the cursor, clear the screen or forge lines when it
/// reaches a terminal or a data file.
pub fn escape_controls(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(|c| c.is_control() || c == '\\') {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    out.push_str(&format!("\\x{b:02x}"));
                }
            }
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_from_civil_inverts_utc_fields() {
        // Leap days, century rules, the epoch, and dates before it.
        for secs in [0u64, 951_782_400, 4_107_542_400, 1_709_251_199, 86_399] {
            let (y, m, d, ..) = utc_fields(secs);
            assert_eq!(days_from_civil(y, m, d), (secs / 86_400) as i64, "{secs}");
        }
        assert_eq!(days_from_civil(1969, 12, 31), -1);
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("300ms").unwrap(), Duration::from_millis(300));
        assert_eq!(parse_duration("1.5m").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
        assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
        assert!(parse_duration("10x").unwrap_err().contains("10x"));
        assert!(parse_duration("").is_err());
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("s").is_err());
    }

    #[test]
    fn ranges() {
        assert_eq!(
            parse_duration_range("300ms..1s").unwrap(),
            (Duration::from_millis(300), Duration::from_secs(1))
        );
        assert_eq!(
            parse_duration_range("5ms").unwrap(),
            (Duration::from_millis(5), Duration::from_millis(5))
        );
        assert!(parse_duration_range("1s..300ms").is_err());
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("2000").unwrap(), 2000.0);
        assert_eq!(parse_rate("1.5k").unwrap(), 1500.0);
        assert!(parse_rate("0").is_err());
        assert!(parse_rate("abc").unwrap_err().contains("abc"));
        assert!(parse_rate("nan").is_err());
        assert_eq!(parse_rate("2M").unwrap(), 2e6);
        assert!(parse_rate("20M").unwrap_err().contains("10M"));
    }

    #[test]
    fn counts() {
        assert_eq!(parse_count("1000").unwrap(), 1000);
        assert_eq!(parse_count("10k").unwrap(), 10_000);
        assert_eq!(parse_count("1.5k").unwrap(), 1500);
        assert_eq!(parse_count("10M").unwrap(), 10_000_000);
        assert!(parse_count("1.5").unwrap_err().contains("whole"));
        assert!(parse_count("-3").is_err());
        assert!(parse_count("ten").unwrap_err().contains("'ten'"));
        assert!(
            parse_count("10m").is_err(),
            "m is minutes elsewhere: refused, not millions"
        );
    }

    #[test]
    fn dates_and_shell_quoting() {
        assert_eq!(fmt_unix_ms(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(fmt_unix_ms(1_700_000_000_000), "2023-11-14 22:13:20 UTC");
        assert_eq!(fmt_unix_ms(951_782_400_000), "2000-02-29 00:00:00 UTC");
        assert_eq!(
            shell_join(&["a".into(), "b c".into(), "it's".into(), "".into()]),
            "a 'b c' 'it'\\''s' ''"
        );
    }

    #[test]
    fn numbers() {
        assert_eq!(fmt_num(400.0), "400");
        assert_eq!(fmt_num(12.5), "12.5");
        assert_eq!(fmt_num(f64::NAN), "n/a");
    }

    #[test]
    fn escaping() {
        assert_eq!(escape_controls("plain/é"), "plain/é");
        assert_eq!(escape_controls("a\u{1b}[31mb\n"), "a\\x1b[31mb\\x0a");
        assert_eq!(escape_controls("c:\\x1b"), "c:\\\\x1b");
        assert_eq!(escape_controls("\u{9b}"), "\\xc2\\x9b");
    }
}
