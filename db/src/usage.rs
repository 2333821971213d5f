//! The `usage`, `usage_charges` and `usage_pending` tables: fairshare usage per
//! association (account, user), decayed with a half-life; the ledger of charged job runs
//! (each run charged exactly once, whatever the number of scheduler cycles or leaders
//! that look at it); and the queue of runs to charge (a trigger queues a run when one of
//! its allocations is released; its charge dequeues it), so charging reads what ended
//! since, not the whole history.
//! Also the reads of the account tree and the users' default accounts that fairshare
//! needs.

use crate::DbError;
use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgExecutor};
use tracing::instrument;

/// A job run whose allocations are all released and that has not been charged yet.
#[derive(Debug, Clone, PartialEq)]
pub struct UnchargedRunRow {
    /// The job.
    pub job_id: i64,
    /// The run (restart count).
    pub run: i32,
    /// The job's account, else its user's default account, else `root`.
    pub account: String,
    /// The user.
    pub user_name: String,
    /// CPUs the run held over all its nodes (its allocations' CPU ids); for a run not
    /// placed by CPU, what the job asked for (tasks × CPUs per task).
    pub cpus: i64,
    /// GPUs held over all its nodes.
    pub gpus: i64,
    /// The usage factor of the job's QOS (1 when the QOS is unknown).
    pub usage_factor: f64,
    /// Seconds from the first allocation's creation to the last release.
    pub elapsed: i64,
    /// When the last allocation was released.
    pub ended: DateTime<Utc>,
}

/// How far back a run's end may lie for it to be charged: a run found later (the
/// scheduler was down that long) is not charged, seconds (7 days).
pub const CHARGE_WINDOW_SECONDS: f64 = 7.0 * 86_400.0;

/// Runs released in the week before `now` that have no charge yet, oldest first, at most
/// `limit`. Reads only the runs queued in `usage_pending` (a release queues its run), not
/// the history of allocations.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn usage_uncharged_runs(
    ex: impl PgExecutor<'_>,
    now: DateTime<Utc>,
    limit: i64,
) -> Result<Vec<UnchargedRunRow>, DbError> {
    Ok(sqlx::query_as!(
        UnchargedRunRow,
        r#"SELECT a.job_id AS "job_id!", a.run AS "run!",
                  COALESCE(j.account, u.default_account, 'root') AS "account!",
                  j.user_name AS "user_name!",
                  COALESCE(NULLIF(SUM(cardinality(a.cpu_ids)), 0),
                           j.num_tasks::bigint * j.cpus_per_task::bigint)::bigint AS "cpus!",
                  SUM(cardinality(a.gpu_indices))::bigint AS "gpus!",
                  COALESCE(q.usage_factor, 1) AS "usage_factor!",
                  GREATEST(0, EXTRACT(EPOCH FROM MAX(a.released_at) - MIN(a.created_at)))::bigint
                      AS "elapsed!",
                  MAX(a.released_at) AS "ended!"
           FROM usage_pending p
           JOIN allocations a ON a.job_id = p.job_id AND a.run = p.run
           JOIN jobs j ON j.id = a.job_id
           LEFT JOIN users u ON u.name = j.user_name
           LEFT JOIN qos q ON q.name = COALESCE(j.qos, 'normal')
           WHERE NOT EXISTS (SELECT 1 FROM usage_charges c
                             WHERE c.job_id = p.job_id AND c.run = p.run)
           GROUP BY a.job_id, a.run, j.account, u.default_account, j.user_name, j.num_tasks,
                    j.cpus_per_task, q.usage_factor
           HAVING bool_and(a.released_at IS NOT NULL)
              AND MAX(a.released_at) > $1::timestamptz - make_interval(secs => $3::float8)
           ORDER BY MAX(a.released_at), a.job_id, a.run
           LIMIT $2"#,
        now,
        limit,
        CHARGE_WINDOW_SECONDS
    )
    .fetch_all(ex)
    .await?)
}

