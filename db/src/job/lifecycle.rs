//! A job's run from start to end: cancel, start, pending reasons, finish, adoption of a
//! run the database forgot, skipped runs and failed launches.

#[allow(unused_imports)]
use super::*;

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
