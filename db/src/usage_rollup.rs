//! The usage rollups behind sreport: `usage_hourly` (TRES time per hour and association
//! × partition × QOS × GPU model), `usage_rollup_hours` (which hours are rolled up, and
//! which are closed for good), `cluster_gpu_samples` (each minute's GPU states) and
//! `cluster_usage_hourly` (cluster utilisation per hour and GPU model); and the reports'
//! reads over them.
//!
//! The scheduler leader writes them (see `berth_scheduler::rollup`): an hour is computed
//! from the raw `allocations` (a run's time split at the hour boundaries) in one
//! transaction that checks the leader's term, replacing whatever the hour held, unless it
//! is closed. A closed hour is never rewritten, so it outlives the job rows retention
//! deletes.

use crate::DbError;
use chrono::{DateTime, DurationRound, Utc};
use sqlx::{PgConnection, PgExecutor};
use tracing::instrument;

/// The latest closed hour (its start), if any.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn usage_rollup_last_closed(
    ex: impl PgExecutor<'_>,
) -> Result<Option<DateTime<Utc>>, DbError> {
    Ok(
        sqlx::query_scalar!("SELECT max(hour) FROM usage_rollup_hours WHERE closed")
            .fetch_one(ex)
            .await?,
    )
}

/// When the first allocation (of those still stored) was made, if any: where rolling up
/// starts on a database that has no closed hour yet.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn usage_rollup_first_activity(
    ex: impl PgExecutor<'_>,
) -> Result<Option<DateTime<Utc>>, DbError> {
    Ok(
        sqlx::query_scalar!("SELECT min(created_at) FROM allocations")
            .fetch_one(ex)
            .await?,
    )
}

