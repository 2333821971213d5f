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
    /// `--nice`.
    pub nice: i32,
    /// An administrator's priority adjustment.
    pub priority_adjust: i64,
    /// The priority the scheduler computed last.
    pub priority: Option<i64>,
    /// `--begin`.
    pub begin_time: Option<DateTime<Utc>>,
    /// The start of its backfill reservation (pending jobs).
    pub expected_start: Option<DateTime<Utc>>,
    /// `--dependency`, verbatim.
    pub dependency: Option<String>,
    /// Array master: task indices not started yet (`0-15:4`).
    pub array_pending: Option<String>,
    /// Array `%LIMIT`.
    pub array_max_running: Option<i32>,
    /// Tasks in the array.
    pub array_task_count: Option<i32>,
    /// The 64-bit id of the last transaction that changed what the scheduler reads in
    /// this row (see [`crate::snapshot`]).
    pub change_xid: i64,
    /// What `gpus_per_node` counts: `gpu` (whole GPUs or MIG instances) or `shard`.
    pub gres: String,
    /// CPUs on each node (`-c` × tasks per node, `--cpus-per-gpu` × GPUs, …).
    pub cpus_per_node: i32,
    /// Memory on each node, MiB; `None`: a share in proportion to CPUs.
    pub mem_per_node_mib: Option<i64>,
    /// `-w/--nodelist`, expanded.
    pub nodelist: Vec<String>,
    /// `-x/--exclude`, expanded.
    pub exclude: Vec<String>,
    /// Every partition `-p` listed when it listed several (empty otherwise); `partition`
    /// is the first until the job starts, then the one it started in.
    pub partitions: Vec<String>,
    /// `--time-min`, seconds.
    pub time_min: Option<i64>,
    /// The batch script's arguments (`sbatch job.sh a b`).
    pub script_args: Vec<String>,
    /// The job's incarnation: random, given when the row is written, never changed
    /// ([`berth_core::wire::Incarnation`]).
    pub incarnation: uuid::Uuid,
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
    /// `--nice`.
    pub nice: i32,
    /// `--begin`.
    pub begin_time: Option<DateTime<Utc>>,
    /// `--dependency`, verbatim (validated).
    pub dependency: Option<String>,
    /// For an array: every task index, compact (`0-15:4`).
    pub array_pending: Option<String>,
    /// Array `%LIMIT`.
    pub array_max_running: Option<i32>,
    /// Tasks in the array.
    pub array_task_count: Option<i32>,
    /// What `gpus_per_node` counts: `gpu` or `shard`.
    pub gres: String,
    /// CPUs on each node.
    pub cpus_per_node: i32,
    /// Memory on each node, MiB; `None`: a share in proportion to CPUs.
    pub mem_per_node_mib: Option<i64>,
    /// `-w/--nodelist`, expanded.
    pub nodelist: Vec<String>,
    /// `-x/--exclude`, expanded.
    pub exclude: Vec<String>,
    /// Every partition `-p` listed when it listed several, in order; empty otherwise.
    pub partitions: Vec<String>,
    /// `--time-min`, seconds.
    pub time_min: Option<i64>,
    /// The batch script's arguments (`sbatch job.sh a b`), passed to it as argv.
    pub script_args: Vec<String>,
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
              spec, reason, nice, begin_time, dependency, array_pending, array_max_running,
              array_task_count, gres, cpus_per_node, mem_per_node_mib, nodelist, exclude,
              partitions, time_min, script_args)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
                   $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32,
                   $33, $34, $35, $36, $37)
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
        job.nice,
        job.begin_time,
        job.dependency,
        job.array_pending,
        job.array_max_running,
        job.array_task_count,
        job.gres,
        job.cpus_per_node,
        job.mem_per_node_mib,
        &job.nodelist,
        &job.exclude,
        &job.partitions,
        job.time_min,
        &job.script_args,
    )
    .fetch_one(&mut *conn)
    .await?;
    if job.array_pending.is_some() {
        sqlx::query!("UPDATE jobs SET array_job_id = id WHERE id = $1", id)
            .execute(&mut *conn)
            .await?;
    }
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
    /// Accounts (any of them).
    pub accounts: Option<Vec<String>>,
    /// QOS (any of them).
    pub qos: Option<Vec<String>>,
    /// Only ids greater than this (the cursor).
    pub after_id: i64,
    /// Page size.
    pub limit: i64,
    /// When set, only this user's jobs and those charged to `viewer_accounts` (what a
    /// plain user may see: their own, and their coordinated accounts').
    pub viewer: Option<String>,
    /// The accounts `viewer` coordinates.
    pub viewer_accounts: Vec<String>,
    /// The live queue's view ([`job_queue_rows`] only; `GET /v1/jobs` lists every job):
    /// an ended job only when it ended at or after this (Slurm's `MinJobAge`); `None`:
    /// every ended job.
    pub ended_after: Option<DateTime<Utc>>,
}

/// Jobs matching `filter`, by ascending id.
///
/// Each state (those of `filter.states`, else every state) is read on its own along the
/// `(state, id)` index and the pages merged, so that listing the few active jobs does not
/// walk past every ended one (the console's default Queue view with 90,000 ended jobs:
/// under a millisecond instead of 150 ms).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn job_list(ex: impl PgExecutor<'_>, filter: &JobFilter) -> Result<Vec<JobRow>, DbError> {
    let every: Vec<String>;
    let states = match filter.states.as_deref() {
        Some(states) => states,
        None => {
            every = berth_core::state::JobState::ALL
                .iter()
                .map(|s| s.as_str().to_string())
                .collect();
            &every
        }
    };
    Ok(sqlx::query_as!(
        JobRow,
        r#"SELECT j.* FROM unnest($2::text[]) AS s(state)
           CROSS JOIN LATERAL (
               SELECT * FROM jobs
               WHERE state = s.state AND id > $1
                 AND ($3::text IS NULL OR user_name = $3)
                 AND ($4::text IS NULL OR partition = $4 OR $4 = ANY(partitions))
                 AND ($5::text IS NULL OR name = $5)
                 AND ($7::text IS NULL OR user_name = $7 OR account = ANY($8))
                 AND ($9::text[] IS NULL OR account = ANY($9))
                 AND ($10::text[] IS NULL OR qos = ANY($10))
               ORDER BY id
               LIMIT $6) AS j
           ORDER BY j.id
           LIMIT $6"#,
        filter.after_id,
        states,
        filter.user_name,
        filter.partition,
        filter.name,
        filter.limit,
        filter.viewer,
        &filter.viewer_accounts,
        filter.accounts.as_deref(),
        filter.qos.as_deref(),
    )
    .fetch_all(ex)
    .await?)
}

