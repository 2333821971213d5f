//! The `allocations` table (one row per job run and node), `allocation_gpus` (one row
//! per GPU held) and `allocation_cpus` (one row per logical CPU held), each with the
//! partial unique index that forbids double allocation.

use crate::DbError;
use sqlx::{PgConnection, PgExecutor};
use tracing::instrument;

/// An allocation with its node's name, for job views.
#[derive(Debug, Clone)]
pub struct JobAllocationRow {
    /// The job.
    pub job_id: i64,
    /// The node's name.
    pub node_name: String,
    /// Position in the job's node list.
    pub node_index: i32,
    /// GPU indices.
    pub gpu_indices: Vec<i32>,
    /// Logical CPU ids held there (empty: not placed by CPU).
    pub cpu_ids: Vec<i32>,
    /// Memory held there, MiB (0: not placed by memory).
    pub mem_mib: i64,
}

/// One node's share of a job run, to be written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllocationInsert<'a> {
    /// The job.
    pub job_id: i64,
    /// The run (the job's restart count).
    pub run: i32,
    /// The node.
    pub node_id: i64,
    /// Position of the node in the job's node list (0 runs the batch script).
    pub node_index: i32,
    /// GPU indices held.
    pub gpu_indices: &'a [i32],
    /// Logical CPU ids held (empty: not placed by CPU).
    pub cpu_ids: &'a [i32],
    /// Memory held, MiB (0: not placed by memory).
    pub mem_mib: i64,
    /// The node is held whole (`--exclusive`).
    pub exclusive: bool,
    /// The leader term that makes it (0: taken back from a node's report).
    pub term: i64,
}

/// Writes an allocation and claims its GPUs and CPUs. Fails with [`DbError::Conflict`] on
/// `allocation_gpus_one_live_holder` (or `allocation_cpus_one_live_holder`) when a GPU
/// (or a CPU) is already held by a live allocation on the node.
///
/// # Errors
/// [`DbError::Conflict`] as above; [`DbError::ForeignKey`] for a GPU the node does not
/// have; [`DbError::Check`] for a negative CPU id or memory.
#[instrument(skip(conn), err)]
pub async fn allocation_insert_in_tx(
    conn: &mut PgConnection,
    a: &AllocationInsert<'_>,
) -> Result<i64, DbError> {
    let id = sqlx::query_scalar!(
        r#"INSERT INTO allocations (job_id, run, node_id, node_index, gpu_indices, cpu_ids,
                                    mem_mib, exclusive, term)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id"#,
        a.job_id,
        a.run,
        a.node_id,
        a.node_index,
        a.gpu_indices,
        a.cpu_ids,
        a.mem_mib,
        a.exclusive,
        a.term
    )
    .fetch_one(&mut *conn)
    .await?;
    sqlx::query!(
        r#"INSERT INTO allocation_gpus (allocation_id, node_id, gpu_index)
           SELECT $1, $2, g FROM UNNEST($3::int[]) AS g"#,
        id,
        a.node_id,
        a.gpu_indices
    )
    .execute(&mut *conn)
    .await?;
    sqlx::query!(
        r#"INSERT INTO allocation_cpus (allocation_id, node_id, cpu_id)
           SELECT $1, $2, c FROM UNNEST($3::int[]) AS c"#,
        id,
        a.node_id,
        a.cpu_ids
    )
    .execute(&mut *conn)
    .await?;
    Ok(id)
}

/// What a node can still give: its CPUs and memory (capacity) and what its live
/// allocations hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeHoldingsRow {
    /// CPUs jobs may be given (logical ids `0 .. cpus`); 0: not counted.
    pub cpus: i32,
    /// Memory jobs may be given, MiB; 0: not counted.
    pub memory_mib: i64,
    /// CPU ids held by live allocations, ascending.
    pub held_cpu_ids: Vec<i32>,
    /// Memory held by live allocations, MiB.
    pub held_mem_mib: i64,
    /// Per CPU id, its topology domain (empty: not reported).
    pub cpu_domains: Vec<i32>,
    /// Per CPU id, the core it is on (empty: not reported).
    pub cpu_cores: Vec<i32>,
    /// The topology domains of the GPUs asked about (those that report one).
    pub gpu_domains: Vec<i32>,
}

