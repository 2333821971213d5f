//! The `job_steps`, `step_tasks` and `step_output` tables: job steps (`srun` inside an
//! allocation), their tasks node by node, and the tasks' output in arrival order.

use crate::DbError;
use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgExecutor};
use tracing::instrument;

/// A step as stored.
#[derive(Debug, Clone)]
pub struct StepRow {
    /// The job.
    pub job_id: i64,
    /// The job's run.
    pub run: i32,
    /// The step id.
    pub step_id: i32,
    /// `RUNNING`, `COMPLETED`, `FAILED` or `CANCELLED`.
    pub state: String,
    /// The argv.
    pub command: Vec<String>,
    /// The tasks' environment (JSON object of strings).
    pub environment: serde_json::Value,
    /// The tasks' working directory.
    pub work_dir: Option<String>,
    /// `--cpus-per-task`.
    pub cpus_per_task: Option<i32>,
    /// `--gpus-per-task`.
    pub gpus_per_task: Option<i32>,
    /// `--kill-on-bad-exit`.
    pub kill_on_bad_exit: bool,
    /// `--overlap`.
    pub overlap: bool,
    /// `--pty`: task 0 runs in a pseudo-terminal.
    pub pty: bool,
    /// Why the remaining tasks are being stopped.
    pub kill_reason: Option<String>,
    /// The highest task exit code, once ended.
    pub exit_code: Option<i32>,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Ended.
    pub end_time: Option<DateTime<Utc>>,
}

/// A step's task with its node's name.
#[derive(Debug, Clone)]
pub struct StepTaskRow {
    /// The step.
    pub step_id: i32,
    /// `SLURM_PROCID`.
    pub task_id: i32,
    /// The node's name.
    pub node_name: String,
    /// `SLURM_NODEID`.
    pub node_index: i32,
    /// `SLURM_LOCALID`.
    pub local_id: i32,
    /// GPUs the task sees.
    pub gpu_indices: Vec<i32>,
    /// Started.
    pub started_at: Option<DateTime<Utc>>,
    /// Ended.
    pub ended_at: Option<DateTime<Utc>>,
    /// Exit code.
    pub exit_code: Option<i32>,
    /// Signal.
    pub exit_signal: Option<i32>,
    /// Launch failure message.
    pub message: Option<String>,
}

/// A new step.
#[derive(Debug, Clone)]
pub struct StepInsert {
    /// The job.
    pub job_id: i64,
    /// The job's current run.
    pub run: i32,
    /// The argv.
    pub command: Vec<String>,
    /// The tasks' environment.
    pub environment: serde_json::Value,
    /// Working directory.
    pub work_dir: Option<String>,
    /// `--cpus-per-task`.
    pub cpus_per_task: Option<i32>,
    /// `--gpus-per-task`.
    pub gpus_per_task: Option<i32>,
    /// `--kill-on-bad-exit`.
    pub kill_on_bad_exit: bool,
    /// `--overlap`.
    pub overlap: bool,
    /// `--pty`.
    pub pty: bool,
}

/// A new task, by its node's name.
#[derive(Debug, Clone)]
pub struct StepTaskInsert {
    /// `SLURM_PROCID`.
    pub task_id: i32,
    /// The node's name (must be registered).
    pub node_name: String,
    /// `SLURM_NODEID`.
    pub node_index: i32,
    /// `SLURM_LOCALID`.
    pub local_id: i32,
    /// GPUs.
    pub gpu_indices: Vec<i32>,
}

