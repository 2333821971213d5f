//! Job steps (`srun` inside an allocation): create a step of a running job, show it,
//! read its tasks' output, and the worker's upload of that output. A step's tasks reach
//! their nodes through the workers' sync ([`crate::node_sync`]).

use crate::auth::Caller;
use crate::error::{rejection, ApiError};
use crate::routes::visible_job;
use crate::AppState;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Json;
use berth_core::hostlist;
use berth_core::spec::JobSpec;
use berth_core::step::{
    layout, parse_gpu_bind, task_gpus, GpuBind, Step, StepCreate, StepInput, StepList, StepOutput,
    StepOutputChunk, StepOutputQuery, StepOutputUpload, StepState, StepTask, STEP_INPUT_MAX_BYTES,
};
use berth_core::wire::{OutputStream, Problem};
use berth_db::job::JobRow;
use berth_db::step::{StepInsert, StepRow, StepTaskInsert, StepTaskRow};
use berth_db::{allocation, job, node, notify, step, DbError};
use std::collections::{HashMap, HashSet};

/// The most output chunks one read returns.
const OUTPUT_PAGE: i64 = 1000;

fn to_u32(v: i32) -> u32 {
    u32::try_from(v).unwrap_or(0)
}

/// A step row and its tasks as the wire's [`Step`].
pub fn step_view(row: &StepRow, tasks: &[&StepTaskRow]) -> Step {
    let mut nodes: Vec<(i32, String)> = tasks
        .iter()
        .map(|t| (t.node_index, t.node_name.clone()))
        .collect();
    nodes.sort();
    nodes.dedup();
    let names: Vec<String> = nodes.into_iter().map(|(_, name)| name).collect();
    Step {
        job_id: row.job_id,
        run: to_u32(row.run),
        step_id: to_u32(row.step_id),
        state: StepState::from_stored(&row.state),
        command: row.command.clone(),
        nodelist: hostlist::compress(&names),
        kill_on_bad_exit: row.kill_on_bad_exit,
        pty: row.pty,
        kill_reason: row.kill_reason.clone(),
        exit_code: row.exit_code,
        created_at: row.created_at,
        end_time: row.end_time,
        tasks: tasks
            .iter()
            .map(|t| StepTask {
                task_id: to_u32(t.task_id),
                node: t.node_name.clone(),
                node_index: to_u32(t.node_index),
                local_id: to_u32(t.local_id),
                gpus: t.gpu_indices.iter().map(|g| to_u32(*g)).collect(),
                started_at: t.started_at,
                ended_at: t.ended_at,
                exit_code: t.exit_code,
                exit_signal: t.exit_signal,
                message: t.message.clone(),
            })
            .collect(),
    }
}

async fn load_step(state: &AppState, job: &JobRow, step_id: i32) -> Result<Step, ApiError> {
    let row = step::step_get(&state.pool, job.id, job.restart_count, step_id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no step {}.{step_id}", job.id)))?;
    let tasks = step::step_task_list(&state.pool, job.id, job.restart_count).await?;
    let mine: Vec<&StepTaskRow> = tasks.iter().filter(|t| t.step_id == step_id).collect();
    Ok(step_view(&row, &mine))
}

fn step_number(step_id: u32) -> Result<i32, ApiError> {
    i32::try_from(step_id).map_err(|_| ApiError::NotFound(format!("no step {step_id}")))
}

/// Create a job step (srun).
///
/// Lays the step's tasks out on the job's allocation (`distribution`: block by default,
/// cyclic or plane=N; absent counts take the job's) and hands them to the nodes' workers, which start them at their next
/// sync. The answer lists every task with its node, `SLURM_PROCID`, `SLURM_LOCALID` and
/// GPUs. Only the job's user (or an admin) runs steps in it: a step runs as that user.
///
/// A step with `gpus_per_task` and without `overlap` gets GPUs that no other running such
/// step holds; while too few are free the answer is 409 `step_resources_busy` (srun waits
/// and retries). Steps without `gpus_per_task`, or with `overlap`, share the job's GPUs.
#[utoipa::path(post, path = "/v1/jobs/{id}/steps", tag = "jobs", operation_id = "step_create",
    params(("id" = i64, Path, description = "Job id")),
    request_body = StepCreate,
    responses(
        (status = 201, description = "The step, its tasks laid out", body = Step),
        (status = 400, description = "A bad option, naming it (`--ntasks`, `--nodelist` …)", body = Problem),
        (status = 401, description = "No or bad credentials", body = Problem),
        (status = 403, description = "Not the job's user nor an admin (steps run as the job's user)", body = Problem),
        (status = 404, description = "No such job (or not yours)", body = Problem),
        (status = 409, description = "The job is not running, or the GPUs the step needs are in use by other steps (`step_resources_busy`)", body = Problem)),
    security(("bearer" = [])))]