/// Node `node_id`'s capacity and live holdings, as the scheduler's commit re-checks a
/// placement under the node's row lock (allocations written earlier in the same
/// transaction count). The capacity is the node's usable CPUs and memory; with it the
/// node's CPU domains and those of its GPUs `gpus` (indices). `None` for an unknown
/// node.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn allocation_node_holdings_in_tx(
    conn: &mut PgConnection,
    node_id: i64,
    gpus: &[i32],
) -> Result<Option<NodeHoldingsRow>, DbError> {
    Ok(sqlx::query_as!(
        NodeHoldingsRow,
        r#"SELECT n.usable_cpus AS cpus, n.usable_memory_mib AS memory_mib,
                  ARRAY(SELECT c.cpu_id FROM allocation_cpus c
                        WHERE c.node_id = n.id AND c.released_at IS NULL
                        ORDER BY c.cpu_id) AS "held_cpu_ids!",
                  (SELECT COALESCE(SUM(a.mem_mib), 0) FROM allocations a
                   WHERE a.node_id = n.id AND a.released_at IS NULL)::bigint AS "held_mem_mib!",
                  n.cpu_domains, n.cpu_cores,
                  ARRAY(SELECT DISTINCT g.domain FROM gpus g
                        WHERE g.node_id = n.id AND g.index = ANY($2) AND g.domain IS NOT NULL
                        ORDER BY g.domain) AS "gpu_domains!: Vec<i32>"
           FROM nodes n WHERE n.id = $1"#,
        node_id,
        gpus
    )
    .fetch_optional(&mut *conn)
    .await?)
}

/// The allocations of the given jobs' current runs, by job then node index.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn allocation_list_for_jobs(
    ex: impl PgExecutor<'_>,
    job_ids: &[i64],
) -> Result<Vec<JobAllocationRow>, DbError> {
    Ok(sqlx::query_as!(
        JobAllocationRow,
        r#"SELECT a.job_id, n.name AS node_name, a.node_index, a.gpu_indices, a.cpu_ids,
                  a.mem_mib
           FROM allocations a
           JOIN jobs j ON j.id = a.job_id AND j.restart_count = a.run
           JOIN nodes n ON n.id = a.node_id
           WHERE a.job_id = ANY($1)
           ORDER BY a.job_id, a.node_index"#,
        job_ids
    )
    .fetch_all(ex)
    .await?)
}

/// Releases every live allocation of a job run and its GPUs and CPUs. Returns the ids of the nodes
/// released.
///
/// `released_at` is the later of this transaction's start (`now()`) and the allocation's
/// `created_at`: a transaction that began before a concurrent one created the allocation
/// (and committed first) still releases it without breaking `released_at >= created_at`.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn), err)]
pub async fn allocation_release_job_in_tx(
    conn: &mut PgConnection,
    job_id: i64,
    run: i32,
) -> Result<Vec<i64>, DbError> {
    let nodes = sqlx::query_scalar!(
        r#"UPDATE allocations SET released_at = GREATEST(now(), created_at)
           WHERE job_id = $1 AND run = $2 AND released_at IS NULL
           RETURNING node_id"#,
        job_id,
        run
    )
    .fetch_all(&mut *conn)
    .await?;
    sqlx::query!(
        r#"UPDATE allocation_gpus SET released_at = now()
           WHERE released_at IS NULL AND allocation_id IN
                 (SELECT id FROM allocations WHERE job_id = $1 AND run = $2)"#,
        job_id,
        run
    )
    .execute(&mut *conn)
    .await?;
    sqlx::query!(
        r#"UPDATE allocation_cpus SET released_at = now()
           WHERE released_at IS NULL AND allocation_id IN
                 (SELECT id FROM allocations WHERE job_id = $1 AND run = $2)"#,
        job_id,
        run
    )
    .execute(&mut *conn)
    .await?;
    Ok(nodes)
}

/// A node's share of one job run, as the node protocol checks reports against it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOnNodeRow {
    /// Position of the node in the job's node list (0 runs the batch script).
    pub node_index: i32,
    /// GPU indices held there.
    pub gpu_indices: Vec<i32>,
    /// Logical CPU ids held there (empty: not placed by CPU).
    pub cpu_ids: Vec<i32>,
    /// Memory held there, MiB (0: not placed by memory).
    pub mem_mib: i64,
    /// Whether the allocation is still live (not released).
    pub live: bool,
}

