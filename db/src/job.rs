//! The `jobs` table and its `job_events`.

use crate::DbError;
use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgExecutor};
use tracing::instrument;

/// A job as stored.
#[derive(Debug, Clone)]
pub struct JobRow {
    /// Id.
    pub id: i64,
    /// Name.
    pub name: String,
    /// Submitting user.
    pub user_name: String,
    /// Account.
    pub account: Option<String>,
    /// Partition.
    pub partition: String,
    /// QOS.
    pub qos: Option<String>,
    /// State (Slurm's long name).
    pub state: String,
    /// Pending or end reason.
    pub reason: Option<String>,
    /// Nodes asked for.
    pub num_nodes: i32,
    /// Tasks asked for.
    pub num_tasks: i32,
    /// CPUs per task.
    pub cpus_per_task: i32,
    /// GPUs per node asked for.
    pub gpus_per_node: i32,
    /// GPU model wanted.
    pub gpu_type: Option<String>,
    /// `--exclusive`.
    pub exclusive: bool,
    /// `--exclusive` with no GPU option: every GPU of the node.
    pub whole_node: bool,
    /// Memory per node, MiB.
    pub mem_mib: Option<i64>,
    /// Time limit, seconds; `None` unlimited.
    pub time_limit: Option<i64>,
    /// Held.
    pub hold: bool,
    /// The batch script.
    pub script: String,
    /// Submit directory.
    pub submit_dir: Option<String>,
    /// Working directory.
    pub work_dir: Option<String>,
    /// stdout pattern.
    pub stdout_pattern: String,
    /// stderr pattern.
    pub stderr_pattern: Option<String>,
    /// Submission environment (JSON object of strings).
    pub environment: serde_json::Value,
    /// The whole spec as submitted (JSON of `berth_core::spec::JobSpec`).
    pub spec: serde_json::Value,
    /// Array master id.
    pub array_job_id: Option<i64>,
    /// Array task index.
    pub array_task_id: Option<i32>,
    /// Requeue count (the current run).
    pub restart_count: i32,
    /// Submitted.
    pub submit_time: DateTime<Utc>,
    /// Started (current run).
    pub start_time: Option<DateTime<Utc>>,
    /// Ended.
    pub end_time: Option<DateTime<Utc>>,
    /// Exit code of the batch script.
    pub exit_code: Option<i32>,
    /// Signal that ended the batch script.
    pub exit_signal: Option<i32>,
}

/// A new job, ready to store.
#[derive(Debug, Clone)]
pub struct JobInsert {
    /// Name.
    pub name: String,
    /// Submitting user.
    pub user_name: String,
    /// Account.
    pub account: Option<String>,
    /// Partition (must exist).
    pub partition: String,
    /// QOS.
    pub qos: Option<String>,
    /// Nodes.
    pub num_nodes: i32,
    /// Tasks.
    pub num_tasks: i32,
    /// CPUs per task.
    pub cpus_per_task: i32,
    /// GPUs per node.
    pub gpus_per_node: i32,
    /// GPU model wanted.
    pub gpu_type: Option<String>,
    /// `--exclusive`.
    pub exclusive: bool,
    /// Whole node.
    pub whole_node: bool,
    /// Memory per node, MiB.
    pub mem_mib: Option<i64>,
    /// Time limit, seconds.
    pub time_limit: Option<i64>,
    /// Held at submission.
    pub hold: bool,
    /// Script.
    pub script: String,
    /// Submit dir.
    pub submit_dir: Option<String>,
    /// Work dir.
    pub work_dir: Option<String>,
    /// stdout pattern.
    pub stdout_pattern: String,
    /// stderr pattern.
    pub stderr_pattern: Option<String>,
    /// Environment.
    pub environment: serde_json::Value,
    /// The whole spec.
    pub spec: serde_json::Value,
    /// Pending reason at submission.
    pub reason: Option<String>,
}

