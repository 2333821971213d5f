//! `POST /v1/jobs/{id}/signal` (`scancel --signal=SIG [-b|-f] JOB[.STEP]`): a signal for
//! a running job's processes, which go on running (a handler in the job decides what the
//! signal means).
//!
//! The signal is stored for each node that runs the part of the job aimed at
//! ([`berth_db::signal`]) and the nodes' held syncs are woken: each worker sends it to the
//! process groups it started for that run (the batch shell's, the step tasks') and
//! acknowledges it in its next sync, so it is sent once ([`crate::node_sync`]).

use crate::auth::Caller;
use crate::error::{rejection, ApiError};
use crate::routes::visible_job;
use crate::AppState;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use berth_core::signal::{
    JobSignal, JobSignalQueued, SignalTarget, SignalledRun, MAX_SENT_SIGNAL, MAX_SIGNAL,
};
use berth_core::state::JobState;
use berth_core::wire::Problem;
use berth_db::{job, notify, signal, step, DbError};

/// Signal a running job.
///
/// Sends `signal` (a name: `USR1`, `SIGUSR1`, or a number 1 to 31; the real-time signals
/// above are refused) to the tasks of every
/// running step (the default, Slurm's `scancel --signal`), to the batch shell alone
/// (`batch`, `scancel -b`), to the batch shell with everything it started and every step
/// (`full`, `scancel -f`), or to one step's tasks (`step`, `scancel --signal JOB.STEP`).
/// The job goes on running. An array's id signals every running task of the array;
/// `array_task` names one. The job's nodes send it within a sync (milliseconds while
/// they are connected). `KILL` is sent like any other signal: to cancel a job, use
/// `POST /v1/jobs/{id}/cancel`. Whoever may cancel the job may signal it (its user, its
/// account's coordinators, operators and admins, and the job's own token).
#[utoipa::path(post, path = "/v1/jobs/{id}/signal", tag = "jobs", operation_id = "job_signal",
    params(("id" = i64, Path, description = "Job id (an array's id signals its running tasks)")),
    request_body = JobSignal,
    responses(
        (status = 202, description = "The signal is on its way to the job's nodes", body = JobSignalQueued),
        (status = 400, description = "A bad field, naming it (`signal`, `step`)", body = Problem),
        (status = 401, description = "No or bad credentials", body = Problem),
        (status = 403, description = "A node token, or a token that may not write jobs", body = Problem),
        (status = 404, description = "No such job, array task or step (or not yours)", body = Problem),
        (status = 409, description = "The job is not running (`job_not_running`: pending, suspended; `job_ended`), or the step has ended (`step_ended`)", body = Problem)),
    security(("bearer" = [])))]
pub async fn job_signal(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<i64>,
    body: Result<Json<JobSignal>, JsonRejection>,
) -> Result<(StatusCode, Json<JobSignalQueued>), ApiError> {
    let req = body.map(|Json(v)| v).map_err(|e| {
        let detail = e.body_text();
        if detail.contains("SignalSpec") {
            ApiError::bad_field("signal", "a signal number or name (USR1, SIGUSR1, 10)")
        } else {
            rejection("JSON body", detail)
        }
    })?;
    let queued = signal_one(&state, &caller, id, &req).await?;
    Ok((StatusCode::ACCEPTED, Json(queued)))
}

