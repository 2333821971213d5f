//! Usage reports (sreport's data) on the wire, and the pure arithmetic behind them:
//! the hour splitting of the hourly rollups, report windows, TRES and time units, and
//! retention periods (`purge_jobs_after`, slurmdbd's `PurgeJobAfter`).
//!
//! * `GET /v1/usage` ([`UsageQuery`] → [`UsageReport`]): TRES time of allocations in a
//!   window, grouped by any of account, user, partition, QOS and GPU model.
//! * `GET /v1/usage/cluster` ([`ClusterUsageQuery`] → [`ClusterUsage`]): GPU time
//!   allocated, down, planned down, reserved, idle and reported (sreport's `cluster
//!   Utilization` columns).
//!
//! Reports are read from hourly rollups, so a window is whole hours: its start is
//! rounded down to the hour and its end up ([`window_hours`]).

use chrono::{DateTime, Duration, DurationRound, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use utoipa::{IntoParams, ToSchema};

/// What a usage report may be grouped by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum UsageGroup {
    /// The account charged.
    Account,
    /// The user.
    User,
    /// The partition.
    Partition,
    /// The QOS.
    Qos,
    /// The GPU model.
    GpuModel,
}

impl UsageGroup {
    /// Every grouping, in report column order.
    pub const ALL: [UsageGroup; 5] = [
        UsageGroup::Account,
        UsageGroup::User,
        UsageGroup::Partition,
        UsageGroup::Qos,
        UsageGroup::GpuModel,
    ];

    /// The name in `group_by` (`account`, `user`, `partition`, `qos`, `gpu_model`).
    pub fn name(self) -> &'static str {
        match self {
            UsageGroup::Account => "account",
            UsageGroup::User => "user",
            UsageGroup::Partition => "partition",
            UsageGroup::Qos => "qos",
            UsageGroup::GpuModel => "gpu_model",
        }
    }

    /// Parses one name (case-insensitive; `gpu`/`model`/`gres` also mean the GPU model).
    pub fn parse(s: &str) -> Option<UsageGroup> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "account" | "accounts" => UsageGroup::Account,
            "user" | "users" => UsageGroup::User,
            "partition" | "partitions" => UsageGroup::Partition,
            "qos" => UsageGroup::Qos,
            "gpu_model" | "model" | "gpu" | "gres" => UsageGroup::GpuModel,
            _ => return None,
        })
    }
}

/// A TRES a report measures, with Slurm's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tres {
    /// `cpu`: CPU time.
    Cpu,
    /// `mem`: memory time, MiB × time.
    Mem,
    /// `node`: node time.
    Node,
    /// `billing`: billing-weighted time (Slurm's `TRESBillingWeights`).
    Billing,
    /// `gres/gpu`: GPU time.
    Gpu,
}

impl Tres {
    /// Slurm's name (`cpu`, `mem`, `node`, `billing`, `gres/gpu`).
    pub fn name(self) -> &'static str {
        match self {
            Tres::Cpu => "cpu",
            Tres::Mem => "mem",
            Tres::Node => "node",
            Tres::Billing => "billing",
            Tres::Gpu => "gres/gpu",
        }
    }

    /// Parses one name (case-insensitive; `gpu` and `gres/gpu:MODEL`'s prefix also mean
    /// `gres/gpu`).
    pub fn parse(s: &str) -> Option<Tres> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "cpu" => Tres::Cpu,
            "mem" => Tres::Mem,
            "node" => Tres::Node,
            "billing" => Tres::Billing,
            "gres/gpu" | "gpu" => Tres::Gpu,
            _ => return None,
        })
    }

    /// Parses a comma-separated list (`gres/gpu,cpu`), keeping the given order and
    /// dropping repeats.
    ///
    /// # Errors
    /// The first name that is not a TRES, in a message listing the known ones.
    pub fn parse_list(s: &str) -> Result<Vec<Tres>, String> {
        let mut out = Vec::new();
        for part in s.split(',').filter(|p| !p.trim().is_empty()) {
            let t = Tres::parse(part).ok_or_else(|| {
                format!("unknown TRES {part:?} (known: gres/gpu, cpu, mem, node, billing)")
            })?;
            if !out.contains(&t) {
                out.push(t);
            }
        }
        if out.is_empty() {
            return Err("name at least one TRES (gres/gpu, cpu, mem, node, billing)".into());
        }
        Ok(out)
    }
}