pub async fn step_create(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<i64>,
    body: Result<Json<StepCreate>, JsonRejection>,
) -> Result<(StatusCode, Json<Step>), ApiError> {
    let req = body
        .map(|Json(v)| v)
        .map_err(|e| rejection("JSON body", e.body_text()))?;
    let owner = visible_job(&state, &caller, id).await?.user_name;
    // A step runs code as the job's user: only that user (or an admin) may start one, not
    // the operators or account coordinators who may otherwise see and control the job.
    if owner != caller.name && caller.role != berth_core::auth::Role::Admin {
        return Err(ApiError::Forbidden(format!(
            "only {owner} (or an admin) may run steps in job {id}"
        )));
    }
    if req.command.is_empty() || req.command[0].is_empty() {
        return Err(ApiError::bad_field(
            "command",
            "a step needs a program to run",
        ));
    }
    if let Some(dir) = &req.work_dir {
        if !dir.starts_with('/') {
            return Err(ApiError::bad_field("work_dir", "must be an absolute path"));
        }
    }
    for (field, value) in [
        ("--gpus-per-task", req.gpus_per_task),
        ("--cpus-per-task", req.cpus_per_task),
    ] {
        if value == Some(0) {
            return Err(ApiError::bad_field(field, "must be at least 1"));
        }
    }

    let mut tx = berth_db::begin(&state.pool).await?;
    let job_row = job::job_lock_in_tx(&mut tx, id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no job {id}")))?;
    if job_row.state != "RUNNING" {
        return Err(ApiError::Conflict {
            code: "job_not_running",
            detail: format!(
                "job {id} is {}: steps run only inside a running job",
                job_row.state
            ),
        });
    }
    let spec: JobSpec = serde_json::from_value(job_row.spec.clone()).unwrap_or_default();
    let allocations = allocation::allocation_list_for_jobs(&mut *tx, &[id]).await?;
    let job_nodes: Vec<String> = allocations.iter().map(|a| a.node_name.clone()).collect();
    let placed = layout(
        &req,
        &job_nodes,
        to_u32(job_row.num_tasks),
        spec.ntasks_per_node,
    )
    .map_err(|e| ApiError::bad_field(e.field, e.message))?;
    let gpus_per_task = req.gpus_per_task.or(spec.gpus_per_task);
    let bind = parse_gpu_bind(req.gpu_bind.as_deref())
        .map_err(|e| ApiError::bad_field(e.field, e.message))?;
    // A step with --gpus-per-task and without --overlap gets GPUs no other such step
    // holds (Slurm's steps do not share resources unless --overlap); when too few are
    // free it is refused with 409 and srun retries, as Slurm's srun waits.
    let exclusive = gpus_per_task.is_some() && !req.overlap && bind == GpuBind::Default;
    let mut busy: HashMap<String, HashSet<u32>> = HashMap::new();
    if exclusive {
        for (node, gpus) in step::step_gpus_in_use_in_tx(&mut tx, id, job_row.restart_count).await?
        {
            busy.entry(node)
                .or_default()
                .extend(gpus.into_iter().map(to_u32));
        }
    }
    let distribution = match req.distribution.as_deref() {
        Some(value) => berth_core::step::parse_distribution(value)
            .map_err(|e| ApiError::bad_field(e.field, e.message))?,
        None => Default::default(),
    };
    let ids = berth_core::step::task_ids(&placed.tasks_per_node, distribution);
    let mut tasks = Vec::new();
    for ((&node, &count), node_ids) in placed.nodes.iter().zip(&placed.tasks_per_node).zip(&ids) {
        let alloc = &allocations[node];
        let mut node_gpus: Vec<u32> = alloc.gpu_indices.iter().map(|g| to_u32(*g)).collect();
        let bad = |e: berth_core::step::LayoutError| {
            ApiError::bad_field(e.field, format!("on {}: {}", alloc.node_name, e.message))
        };
        // Too few GPUs in the allocation at all is the request's fault (400) …
        task_gpus(&node_gpus, 0, count, gpus_per_task, bind).map_err(bad)?;
        // … as are more CPUs than the job holds there (Slurm's "more processors requested
        // than permitted").
        let cpus_per_task = req.cpus_per_task.or(spec.cpus_per_task).unwrap_or(1);
        if let Some(held) = step_cpus_exceed(&alloc.cpu_ids, count, cpus_per_task) {
            let field = if req.cpus_per_task.is_some() {
                "--cpus-per-task"
            } else {
                "--ntasks"
            };
            return Err(ApiError::bad_field(
                field,
                format!(
                    "on {}: {count} task(s) × {cpus_per_task} CPU(s) is more CPUs than job {id} \
                     holds there ({held})",
                    alloc.node_name
                ),
            ));
        }
        if let Some(taken) = busy.get(&alloc.node_name) {
            node_gpus.retain(|g| !taken.contains(g));
            // … too few free now is a wait (409).
            if task_gpus(&node_gpus, 0, count, gpus_per_task, bind).is_err() {
                return Err(ApiError::Conflict {
                    code: "step_resources_busy",
                    detail: format!(
                        "the GPUs of job {id} on {} are in use by other steps: retry when they end, \
                         or run with --overlap",
                        alloc.node_name
                    ),
                });
            }
        }
        for local in 0..count {
            let gpus = task_gpus(&node_gpus, local, count, gpus_per_task, bind).map_err(bad)?;
            tasks.push(StepTaskInsert {
                task_id: node_ids[local as usize] as i32,
                node_name: alloc.node_name.clone(),
                node_index: alloc.node_index,
                local_id: local as i32,
                gpu_indices: gpus.iter().map(|g| *g as i32).collect(),
            });
        }
    }
    // A credential in srun's environment (outside a batch job: its user's own token) is
    // neither stored nor passed to the tasks, which get a token of the job's run from
    // their node's sync instead.
    let mut environment = req.environment.clone();
    environment.remove("BERTH_TOKEN");
    let insert = StepInsert {
        job_id: id,
        run: job_row.restart_count,
        command: req.command.clone(),
        environment: serde_json::to_value(&environment).unwrap_or_default(),
        work_dir: req.work_dir.clone(),
        cpus_per_task: req
            .cpus_per_task
            .or(spec.cpus_per_task)
            .map(|c| c.min(i32::MAX as u32) as i32),
        gpus_per_task: gpus_per_task.map(|g| g.min(i32::MAX as u32) as i32),
        kill_on_bad_exit: req.kill_on_bad_exit,
        overlap: req.overlap,
        pty: req.pty,
    };
    tasks.sort_by_key(|t| t.task_id);
    let step_id = step::step_insert_in_tx(&mut tx, &insert, &tasks).await?;
    for &node in &placed.nodes {
        notify::notify(&mut *tx, notify::NODE_CHANNEL, &allocations[node].node_name).await?;
    }
    tx.commit().await.map_err(DbError::from)?;
    tracing::info!(
        job.id = id,
        step.id = step_id,
        tasks = tasks.len(),
        "step created"
    );
    Ok((
        StatusCode::CREATED,
        Json(load_step(&state, &job_row, step_id).await?),
    ))
}

/// The CPUs the job holds on a node (the number of `cpu_ids`) when `tasks` tasks of
/// `cpus_per_task` CPUs need more; `None` when they fit, or the allocation was not
/// placed by CPU (no ids).
fn step_cpus_exceed(cpu_ids: &[i32], tasks: u32, cpus_per_task: u32) -> Option<usize> {
    let wanted = u64::from(tasks) * u64::from(cpus_per_task);
    (!cpu_ids.is_empty() && wanted > cpu_ids.len() as u64).then_some(cpu_ids.len())
}

/// List a job's steps.
///
/// The steps of the job's current run, by id, with their tasks.
#[utoipa::path(get, path = "/v1/jobs/{id}/steps", tag = "jobs", operation_id = "step_list",
    params(("id" = i64, Path, description = "Job id")),
    responses((status = 200, description = "The steps", body = StepList),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 404, description = "No such job (or not yours)", body = Problem)),
    security(("bearer" = [])))]
