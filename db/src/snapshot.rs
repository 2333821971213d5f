//! What the scheduler's leader reads to keep its in-memory snapshot current: every row it
//! needs at first, then only the rows changed since its previous read.
//!
//! Change tracking (migration `20261130012001_change_tracking`): `jobs`, `nodes`, `gpus`,
//! `allocations` and `job_preemptions` rows carry `change_xid`, the 64-bit id of the last
//! transaction that changed something the scheduler reads in them (not a pending job's
//! reason, expected start or priority, nor heartbeats and GPU samples). A read runs in one
//! `REPEATABLE READ READ ONLY` transaction ([`read_begin`]) and records its
//! `pg_current_snapshot()`; the next read asks for the rows whose `change_xid` that
//! snapshot could not see — those committed since, including by transactions that were
//! already running then. Small tables are re-read whole when their mark in
//! `change_marks` moved ([`read_changed_tables`]); a deletion from a tracked table marks
//! `deleted`, on which the reader starts over.

use crate::DbError;
use chrono::{DateTime, Utc};
use sqlx::{PgConnection, Postgres, Transaction};

/// Opens the read: a `REPEATABLE READ READ ONLY` transaction (every query in it sees the
/// same committed state) and its snapshot in PostgreSQL's text form (`xmin:xmax:xip,…`),
/// to pass as `since` to the next read's `_changed` queries.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn read_begin(
    pool: &crate::Pool,
) -> Result<(Transaction<'static, Postgres>, String), DbError> {
    let mut tx = crate::begin(pool).await?;
    sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        .execute(&mut *tx)
        .await?;
    let snapshot = sqlx::query_scalar!(r#"SELECT pg_current_snapshot()::text AS "s!""#)
        .fetch_one(&mut *tx)
        .await?;
    Ok((tx, snapshot))
}

/// A snapshot that saw no transaction: the `_changed` queries return every row with it.
pub const SINCE_EVER: &str = "1:1:";

/// Which PostgreSQL server a read ran on, as far as transaction ids are concerned.
/// Transaction ids (and so the `since` snapshots) only mean something on the server that
/// assigned them: a promoted standby hands out again ids its old primary had already used
/// for changes the standby never received, and a server restored from a backup, or a
/// different cluster, has ids of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerIdentity {
    /// `pg_control_system().system_identifier`: the cluster (a streaming standby has its
    /// primary's).
    pub system_identifier: i64,
    /// The timeline the server writes on (a promotion or a point-in-time recovery starts
    /// a new one): the current WAL file's, or the last checkpoint's during recovery.
    pub timeline: i64,
    /// `pg_postmaster_start_time()`: a restart (after which transactions that were never
    /// flushed, `synchronous_commit = off`, are lost and their ids may be used again).
    pub started: DateTime<Utc>,
}

/// The server the connection is on ([`ServerIdentity`]).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn read_server_identity(conn: &mut PgConnection) -> Result<ServerIdentity, DbError> {
    Ok(sqlx::query_as!(
        ServerIdentity,
        r#"SELECT (SELECT system_identifier FROM pg_control_system()) AS "system_identifier!",
                  CASE WHEN pg_is_in_recovery()
                       THEN (SELECT timeline_id FROM pg_control_checkpoint())::bigint
                       ELSE ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint
                  END AS "timeline!",
                  pg_postmaster_start_time() AS "started!""#
    )
    .fetch_one(conn)
    .await?)
}

/// The small tables whose mark moved since the snapshot `since` (of `partitions`, `qos`,
/// `accounts`, `users`, `usage`, and `deleted` when a row was deleted from a tracked
/// table).
///
/// # Errors
/// [`DbError`] from the driver (a malformed `since` is a [`DbError::Sqlx`]).
pub async fn read_changed_tables(
    conn: &mut PgConnection,
    since: &str,
) -> Result<Vec<String>, DbError> {
    Ok(sqlx::query_scalar!(
        r#"SELECT table_name FROM change_marks
           WHERE NOT pg_visible_in_snapshot(change_xid::text::xid8, $1::text::pg_snapshot)"#,
        since
    )
    .fetch_all(conn)
    .await?)
}

