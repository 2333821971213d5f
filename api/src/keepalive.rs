//! Keep-alives of interactive allocations (Slurm's `InactiveLimit`): salloc, and srun
//! outside an allocation, say every so often that they are still there; the api records
//! until when the job may go without another ([`crate::limits::Limits::inactive_limit`]
//! after now), and the scheduler's reconciler ends the job once that has passed (a
//! client killed with SIGKILL, or its machine lost, leaves no allocation behind). Only
//! the job's owner keeps it alive: not its job token, not an admin.

use crate::auth::Caller;
use crate::error::ApiError;
use crate::routes::visible_job;
use crate::AppState;
use axum::extract::{Path, State};
use axum::Json;
use berth_core::wire::{JobKeepalive, Problem};
use berth_db::job_keepalive;

/// Keep a job's allocation alive.
///
/// Says that the allocation's client (salloc, srun outside an allocation) is still there:
/// the job ends (a running one TIMEOUT, a pending one CANCELLED, reason `InactiveLimit`)
/// when no keep-alive came for the cluster's inactive limit (`[scheduler]
/// inactive_limit_seconds`, 120 s by default; 0 turns it off). A job that never had one
/// (sbatch's) is never ended this way. Only the job's owner may send it.
#[utoipa::path(post, path = "/v1/jobs/{id}/keepalive", tag = "jobs", operation_id = "job_keepalive",
    params(("id" = i64, Path, description = "Job id")),
    responses((status = 200, description = "Recorded: the limit, and when the job ends without another", body = JobKeepalive),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "Not the job's owner (or a job's token)", body = Problem),
              (status = 404, description = "No such job (or not yours)", body = Problem),
              (status = 409, description = "The job has ended", body = Problem)),
    security(("bearer" = [])))]
pub async fn job_keepalive(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<i64>,
) -> Result<Json<JobKeepalive>, ApiError> {
    let row = visible_job(&state, &caller, id).await?;
    if row.user_name != caller.name {
        return Err(ApiError::Forbidden(format!(
            "job {id} is {}'s: only its owner's salloc or srun keeps it alive",
            row.user_name
        )));
    }
    let limit = state.limiters.limits().inactive_limit;
    let ended = || ApiError::Conflict {
        code: "job_ended",
        detail: format!("job {id} has ended: there is no allocation to keep alive"),
    };
    if limit.is_zero() {
        if !matches!(row.state.as_str(), "PENDING" | "RUNNING" | "SUSPENDED") {
            return Err(ended());
        }
        job_keepalive::job_keepalive_delete(&state.pool, id).await?;
        return Ok(Json(JobKeepalive {
            job_id: id,
            inactive_limit: 0,
            expires_at: None,
        }));
    }
    let expires_at =
        job_keepalive::job_keepalive_record(&state.pool, id, limit.as_secs_f64()).await?;
    match expires_at {
        Some(at) => Ok(Json(JobKeepalive {
            job_id: id,
            inactive_limit: limit.as_secs(),
            expires_at: Some(at),
        })),
        None => Err(ended()),
    }
}
