//! Usage reports (sreport's data): `GET /v1/usage` (TRES time by account, user,
//! partition, QOS, GPU model) and `GET /v1/usage/cluster` (cluster GPU utilisation).
//! Thin handlers over the hourly rollups the scheduler leader keeps
//! (`berth_db::usage_rollup`); the parsing and the arithmetic of windows and units is
//! [`berth_core::usage_report`].
//!
//! Visibility: admins and operators see every association's usage; a user sees their own
//! and that of the accounts they belong to. Cluster utilisation (no user's figures in
//! it) is open to every person.

use crate::auth::Caller;
use crate::error::ApiError;
use crate::AppState;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::Json;
use berth_core::usage_report::{
    parse_report_time, window_hours, ClusterTimeline, ClusterTimelinePoint, ClusterTimelineQuery,
    ClusterUsage, ClusterUsageQuery, ClusterUsageRow, TimeUnit, Tres, UsageGroup, UsageQuery,
    UsageReport, UsageReportRow,
};
use berth_core::wire::Problem;
use berth_db::usage_rollup::{self, UsageSumRow};
use chrono::{DateTime, Duration, DurationRound, Utc};
use std::collections::BTreeMap;

/// The window of a report: `start`/`end` as given, rounded out to whole hours. Without a
/// start, yesterday 00:00 UTC (sreport's); without an end, now (sreport stops at today
/// 00:00, its rollups being hours behind; Berth's leader keeps the current hour rolled up,
/// so a report runs to the present and a job that just ended is in it).
fn window(
    start: Option<&str>,
    end: Option<&str>,
    now: DateTime<Utc>,
) -> Result<(DateTime<Utc>, DateTime<Utc>), ApiError> {
    let today = now.duration_trunc(Duration::days(1)).unwrap_or(now);
    let start = match start {
        Some(s) => parse_report_time(s, now).map_err(|e| ApiError::bad_field("start", e))?,
        None => today - Duration::days(1),
    };
    let end = match end {
        Some(s) => parse_report_time(s, now).map_err(|e| ApiError::bad_field("end", e))?,
        None => now,
    };
    if end <= start {
        return Err(ApiError::bad_field(
            "end",
            "the window's end must be after its start",
        ));
    }
    Ok(window_hours(start, end))
}

fn unit(v: Option<&str>) -> Result<TimeUnit, ApiError> {
    match v {
        None => Ok(TimeUnit::Minutes),
        Some(s) => TimeUnit::parse(s)
            .ok_or_else(|| ApiError::bad_field("unit", "must be seconds, minutes or hours")),
    }
}

fn list(v: Option<&str>) -> Option<Vec<String>> {
    v.map(|s| {
        s.split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect()
    })
}

fn tres_value(row: &UsageSumRow, t: Tres) -> f64 {
    match t {
        Tres::Cpu => row.cpu_seconds,
        Tres::Mem => row.mem_mib_seconds,
        Tres::Node => row.node_seconds,
        Tres::Billing => row.billing_seconds,
        Tres::Gpu => row.gpu_seconds,
    }
}

fn group_key(row: &UsageSumRow, g: UsageGroup) -> &str {
    match g {
        UsageGroup::Account => &row.account,
        UsageGroup::User => &row.user_name,
        UsageGroup::Partition => &row.partition,
        UsageGroup::Qos => &row.qos,
        UsageGroup::GpuModel => &row.gpu_model,
    }
}

/// Usage of TRES in a window, grouped.
///
/// TRES time held by job allocations in the hours of the window (`start` rounded down
/// to the hour, `end` up; default yesterday 00:00 UTC, as sreport, to now),
/// grouped by any of `account`, `user`, `partition`, `qos`, `gpu_model`, for the TRES
/// asked (`gres/gpu`, `cpu`, `mem` in MiB × unit, `node`, `billing`), in seconds,
/// minutes or hours. A run spanning hours is split at the hour boundaries; the current
/// hour counts up to the scheduler's last rollup (seconds old). Users see their own
/// usage and that of the accounts they belong to; admins and operators everything.
#[utoipa::path(get, path = "/v1/usage", tag = "usage", operation_id = "usage_get",
    params(UsageQuery),
    responses((status = 200, description = "The usage, by group", body = UsageReport),
              (status = 400, description = "A bad parameter (named in `field`)", body = Problem),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "A node's or a job's token", body = Problem)),
    security(("bearer" = [])))]
