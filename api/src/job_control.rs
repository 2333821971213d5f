//! Scheduling controls of pending jobs (scontrol's `hold`, `release`, `update job`; the
//! time limit of running ones too):
//! thin handlers over `berth_db::job`. A job id that names an array master applies to
//! every pending task of the array. `POST /v1/jobs/cancel`, `/hold` and `/release` apply
//! one of these to many jobs in one request (`scancel 1 2 3` is one RPC in Slurm too).

use crate::auth::Caller;
use crate::error::{rejection, ApiError};
use crate::routes::visible_job;
use crate::AppState;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::Json;
use berth_core::auth::Role;
use berth_core::scheduling::JobUpdate;
use berth_core::wire::{Job, JobBatch, JobBatchItem, JobBatchResult, Problem};
use berth_db::job::{self, JobRow};
use berth_db::{allocation, notify, DbError};

async fn view(state: &AppState, caller: &Caller, id: i64) -> Result<Json<Job>, ApiError> {
    let row = visible_job(state, caller, id).await?;
    notify::notify(&state.pool, notify::JOBS_CHANNEL, &id.to_string()).await?;
    Ok(Json(crate::routes::job_view(state, &row).await?))
}

fn not_pending(row: &JobRow) -> ApiError {
    ApiError::Conflict {
        code: "job_not_pending",
        detail: format!("job {} is {}, not PENDING", row.id, row.state),
    }
}

/// Hold a pending job.
///
/// The job (or every pending task of the array) stays pending with reason `JobHeldUser`,
/// or `JobHeldAdmin` when an admin or operator holds it, until released.
#[utoipa::path(post, path = "/v1/jobs/{id}/hold", tag = "jobs", operation_id = "job_hold",
    params(("id" = i64, Path, description = "Job id (an array's id holds the whole array)")),
    responses((status = 200, description = "The job, held", body = Job),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 404, description = "No such job (or not yours)", body = Problem),
              (status = 409, description = "The job is not pending", body = Problem)),
    security(("bearer" = [])))]
pub async fn job_hold(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<i64>,
) -> Result<Json<Job>, ApiError> {
    hold_one(&state, &caller, id).await.map(Json)
}

/// Holds job `id` for `caller` (see [`job_hold`]).
///
/// # Errors
/// 404 for a job the caller may not see, 409 when it is not pending.
pub(crate) async fn hold_one(state: &AppState, caller: &Caller, id: i64) -> Result<Job, ApiError> {
    let row = visible_job(state, caller, id).await?;
    let reason = if caller.sees_all_jobs() {
        "JobHeldAdmin"
    } else {
        "JobHeldUser"
    };
    if job::job_hold(&state.pool, id, reason).await? == 0 {
        return Err(not_pending(&row));
    }
    view(state, caller, id).await.map(|Json(job)| job)
}

/// Release a held job.
///
/// A hold set by an admin or operator (`JobHeldAdmin`) can only be released by one.
#[utoipa::path(post, path = "/v1/jobs/{id}/release", tag = "jobs", operation_id = "job_release",
    params(("id" = i64, Path, description = "Job id (an array's id releases the whole array)")),
    responses((status = 200, description = "The job, released", body = Job),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "An admin hold, and the caller is not an admin", body = Problem),
              (status = 404, description = "No such job (or not yours)", body = Problem),
              (status = 409, description = "The job is not pending and held", body = Problem)),
    security(("bearer" = [])))]
pub async fn job_release(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<i64>,
) -> Result<Json<Job>, ApiError> {
    release_one(&state, &caller, id).await.map(Json)
}

