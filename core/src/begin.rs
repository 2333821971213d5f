//! `--begin` times, as `sbatch` reads them: `now+N[seconds|minutes|hours|days|weeks]`,
//! `YYYY-MM-DD[THH:MM[:SS]]`, `HH:MM[:SS]` (today, or tomorrow when already past),
//! `midnight`, `noon`, `teatime` (16:00), `today`, `tomorrow`. Times without a zone are UTC.

use chrono::{DateTime, Duration, NaiveDate, NaiveDateTime, NaiveTime, Utc};

/// The farthest a `now+N` begin time may lie ahead, seconds (100 years, as
/// [`crate::duration::MAX_SECONDS`]): farther is refused rather than overflowing.
pub const MAX_AHEAD_SECONDS: i64 = crate::duration::MAX_SECONDS as i64;

/// Parses a `--begin` value relative to `now`.
///
/// # Errors
/// A message naming the value and the accepted forms, or saying it is more than
/// [`MAX_AHEAD_SECONDS`] ahead (never a panic, whatever the digits).
pub fn parse_begin(v: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    let at = parse_any(v, now)?;
    // A date is stored as a PostgreSQL timestamp (4713 BC to 294276 AD): a year such as
    // -5000 or 200000 is refused here rather than by the database.
    if (at - now).num_seconds().abs() > MAX_AHEAD_SECONDS {
        return Err(format!(
            "begin time {v:?} is more than {} years away",
            MAX_AHEAD_SECONDS / (365 * 86_400)
        ));
    }
    Ok(at)
}

/// Seconds in one of the units `now+N[units]` takes (`s`, `min`, `hours`, `days`,
/// `weeks` and their spellings; none: seconds), as Slurm's `--begin` and sacct's `-S`.
pub fn unit_seconds(unit: &str) -> Option<i64> {
    Some(match unit {
        "" | "s" | "sec" | "secs" | "second" | "seconds" => 1,
        "m" | "min" | "mins" | "minute" | "minutes" => 60,
        "h" | "hour" | "hours" => 3600,
        "d" | "day" | "days" => 86400,
        "w" | "week" | "weeks" => 7 * 86400,
        _ => return None,
    })
}

fn parse_any(v: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    let bad = || {
        format!(
            "not a begin time: {v:?} (expected now+N[units], YYYY-MM-DD[THH:MM[:SS]], \
             HH:MM[:SS], midnight, noon, teatime, today or tomorrow)"
        )
    };
    let lower = v.trim().to_ascii_lowercase();
    if let Some(rest) = lower.strip_prefix("now") {
        if rest.is_empty() {
            return Ok(now);
        }
        let rest = rest.strip_prefix('+').ok_or_else(bad)?;
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let n: i64 = digits.parse().map_err(|_| bad())?;
        let secs = unit_seconds(&rest[digits.len()..]).ok_or_else(bad)?;
        let far = || {
            format!(
                "begin time {v:?} is more than {} years away",
                MAX_AHEAD_SECONDS / (365 * 86_400)
            )
        };
        let ahead = n
            .checked_mul(secs)
            .filter(|s| *s <= MAX_AHEAD_SECONDS)
            .ok_or_else(far)?;
        return now
            .checked_add_signed(Duration::seconds(ahead))
            .ok_or_else(far);
    }
    let today = now.date_naive();
    // Past the end of the calendar (a "now" at chrono's last day) is no time at all.
    let next_day = |d: DateTime<Utc>| d.checked_add_signed(Duration::days(1)).ok_or_else(bad);
    let at = |t: NaiveTime| {
        let d = NaiveDateTime::new(today, t).and_utc();
        if d < now {
            next_day(d)
        } else {
            Ok(d)
        }
    };
    let time = |h, m| NaiveTime::from_hms_opt(h, m, 0).ok_or_else(bad);
    match lower.as_str() {
        "midnight" => return at(time(0, 0)?),
        "noon" => return at(time(12, 0)?),
        "teatime" => return at(time(16, 0)?),
        "today" => return Ok(NaiveDateTime::new(today, time(0, 0)?).and_utc()),
        "tomorrow" => return next_day(NaiveDateTime::new(today, time(0, 0)?).and_utc()),
        _ => {}
    }
    for f in ["%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M"] {
        if let Ok(d) = NaiveDateTime::parse_from_str(v, f) {
            return Ok(d.and_utc());
        }
    }
    if let Ok(d) = NaiveDate::parse_from_str(v, "%Y-%m-%d") {
        return Ok(NaiveDateTime::new(d, time(0, 0)?).and_utc());
    }
    for f in ["%H:%M:%S", "%H:%M"] {
        if let Ok(t) = NaiveTime::parse_from_str(v, f) {
            return at(t);
        }
    }
    Err(bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        let now = "2026-11-30T10:00:00Z".parse::<DateTime<Utc>>().unwrap();
        let p = |s| parse_begin(s, now).unwrap().to_rfc3339();
        assert_eq!(p("now+1hour"), "2026-11-30T11:00:00+00:00");
        assert_eq!(p("now+90"), "2026-11-30T10:01:30+00:00");
        assert_eq!(p("2026-12-01T08:30"), "2026-12-01T08:30:00+00:00");
        assert_eq!(p("2026-12-01"), "2026-12-01T00:00:00+00:00");
        assert_eq!(p("09:00"), "2026-12-01T09:00:00+00:00");
        assert_eq!(p("teatime"), "2026-11-30T16:00:00+00:00");
        assert!(parse_begin("soon", now).is_err());
        assert!(parse_begin("now+3fortnights", now).is_err());
        for huge in [
            "now+99999999999999",
            "now+9223372036854775807weeks",
            "now+3154000000",
        ] {
            let e = parse_begin(huge, now).unwrap_err();
            assert!(e.contains("100 years"), "{huge}: {e}");
        }
        assert!(parse_begin("now+99999999999999999999", now).is_err());
        assert!(parse_begin("+200000-01-01", now).is_err());
        assert!(parse_begin("-5000-01-01", now).is_err());
        assert_eq!(p("now+5200weeks"), "2126-07-29T10:00:00+00:00");
    }

    #[test]
    fn the_ends_of_the_calendar_give_errors_not_panics() {
        // Found by fuzz/ (target `begin`): a time of day after "now" on chrono's last day.
        for now in [DateTime::<Utc>::MAX_UTC, DateTime::<Utc>::MIN_UTC] {
            for v in [
                "16:00",
                "teatime",
                "midnight",
                "tomorrow",
                "now+1",
                "now+99999999999999",
            ] {
                let _ = parse_begin(v, now);
            }
        }
        assert!(parse_begin("tomorrow", DateTime::<Utc>::MAX_UTC).is_err());
        assert!(parse_begin("now+1", DateTime::<Utc>::MAX_UTC).is_err());
    }
}
