//! The `acct_job_runs` table (sacct's job records, one per job run) and its queue
//! `acct_pending`.
//!
//! A record is written once, when the run is over (its job moved on to a later run or
//! ended, and none of its allocations is live), by [`acct_record_pending`], which the
//! scheduler leader calls every cycle. Triggers queue the candidate runs whatever code
//! path ends them (completion, cancel, timeout, node failure, preemption, spot reclaim,
//! `scontrol requeue`), so every ended run is recorded exactly once. The figures come from
//! the SQL function `acct_run_compute(job, run)` (see the migration
//! `20261201120001_acct_job_runs.sql`), which [`acct_job_list`] also uses for runs not
//! recorded yet: pending and running jobs are read live from `jobs`, as Slurm's sacct
//! shows them. Records cascade from `jobs`: purging a job purges its records.

use crate::DbError;
use chrono::{DateTime, Utc};
use sqlx::PgExecutor;
use tracing::instrument;

/// One job run as sacct shows it: a stored record, or a run computed live.
#[derive(Debug, Clone, PartialEq)]
pub struct AcctRunRow {
    /// The job.
    pub job_id: i64,
    /// The run (restart count).
    pub run: i32,
    /// Job name.
    pub name: String,
    /// User.
    pub user_name: String,
    /// Account (the job's, else the user's default, else `root`).
    pub account: String,
    /// Partition.
    pub partition: String,
    /// QOS (`normal` when the job named none).
    pub qos: String,
    /// Array master id (array tasks).
    pub array_job_id: Option<i64>,
    /// Array task index.
    pub array_task_id: Option<i32>,
    /// Array master: task indices not started.
    pub array_pending: Option<String>,
    /// The run's state (Slurm's long name, or `REQUEUED`).
    pub state: String,
    /// Pending or end reason.
    pub reason: Option<String>,
    /// What ended a requeued run.
    pub requeue_reason: Option<String>,
    /// Exit code of the batch script.
    pub exit_code: Option<i32>,
    /// Signal that ended it.
    pub exit_signal: Option<i32>,
    /// Submitted.
    pub submit_time: DateTime<Utc>,
    /// Eligible (submit, or `--begin` when later).
    pub eligible_time: DateTime<Utc>,
    /// Started.
    pub start_time: Option<DateTime<Utc>>,
    /// Ended.
    pub end_time: Option<DateTime<Utc>>,
    /// Seconds from start to end (to now while running).
    pub elapsed: i64,
    /// Time limit, seconds.
    pub time_limit: Option<i64>,
    /// CPUs requested.
    pub req_cpus: i64,
    /// Memory requested over all nodes, MiB.
    pub req_mem_mib: Option<i64>,
    /// GPUs requested over all nodes.
    pub req_gpus: i64,
    /// GPU model requested.
    pub req_gpu_type: Option<String>,
    /// Nodes requested.
    pub req_nodes: i32,
    /// CPUs allocated.
    pub alloc_cpus: i64,
    /// Memory allocated, MiB.
    pub alloc_mem_mib: i64,
    /// GPUs allocated.
    pub alloc_gpus: i64,
    /// GPUs allocated by model (`{"h100": 2}`).
    pub alloc_gpu_models: serde_json::Value,
    /// Nodes allocated.
    pub alloc_nodes: i32,
    /// Node names by node index.
    pub nodes: Vec<String>,
    /// GPU-seconds held.
    pub gpu_seconds: f64,
    /// Average GPU utilisation, %.
    pub gpu_util_avg: Option<f64>,
    /// Peak GPU memory, MiB.
    pub gpu_mem_peak_mib: Option<i64>,
    /// GPU energy, J.
    pub energy_j: Option<f64>,
    /// CPU time, seconds (NULL: not collected).
    pub cpu_time_s: Option<f64>,
    /// Peak RSS, MiB (NULL: not collected).
    pub max_rss_mib: Option<i64>,
    /// Cloud cost.
    pub cost: Option<f64>,
}

