//! Changes to queued jobs: dependencies, array splits, planned starts, hold and release,
//! updates, `scontrol top`, running time limits, array cancels.

#[allow(unused_imports)]
use super::*;

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