/// Node `node_id`'s allocation of job run (`job_id`, `run`), live or released: whether
/// that run was ever placed there.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn allocation_run_on_node(
    ex: impl PgExecutor<'_>,
    job_id: i64,
    run: i32,
    node_id: i64,
) -> Result<Option<RunOnNodeRow>, DbError> {
    Ok(sqlx::query_as!(
        RunOnNodeRow,
        r#"SELECT node_index, gpu_indices, cpu_ids, mem_mib, released_at IS NULL AS "live!"
           FROM allocations WHERE job_id = $1 AND run = $2 AND node_id = $3"#,
        job_id,
        run,
        node_id
    )
    .fetch_optional(ex)
    .await?)
}

/// The node that runs (or ran) the batch script of job run (`job_id`, `run`): the one
/// holding its node-index-0 allocation, live or released (none when the run was never
/// placed).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn allocation_batch_nodes_of_run(
    ex: impl PgExecutor<'_>,
    job_id: i64,
    run: i32,
) -> Result<Vec<String>, DbError> {
    Ok(sqlx::query_scalar!(
        r#"SELECT n.name FROM allocations a JOIN nodes n ON n.id = a.node_id
           WHERE a.job_id = $1 AND a.run = $2 AND a.node_index = 0
           ORDER BY n.name"#,
        job_id,
        run
    )
    .fetch_all(ex)
    .await?)
}

/// A batch script a node must be running: a RUNNING job whose current run has a live
/// allocation with node index 0 on the node.
#[derive(Debug, Clone)]
pub struct NodeAssignmentRow {
    /// The job id.
    pub job_id: i64,
    /// The run.
    pub run: i32,
    /// GPU indices on this node.
    pub gpu_indices: Vec<i32>,
    /// Logical CPU ids on this node (empty: not placed by CPU).
    pub cpu_ids: Vec<i32>,
    /// Memory on this node, MiB (0: not placed by memory).
    pub mem_mib: i64,
    /// Whether the allocation holds the node exclusively.
    pub exclusive: bool,
    /// Every node of the allocation, by node index.
    pub node_names: Vec<String>,
    /// The job's incarnation.
    pub incarnation: uuid::Uuid,
}

/// The batch scripts node `node_id` must be running.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn allocation_batch_list_for_node(
    ex: impl PgExecutor<'_>,
    node_id: i64,
) -> Result<Vec<NodeAssignmentRow>, DbError> {
    Ok(sqlx::query_as!(
        NodeAssignmentRow,
        r#"SELECT a.job_id, a.run, a.gpu_indices, a.cpu_ids, a.mem_mib, a.exclusive,
                  ARRAY(SELECT n.name FROM allocations b JOIN nodes n ON n.id = b.node_id
                        WHERE b.job_id = a.job_id AND b.run = a.run
                        ORDER BY b.node_index) AS "node_names!", j.incarnation
           FROM allocations a JOIN jobs j ON j.id = a.job_id AND j.restart_count = a.run
           WHERE a.node_id = $1 AND a.node_index = 0 AND a.released_at IS NULL
             AND j.state = 'RUNNING'
           ORDER BY a.job_id"#,
        node_id
    )
    .fetch_all(ex)
    .await?)
}

/// Of the job runs a node says it is running (`job_ids[i]`, `runs[i]`, of incarnation
/// `incarnations[i]`; the nil UUID: unknown), those it must stop: the job is no longer
/// RUNNING in that run, the node holds no live allocation for it, or the job with that id
/// is of another incarnation (a failover handed its id out again).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn allocation_stale_runs_for_node(
    ex: impl PgExecutor<'_>,
    node_id: i64,
    job_ids: &[i64],
    runs: &[i32],
    incarnations: &[uuid::Uuid],
) -> Result<Vec<(i64, i32)>, DbError> {
    let rows = sqlx::query!(
        r#"SELECT r.job_id AS "job_id!", r.run AS "run!"
           FROM UNNEST($2::bigint[], $3::int[], $4::uuid[]) AS r(job_id, run, incarnation)
           WHERE NOT EXISTS (
               SELECT 1 FROM allocations a JOIN jobs j ON j.id = a.job_id
               WHERE a.job_id = r.job_id AND a.run = r.run AND a.node_id = $1
                 AND a.released_at IS NULL AND j.state = 'RUNNING' AND j.restart_count = r.run
                 AND (r.incarnation = '00000000-0000-0000-0000-000000000000'
                      OR j.incarnation = r.incarnation))"#,
        node_id,
        job_ids,
        runs,
        incarnations
    )
    .fetch_all(ex)
    .await?;
    Ok(rows.into_iter().map(|r| (r.job_id, r.run)).collect())
}