pub async fn step_list(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<i64>,
) -> Result<Json<StepList>, ApiError> {
    let job_row = visible_job(&state, &caller, id).await?;
    let rows = step::step_list(&state.pool, id, job_row.restart_count).await?;
    let tasks = step::step_task_list(&state.pool, id, job_row.restart_count).await?;
    Ok(Json(StepList {
        items: rows
            .iter()
            .map(|row| {
                let mine: Vec<&StepTaskRow> =
                    tasks.iter().filter(|t| t.step_id == row.step_id).collect();
                step_view(row, &mine)
            })
            .collect(),
    }))
}

/// Show a job step.
#[utoipa::path(get, path = "/v1/jobs/{id}/steps/{step}", tag = "jobs", operation_id = "step_get",
    params(("id" = i64, Path, description = "Job id"), ("step" = u32, Path, description = "Step id")),
    responses((status = 200, description = "The step", body = Step),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 404, description = "No such job or step (or not yours)", body = Problem)),
    security(("bearer" = [])))]
pub async fn step_get(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, step_id)): Path<(i64, u32)>,
) -> Result<Json<Step>, ApiError> {
    let job_row = visible_job(&state, &caller, id).await?;
    Ok(Json(
        load_step(&state, &job_row, step_number(step_id)?).await?,
    ))
}

