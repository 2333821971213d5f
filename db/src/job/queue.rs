//! The live queue as squeue and the planner read it: queue rows with their allocations
//! and pending reasons, the live job count, queue positions.

#[allow(unused_imports)]
use super::*;

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