/// A job run holding a live allocation, as the node-failure and stuck-job reconcilers
/// see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveRunRow {
    /// The job.
    pub job_id: i64,
    /// The run the allocation belongs to.
    pub run: i32,
    /// The node of the allocation.
    pub node_id: i64,
    /// The job's state now.
    pub job_state: String,
}

/// The job runs holding a live allocation on node `node_id`, by job id.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn allocation_live_runs_on_node(
    ex: impl PgExecutor<'_>,
    node_id: i64,
) -> Result<Vec<LiveRunRow>, DbError> {
    Ok(sqlx::query_as!(
        LiveRunRow,
        r#"SELECT a.job_id, a.run, a.node_id, j.state AS job_state
           FROM allocations a JOIN jobs j ON j.id = a.job_id
           WHERE a.node_id = $1 AND a.released_at IS NULL
           ORDER BY a.job_id"#,
        node_id
    )
    .fetch_all(ex)
    .await?)
}

/// Live allocations of job runs that ended (the job left RUNNING, or moved on to another
/// run) more than `bound_seconds` ago and whose node has not yet reported the processes
/// gone: Slurm's jobs stuck in COMPLETING.
///
/// A run ended when its job did (`end_time`, for the job's current run), or when the job
/// moved past it: its first event of a later run (a requeue) or its node failure or
/// preemption. Not when the allocation was made: a run requeued after hours of work is
/// still in its kill wait, and releasing it then would let the job start again while it
/// runs.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn allocation_stuck_list(
    ex: impl PgExecutor<'_>,
    bound_seconds: f64,
) -> Result<Vec<LiveRunRow>, DbError> {
    Ok(sqlx::query_as!(
        LiveRunRow,
        r#"SELECT a.job_id, a.run, a.node_id, j.state AS job_state
           FROM allocations a JOIN jobs j ON j.id = a.job_id
           WHERE a.released_at IS NULL
             AND (j.state NOT IN ('RUNNING', 'SUSPENDED') OR j.restart_count <> a.run)
             AND COALESCE(
                   CASE WHEN j.restart_count = a.run THEN j.end_time END,
                   (SELECT min(e.at) FROM job_events e
                    WHERE e.job_id = a.job_id
                      AND (e.run > a.run
                           OR (e.run = a.run AND e.kind IN ('node_fail', 'preempted', 'reclaimed')))),
                   a.created_at) < now() - make_interval(secs => $1)
           ORDER BY a.job_id, a.node_id"#,
        bound_seconds
    )
    .fetch_all(ex)
    .await?)
}

/// The names of the nodes with a live allocation of job run (`job_id`, `run`).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn allocation_list_for_run(
    ex: impl PgExecutor<'_>,
    job_id: i64,
    run: i32,
) -> Result<Vec<String>, DbError> {
    Ok(sqlx::query_scalar!(
        r#"SELECT n.name FROM allocations a JOIN nodes n ON n.id = a.node_id
           WHERE a.job_id = $1 AND a.run = $2 AND a.released_at IS NULL
           ORDER BY a.node_index"#,
        job_id,
        run
    )
    .fetch_all(ex)
    .await?)
}

/// Nodes holding at least one live allocation (a job's processes may run there), by id.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn allocation_busy_nodes(ex: impl PgExecutor<'_>) -> Result<Vec<i64>, DbError> {
    Ok(sqlx::query_scalar!(
        r#"SELECT DISTINCT node_id AS "node_id!" FROM allocations WHERE released_at IS NULL"#
    )
    .fetch_all(ex)
    .await?)
}