/// Stores a step with the next step id of the job run and its tasks; returns the id.
/// Lock the job row first (two steps created at once must not get the same id).
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip_all, err, fields(job.id = step.job_id))]
pub async fn step_insert_in_tx(
    conn: &mut PgConnection,
    step: &StepInsert,
    tasks: &[StepTaskInsert],
) -> Result<i32, DbError> {
    let step_id = sqlx::query_scalar!(
        r#"INSERT INTO job_steps (job_id, run, step_id, command, environment, work_dir,
                                 cpus_per_task, gpus_per_task, kill_on_bad_exit, overlap, pty)
           VALUES ($1, $2, (SELECT COALESCE(MAX(step_id) + 1, 0) FROM job_steps
                            WHERE job_id = $1 AND run = $2),
                   $3, $4, $5, $6, $7, $8, $9, $10)
           RETURNING step_id"#,
        step.job_id,
        step.run,
        &step.command,
        step.environment,
        step.work_dir,
        step.cpus_per_task,
        step.gpus_per_task,
        step.kill_on_bad_exit,
        step.overlap,
        step.pty,
    )
    .fetch_one(&mut *conn)
    .await?;
    let task_ids: Vec<i32> = tasks.iter().map(|t| t.task_id).collect();
    let nodes: Vec<String> = tasks.iter().map(|t| t.node_name.clone()).collect();
    let node_indices: Vec<i32> = tasks.iter().map(|t| t.node_index).collect();
    let local_ids: Vec<i32> = tasks.iter().map(|t| t.local_id).collect();
    // Postgres arrays cannot be ragged: GPUs travel as comma-separated text.
    let gpus: Vec<String> = tasks
        .iter()
        .map(|t| {
            t.gpu_indices
                .iter()
                .map(i32::to_string)
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect();
    sqlx::query!(
        r#"INSERT INTO step_tasks (job_id, run, step_id, task_id, node_id, node_index, local_id,
                                  gpu_indices)
           SELECT $1, $2, $3, t.task_id, n.id, t.node_index, t.local_id,
                  COALESCE(string_to_array(NULLIF(t.gpus, ''), ',')::int[], '{}')
           FROM UNNEST($4::int[], $5::text[], $6::int[], $7::int[], $8::text[])
                AS t(task_id, node, node_index, local_id, gpus)
           JOIN nodes n ON n.name = t.node"#,
        step.job_id,
        step.run,
        step_id,
        &task_ids,
        &nodes,
        &node_indices,
        &local_ids,
        &gpus,
    )
    .execute(&mut *conn)
    .await?;
    Ok(step_id)
}

/// One step.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn step_get(
    ex: impl PgExecutor<'_>,
    job_id: i64,
    run: i32,
    step_id: i32,
) -> Result<Option<StepRow>, DbError> {
    Ok(sqlx::query_as!(
        StepRow,
        r#"SELECT job_id, run, step_id, state, command, environment, work_dir, cpus_per_task,
                  gpus_per_task, kill_on_bad_exit, overlap, pty, kill_reason, exit_code,
                  created_at, end_time
           FROM job_steps WHERE job_id = $1 AND run = $2 AND step_id = $3"#,
        job_id,
        run,
        step_id
    )
    .fetch_optional(ex)
    .await?)
}

/// The steps of a job run, by id.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn step_list(
    ex: impl PgExecutor<'_>,
    job_id: i64,
    run: i32,
) -> Result<Vec<StepRow>, DbError> {
    Ok(sqlx::query_as!(
        StepRow,
        r#"SELECT job_id, run, step_id, state, command, environment, work_dir, cpus_per_task,
                  gpus_per_task, kill_on_bad_exit, overlap, pty, kill_reason, exit_code,
                  created_at, end_time
           FROM job_steps WHERE job_id = $1 AND run = $2 ORDER BY step_id"#,
        job_id,
        run
    )
    .fetch_all(ex)
    .await?)
}

/// The tasks of a job run's steps, by step then task id.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn step_task_list(
    ex: impl PgExecutor<'_>,
    job_id: i64,
    run: i32,
) -> Result<Vec<StepTaskRow>, DbError> {
    Ok(sqlx::query_as!(
        StepTaskRow,
        r#"SELECT t.step_id, t.task_id, n.name AS node_name, t.node_index, t.local_id,
                  t.gpu_indices, t.started_at, t.ended_at, t.exit_code, t.exit_signal, t.message
           FROM step_tasks t JOIN nodes n ON n.id = t.node_id
           WHERE t.job_id = $1 AND t.run = $2
           ORDER BY t.step_id, t.task_id"#,
        job_id,
        run
    )
    .fetch_all(ex)
    .await?)
}

