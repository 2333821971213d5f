//! The `job_preemptions` table: one row per preempted job run, with the job it made room
//! for and when its grace ends (SIGTERM at `created_at`, kill at `kill_at`).

use crate::DbError;
use sqlx::{PgConnection, PgExecutor};
use tracing::instrument;

/// Records the preemption of run `run` of job `job_id` for `preemptor` (`mode` `CANCEL`
/// or `REQUEUE`), killed `grace_time` seconds from now. A run preempted before is left as
/// it was.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn), err)]
pub async fn preemption_insert_in_tx(
    conn: &mut PgConnection,
    job_id: i64,
    run: i32,
    preemptor: i64,
    mode: &str,
    grace_time: i64,
) -> Result<(), DbError> {
    sqlx::query!(
        r#"INSERT INTO job_preemptions (job_id, run, preemptor, mode, kill_at)
           VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5::bigint::double precision))
           ON CONFLICT (job_id, run) DO NOTHING"#,
        job_id,
        run,
        preemptor,
        mode,
        grace_time
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Marks the preemption of run `run` of job `job_id` done (its processes are gone).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn preemption_done_in_tx(
    conn: &mut PgConnection,
    job_id: i64,
    run: i32,
) -> Result<(), DbError> {
    sqlx::query!(
        r#"UPDATE job_preemptions SET done_at = now()
           WHERE job_id = $1 AND run = $2 AND done_at IS NULL"#,
        job_id,
        run
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// A preempted run's grace: what is left of it now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GraceLeftRow {
    /// The preempted job.
    pub job_id: i64,
    /// Its preempted run.
    pub run: i32,
    /// Seconds until its `kill_at` by the database's clock, rounded up, at least 0.
    pub seconds: i64,
}

/// Of the runs `(job_ids[i], runs[i])`, those preempted and not done yet, with the
/// seconds left until their kill (at least 0).
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(ex), err)]
pub async fn preemption_grace_left(
    ex: impl PgExecutor<'_>,
    job_ids: &[i64],
    runs: &[i32],
) -> Result<Vec<GraceLeftRow>, DbError> {
    Ok(sqlx::query_as!(
        GraceLeftRow,
        r#"SELECT p.job_id, p.run,
                  GREATEST(0, CEIL(EXTRACT(EPOCH FROM p.kill_at - now())))::bigint AS "seconds!"
           FROM job_preemptions p
           JOIN UNNEST($1::bigint[], $2::int[]) AS r(job_id, run)
             ON r.job_id = p.job_id AND r.run = p.run
           WHERE p.done_at IS NULL
           ORDER BY p.job_id, p.run"#,
        job_ids,
        runs
    )
    .fetch_all(ex)
    .await?)
}
