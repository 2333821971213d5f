//! What happens to a job when its node fails, is reclaimed or gets stuck, and requeue and
//! preemption.

#[allow(unused_imports)]
use super::*;

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