/// A step task a node must run, with what its launch needs.
#[derive(Debug, Clone)]
pub struct StepTaskLaunchRow {
    /// The job.
    pub job_id: i64,
    /// The run.
    pub run: i32,
    /// The step.
    pub step_id: i32,
    /// The task.
    pub task_id: i32,
    /// `SLURM_LOCALID`.
    pub local_id: i32,
    /// `SLURM_NODEID`.
    pub node_index: i32,
    /// The task's GPUs.
    pub gpu_indices: Vec<i32>,
    /// The step's argv.
    pub command: Vec<String>,
    /// The step's environment.
    pub environment: serde_json::Value,
    /// The step's working directory.
    pub work_dir: Option<String>,
    /// The job's working directory.
    pub job_work_dir: Option<String>,
    /// `--cpus-per-task`.
    pub cpus_per_task: Option<i32>,
    /// The job's GPUs on this node.
    pub job_gpus: Vec<i32>,
    /// The job's logical CPU ids on this node (empty: not placed by CPU).
    pub job_cpu_ids: Vec<i32>,
    /// The job's memory on this node, MiB (0: not placed by memory).
    pub job_mem_mib: i64,
    /// The step's GPUs on this node (every task's here).
    pub step_gpus: Vec<i32>,
    /// Tasks in the step.
    pub ntasks: i64,
    /// Tasks of the step on this node.
    pub tasks_on_node: i64,
    /// The step's nodes by node index.
    pub step_nodes: Vec<String>,
    /// The job's nodes in this run, by node index (`SLURM_JOB_NODELIST`).
    pub job_nodes: Vec<String>,
    /// The job's current start.
    pub job_start_time: Option<DateTime<Utc>>,
    /// The job's time limit, seconds.
    pub job_time_limit: Option<i64>,
    /// The job's spec (for `--signal`).
    pub job_spec: serde_json::Value,
    /// The job's user.
    pub job_user: String,
    /// The step's `--pty`.
    pub pty: bool,
    /// The job's incarnation.
    pub job_incarnation: uuid::Uuid,
}

/// The step tasks node `node_id` must be running: not ended, in a RUNNING step that is not
/// being stopped, of a RUNNING job in that run.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn step_task_launch_list_for_node(
    ex: impl PgExecutor<'_>,
    node_id: i64,
) -> Result<Vec<StepTaskLaunchRow>, DbError> {
    Ok(sqlx::query_as!(
        StepTaskLaunchRow,
        r#"SELECT t.job_id, t.run, t.step_id, t.task_id, t.local_id, t.node_index,
                  t.gpu_indices, s.command, s.environment, s.work_dir,
                  j.work_dir AS job_work_dir, s.cpus_per_task,
                  COALESCE((SELECT a.gpu_indices FROM allocations a
                            WHERE a.job_id = t.job_id AND a.run = t.run AND a.node_id = t.node_id),
                           '{}') AS "job_gpus!",
                  COALESCE((SELECT a.cpu_ids FROM allocations a
                            WHERE a.job_id = t.job_id AND a.run = t.run AND a.node_id = t.node_id),
                           '{}') AS "job_cpu_ids!",
                  COALESCE((SELECT a.mem_mib FROM allocations a
                            WHERE a.job_id = t.job_id AND a.run = t.run AND a.node_id = t.node_id),
                           0) AS "job_mem_mib!",
                  ARRAY(SELECT DISTINCT g FROM step_tasks o, UNNEST(o.gpu_indices) AS g
                        WHERE o.job_id = t.job_id AND o.run = t.run AND o.step_id = t.step_id
                          AND o.node_id = t.node_id ORDER BY g) AS "step_gpus!",
                  (SELECT count(*) FROM step_tasks o
                   WHERE o.job_id = t.job_id AND o.run = t.run AND o.step_id = t.step_id)
                      AS "ntasks!",
                  (SELECT count(*) FROM step_tasks o
                   WHERE o.job_id = t.job_id AND o.run = t.run AND o.step_id = t.step_id
                     AND o.node_id = t.node_id) AS "tasks_on_node!",
                  ARRAY(SELECT n.name FROM nodes n JOIN step_tasks o ON o.node_id = n.id
                        WHERE o.job_id = t.job_id AND o.run = t.run AND o.step_id = t.step_id
                        GROUP BY n.name, o.node_index ORDER BY o.node_index) AS "step_nodes!",
                  ARRAY(SELECT n.name FROM allocations a JOIN nodes n ON n.id = a.node_id
                        WHERE a.job_id = t.job_id AND a.run = t.run
                        ORDER BY a.node_index) AS "job_nodes!",
                  j.start_time AS job_start_time, j.time_limit AS job_time_limit,
                  j.spec AS job_spec, j.user_name AS job_user, s.pty,
                  j.incarnation AS job_incarnation
           FROM step_tasks t
           JOIN job_steps s ON s.job_id = t.job_id AND s.run = t.run AND s.step_id = t.step_id
           JOIN jobs j ON j.id = t.job_id
           WHERE t.node_id = $1 AND t.ended_at IS NULL
             AND s.state = 'RUNNING' AND s.kill_reason IS NULL
             AND j.state = 'RUNNING' AND j.restart_count = t.run
           ORDER BY t.job_id, t.step_id, t.task_id"#,
        node_id
    )
    .fetch_all(ex)
    .await?)
}