/// A job as the scheduler reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct SchedJobRow {
    /// Id.
    pub id: i64,
    /// Name (for `singleton`).
    pub name: String,
    /// User.
    pub user_name: String,
    /// Account as submitted.
    pub account: Option<String>,
    /// Partition.
    pub partition: String,
    /// QOS as submitted.
    pub qos: Option<String>,
    /// State (Slurm's long name).
    pub state: String,
    /// Held.
    pub hold: bool,
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
    /// Every GPU of each node.
    pub whole_node: bool,
    /// Time limit, seconds.
    pub time_limit: Option<i64>,
    /// `--constraint` (from the spec).
    pub constraint: Option<String>,
    /// `--reservation` (from the spec).
    pub reservation: Option<String>,
    /// `--hint` (from the spec), verbatim.
    pub hint: Option<String>,
    /// What its GPU count is of: `gpu` (whole GPUs or MIG instances) or `shard`.
    pub gres: String,
    /// Array master id (a task row).
    pub array_job_id: Option<i64>,
    /// Array task index.
    pub array_task_id: Option<i32>,
    /// The current run.
    pub restart_count: i32,
    /// Submitted.
    pub submit_time: DateTime<Utc>,
    /// The current run's start.
    pub start_time: Option<DateTime<Utc>>,
    /// `--nice`.
    pub nice: i32,
    /// Administrator's priority adjustment.
    pub priority_adjust: i64,
    /// `--begin`.
    pub begin_time: Option<DateTime<Utc>>,
    /// `--dependency`, verbatim.
    pub dependency: Option<String>,
    /// Array master: task indices not started yet.
    pub array_pending: Option<String>,
    /// Array `%LIMIT`.
    pub array_max_running: Option<i32>,
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
}

/// Every job the scheduler keeps: PENDING (held ones too), RUNNING, SUSPENDED and
/// COMPLETING.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn read_jobs_all(conn: &mut PgConnection) -> Result<Vec<SchedJobRow>, DbError> {
    Ok(sqlx::query_as!(
        SchedJobRow,
        r#"SELECT id, name, user_name, account, partition, qos, state, hold, num_nodes, num_tasks,
                  cpus_per_task, gpus_per_node, gpu_type, exclusive, whole_node, time_limit,
                  spec->>'constraint' AS constraint, spec->>'reservation' AS reservation,
                  spec->>'hint' AS hint, gres, array_job_id, array_task_id,
                  restart_count, submit_time, start_time, nice, priority_adjust, begin_time,
                  dependency, array_pending, array_max_running, cpus_per_node, mem_per_node_mib,
                  nodelist, exclude, partitions, time_min
           FROM jobs WHERE state IN ('PENDING', 'RUNNING', 'SUSPENDED', 'COMPLETING')"#
    )
    .fetch_all(conn)
    .await?)
}

/// One job as the scheduler reads it, by id, whatever its state. The api's will-run test
/// (`sbatch --test-only`) reads the job it has just inserted, in the transaction it then
/// rolls back.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn read_job(conn: &mut PgConnection, id: i64) -> Result<Option<SchedJobRow>, DbError> {
    Ok(sqlx::query_as!(
        SchedJobRow,
        r#"SELECT id, name, user_name, account, partition, qos, state, hold, num_nodes, num_tasks,
                  cpus_per_task, gpus_per_node, gpu_type, exclusive, whole_node, time_limit,
                  spec->>'constraint' AS constraint, spec->>'reservation' AS reservation,
                  spec->>'hint' AS hint, gres, array_job_id, array_task_id,
                  restart_count, submit_time, start_time, nice, priority_adjust, begin_time,
                  dependency, array_pending, array_max_running, cpus_per_node, mem_per_node_mib,
                  nodelist, exclude, partitions, time_min
           FROM jobs WHERE id = $1"#,
        id
    )
    .fetch_optional(conn)
    .await?)
}

