//! The `job_signals` table: signals for running jobs' processes (`scancel --signal`),
//! one row per node that must send one, until that node's worker acknowledges it.
//!
//! A row is handed out only while its run is RUNNING and still holds the node; the rows
//! of a run that left the node are never handed out and go with the node's next
//! acknowledgement.

use crate::DbError;
use sqlx::{PgConnection, PgExecutor};
use tracing::instrument;

/// A signal a node must send, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobSignalRow {
    /// The delivery's id.
    pub id: i64,
    /// The job.
    pub job_id: i64,
    /// The job's run.
    pub run: i32,
    /// The signal number, 1 to 64.
    pub signal: i32,
    /// `steps`, `batch`, `full` or `step` ([`berth_core::signal::SignalTarget`]).
    pub target: String,
    /// The step, for target `step`.
    pub step_id: Option<i32>,
    /// The job's incarnation.
    pub incarnation: uuid::Uuid,
}

/// Queues `signal` for run `run` of job `job_id` on the nodes that run its `target`
/// (`steps`, `batch`, `full` or `step`): the batch shell's node for `batch` and `full`,
/// and for `steps`, `full` and `step` the nodes with tasks (of step `step_id` for `step`)
/// not yet ended. Returns those nodes' names, sorted (none when nothing runs there).
///
/// # Errors
/// [`DbError`] from the driver (a check violation for a signal outside 1 to 64, a
/// target not one of the four, or a step id with a target other than `step`).
#[instrument(skip(conn), err)]
pub async fn job_signal_insert_in_tx(
    conn: &mut PgConnection,
    job_id: i64,
    run: i32,
    signal: i32,
    target: &str,
    step_id: Option<i32>,
    requested_by: &str,
) -> Result<Vec<String>, DbError> {
    Ok(sqlx::query_scalar!(
        r#"WITH placed AS (
               SELECT a.node_id FROM allocations a
               WHERE a.job_id = $1 AND a.run = $2 AND a.released_at IS NULL
                 AND ((($4 = 'batch' OR $4 = 'full') AND a.node_index = 0)
                      OR ($4 <> 'batch' AND EXISTS (
                            SELECT 1 FROM step_tasks t
                            WHERE t.job_id = a.job_id AND t.run = a.run
                              AND t.node_id = a.node_id AND t.ended_at IS NULL
                              AND ($4 <> 'step' OR t.step_id = $5))))
           ), queued AS (
               INSERT INTO job_signals (job_id, run, node_id, signal, target, step_id,
                                        requested_by)
               SELECT $1, $2, node_id, $3, $4, $5, $6 FROM placed
               RETURNING node_id
           )
           SELECT n.name FROM queued q JOIN nodes n ON n.id = q.node_id ORDER BY n.name"#,
        job_id,
        run,
        signal,
        target,
        step_id,
        requested_by
    )
    .fetch_all(&mut *conn)
    .await?)
}

/// The signals node `node_id` must send now, oldest first: those of runs that are
/// RUNNING and still hold the node.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn job_signal_list_for_node(
    ex: impl PgExecutor<'_>,
    node_id: i64,
) -> Result<Vec<JobSignalRow>, DbError> {
    Ok(sqlx::query_as!(
        JobSignalRow,
        r#"SELECT s.id, s.job_id, s.run, s.signal, s.target, s.step_id, j.incarnation
           FROM job_signals s
           JOIN jobs j ON j.id = s.job_id AND j.restart_count = s.run AND j.state = 'RUNNING'
           WHERE s.node_id = $1
             AND EXISTS (SELECT 1 FROM allocations a
                         WHERE a.job_id = s.job_id AND a.run = s.run
                           AND a.node_id = s.node_id AND a.released_at IS NULL)
           ORDER BY s.id"#,
        node_id
    )
    .fetch_all(ex)
    .await?)
}

/// Forgets the signals `ids` that node `node_id`'s worker acknowledged (ids of other
/// nodes are left alone), and the node's signals whose run no longer runs there. Returns
/// how many rows went.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(ex), err)]
pub async fn job_signal_ack(
    ex: impl PgExecutor<'_>,
    node_id: i64,
    ids: &[i64],
) -> Result<u64, DbError> {
    Ok(sqlx::query!(
        r#"DELETE FROM job_signals s
           WHERE s.node_id = $1
             AND (s.id = ANY($2)
                  OR NOT EXISTS (
                      SELECT 1 FROM allocations a
                      JOIN jobs j ON j.id = a.job_id AND j.restart_count = a.run
                                 AND j.state = 'RUNNING'
                      WHERE a.job_id = s.job_id AND a.run = s.run
                        AND a.node_id = s.node_id AND a.released_at IS NULL))"#,
        node_id,
        ids
    )
    .execute(ex)
    .await?
    .rows_affected())
}

/// A job row a signal may be meant for: its id, run and state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignalCandidate {
    /// The job (an array task's own id).
    pub id: i64,
    /// Its current run (restart count).
    pub run: i32,
    /// Its state (`RUNNING`, `PENDING` …).
    pub state: String,
}

/// Job `id`, and with `whole_array` (`id` is an array's id) every task of that array
/// that has a row of its own, by id.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn job_signal_runs(
    ex: impl PgExecutor<'_>,
    id: i64,
    whole_array: bool,
) -> Result<Vec<SignalCandidate>, DbError> {
    Ok(sqlx::query_as!(
        SignalCandidate,
        r#"SELECT id, restart_count AS run, state FROM jobs
           WHERE id = $1 OR ($2 AND array_job_id = $1)
           ORDER BY id"#,
        id,
        whole_array
    )
    .fetch_all(ex)
    .await?)
}