/// Cancel a job step (`scancel JOB.STEP`; `srun --wait` and `--time` when they run out).
///
/// Its running tasks are stopped by their workers (SIGTERM, then SIGKILL after the kill
/// wait); tasks not started yet never start. The step ends `CANCELLED` once its tasks
/// have gone. Whoever may cancel the job may cancel its steps. A step already ended or
/// already being stopped is returned as it is.
#[utoipa::path(post, path = "/v1/jobs/{id}/steps/{step}/cancel", tag = "jobs", operation_id = "step_cancel",
    params(("id" = i64, Path, description = "Job id"), ("step" = u32, Path, description = "Step id")),
    responses((status = 200, description = "The step after the cancellation", body = Step),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 404, description = "No such job or step (or not yours)", body = Problem)),
    security(("bearer" = [])))]
pub async fn step_cancel(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, step_id)): Path<(i64, u32)>,
) -> Result<Json<Step>, ApiError> {
    let job_row = visible_job(&state, &caller, id).await?;
    let number = step_number(step_id)?;
    // The step must exist in the job's current run (404 otherwise).
    load_step(&state, &job_row, number).await?;
    let mut tx = berth_db::begin(&state.pool).await?;
    let reason = format!("cancelled by {}", caller.name);
    if let Some(nodes) =
        step::step_cancel_in_tx(&mut tx, id, job_row.restart_count, number, &reason).await?
    {
        for name in &nodes {
            notify::notify(&mut *tx, notify::NODE_CHANNEL, name).await?;
        }
        tracing::info!(job.id = id, step.id = number, by = %caller.name, "step cancelled");
    }
    tx.commit().await.map_err(DbError::from)?;
    Ok(Json(load_step(&state, &job_row, number).await?))
}

/// Type into a `--pty` step's terminal (`srun --pty`).
///
/// Stores the bytes typed (`data`, base64) and the terminal's new size (`rows`, `cols`)
/// for the node that runs the step's task 0, which writes them to the task's
/// pseudo-terminal in the order the api stored them (within milliseconds: the node's long
/// poll is woken). Only the job's user (or an admin) may: what is typed runs as that user.
#[utoipa::path(post, path = "/v1/jobs/{id}/steps/{step}/input", tag = "jobs", operation_id = "step_input",
    params(("id" = i64, Path, description = "Job id"), ("step" = u32, Path, description = "Step id")),
    request_body = StepInput,
    responses((status = 204, description = "Stored for the task's node"),
              (status = 400, description = "A bad field (`data` not base64 or over 64 KiB, `rows` without `cols`)", body = Problem),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "Not the job's user nor an admin", body = Problem),
              (status = 404, description = "No such job or step (or not yours)", body = Problem),
              (status = 409, description = "The step is not a running `--pty` step (`step_not_interactive`), or its task 0 has ended", body = Problem)),
    security(("bearer" = [])))]
