//! The `node_report_state` table: what the api remembers of each node's report stream
//! (the highest report sequence number applied) and of its batch launches (how many in a
//! row failed for a reason of the node). Kept apart from `nodes`, whose every change the
//! scheduler's change tracking notices.

use crate::DbError;
use sqlx::{PgConnection, PgExecutor};
use tracing::instrument;

/// The highest report sequence number applied for node `node_id` (0 when none).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn node_report_seq(ex: impl PgExecutor<'_>, node_id: i64) -> Result<i64, DbError> {
    Ok(sqlx::query_scalar!(
        r#"SELECT report_seq FROM node_report_state WHERE node_id = $1"#,
        node_id
    )
    .fetch_optional(ex)
    .await?
    .unwrap_or(0))
}

/// What the database remembers of node `node_id`'s report stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeReportState {
    /// The highest report sequence number applied (0 when none).
    pub report_seq: i64,
    /// The highest job id the node's worker said it remembers (0 when none).
    pub job_id_seen: i64,
}

/// What the database remembers of node `node_id`'s report stream (zeros when nothing).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn node_report_state(
    ex: impl PgExecutor<'_>,
    node_id: i64,
) -> Result<NodeReportState, DbError> {
    Ok(sqlx::query_as!(
        NodeReportState,
        r#"SELECT report_seq, job_id_seen FROM node_report_state WHERE node_id = $1"#,
        node_id
    )
    .fetch_optional(ex)
    .await?
    .unwrap_or_default())
}

/// Records that node `node_id`'s worker remembers job ids up to `job_id` (kept when
/// higher already), and moves the job id sequence past `job_id` when it is not yet: no
/// job written from now on takes the id of a run the worker remembers (after a failover
/// that lost the last commits, the promoted server's sequence is behind). Returns the
/// sequence's new value when it moved.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(ex), err)]
pub async fn node_job_id_seen_raise(
    ex: &mut PgConnection,
    node_id: i64,
    job_id: i64,
) -> Result<Option<i64>, DbError> {
    sqlx::query!(
        r#"INSERT INTO node_report_state (node_id, job_id_seen) VALUES ($1, $2)
           ON CONFLICT (node_id) DO UPDATE
               SET job_id_seen = GREATEST(node_report_state.job_id_seen, EXCLUDED.job_id_seen)
           WHERE node_report_state.job_id_seen < EXCLUDED.job_id_seen"#,
        node_id,
        job_id
    )
    .execute(&mut *ex)
    .await?;
    job_id_sequence_raise(ex, job_id).await
}

/// Moves the job id sequence past `job_id` when it is not yet (the next job gets a larger
/// id). Returns the sequence's new value when it moved.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn job_id_sequence_raise(
    ex: impl PgExecutor<'_>,
    job_id: i64,
) -> Result<Option<i64>, DbError> {
    Ok(sqlx::query_scalar!(
        r#"SELECT setval('jobs_id_seq', $1) AS "value!" FROM jobs_id_seq
           WHERE last_value < $1 OR (NOT is_called AND last_value = $1)"#,
        job_id
    )
    .fetch_optional(ex)
    .await?)
}

/// Moves the job id sequence past every job id a node's worker said it remembers
/// ([`node_job_id_seen_raise`]): what the scheduler's leader does when it finds itself on
/// another database server (a failover). Returns the sequence's new value when it moved.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn job_id_sequence_raise_past_nodes(
    ex: impl PgExecutor<'_>,
) -> Result<Option<i64>, DbError> {
    Ok(sqlx::query_scalar!(
        r#"SELECT setval('jobs_id_seq', m.seen) AS "value!"
           FROM (SELECT max(job_id_seen) AS seen FROM node_report_state) m, jobs_id_seq s
           WHERE m.seen > s.last_value OR (m.seen = s.last_value AND NOT s.is_called)"#
    )
    .fetch_optional(ex)
    .await?)
}

/// Sets node `node_id`'s highest applied report sequence number to `seq` (the worker's
/// numbering decides: a worker whose journal started again from 1 lowers it), provided it
/// is still `seen`, the number read before the reports were applied, or has moved up
/// meanwhile but not past `seq` (a concurrent sync of the same node, such as a long poll
/// the worker abandoned that finished first: it is raised to `seq`). One that moved down
/// meanwhile (a failover that lost the last commits) is left as it is, for the next sync to
/// notice.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn node_report_seq_set(
    ex: impl PgExecutor<'_>,
    node_id: i64,
    seq: i64,
    seen: i64,
) -> Result<(), DbError> {
    sqlx::query!(
        r#"INSERT INTO node_report_state (node_id, report_seq) VALUES ($1, $2)
           ON CONFLICT (node_id) DO UPDATE SET report_seq = EXCLUDED.report_seq
           WHERE (node_report_state.report_seq = $3
                  OR node_report_state.report_seq BETWEEN $3 AND EXCLUDED.report_seq)
             AND node_report_state.report_seq IS DISTINCT FROM EXCLUDED.report_seq"#,
        node_id,
        seq,
        seen
    )
    .execute(ex)
    .await?;
    Ok(())
}

/// Counts one more batch launch that failed on node `node_id` for a reason of the node;
/// returns how many failed in a row now.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn), err)]
pub async fn node_launch_failed_in_tx(
    conn: &mut PgConnection,
    node_id: i64,
) -> Result<i32, DbError> {
    Ok(sqlx::query_scalar!(
        r#"INSERT INTO node_report_state (node_id, launch_failures) VALUES ($1, 1)
           ON CONFLICT (node_id) DO UPDATE
               SET launch_failures = node_report_state.launch_failures + 1
           RETURNING launch_failures"#,
        node_id
    )
    .fetch_one(conn)
    .await?)
}

/// A batch launch succeeded on node `node_id` (or it was drained for its failures): the
/// count of failures in a row starts again from 0.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn node_launch_failures_reset(
    ex: impl PgExecutor<'_>,
    node_id: i64,
) -> Result<(), DbError> {
    sqlx::query!(
        r#"UPDATE node_report_state SET launch_failures = 0
           WHERE node_id = $1 AND launch_failures > 0"#,
        node_id
    )
    .execute(ex)
    .await?;
    Ok(())
}