/// The columns of a job that `squeue` shows ([`job_queue_list`]): [`JobRow`] without the
/// script, environment, spec and the placement requests.
#[derive(Debug, Clone)]
pub struct JobQueueRow {
    /// Id.
    pub id: i64,
    /// Name.
    pub name: String,
    /// Submitting user.
    pub user_name: String,
    /// Account.
    pub account: Option<String>,
    /// Partition (the one it runs in, once started).
    pub partition: String,
    /// Every partition it asked for (`-p a,b`), in order; empty when it named one.
    pub partitions: Vec<String>,
    /// QOS.
    pub qos: Option<String>,
    /// State (long name).
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
    /// Whole nodes, exclusively (`--exclusive` with every GPU).
    pub whole_node: bool,
    /// Time limit, seconds.
    pub time_limit: Option<i64>,
    /// Working directory.
    pub work_dir: Option<String>,
    /// Array id.
    pub array_job_id: Option<i64>,
    /// Array task index.
    pub array_task_id: Option<i32>,
    /// Requeues so far.
    pub restart_count: i32,
    /// Submitted.
    pub submit_time: DateTime<Utc>,
    /// Started (current run).
    pub start_time: Option<DateTime<Utc>>,
    /// Ended.
    pub end_time: Option<DateTime<Utc>>,
    /// Exit code.
    pub exit_code: Option<i32>,
    /// The signal that ended it.
    pub exit_signal: Option<i32>,
    /// `--nice`.
    pub nice: i32,
    /// Multifactor priority, last computed.
    pub priority: Option<i64>,
    /// Planned start (backfill).
    pub expected_start: Option<DateTime<Utc>>,
    /// An array master's pending task indices.
    pub array_pending: Option<String>,
    /// An array's `%N` limit.
    pub array_max_running: Option<i32>,
    /// The nodes its current run holds, by node index (`None` while pending or when it
    /// holds none).
    pub alloc_nodes: Option<Vec<String>>,
    /// The CPUs its current run holds on all its nodes (`None` while pending or when it
    /// holds none).
    pub alloc_cpus: Option<i64>,
    /// For a whole-node job (`whole_node`), the GPUs its current run holds on its first
    /// node; else `None`.
    pub alloc_node_gpus: Option<i32>,
}

/// The job states of the `jobs_active` index (jobs not ended).
const ACTIVE_STATES: [&str; 4] = ["PENDING", "RUNNING", "SUSPENDED", "COMPLETING"];

/// The jobs matching `filter` with squeue's columns only, by ascending id: the same
/// selection as [`job_list`], without reading the script, environment or spec that
/// `squeue` never shows, with what the current run of each job not pending holds
/// (`alloc_*`). Collects [`job_queue_rows`] in a transaction of [`job_queue_begin`].
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn job_queue_list(
    pool: &crate::Pool,
    filter: &JobFilter,
) -> Result<Vec<JobQueueRow>, DbError> {
    use futures_util::TryStreamExt;
    let mut tx = job_queue_begin(pool).await?;
    let rows = job_queue_rows(&mut tx, filter).try_collect().await?;
    tx.commit().await?;
    Ok(rows)
}

/// A transaction for [`job_queue_rows`]: read only and repeatable read (its reads see one
/// snapshot, so the allocations read first agree with the jobs read after them), with
/// each query planned for its own values (`plan_cache_mode = force_custom_plan`: a plan
/// cached for the whole queue would read every active job to find a plain user's fifty,
/// and one cached for a user would not serve the whole queue) and never JIT-compiled
/// (`jit = off`: the allocation subqueries' estimates crossed `jit_above_cost`, and
/// compiling took 19 ms of a 55 ms read of 10,200 jobs).
///
/// # Errors
/// [`DbError`] from the driver (no connection to be had: [`DbError::Unavailable`]).
pub async fn job_queue_begin(pool: &crate::Pool) -> Result<crate::Tx, DbError> {
    let mut tx = crate::begin(pool).await?;
    // One round trip (the simple protocol takes several statements), before any query
    // takes the snapshot.
    sqlx::Executor::execute(
        &mut *tx,
        "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY;
         SET LOCAL plan_cache_mode = force_custom_plan;
         SET LOCAL jit = off",
    )
    .await?;
    Ok(tx)
}

/// [`job_queue_list`]'s rows as PostgreSQL sends them (on `conn`, a transaction of
/// [`job_queue_begin`]), by ascending id, so that a caller can pass each on before the
/// last has arrived. When every state asked for is one of a job not ended (squeue's
/// default, `PENDING,RUNNING`), the jobs are read along the `jobs_active` index, in id
/// order, never touching ended jobs; otherwise each state along the `(state, id)` index
/// (an ended state along `jobs_ended` when `ended_after` leaves only the last minutes).
/// The allocation columns are read for jobs not pending only (a pending job holds
/// nothing of its current run: a requeue starts a new one): on the `jobs_active` path
/// from one read of the running jobs' allocations before the jobs
/// ([`job_queue_allocations`]), on the other by a subquery per job.
pub fn job_queue_rows<'c>(
    conn: &'c mut PgConnection,
    filter: &JobFilter,
) -> futures_util::stream::BoxStream<'c, Result<JobQueueRow, DbError>> {
    use futures_util::{StreamExt, TryStreamExt};
    let states: Vec<String> = match filter.states.as_deref() {
        Some(states) => states.to_vec(),
        None => berth_core::state::JobState::ALL
            .iter()
            .map(|s| s.as_str().to_string())
            .collect(),
    };
    if !states.is_empty() && states.iter().all(|s| ACTIVE_STATES.contains(&s.as_str())) {
        let filter = filter.clone();
        // Boxed, as `job_queue_allocations` is: the api's handler must be `Send` for
        // every lifetime.
        let rows: futures_util::future::BoxFuture<'c, Result<_, DbError>> = Box::pin(async move {
            let mut held = job_queue_allocations(&mut *conn, &filter, &states).await?;
            let rows = sqlx::query_as!(
                JobQueueRow,
                r#"SELECT id, name, user_name, account, partition, partitions, qos, state, reason,
                          num_nodes, num_tasks, cpus_per_task, gpus_per_node, whole_node,
                          time_limit, work_dir, array_job_id, array_task_id, restart_count,
                          submit_time, start_time, end_time, exit_code, exit_signal, nice,
                          priority, expected_start, array_pending, array_max_running,
                          NULL::text[] AS "alloc_nodes?", NULL::bigint AS "alloc_cpus?",
                          NULL::integer AS "alloc_node_gpus?"
                   FROM jobs
                   WHERE state IN ('PENDING', 'RUNNING', 'SUSPENDED', 'COMPLETING')
                     AND state = ANY($2) AND id > $1
                     AND ($3::text IS NULL OR user_name = $3)
                     AND ($4::text IS NULL OR partition = $4 OR $4 = ANY(partitions))
                     AND ($5::text IS NULL OR name = $5)
                     AND ($7::text IS NULL OR user_name = $7 OR account = ANY($8))
                     AND ($9::text[] IS NULL OR account = ANY($9))
                     AND ($10::text[] IS NULL OR qos = ANY($10))
                   ORDER BY id
                   LIMIT $6"#,
                filter.after_id,
                &states,
                filter.user_name,
                filter.partition,
                filter.name,
                filter.limit,
                filter.viewer,
                &filter.viewer_accounts,
                filter.accounts.as_deref(),
                filter.qos.as_deref(),
            )
            .fetch(conn)
            .map_err(DbError::from)
            .map_ok(move |mut row| {
                if row.state != "PENDING" {
                    if let Some(held) = held.remove(&row.id) {
                        row.alloc_node_gpus = row.whole_node.then_some(held.first_node_gpus);
                        row.alloc_nodes = Some(held.nodes);
                        row.alloc_cpus = Some(held.cpus);
                    }
                }
                row
            });
            Ok(rows.boxed())
        });
        return futures_util::stream::once(rows).try_flatten().boxed();
    }
    sqlx::query_as!(
        JobQueueRow,
        r#"SELECT j.id AS "id!", j.name AS "name!", j.user_name AS "user_name!", j.account,
                  j.partition AS "partition!", j.partitions AS "partitions!", j.qos,
                  j.state AS "state!", j.reason, j.num_nodes AS "num_nodes!",
                  j.num_tasks AS "num_tasks!", j.cpus_per_task AS "cpus_per_task!",
                  j.gpus_per_node AS "gpus_per_node!", j.whole_node AS "whole_node!",
                  j.time_limit, j.work_dir, j.array_job_id, j.array_task_id,
                  j.restart_count AS "restart_count!", j.submit_time AS "submit_time!",
                  j.start_time, j.end_time, j.exit_code, j.exit_signal, j.nice AS "nice!",
                  j.priority,
                  j.expected_start, j.array_pending, j.array_max_running,
                  CASE WHEN j.state <> 'PENDING' THEN
                      (SELECT array_agg(n.name ORDER BY a.node_index)
                       FROM allocations a JOIN nodes n ON n.id = a.node_id
                       WHERE a.job_id = j.id AND a.run = j.restart_count)
                  END AS "alloc_nodes?",
                  CASE WHEN j.state <> 'PENDING' THEN
                      (SELECT sum(cardinality(a.cpu_ids))::bigint FROM allocations a
                       WHERE a.job_id = j.id AND a.run = j.restart_count)
                  END AS "alloc_cpus?",
                  CASE WHEN j.state <> 'PENDING' AND j.whole_node THEN
                      (SELECT cardinality(a.gpu_indices) FROM allocations a
                       WHERE a.job_id = j.id AND a.run = j.restart_count
                       ORDER BY a.node_index LIMIT 1)
                  END AS "alloc_node_gpus?"
           FROM unnest($2::text[]) AS s(state)
           CROSS JOIN LATERAL (
               SELECT id, name, user_name, account, partition, partitions, qos, state, reason,
                      num_nodes, num_tasks, cpus_per_task, gpus_per_node, whole_node,
                      time_limit, work_dir, array_job_id, array_task_id, restart_count,
                      submit_time, start_time, end_time, exit_code, exit_signal, nice,
                      priority, expected_start, array_pending, array_max_running
               FROM jobs
               WHERE state = s.state AND id > $1
                 AND ($11::timestamptz IS NULL
                      OR s.state IN ('PENDING', 'RUNNING', 'SUSPENDED', 'COMPLETING')
                      OR end_time >= $11)
                 AND ($3::text IS NULL OR user_name = $3)
                 AND ($4::text IS NULL OR partition = $4 OR $4 = ANY(partitions))
                 AND ($5::text IS NULL OR name = $5)
                 AND ($7::text IS NULL OR user_name = $7 OR account = ANY($8))
                 AND ($9::text[] IS NULL OR account = ANY($9))
                 AND ($10::text[] IS NULL OR qos = ANY($10))
               ORDER BY id
               LIMIT $6) AS j
           ORDER BY j.id
           LIMIT $6"#,
        filter.after_id,
        &states,
        filter.user_name,
        filter.partition,
        filter.name,
        filter.limit,
        filter.viewer,
        &filter.viewer_accounts,
        filter.accounts.as_deref(),
        filter.qos.as_deref(),
        filter.ended_after,
    )
    .fetch(conn)
    .map_err(DbError::from)
    .boxed()
}

