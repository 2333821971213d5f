//! Requeue (`scontrol requeue`, `POST /v1/jobs/{id}/requeue`): the same job id goes back
//! to PENDING with `restart_count` + 1; a running run is stopped by its workers (its
//! GPUs stay held until they report it gone); the next run sees `SLURM_RESTART_COUNT`
//! one higher, appends to its output files under `--open-mode=append`, and finds the
//! same `BERTH_CHECKPOINT_DIR`.

use crate::auth::Caller;
use crate::error::ApiError;
use crate::routes::{job_view, visible_job};
use crate::AppState;
use axum::extract::{Path, State};
use axum::Json;
use berth_core::spec::JobSpec;
use berth_core::wire::{Job, Problem};
use berth_db::{allocation, job, notify, step, DbError};

/// Requeue a job.
///
/// A running (or ended) batch job goes back to PENDING under the same id with its restart
/// count one higher; the processes of a running one are stopped (SIGTERM, then SIGKILL
/// after the grace). Refused for a job submitted with `--no-requeue` and for one that is
/// already pending.
#[utoipa::path(post, path = "/v1/jobs/{id}/requeue", tag = "jobs", operation_id = "job_requeue",
    params(("id" = i64, Path, description = "Job id")),
    responses((status = 200, description = "The job, pending again", body = Job),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 404, description = "No such job (or not yours)", body = Problem),
              (status = 409, description = "Already pending, or submitted with --no-requeue", body = Problem)),
    security(("bearer" = [])))]
pub async fn job_requeue(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<i64>,
) -> Result<Json<Job>, ApiError> {
    visible_job(&state, &caller, id).await?;
    let mut tx = berth_db::begin(&state.pool).await?;
    let current = job::job_lock_in_tx(&mut tx, id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no job {id}")))?;
    let spec: JobSpec = serde_json::from_value(current.spec.clone()).unwrap_or_default();
    if spec.requeue == Some(false) {
        return Err(ApiError::Conflict {
            code: "not_requeueable",
            detail: format!("job {id} was submitted with --no-requeue"),
        });
    }
    let Some(row) = job::job_requeue_in_tx(&mut tx, id, &caller.name).await? else {
        return Err(ApiError::Conflict {
            code: "already_pending",
            detail: format!("job {id} is already pending"),
        });
    };
    step::step_end_all_for_job_in_tx(&mut tx, id, current.restart_count).await?;
    // A run that never started on its node will never report its end: free it now.
    if !job::job_event_exists(&mut *tx, id, current.restart_count, "started").await? {
        allocation::allocation_release_job_in_tx(&mut tx, id, current.restart_count).await?;
    }
    // Wake the nodes of the run left behind (they stop it) and the scheduler.
    for a in allocation::allocation_list_for_run(&mut *tx, id, current.restart_count).await? {
        notify::notify(&mut *tx, notify::NODE_CHANNEL, &a).await?;
    }
    notify::notify(&mut *tx, notify::JOBS_CHANNEL, &id.to_string()).await?;
    tx.commit().await.map_err(DbError::from)?;
    tracing::info!(job.id = id, restart_count = row.restart_count, by = %caller.name, "job requeued");
    Ok(Json(job_view(&state, &row).await?))
}