/// Of the step tasks a node says it runs (parallel slices; `incarnations[i]` the nil
/// UUID where unknown), those it must stop: the task is unknown or already recorded as
/// ended, its step is ended or being stopped, its job is no longer RUNNING in that run,
/// or the job with that id is of another incarnation.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn step_task_stale_for_node(
    ex: impl PgExecutor<'_>,
    node_id: i64,
    job_ids: &[i64],
    runs: &[i32],
    step_ids: &[i32],
    task_ids: &[i32],
    incarnations: &[uuid::Uuid],
) -> Result<Vec<(i64, i32, i32, i32)>, DbError> {
    let rows = sqlx::query!(
        r#"SELECT r.job_id AS "job_id!", r.run AS "run!", r.step_id AS "step_id!",
                  r.task_id AS "task_id!"
           FROM UNNEST($2::bigint[], $3::int[], $4::int[], $5::int[], $6::uuid[])
                AS r(job_id, run, step_id, task_id, incarnation)
           WHERE NOT EXISTS (
               SELECT 1 FROM step_tasks t
               JOIN job_steps s ON s.job_id = t.job_id AND s.run = t.run AND s.step_id = t.step_id
               JOIN jobs j ON j.id = t.job_id
               WHERE t.job_id = r.job_id AND t.run = r.run AND t.step_id = r.step_id
                 AND t.task_id = r.task_id AND t.node_id = $1 AND t.ended_at IS NULL
                 AND s.state = 'RUNNING' AND s.kill_reason IS NULL
                 AND j.state = 'RUNNING' AND j.restart_count = r.run
                 AND (r.incarnation = '00000000-0000-0000-0000-000000000000'
                      OR j.incarnation = r.incarnation))"#,
        node_id,
        job_ids,
        runs,
        step_ids,
        task_ids,
        incarnations
    )
    .fetch_all(ex)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.job_id, r.run, r.step_id, r.task_id))
        .collect())
}

/// What applying a task report changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StepTaskOutcome {
    /// The report was new (not applied before).
    pub applied: bool,
    /// The step's other tasks must now be stopped (`--kill-on-bad-exit`): the names of the
    /// nodes to wake.
    pub kill_nodes: Vec<String>,
    /// The step ended with this report.
    pub step_ended: bool,
}

/// The node step task `key` (job, run, step, task) was placed on, by id; `None` for a
/// task that does not exist.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn step_task_node(
    ex: impl PgExecutor<'_>,
    key: (i64, i32, i32, i32),
) -> Result<Option<i64>, DbError> {
    Ok(step_task_placement(ex, key).await?.map(|(node, _)| node))
}

/// The node step task `key` (job, run, step, task) was placed on, by id, with its job's
/// incarnation; `None` for a task that does not exist.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn step_task_placement(
    ex: impl PgExecutor<'_>,
    key: (i64, i32, i32, i32),
) -> Result<Option<(i64, uuid::Uuid)>, DbError> {
    Ok(sqlx::query!(
        r#"SELECT t.node_id, j.incarnation FROM step_tasks t JOIN jobs j ON j.id = t.job_id
           WHERE t.job_id = $1 AND t.run = $2 AND t.step_id = $3 AND t.task_id = $4"#,
        key.0,
        key.1,
        key.2,
        key.3
    )
    .fetch_optional(ex)
    .await?
    .map(|r| (r.node_id, r.incarnation)))
}

/// Records that a task started.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn step_task_started(
    ex: impl PgExecutor<'_>,
    key: (i64, i32, i32, i32),
    at: DateTime<Utc>,
) -> Result<(), DbError> {
    sqlx::query!(
        r#"UPDATE step_tasks SET started_at = $5
           WHERE job_id = $1 AND run = $2 AND step_id = $3 AND task_id = $4 AND started_at IS NULL"#,
        key.0,
        key.1,
        key.2,
        key.3,
        at
    )
    .execute(ex)
    .await?;
    Ok(())
}