pub async fn step_input(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, step_id)): Path<(i64, u32)>,
    body: Result<Json<StepInput>, JsonRejection>,
) -> Result<StatusCode, ApiError> {
    use base64::Engine as _;
    let req = body
        .map(|Json(v)| v)
        .map_err(|e| rejection("JSON body", e.body_text()))?;
    let job_row = visible_job(&state, &caller, id).await?;
    if job_row.user_name != caller.name && caller.role != berth_core::auth::Role::Admin {
        return Err(ApiError::Forbidden(format!(
            "only {} (or an admin) may type into job {id}'s steps",
            job_row.user_name
        )));
    }
    let data = match req.data.as_deref() {
        Some(text) if !text.is_empty() => base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|e| ApiError::bad_field("data", format!("not base64: {e}")))?,
        _ => Vec::new(),
    };
    if data.len() > STEP_INPUT_MAX_BYTES {
        return Err(ApiError::bad_field(
            "data",
            format!("at most {STEP_INPUT_MAX_BYTES} bytes a request"),
        ));
    }
    let size = match (req.rows, req.cols) {
        (None, None) => None,
        (Some(rows), Some(cols)) if rows > 0 && cols > 0 => {
            Some((i32::from(rows), i32::from(cols)))
        }
        (Some(_), Some(_)) => {
            return Err(ApiError::bad_field(
                "rows",
                "rows and cols must be at least 1",
            ))
        }
        (Some(_), None) => return Err(ApiError::bad_field("cols", "give cols with rows")),
        (None, Some(_)) => return Err(ApiError::bad_field("rows", "give rows with cols")),
    };
    if data.is_empty() && size.is_none() {
        return Err(ApiError::bad_field(
            "data",
            "nothing to send: give data, or rows and cols",
        ));
    }
    let number = step_number(step_id)?;
    let mut tx = berth_db::begin(&state.pool).await?;
    match step::step_input_append(&mut *tx, (id, job_row.restart_count, number), &data, size)
        .await?
    {
        Some((_, node)) => {
            notify::notify(&mut *tx, notify::NODE_CHANNEL, &node).await?;
            tx.commit().await.map_err(DbError::from)?;
            Ok(StatusCode::NO_CONTENT)
        }
        None => {
            drop(tx);
            let step = load_step(&state, &job_row, number).await?;
            Err(ApiError::Conflict {
                code: "step_not_interactive",
                detail: if step.pty {
                    format!("step {id}.{step_id} has ended: its terminal takes no more input")
                } else {
                    format!("step {id}.{step_id} was not started with --pty: it has no terminal")
                },
            })
        }
    }
}

/// Read a step's output.
///
/// The tasks' output chunks in arrival order after `after` (at most 1000 at a time), each
/// naming its task and stream. A task's output is complete once it has ended.
#[utoipa::path(get, path = "/v1/jobs/{id}/steps/{step}/output", tag = "jobs", operation_id = "step_output",
    params(("id" = i64, Path, description = "Job id"), ("step" = u32, Path, description = "Step id"), StepOutputQuery),
    responses((status = 200, description = "New chunks", body = StepOutput),
              (status = 400, description = "A bad query", body = Problem),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 404, description = "No such job (or not yours)", body = Problem)),
    security(("bearer" = [])))]
pub async fn step_output(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, step_id)): Path<(i64, u32)>,
    q: Result<Query<StepOutputQuery>, QueryRejection>,
) -> Result<Json<StepOutput>, ApiError> {
    let q = q
        .map(|Query(v)| v)
        .map_err(|e| rejection("query", e.body_text()))?;
    let job_row = visible_job(&state, &caller, id).await?;
    let rows = step::step_output_read(
        &state.pool,
        id,
        job_row.restart_count,
        step_number(step_id)?,
        q.after.unwrap_or(-1),
        OUTPUT_PAGE,
    )
    .await?;
    Ok(Json(StepOutput {
        chunks: rows
            .into_iter()
            .map(|r| StepOutputChunk {
                seq: r.seq,
                task_id: to_u32(r.task_id),
                stream: if r.stream == "stderr" {
                    OutputStream::Stderr
                } else {
                    OutputStream::Stdout
                },
                data: String::from_utf8_lossy(&r.data).into_owned(),
            })
            .collect(),
    }))
}

