//! The `audit_log` table: one row per state-changing api call (who, what, when, from
//! where), readable by admins.

use crate::DbError;
use chrono::{DateTime, Utc};
use sqlx::PgExecutor;

/// An audit entry as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRow {
    /// Id (increasing).
    pub id: i64,
    /// When the call was answered.
    pub at: DateTime<Utc>,
    /// The caller's name; `None` when the credentials did not verify.
    pub actor: Option<String>,
    /// The caller's role.
    pub role: Option<String>,
    /// The API token used, when one was.
    pub token_id: Option<i64>,
    /// HTTP method.
    pub method: String,
    /// Request path (without the query).
    pub path: String,
    /// HTTP status of the answer.
    pub status: i32,
    /// The peer address (`ip:port`).
    pub remote_addr: Option<String>,
    /// The request id (`x-request-id`).
    pub request_id: Option<String>,
}

/// A new audit entry.
#[derive(Debug, Clone, Default)]
pub struct AuditInsert {
    /// Caller.
    pub actor: Option<String>,
    /// Role.
    pub role: Option<String>,
    /// API token id.
    pub token_id: Option<i64>,
    /// Method.
    pub method: String,
    /// Path.
    pub path: String,
    /// Status.
    pub status: i32,
    /// Peer address.
    pub remote_addr: Option<String>,
    /// Request id.
    pub request_id: Option<String>,
}

/// Records one call.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn audit_insert(ex: impl PgExecutor<'_>, entry: &AuditInsert) -> Result<(), DbError> {
    sqlx::query!(
        "INSERT INTO audit_log (actor, role, token_id, method, path, status, remote_addr, request_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        entry.actor,
        entry.role,
        entry.token_id,
        entry.method,
        entry.path,
        entry.status,
        entry.remote_addr,
        entry.request_id
    )
    .execute(ex)
    .await?;
    Ok(())
}

/// The newest entries first: at most `limit`, with ids below `before` when given, and
/// only `actor`'s when given.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn audit_list(
    ex: impl PgExecutor<'_>,
    before: Option<i64>,
    actor: Option<&str>,
    limit: i64,
) -> Result<Vec<AuditRow>, DbError> {
    Ok(sqlx::query_as!(
        AuditRow,
        "SELECT id, at, actor, role, token_id, method, path, status, remote_addr, request_id
         FROM audit_log
         WHERE ($1::bigint IS NULL OR id < $1) AND ($2::text IS NULL OR actor = $2)
         ORDER BY id DESC LIMIT $3",
        before,
        actor,
        limit
    )
    .fetch_all(ex)
    .await?)
}