/// How many jobs the live queue holds (Slurm's job records, counted against
/// `MaxJobCount`): those not ended, and those that ended at or after `ended_after` (all
/// ended ones when `None`). A pending array is one row (its master) until its tasks
/// start. Read along the `jobs_active` and `jobs_ended` indexes.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn job_live_count(
    ex: impl PgExecutor<'_>,
    ended_after: Option<DateTime<Utc>>,
) -> Result<i64, DbError> {
    Ok(sqlx::query_scalar!(
        r#"SELECT (SELECT count(*) FROM jobs
                   WHERE state IN ('PENDING', 'RUNNING', 'SUSPENDED', 'COMPLETING'))
                + (SELECT count(*) FROM jobs
                   WHERE end_time IS NOT NULL
                     AND end_time >= COALESCE($1::timestamptz, '-infinity'::timestamptz)
                     AND state NOT IN ('PENDING', 'RUNNING', 'SUSPENDED', 'COMPLETING'))
                AS "count!""#,
        ended_after
    )
    .fetch_one(ex)
    .await?)
}

/// What the current run of a running job holds, for [`job_queue_rows`].
struct QueueHeld {
    /// Its nodes, by node index.
    nodes: Vec<String>,
    /// Its CPUs on all its nodes.
    cpus: i64,
    /// The GPUs it holds on its first node.
    first_node_gpus: i32,
}

/// What the current run of each job matching `filter` (in `states`, every one a state of
/// the `jobs_active` index) and not pending holds, by job id: one small read (the running
/// jobs only, a few hundred where the queue holds ten thousand), where a subquery per
/// running job in the queue's read re-scanned `allocations` and re-hashed `nodes` for
/// each (11 ms of 24 for 200 running jobs). Read in [`job_queue_begin`]'s snapshot, so a
/// job that starts meanwhile is pending in both reads.
///
/// Boxed: the queue's stream holds this future, and the api's handler must be `Send` for
/// every lifetime (an `async fn` here is not, as rustc sees it).
fn job_queue_allocations<'a>(
    conn: &'a mut PgConnection,
    filter: &'a JobFilter,
    states: &'a [String],
) -> futures_util::future::BoxFuture<'a, Result<std::collections::HashMap<i64, QueueHeld>, DbError>>
{
    use futures_util::FutureExt;
    async move {
        let rows = sqlx::query!(
            r#"SELECT a.job_id AS "job_id!",
                  array_agg(n.name ORDER BY a.node_index) AS "nodes!",
                  sum(cardinality(a.cpu_ids))::bigint AS "cpus!",
                  (array_agg(cardinality(a.gpu_indices) ORDER BY a.node_index))[1]
                      AS "first_node_gpus!"
           FROM jobs j
           JOIN allocations a ON a.job_id = j.id AND a.run = j.restart_count
           JOIN nodes n ON n.id = a.node_id
           WHERE j.state IN ('RUNNING', 'SUSPENDED', 'COMPLETING')
             AND j.state = ANY($2) AND j.id > $1
             AND ($3::text IS NULL OR j.user_name = $3)
             AND ($4::text IS NULL OR j.partition = $4 OR $4 = ANY(j.partitions))
             AND ($5::text IS NULL OR j.name = $5)
             AND ($6::text IS NULL OR j.user_name = $6 OR j.account = ANY($7))
             AND ($8::text[] IS NULL OR j.account = ANY($8))
             AND ($9::text[] IS NULL OR j.qos = ANY($9))
           GROUP BY a.job_id"#,
            filter.after_id,
            states,
            filter.user_name,
            filter.partition,
            filter.name,
            filter.viewer,
            &filter.viewer_accounts,
            filter.accounts.as_deref(),
            filter.qos.as_deref(),
        )
        .fetch_all(conn)
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| {
                let held = QueueHeld {
                    nodes: r.nodes,
                    cpus: r.cpus,
                    first_node_gpus: r.first_node_gpus,
                };
                (r.job_id, held)
            })
            .collect())
    }
    .boxed()
}

/// The queue positions of those of jobs `ids` that are pending and not held: 1 for the
/// job the scheduler considers first. The order is the scheduler's: priority (highest
/// first; jobs it has not given one yet last), then submit time, then id, over every
/// pending job not held, whatever its partition. Returns (id, position) pairs.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn job_queue_positions(
    ex: impl PgExecutor<'_>,
    ids: &[i64],
) -> Result<Vec<(i64, i64)>, DbError> {
    let rows = sqlx::query!(
        r#"SELECT r.id AS "id!", r.pos AS "pos!" FROM (
               SELECT id, row_number() OVER (ORDER BY priority DESC NULLS LAST, submit_time, id) AS pos
               FROM jobs WHERE state = 'PENDING' AND NOT hold
           ) r
           WHERE r.id = ANY($1)"#,
        ids
    )
    .fetch_all(ex)
    .await?;
    Ok(rows.into_iter().map(|r| (r.id, r.pos)).collect())
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

