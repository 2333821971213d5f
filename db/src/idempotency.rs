//! The `idempotency_keys` table: `Idempotency-Key` headers of job submissions.

use crate::DbError;
use sqlx::{PgConnection, PgExecutor};

/// A key already used: the hash of the request it came with and the job it made.
#[derive(Debug, Clone)]
pub struct IdempotencyRow {
    /// SHA-256 of the request body, hex.
    pub request_hash: String,
    /// The job created.
    pub job_id: i64,
}

/// The record of `key` for `user_name`.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn idempotency_get(
    ex: impl PgExecutor<'_>,
    user_name: &str,
    key: &str,
) -> Result<Option<IdempotencyRow>, DbError> {
    Ok(sqlx::query_as!(
        IdempotencyRow,
        "SELECT request_hash, job_id FROM idempotency_keys WHERE user_name = $1 AND key = $2",
        user_name,
        key
    )
    .fetch_optional(ex)
    .await?)
}

/// Records `key`; a concurrent submission with the same key makes this fail with
/// [`DbError::Conflict`] on `idempotency_keys_pkey`.
///
/// # Errors
/// As above.
pub async fn idempotency_insert_in_tx(
    conn: &mut PgConnection,
    user_name: &str,
    key: &str,
    request_hash: &str,
    job_id: i64,
) -> Result<(), DbError> {
    sqlx::query!(
        "INSERT INTO idempotency_keys (user_name, key, request_hash, job_id) VALUES ($1, $2, $3, $4)",
        user_name,
        key,
        request_hash,
        job_id
    )
    .execute(conn)
    .await?;
    Ok(())
}