/// Rolls up the hour `[hour, hour + 1 h)` from the raw allocations as of `now` (a live
/// allocation counts up to `now`), replacing what `usage_hourly` and
/// `cluster_usage_hourly` held for it, and records it in `usage_rollup_hours` with
/// `term`, closed when `close`. Billing-seconds are `gpu_seconds × gpu_weight +
/// cpu_seconds × cpu_weight` (Slurm's `TRESBillingWeights`, without the QOS usage
/// factor, as sreport's `billing` TRES).
///
/// Each allocation counts for the seconds it overlaps the hour; its GPUs are the devices
/// it holds that are not shards, their model the (least) model among them (`''` for an
/// allocation without GPUs); its CPUs its CPU ids, or for one not placed by CPU its
/// share of the job's `tasks × cpus per task`. A job run counts as one job in the hour
/// its first node's allocation was released.
///
/// Returns false (and changes nothing) when the hour is closed already. Must run in the
/// leader's transaction, after its term check.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn), err)]
pub async fn usage_rollup_hour_in_tx(
    conn: &mut PgConnection,
    hour: DateTime<Utc>,
    now: DateTime<Utc>,
    close: bool,
    term: i64,
    gpu_weight: f64,
    cpu_weight: f64,
) -> Result<bool, DbError> {
    let end = hour + chrono::Duration::hours(1);
    sqlx::query!(
        r#"INSERT INTO usage_rollup_hours (hour, closed, rolled_at, term)
           VALUES ($1, false, $2, $3) ON CONFLICT (hour) DO NOTHING"#,
        hour,
        now,
        term
    )
    .execute(&mut *conn)
    .await?;
    let closed = sqlx::query_scalar!(
        "SELECT closed FROM usage_rollup_hours WHERE hour = $1 FOR UPDATE",
        hour
    )
    .fetch_one(&mut *conn)
    .await?;
    if closed {
        return Ok(false);
    }
    sqlx::query!("DELETE FROM usage_hourly WHERE hour = $1", hour)
        .execute(&mut *conn)
        .await?;
    sqlx::query!(
        r#"WITH a AS (
               SELECT al.node_index, al.released_at,
                      GREATEST(0, EXTRACT(EPOCH FROM LEAST(COALESCE(al.released_at, $3), $2)
                                                     - GREATEST(al.created_at, $1)))::float8
                          AS secs,
                      COALESCE(d.gpus, 0)::float8 AS gpus,
                      (CASE WHEN cardinality(al.cpu_ids) > 0 THEN cardinality(al.cpu_ids)::float8
                            ELSE ceil(j.num_tasks::float8 * j.cpus_per_task / j.num_nodes) END)
                          AS cpus,
                      al.mem_mib::float8 AS mem,
                      COALESCE(j.account, u.default_account, 'root') AS account,
                      j.user_name, j.partition, COALESCE(j.qos, 'normal') AS qos,
                      COALESCE(d.model, '') AS gpu_model
               FROM allocations al
               JOIN jobs j ON j.id = al.job_id
               LEFT JOIN users u ON u.name = j.user_name
               LEFT JOIN LATERAL (
                   SELECT count(*) FILTER (WHERE g.kind <> 'shard') AS gpus,
                          min(g.model) FILTER (WHERE g.kind <> 'shard') AS model
                   FROM gpus g
                   WHERE g.node_id = al.node_id AND g.index = ANY(al.gpu_indices)
               ) d ON true
               WHERE al.created_at < $2 AND al.created_at <= $3
                 AND (al.released_at IS NULL OR al.released_at >= $1)
           )
           INSERT INTO usage_hourly (hour, account, user_name, partition, qos, gpu_model,
                                     gpu_seconds, cpu_seconds, mem_mib_seconds, node_seconds,
                                     billing_seconds, jobs)
           SELECT $1, account, user_name, partition, qos, gpu_model,
                  SUM(secs * gpus), SUM(secs * cpus), SUM(secs * mem), SUM(secs),
                  SUM(secs * (gpus * $4 + cpus * $5)),
                  count(*) FILTER (WHERE node_index = 0 AND released_at >= $1 AND released_at < $2)
           FROM a
           GROUP BY account, user_name, partition, qos, gpu_model"#,
        hour,
        end,
        now,
        gpu_weight,
        cpu_weight
    )
    .execute(&mut *conn)
    .await?;
    // The hour's day in `usage_daily`: the sum of its hours, as they are now.
    let day = hour
        .duration_trunc(chrono::Duration::days(1))
        .unwrap_or(hour);
    sqlx::query!("DELETE FROM usage_daily WHERE day = $1", day)
        .execute(&mut *conn)
        .await?;
    sqlx::query!(
        r#"INSERT INTO usage_daily (day, account, user_name, partition, qos, gpu_model,
                                    gpu_seconds, cpu_seconds, mem_mib_seconds, node_seconds,
                                    billing_seconds, jobs)
           SELECT $1, account, user_name, partition, qos, gpu_model,
                  SUM(gpu_seconds), SUM(cpu_seconds), SUM(mem_mib_seconds), SUM(node_seconds),
                  SUM(billing_seconds), SUM(jobs)::bigint
           FROM usage_hourly
           WHERE hour >= $1 AND hour < $2
           GROUP BY account, user_name, partition, qos, gpu_model"#,
        day,
        day + chrono::Duration::days(1)
    )
    .execute(&mut *conn)
    .await?;
    sqlx::query!("DELETE FROM cluster_usage_hourly WHERE hour = $1", hour)
        .execute(&mut *conn)
        .await?;
    sqlx::query!(
        r#"INSERT INTO cluster_usage_hourly (hour, gpu_model, samples, reported_seconds,
                                             allocated_seconds, down_seconds,
                                             planned_down_seconds, reserved_seconds)
           SELECT $1, gpu_model, COALESCE(s.samples, 0), COALESCE(s.reported, 0),
                  COALESCE(u.allocated, 0), COALESCE(s.down, 0), COALESCE(s.planned_down, 0),
                  COALESCE(s.reserved, 0)
           FROM (SELECT gpu_model, count(*)::integer AS samples,
                        sum(total)::float8 * 60 AS reported, sum(down)::float8 * 60 AS down,
                        sum(planned_down)::float8 * 60 AS planned_down,
                        sum(reserved)::float8 * 60 AS reserved
                 FROM cluster_gpu_samples WHERE minute >= $1 AND minute < $2
                 GROUP BY gpu_model) s
           FULL JOIN (SELECT gpu_model, sum(gpu_seconds) AS allocated FROM usage_hourly
                      WHERE hour = $1 AND gpu_model <> ''
                      GROUP BY gpu_model) u USING (gpu_model)"#,
        hour,
        end
    )
    .execute(&mut *conn)
    .await?;
    sqlx::query!(
        "UPDATE usage_rollup_hours SET closed = $2, rolled_at = $3, term = $4 WHERE hour = $1",
        hour,
        close,
        now,
        term
    )
    .execute(&mut *conn)
    .await?;
    Ok(true)
}