/// A job that listed several partitions (`-p a,b`) and is starting on nodes `node_ids`
/// gets as its partition the first listed one whose members hold all of them (a
/// partition without a node list holds every node); its partition stays as it was when
/// none does or it listed one partition. Returns the partition it is in.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn), err)]
pub async fn job_start_partition_in_tx(
    conn: &mut PgConnection,
    id: i64,
    node_ids: &[i64],
) -> Result<Option<String>, DbError> {
    Ok(sqlx::query_scalar!(
        r#"UPDATE jobs j SET partition = COALESCE((
               SELECT l.name FROM unnest(j.partitions) WITH ORDINALITY AS l(name, i)
               JOIN partitions p ON p.name = l.name
               WHERE cardinality(p.nodes) = 0
                  OR NOT EXISTS (SELECT 1 FROM nodes n
                                 WHERE n.id = ANY($2) AND NOT n.name = ANY(p.nodes))
               ORDER BY l.i LIMIT 1), j.partition)
           WHERE j.id = $1
           RETURNING j.partition"#,
        id,
        node_ids
    )
    .fetch_optional(conn)
    .await?)
}

/// Marks a pending job RUNNING (the scheduler's start). `time_limit` (seconds), when
/// given, becomes the job's time limit: the shorter one backfill started it with, no less
/// than its `--time-min`. Returns false when it was no longer pending (cancelled
/// meanwhile).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn job_start_in_tx(
    conn: &mut PgConnection,
    id: i64,
    term: i64,
    time_limit: Option<i64>,
) -> Result<bool, DbError> {
    let run = sqlx::query_scalar!(
        r#"UPDATE jobs SET state = 'RUNNING', start_time = now(), reason = NULL,
                  time_limit = COALESCE($2, time_limit)
           WHERE id = $1 AND state = 'PENDING' AND NOT hold RETURNING restart_count"#,
        id,
        time_limit
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
/// status, unless it already has one: the first end reported wins). Returns the row after
/// the change.
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
              exit_code = CASE WHEN state IN ('RUNNING', 'SUSPENDED', 'COMPLETING')
                                    OR (exit_code IS NULL AND exit_signal IS NULL)
                               THEN $5 ELSE exit_code END,
              exit_signal = CASE WHEN state IN ('RUNNING', 'SUSPENDED', 'COMPLETING')
                                      OR (exit_code IS NULL AND exit_signal IS NULL)
                                 THEN $6 ELSE exit_signal END
           WHERE id = $1 AND restart_count = $2 AND state <> 'PENDING'
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

/// Takes back a job run the database forgot while its node ran it (after a failover with
/// asynchronous replication the job may be PENDING again in the same run): a job still
/// PENDING in `run` becomes RUNNING since `started_at`, with an `allocated` event naming
/// `node` as adopted. The caller writes the run's allocation in the same transaction.
/// Returns false when the job is no longer PENDING in that run.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn), err)]
pub async fn job_adopt_in_tx(
    conn: &mut PgConnection,
    id: i64,
    run: i32,
    node: &str,
    started_at: DateTime<Utc>,
) -> Result<bool, DbError> {
    let done = sqlx::query!(
        r#"UPDATE jobs SET state = 'RUNNING', start_time = GREATEST($3, submit_time), reason = NULL,
                  expected_start = NULL
           WHERE id = $1 AND restart_count = $2 AND state = 'PENDING'"#,
        id,
        run,
        started_at
    )
    .execute(&mut *conn)
    .await?
    .rows_affected()
        == 1;
    if done {
        job_event_insert(
            &mut *conn,
            id,
            "allocated",
            run,
            Some(node),
            serde_json::json!({ "adopted": true }),
        )
        .await?;
    }
    Ok(done)
}

/// Ends a job run the database forgot while its node ran it to the end (the job is PENDING
/// again in `run`, as after a failover with asynchronous replication): the job takes the
/// end state and exit status the node reported, its start the earliest `started` event of
/// the run (else `started_at`). Returns the row after the change, or `None` when the job
/// is no longer PENDING in that run.
///
/// # Errors
/// [`DbError`] from the driver.
#[allow(clippy::too_many_arguments)]
#[instrument(skip(conn), err)]
pub async fn job_finish_forgotten_in_tx(
    conn: &mut PgConnection,
    id: i64,
    run: i32,
    state: &str,
    reason: Option<&str>,
    exit_code: Option<i32>,
    exit_signal: Option<i32>,
    started_at: DateTime<Utc>,
) -> Result<Option<JobRow>, DbError> {
    Ok(sqlx::query_as!(
        JobRow,
        r#"UPDATE jobs SET state = $3, reason = $4, exit_code = $5, exit_signal = $6,
              start_time = GREATEST(submit_time, COALESCE(
                  (SELECT min(at) FROM job_events
                   WHERE job_id = $1 AND run = $2 AND kind = 'started'), $7)),
              end_time = GREATEST(now(), submit_time),
              expected_start = NULL
           WHERE id = $1 AND restart_count = $2 AND state = 'PENDING'
           RETURNING *"#,
        id,
        run,
        state,
        reason,
        exit_code,
        exit_signal,
        started_at
    )
    .fetch_optional(conn)
    .await?)
}

/// Gives up run `run` of a job the database had forgotten was placed (the job is PENDING
/// in that run) when it cannot be taken back (its GPUs are held by another job now, or it
/// spans several nodes): the job stays PENDING in run `run` + 1, so that the scheduler
/// never starts run `run` a second time while its node still runs it (the node is told
/// to stop it). Records a `requeued` event naming `node` and `why`. Returns false when the
/// job is no longer PENDING in that run.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn), err)]
pub async fn job_skip_run_in_tx(
    conn: &mut PgConnection,
    id: i64,
    run: i32,
    node: &str,
    why: &str,
) -> Result<bool, DbError> {
    let row = sqlx::query_scalar!(
        r#"UPDATE jobs SET restart_count = restart_count + 1, expected_start = NULL
           WHERE id = $1 AND restart_count = $2 AND state = 'PENDING'
           RETURNING restart_count"#,
        id,
        run
    )
    .fetch_optional(&mut *conn)
    .await?;
    if let Some(next) = row {
        job_event_insert(
            &mut *conn,
            id,
            "requeued",
            next,
            Some(node),
            serde_json::json!({ "by": node, "skipped_run": run, "why": why }),
        )
        .await?;
    }
    Ok(row.is_some())
}

/// Slurm's reason for a job held after its batch launch failed on nodes again and again.
pub const LAUNCH_FAILED_HELD: &str = "launch failed requeued held";

/// Requeues a job whose batch launch failed for a reason of its node (Slurm's "batch job
/// launch failure"): a job still RUNNING in `run` goes back to PENDING with
/// `restart_count` + 1 and its start cleared, never FAILED (its script never ran). With
/// `hold` it is also held with reason [`LAUNCH_FAILED_HELD`]. Records a `requeued` event
/// naming `node` and `message`. Returns the row after the change, or `None` when the job
/// is no longer RUNNING in that run (cancelled meanwhile: it ends as it is).
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn), err)]
pub async fn job_requeue_launch_failed_in_tx(
    conn: &mut PgConnection,
    id: i64,
    run: i32,
    node: &str,
    message: &str,
    hold: bool,
) -> Result<Option<JobRow>, DbError> {
    let row = sqlx::query_as!(
        JobRow,
        r#"UPDATE jobs SET state = 'PENDING', restart_count = restart_count + 1,
              start_time = NULL, end_time = NULL, exit_code = NULL, exit_signal = NULL,
              hold = hold OR $3, reason = CASE WHEN $3 THEN $4 ELSE NULL END,
              expected_start = NULL
           WHERE id = $1 AND restart_count = $2 AND state = 'RUNNING'
           RETURNING *"#,
        id,
        run,
        hold,
        LAUNCH_FAILED_HELD
    )
    .fetch_optional(&mut *conn)
    .await?;
    if let Some(job) = &row {
        job_event_insert(
            &mut *conn,
            id,
            "requeued",
            job.restart_count,
            Some(node),
            serde_json::json!({ "by": node, "launch_failed": message, "held": hold }),
        )
        .await?;
    }
    Ok(row)
}