/// Drops from the queue of runs to charge those already charged and those whose every
/// allocation was released more than [`CHARGE_WINDOW_SECONDS`] before `now` (never
/// charged, as before the queue existed). Returns how many it dropped.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn usage_pending_prune(
    ex: impl PgExecutor<'_>,
    now: DateTime<Utc>,
) -> Result<u64, DbError> {
    Ok(sqlx::query!(
        r#"DELETE FROM usage_pending p
           WHERE EXISTS (SELECT 1 FROM usage_charges c WHERE c.job_id = p.job_id AND c.run = p.run)
              OR NOT EXISTS (SELECT 1 FROM allocations a
                             WHERE a.job_id = p.job_id AND a.run = p.run
                               AND (a.released_at IS NULL
                                    OR a.released_at > $1::timestamptz - make_interval(secs => $2::float8)))"#,
        now,
        CHARGE_WINDOW_SECONDS
    )
    .execute(ex)
    .await?
    .rows_affected())
}

/// One charge: a run's usage, added to its association's decayed usage.
#[derive(Debug, Clone, PartialEq)]
pub struct Charge {
    /// The job.
    pub job_id: i64,
    /// The run.
    pub run: i32,
    /// The account charged.
    pub account: String,
    /// The user charged.
    pub user_name: String,
    /// Seconds the run held its allocation.
    pub elapsed: i64,
    /// Σ TRES × billing weight, per second.
    pub billing: f64,
    /// The QOS usage factor.
    pub usage_factor: f64,
    /// `elapsed × billing × usage_factor`, billing-seconds.
    pub amount: f64,
}

/// Records a charge once (a run already charged changes nothing), takes the run off the
/// queue of runs to charge, and adds its amount to the association's usage, first decaying the stored usage from its `updated_at` to `at`
/// with `half_life` seconds (no decay when 0). Returns whether the run was charged now.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn, charge), fields(job.id = charge.job_id, run = charge.run), err)]
pub async fn usage_charge_in_tx(
    conn: &mut PgConnection,
    charge: &Charge,
    at: DateTime<Utc>,
    half_life: i64,
) -> Result<bool, DbError> {
    let inserted = sqlx::query_scalar!(
        r#"INSERT INTO usage_charges (job_id, run, account, user_name, elapsed, billing,
                                      usage_factor, amount, charged_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
           ON CONFLICT (job_id, run) DO NOTHING
           RETURNING job_id"#,
        charge.job_id,
        charge.run,
        charge.account,
        charge.user_name,
        charge.elapsed,
        charge.billing,
        charge.usage_factor,
        charge.amount,
        at
    )
    .fetch_optional(&mut *conn)
    .await?;
    sqlx::query!(
        "DELETE FROM usage_pending WHERE job_id = $1 AND run = $2",
        charge.job_id,
        charge.run
    )
    .execute(&mut *conn)
    .await?;
    if inserted.is_none() {
        return Ok(false);
    }
    sqlx::query!(
        r#"INSERT INTO usage (account, user_name, raw_usage, updated_at)
           VALUES ($1, $2, $3, $4)
           ON CONFLICT (account, user_name) DO UPDATE SET
               raw_usage = usage.raw_usage
                   * CASE WHEN $5::bigint > 0 AND EXCLUDED.updated_at > usage.updated_at
                          THEN power(0.5, EXTRACT(EPOCH FROM EXCLUDED.updated_at - usage.updated_at)::float8
                                          / $5::bigint)
                          ELSE 1 END
                   + EXCLUDED.raw_usage,
               updated_at = GREATEST(usage.updated_at, EXCLUDED.updated_at)"#,
        charge.account,
        charge.user_name,
        charge.amount,
        at,
        half_life
    )
    .execute(&mut *conn)
    .await?;
    Ok(true)
}

