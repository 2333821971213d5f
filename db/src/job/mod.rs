//! The `jobs` table and its `job_events`.

use crate::DbError;
use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgExecutor};
use tracing::instrument;

mod failure;
mod lifecycle;
mod pending;
mod queue;

pub use failure::*;
pub use lifecycle::*;
pub use pending::*;
pub use queue::*;

/// A job as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
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
/// The statement holds only the conditions `filter` sets, so that PostgreSQL plans each
/// along its best index: without states, one walk of the primary key (or of `(user_name,
/// id)` for one user's jobs); with states, one branch per state, each naming its state
/// as a literal (PostgreSQL's statistics then tell a rare state from a common one, which
/// a state passed as a parameter hides: 1.2 s instead of milliseconds for the running
/// jobs among a million ended ones), merged by id. States are stored names (`RUNNING`);
/// others match nothing.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn job_list(ex: impl PgExecutor<'_>, filter: &JobFilter) -> Result<Vec<JobRow>, DbError> {
    use berth_core::state::JobState;
    let mut q = sqlx::QueryBuilder::<sqlx::Postgres>::new("");
    let conditions = |q: &mut sqlx::QueryBuilder<'_, sqlx::Postgres>| {
        q.push(" id > ").push_bind(filter.after_id);
        if let Some(user) = &filter.user_name {
            q.push(" AND user_name = ").push_bind(user.clone());
        }
        if let Some(partition) = &filter.partition {
            q.push(" AND (partition = ")
                .push_bind(partition.clone())
                .push(" OR ")
                .push_bind(partition.clone())
                .push(" = ANY(partitions))");
        }
        if let Some(name) = &filter.name {
            q.push(" AND name = ").push_bind(name.clone());
        }
        if let Some(viewer) = &filter.viewer {
            q.push(" AND (user_name = ")
                .push_bind(viewer.clone())
                .push(" OR account = ANY(")
                .push_bind(filter.viewer_accounts.clone())
                .push("))");
        }
        if let Some(accounts) = &filter.accounts {
            q.push(" AND account = ANY(")
                .push_bind(accounts.clone())
                .push(")");
        }
        if let Some(qos) = &filter.qos {
            q.push(" AND qos = ANY(").push_bind(qos.clone()).push(")");
        }
        q.push(" ORDER BY id LIMIT ").push_bind(filter.limit);
    };
    match filter.states.as_deref() {
        None => {
            q.push("SELECT * FROM jobs WHERE");
            conditions(&mut q);
        }
        Some(states) => {
            // Literals from Berth's own list of states only, never the caller's text.
            let mut states: Vec<&'static str> = states
                .iter()
                .filter_map(|s| {
                    JobState::ALL
                        .iter()
                        .map(|st| st.as_str())
                        .find(|st| st == s)
                })
                .collect();
            states.sort_unstable();
            states.dedup();
            if states.is_empty() {
                return Ok(Vec::new());
            }
            q.push("SELECT * FROM (");
            for (i, state) in states.iter().enumerate() {
                if i > 0 {
                    q.push(" UNION ALL ");
                }
                q.push("(SELECT * FROM jobs WHERE state = '")
                    .push(state)
                    .push("' AND");
                conditions(&mut q);
                q.push(")");
            }
            q.push(") AS j ORDER BY id LIMIT ").push_bind(filter.limit);
        }
    }
    Ok(q.build_query_as::<JobRow>().fetch_all(ex).await?)
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