/// Every job changed since the snapshot `since`, in any state.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn read_jobs_changed(
    conn: &mut PgConnection,
    since: &str,
) -> Result<Vec<SchedJobRow>, DbError> {
    Ok(sqlx::query_as!(
        SchedJobRow,
        r#"SELECT id, name, user_name, account, partition, qos, state, hold, num_nodes, num_tasks,
                  cpus_per_task, gpus_per_node, gpu_type, exclusive, whole_node, time_limit,
                  spec->>'constraint' AS constraint, spec->>'reservation' AS reservation,
                  spec->>'hint' AS hint, gres, array_job_id, array_task_id,
                  restart_count, submit_time, start_time, nice, priority_adjust, begin_time,
                  dependency, array_pending, array_max_running, cpus_per_node, mem_per_node_mib,
                  nodelist, exclude, partitions, time_min
           FROM jobs
           WHERE change_xid >= pg_snapshot_xmin($1::text::pg_snapshot)::text::bigint
             AND NOT pg_visible_in_snapshot(change_xid::text::xid8, $1::text::pg_snapshot)"#,
        since
    )
    .fetch_all(conn)
    .await?)
}

/// A node as the scheduler reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct SchedNodeRow {
    /// Id.
    pub id: i64,
    /// Name.
    pub name: String,
    /// Administrative or failure state (`UP` = available).
    pub state: String,
    /// Features.
    pub features: Vec<String>,
    /// CPUs jobs may use (CPUs less CoreSpecCount).
    pub usable_cpus: i32,
    /// Memory jobs may use, MiB (RealMemory less MemSpecLimit).
    pub usable_memory_mib: i64,
    /// Slurm's Weight: lower weights are placed first.
    pub weight: i32,
    /// Per CPU id, the core it is on (empty: not reported).
    pub cpu_cores: Vec<i32>,
    /// Its cloud pool, for a pool's node slot.
    pub pool: Option<String>,
    /// When its instance was requested (a pool node POWERING_UP).
    pub launched_at: Option<DateTime<Utc>>,
}

/// Every node changed since the snapshot `since` (every node with [`SINCE_EVER`]).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn read_nodes_changed(
    conn: &mut PgConnection,
    since: &str,
) -> Result<Vec<SchedNodeRow>, DbError> {
    Ok(sqlx::query_as!(
        SchedNodeRow,
        r#"SELECT id, name, state, features, usable_cpus, usable_memory_mib, weight, cpu_cores,
                  pool, launched_at
           FROM nodes
           WHERE change_xid >= pg_snapshot_xmin($1::text::pg_snapshot)::text::bigint
             AND NOT pg_visible_in_snapshot(change_xid::text::xid8, $1::text::pg_snapshot)"#,
        since
    )
    .fetch_all(conn)
    .await?)
}

/// A GPU as the scheduler reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct SchedGpuRow {
    /// Its node.
    pub node_id: i64,
    /// Index on the node.
    pub index: i32,
    /// Model name.
    pub model: String,
    /// Topology domain.
    pub domain: Option<i32>,
    /// `gpu`, `mig` or `shard`.
    pub kind: String,
    /// The physical GPU of a MIG instance or shard.
    pub parent: Option<i32>,
    /// The node still reports it.
    pub present: bool,
}

/// Every GPU changed since the snapshot `since` (every GPU, present or not, with
/// [`SINCE_EVER`]).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn read_gpus_changed(
    conn: &mut PgConnection,
    since: &str,
) -> Result<Vec<SchedGpuRow>, DbError> {
    Ok(sqlx::query_as!(
        SchedGpuRow,
        r#"SELECT node_id, index, model, domain, kind, parent, present FROM gpus
           WHERE change_xid >= pg_snapshot_xmin($1::text::pg_snapshot)::text::bigint
             AND NOT pg_visible_in_snapshot(change_xid::text::xid8, $1::text::pg_snapshot)"#,
        since
    )
    .fetch_all(conn)
    .await?)
}