/// Upload a task's output (worker).
///
/// Chunks are keyed by run, task, stream and offset: uploading one twice stores it once.
#[utoipa::path(post, path = "/v1/jobs/{id}/steps/{step}/output", tag = "jobs", operation_id = "step_output_upload",
    params(("id" = i64, Path, description = "Job id"), ("step" = u32, Path, description = "Step id")),
    request_body = StepOutputUpload,
    responses((status = 204, description = "Stored"),
              (status = 400, description = "A bad field", body = Problem),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "Not a node token", body = Problem),
              (status = 404, description = "No such task, or its job is not on the caller's node", body = Problem)),
    security(("bearer" = [])))]
pub async fn step_output_upload(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, step_id)): Path<(i64, u32)>,
    body: Result<Json<StepOutputUpload>, JsonRejection>,
) -> Result<StatusCode, ApiError> {
    if !matches!(
        caller.role,
        berth_core::auth::Role::Node | berth_core::auth::Role::Admin
    ) || caller.job_id.is_some()
    {
        return Err(ApiError::Forbidden("only workers upload output".into()));
    }
    let chunk = body
        .map(|Json(v)| v)
        .map_err(|e| rejection("JSON body", e.body_text()))?;
    let too_large = |field: &str| ApiError::bad_field(field, "too large");
    let offset = i64::try_from(chunk.offset).map_err(|_| too_large("offset"))?;
    let run = i32::try_from(chunk.run).map_err(|_| too_large("run"))?;
    let task = i32::try_from(chunk.task_id).map_err(|_| too_large("task_id"))?;
    let placed =
        step::step_task_placement(&state.pool, (id, run, step_number(step_id)?, task)).await?;
    if let Some((_, ours)) = placed {
        // Output of another job that had this id (a failover handed it out again) is not
        // this job's.
        if !berth_core::wire::same_incarnation(chunk.incarnation, Some(ours)) {
            return Err(ApiError::NotFound(format!(
                "no task {task} of step {id}.{step_id} in run {run} of this incarnation"
            )));
        }
    }
    if let Some(node) = caller.own_node() {
        // A node's credential uploads only the output of tasks placed on that node.
        let on_node = match placed {
            Some((node_id, _)) => node::node_get_by_name(&state.pool, node)
                .await?
                .is_some_and(|n| n.id == node_id),
            None => false,
        };
        if !on_node {
            return Err(ApiError::NotFound(format!(
                "no task {task} of step {id}.{step_id} in run {run} on node {node}"
            )));
        }
    }
    if chunk.data.len() > crate::routes::MAX_OUTPUT_CHUNK_BYTES {
        return Err(ApiError::bad_field(
            "data",
            format!(
                "a chunk holds at most {} bytes",
                crate::routes::MAX_OUTPUT_CHUNK_BYTES
            ),
        ));
    }
    let cap = state.limiters.limits().output_cap_bytes;
    let mut tx = berth_db::begin(&state.pool).await?;
    match step::step_output_append_in_tx(
        &mut tx,
        id,
        run,
        step_number(step_id)?,
        task,
        chunk.stream.as_str(),
        offset,
        chunk.data.as_bytes(),
        cap,
    )
    .await
    {
        Ok(_) => {
            tx.commit().await.map_err(DbError::from)?;
            Ok(StatusCode::NO_CONTENT)
        }
        Err(DbError::ForeignKey { .. }) => Err(ApiError::NotFound(format!(
            "no task {} of step {id}.{step_id} in run {run}",
            chunk.task_id
        ))),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::step_cpus_exceed;

    #[test]
    fn a_step_stays_within_the_jobs_cpus_on_a_node() {
        assert_eq!(step_cpus_exceed(&[0, 1], 2, 1), None);
        assert_eq!(step_cpus_exceed(&[0, 1], 1, 2), None);
        assert_eq!(step_cpus_exceed(&[0, 1], 3, 1), Some(2));
        assert_eq!(step_cpus_exceed(&[0, 1], 1, 4), Some(2));
        // Not placed by CPU: nothing to check against.
        assert_eq!(step_cpus_exceed(&[], 64, 8), None);
    }
}
