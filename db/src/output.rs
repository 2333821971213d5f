//! The `job_output` table: chunks of jobs' stdout/stderr uploaded by workers, keyed by
//! (job, stream, run, offset) so a repeated upload changes nothing.

use crate::DbError;
use sqlx::PgExecutor;

/// A stored output chunk.
#[derive(Debug, Clone)]
pub struct OutputChunkRow {
    /// The run.
    pub run: i32,
    /// Byte offset within the run's stream.
    pub offset: i64,
    /// The bytes.
    pub data: Vec<u8>,
}

/// Stores a chunk; a chunk already stored at the same key is left as it is.
///
/// # Errors
/// [`DbError::ForeignKey`] for an unknown job; others from the driver.
pub async fn output_append(
    ex: impl PgExecutor<'_>,
    job_id: i64,
    run: i32,
    stream: &str,
    offset: i64,
    data: &[u8],
) -> Result<(), DbError> {
    sqlx::query!(
        r#"INSERT INTO job_output (job_id, run, stream, "offset", data) VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT DO NOTHING"#,
        job_id,
        run,
        stream,
        offset,
        data
    )
    .execute(ex)
    .await?;
    Ok(())
}

/// The chunks of a stream after position (`after_run`, `after_offset`) (exclusive), in
/// order. Pass `(-1, -1)` for everything.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn output_read(
    ex: impl PgExecutor<'_>,
    job_id: i64,
    stream: &str,
    after_run: i32,
    after_offset: i64,
) -> Result<Vec<OutputChunkRow>, DbError> {
    Ok(sqlx::query_as!(
        OutputChunkRow,
        r#"SELECT run, "offset", data FROM job_output
           WHERE job_id = $1 AND stream = $2 AND (run, "offset") > ($3, $4)
           ORDER BY run, "offset""#,
        job_id,
        stream,
        after_run,
        after_offset
    )
    .fetch_all(ex)
    .await?)
}