/// Job `id`'s restart count (its current run), 0 when the job is gone.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn job_restart_count(ex: impl PgExecutor<'_>, id: i64) -> Result<i32, DbError> {
    Ok(
        sqlx::query_scalar!("SELECT restart_count FROM jobs WHERE id = $1", id)
            .fetch_optional(ex)
            .await?
            .unwrap_or(0),
    )
}

/// On how many distinct nodes job `id`'s batch launch failed for a reason of the node
/// (`launch_failed` events whose report names a `node` fault), over all its runs.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn job_launch_failures(ex: impl PgExecutor<'_>, id: i64) -> Result<i64, DbError> {
    Ok(sqlx::query_scalar!(
        r#"SELECT count(DISTINCT node) AS "count!" FROM job_events
           WHERE job_id = $1 AND kind = 'launch_failed'
             AND detail->>'launch_fault' = 'node'"#,
        id
    )
    .fetch_one(ex)
    .await?)
}

/// What a dependency needs to know of a job it names (or of a task of an array it names).
#[derive(Debug, Clone)]
pub struct DependencyTargetRow {
    /// The job id.
    pub id: i64,
    /// Its array's id.
    pub array_job_id: Option<i64>,
    /// Its array task index.
    pub array_task_id: Option<i32>,
    /// Its state.
    pub state: String,
    /// For an array master: tasks not started yet.
    pub array_pending: Option<String>,
}

/// The jobs `ids` name: each job, and every task row of the arrays among them.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn job_dependency_targets(
    ex: impl PgExecutor<'_>,
    ids: &[i64],
) -> Result<Vec<DependencyTargetRow>, DbError> {
    Ok(sqlx::query_as!(
        DependencyTargetRow,
        r#"SELECT id, array_job_id, array_task_id, state, array_pending FROM jobs
           WHERE id = ANY($1) OR array_job_id = ANY($1)
           ORDER BY id"#,
        ids
    )
    .fetch_all(ex)
    .await?)
}

/// Which of the jobs `ids` exist and are visible to `viewer` (`None`: to everyone, as to
/// admins and operators): that user's own jobs and those charged to `viewer_accounts`,
/// the rule of [`job_list`].
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn job_visible_ids(
    ex: impl PgExecutor<'_>,
    ids: &[i64],
    viewer: Option<&str>,
    viewer_accounts: &[String],
) -> Result<Vec<i64>, DbError> {
    Ok(sqlx::query_scalar!(
        r#"SELECT id FROM jobs
           WHERE id = ANY($1) AND ($2::text IS NULL OR user_name = $2 OR account = ANY($3))
           ORDER BY id"#,
        ids,
        viewer,
        viewer_accounts
    )
    .fetch_all(ex)
    .await?)
}

/// Splits task `task` off a pending array master (locking it): a copy of the master
/// becomes the task's own PENDING row, and the index leaves the master's pending set; the
/// last task is the master row itself (as in Slurm). Returns the task's job id, or `None`
/// when the task is not pending any more (cancelled, started by another term).
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn), err)]
pub async fn job_array_split_in_tx(
    conn: &mut PgConnection,
    master: i64,
    task: i32,
) -> Result<Option<i64>, DbError> {
    let Some(row) = job_lock_in_tx(&mut *conn, master).await? else {
        return Ok(None);
    };
    let Some(pending) = row.array_pending.as_deref() else {
        return Ok(None);
    };
    let Ok(mut set) = berth_core::array::IndexSet::parse(pending) else {
        return Ok(None);
    };
    if row.state != "PENDING" || task < 0 || !set.contains(task as u32) {
        return Ok(None);
    }
    set.remove(task as u32);
    if set.is_empty() {
        sqlx::query!(
            "UPDATE jobs SET array_task_id = $2, array_pending = NULL WHERE id = $1",
            master,
            task
        )
        .execute(&mut *conn)
        .await?;
        return Ok(Some(master));
    }
    let id = sqlx::query_scalar!(
        r#"INSERT INTO jobs (name, user_name, account, partition, qos, state, reason, num_nodes,
              num_tasks, cpus_per_task, gpus_per_node, gpu_type, exclusive, whole_node, mem_mib,
              time_limit, hold, script, submit_dir, work_dir, stdout_pattern, stderr_pattern,
              environment, spec, array_job_id, array_task_id, submit_time, nice,
              priority_adjust, begin_time, dependency, array_max_running, array_task_count, gres,
              cpus_per_node, mem_per_node_mib, nodelist, exclude, partitions, time_min,
              script_args)
           SELECT name, user_name, account, partition, qos, 'PENDING', reason, num_nodes,
              num_tasks, cpus_per_task, gpus_per_node, gpu_type, exclusive, whole_node, mem_mib,
              time_limit, hold, script, submit_dir, work_dir, stdout_pattern, stderr_pattern,
              environment, spec, id, $2, submit_time, nice, priority_adjust, begin_time,
              dependency, array_max_running, array_task_count, gres, cpus_per_node,
              mem_per_node_mib, nodelist, exclude, partitions, time_min, script_args
           FROM jobs WHERE id = $1
           RETURNING id"#,
        master,
        task
    )
    .fetch_one(&mut *conn)
    .await?;
    sqlx::query!(
        "UPDATE jobs SET array_pending = $2 WHERE id = $1",
        master,
        set.to_string()
    )
    .execute(&mut *conn)
    .await?;
    job_event_insert(
        &mut *conn,
        id,
        "submitted",
        0,
        None,
        serde_json::json!({ "array_job_id": master, "array_task_id": task }),
    )
    .await?;
    Ok(Some(id))
}

/// Records the scheduler's view of pending jobs (parallel slices): reason, expected start
/// and priority. Each priority was computed with a nice value and an admin adjustment
/// (`nices`, `adjusts`; `None`: unknown); when the job's have changed since (a `top`, an
/// update racing the cycle), the priority written is moved by the difference (it is
/// linear in both), so a stale cycle never undoes them.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn job_set_pending_plan(
    ex: impl PgExecutor<'_>,
    ids: &[i64],
    reasons: &[String],
    expected_starts: &[Option<DateTime<Utc>>],
    priorities: &[i64],
    nices: &[Option<i32>],
    adjusts: &[Option<i64>],
) -> Result<(), DbError> {
    sqlx::query!(
        // `jobs.nice` and `jobs.priority_adjust` are the row as it is when updated (a
        // row changed meanwhile is re-read before its update).
        r#"UPDATE jobs SET reason = r.reason, expected_start = r.expected,
                  priority = r.priority - (jobs.nice::bigint - COALESCE(r.nice, jobs.nice))
                             + (jobs.priority_adjust - COALESCE(r.adjust, jobs.priority_adjust))
           FROM UNNEST($1::bigint[], $2::text[], $3::timestamptz[], $4::bigint[], $5::int[],
                       $6::bigint[]) AS r(id, reason, expected, priority, nice, adjust)
           WHERE jobs.id = r.id AND jobs.state = 'PENDING' AND NOT jobs.hold
             AND (jobs.reason IS DISTINCT FROM r.reason
                  OR jobs.expected_start IS DISTINCT FROM r.expected
                  OR jobs.priority IS DISTINCT FROM
                     r.priority - (jobs.nice::bigint - COALESCE(r.nice, jobs.nice))
                     + (jobs.priority_adjust - COALESCE(r.adjust, jobs.priority_adjust)))"#,
        ids,
        reasons,
        expected_starts as &[Option<DateTime<Utc>>],
        priorities,
        nices as &[Option<i32>],
        adjusts as &[Option<i64>]
    )
    .execute(ex)
    .await?;
    Ok(())
}

