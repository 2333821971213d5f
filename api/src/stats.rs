//! GPU usage per job (`GET /v1/jobs/{id}/stats`, like `sstat`): the samples workers send
//! with every sync, aggregated per GPU the job holds, and kept after it ends.

use crate::auth::Caller;
use crate::error::ApiError;
use crate::routes::visible_job;
use crate::AppState;
use axum::extract::{Path, State};
use axum::Json;
use berth_core::stats::{GpuStats, JobStats};
use berth_core::wire::Problem;
use berth_db::gpu_stats;

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