/// Records that a task ended (exited, or could not start), once: under
/// `--kill-on-bad-exit` a non-zero end marks the step to be stopped; when it was the last
/// task, the step ends with the highest exit code (128 + signal for a signalled task),
/// or under `--kill-on-bad-exit` the code of the task that failed first; `CANCELLED` when
/// it was stopped by [`step_cancel_in_tx`], else `COMPLETED` when every task exited 0,
/// else `FAILED`.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn), err)]
pub async fn step_task_ended_in_tx(
    conn: &mut PgConnection,
    key: (i64, i32, i32, i32),
    at: DateTime<Utc>,
    exit_code: Option<i32>,
    exit_signal: Option<i32>,
    message: Option<&str>,
) -> Result<StepTaskOutcome, DbError> {
    let (job_id, run, step_id, task_id) = key;
    let mut outcome = StepTaskOutcome::default();
    // Lock the step first: concurrent reports of its tasks are applied one at a time.
    let step = sqlx::query!(
        r#"SELECT kill_on_bad_exit, kill_reason, state FROM job_steps
           WHERE job_id = $1 AND run = $2 AND step_id = $3 FOR UPDATE"#,
        job_id,
        run,
        step_id
    )
    .fetch_optional(&mut *conn)
    .await?;
    let Some(step) = step else {
        return Ok(outcome);
    };
    let updated = sqlx::query!(
        r#"UPDATE step_tasks SET ended_at = $5, exit_code = $6, exit_signal = $7, message = $8,
                  started_at = COALESCE(started_at, $5)
           WHERE job_id = $1 AND run = $2 AND step_id = $3 AND task_id = $4 AND ended_at IS NULL"#,
        job_id,
        run,
        step_id,
        task_id,
        at,
        exit_code,
        exit_signal,
        message
    )
    .execute(&mut *conn)
    .await?;
    if updated.rows_affected() == 0 {
        return Ok(outcome);
    }
    outcome.applied = true;
    if task_id == 0 {
        // A `--pty` step's terminal is gone with its task 0: what was typed for it and
        // not applied is nobody's any more.
        sqlx::query!(
            "DELETE FROM step_input WHERE job_id = $1 AND run = $2 AND step_id = $3",
            job_id,
            run,
            step_id
        )
        .execute(&mut *conn)
        .await?;
    }
    let bad = exit_signal.is_some() || exit_code != Some(0);
    if bad && step.kill_on_bad_exit && step.kill_reason.is_none() && step.state == "RUNNING" {
        let reason = match (exit_code, exit_signal) {
            (_, Some(signal)) => format!("task {task_id} was killed by signal {signal}"),
            (Some(code), None) => format!("task {task_id} exited with code {code}"),
            (None, None) => format!(
                "task {task_id} could not start: {}",
                message.unwrap_or("unknown error")
            ),
        };
        // The step's exit code is the failing task's, not that of the tasks killed
        // because of it.
        let code = match (exit_code, exit_signal) {
            (_, Some(signal)) => 128 + signal,
            (Some(code), None) => code,
            (None, None) => 1,
        };
        sqlx::query!(
            r#"UPDATE job_steps SET kill_reason = $4, exit_code = $5
               WHERE job_id = $1 AND run = $2 AND step_id = $3"#,
            job_id,
            run,
            step_id,
            reason,
            code
        )
        .execute(&mut *conn)
        .await?;
        outcome.kill_nodes = step_stop_tasks_in_tx(conn, job_id, run, step_id).await?;
    }
    let ended = sqlx::query_scalar!(
        r#"UPDATE job_steps s SET
              state = CASE WHEN s.state <> 'RUNNING' THEN s.state
                           WHEN s.cancelled THEN 'CANCELLED'
                           WHEN agg.worst = 0 THEN 'COMPLETED' ELSE 'FAILED' END,
              exit_code = COALESCE(s.exit_code, agg.worst),
              end_time = COALESCE(s.end_time, now())
           FROM (SELECT MAX(CASE WHEN exit_signal IS NOT NULL THEN 128 + exit_signal
                                 ELSE COALESCE(exit_code, 1) END) AS worst
                 FROM step_tasks WHERE job_id = $1 AND run = $2 AND step_id = $3) agg
           WHERE s.job_id = $1 AND s.run = $2 AND s.step_id = $3
             AND NOT EXISTS (SELECT 1 FROM step_tasks
                             WHERE job_id = $1 AND run = $2 AND step_id = $3 AND ended_at IS NULL)
           RETURNING s.step_id"#,
        job_id,
        run,
        step_id
    )
    .fetch_optional(&mut *conn)
    .await?;
    outcome.step_ended = ended.is_some();
    Ok(outcome)
}

