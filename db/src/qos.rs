//! The `qos` table: Slurm's QOS with its priority, usage factor, limits and preemption
//! settings. TRES limits are stored as JSON objects `{"cpu": n, "gpu": n, "node": n}`.

use crate::DbError;
use sqlx::PgExecutor;
use tracing::instrument;

/// A QOS as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct QosRow {
    /// Name.
    pub name: String,
    /// Free text.
    pub description: String,
    /// Priority (the QOS factor).
    pub priority: i32,
    /// Usage factor.
    pub usage_factor: f64,
    /// `MaxTRESPerUser` as JSON.
    pub max_tres_per_user: serde_json::Value,
    /// `MaxTRESPerAccount` as JSON.
    pub max_tres_per_account: serde_json::Value,
    /// `GrpTRES` as JSON.
    pub grp_tres: serde_json::Value,
    /// `MaxJobsPerUser`.
    pub max_jobs_per_user: Option<i32>,
    /// `MaxSubmitJobsPerUser`.
    pub max_submit_jobs_per_user: Option<i32>,
    /// `MaxWall`, seconds.
    pub max_wall: Option<i64>,
    /// QOS this one may preempt.
    pub preempt: Vec<String>,
    /// `CANCEL` or `REQUEUE`.
    pub preempt_mode: String,
    /// Seconds from SIGTERM to kill when preempted.
    pub grace_time: i64,
    /// Seconds after start during which its jobs are not preempted.
    pub preempt_exempt_time: i64,
}

/// Every QOS, by name.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn qos_list(ex: impl PgExecutor<'_>) -> Result<Vec<QosRow>, DbError> {
    Ok(sqlx::query_as!(
        QosRow,
        r#"SELECT name, description, priority, usage_factor, max_tres_per_user,
                  max_tres_per_account, grp_tres, max_jobs_per_user, max_submit_jobs_per_user,
                  max_wall, preempt, preempt_mode, grace_time, preempt_exempt_time
           FROM qos ORDER BY name"#
    )
    .fetch_all(ex)
    .await?)
}

/// One QOS by name.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn qos_get(ex: impl PgExecutor<'_>, name: &str) -> Result<Option<QosRow>, DbError> {
    Ok(sqlx::query_as!(
        QosRow,
        r#"SELECT name, description, priority, usage_factor, max_tres_per_user,
                  max_tres_per_account, grp_tres, max_jobs_per_user, max_submit_jobs_per_user,
                  max_wall, preempt, preempt_mode, grace_time, preempt_exempt_time
           FROM qos WHERE name = $1"#,
        name
    )
    .fetch_optional(ex)
    .await?)
}

/// Creates a QOS or replaces its definition. Returns true when it was created.
///
/// # Errors
/// [`DbError`] from the driver (a check violation for a negative value).
#[instrument(skip(ex, row), fields(qos = %row.name), err)]
pub async fn qos_upsert(ex: impl PgExecutor<'_>, row: &QosRow) -> Result<bool, DbError> {
    Ok(sqlx::query_scalar!(
        r#"INSERT INTO qos (name, description, priority, usage_factor, max_tres_per_user,
                            max_tres_per_account, grp_tres, max_jobs_per_user,
                            max_submit_jobs_per_user, max_wall, preempt, preempt_mode,
                            grace_time, preempt_exempt_time)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
           ON CONFLICT (name) DO UPDATE SET
               description = EXCLUDED.description, priority = EXCLUDED.priority,
               usage_factor = EXCLUDED.usage_factor,
               max_tres_per_user = EXCLUDED.max_tres_per_user,
               max_tres_per_account = EXCLUDED.max_tres_per_account,
               grp_tres = EXCLUDED.grp_tres, max_jobs_per_user = EXCLUDED.max_jobs_per_user,
               max_submit_jobs_per_user = EXCLUDED.max_submit_jobs_per_user,
               max_wall = EXCLUDED.max_wall, preempt = EXCLUDED.preempt,
               preempt_mode = EXCLUDED.preempt_mode, grace_time = EXCLUDED.grace_time,
               preempt_exempt_time = EXCLUDED.preempt_exempt_time
           RETURNING (xmax = 0) AS "created!""#,
        row.name,
        row.description,
        row.priority,
        row.usage_factor,
        row.max_tres_per_user,
        row.max_tres_per_account,
        row.grp_tres,
        row.max_jobs_per_user,
        row.max_submit_jobs_per_user,
        row.max_wall,
        &row.preempt,
        row.preempt_mode,
        row.grace_time,
        row.preempt_exempt_time
    )
    .fetch_one(ex)
    .await?)
}

/// Jobs of `user` not ended (pending, running …) in QOS `qos` (`normal` counts jobs that
/// name none), for `MaxSubmitJobsPerUser`.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn qos_user_active_jobs(
    ex: impl PgExecutor<'_>,
    qos: &str,
    user: &str,
) -> Result<i64, DbError> {
    Ok(sqlx::query_scalar!(
        r#"SELECT count(*) AS "n!" FROM jobs
           WHERE user_name = $2 AND COALESCE(qos, 'normal') = $1
             AND state IN ('PENDING', 'RUNNING', 'SUSPENDED', 'COMPLETING')
             AND (array_job_id IS NULL OR array_job_id = id)"#,
        qos,
        user
    )
    .fetch_one(ex)
    .await?)
}