/// Samples the GPUs' states for the minute starting at `minute` (on the minute, UTC):
/// one row per GPU model, unless that minute is sampled already (then nothing changes).
/// Counts whole GPUs and MIG instances (a GPU split into MIG instances counts as its
/// instances; shards are not GPUs). A GPU held by a live allocation is allocated;
/// otherwise one on a DOWN/DRAINING/DRAINED node is down, one on a
/// POWERED_DOWN/POWERING_UP/POWERING_DOWN node planned down, one an active reservation
/// holds (its window, repeated daily or weekly for `DAILY`/`WEEKLY`, covers the minute)
/// reserved. Returns how many rows it wrote. Must run in the leader's transaction.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn), err)]
pub async fn cluster_gpu_sample_in_tx(
    conn: &mut PgConnection,
    minute: DateTime<Utc>,
) -> Result<u64, DbError> {
    Ok(sqlx::query!(
        r#"INSERT INTO cluster_gpu_samples (minute, gpu_model, total, allocated, down,
                                            planned_down, reserved)
           SELECT $1, model, count(*),
                  count(*) FILTER (WHERE held),
                  count(*) FILTER (WHERE NOT held AND state IN ('DOWN', 'DRAINING', 'DRAINED')),
                  count(*) FILTER (WHERE NOT held
                                   AND state IN ('POWERED_DOWN', 'POWERING_UP', 'POWERING_DOWN')),
                  count(*) FILTER (WHERE NOT held AND state = 'UP' AND reserved)
           FROM (
               SELECT g.model, n.state,
                      EXISTS (SELECT 1 FROM allocation_gpus ag
                              WHERE ag.node_id = g.node_id AND ag.gpu_index = g.index
                                AND ag.released_at IS NULL) AS held,
                      EXISTS (SELECT 1 FROM reservation_nodes rn
                              JOIN reservations r ON r.name = rn.reservation
                              WHERE rn.node_id = g.node_id
                                AND (rn.gpu_indices IS NULL OR g.index = ANY(rn.gpu_indices))
                                AND r.start_time <= $1
                                AND CASE
                                    WHEN 'DAILY' = ANY(r.flags) THEN
                                        mod(EXTRACT(EPOCH FROM $1 - r.start_time), 86400)
                                            < EXTRACT(EPOCH FROM r.end_time - r.start_time)
                                    WHEN 'WEEKLY' = ANY(r.flags) THEN
                                        mod(EXTRACT(EPOCH FROM $1 - r.start_time), 604800)
                                            < EXTRACT(EPOCH FROM r.end_time - r.start_time)
                                    ELSE $1 < r.end_time END) AS reserved
               FROM gpus g JOIN nodes n ON n.id = g.node_id
               WHERE g.present AND g.kind <> 'shard'
                 AND NOT EXISTS (SELECT 1 FROM gpus c
                                 WHERE c.node_id = g.node_id AND c.parent = g.index
                                   AND c.kind = 'mig')
           ) x
           GROUP BY model
           ON CONFLICT (minute, gpu_model) DO NOTHING"#,
        minute
    )
    .execute(conn)
    .await?
    .rows_affected())
}

/// Whether the minute starting at `minute` is sampled already.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn cluster_gpu_sampled(
    ex: impl PgExecutor<'_>,
    minute: DateTime<Utc>,
) -> Result<bool, DbError> {
    Ok(sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM cluster_gpu_samples WHERE minute = $1) AS "sampled!""#,
        minute
    )
    .fetch_one(ex)
    .await?)
}

/// Deletes the minute samples of closed hours that started before `before` (their
/// figures live on in `cluster_usage_hourly`). Returns how many rows it deleted.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn cluster_gpu_samples_prune(
    ex: impl PgExecutor<'_>,
    before: DateTime<Utc>,
) -> Result<u64, DbError> {
    Ok(sqlx::query!(
        r#"DELETE FROM cluster_gpu_samples s
           WHERE s.minute < $1
             AND EXISTS (SELECT 1 FROM usage_rollup_hours h
                         WHERE h.closed AND s.minute >= h.hour
                           AND s.minute < h.hour + interval '1 hour')"#,
        before
    )
    .execute(ex)
    .await?
    .rows_affected())
}

/// One association × partition × QOS × GPU model's usage over a window, summed over its
/// hours.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageSumRow {
    /// The account.
    pub account: String,
    /// The user.
    pub user_name: String,
    /// The partition.
    pub partition: String,
    /// The QOS.
    pub qos: String,
    /// The GPU model (`''`: no GPUs).
    pub gpu_model: String,
    /// GPU-seconds.
    pub gpu_seconds: f64,
    /// CPU-seconds.
    pub cpu_seconds: f64,
    /// MiB-seconds of memory.
    pub mem_mib_seconds: f64,
    /// Node-seconds.
    pub node_seconds: f64,
    /// Billing-seconds.
    pub billing_seconds: f64,
    /// Job runs that ended in the window.
    pub jobs: i64,
}

