//! `job_keepalives`: the last word from the client of an interactive allocation (salloc,
//! srun outside an allocation) and when its job ends without another (Slurm's
//! `InactiveLimit`). The api records keep-alives; the scheduler's reconciler ends the
//! jobs whose keep-alive expired. A job without a row (sbatch's) is never ended here.

use crate::job::job_event_insert;
use crate::DbError;
use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgExecutor};
use tracing::instrument;

/// Slurm's reason for a job whose allocation's client stopped answering
/// (`FAIL_INACTIVE_LIMIT`).
pub const INACTIVE_LIMIT_REASON: &str = berth_core::reason::INACTIVE_LIMIT;

/// Records a keep-alive of job `job_id`'s client now: the job ends unless another comes
/// within `limit_seconds`. Returns when it would end, or `None` when the job is not
/// pending or running (nothing recorded).
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(ex), err)]
pub async fn job_keepalive_record(
    ex: impl PgExecutor<'_>,
    job_id: i64,
    limit_seconds: f64,
) -> Result<Option<DateTime<Utc>>, DbError> {
    Ok(sqlx::query_scalar!(
        r#"INSERT INTO job_keepalives (job_id, last_at, expires_at)
           SELECT id, now(), now() + make_interval(secs => $2) FROM jobs
           WHERE id = $1 AND state IN ('PENDING', 'RUNNING', 'SUSPENDED')
           ON CONFLICT (job_id) DO UPDATE
               SET last_at = EXCLUDED.last_at, expires_at = EXCLUDED.expires_at
           RETURNING expires_at"#,
        job_id,
        limit_seconds
    )
    .fetch_optional(ex)
    .await?)
}

/// Forgets job `job_id`'s keep-alive (an api configured without an inactive limit): the
/// job is no longer ended for its client's silence.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(ex), err)]
pub async fn job_keepalive_delete(ex: impl PgExecutor<'_>, job_id: i64) -> Result<(), DbError> {
    sqlx::query!("DELETE FROM job_keepalives WHERE job_id = $1", job_id)
        .execute(ex)
        .await?;
    Ok(())
}

/// The ids of unended jobs whose keep-alive has expired, by id.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(ex), err)]
pub async fn job_keepalive_expired_list(ex: impl PgExecutor<'_>) -> Result<Vec<i64>, DbError> {
    Ok(sqlx::query_scalar!(
        r#"SELECT j.id FROM job_keepalives k JOIN jobs j ON j.id = k.job_id
           WHERE k.expires_at < now() AND j.state IN ('PENDING', 'RUNNING', 'SUSPENDED')
           ORDER BY j.id"#
    )
    .fetch_all(ex)
    .await?)
}

/// A job [`job_keepalive_expired_end_in_tx`] ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InactiveEnd {
    /// The job.
    pub job_id: i64,
    /// Its state now: `CANCELLED` (it was pending) or `TIMEOUT` (it ran).
    pub state: String,
}

/// Ends the unended jobs whose keep-alive has expired, as Slurm does when its
/// `InactiveLimit` passes: a running (or suspended) job becomes TIMEOUT (its worker stops
/// it, as for a cancellation), a pending one CANCELLED, both with reason
/// [`INACTIVE_LIMIT_REASON`] and an `inactive_limit` event. The expiry is checked again
/// under the row lock, so a keep-alive that came meanwhile wins.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn), err)]
pub async fn job_keepalive_expired_end_in_tx(
    conn: &mut PgConnection,
) -> Result<Vec<InactiveEnd>, DbError> {
    let ended = sqlx::query!(
        r#"WITH expired AS (
               SELECT j.id FROM jobs j JOIN job_keepalives k ON k.job_id = j.id
               WHERE k.expires_at < now() AND j.state IN ('PENDING', 'RUNNING', 'SUSPENDED')
               ORDER BY j.id
               FOR UPDATE OF j, k
           )
           UPDATE jobs j
           SET state = CASE WHEN j.state = 'PENDING' THEN 'CANCELLED' ELSE 'TIMEOUT' END,
               end_time = now(), reason = $1, expected_start = NULL
           FROM expired e, job_keepalives k
           WHERE j.id = e.id AND k.job_id = e.id
           RETURNING j.id, j.state, j.restart_count, k.last_at"#,
        INACTIVE_LIMIT_REASON
    )
    .fetch_all(&mut *conn)
    .await?;
    let mut out = Vec::with_capacity(ended.len());
    for row in ended {
        job_event_insert(
            &mut *conn,
            row.id,
            "inactive_limit",
            row.restart_count,
            None,
            serde_json::json!({ "by": "scheduler", "state": row.state, "last_keepalive": row.last_at }),
        )
        .await?;
        out.push(InactiveEnd {
            job_id: row.id,
            state: row.state,
        });
    }
    Ok(out)
}