pub async fn usage_get(
    State(state): State<AppState>,
    caller: Caller,
    q: Result<Query<UsageQuery>, QueryRejection>,
) -> Result<Json<UsageReport>, ApiError> {
    caller.require_person()?;
    caller.require_unscoped()?;
    let q = q
        .map(|Query(v)| v)
        .map_err(|e| crate::error::rejection("query", e.body_text()))?;
    let (start, end) = window(q.start.as_deref(), q.end.as_deref(), Utc::now())?;
    let unit = unit(q.unit.as_deref())?;
    let tres = Tres::parse_list(q.tres.as_deref().unwrap_or("gres/gpu"))
        .map_err(|e| ApiError::bad_field("tres", e))?;
    let mut groups = Vec::new();
    for name in list(q.group_by.as_deref()).unwrap_or_else(|| vec!["account".into(), "user".into()])
    {
        let g = UsageGroup::parse(&name).ok_or_else(|| {
            ApiError::bad_field(
                "group_by",
                format!("cannot group by {name:?} (account, user, partition, qos, gpu_model)"),
            )
        })?;
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    groups.sort();
    let (viewer, accounts) = if caller.sees_all_jobs() {
        (None, Vec::new())
    } else {
        (
            Some(caller.name.as_str()),
            usage_rollup::usage_member_accounts(&state.pool, &caller.name).await?,
        )
    };
    let only_accounts = list(q.accounts.as_deref());
    let only_users = list(q.users.as_deref());
    let rows = usage_rollup::usage_hourly_sum(&state.pool, start, end, viewer, &accounts).await?;
    let mut grouped: BTreeMap<Vec<String>, (Vec<f64>, i64)> = BTreeMap::new();
    for row in rows.iter().filter(|r| {
        only_accounts
            .as_ref()
            .is_none_or(|a| a.contains(&r.account))
            && only_users.as_ref().is_none_or(|u| u.contains(&r.user_name))
    }) {
        let key: Vec<String> = groups
            .iter()
            .map(|g| group_key(row, *g).to_string())
            .collect();
        let entry = grouped
            .entry(key)
            .or_insert_with(|| (vec![0.0; tres.len()], 0));
        for (i, t) in tres.iter().enumerate() {
            entry.0[i] += tres_value(row, *t);
        }
        entry.1 += row.jobs;
    }
    let per = unit.seconds();
    let mut total: BTreeMap<String, f64> =
        tres.iter().map(|t| (t.name().to_string(), 0.0)).collect();
    let mut out = Vec::new();
    for (key, (values, jobs)) in grouped {
        if values.iter().all(|v| *v <= 0.0) && jobs == 0 {
            continue;
        }
        let mut r = UsageReportRow {
            account: None,
            user: None,
            partition: None,
            qos: None,
            gpu_model: None,
            tres: BTreeMap::new(),
            jobs: jobs.max(0) as u64,
        };
        for (g, k) in groups.iter().zip(key) {
            let slot = match g {
                UsageGroup::Account => &mut r.account,
                UsageGroup::User => &mut r.user,
                UsageGroup::Partition => &mut r.partition,
                UsageGroup::Qos => &mut r.qos,
                UsageGroup::GpuModel => &mut r.gpu_model,
            };
            *slot = Some(k);
        }
        for (t, v) in tres.iter().zip(values) {
            r.tres.insert(t.name().to_string(), v / per);
            *total.entry(t.name().to_string()).or_default() += v / per;
        }
        out.push(r);
    }
    Ok(Json(UsageReport {
        start,
        end,
        unit: unit.name().to_string(),
        tres: tres.iter().map(|t| t.name().to_string()).collect(),
        group_by: groups.iter().map(|g| g.name().to_string()).collect(),
        rows: out,
        total,
    }))
}

/// Cluster GPU utilisation in a window.
///
/// GPU time per GPU model and in total, as sreport's `cluster Utilization` columns:
/// allocated (exact, from the allocations), down (DOWN, DRAINING or DRAINED nodes),
/// planned down (powered-down cloud nodes), reserved (held by an active reservation),
/// idle (the rest) and reported (every GPU). Down, planned down, reserved and reported
/// come from the scheduler's per-minute samples of GPU states, each standing for its
/// minute. Window and unit as for `GET /v1/usage`.
#[utoipa::path(get, path = "/v1/usage/cluster", tag = "usage", operation_id = "usage_cluster_get",
    params(ClusterUsageQuery),
    responses((status = 200, description = "The cluster's GPU utilisation", body = ClusterUsage),
              (status = 400, description = "A bad parameter (named in `field`)", body = Problem),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "A node's or a job's token", body = Problem)),
    security(("bearer" = [])))]