/// Records every queued run that is over (up to `limit`), once each, and dequeues it (and
/// any queued run whose job is gone) in the same statement. Returns how many runs it
/// recorded.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(ex), err)]
pub async fn acct_record_pending(ex: impl PgExecutor<'_>, limit: i64) -> Result<u64, DbError> {
    let recorded = sqlx::query_scalar!(
        r#"WITH ready AS (
               SELECT p.job_id, p.run FROM acct_pending p
               JOIN jobs j ON j.id = p.job_id
               WHERE (j.restart_count > p.run
                      OR j.state NOT IN ('PENDING', 'RUNNING', 'SUSPENDED', 'COMPLETING'))
                 AND NOT EXISTS (SELECT 1 FROM allocations a
                                 WHERE a.job_id = p.job_id AND a.run = p.run
                                   AND a.released_at IS NULL)
               ORDER BY p.job_id, p.run
               LIMIT $1
               FOR UPDATE OF p SKIP LOCKED
               FOR SHARE OF j SKIP LOCKED
           ), recorded AS (
               INSERT INTO acct_job_runs
               SELECT c.* FROM ready r
               CROSS JOIN LATERAL acct_run_compute(r.job_id, r.run) c
               ON CONFLICT (job_id, run) DO NOTHING
               RETURNING 1
           ), dequeued AS (
               DELETE FROM acct_pending p
               WHERE EXISTS (SELECT 1 FROM ready r WHERE r.job_id = p.job_id AND r.run = p.run)
                  OR NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = p.job_id)
           )
           SELECT count(*) AS "count!" FROM recorded"#,
        limit
    )
    .fetch_one(ex)
    .await?;
    Ok(u64::try_from(recorded).unwrap_or(0))
}

/// What [`acct_job_list`] selects. Lists are `None` for no filter.
#[derive(Debug, Clone, Default)]
pub struct AcctFilter {
    /// Runs that were in the window from here: ended at or after it (or not ended).
    pub start: Option<DateTime<Utc>>,
    /// Runs that were in the window until here: started (or, not started, submitted) at
    /// or before it.
    pub end: Option<DateTime<Utc>>,
    /// Users.
    pub users: Option<Vec<String>>,
    /// Accounts.
    pub accounts: Option<Vec<String>>,
    /// Partitions.
    pub partitions: Option<Vec<String>>,
    /// States (long names, `REQUEUED` included).
    pub states: Option<Vec<String>>,
    /// QOS.
    pub qos: Option<Vec<String>>,
    /// Node names: runs that held one of them.
    pub nodes: Option<Vec<String>>,
    /// Job ids: the job, or every task of the array with that id.
    pub job_ids: Option<Vec<i64>>,
    /// Array tasks (`5_3`): array ids and task indices, pairwise.
    pub array_tasks: Option<(Vec<i64>, Vec<i32>)>,
    /// Every run of each job (`-D`); else its latest run only.
    pub duplicates: bool,
    /// Resume after this (job id, run).
    pub after: (i64, i32),
    /// At most this many rows.
    pub limit: i64,
    /// Set for a plain user: only their jobs and those of `viewer_accounts`.
    pub viewer: Option<String>,
    /// Accounts whose jobs the viewer may see.
    pub viewer_accounts: Vec<String>,
}