/// Stores a new PENDING job and its `submitted` event; returns its id.
///
/// # Errors
/// [`DbError::ForeignKey`] when the partition does not exist; others from the driver.
#[instrument(skip_all, err)]
pub async fn job_insert_in_tx(conn: &mut PgConnection, job: &JobInsert) -> Result<i64, DbError> {
    let id = sqlx::query_scalar!(
        r#"INSERT INTO jobs (name, user_name, account, partition, qos, num_nodes, num_tasks,
              cpus_per_task, gpus_per_node, gpu_type, exclusive, whole_node, mem_mib, time_limit,
              hold, script, submit_dir, work_dir, stdout_pattern, stderr_pattern, environment,
              spec, reason)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
                   $18, $19, $20, $21, $22, $23)
           RETURNING id"#,
        job.name,
        job.user_name,
        job.account,
        job.partition,
        job.qos,
        job.num_nodes,
        job.num_tasks,
        job.cpus_per_task,
        job.gpus_per_node,
        job.gpu_type,
        job.exclusive,
        job.whole_node,
        job.mem_mib,
        job.time_limit,
        job.hold,
        job.script,
        job.submit_dir,
        job.work_dir,
        job.stdout_pattern,
        job.stderr_pattern,
        job.environment,
        job.spec,
        job.reason,
    )
    .fetch_one(&mut *conn)
    .await?;
    job_event_insert(&mut *conn, id, "submitted", 0, None, serde_json::json!({})).await?;
    Ok(id)
}

/// Records an event in a job's history. Returns false when the event was already
/// recorded (worker reports are unique per job, run, kind and node).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn job_event_insert(
    ex: impl PgExecutor<'_>,
    job_id: i64,
    kind: &str,
    run: i32,
    node: Option<&str>,
    detail: serde_json::Value,
) -> Result<bool, DbError> {
    let inserted = sqlx::query_scalar!(
        r#"INSERT INTO job_events (job_id, kind, run, node, detail) VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT DO NOTHING RETURNING id"#,
        job_id,
        kind,
        run,
        node,
        detail
    )
    .fetch_optional(ex)
    .await?;
    Ok(inserted.is_some())
}

/// One job by id.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn job_get(ex: impl PgExecutor<'_>, id: i64) -> Result<Option<JobRow>, DbError> {
    Ok(
        sqlx::query_as!(JobRow, r#"SELECT * FROM jobs WHERE id = $1"#, id)
            .fetch_optional(ex)
            .await?,
    )
}

/// Locks one job row for the rest of the transaction.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn job_lock_in_tx(conn: &mut PgConnection, id: i64) -> Result<Option<JobRow>, DbError> {
    Ok(
        sqlx::query_as!(JobRow, r#"SELECT * FROM jobs WHERE id = $1 FOR UPDATE"#, id)
            .fetch_optional(conn)
            .await?,
    )
}

/// Filters for [`job_list`]; `None` matches everything.
#[derive(Debug, Clone, Default)]
pub struct JobFilter {
    /// States (long names).
    pub states: Option<Vec<String>>,
    /// User.
    pub user_name: Option<String>,
    /// Partition.
    pub partition: Option<String>,
    /// Name.
    pub name: Option<String>,
    /// Only ids greater than this (the cursor).
    pub after_id: i64,
    /// Page size.
    pub limit: i64,
}

/// Jobs matching `filter`, by ascending id.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn job_list(ex: impl PgExecutor<'_>, filter: &JobFilter) -> Result<Vec<JobRow>, DbError> {
    Ok(sqlx::query_as!(
        JobRow,
        r#"SELECT * FROM jobs
           WHERE id > $1
             AND ($2::text[] IS NULL OR state = ANY($2))
             AND ($3::text IS NULL OR user_name = $3)
             AND ($4::text IS NULL OR partition = $4)
             AND ($5::text IS NULL OR name = $5)
           ORDER BY id
           LIMIT $6"#,
        filter.after_id,
        filter.states.as_deref(),
        filter.user_name,
        filter.partition,
        filter.name,
        filter.limit,
    )
    .fetch_all(ex)
    .await?)
}

/// Pending jobs that are not held, by ascending id (submit order).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn job_pending_list(ex: impl PgExecutor<'_>) -> Result<Vec<JobRow>, DbError> {
    Ok(sqlx::query_as!(
        JobRow,
        r#"SELECT * FROM jobs WHERE state = 'PENDING' AND NOT hold ORDER BY id"#
    )
    .fetch_all(ex)
    .await?)
}

/// Cancels a job that has not ended: a pending one ends at once; a running one is marked
/// CANCELLED and keeps its allocation until its node reports the processes gone. Returns
/// the row after the change, or `None` when the job had already ended (or does not exist).
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn), err)]
pub async fn job_cancel_in_tx(
    conn: &mut PgConnection,
    id: i64,
    by: &str,
) -> Result<Option<JobRow>, DbError> {
    let row = sqlx::query_as!(
        JobRow,
        r#"UPDATE jobs SET state = 'CANCELLED', end_time = now(), reason = NULL
           WHERE id = $1 AND state IN ('PENDING', 'RUNNING', 'SUSPENDED', 'COMPLETING')
           RETURNING *"#,
        id
    )
    .fetch_optional(&mut *conn)
    .await?;
    if let Some(job) = &row {
        job_event_insert(
            &mut *conn,
            id,
            "cancelled",
            job.restart_count,
            None,
            serde_json::json!({ "by": by }),
        )
        .await?;
    }
    Ok(row)
}