/// Releases job `id` for `caller` (see [`job_release`]).
///
/// # Errors
/// 404 for a job the caller may not see, 403 for an admin hold released by a user, 409
/// when it is not held.
pub(crate) async fn release_one(
    state: &AppState,
    caller: &Caller,
    id: i64,
) -> Result<Job, ApiError> {
    let row = visible_job(state, caller, id).await?;
    if row.reason.as_deref() == Some("JobHeldAdmin") && !caller.sees_all_jobs() {
        return Err(ApiError::Forbidden(format!(
            "job {id} was held by an administrator; only one may release it"
        )));
    }
    if job::job_release(&state.pool, id).await? == 0 {
        return Err(ApiError::Conflict {
            code: "job_not_held",
            detail: format!("job {id} is not a held pending job"),
        });
    }
    view(state, caller, id).await.map(|Json(job)| job)
}

/// Move a pending job to the top of its user's queue (scontrol top).
///
/// Among the pending (unheld) jobs of the same user, partition, account and QOS, the
/// job goes first: its nice is lowered just enough to put its priority above theirs, and
/// the nice of those that were ahead raised by an equal share of that (Slurm's method:
/// the user's jobs together gain nothing on anyone else's). Whoever may hold the job may
/// top it (its owner, its account's coordinators, admins and operators; Slurm needs
/// `SchedulerParameters=enable_user_top` for users). A job already first is left as it
/// is; 409 for a held job or one the scheduler has not prioritised yet, and when a peer
/// is too far ahead (an admin adjustment) for nice values to reorder them.
#[utoipa::path(post, path = "/v1/jobs/{id}/top", tag = "jobs", operation_id = "job_top",
    params(("id" = i64, Path, description = "Job id (an array's id moves all its pending tasks)")),
    responses((status = 200, description = "The job, first in its user's queue", body = Job),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 404, description = "No such job (or not yours)", body = Problem),
              (status = 409, description = "Not pending, held, not prioritised yet, or a peer out of reach", body = Problem)),
    security(("bearer" = [])))]
pub async fn job_top(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<i64>,
) -> Result<Json<Job>, ApiError> {
    let row = visible_job(&state, &caller, id).await?;
    let mut tx = berth_db::begin(&state.pool).await?;
    let outcome = job::job_top_in_tx(&mut tx, id).await?;
    tx.commit().await.map_err(DbError::from)?;
    match outcome {
        job::TopOutcome::NotPending => return Err(not_pending(&row)),
        job::TopOutcome::NoPriority => {
            return Err(ApiError::Conflict {
                code: "job_not_prioritized",
                detail: format!(
                "job {id} is held or has no priority yet (the next scheduling pass gives it one)"
            ),
            })
        }
        job::TopOutcome::OutOfReach { peer } => {
            return Err(ApiError::Conflict {
                code: "top_out_of_reach",
                detail: format!(
                    "job {peer} is too far ahead for nice values to reorder (an administrator's \
                     priority adjustment); nothing changed"
                ),
            })
        }
        job::TopOutcome::AlreadyFirst => {}
        job::TopOutcome::Moved { delta, others } => tracing::info!(
            job.id = id,
            by = %caller.name,
            nice_delta = delta,
            passed = others.len(),
            "job moved to the top of its user's queue"
        ),
    }
    view(&state, &caller, id).await
}

/// Update a pending or running job.
///
/// Changes nice, the time limit, the begin time or (admins and operators) the priority
/// adjustment of a pending job, as `scontrol update job` does; of a running job only the
/// time limit (counted from its start; its nodes enforce the new one from their next
/// sync). Users may only lower their priority (nice ≥ 0) and their time limit.
#[utoipa::path(patch, path = "/v1/jobs/{id}", tag = "jobs", operation_id = "job_update",
    params(("id" = i64, Path, description = "Job id (an array's id updates the whole array)")),
    request_body = JobUpdate,
    responses((status = 200, description = "The job, updated", body = Job),
              (status = 400, description = "A bad field, naming it", body = Problem),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "A change only admins may make", body = Problem),
              (status = 404, description = "No such job (or not yours)", body = Problem),
              (status = 409, description = "The job is neither pending nor (for a time limit alone) running", body = Problem)),
    security(("bearer" = [])))]