/// The usage of the hours in `[start, end)` (whole hours), summed per association ×
/// partition × QOS × GPU model, ordered by those: the whole UTC days inside the window
/// from `usage_daily`, the hours before the first and after the last from
/// `usage_hourly`. With `viewer`, only the rows of `viewer` or of an account in
/// `viewer_accounts` (what a user may see); `None`: every row.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(ex, viewer_accounts), err)]
pub async fn usage_hourly_sum(
    ex: impl PgExecutor<'_>,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    viewer: Option<&str>,
    viewer_accounts: &[String],
) -> Result<Vec<UsageSumRow>, DbError> {
    // The whole days in the window, [first_day, last_day) (empty when there is none).
    let day = chrono::Duration::days(1);
    let floor = |t: DateTime<Utc>| t.duration_trunc(day).unwrap_or(t);
    let first_day = if floor(start) == start {
        start
    } else {
        floor(start) + day
    };
    let last_day = floor(end).max(first_day);
    Ok(sqlx::query_as!(
        UsageSumRow,
        r#"SELECT account AS "account!", user_name AS "user_name!",
                  partition AS "partition!", qos AS "qos!", gpu_model AS "gpu_model!",
                  SUM(gpu_seconds) AS "gpu_seconds!", SUM(cpu_seconds) AS "cpu_seconds!",
                  SUM(mem_mib_seconds) AS "mem_mib_seconds!",
                  SUM(node_seconds) AS "node_seconds!",
                  SUM(billing_seconds) AS "billing_seconds!", SUM(jobs)::bigint AS "jobs!"
           FROM (SELECT account, user_name, partition, qos, gpu_model, gpu_seconds,
                        cpu_seconds, mem_mib_seconds, node_seconds, billing_seconds, jobs
                 FROM usage_daily
                 WHERE day >= $5 AND day < $6
                   AND ($3::text IS NULL OR user_name = $3 OR account = ANY($4))
                 UNION ALL
                 SELECT account, user_name, partition, qos, gpu_model, gpu_seconds,
                        cpu_seconds, mem_mib_seconds, node_seconds, billing_seconds, jobs
                 FROM usage_hourly
                 WHERE hour >= $1 AND hour < LEAST($5, $2)
                   AND ($3::text IS NULL OR user_name = $3 OR account = ANY($4))
                 UNION ALL
                 SELECT account, user_name, partition, qos, gpu_model, gpu_seconds,
                        cpu_seconds, mem_mib_seconds, node_seconds, billing_seconds, jobs
                 FROM usage_hourly
                 WHERE hour >= GREATEST($6, $5, $1) AND hour < $2
                   AND ($3::text IS NULL OR user_name = $3 OR account = ANY($4))) u
           GROUP BY account, user_name, partition, qos, gpu_model
           ORDER BY account, user_name, partition, qos, gpu_model"#,
        start,
        end,
        viewer,
        viewer_accounts,
        first_day,
        last_day
    )
    .fetch_all(ex)
    .await?)
}

/// Cluster utilisation of one GPU model over a window, GPU-seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterSumRow {
    /// The GPU model.
    pub gpu_model: String,
    /// Minutes sampled (summed over the hours).
    pub samples: i64,
    /// Every GPU for every sampled minute.
    pub reported_seconds: f64,
    /// Held by allocations (exact).
    pub allocated_seconds: f64,
    /// Down, draining or drained, not allocated.
    pub down_seconds: f64,
    /// Powered down (cloud), not allocated.
    pub planned_down_seconds: f64,
    /// Held by an active reservation, not allocated.
    pub reserved_seconds: f64,
}

/// Cluster utilisation of the hours in `[start, end)` per GPU model.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(ex), err)]
pub async fn cluster_usage_sum(
    ex: impl PgExecutor<'_>,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
) -> Result<Vec<ClusterSumRow>, DbError> {
    Ok(sqlx::query_as!(
        ClusterSumRow,
        r#"SELECT gpu_model, SUM(samples)::bigint AS "samples!",
                  SUM(reported_seconds) AS "reported_seconds!",
                  SUM(allocated_seconds) AS "allocated_seconds!",
                  SUM(down_seconds) AS "down_seconds!",
                  SUM(planned_down_seconds) AS "planned_down_seconds!",
                  SUM(reserved_seconds) AS "reserved_seconds!"
           FROM cluster_usage_hourly
           WHERE hour >= $1 AND hour < $2
           GROUP BY gpu_model ORDER BY gpu_model"#,
        start,
        end
    )
    .fetch_all(ex)
    .await?)
}