/// For a step whose kill reason was just set: its tasks not started yet never will be (a
/// worker that is starting one now is told to stop it: it is no longer listed as live);
/// returns the names of the nodes whose tasks still run (to wake).
async fn step_stop_tasks_in_tx(
    conn: &mut PgConnection,
    job_id: i64,
    run: i32,
    step_id: i32,
) -> Result<Vec<String>, DbError> {
    sqlx::query!(
        r#"UPDATE step_tasks SET ended_at = now(),
                  message = 'not started: the step was stopped'
           WHERE job_id = $1 AND run = $2 AND step_id = $3
             AND started_at IS NULL AND ended_at IS NULL"#,
        job_id,
        run,
        step_id
    )
    .execute(&mut *conn)
    .await?;
    Ok(sqlx::query_scalar!(
        r#"SELECT DISTINCT n.name FROM step_tasks t JOIN nodes n ON n.id = t.node_id
           WHERE t.job_id = $1 AND t.run = $2 AND t.step_id = $3 AND t.ended_at IS NULL"#,
        job_id,
        run,
        step_id
    )
    .fetch_all(&mut *conn)
    .await?)
}

/// Stops a RUNNING step of a job run (`scancel JOB.STEP`, `srun --wait`): records `reason`
/// as its kill reason once (the workers stop its live tasks: they are no longer listed as
/// live), ends its tasks that never started, and returns the names of the nodes whose
/// tasks still run (to wake). A step already ended or already being stopped is left as it
/// is (`None`); `Some(vec![])` when no task runs any more.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn), err)]
pub async fn step_cancel_in_tx(
    conn: &mut PgConnection,
    job_id: i64,
    run: i32,
    step_id: i32,
    reason: &str,
) -> Result<Option<Vec<String>>, DbError> {
    let stopped = sqlx::query_scalar!(
        r#"UPDATE job_steps SET kill_reason = $4, cancelled = true
           WHERE job_id = $1 AND run = $2 AND step_id = $3
             AND state = 'RUNNING' AND kill_reason IS NULL
           RETURNING step_id"#,
        job_id,
        run,
        step_id,
        reason
    )
    .fetch_optional(&mut *conn)
    .await?;
    if stopped.is_none() {
        return Ok(None);
    }
    let nodes = step_stop_tasks_in_tx(conn, job_id, run, step_id).await?;
    if nodes.is_empty() {
        // Every task had ended or never started: the step ends now, cancelled.
        sqlx::query!(
            r#"UPDATE job_steps SET state = 'CANCELLED', end_time = COALESCE(end_time, now()),
                      exit_code = COALESCE(exit_code, 1)
               WHERE job_id = $1 AND run = $2 AND step_id = $3 AND state = 'RUNNING'"#,
            job_id,
            run,
            step_id
        )
        .execute(&mut *conn)
        .await?;
    }
    Ok(Some(nodes))
}