/// Job runs matching `filter`, by job id then run: stored records, and the runs not
/// recorded yet (pending, running, just ended) computed live from `jobs`.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(ex), err)]
pub async fn acct_job_list(
    ex: impl PgExecutor<'_>,
    filter: &AcctFilter,
) -> Result<Vec<AcctRunRow>, DbError> {
    let (task_masters, task_ids) = match &filter.array_tasks {
        Some((m, t)) => (Some(m.as_slice()), Some(t.as_slice())),
        None => (None, None),
    };
    let any_jobs = filter.job_ids.is_some() || filter.array_tasks.is_some();
    Ok(sqlx::query_as!(
        AcctRunRow,
        r#"WITH page AS (
               SELECT x.job_id, x.run, x.recorded FROM (
                   SELECT r.job_id, r.run, true AS recorded
                   FROM acct_job_runs r
                   WHERE ($15 OR NOT r.superseded)
                     AND ($4::timestamptz IS NULL OR r.end_time >= $4)
                     AND ($5::timestamptz IS NULL OR COALESCE(r.start_time, r.submit_time) <= $5)
                     AND ($6::text[] IS NULL OR r.user_name = ANY($6))
                     AND ($7::text[] IS NULL OR r.account = ANY($7))
                     AND ($8::text[] IS NULL OR r.partition = ANY($8))
                     AND ($9::text[] IS NULL OR r.state = ANY($9))
                     AND ($10::text[] IS NULL OR r.qos = ANY($10))
                     AND ($11::text[] IS NULL OR r.nodes && $11)
                     AND (NOT $18 OR r.job_id IN (
                             SELECT s.id FROM jobs s
                             WHERE s.id = ANY($12) OR s.array_job_id = ANY($12)
                                OR (COALESCE(s.array_job_id, s.id), s.array_task_id)
                                   IN (SELECT * FROM UNNEST($13::bigint[], $14::int[]))))
                     AND ($16::text IS NULL OR r.user_name = $16 OR r.account = ANY($17))
                   UNION ALL
                   SELECT j.id, j.restart_count, false
                   FROM jobs j LEFT JOIN users u ON u.name = j.user_name
                   WHERE j.id IN (SELECT id FROM jobs
                                  WHERE state IN ('PENDING', 'RUNNING', 'SUSPENDED', 'COMPLETING')
                                  UNION SELECT job_id FROM acct_pending)
                     AND NOT EXISTS (SELECT 1 FROM acct_job_runs r
                                     WHERE r.job_id = j.id AND r.run = j.restart_count)
                     AND ($4::timestamptz IS NULL OR j.end_time IS NULL OR j.end_time >= $4)
                     AND ($5::timestamptz IS NULL OR COALESCE(j.start_time, j.submit_time) <= $5)
                     AND ($6::text[] IS NULL OR j.user_name = ANY($6))
                     AND ($7::text[] IS NULL OR COALESCE(j.account, u.default_account, 'root') = ANY($7))
                     AND ($8::text[] IS NULL OR j.partition = ANY($8))
                     AND ($9::text[] IS NULL OR j.state = ANY($9))
                     AND ($10::text[] IS NULL OR COALESCE(j.qos, 'normal') = ANY($10))
                     AND ($11::text[] IS NULL OR EXISTS (
                             SELECT 1 FROM allocations a JOIN nodes n ON n.id = a.node_id
                             WHERE a.job_id = j.id AND a.run = j.restart_count
                               AND n.name = ANY($11)))
                     AND (NOT $18 OR j.id = ANY($12) OR j.array_job_id = ANY($12)
                          OR (COALESCE(j.array_job_id, j.id), j.array_task_id)
                             IN (SELECT * FROM UNNEST($13::bigint[], $14::int[])))
                     AND ($16::text IS NULL OR j.user_name = $16 OR j.account = ANY($17))
               ) x
               WHERE (x.job_id, x.run) > ($1, $2)
               ORDER BY x.job_id, x.run
               LIMIT $3
           )
           SELECT c.job_id AS "job_id!", c.run AS "run!", c.name AS "name!",
                  c.user_name AS "user_name!", c.account AS "account!",
                  c.partition AS "partition!", c.qos AS "qos!", c.array_job_id,
                  c.array_task_id, c.array_pending, c.state AS "state!", c.reason,
                  c.requeue_reason, c.exit_code, c.exit_signal,
                  c.submit_time AS "submit_time!", c.eligible_time AS "eligible_time!",
                  c.start_time, c.end_time, c.elapsed AS "elapsed!", c.time_limit,
                  c.req_cpus AS "req_cpus!", c.req_mem_mib, c.req_gpus AS "req_gpus!",
                  c.req_gpu_type, c.req_nodes AS "req_nodes!", c.alloc_cpus AS "alloc_cpus!",
                  c.alloc_mem_mib AS "alloc_mem_mib!", c.alloc_gpus AS "alloc_gpus!",
                  c.alloc_gpu_models AS "alloc_gpu_models!", c.alloc_nodes AS "alloc_nodes!",
                  c.nodes AS "nodes!", c.gpu_seconds AS "gpu_seconds!", c.gpu_util_avg,
                  c.gpu_mem_peak_mib, c.energy_j, c.cpu_time_s, c.max_rss_mib, c.cost
           FROM page p
           CROSS JOIN LATERAL (
               SELECT r.* FROM acct_job_runs r
               WHERE p.recorded AND r.job_id = p.job_id AND r.run = p.run
               UNION ALL
               SELECT l.* FROM acct_run_compute(p.job_id, p.run) l WHERE NOT p.recorded
           ) c
           ORDER BY c.job_id, c.run"#,
        filter.after.0,
        filter.after.1,
        filter.limit,
        filter.start,
        filter.end,
        filter.users.as_deref(),
        filter.accounts.as_deref(),
        filter.partitions.as_deref(),
        filter.states.as_deref(),
        filter.qos.as_deref(),
        filter.nodes.as_deref(),
        filter.job_ids.as_deref().unwrap_or(&[]),
        task_masters.unwrap_or(&[]),
        task_ids.unwrap_or(&[]),
        filter.duplicates,
        filter.viewer,
        &filter.viewer_accounts,
        any_jobs,
    )
    .fetch_all(ex)
    .await?)
}

