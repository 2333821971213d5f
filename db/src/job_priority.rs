//! The `job_priority` table: the factors of each pending job's last computed priority,
//! written by the scheduler when a priority changes and read by `sprio`.

use crate::DbError;
use chrono::{DateTime, Utc};
use sqlx::PgExecutor;

/// Records the priority factors of pending jobs (parallel slices: id, factors as JSON with
/// the total at `factors.priority`), for the jobs whose stored priority differs from the
/// new total or that have none yet, so a queue whose priorities stand still costs no
/// writes. Call it before the new priorities are stored on the jobs.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn job_priority_set(
    ex: impl PgExecutor<'_>,
    ids: &[i64],
    factors: &[serde_json::Value],
) -> Result<(), DbError> {
    sqlx::query!(
        r#"INSERT INTO job_priority (job_id, factors, computed_at)
           SELECT r.id, r.factors, now()
           FROM UNNEST($1::bigint[], $2::jsonb[]) AS r(id, factors)
           JOIN jobs j ON j.id = r.id AND j.state = 'PENDING'
           WHERE j.priority IS DISTINCT FROM (r.factors -> 'factors' ->> 'priority')::bigint
              OR NOT EXISTS (SELECT 1 FROM job_priority p WHERE p.job_id = r.id)
           ON CONFLICT (job_id) DO UPDATE SET factors = EXCLUDED.factors,
                                              computed_at = EXCLUDED.computed_at"#,
        ids,
        factors
    )
    .execute(ex)
    .await?;
    Ok(())
}

/// A job's last computed priority factors (JSON) and when they were computed.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn job_priority_get(
    ex: impl PgExecutor<'_>,
    id: i64,
) -> Result<Option<(serde_json::Value, DateTime<Utc>)>, DbError> {
    Ok(sqlx::query!(
        "SELECT factors, computed_at FROM job_priority WHERE job_id = $1",
        id
    )
    .fetch_optional(ex)
    .await?
    .map(|r| (r.factors, r.computed_at)))
}