/// The unit of a report's figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    /// TRES-seconds.
    Seconds,
    /// TRES-minutes (sreport's default).
    Minutes,
    /// TRES-hours.
    Hours,
}

impl TimeUnit {
    /// Parses `seconds|minutes|hours` (case-insensitive, also `s|m|h`, `secs`, `mins`).
    pub fn parse(s: &str) -> Option<TimeUnit> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "seconds" | "second" | "secs" | "sec" | "s" => TimeUnit::Seconds,
            "minutes" | "minute" | "mins" | "min" | "m" => TimeUnit::Minutes,
            "hours" | "hour" | "h" => TimeUnit::Hours,
            _ => return None,
        })
    }

    /// Seconds per unit.
    pub fn seconds(self) -> f64 {
        match self {
            TimeUnit::Seconds => 1.0,
            TimeUnit::Minutes => 60.0,
            TimeUnit::Hours => 3600.0,
        }
    }

    /// The name on the wire (`seconds`, `minutes`, `hours`).
    pub fn name(self) -> &'static str {
        match self {
            TimeUnit::Seconds => "seconds",
            TimeUnit::Minutes => "minutes",
            TimeUnit::Hours => "hours",
        }
    }
}

/// The start of the hour `t` lies in.
pub fn hour_floor(t: DateTime<Utc>) -> DateTime<Utc> {
    t.duration_trunc(Duration::hours(1)).unwrap_or(t)
}

/// The first hour boundary at or after `t`.
pub fn hour_ceil(t: DateTime<Utc>) -> DateTime<Utc> {
    let f = hour_floor(t);
    if f == t {
        t
    } else {
        f + Duration::hours(1)
    }
}

/// A report window in whole hours: `start` rounded down to the hour, `end` up.
pub fn window_hours(start: DateTime<Utc>, end: DateTime<Utc>) -> (DateTime<Utc>, DateTime<Utc>) {
    (hour_floor(start), hour_ceil(end))
}

/// How a span `[start, end)` (an allocation's life; `end` is its release, or now for a
/// live one) splits over the hours it overlaps: `(hour start, seconds in that hour)`, in
/// order, the seconds summing to the span's length. This is the split the hourly rollup
/// computes in SQL (`berth_db::usage_rollup`); an empty or reversed span has no hours.
pub fn split_hours(start: DateTime<Utc>, end: DateTime<Utc>) -> Vec<(DateTime<Utc>, f64)> {
    let mut out = Vec::new();
    if end <= start {
        return out;
    }
    let mut hour = hour_floor(start);
    while hour < end {
        let next = hour + Duration::hours(1);
        let from = start.max(hour);
        let to = end.min(next);
        out.push((
            hour,
            (to - from).num_microseconds().unwrap_or(0) as f64 / 1e6,
        ));
        hour = next;
    }
    out
}

/// Reads a report window's start or end, as sreport takes them: RFC 3339
/// (`2026-12-01T10:00:00Z`), `YYYY-MM-DD[THH:MM[:SS]]` (UTC), `now`, `now-N[units]`,
/// `now+N[units]`, `today` (00:00 UTC today), `yesterday`, `midnight`, and the other
/// forms of [`crate::begin::parse_begin`].
///
/// # Errors
/// A message naming the value and the accepted forms.
pub fn parse_report_time(s: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    let v = s.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(v) {
        return Ok(t.with_timezone(&Utc));
    }
    let lower = v.to_ascii_lowercase();
    let midnight = now.duration_trunc(Duration::days(1)).unwrap_or(now);
    match lower.as_str() {
        "today" | "midnight" => return Ok(midnight),
        "yesterday" => return Ok(midnight - Duration::days(1)),
        _ => {}
    }
    let parsed = if let Some(rest) = lower.strip_prefix("now-") {
        crate::begin::parse_begin(&format!("now+{rest}"), now).map(|ahead| now - (ahead - now))
    } else {
        crate::begin::parse_begin(v, now)
    };
    parsed.map_err(|_| {
        format!(
            "not a time: {s:?} (expected RFC 3339, YYYY-MM-DD[THH:MM[:SS]], now[-+N units], \
             today or yesterday)"
        )
    })
}