/// Ends the RUNNING steps of a job run whose job ended: they become CANCELLED (their
/// tasks, if any still run, are stopped by their workers).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn step_end_all_for_job_in_tx(
    conn: &mut PgConnection,
    job_id: i64,
    run: i32,
) -> Result<(), DbError> {
    sqlx::query!(
        r#"UPDATE job_steps SET state = 'CANCELLED', end_time = now(),
                  kill_reason = COALESCE(kill_reason, 'the job ended')
           WHERE job_id = $1 AND run = $2 AND state = 'RUNNING'"#,
        job_id,
        run
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// A stored chunk of task output.
#[derive(Debug, Clone)]
pub struct StepOutputRow {
    /// Arrival order.
    pub seq: i64,
    /// The task.
    pub task_id: i32,
    /// `stdout` or `stderr`.
    pub stream: String,
    /// The bytes.
    pub data: Vec<u8>,
}

/// Stores a chunk of a step task's output (`data` at byte `offset` of its stream); a
/// chunk seen before is ignored. The database keeps at most `cap_bytes` of each task's
/// stream (`None`: no cap): the part of a chunk past it is dropped, and the stream then
/// ends with a line saying so (`[berth: output truncated after N bytes; the node's
/// file has it whole]`), which `srun` prints as the task's. Returns how many bytes of
/// `data` were kept.
///
/// # Errors
/// [`DbError::ForeignKey`] when the task does not exist; [`DbError`] from the driver.
#[allow(clippy::too_many_arguments)]
pub async fn step_output_append_in_tx(
    conn: &mut PgConnection,
    job_id: i64,
    run: i32,
    step_id: i32,
    task_id: i32,
    stream: &str,
    offset: i64,
    data: &[u8],
    cap_bytes: Option<u64>,
) -> Result<usize, DbError> {
    let total = sqlx::query!(
        r#"INSERT INTO step_output_totals (job_id, run, step_id, task_id, stream)
           VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT (job_id, run, step_id, task_id, stream)
               DO UPDATE SET bytes = step_output_totals.bytes
           RETURNING bytes, truncated"#,
        job_id,
        run,
        step_id,
        task_id,
        stream
    )
    .fetch_one(&mut *conn)
    .await?;
    if total.truncated {
        return Ok(0);
    }
    let room = cap_bytes.map_or(usize::MAX, |cap| {
        usize::try_from(cap.saturating_sub(total.bytes.max(0) as u64)).unwrap_or(usize::MAX)
    });
    let kept = &data[..data.len().min(room)];
    let inserted = sqlx::query!(
        r#"INSERT INTO step_output (job_id, run, step_id, task_id, stream, "offset", data)
           VALUES ($1, $2, $3, $4, $5, $6, $7)
           ON CONFLICT DO NOTHING"#,
        job_id,
        run,
        step_id,
        task_id,
        stream,
        offset,
        kept
    )
    .execute(&mut *conn)
    .await?
    .rows_affected();
    if inserted == 0 {
        // Seen before (a worker sending a chunk again).
        return Ok(0);
    }
    let truncated = kept.len() < data.len();
    if truncated {
        let end = offset.saturating_add(kept.len() as i64);
        let marker = format!(
            "\n[berth: output truncated after {} bytes; the node's file has it whole]\n",
            total.bytes.max(0) as u64 + kept.len() as u64
        );
        sqlx::query!(
            r#"INSERT INTO step_output (job_id, run, step_id, task_id, stream, "offset", data)
               VALUES ($1, $2, $3, $4, $5, $6, $7)
               ON CONFLICT DO NOTHING"#,
            job_id,
            run,
            step_id,
            task_id,
            stream,
            end,
            marker.as_bytes()
        )
        .execute(&mut *conn)
        .await?;
    }
    sqlx::query!(
        r#"UPDATE step_output_totals SET bytes = bytes + $6, truncated = truncated OR $7
           WHERE job_id = $1 AND run = $2 AND step_id = $3 AND task_id = $4 AND stream = $5"#,
        job_id,
        run,
        step_id,
        task_id,
        stream,
        kept.len() as i64,
        truncated
    )
    .execute(&mut *conn)
    .await?;
    Ok(kept.len())
}

/// Up to `limit` chunks of a step's output after sequence number `after`, in order.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn step_output_read(
    ex: impl PgExecutor<'_>,
    job_id: i64,
    run: i32,
    step_id: i32,
    after: i64,
    limit: i64,
) -> Result<Vec<StepOutputRow>, DbError> {
    Ok(sqlx::query_as!(
        StepOutputRow,
        r#"SELECT seq, task_id, stream, data FROM step_output
           WHERE job_id = $1 AND run = $2 AND step_id = $3 AND seq > $4
           ORDER BY seq LIMIT $5"#,
        job_id,
        run,
        step_id,
        after,
        limit
    )
    .fetch_all(ex)
    .await?)
}

/// GPUs held by the live tasks of run `run` of job `job_id` whose steps claim their GPUs
/// exclusively (running steps with `--gpus-per-task` and without `--overlap`): (node name,
/// physical GPU indices), one row per task.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn step_gpus_in_use_in_tx(
    conn: &mut PgConnection,
    job_id: i64,
    run: i32,
) -> Result<Vec<(String, Vec<i32>)>, DbError> {
    let rows = sqlx::query!(
        r#"SELECT n.name AS node_name, t.gpu_indices
           FROM step_tasks t
           JOIN job_steps s ON s.job_id = t.job_id AND s.run = t.run AND s.step_id = t.step_id
           JOIN nodes n ON n.id = t.node_id
           WHERE t.job_id = $1 AND t.run = $2 AND t.ended_at IS NULL
             AND s.state = 'RUNNING' AND NOT s.overlap AND s.gpus_per_task IS NOT NULL"#,
        job_id,
        run
    )
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.node_name, r.gpu_indices))
        .collect())
}