pub async fn job_update(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<i64>,
    body: Result<Json<JobUpdate>, JsonRejection>,
) -> Result<Json<Job>, ApiError> {
    let update = body
        .map(|Json(v)| v)
        .map_err(|e| rejection("JSON body", e.body_text()))?;
    let row = visible_job(&state, &caller, id).await?;
    let admin = matches!(caller.role, Role::Admin | Role::Operator);
    if update
        .nice
        .is_some_and(|n| n.unsigned_abs() > 2_147_483_645)
    {
        return Err(ApiError::bad_field(
            "nice",
            "out of range (-2147483645 to 2147483645)",
        ));
    }
    if update.nice.is_some_and(|n| n < 0) && !admin {
        return Err(ApiError::Forbidden(
            "only admins and operators may set a negative nice".into(),
        ));
    }
    if update.priority_adjust.is_some() && !admin {
        return Err(ApiError::Forbidden(
            "only admins and operators may adjust priorities".into(),
        ));
    }
    let time_limit = match &update.time_limit {
        Some(t) => {
            let secs = berth_core::duration::parse_duration(t)
                .map_err(|e| ApiError::bad_field("time_limit", e.to_string()))?
                .filter(|s| *s > 0)
                .ok_or_else(|| ApiError::bad_field("time_limit", "must be a finite limit"))?;
            let secs =
                i64::try_from(secs).map_err(|_| ApiError::bad_field("time_limit", "too large"))?;
            if !admin && row.time_limit.is_none_or(|cur| secs > cur) {
                return Err(ApiError::Forbidden(
                    "only admins and operators may raise a time limit".into(),
                ));
            }
            Some(secs)
        }
        None => None,
    };
    let begin = match &update.begin {
        Some(b) => Some(
            berth_core::begin::parse_begin(b, chrono::Utc::now())
                .map_err(|e| ApiError::bad_field("begin", e))?,
        ),
        None => None,
    };
    let changed = job::job_update_pending(
        &state.pool,
        id,
        update.nice,
        update.priority_adjust,
        time_limit,
        begin,
    )
    .await?;
    let pending_only = update.nice.is_some() || update.priority_adjust.is_some() || begin.is_some();
    let running_changed = match time_limit {
        Some(limit) if !pending_only => {
            let mut tx = berth_db::begin(&state.pool).await?;
            let n = job::job_update_running_time_limit(&mut *tx, id, limit).await?;
            if n > 0 {
                // Their nodes learn the new limit at once (a held sync returns).
                for a in allocation::allocation_list_for_jobs(&mut *tx, &[id]).await? {
                    notify::notify(&mut *tx, notify::NODE_CHANNEL, &a.node_name).await?;
                }
            }
            tx.commit().await.map_err(DbError::from)?;
            n
        }
        _ => 0,
    };
    if changed == 0 && running_changed == 0 {
        if row.state == "RUNNING" && pending_only {
            return Err(ApiError::Conflict {
                code: "job_not_pending",
                detail: format!(
                    "job {id} is RUNNING: only its time limit may change (nice, priority and \
                     begin time only of a pending job)"
                ),
            });
        }
        return Err(if time_limit.is_some() && !pending_only {
            ApiError::Conflict {
                code: "job_not_pending",
                detail: format!("job {id} is {}, not PENDING or RUNNING", row.state),
            }
        } else {
            not_pending(&row)
        });
    }
    view(&state, &caller, id).await
}

/// Cancel one task of a job array (`scancel 12_3`).
///
/// A task not started yet gets a row of its own (`12_3`) and ends CANCELLED at once, so it
/// never starts; a running one is cancelled like any job (its node stops it). The other
/// tasks are untouched.
#[utoipa::path(post, path = "/v1/jobs/{id}/tasks/{task}/cancel", tag = "jobs",
    operation_id = "job_task_cancel",
    params(("id" = i64, Path, description = "The array's job id"),
           ("task" = u32, Path, description = "The task index")),
    responses((status = 200, description = "The task after the cancellation", body = Job),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 404, description = "No such array or task (or not yours)", body = Problem)),
    security(("bearer" = [])))]
