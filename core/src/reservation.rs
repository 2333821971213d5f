//! Advance reservations (Slurm's `scontrol create reservation`): their flags, their
//! recurring windows, and the `Key=Value` words `scontrol create|update reservation`
//! takes.
//!
//! A reservation holds nodes (or some GPUs of some nodes) from `start` to `end`; `DAILY`
//! and `WEEKLY` repeat that window every 86,400 or 604,800 seconds. Times are seconds
//! since the epoch.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A reservation flag (Slurm's `Flags=`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ReservationFlag {
    /// A maintenance window: it may overlap other reservations (as in Slurm). It does not
    /// by itself ignore running jobs: add `IGNORE_JOBS` for that (Slurm's
    /// `Flags=MAINT,IGNORE_JOBS`).
    Maint,
    /// Created even where running jobs would still run inside the window.
    IgnoreJobs,
    /// Repeats every day.
    Daily,
    /// Repeats every week.
    Weekly,
    /// Its jobs may also start before it, end after it and use nodes outside it.
    Flex,
}

impl ReservationFlag {
    /// Every flag, in Slurm's spelling order.
    pub const ALL: [ReservationFlag; 5] = [
        ReservationFlag::Maint,
        ReservationFlag::IgnoreJobs,
        ReservationFlag::Daily,
        ReservationFlag::Weekly,
        ReservationFlag::Flex,
    ];

    /// Slurm's name (`MAINT`, `IGNORE_JOBS`, …), as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            ReservationFlag::Maint => "MAINT",
            ReservationFlag::IgnoreJobs => "IGNORE_JOBS",
            ReservationFlag::Daily => "DAILY",
            ReservationFlag::Weekly => "WEEKLY",
            ReservationFlag::Flex => "FLEX",
        }
    }

    /// Reads one flag by Slurm's name, any case (`MAINTENANCE` is `MAINT`).
    pub fn parse(s: &str) -> Option<ReservationFlag> {
        let upper = s.trim().to_ascii_uppercase();
        if upper == "MAINTENANCE" {
            return Some(ReservationFlag::Maint);
        }
        ReservationFlag::ALL
            .into_iter()
            .find(|f| f.as_str() == upper)
    }
}

/// Reads Slurm's `Flags=` list (`MAINT,IGNORE_JOBS`), sorted and without repeats.
///
/// # Errors
/// A message naming the unknown flag and the supported ones, or saying that `DAILY` and
/// `WEEKLY` exclude each other.
pub fn parse_flags(list: &str) -> Result<Vec<ReservationFlag>, String> {
    let mut flags = Vec::new();
    for word in list.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        let flag = ReservationFlag::parse(word).ok_or_else(|| {
            format!("unknown reservation flag {word:?} (supported: MAINT, IGNORE_JOBS, DAILY, WEEKLY, FLEX)")
        })?;
        flags.push(flag);
    }
    flags.sort();
    flags.dedup();
    if flags.contains(&ReservationFlag::Daily) && flags.contains(&ReservationFlag::Weekly) {
        return Err("DAILY and WEEKLY exclude each other".into());
    }
    Ok(flags)
}

/// The repeat period of a reservation with `flags`, seconds: 86,400 for `DAILY`, 604,800
/// for `WEEKLY`, `None` for a one-off.
pub fn period(flags: &[ReservationFlag]) -> Option<i64> {
    if flags.contains(&ReservationFlag::Daily) {
        Some(86_400)
    } else if flags.contains(&ReservationFlag::Weekly) {
        Some(7 * 86_400)
    } else {
        None
    }
}

/// The windows `(start, end)` of a reservation whose first window is `start..end`,
/// repeating every `period` seconds (`None`: once), whose end is after `after`: at most
/// `count` of them, earliest first. A one-off whose end has passed has none.
pub fn windows(
    start: i64,
    end: i64,
    period: Option<i64>,
    after: i64,
    count: usize,
) -> Vec<(i64, i64)> {
    let Some(p) = period.filter(|p| *p > 0) else {
        return if end > after && count > 0 {
            vec![(start, end)]
        } else {
            Vec::new()
        };
    };
    // The first occurrence k with end + k·p > after.
    let k = if end > after {
        0
    } else {
        (after - end) / p + 1
    };
    (0..count as i64)
        .map(|i| {
            let shift = (k + i).saturating_mul(p);
            (start.saturating_add(shift), end.saturating_add(shift))
        })
        .collect()
}