/// Terminal input of a `--pty` step waiting for its node.
#[derive(Debug, Clone)]
pub struct StepInputRow {
    /// The job.
    pub job_id: i64,
    /// The run.
    pub run: i32,
    /// The step.
    pub step_id: i32,
    /// Arrival order.
    pub seq: i64,
    /// The bytes typed (empty when only the size changed).
    pub data: Vec<u8>,
    /// The terminal's new rows, when it was resized.
    pub rows: Option<i32>,
    /// The terminal's new columns, when it was resized.
    pub cols: Option<i32>,
}

/// Stores input for the pseudo-terminal of step `step_id` of run `run` of job `job_id`
/// (bytes typed, and the terminal's new size as (rows, columns) when it changed). Returns
/// its sequence number and the name of the node that runs the step's task 0, or `None`
/// when the step is not a running `--pty` step whose task 0 is still running.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn step_input_append(
    ex: impl PgExecutor<'_>,
    (job_id, run, step_id): (i64, i32, i32),
    data: &[u8],
    size: Option<(i32, i32)>,
) -> Result<Option<(i64, String)>, DbError> {
    let row = sqlx::query!(
        r#"WITH step AS (
               SELECT s.job_id, s.run, s.step_id, n.name AS node_name
               FROM job_steps s
               JOIN step_tasks t ON t.job_id = s.job_id AND t.run = s.run
                                AND t.step_id = s.step_id AND t.task_id = 0
               JOIN nodes n ON n.id = t.node_id
               WHERE s.job_id = $1 AND s.run = $2 AND s.step_id = $3 AND s.pty
                 AND s.state = 'RUNNING' AND t.ended_at IS NULL),
           added AS (
               INSERT INTO step_input (job_id, run, step_id, data, rows, cols)
               SELECT job_id, run, step_id, $4, $5, $6 FROM step
               RETURNING seq)
           SELECT added.seq AS "seq!", step.node_name AS "node_name!" FROM added, step"#,
        job_id,
        run,
        step_id,
        data,
        size.map(|s| s.0),
        size.map(|s| s.1),
    )
    .fetch_optional(ex)
    .await?;
    Ok(row.map(|r| (r.seq, r.node_name)))
}

/// The pending terminal input of the `--pty` tasks node `node_id` runs: `applied` holds,
/// for each such task's step as (job, run, step), the highest sequence number the node
/// has applied (0: none). Rows up to those numbers are deleted (the node has them); the
/// rows after them are returned in order (at most 1,000).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn step_input_for_node(
    conn: &mut PgConnection,
    node_id: i64,
    applied: &[((i64, i32, i32), i64)],
) -> Result<Vec<StepInputRow>, DbError> {
    if applied.is_empty() {
        return Ok(Vec::new());
    }
    let jobs: Vec<i64> = applied.iter().map(|a| a.0 .0).collect();
    let runs: Vec<i32> = applied.iter().map(|a| a.0 .1).collect();
    let steps: Vec<i32> = applied.iter().map(|a| a.0 .2).collect();
    let seqs: Vec<i64> = applied.iter().map(|a| a.1).collect();
    // Only steps whose task 0 this node runs: another node's report names nothing here.
    sqlx::query!(
        r#"DELETE FROM step_input i
           USING UNNEST($2::bigint[], $3::int[], $4::int[], $5::bigint[])
                 AS a(job_id, run, step_id, seq),
                 step_tasks t
           WHERE t.job_id = a.job_id AND t.run = a.run AND t.step_id = a.step_id
             AND t.task_id = 0 AND t.node_id = $1
             AND i.job_id = a.job_id AND i.run = a.run AND i.step_id = a.step_id
             AND i.seq <= a.seq"#,
        node_id,
        &jobs,
        &runs,
        &steps,
        &seqs,
    )
    .execute(&mut *conn)
    .await?;
    Ok(sqlx::query_as!(
        StepInputRow,
        r#"SELECT i.job_id, i.run, i.step_id, i.seq, i.data, i.rows, i.cols
           FROM UNNEST($2::bigint[], $3::int[], $4::int[], $5::bigint[])
                AS a(job_id, run, step_id, seq)
           JOIN step_tasks t ON t.job_id = a.job_id AND t.run = a.run
                            AND t.step_id = a.step_id AND t.task_id = 0 AND t.node_id = $1
           JOIN step_input i ON i.job_id = a.job_id AND i.run = a.run
                            AND i.step_id = a.step_id AND i.seq > a.seq
           ORDER BY i.seq LIMIT 1000"#,
        node_id,
        &jobs,
        &runs,
        &steps,
        &seqs,
    )
    .fetch_all(&mut *conn)
    .await?)
}