/// Reads a retention period as slurmdbd's `PurgeJobAfter` takes it: a number with a unit
/// `hours`, `days` or `months` (a bare number is months; a month is 30 days here), e.g.
/// `12months`, `365days`, `720hours`. Returns seconds.
///
/// # Errors
/// A message naming the value when it is not one of those forms or is zero.
pub fn parse_purge_after(s: &str) -> Result<u64, String> {
    let v = s.trim().to_ascii_lowercase();
    let digits: String = v.chars().take_while(char::is_ascii_digit).collect();
    let unit = v[digits.len()..].trim();
    let bad = || {
        format!("not a retention period: {s:?} (expected N followed by hours, days or months, e.g. 12months)")
    };
    let n: u64 = digits.parse().map_err(|_| bad())?;
    if n == 0 {
        return Err(format!("retention period {s:?} must be more than zero"));
    }
    let per = match unit {
        "h" | "hour" | "hours" => 3600,
        "d" | "day" | "days" => 86_400,
        "" | "month" | "months" => 30 * 86_400,
        _ => return Err(bad()),
    };
    n.checked_mul(per)
        .filter(|&secs| secs <= crate::duration::MAX_SECONDS)
        .ok_or_else(bad)
}

/// `GET /v1/usage` query.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct UsageQuery {
    /// Window start: RFC 3339 or `YYYY-MM-DD[THH:MM[:SS]]` (UTC); rounded down to the
    /// hour. Default: yesterday 00:00 UTC (sreport's).
    pub start: Option<String>,
    /// Window end (same forms); rounded up to the hour. Default: now.
    pub end: Option<String>,
    /// Comma-separated groupings: `account`, `user`, `partition`, `qos`, `gpu_model`
    /// (default `account,user`).
    pub group_by: Option<String>,
    /// Comma-separated TRES: `gres/gpu`, `cpu`, `mem`, `node`, `billing` (default
    /// `gres/gpu`).
    pub tres: Option<String>,
    /// `seconds`, `minutes` (default) or `hours`.
    pub unit: Option<String>,
    /// Only these accounts (comma-separated).
    pub accounts: Option<String>,
    /// Only these users (comma-separated).
    pub users: Option<String>,
}

/// One group of a usage report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct UsageReportRow {
    /// The account (when grouped by account).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// The user (when grouped by user).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// The partition (when grouped by partition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    /// The QOS (when grouped by QOS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qos: Option<String>,
    /// The GPU model (when grouped by it; empty: allocations without GPUs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_model: Option<String>,
    /// TRES name (`gres/gpu`, `cpu` …) → usage in the report's unit (`mem`: MiB × unit).
    pub tres: BTreeMap<String, f64>,
    /// Job runs that ended in the window.
    pub jobs: u64,
}

/// `GET /v1/usage`: TRES time allocated in a window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct UsageReport {
    /// Window start (on the hour, included).
    pub start: DateTime<Utc>,
    /// Window end (on the hour, excluded).
    pub end: DateTime<Utc>,
    /// `seconds`, `minutes` or `hours`.
    pub unit: String,
    /// The TRES reported, in order.
    pub tres: Vec<String>,
    /// The groupings, in column order.
    pub group_by: Vec<String>,
    /// The groups, by their keys; groups with no usage of the reported TRES and no jobs
    /// are left out.
    pub rows: Vec<UsageReportRow>,
    /// The whole (visible) usage: TRES name → usage in the unit.
    pub total: BTreeMap<String, f64>,
}