/// Holds a pending job and the pending tasks of its array (`reason`: `JobHeldUser` or
/// `JobHeldAdmin`). Returns how many rows were held.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn job_hold(ex: impl PgExecutor<'_>, id: i64, reason: &str) -> Result<u64, DbError> {
    Ok(sqlx::query!(
        r#"UPDATE jobs SET hold = true, reason = $2, expected_start = NULL
           WHERE (id = $1 OR array_job_id = $1) AND state = 'PENDING'"#,
        id,
        reason
    )
    .execute(ex)
    .await?
    .rows_affected())
}

/// Releases a held job and the held tasks of its array. Returns how many rows were
/// released.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn job_release(ex: impl PgExecutor<'_>, id: i64) -> Result<u64, DbError> {
    Ok(sqlx::query!(
        r#"UPDATE jobs SET hold = false, reason = 'None'
           WHERE (id = $1 OR array_job_id = $1) AND state = 'PENDING' AND hold"#,
        id
    )
    .execute(ex)
    .await?
    .rows_affected())
}

/// Changes what `berth update job` may change of a pending job (and its array's pending
/// tasks); `None` leaves a value as it is. Returns how many rows changed.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn job_update_pending(
    ex: impl PgExecutor<'_>,
    id: i64,
    nice: Option<i32>,
    priority_adjust: Option<i64>,
    time_limit: Option<i64>,
    begin_time: Option<DateTime<Utc>>,
) -> Result<u64, DbError> {
    Ok(sqlx::query!(
        r#"UPDATE jobs SET nice = COALESCE($2, nice),
                  priority_adjust = COALESCE($3, priority_adjust),
                  time_limit = COALESCE($4, time_limit),
                  begin_time = COALESCE($5, begin_time)
           WHERE (id = $1 OR array_job_id = $1) AND state = 'PENDING'"#,
        id,
        nice,
        priority_adjust,
        time_limit,
        begin_time
    )
    .execute(ex)
    .await?
    .rows_affected())
}

/// What [`job_top_in_tx`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TopOutcome {
    /// The job was not pending (or does not exist).
    NotPending,
    /// The job is held, or the scheduler has not given it a priority yet: there is
    /// nothing to compare.
    NoPriority,
    /// Putting it first would take a nice value out of range (a peer is far ahead, by an
    /// administrator's priority adjustment): nothing changed.
    OutOfReach {
        /// The peer out of reach.
        peer: i64,
    },
    /// It was already first among its peers (or has none): nothing changed.
    AlreadyFirst,
    /// Its nice went down by `delta`, each of `others` peers' up by a share of it.
    Moved {
        /// How much the job's nice went down.
        delta: i64,
        /// The peers that had a higher priority.
        others: Vec<i64>,
    },
}

/// The range of nice values (Slurm's: ±(2³¹ − 3)).
pub const NICE_LIMIT: i64 = i32::MAX as i64 - 2;

/// Slurm's `scontrol top`: moves pending job `id` ahead of the other pending, unheld,
/// prioritised jobs of the same user, partition, account and QOS by adjusting nice
/// values, as Slurm does: the job's nice goes down by what puts its priority one above
/// its highest peer's, and the nice of each peer that was ahead goes up by an equal share
/// of that, so the user's jobs together gain nothing on anyone else's. The stored
/// priorities move with the nice values (the next pass computes the same), so tops in
/// quick succession compose. The job and its peers are locked in id order (two tops
/// never deadlock).
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn), err)]
pub async fn job_top_in_tx(conn: &mut PgConnection, id: i64) -> Result<TopOutcome, DbError> {
    let Some(job) = job_get(&mut *conn, id).await? else {
        return Ok(TopOutcome::NotPending);
    };
    let rows = sqlx::query!(
        r#"SELECT id, state, hold, nice, priority, user_name, partition, account, qos FROM jobs
           WHERE id = $1
              OR (state = 'PENDING' AND NOT hold AND priority IS NOT NULL AND user_name = $2
                  AND partition = $3 AND account IS NOT DISTINCT FROM $4
                  AND qos IS NOT DISTINCT FROM $5)
           ORDER BY id FOR UPDATE"#,
        id,
        job.user_name,
        job.partition,
        job.account,
        job.qos
    )
    .fetch_all(&mut *conn)
    .await?;
    let Some(me) = rows.iter().find(|r| r.id == id) else {
        return Ok(TopOutcome::NotPending);
    };
    if me.state != "PENDING" {
        return Ok(TopOutcome::NotPending);
    }
    let Some(mine) = me.priority.filter(|_| !me.hold) else {
        return Ok(TopOutcome::NoPriority);
    };
    // Peers as they are now (locked): same user, partition, account and QOS.
    let ahead: Vec<(i64, i64, i32)> = rows
        .iter()
        .filter(|r| {
            r.id != id
                && r.state == "PENDING"
                && !r.hold
                && r.user_name == me.user_name
                && r.partition == me.partition
                && r.account == me.account
                && r.qos == me.qos
        })
        .filter_map(|r| Some((r.id, r.priority?, r.nice)))
        .filter(|(_, p, _)| *p >= mine)
        .collect();
    let Some(&(top_peer, highest, _)) = ahead.iter().max_by_key(|(_, p, _)| *p) else {
        return Ok(TopOutcome::AlreadyFirst);
    };
    let delta = highest.saturating_sub(mine).saturating_add(1);
    let n = ahead.len() as i64;
    let share = delta.saturating_add(n - 1) / n;
    let new_nice = i64::from(me.nice).saturating_sub(delta);
    if new_nice < -NICE_LIMIT
        || ahead
            .iter()
            .any(|(_, _, nice)| i64::from(*nice).saturating_add(share) > NICE_LIMIT)
    {
        return Ok(TopOutcome::OutOfReach { peer: top_peer });
    }
    sqlx::query!(
        "UPDATE jobs SET nice = $2, priority = priority + $3 WHERE id = $1",
        id,
        new_nice as i32,
        delta
    )
    .execute(&mut *conn)
    .await?;
    let others: Vec<i64> = ahead.iter().map(|(id, _, _)| *id).collect();
    sqlx::query!(
        r#"UPDATE jobs SET nice = nice + $2::int, priority = priority - $2::bigint
           WHERE id = ANY($1)"#,
        &others,
        share as i32
    )
    .execute(&mut *conn)
    .await?;
    Ok(TopOutcome::Moved { delta, others })
}