/// One bucket of the cluster's GPU state samples, summed over GPU models per minute and
/// averaged over the bucket's minutes.
#[derive(Debug, Clone)]
pub struct ClusterTimelineRow {
    /// The bucket's start.
    pub bucket: DateTime<Utc>,
    /// GPUs.
    pub total: f64,
    /// Allocated GPUs.
    pub allocated: f64,
    /// Down GPUs.
    pub down: f64,
    /// Planned-down GPUs.
    pub planned_down: f64,
    /// Reserved GPUs.
    pub reserved: f64,
}

/// The per-minute GPU state samples of `[start, end)` in buckets of `step_seconds`
/// aligned to the Unix epoch, oldest first.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn cluster_timeline(
    ex: impl PgExecutor<'_>,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    step_seconds: f64,
) -> Result<Vec<ClusterTimelineRow>, DbError> {
    Ok(sqlx::query_as!(
        ClusterTimelineRow,
        r#"WITH m AS (
               SELECT minute, SUM(total) AS total, SUM(allocated) AS allocated, SUM(down) AS down,
                      SUM(planned_down) AS planned_down, SUM(reserved) AS reserved
               FROM cluster_gpu_samples WHERE minute >= $1 AND minute < $2 GROUP BY minute)
           SELECT date_bin(make_interval(secs => $3), minute, TIMESTAMPTZ 'epoch') AS "bucket!",
                  avg(total)::float8 AS "total!", avg(allocated)::float8 AS "allocated!",
                  avg(down)::float8 AS "down!", avg(planned_down)::float8 AS "planned_down!",
                  avg(reserved)::float8 AS "reserved!"
           FROM m GROUP BY 1 ORDER BY 1"#,
        start,
        end,
        step_seconds
    )
    .fetch_all(ex)
    .await?)
}

/// The mean utilisation of the GPUs jobs held in `[start, end)` (from the jobs' GPU time
/// series), in buckets of `step_seconds` aligned to the Unix epoch: (bucket, percent).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn cluster_utilization_timeline(
    ex: impl PgExecutor<'_>,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    step_seconds: f64,
) -> Result<Vec<(DateTime<Utc>, f64)>, DbError> {
    let rows = sqlx::query!(
        r#"SELECT date_bin(make_interval(secs => $3), sampled_at, TIMESTAMPTZ 'epoch') AS "bucket!",
                  avg(utilization_pct)::float8 AS "pct!"
           FROM job_gpu_samples WHERE sampled_at >= $1 AND sampled_at < $2
           GROUP BY 1 ORDER BY 1"#,
        start,
        end,
        step_seconds
    )
    .fetch_all(ex)
    .await?;
    Ok(rows.into_iter().map(|r| (r.bucket, r.pct)).collect())
}

/// The accounts `user_name` belongs to (whose usage they may see).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn usage_member_accounts(
    ex: impl PgExecutor<'_>,
    user_name: &str,
) -> Result<Vec<String>, DbError> {
    Ok(sqlx::query_scalar!(
        "SELECT account FROM memberships WHERE user_name = $1 ORDER BY account",
        user_name
    )
    .fetch_all(ex)
    .await?)
}

/// Retention (slurmdbd's `PurgeJobAfter`): deletes up to `limit` ended jobs whose end
/// and every allocation's release lie before `before`, oldest end first, with everything
/// that hangs off them (allocations, events, output, steps, charges … by `ON DELETE
/// CASCADE`). Rows locked by another transaction are skipped (the next batch takes them).
/// The caller passes a `before` no later than the end of the last closed rollup hour, so
/// the usage of what it deletes is kept in `usage_hourly`. Returns how many jobs it
/// deleted. Must run in the leader's transaction.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn), err)]
pub async fn job_purge_ended_in_tx(
    conn: &mut PgConnection,
    before: DateTime<Utc>,
    limit: i64,
) -> Result<u64, DbError> {
    Ok(sqlx::query!(
        r#"DELETE FROM jobs WHERE id IN (
               SELECT j.id FROM jobs j
               WHERE j.end_time < $1
                 AND j.state NOT IN ('PENDING', 'RUNNING', 'SUSPENDED', 'COMPLETING')
                 AND NOT EXISTS (SELECT 1 FROM allocations a
                                 WHERE a.job_id = j.id
                                   AND (a.released_at IS NULL OR a.released_at >= $1))
               ORDER BY j.end_time
               LIMIT $2
               FOR UPDATE SKIP LOCKED)"#,
        before,
        limit
    )
    .execute(conn)
    .await?
    .rows_affected())
}