/// `GET /v1/usage/cluster` query.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ClusterUsageQuery {
    /// Window start (as for `GET /v1/usage`).
    pub start: Option<String>,
    /// Window end (as for `GET /v1/usage`).
    pub end: Option<String>,
    /// `seconds`, `minutes` (default) or `hours`.
    pub unit: Option<String>,
    /// The TRES: `gres/gpu` only (the default; GPU states are what is sampled).
    pub tres: Option<String>,
}

/// Cluster utilisation of some GPUs over a window, GPU time in the report's unit
/// (sreport's `cluster Utilization` columns).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ClusterUsageRow {
    /// The GPU model (absent on the total).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_model: Option<String>,
    /// Held by job allocations (exact, from the allocations).
    pub allocated: f64,
    /// Not allocated, on DOWN, DRAINING or DRAINED nodes (sampled each minute).
    pub down: f64,
    /// Not allocated, on powered-down cloud nodes (Slurm's `PLND Down`; sampled).
    pub planned_down: f64,
    /// Not allocated, held by an active reservation (Slurm's `Planned`; sampled).
    pub reserved: f64,
    /// The rest: `reported − allocated − down − planned_down − reserved`, at least 0.
    pub idle: f64,
    /// Every GPU for every sampled minute.
    pub reported: f64,
    /// Minutes sampled (per model; the total sums them).
    pub samples: u64,
}

/// `GET /v1/usage/cluster`: cluster GPU utilisation in a window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ClusterUsage {
    /// Window start (on the hour, included).
    pub start: DateTime<Utc>,
    /// Window end (on the hour, excluded).
    pub end: DateTime<Utc>,
    /// `seconds`, `minutes` or `hours`.
    pub unit: String,
    /// `gres/gpu`.
    pub tres: String,
    /// Per GPU model.
    pub rows: Vec<ClusterUsageRow>,
    /// The whole cluster.
    pub total: ClusterUsageRow,
}

/// `GET /v1/usage/cluster/timeline` query.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ClusterTimelineQuery {
    /// Window start, in the forms of `GET /v1/usage` (default: 24 hours before `end`).
    pub start: Option<String>,
    /// Window end, likewise (default: now).
    pub end: Option<String>,
    /// At most this many points, 10..=2000 (default 288): minutes are averaged in buckets
    /// wide enough for the window (at least 60 s).
    pub points: Option<u32>,
}

/// One bucket of the cluster's GPU timeline: GPU counts averaged over its sampled minutes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ClusterTimelinePoint {
    /// The bucket's start.
    pub time: DateTime<Utc>,
    /// GPUs in the cluster (mean over the bucket's sampled minutes).
    pub gpus_total: f64,
    /// GPUs held by job allocations.
    pub gpus_allocated: f64,
    /// GPUs on DOWN, DRAINING or DRAINED nodes, not allocated.
    pub gpus_down: f64,
    /// GPUs on powered-down cloud nodes.
    pub gpus_planned_down: f64,
    /// GPUs held by an active reservation, not allocated.
    pub gpus_reserved: f64,
    /// Mean utilisation of the GPUs jobs held, percent, from the workers' samples
    /// (`None` when no job reported a sample in the bucket).
    pub utilization_pct: Option<f64>,
}