/// Changes the time limit (seconds) of a running job (and its array's running tasks):
/// their nodes enforce it from their next sync, counted from each run's start. Returns
/// how many rows changed.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(ex), err)]
pub async fn job_update_running_time_limit(
    ex: impl PgExecutor<'_>,
    id: i64,
    time_limit: i64,
) -> Result<u64, DbError> {
    Ok(sqlx::query!(
        r#"UPDATE jobs SET time_limit = $2
           WHERE (id = $1 OR array_job_id = $1) AND state = 'RUNNING'"#,
        id,
        time_limit
    )
    .execute(ex)
    .await?
    .rows_affected())
}

/// A running job run's time limit, as its node must enforce it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunTimeLimitRow {
    /// The job.
    pub job_id: i64,
    /// Its current run.
    pub run: i32,
    /// The time limit, seconds; `None`: unlimited.
    pub time_limit: Option<i64>,
}

/// Of the runs `(job_ids[i], runs[i])`, those still current and RUNNING with a live
/// allocation on node `node_id`, with their job's time limit (a node learns nothing of
/// other nodes' runs).
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(ex), err)]
pub async fn job_running_time_limits(
    ex: impl PgExecutor<'_>,
    node_id: i64,
    job_ids: &[i64],
    runs: &[i32],
) -> Result<Vec<RunTimeLimitRow>, DbError> {
    Ok(sqlx::query_as!(
        RunTimeLimitRow,
        r#"SELECT j.id AS job_id, j.restart_count AS run, j.time_limit
           FROM jobs j
           JOIN UNNEST($2::bigint[], $3::int[]) AS r(job_id, run)
             ON r.job_id = j.id AND r.run = j.restart_count
           WHERE j.state = 'RUNNING'
             AND EXISTS (SELECT 1 FROM allocations a
                         WHERE a.job_id = j.id AND a.run = j.restart_count AND a.node_id = $1
                           AND a.released_at IS NULL)
           ORDER BY j.id"#,
        node_id,
        job_ids,
        runs
    )
    .fetch_all(ex)
    .await?)
}

/// Cancels the tasks of array `master` that have not ended (the master row itself is
/// cancelled by [`job_cancel_in_tx`]). Returns the cancelled task ids.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn job_array_cancel_in_tx(
    conn: &mut PgConnection,
    master: i64,
    by: &str,
) -> Result<Vec<i64>, DbError> {
    let ids = sqlx::query_scalar!(
        r#"SELECT id FROM jobs WHERE array_job_id = $1 AND id <> $1
             AND state IN ('PENDING', 'RUNNING', 'SUSPENDED', 'COMPLETING')
           ORDER BY id"#,
        master
    )
    .fetch_all(&mut *conn)
    .await?;
    for id in &ids {
        job_cancel_in_tx(&mut *conn, *id, by).await?;
    }
    Ok(ids)
}

/// What [`job_node_fail_in_tx`] did to a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeFailOutcome {
    /// The job may be requeued (`--requeue`, the default for batch jobs): it is PENDING
    /// again, its restart count (`SLURM_RESTART_COUNT`) now `restart_count`.
    Requeued {
        /// The new run.
        restart_count: i32,
    },
    /// `--no-requeue`: the job ended NODE_FAIL.
    Failed,
    /// The run had already ended or moved on; nothing changed.
    Unchanged,
}

/// A node of job `id`'s run `run` failed (`node` names it): a job that is still running
/// that run goes back to PENDING with its restart count one higher when it may be
/// requeued (`--requeue`, the default as in Slurm's `JobRequeue=1`; `--no-requeue`
/// refuses), else ends NODE_FAIL with reason `NodeDown`. A multi-node job fails or
/// requeues as a whole: the caller releases the allocations of the run on every node.
/// Records a `node_fail` event (with the node and whether the job was requeued).
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn), err)]
pub async fn job_node_fail_in_tx(
    conn: &mut PgConnection,
    id: i64,
    run: i32,
    node: &str,
) -> Result<NodeFailOutcome, DbError> {
    let row = sqlx::query!(
        r#"WITH j AS (
               SELECT id, COALESCE((spec->>'requeue')::boolean, true) AS requeue
               FROM jobs
               WHERE id = $1 AND restart_count = $2
                 AND state IN ('RUNNING', 'SUSPENDED', 'COMPLETING')
               FOR UPDATE)
           UPDATE jobs SET
               state = CASE WHEN j.requeue THEN 'PENDING' ELSE 'NODE_FAIL' END,
               restart_count = CASE WHEN j.requeue THEN restart_count + 1 ELSE restart_count END,
               reason = CASE WHEN j.requeue THEN NULL ELSE 'NodeDown' END,
               start_time = CASE WHEN j.requeue THEN NULL ELSE start_time END,
               end_time = CASE WHEN j.requeue THEN NULL ELSE now() END,
               exit_code = NULL,
               exit_signal = NULL
           FROM j WHERE jobs.id = j.id
           RETURNING jobs.state, jobs.restart_count, j.requeue AS "requeue!""#,
        id,
        run
    )
    .fetch_optional(&mut *conn)
    .await?;
    let Some(row) = row else {
        return Ok(NodeFailOutcome::Unchanged);
    };
    job_event_insert(
        &mut *conn,
        id,
        "node_fail",
        run,
        Some(node),
        serde_json::json!({ "requeued": row.requeue }),
    )
    .await?;
    Ok(if row.requeue {
        NodeFailOutcome::Requeued {
            restart_count: row.restart_count,
        }
    } else {
        NodeFailOutcome::Failed
    })
}

/// The instance of `node`, running run `run` of job `id`, is being reclaimed (a spot
/// interruption notice for `time`): a job still in that run (RUNNING, SUSPENDED or
/// COMPLETING) goes back to PENDING with its restart count one higher, as a preemption
/// with `PreemptMode=REQUEUE` does, unless it refuses requeues (`--no-requeue`: it ends
/// NODE_FAIL with reason `reclaimed`). Records a `reclaimed` event in the run (the node,
/// the notice's time, whether it was requeued); the run's allocations stay live until its
/// node reports the processes gone, and its stop grace runs until `time`
/// ([`job_reclaim_times`]).
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn), err)]
pub async fn job_reclaim_in_tx(
    conn: &mut PgConnection,
    id: i64,
    run: i32,
    node: &str,
    time: chrono::DateTime<chrono::Utc>,
) -> Result<NodeFailOutcome, DbError> {
    let row = sqlx::query!(
        r#"WITH j AS (
               SELECT id, COALESCE((spec->>'requeue')::boolean, true) AS requeue
               FROM jobs
               WHERE id = $1 AND restart_count = $2
                 AND state IN ('RUNNING', 'SUSPENDED', 'COMPLETING')
               FOR UPDATE)
           UPDATE jobs SET
               state = CASE WHEN j.requeue THEN 'PENDING' ELSE 'NODE_FAIL' END,
               restart_count = CASE WHEN j.requeue THEN restart_count + 1 ELSE restart_count END,
               reason = CASE WHEN j.requeue THEN NULL ELSE 'reclaimed' END,
               start_time = CASE WHEN j.requeue THEN NULL ELSE start_time END,
               end_time = CASE WHEN j.requeue THEN NULL ELSE now() END,
               expected_start = NULL,
               exit_code = NULL,
               exit_signal = NULL
           FROM j WHERE jobs.id = j.id
           RETURNING jobs.restart_count, j.requeue AS "requeue!""#,
        id,
        run
    )
    .fetch_optional(&mut *conn)
    .await?;
    let Some(row) = row else {
        return Ok(NodeFailOutcome::Unchanged);
    };
    job_event_insert(
        &mut *conn,
        id,
        "reclaimed",
        run,
        Some(node),
        serde_json::json!({ "requeued": row.requeue, "time": time, "reason": "spot interruption notice" }),
    )
    .await?;
    Ok(if row.requeue {
        NodeFailOutcome::Requeued {
            restart_count: row.restart_count,
        }
    } else {
        NodeFailOutcome::Failed
    })
}

