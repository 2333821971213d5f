//! GPU usage per job (`GET /v1/jobs/{id}/stats`, like `sstat`): the samples workers send
//! with every sync, aggregated per GPU the job holds, and kept after it ends.

use crate::auth::Caller;
use crate::error::ApiError;
use crate::routes::visible_job;
use crate::AppState;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::Json;
use berth_core::stats::{GpuSeries, GpuSeriesPoint, GpuStats, JobGpuSamples, JobStats};
use berth_core::wire::Problem;
use berth_db::gpu_stats;
use chrono::{DateTime, Datelike, Utc};
use serde::Deserialize;
use utoipa::IntoParams;

/// Show a job's GPU usage.
///
/// Per GPU of the job's current run: samples, average utilisation, peak memory, energy
/// and the latest sample; and the totals. Available while it runs and after it ends.
#[utoipa::path(get, path = "/v1/jobs/{id}/stats", tag = "jobs", operation_id = "job_stats",
    params(("id" = i64, Path, description = "Job id")),
    responses((status = 200, description = "The job's GPU usage", body = JobStats),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 404, description = "No such job (or not yours)", body = Problem)),
    security(("bearer" = [])))]
pub async fn job_stats(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<i64>,
) -> Result<Json<JobStats>, ApiError> {
    let job = visible_job(&state, &caller, id).await?;
    let rows = gpu_stats::job_gpu_stats_list(&state.pool, id, job.restart_count).await?;
    let samples: i64 = rows.iter().map(|r| r.samples).sum();
    let utilization: i64 = rows.iter().map(|r| r.utilization_sum).sum();
    Ok(Json(JobStats {
        job_id: id,
        run: u32::try_from(job.restart_count).unwrap_or(0),
        avg_utilization_pct: (samples > 0).then(|| utilization as f64 / samples as f64),
        peak_memory_mib: rows
            .iter()
            .map(|r| u64::try_from(r.memory_peak_mib).unwrap_or(0))
            .max()
            .unwrap_or(0),
        energy_joules: rows.iter().map(|r| r.energy_j).sum(),
        gpus: rows
            .iter()
            .map(|r| GpuStats {
                node: r.node_name.clone(),
                index: u32::try_from(r.gpu_index).unwrap_or(0),
                samples: u64::try_from(r.samples).unwrap_or(0),
                avg_utilization_pct: if r.samples > 0 {
                    r.utilization_sum as f64 / r.samples as f64
                } else {
                    0.0
                },
                peak_memory_mib: u64::try_from(r.memory_peak_mib).unwrap_or(0),
                energy_joules: r.energy_j,
                utilization_pct: r.last_utilization_pct.and_then(|v| u32::try_from(v).ok()),
                memory_used_mib: r.last_memory_used_mib.and_then(|v| u64::try_from(v).ok()),
                power_w: r.last_power_w,
                temperature_c: r.last_temperature_c.and_then(|v| u32::try_from(v).ok()),
                last_sampled_at: r.last_sampled_at,
            })
            .collect(),
    }))
}

/// `GET /v1/jobs/{id}/gpu-samples` parameters.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct GpuSamplesQuery {
    /// The run (restart count); default the job's current one.
    pub run: Option<u32>,
    /// Only samples taken at or after this time (RFC 3339), to follow a running job.
    pub since: Option<DateTime<Utc>>,
    /// At most this many points per GPU, 10..=2000 (default 360): samples are averaged
    /// in buckets wide enough for the run's span.
    pub points: Option<u32>,
}

/// Show a job's GPU usage over time.
///
/// Per GPU the run held: mean utilisation (percent), highest memory in use (MiB) and
/// mean power (watts) per time bucket. Workers sample every sync; the series keeps one
/// sample per GPU every 10 s, and buckets widen so that a series has at most `points`
/// points. Kept after the job ends, with the job.
#[utoipa::path(get, path = "/v1/jobs/{id}/gpu-samples", tag = "jobs", operation_id = "job_gpu_samples",
    params(("id" = i64, Path, description = "Job id"), GpuSamplesQuery),
    responses((status = 200, description = "The job's per-GPU time series", body = JobGpuSamples),
              (status = 400, description = "A bad parameter (named in the problem)", body = Problem),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 404, description = "No such job (or not yours)", body = Problem)),
    security(("bearer" = [])))]
pub async fn job_gpu_samples(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<i64>,
    q: Result<Query<GpuSamplesQuery>, QueryRejection>,
) -> Result<Json<JobGpuSamples>, ApiError> {
    let q = q
        .map(|Query(v)| v)
        .map_err(|e| crate::error::rejection("query", e.body_text()))?;
    let job = visible_job(&state, &caller, id).await?;
    if q.since.is_some_and(|t| !(1970..=9999).contains(&t.year())) {
        return Err(ApiError::bad_field(
            "since",
            "must be a time between the years 1970 and 9999",
        ));
    }
    let points = q.points.unwrap_or(360);
    if !(10..=2000).contains(&points) {
        return Err(ApiError::bad_field("points", "must be between 10 and 2000"));
    }
    let run = match q.run {
        Some(r) if i64::from(r) > i64::from(job.restart_count) => {
            return Err(ApiError::bad_field(
                "run",
                format!("job {id} has had runs 0 to {}", job.restart_count),
            ))
        }
        Some(r) => r as i32,
        None => job.restart_count,
    };
    let span = gpu_stats::job_gpu_samples_span(&state.pool, id, run).await?;
    // The bucket width: the whole run's span (not only what `since` asks for, so that a
    // follower's buckets line up with the first page's) over the points asked for.
    let step = match span {
        Some((first, last)) => {
            let secs = (last - first).num_seconds().max(0) as f64;
            (secs / f64::from(points))
                .ceil()
                .max(gpu_stats::SERIES_INTERVAL_SECONDS)
        }
        None => gpu_stats::SERIES_INTERVAL_SECONDS,
    };
    let rows = if span.is_some() {
        gpu_stats::job_gpu_samples_list(&state.pool, id, run, q.since, step).await?
    } else {
        Vec::new()
    };
    let mut gpus: Vec<GpuSeries> = Vec::new();
    for r in rows {
        let index = u32::try_from(r.gpu_index).unwrap_or(0);
        let point = GpuSeriesPoint {
            time: r.bucket,
            utilization_pct: r.utilization_pct,
            memory_used_mib: u64::try_from(r.memory_used_mib).unwrap_or(0),
            power_w: r.power_w,
        };
        match gpus.last_mut() {
            Some(g) if g.node == r.node_name && g.index == index => g.points.push(point),
            _ => gpus.push(GpuSeries {
                node: r.node_name,
                index,
                points: vec![point],
            }),
        }
    }
    Ok(Json(JobGpuSamples {
        job_id: id,
        run: u32::try_from(run).unwrap_or(0),
        step_seconds: step as u64,
        gpus,
    }))
}
