//! Slurm's time formats (`--time`, `--time-min`, squeue's TIME column).
//!
//! [`parse_duration`] reads what `sbatch --time` accepts; [`format_duration`] writes what
//! `squeue` prints. Both work in whole seconds.

/// Error parsing a duration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid time {value:?}: {reason}")]
pub struct DurationError {
    /// The text given.
    pub value: String,
    /// Why it is refused.
    pub reason: String,
}

/// The longest finite time limit Berth takes, seconds (100 years of 365 days): far beyond
/// any real job, and small enough that start time + limit never overflows. Longer limits
/// are refused; `UNLIMITED` means no limit.
pub const MAX_SECONDS: u64 = 100 * 365 * 86_400;

const FORMATS: &str = "expected minutes, minutes:seconds, hours:minutes:seconds, days-hours, \
                       days-hours:minutes, days-hours:minutes:seconds or UNLIMITED";

/// Parses Slurm's `--time` formats into seconds: `minutes`, `minutes:seconds`,
/// `hours:minutes:seconds`, `days-hours`, `days-hours:minutes`, `days-hours:minutes:seconds`.
/// `UNLIMITED`/`INFINITE` (any case) and Slurm's `-1` give `None`.
///
/// Fields are plain decimal numbers and, as in Slurm, are not limited to their clock range
/// (`90` is 90 minutes, `0:90` is 90 seconds). Surrounding whitespace is ignored. `0` gives
/// `Some(0)`; `sbatch` reads a zero limit as "no limit" (see [`crate::sbatch`]).
///
/// # Errors
///
/// [`DurationError`] for anything else (`""`, `"abc"`, `"1:2:3:4"`, `"<time_limit>"`) or a
/// value over [`MAX_SECONDS`].
pub fn parse_duration(value: &str) -> Result<Option<u64>, DurationError> {
    let err = |reason: &str| DurationError {
        value: value.to_string(),
        reason: reason.to_string(),
    };
    let text = value.trim();
    if text.is_empty() {
        return Err(err(
            "empty; expected a time such as 10, 1:00:00 or 2-00:00:00",
        ));
    }
    if text.eq_ignore_ascii_case("unlimited")
        || text.eq_ignore_ascii_case("infinite")
        || text == "-1"
    {
        return Ok(None);
    }
    if !text
        .chars()
        .all(|c| c.is_ascii_digit() || c == ':' || c == '-')
    {
        return Err(err(FORMATS));
    }
    let number = |field: &str| -> Result<u64, DurationError> {
        if field.is_empty() || !field.bytes().all(|b| b.is_ascii_digit()) {
            return Err(err(FORMATS));
        }
        field.parse::<u64>().map_err(|_| err("number too large"))
    };
    let (days, clock) = match text.split_once('-') {
        Some((d, rest)) => (Some(number(d)?), rest),
        None => (None, text),
    };
    let fields = clock
        .split(':')
        .map(number)
        .collect::<Result<Vec<u64>, _>>()?;
    // (days, hours, minutes, seconds)
    let (d, h, m, s) = match (days, fields.as_slice()) {
        (None, [m]) => (0, 0, *m, 0),
        (None, [m, s]) => (0, 0, *m, *s),
        (None, [h, m, s]) => (0, *h, *m, *s),
        (Some(d), [h]) => (d, *h, 0, 0),
        (Some(d), [h, m]) => (d, *h, *m, 0),
        (Some(d), [h, m, s]) => (d, *h, *m, *s),
        _ => return Err(err(FORMATS)),
    };
    let total = d
        .checked_mul(86_400)
        .and_then(|t| t.checked_add(h.checked_mul(3_600)?))
        .and_then(|t| t.checked_add(m.checked_mul(60)?))
        .and_then(|t| t.checked_add(s))
        .ok_or_else(|| err("number too large"))?;
    if total > MAX_SECONDS {
        return Err(err("longer than 100 years; use UNLIMITED for no limit"));
    }
    Ok(Some(total))
}

/// Formats seconds as squeue does: `M:SS`, `H:MM:SS`, or `D-HH:MM:SS`
/// (`0:00`, `5:07`, `1:02:03`, `2-03:04:05`).
pub fn format_duration(seconds: u64) -> String {
    let days = seconds / 86_400;
    let hours = seconds % 86_400 / 3_600;
    let minutes = seconds % 3_600 / 60;
    let secs = seconds % 60;
    if days > 0 {
        format!("{days}-{hours:02}:{minutes:02}:{secs:02}")
    } else if hours > 0 {
        format!("{hours}:{minutes:02}:{secs:02}")
    } else {
        format!("{minutes}:{secs:02}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_slurm_format() {
        assert_eq!(parse_duration("10"), Ok(Some(600)));
        assert_eq!(parse_duration("5:30"), Ok(Some(330)));
        assert_eq!(parse_duration("00:10:00"), Ok(Some(600)));
        assert_eq!(parse_duration("1:02:03"), Ok(Some(3723)));
        assert_eq!(parse_duration("2-3"), Ok(Some(2 * 86_400 + 3 * 3_600)));
        assert_eq!(
            parse_duration("2-3:04"),
            Ok(Some(2 * 86_400 + 3 * 3_600 + 240))
        );
        assert_eq!(parse_duration("1-00:00:00"), Ok(Some(86_400)));
        assert_eq!(parse_duration("0-00:15:00"), Ok(Some(900)));
        assert_eq!(parse_duration(" 90 "), Ok(Some(5_400)));
        assert_eq!(parse_duration("0"), Ok(Some(0)));
    }

    #[test]
    fn unlimited_in_any_case() {
        for v in ["UNLIMITED", "unlimited", "Infinite", "INFINITE", "-1"] {
            assert_eq!(parse_duration(v), Ok(None), "{v}");
        }
    }

    #[test]
    fn refusals_name_the_value() {
        for v in [
            "<time_limit>",
            "",
            "1:2:3:4",
            "abc",
            "1-2-3",
            "1::2",
            "-5",
            "1-",
            "1-1:2:3:4",
            "10m",
        ] {
            let e = parse_duration(v).unwrap_err();
            assert_eq!(e.value, v);
            assert!(!e.reason.is_empty());
        }
        assert!(parse_duration("99999999999999999999").is_err());
        assert!(parse_duration("999999999999999999-0").is_err());
        // Anything past 100 years (the reporter's 106751991167300 days overflowed the
        // scheduler's arithmetic).
        assert!(parse_duration("106751991167300-00:00:00").is_err());
        assert_eq!(parse_duration("36500-0"), Ok(Some(MAX_SECONDS)));
        assert!(parse_duration("36500-0:0:1").is_err());
    }

    #[test]
    fn squeue_time_column() {
        assert_eq!(format_duration(0), "0:00");
        assert_eq!(format_duration(307), "5:07");
        assert_eq!(format_duration(3723), "1:02:03");
        assert_eq!(
            format_duration(2 * 86_400 + 3 * 3_600 + 4 * 60 + 5),
            "2-03:04:05"
        );
    }

    #[test]
    fn format_parses_back() {
        for s in [0, 59, 60, 3_599, 3_600, 86_399, 86_400, 1_000_000] {
            let text = format_duration(s);
            // M:SS is read back as minutes:seconds, H:MM:SS and D-HH:MM:SS as written.
            assert_eq!(parse_duration(&text), Ok(Some(s)), "{text}");
        }
    }
}