/// A reclaimed run ([`job_reclaim_in_tx`]) and when its node's instance goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReclaimRow {
    /// The job.
    pub job_id: i64,
    /// Its reclaimed run.
    pub run: i32,
    /// Seconds until the instance's interruption time by the database's clock, rounded
    /// down, at least 0.
    pub seconds: i64,
}

/// Of the runs `(job_ids[i], runs[i])`, those reclaimed, with the seconds left until
/// their instance's interruption time (at least 0).
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(ex), err)]
pub async fn job_reclaim_times(
    ex: impl PgExecutor<'_>,
    job_ids: &[i64],
    runs: &[i32],
) -> Result<Vec<ReclaimRow>, DbError> {
    Ok(sqlx::query_as!(
        ReclaimRow,
        r#"SELECT e.job_id, e.run,
                  GREATEST(0, FLOOR(EXTRACT(EPOCH FROM
                      (e.detail->>'time')::timestamptz - now())))::bigint AS "seconds!"
           FROM job_events e
           JOIN UNNEST($1::bigint[], $2::int[]) AS r(job_id, run)
             ON r.job_id = e.job_id AND r.run = e.run
           WHERE e.kind = 'reclaimed'
           ORDER BY e.job_id, e.run"#,
        job_ids,
        runs
    )
    .fetch_all(ex)
    .await?)
}

/// Ends a job whose run `run` is stuck in COMPLETING (its node never reported the
/// processes gone within the bound): a job still COMPLETING in that run becomes FAILED
/// with `reason`; a job that already ended keeps its state. Records a `stuck_resolved`
/// event. Returns true when the job's state changed.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn), err)]
pub async fn job_stuck_resolve_in_tx(
    conn: &mut PgConnection,
    id: i64,
    run: i32,
    node: &str,
    reason: &str,
) -> Result<bool, DbError> {
    let changed = sqlx::query!(
        r#"UPDATE jobs SET state = 'FAILED', reason = $3, end_time = COALESCE(end_time, now())
           WHERE id = $1 AND restart_count = $2 AND state = 'COMPLETING'"#,
        id,
        run,
        reason
    )
    .execute(&mut *conn)
    .await?
    .rows_affected()
        == 1;
    job_event_insert(
        &mut *conn,
        id,
        "stuck_resolved",
        run,
        Some(node),
        serde_json::json!({ "reason": reason }),
    )
    .await?;
    Ok(changed)
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

/// Preempts run `run` of RUNNING job `id` for pending job `preemptor`: with `REQUEUE` the
/// job goes back to PENDING in run `run + 1` (its `restart_count`), with `CANCEL` it ends
/// PREEMPTED. Either way an event `preempted` records the preemptor, the mode and the
/// grace (seconds from SIGTERM to the kill); the run's allocation stays live until its
/// node reports the processes gone. Returns the row after the change, or `None` when the
/// job is no longer RUNNING in that run (ended or requeued meanwhile).
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn), err)]
pub async fn job_preempt_in_tx(
    conn: &mut PgConnection,
    id: i64,
    run: i32,
    preemptor: i64,
    mode: &str,
    grace_time: i64,
) -> Result<Option<JobRow>, DbError> {
    let reason = format!("preempted by job {preemptor}");
    let row = sqlx::query_as!(
        JobRow,
        r#"UPDATE jobs SET
              state = CASE WHEN $3 = 'REQUEUE' THEN 'PENDING' ELSE 'PREEMPTED' END,
              restart_count = CASE WHEN $3 = 'REQUEUE' THEN restart_count + 1 ELSE restart_count END,
              start_time = CASE WHEN $3 = 'REQUEUE' THEN NULL ELSE start_time END,
              end_time = CASE WHEN $3 = 'REQUEUE' THEN NULL ELSE now() END,
              expected_start = NULL,
              reason = $4
           WHERE id = $1 AND restart_count = $2 AND state = 'RUNNING'
           RETURNING *"#,
        id,
        run,
        mode,
        reason
    )
    .fetch_optional(&mut *conn)
    .await?;
    if row.is_some() {
        job_event_insert(
            &mut *conn,
            id,
            "preempted",
            run,
            None,
            serde_json::json!({ "preemptor": preemptor, "mode": mode, "grace_time": grace_time }),
        )
        .await?;
    }
    Ok(row)
}

/// The row of task `task` of array `master` once it has one of its own (started, or
/// split off to be cancelled), the master row included when it has become that task.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn job_array_task_get(
    ex: impl PgExecutor<'_>,
    master: i64,
    task: i32,
) -> Result<Option<i64>, DbError> {
    Ok(sqlx::query_scalar!(
        r#"SELECT id FROM jobs
           WHERE (array_job_id = $1 OR id = $1) AND array_task_id = $2
           ORDER BY id LIMIT 1"#,
        master,
        task
    )
    .fetch_optional(ex)
    .await?)
}

/// The ids of array `master`'s jobs: the master row and every task that has a row of its
/// own, by ascending id (just `master` when it is no array, nothing when it does not
/// exist).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn job_array_member_ids(
    ex: impl PgExecutor<'_>,
    master: i64,
) -> Result<Vec<i64>, DbError> {
    Ok(sqlx::query_scalar!(
        r#"SELECT id FROM jobs WHERE id = $1 OR array_job_id = $1 ORDER BY id"#,
        master
    )
    .fetch_all(ex)
    .await?)
}

/// The ids of the jobs that ended (any ended state) at or after `since`, by ascending id,
/// at most `limit`: the ended jobs slurmctld still shows (Slurm's `MinJobAge`). Read along
/// the `jobs_ended` index.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn job_ended_since_ids(
    ex: impl PgExecutor<'_>,
    since: DateTime<Utc>,
    limit: i64,
) -> Result<Vec<i64>, DbError> {
    Ok(sqlx::query_scalar!(
        r#"SELECT id FROM jobs
           WHERE end_time >= $1
             AND state NOT IN ('PENDING', 'RUNNING', 'SUSPENDED', 'COMPLETING')
           ORDER BY id LIMIT $2"#,
        since,
        limit
    )
    .fetch_all(ex)
    .await?)
}

/// Slurm's `kill_invalid_depend`: cancels the pending jobs `ids` whose dependency can
/// never be satisfied (state CANCELLED, reason `DependencyNeverSatisfied`, a `cancelled`
/// event by the scheduler). Jobs no longer pending are left alone. Returns the ids
/// cancelled.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn), err)]
pub async fn job_cancel_invalid_depend_in_tx(
    conn: &mut PgConnection,
    ids: &[i64],
) -> Result<Vec<i64>, DbError> {
    let cancelled = sqlx::query!(
        r#"UPDATE jobs SET state = 'CANCELLED', end_time = now(),
                  reason = 'DependencyNeverSatisfied', expected_start = NULL
           WHERE id = ANY($1) AND state = 'PENDING'
           RETURNING id, restart_count"#,
        ids
    )
    .fetch_all(&mut *conn)
    .await?;
    for row in &cancelled {
        job_event_insert(
            &mut *conn,
            row.id,
            "cancelled",
            row.restart_count,
            None,
            serde_json::json!({ "by": "scheduler", "reason": "DependencyNeverSatisfied" }),
        )
        .await?;
    }
    Ok(cancelled.into_iter().map(|r| r.id).collect())
}