pub async fn job_task_cancel(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, task)): Path<(i64, u32)>,
) -> Result<Json<Job>, ApiError> {
    task_cancel_one(&state, &caller, id, task).await.map(Json)
}

/// Cancels task `task` of array `id` for `caller` (see [`job_task_cancel`]).
///
/// # Errors
/// 404 for an array or task the caller may not see.
pub(crate) async fn task_cancel_one(
    state: &AppState,
    caller: &Caller,
    id: i64,
    task: u32,
) -> Result<Job, ApiError> {
    let row = visible_job(state, caller, id).await?;
    let missing = || ApiError::NotFound(format!("no task {id}_{task}"));
    let task = i32::try_from(task).map_err(|_| missing())?;
    if row.array_job_id != Some(id) {
        return Err(ApiError::NotFound(format!("job {id} is not a job array")));
    }
    let mut tx = berth_db::begin(&state.pool).await?;
    let task_id = match job::job_array_task_get(&mut *tx, id, task).await? {
        Some(task_id) => task_id,
        None => job::job_array_split_in_tx(&mut tx, id, task)
            .await?
            .ok_or_else(missing)?,
    };
    if let Some(cancelled) = job::job_cancel_in_tx(&mut tx, task_id, &caller.name).await? {
        for a in allocation::allocation_list_for_jobs(&mut *tx, &[task_id]).await? {
            notify::notify(&mut *tx, notify::NODE_CHANNEL, &a.node_name).await?;
        }
        notify::notify(&mut *tx, notify::JOBS_CHANNEL, &cancelled.id.to_string()).await?;
    }
    tx.commit().await.map_err(DbError::from)?;
    view(state, caller, task_id).await.map(|Json(job)| job)
}

/// The most jobs one [`JobBatch`] may name.
pub const MAX_BATCH_JOBS: usize = 1000;

/// What a batch request does to each job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BatchAction {
    Cancel,
    Hold,
    Release,
}

/// Parses `12` or `12_3` (`scancel`'s forms).
fn batch_job_ref(text: &str) -> Option<(i64, Option<u32>)> {
    match text.trim().split_once('_') {
        Some((id, task)) => Some((id.parse().ok()?, Some(task.parse().ok()?))),
        None => Some((text.trim().parse().ok()?, None)),
    }
}

/// Applies `action` to every job of the batch, one after the other, each as its single
/// request would (same checks, same answer), and collects the outcomes.
async fn batch(
    state: &AppState,
    caller: &Caller,
    body: Result<Json<JobBatch>, JsonRejection>,
    action: BatchAction,
) -> Result<Json<JobBatchResult>, ApiError> {
    caller.require_person()?;
    if action != BatchAction::Cancel {
        // A job's token never holds or releases jobs (its allow-list refuses the route
        // too).
        caller.require_unscoped()?;
    }
    let req = body
        .map(|Json(v)| v)
        .map_err(|e| rejection("JSON body", e.body_text()))?;
    if req.jobs.is_empty() || req.jobs.len() > MAX_BATCH_JOBS {
        return Err(ApiError::bad_field(
            "jobs",
            format!("name 1 to {MAX_BATCH_JOBS} jobs"),
        ));
    }
    let mut items = Vec::with_capacity(req.jobs.len());
    for name in &req.jobs {
        let outcome = match (batch_job_ref(name), action) {
            (None, _) => Err(ApiError::bad_field(
                "jobs",
                format!(
                    "{:?} is not a job id (12) or an array task (12_3)",
                    berth_core::text::escape(name)
                ),
            )),
            (Some((id, None)), BatchAction::Cancel) => {
                crate::routes::cancel_one(state, caller, id).await
            }
            (Some((id, Some(task))), BatchAction::Cancel) => {
                task_cancel_one(state, caller, id, task).await
            }
            (Some((id, None)), BatchAction::Hold) => hold_one(state, caller, id).await,
            (Some((id, None)), BatchAction::Release) => release_one(state, caller, id).await,
            (Some((_, Some(_))), _) => Err(ApiError::bad_field(
                "jobs",
                format!("{name}: hold and release take whole jobs or arrays, not one task"),
            )),
        };
        items.push(match outcome {
            Ok(job) => JobBatchItem {
                job: name.clone(),
                status: 200,
                result: Some(Box::new(job)),
                problem: None,
            },
            // The database being away fails the whole request, as it would each one.
            Err(e @ (ApiError::Unavailable(_) | ApiError::Internal(_))) => return Err(e),
            Err(e) => {
                let problem = e.problem();
                JobBatchItem {
                    job: name.clone(),
                    status: problem.status,
                    result: None,
                    problem: Some(problem),
                }
            }
        });
    }
    Ok(Json(JobBatchResult { items }))
}