/// Queues `req` for job `id` as `caller` asks (see [`job_signal`]).
///
/// # Errors
/// 400 for a bad signal or a step with `batch`/`full`; 404 for a job, array task or step
/// the caller may not see; 409 `job_not_running`, `job_ended` or `step_ended`.
pub(crate) async fn signal_one(
    state: &AppState,
    caller: &Caller,
    id: i64,
    req: &JobSignal,
) -> Result<JobSignalQueued, ApiError> {
    let number = req.signal.number().ok_or_else(|| {
        ApiError::bad_field(
            "signal",
            format!(
                "{}: not a signal (a name such as USR1 or SIGUSR1, or a number 1 to {MAX_SIGNAL})",
                match &req.signal {
                    berth_core::signal::SignalSpec::Number(n) => n.to_string(),
                    berth_core::signal::SignalSpec::Name(s) =>
                        format!("{:?}", berth_core::text::escape(s)),
                }
            ),
        )
    })?;
    if number > MAX_SENT_SIGNAL {
        return Err(ApiError::bad_field(
            "signal",
            format!(
                "{number}: a real-time signal; Berth's workers send the standard signals, 1 to \
                 {MAX_SENT_SIGNAL}"
            ),
        ));
    }
    if req.step.is_some() && (req.batch || req.full) {
        return Err(ApiError::bad_field(
            "step",
            "a step's signal goes to its tasks: not with batch or full, which name the batch shell",
        ));
    }
    let target = req.target();
    let step_id = req
        .step
        .map(|s| i32::try_from(s).map_err(|_| ApiError::NotFound(format!("no step {id}.{s}"))))
        .transpose()?;
    let row = visible_job(state, caller, id).await?;
    let job_id = match req.array_task {
        None => id,
        Some(task) => {
            let missing = || ApiError::NotFound(format!("no task {id}_{task}"));
            if row.array_job_id != Some(id) {
                return Err(ApiError::NotFound(format!("job {id} is not a job array")));
            }
            let task = i32::try_from(task).map_err(|_| missing())?;
            job::job_array_task_get(&state.pool, id, task)
                .await?
                .ok_or_else(missing)?
        }
    };
    // The job itself, or (an array's id) every task of the array that has a row.
    let whole_array = req.array_task.is_none() && row.array_job_id == Some(id);
    let candidates = signal::job_signal_runs(&state.pool, job_id, whole_array).await?;
    let running: Vec<(i64, i32)> = candidates
        .iter()
        .filter(|c| c.state == "RUNNING")
        .map(|c| (c.id, c.run))
        .collect();
    if running.is_empty() {
        return Err(not_running(id, &candidates));
    }
    let mut tx = berth_db::begin(&state.pool).await?;
    let mut jobs = Vec::new();
    let mut step_problem = None;
    for (job_id, run) in running {
        if let Some(step_id) = step_id {
            match step::step_get(&mut *tx, job_id, run, step_id).await? {
                None => {
                    step_problem.get_or_insert_with(|| {
                        ApiError::NotFound(format!("no step {job_id}.{step_id}"))
                    });
                    continue;
                }
                Some(s) if s.state != "RUNNING" => {
                    step_problem = Some(ApiError::Conflict {
                        code: "step_ended",
                        detail: format!("step {job_id}.{step_id} is {}", s.state),
                    });
                    continue;
                }
                Some(_) => {}
            }
        }
        let nodes = signal::job_signal_insert_in_tx(
            &mut tx,
            job_id,
            run,
            number,
            target.as_str(),
            step_id,
            &caller.name,
        )
        .await?;
        for node in &nodes {
            notify::notify(&mut *tx, notify::NODE_CHANNEL, node).await?;
        }
        jobs.push(SignalledRun {
            job_id,
            run: u32::try_from(run).unwrap_or(0),
            nodes,
        });
    }
    if jobs.is_empty() {
        return Err(step_problem.unwrap_or_else(|| ApiError::NotFound(format!("no job {id}"))));
    }
    tx.commit().await.map_err(DbError::from)?;
    tracing::info!(
        job.id = id,
        signal = number,
        target = target.as_str(),
        step.id = step_id,
        runs = jobs.len(),
        by = %caller.name,
        "signal queued"
    );
    Ok(JobSignalQueued {
        signal: number,
        target,
        step: req.step.filter(|_| target == SignalTarget::Step),
        jobs,
    })
}

/// Why job `id` (its rows `candidates`, none running) cannot be signalled: 409
/// `job_ended` when every one has ended, else 409 `job_not_running` (pending,
/// suspended), naming the state.
fn not_running(id: i64, candidates: &[signal::SignalCandidate]) -> ApiError {
    let ended = |c: &&signal::SignalCandidate| {
        c.state
            .parse::<JobState>()
            .is_ok_and(|state| state.is_terminal())
    };
    match candidates.iter().find(|c| !ended(c)).or(candidates.first()) {
        Some(c) if ended(&c) => ApiError::Conflict {
            code: "job_ended",
            detail: format!("job {id} is {}: its processes have ended", c.state),
        },
        Some(c) => ApiError::Conflict {
            code: "job_not_running",
            detail: format!(
                "job {id} is {}: only a running job's processes can be signalled",
                c.state
            ),
        },
        None => ApiError::NotFound(format!("no job {id}")),
    }
}