/// Decays every usage row last updated more than `min_age` seconds before `now` to `now`
/// (the fairshare decay reconciler). Returns how many rows changed.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn usage_decay(
    ex: impl PgExecutor<'_>,
    now: DateTime<Utc>,
    half_life: i64,
    min_age: i64,
) -> Result<u64, DbError> {
    if half_life <= 0 {
        return Ok(0);
    }
    Ok(sqlx::query!(
        r#"UPDATE usage SET
               raw_usage = raw_usage * power(0.5, EXTRACT(EPOCH FROM $1::timestamptz - updated_at)::float8 / $2::bigint),
               updated_at = $1::timestamptz
           WHERE updated_at < $1::timestamptz - make_interval(secs => $3::float8)"#,
        now,
        half_life,
        min_age as f64
    )
    .execute(ex)
    .await?
    .rows_affected())
}

/// An association's usage as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageRow {
    /// The account.
    pub account: String,
    /// The user.
    pub user_name: String,
    /// Decayed usage as of `updated_at`, billing-seconds.
    pub raw_usage: f64,
    /// When it was last decayed or charged.
    pub updated_at: DateTime<Utc>,
}

/// Every association's usage, by account then user.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn usage_list(ex: impl PgExecutor<'_>) -> Result<Vec<UsageRow>, DbError> {
    Ok(sqlx::query_as!(
        UsageRow,
        "SELECT account, user_name, raw_usage, updated_at FROM usage ORDER BY account, user_name"
    )
    .fetch_all(ex)
    .await?)
}

/// The charges of a job, by run.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn usage_charges_for_job(
    ex: impl PgExecutor<'_>,
    job_id: i64,
) -> Result<Vec<Charge>, DbError> {
    Ok(sqlx::query_as!(
        Charge,
        r#"SELECT job_id, run, account, user_name, elapsed, billing, usage_factor, amount
           FROM usage_charges WHERE job_id = $1 ORDER BY run"#,
        job_id
    )
    .fetch_all(ex)
    .await?)
}

/// An account of the tree, as fairshare reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareAccountRow {
    /// Name.
    pub name: String,
    /// Parent (`None` for `root`).
    pub parent: Option<String>,
    /// Shares among its siblings.
    pub shares: i32,
}

/// The account tree.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn usage_account_tree(ex: impl PgExecutor<'_>) -> Result<Vec<ShareAccountRow>, DbError> {
    Ok(sqlx::query_as!(
        ShareAccountRow,
        "SELECT name, parent, shares FROM accounts ORDER BY name"
    )
    .fetch_all(ex)
    .await?)
}

/// The associations fairshare divides an account's shares among: (account, user) of
/// every user's default account, of every job not ended, and of every usage row.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn usage_associations(ex: impl PgExecutor<'_>) -> Result<Vec<(String, String)>, DbError> {
    let rows = sqlx::query!(
        r#"SELECT default_account AS "account!", name AS "user_name!" FROM users
             WHERE default_account IS NOT NULL
           UNION
           SELECT COALESCE(j.account, u.default_account, 'root') AS "account!", j.user_name AS "user_name!"
             FROM jobs j LEFT JOIN users u ON u.name = j.user_name
             WHERE j.state IN ('PENDING', 'RUNNING', 'SUSPENDED', 'COMPLETING')
           UNION
           SELECT account AS "account!", user_name AS "user_name!" FROM usage"#
    )
    .fetch_all(ex)
    .await?;
    Ok(rows.into_iter().map(|r| (r.account, r.user_name)).collect())
}

/// Each user's default account.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn usage_default_accounts(
    ex: impl PgExecutor<'_>,
) -> Result<Vec<(String, String)>, DbError> {
    let rows = sqlx::query!(
        r#"SELECT name, default_account AS "account!" FROM users WHERE default_account IS NOT NULL"#
    )
    .fetch_all(ex)
    .await?;
    Ok(rows.into_iter().map(|r| (r.name, r.account)).collect())
}