/// `GET /v1/usage/cluster/timeline`: GPU allocation and utilisation over time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ClusterTimeline {
    /// Window start.
    pub start: DateTime<Utc>,
    /// Window end.
    pub end: DateTime<Utc>,
    /// The width of each bucket, seconds.
    pub step_seconds: u64,
    /// Buckets with a sample, oldest first (buckets the scheduler did not sample, as
    /// when none ran, are absent).
    pub points: Vec<ClusterTimelinePoint>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn t(h: u32, m: u32, s: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 1, h, m, s).unwrap()
    }

    #[test]
    fn a_span_splits_at_hour_boundaries_and_sums_to_its_length() {
        let parts = split_hours(t(10, 59, 30), t(12, 0, 15));
        assert_eq!(
            parts,
            vec![
                (t(10, 0, 0), 30.0),
                (t(11, 0, 0), 3600.0),
                (t(12, 0, 0), 15.0)
            ]
        );
        let total: f64 = parts.iter().map(|p| p.1).sum();
        assert_eq!(total, (t(12, 0, 15) - t(10, 59, 30)).num_seconds() as f64);
    }

    #[test]
    fn a_span_within_one_hour_or_on_boundaries_is_one_part_each_hour() {
        assert_eq!(
            split_hours(t(9, 10, 0), t(9, 10, 5)),
            vec![(t(9, 0, 0), 5.0)]
        );
        assert_eq!(
            split_hours(t(9, 0, 0), t(11, 0, 0)),
            vec![(t(9, 0, 0), 3600.0), (t(10, 0, 0), 3600.0)]
        );
        assert!(split_hours(t(9, 0, 0), t(9, 0, 0)).is_empty());
        assert!(split_hours(t(9, 0, 1), t(9, 0, 0)).is_empty());
    }

    #[test]
    fn windows_round_out_to_whole_hours() {
        assert_eq!(
            window_hours(t(9, 30, 0), t(11, 0, 1)),
            (t(9, 0, 0), t(12, 0, 0))
        );
        assert_eq!(
            window_hours(t(9, 0, 0), t(11, 0, 0)),
            (t(9, 0, 0), t(11, 0, 0))
        );
    }

    #[test]
    fn report_times_take_sreport_forms() {
        let now = t(15, 20, 0);
        assert_eq!(
            parse_report_time("2026-12-01T10:00:00Z", now),
            Ok(t(10, 0, 0))
        );
        assert_eq!(parse_report_time("2026-12-01T10:30", now), Ok(t(10, 30, 0)));
        assert_eq!(parse_report_time("today", now), Ok(t(0, 0, 0)));
        assert_eq!(
            parse_report_time("yesterday", now),
            Ok(t(0, 0, 0) - Duration::days(1))
        );
        assert_eq!(parse_report_time("now-2hours", now), Ok(t(13, 20, 0)));
        assert_eq!(parse_report_time("now", now), Ok(now));
        assert!(parse_report_time("last tuesday", now)
            .unwrap_err()
            .contains("last tuesday"));
    }

    #[test]
    fn retention_periods_read_like_purge_job_after() {
        assert_eq!(parse_purge_after("12months"), Ok(12 * 30 * 86_400));
        assert_eq!(parse_purge_after("365days"), Ok(365 * 86_400));
        assert_eq!(parse_purge_after("720hours"), Ok(720 * 3600));
        assert_eq!(parse_purge_after("6"), Ok(6 * 30 * 86_400));
        assert!(parse_purge_after("0days").is_err());
        assert!(parse_purge_after("12weeks")
            .unwrap_err()
            .contains("12weeks"));
        assert!(parse_purge_after("days").is_err());
        assert!(parse_purge_after("99999999999999999999months").is_err());
    }

    #[test]
    fn tres_lists_and_units_parse_with_slurm_names() {
        assert_eq!(
            Tres::parse_list("gres/gpu,cpu"),
            Ok(vec![Tres::Gpu, Tres::Cpu])
        );
        assert_eq!(Tres::parse_list("GPU,gpu"), Ok(vec![Tres::Gpu]));
        assert!(Tres::parse_list("gres/fpga")
            .unwrap_err()
            .contains("gres/fpga"));
        assert!(Tres::parse_list("").is_err());
        assert_eq!(TimeUnit::parse("Hours"), Some(TimeUnit::Hours));
        assert_eq!(TimeUnit::parse("percent"), None);
        assert_eq!(UsageGroup::parse("QOS"), Some(UsageGroup::Qos));
        assert_eq!(UsageGroup::parse("node"), None);
    }
}