/// Cancel many jobs.
///
/// `scancel 12 13 14_2` in one request: each job (or array task, `14_2`) is cancelled as
/// `POST /v1/jobs/{id}/cancel` (or `…/tasks/{task}/cancel`) would, and its outcome
/// reported in order; one job's failure (404, …) does not stop the others.
#[utoipa::path(post, path = "/v1/jobs/cancel", tag = "jobs", operation_id = "job_cancel_batch",
    request_body = JobBatch,
    responses((status = 200, description = "Each job's outcome, in the order given", body = JobBatchResult),
              (status = 400, description = "No jobs, more than 1000, or a malformed body", body = Problem),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "A node token", body = Problem)),
    security(("bearer" = [])))]
pub async fn job_cancel_batch(
    State(state): State<AppState>,
    caller: Caller,
    body: Result<Json<JobBatch>, JsonRejection>,
) -> Result<Json<JobBatchResult>, ApiError> {
    batch(&state, &caller, body, BatchAction::Cancel).await
}

/// Hold many jobs.
///
/// `scontrol hold 12 13` in one request: each job is held as `POST /v1/jobs/{id}/hold`
/// would, and its outcome reported in order.
#[utoipa::path(post, path = "/v1/jobs/hold", tag = "jobs", operation_id = "job_hold_batch",
    request_body = JobBatch,
    responses((status = 200, description = "Each job's outcome, in the order given", body = JobBatchResult),
              (status = 400, description = "No jobs, more than 1000, or a malformed body", body = Problem),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "A node token or a job's token", body = Problem)),
    security(("bearer" = [])))]
pub async fn job_hold_batch(
    State(state): State<AppState>,
    caller: Caller,
    body: Result<Json<JobBatch>, JsonRejection>,
) -> Result<Json<JobBatchResult>, ApiError> {
    batch(&state, &caller, body, BatchAction::Hold).await
}

/// Release many jobs.
///
/// `scontrol release 12 13` in one request: each job is released as
/// `POST /v1/jobs/{id}/release` would, and its outcome reported in order.
#[utoipa::path(post, path = "/v1/jobs/release", tag = "jobs", operation_id = "job_release_batch",
    request_body = JobBatch,
    responses((status = 200, description = "Each job's outcome, in the order given", body = JobBatchResult),
              (status = 400, description = "No jobs, more than 1000, or a malformed body", body = Problem),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "A node token or a job's token", body = Problem)),
    security(("bearer" = [])))]
pub async fn job_release_batch(
    State(state): State<AppState>,
    caller: Caller,
    body: Result<Json<JobBatch>, JsonRejection>,
) -> Result<Json<JobBatchResult>, ApiError> {
    batch(&state, &caller, body, BatchAction::Release).await
}

#[cfg(test)]
mod tests {
    use super::batch_job_ref;

    #[test]
    fn batch_names_are_ids_or_array_tasks() {
        assert_eq!(batch_job_ref("12"), Some((12, None)));
        assert_eq!(batch_job_ref("12_3"), Some((12, Some(3))));
        assert_eq!(batch_job_ref("12_x"), None);
        assert_eq!(batch_job_ref("abc"), None);
        assert_eq!(batch_job_ref(""), None);
    }
}