pub async fn usage_cluster_get(
    State(state): State<AppState>,
    caller: Caller,
    q: Result<Query<ClusterUsageQuery>, QueryRejection>,
) -> Result<Json<ClusterUsage>, ApiError> {
    caller.require_person()?;
    caller.require_unscoped()?;
    let q = q
        .map(|Query(v)| v)
        .map_err(|e| crate::error::rejection("query", e.body_text()))?;
    let (start, end) = window(q.start.as_deref(), q.end.as_deref(), Utc::now())?;
    let unit = unit(q.unit.as_deref())?;
    if let Some(t) = &q.tres {
        if !matches!(Tres::parse_list(t).as_deref(), Ok([Tres::Gpu])) {
            return Err(ApiError::bad_field(
                "tres",
                "cluster utilisation is measured for gres/gpu only",
            ));
        }
    }
    let per = unit.seconds();
    let mut total = ClusterUsageRow::default();
    let mut rows = Vec::new();
    for r in usage_rollup::cluster_usage_sum(&state.pool, start, end).await? {
        let row = ClusterUsageRow {
            gpu_model: Some(r.gpu_model),
            allocated: r.allocated_seconds / per,
            down: r.down_seconds / per,
            planned_down: r.planned_down_seconds / per,
            reserved: r.reserved_seconds / per,
            idle: (r.reported_seconds
                - r.allocated_seconds
                - r.down_seconds
                - r.planned_down_seconds
                - r.reserved_seconds)
                .max(0.0)
                / per,
            reported: r.reported_seconds / per,
            samples: r.samples.max(0) as u64,
        };
        total.allocated += row.allocated;
        total.down += row.down;
        total.planned_down += row.planned_down;
        total.reserved += row.reserved;
        total.idle += row.idle;
        total.reported += row.reported;
        total.samples += row.samples;
        rows.push(row);
    }
    Ok(Json(ClusterUsage {
        start,
        end,
        unit: unit.name().to_string(),
        tres: Tres::Gpu.name().to_string(),
        rows,
        total,
    }))
}

/// Show the cluster's GPU allocation and utilisation over time.
///
/// Per time bucket: GPUs in the cluster, allocated, down, planned down and reserved (the
/// scheduler's per-minute samples, averaged over the bucket), and the mean utilisation of
/// the GPUs jobs held (the workers' samples). For the console's overview; open to every
/// person, like `GET /v1/usage/cluster`.
#[utoipa::path(get, path = "/v1/usage/cluster/timeline", tag = "usage", operation_id = "usage_cluster_timeline",
    params(ClusterTimelineQuery),
    responses((status = 200, description = "The timeline", body = ClusterTimeline),
              (status = 400, description = "A bad parameter (named in the problem)", body = Problem),
              (status = 401, description = "No or bad credentials", body = Problem)),
    security(("bearer" = [])))]
pub async fn usage_cluster_timeline(
    State(state): State<AppState>,
    caller: Caller,
    q: Result<Query<ClusterTimelineQuery>, QueryRejection>,
) -> Result<Json<ClusterTimeline>, ApiError> {
    caller.require_person()?;
    caller.require_unscoped()?;
    let q = q
        .map(|Query(v)| v)
        .map_err(|e| crate::error::rejection("query", e.body_text()))?;
    let now = Utc::now();
    let end = match q.end.as_deref() {
        Some(s) => parse_report_time(s, now).map_err(|e| ApiError::bad_field("end", e))?,
        None => now,
    };
    let start = match q.start.as_deref() {
        Some(s) => parse_report_time(s, now).map_err(|e| ApiError::bad_field("start", e))?,
        None => end - Duration::hours(24),
    };
    if start >= end {
        return Err(ApiError::bad_field("start", "must be before end"));
    }
    let points = q.points.unwrap_or(288);
    if !(10..=2000).contains(&points) {
        return Err(ApiError::bad_field("points", "must be between 10 and 2000"));
    }
    let span = (end - start).num_seconds() as f64;
    let step = (span / f64::from(points) / 60.0).ceil().max(1.0) * 60.0;
    let states = usage_rollup::cluster_timeline(&state.pool, start, end, step).await?;
    let util: BTreeMap<DateTime<Utc>, f64> =
        usage_rollup::cluster_utilization_timeline(&state.pool, start, end, step)
            .await?
            .into_iter()
            .collect();
    Ok(Json(ClusterTimeline {
        start,
        end,
        step_seconds: step as u64,
        points: states
            .into_iter()
            .map(|r| ClusterTimelinePoint {
                time: r.bucket,
                gpus_total: r.total,
                gpus_allocated: r.allocated,
                gpus_down: r.down,
                gpus_planned_down: r.planned_down,
                gpus_reserved: r.reserved,
                utilization_pct: util.get(&r.bucket).copied(),
            })
            .collect(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn the_default_window_is_yesterday_00_00_to_now_in_whole_hours() {
        let now = Utc.with_ymd_and_hms(2026, 12, 1, 15, 20, 0).unwrap();
        let (start, end) = window(None, None, now).unwrap();
        assert_eq!(start, Utc.with_ymd_and_hms(2026, 11, 30, 0, 0, 0).unwrap());
        assert_eq!(end, Utc.with_ymd_and_hms(2026, 12, 1, 16, 0, 0).unwrap());
        let (start, end) = window(Some("2026-11-01"), Some("2026-11-02"), now).unwrap();
        assert_eq!(start, Utc.with_ymd_and_hms(2026, 11, 1, 0, 0, 0).unwrap());
        assert_eq!(end, Utc.with_ymd_and_hms(2026, 11, 2, 0, 0, 0).unwrap());
        assert!(window(Some("2026-11-02"), Some("2026-11-01"), now).is_err());
    }
}