/// A job step as sacct shows it: one `srun` step of a run, with its tasks' extent.
#[derive(Debug, Clone, PartialEq)]
pub struct AcctStepRow {
    /// The job.
    pub job_id: i64,
    /// The run.
    pub run: i32,
    /// The step id (0, 1 …).
    pub step_id: i32,
    /// The command's program (the step's name).
    pub name: String,
    /// `RUNNING`, `COMPLETED`, `FAILED` or `CANCELLED`.
    pub state: String,
    /// Highest task exit code.
    pub exit_code: Option<i32>,
    /// A signal that ended a task, if one did.
    pub exit_signal: Option<i32>,
    /// Created.
    pub start_time: DateTime<Utc>,
    /// Ended.
    pub end_time: Option<DateTime<Utc>>,
    /// Tasks.
    pub ntasks: i64,
    /// Node names of its tasks, by node index.
    pub nodes: Vec<String>,
    /// GPUs its tasks saw.
    pub gpus: i64,
}

/// The steps of job runs (`job_ids[i]`, `runs[i]`), by job, run and step.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn acct_step_list(
    ex: impl PgExecutor<'_>,
    job_ids: &[i64],
    runs: &[i32],
) -> Result<Vec<AcctStepRow>, DbError> {
    Ok(sqlx::query_as!(
        AcctStepRow,
        r#"SELECT s.job_id, s.run, s.step_id, s.command[1] AS "name!", s.state, s.exit_code,
                  (SELECT max(t.exit_signal) FROM step_tasks t
                   WHERE t.job_id = s.job_id AND t.run = s.run AND t.step_id = s.step_id) AS exit_signal,
                  s.created_at AS start_time, s.end_time,
                  (SELECT count(*) FROM step_tasks t
                   WHERE t.job_id = s.job_id AND t.run = s.run AND t.step_id = s.step_id) AS "ntasks!",
                  ARRAY(SELECT n.name FROM step_tasks t JOIN nodes n ON n.id = t.node_id
                        WHERE t.job_id = s.job_id AND t.run = s.run AND t.step_id = s.step_id
                        GROUP BY n.name, t.node_index ORDER BY t.node_index) AS "nodes!",
                  (SELECT COALESCE(SUM(cardinality(t.gpu_indices)), 0) FROM step_tasks t
                   WHERE t.job_id = s.job_id AND t.run = s.run AND t.step_id = s.step_id)::bigint AS "gpus!"
           FROM job_steps s
           JOIN UNNEST($1::bigint[], $2::int[]) AS k(job_id, run)
             ON k.job_id = s.job_id AND k.run = s.run
           ORDER BY s.job_id, s.run, s.step_id"#,
        job_ids,
        runs
    )
    .fetch_all(ex)
    .await?)
}