/// An allocation as the scheduler reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct SchedAllocationRow {
    /// Id.
    pub id: i64,
    /// The job.
    pub job_id: i64,
    /// The job's run it belongs to.
    pub run: i32,
    /// The node.
    pub node_id: i64,
    /// GPU indices held.
    pub gpu_indices: Vec<i32>,
    /// Logical CPU ids held (empty: not placed by CPU).
    pub cpu_ids: Vec<i32>,
    /// Memory held, MiB (0: not placed by memory).
    pub mem_mib: i64,
    /// The node is held whole.
    pub exclusive: bool,
    /// When it was made (the run's start on this node).
    pub created_at: DateTime<Utc>,
    /// Released (the run's processes are gone from the node).
    pub released: bool,
    /// The job's time limit now, seconds.
    pub time_limit: Option<i64>,
}

/// Every live allocation.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn read_allocations_all(
    conn: &mut PgConnection,
) -> Result<Vec<SchedAllocationRow>, DbError> {
    Ok(sqlx::query_as!(
        SchedAllocationRow,
        r#"SELECT a.id, a.job_id, a.run, a.node_id, a.gpu_indices, a.cpu_ids, a.mem_mib,
                  a.exclusive, a.created_at,
                  false AS "released!", j.time_limit
           FROM allocations a JOIN jobs j ON j.id = a.job_id
           WHERE a.released_at IS NULL"#
    )
    .fetch_all(conn)
    .await?)
}

/// Every allocation changed since the snapshot `since`, released or not.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn read_allocations_changed(
    conn: &mut PgConnection,
    since: &str,
) -> Result<Vec<SchedAllocationRow>, DbError> {
    Ok(sqlx::query_as!(
        SchedAllocationRow,
        r#"SELECT a.id, a.job_id, a.run, a.node_id, a.gpu_indices, a.cpu_ids, a.mem_mib,
                  a.exclusive, a.created_at,
                  a.released_at IS NOT NULL AS "released!", j.time_limit
           FROM allocations a JOIN jobs j ON j.id = a.job_id
           WHERE a.change_xid >= pg_snapshot_xmin($1::text::pg_snapshot)::text::bigint
             AND NOT pg_visible_in_snapshot(a.change_xid::text::xid8, $1::text::pg_snapshot)"#,
        since
    )
    .fetch_all(conn)
    .await?)
}

/// A preemption as the scheduler reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct SchedPreemptionRow {
    /// The victim.
    pub job_id: i64,
    /// The victim's run.
    pub run: i32,
    /// The job it makes room for.
    pub preemptor: i64,
    /// When the victim's grace time ends.
    pub kill_at: DateTime<Utc>,
    /// The victim's processes are gone.
    pub done: bool,
}

/// Every preemption not done.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn read_preemptions_all(
    conn: &mut PgConnection,
) -> Result<Vec<SchedPreemptionRow>, DbError> {
    Ok(sqlx::query_as!(
        SchedPreemptionRow,
        r#"SELECT job_id, run, preemptor, kill_at, false AS "done!"
           FROM job_preemptions WHERE done_at IS NULL"#
    )
    .fetch_all(conn)
    .await?)
}

/// Every preemption changed since the snapshot `since`, done or not.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn read_preemptions_changed(
    conn: &mut PgConnection,
    since: &str,
) -> Result<Vec<SchedPreemptionRow>, DbError> {
    Ok(sqlx::query_as!(
        SchedPreemptionRow,
        r#"SELECT job_id, run, preemptor, kill_at, done_at IS NOT NULL AS "done!"
           FROM job_preemptions
           WHERE change_xid >= pg_snapshot_xmin($1::text::pg_snapshot)::text::bigint
             AND NOT pg_visible_in_snapshot(change_xid::text::xid8, $1::text::pg_snapshot)"#,
        since
    )
    .fetch_all(conn)
    .await?)
}
