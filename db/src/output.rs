//! The `job_output` table: chunks of jobs' stdout/stderr uploaded by workers, keyed by
//! (job, stream, run, offset) so a repeated upload changes nothing; and
//! `job_output_totals`: how many bytes each run's stream keeps, against the api's cap,
//! and whether it was cut there.

use crate::DbError;
use sqlx::{PgConnection, PgExecutor};

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

/// What [`output_append_in_tx`] did with a chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputAppended {
    /// Bytes of the chunk stored now (0 for a repeated chunk or one past the cap).
    pub stored: usize,
    /// Whether the run's stream is cut at the cap (now or before).
    pub truncated: bool,
}

/// The longest prefix of `data` of at most `max` bytes that ends on a UTF-8 character
/// boundary (the chunks are text; a character is never split).
fn utf8_prefix(data: &str, max: usize) -> &str {
    let mut end = max.min(data.len());
    while !data.is_char_boundary(end) {
        end -= 1;
    }
    &data[..end]
}

/// Stores a chunk of run `run`'s `stream` at `offset`, keeping at most `cap_bytes` bytes
/// per run and stream (`None`: no cap). A chunk already stored at the same key changes
/// nothing. The chunk that reaches the cap is cut there (on a character boundary) and
/// the stream marked truncated; from then on its chunks are dropped. The cap counts
/// stored bytes, so chunks at made-up offsets cannot get past it. Serialised per run and
/// stream by a row lock on its total.
///
/// # Errors
/// [`DbError::ForeignKey`] for an unknown job; others from the driver.
pub async fn output_append_in_tx(
    conn: &mut PgConnection,
    job_id: i64,
    run: i32,
    stream: &str,
    offset: i64,
    data: &str,
    cap_bytes: Option<u64>,
) -> Result<OutputAppended, DbError> {
    let total = sqlx::query!(
        r#"INSERT INTO job_output_totals (job_id, run, stream) VALUES ($1, $2, $3)
           ON CONFLICT (job_id, stream, run) DO UPDATE SET bytes = job_output_totals.bytes
           RETURNING bytes, truncated"#,
        job_id,
        run,
        stream
    )
    .fetch_one(&mut *conn)
    .await?;
    let seen = sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM job_output
                          WHERE job_id = $1 AND stream = $2 AND run = $3 AND "offset" = $4) AS "seen!""#,
        job_id,
        stream,
        run,
        offset
    )
    .fetch_one(&mut *conn)
    .await?;
    if seen || total.truncated {
        return Ok(OutputAppended {
            stored: 0,
            truncated: total.truncated,
        });
    }
    let room = match cap_bytes {
        Some(cap) => {
            usize::try_from(cap.saturating_sub(total.bytes.max(0) as u64)).unwrap_or(usize::MAX)
        }
        None => usize::MAX,
    };
    let kept = utf8_prefix(data, room);
    let truncated = kept.len() < data.len();
    if !kept.is_empty() {
        sqlx::query!(
            r#"INSERT INTO job_output (job_id, run, stream, "offset", data) VALUES ($1, $2, $3, $4, $5)"#,
            job_id,
            run,
            stream,
            offset,
            kept.as_bytes()
        )
        .execute(&mut *conn)
        .await?;
    }
    sqlx::query!(
        r#"UPDATE job_output_totals SET bytes = bytes + $4, truncated = truncated OR $5
           WHERE job_id = $1 AND run = $2 AND stream = $3"#,
        job_id,
        run,
        stream,
        kept.len() as i64,
        truncated
    )
    .execute(&mut *conn)
    .await?;
    Ok(OutputAppended {
        stored: kept.len(),
        truncated,
    })
}

/// At most `limit` chunks of a stream after position (`after_run`, `after_offset`)
/// (exclusive), in order: one page of a read. Pass `(-1, -1)` to start at the beginning.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn output_read(
    ex: impl PgExecutor<'_>,
    job_id: i64,
    stream: &str,
    after_run: i32,
    after_offset: i64,
    limit: i64,
) -> Result<Vec<OutputChunkRow>, DbError> {
    Ok(sqlx::query_as!(
        OutputChunkRow,
        r#"SELECT run, "offset", data FROM job_output
           WHERE job_id = $1 AND stream = $2 AND (run, "offset") > ($3, $4)
           ORDER BY run, "offset"
           LIMIT $5"#,
        job_id,
        stream,
        after_run,
        after_offset,
        limit
    )
    .fetch_all(ex)
    .await?)
}

/// A run whose stored stream was cut at the cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputTruncationRow {
    /// The run.
    pub run: i32,
    /// The bytes kept.
    pub bytes: i64,
}

/// The runs of job `job_id` whose `stream` was cut at the cap, by run.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn output_truncations(
    ex: impl PgExecutor<'_>,
    job_id: i64,
    stream: &str,
) -> Result<Vec<OutputTruncationRow>, DbError> {
    Ok(sqlx::query_as!(
        OutputTruncationRow,
        r#"SELECT run, bytes FROM job_output_totals
           WHERE job_id = $1 AND stream = $2 AND truncated ORDER BY run"#,
        job_id,
        stream
    )
    .fetch_all(ex)
    .await?)
}

/// Which of the jobs `ids` had some run's output cut at the cap.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn output_truncated_jobs(
    ex: impl PgExecutor<'_>,
    ids: &[i64],
) -> Result<Vec<i64>, DbError> {
    Ok(sqlx::query_scalar!(
        r#"SELECT DISTINCT job_id AS "job_id!" FROM job_output_totals
           WHERE job_id = ANY($1) AND truncated"#,
        ids
    )
    .fetch_all(ex)
    .await?)
}

#[cfg(test)]
mod tests {
    use super::utf8_prefix;

    #[test]
    fn prefixes_end_on_character_boundaries() {
        assert_eq!(utf8_prefix("héllo", 2), "h");
        assert_eq!(utf8_prefix("héllo", 3), "hé");
        assert_eq!(utf8_prefix("abc", 10), "abc");
        assert_eq!(utf8_prefix("abc", 0), "");
    }
}