/// Marks a pending job RUNNING (the scheduler's start). Returns false when it was no
/// longer pending (cancelled meanwhile).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn job_start_in_tx(conn: &mut PgConnection, id: i64, term: i64) -> Result<bool, DbError> {
    let run = sqlx::query_scalar!(
        r#"UPDATE jobs SET state = 'RUNNING', start_time = now(), reason = NULL
           WHERE id = $1 AND state = 'PENDING' AND NOT hold RETURNING restart_count"#,
        id
    )
    .fetch_optional(&mut *conn)
    .await?;
    match run {
        Some(run) => {
            job_event_insert(
                &mut *conn,
                id,
                "allocated",
                run,
                None,
                serde_json::json!({ "term": term }),
            )
            .await?;
            Ok(true)
        }
        None => Ok(false),
    }
}

/// Sets the pending reason of pending jobs (one reason per id, in parallel slices).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn job_set_pending_reasons(
    ex: impl PgExecutor<'_>,
    ids: &[i64],
    reasons: &[String],
) -> Result<(), DbError> {
    sqlx::query!(
        r#"UPDATE jobs SET reason = r.reason
           FROM UNNEST($1::bigint[], $2::text[]) AS r(id, reason)
           WHERE jobs.id = r.id AND jobs.state = 'PENDING' AND jobs.reason IS DISTINCT FROM r.reason"#,
        ids,
        reasons
    )
    .execute(ex)
    .await?;
    Ok(())
}

/// Ends a job's current run: sets the end state, time and exit status, if the job is still
/// in `run` and has not ended (a job already CANCELLED keeps that state but gets the exit
/// status). Returns the row after the change.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn), err)]
pub async fn job_finish_in_tx(
    conn: &mut PgConnection,
    id: i64,
    run: i32,
    state: &str,
    reason: Option<&str>,
    exit_code: Option<i32>,
    exit_signal: Option<i32>,
) -> Result<Option<JobRow>, DbError> {
    Ok(sqlx::query_as!(
        JobRow,
        r#"UPDATE jobs SET
              state = CASE WHEN state IN ('RUNNING', 'SUSPENDED', 'COMPLETING') THEN $3 ELSE state END,
              reason = CASE WHEN state IN ('RUNNING', 'SUSPENDED', 'COMPLETING') THEN $4 ELSE reason END,
              end_time = COALESCE(end_time, now()),
              exit_code = $5,
              exit_signal = $6
           WHERE id = $1 AND restart_count = $2
           RETURNING *"#,
        id,
        run,
        state,
        reason,
        exit_code,
        exit_signal,
    )
    .fetch_optional(conn)
    .await?)
}

/// Requeues a job (`scontrol requeue`): a RUNNING, SUSPENDED, COMPLETING or ended job goes
/// back to PENDING with `restart_count` + 1, its start, end and exit status cleared. The
/// allocations of the run it leaves stay live until that run's node reports its processes
/// gone (the worker stops them: the run is no longer current). Returns the row after the
/// change, or `None` when the job is already PENDING (or does not exist).
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn), err)]
pub async fn job_requeue_in_tx(
    conn: &mut PgConnection,
    id: i64,
    by: &str,
) -> Result<Option<JobRow>, DbError> {
    let row = sqlx::query_as!(
        JobRow,
        r#"UPDATE jobs SET state = 'PENDING', restart_count = restart_count + 1,
              start_time = NULL, end_time = NULL, exit_code = NULL, exit_signal = NULL,
              reason = NULL
           WHERE id = $1 AND state <> 'PENDING'
           RETURNING *"#,
        id
    )
    .fetch_optional(&mut *conn)
    .await?;
    if let Some(job) = &row {
        job_event_insert(
            &mut *conn,
            id,
            "requeued",
            job.restart_count,
            None,
            serde_json::json!({ "by": by }),
        )
        .await?;
    }
    Ok(row)
}

/// Whether job run (`job_id`, `run`) has an event of `kind` (`started`, `exited` …).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn job_event_exists(
    ex: impl PgExecutor<'_>,
    job_id: i64,
    run: i32,
    kind: &str,
) -> Result<bool, DbError> {
    Ok(sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM job_events WHERE job_id = $1 AND run = $2 AND kind = $3)
           AS "exists!""#,
        job_id,
        run,
        kind
    )
    .fetch_one(ex)
    .await?)
}