/// Whether two reservations' windows meet: each is `(start, end, period)` as in
/// [`windows`]; only windows ending after `now` count. Recurring windows are compared over
/// two weeks past the later start (every daily and weekly pattern repeats within one
/// week), a one-off against the recurring windows over its own span.
pub fn windows_overlap(a: (i64, i64, Option<i64>), b: (i64, i64, Option<i64>), now: i64) -> bool {
    let horizon = a.0.max(b.0).max(now).saturating_add(14 * 86_400);
    let span = |r: (i64, i64, Option<i64>)| -> Vec<(i64, i64)> {
        match r.2 {
            None => windows(r.0, r.1, None, now, 1),
            Some(p) => {
                // Enough occurrences to pass the horizon (and the other one-off's end).
                let until = horizon.max(a.1.max(b.1));
                let n = ((until - r.0.min(now)).max(0) / p + 2).min(5_000) as usize;
                windows(r.0, r.1, Some(p), now, n)
            }
        }
    };
    let (wa, wb) = (span(a), span(b));
    wa.iter().any(|x| wb.iter().any(|y| x.0 < y.1 && y.0 < x.1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_read_as_slurm_writes_them() {
        assert_eq!(
            parse_flags("maint,IGNORE_JOBS,Maint").unwrap(),
            vec![ReservationFlag::Maint, ReservationFlag::IgnoreJobs]
        );
        assert_eq!(parse_flags("").unwrap(), vec![]);
        assert!(parse_flags("MAINT,OVERLAP")
            .unwrap_err()
            .contains("OVERLAP"));
        assert!(parse_flags("DAILY,WEEKLY").is_err());
        assert_eq!(
            serde_json::to_string(&ReservationFlag::IgnoreJobs).unwrap(),
            "\"IGNORE_JOBS\""
        );
    }

    #[test]
    fn one_off_windows_end_with_the_reservation() {
        assert_eq!(windows(100, 200, None, 50, 2), vec![(100, 200)]);
        assert_eq!(windows(100, 200, None, 199, 2), vec![(100, 200)]);
        assert_eq!(windows(100, 200, None, 200, 2), vec![]);
    }

    #[test]
    fn recurring_windows_are_the_current_and_next_ones() {
        let day = 86_400;
        // Before the first: the first two.
        assert_eq!(
            windows(1000, 2000, Some(day), 0, 2),
            vec![(1000, 2000), (1000 + day, 2000 + day)]
        );
        // Inside the third occurrence: it and the fourth.
        let now = 1500 + 2 * day;
        assert_eq!(
            windows(1000, 2000, Some(day), now, 2),
            vec![
                (1000 + 2 * day, 2000 + 2 * day),
                (1000 + 3 * day, 2000 + 3 * day)
            ]
        );
        // Exactly at an occurrence's end: the next.
        assert_eq!(
            windows(1000, 2000, Some(day), 2000, 1),
            vec![(1000 + day, 2000 + day)]
        );
    }

    #[test]
    fn overlap_of_one_offs_and_recurring_windows() {
        let day = 86_400;
        assert!(windows_overlap((0, 100, None), (50, 150, None), 0));
        assert!(!windows_overlap((0, 100, None), (100, 150, None), 0));
        // A daily 1-hour window meets a one-off three days later at the same hour.
        assert!(windows_overlap(
            (0, 3600, Some(day)),
            (3 * day + 1800, 3 * day + 1900, None),
            0
        ));
        // ... but not one at another hour.
        assert!(!windows_overlap(
            (0, 3600, Some(day)),
            (3 * day + 7200, 3 * day + 7300, None),
            0
        ));
        // A weekly window meets a daily one at the same hour, not at another.
        assert!(windows_overlap(
            (0, 3600, Some(7 * day)),
            (day, day + 3600, Some(day)),
            0
        ));
        assert!(!windows_overlap(
            (0, 3600, Some(7 * day)),
            (7200, 10_800, Some(day)),
            0
        ));
        // An ended one-off meets nothing.
        assert!(!windows_overlap((0, 100, None), (50, 150, None), 120));
    }
}
