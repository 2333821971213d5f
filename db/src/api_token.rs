//! The `api_tokens` table: long-lived bearer tokens for CI pipelines and scripts. Only the
//! SHA-256 of a token is stored; the token itself is shown once, at creation.

use crate::DbError;
use chrono::{DateTime, Utc};
use sqlx::PgExecutor;
use tracing::instrument;

/// An API token as stored (without any secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiTokenRow {
    /// Id.
    pub id: i64,
    /// The first characters of the token, to recognise it.
    pub prefix: String,
    /// What the owner called it.
    pub name: String,
    /// The owner.
    pub user_name: String,
    /// The owner's role at creation.
    pub role: String,
    /// `read-only`, `submit` or `admin`.
    pub scope: String,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Not accepted after this.
    pub expires_at: DateTime<Utc>,
    /// Last accepted.
    pub last_used_at: Option<DateTime<Utc>>,
    /// Revoked (never accepted again).
    pub revoked_at: Option<DateTime<Utc>>,
}

/// A new token, ready to store.
#[derive(Debug, Clone)]
pub struct ApiTokenInsert<'a> {
    /// SHA-256 of the token, lower-case hex.
    pub token_hash: &'a str,
    /// The token's first characters.
    pub prefix: &'a str,
    /// Name.
    pub name: &'a str,
    /// Owner.
    pub user_name: &'a str,
    /// Owner's role.
    pub role: &'a str,
    /// Scope.
    pub scope: &'a str,
    /// Expiry.
    pub expires_at: DateTime<Utc>,
}

/// Stores a token.
///
/// # Errors
/// [`DbError::Check`] for a bad name, scope or expiry.
#[instrument(skip(ex, token), fields(user = token.user_name), err)]
pub async fn api_token_insert(
    ex: impl PgExecutor<'_>,
    token: &ApiTokenInsert<'_>,
) -> Result<ApiTokenRow, DbError> {
    Ok(sqlx::query_as!(
        ApiTokenRow,
        "INSERT INTO api_tokens (token_hash, prefix, name, user_name, role, scope, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         RETURNING id, prefix, name, user_name, role, scope, created_at, expires_at,
                   last_used_at, revoked_at",
        token.token_hash,
        token.prefix,
        token.name,
        token.user_name,
        token.role,
        token.scope,
        token.expires_at
    )
    .fetch_one(ex)
    .await?)
}

/// Accepts a token: when one with this hash exists, is not revoked and has not expired at
/// `now`, records `now` as its last use and returns it.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn api_token_use(
    ex: impl PgExecutor<'_>,
    token_hash: &str,
    now: DateTime<Utc>,
) -> Result<Option<ApiTokenRow>, DbError> {
    Ok(sqlx::query_as!(
        ApiTokenRow,
        "UPDATE api_tokens SET last_used_at = $2
         WHERE token_hash = $1 AND revoked_at IS NULL AND expires_at > $2
         RETURNING id, prefix, name, user_name, role, scope, created_at, expires_at,
                   last_used_at, revoked_at",
        token_hash,
        now
    )
    .fetch_optional(ex)
    .await?)
}

/// Tokens by id; with `user_name`, only that user's.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn api_token_list(
    ex: impl PgExecutor<'_>,
    user_name: Option<&str>,
) -> Result<Vec<ApiTokenRow>, DbError> {
    Ok(sqlx::query_as!(
        ApiTokenRow,
        "SELECT id, prefix, name, user_name, role, scope, created_at, expires_at,
                last_used_at, revoked_at
         FROM api_tokens WHERE $1::text IS NULL OR user_name = $1 ORDER BY id",
        user_name
    )
    .fetch_all(ex)
    .await?)
}

/// One token by id.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn api_token_get(
    ex: impl PgExecutor<'_>,
    id: i64,
) -> Result<Option<ApiTokenRow>, DbError> {
    Ok(sqlx::query_as!(
        ApiTokenRow,
        "SELECT id, prefix, name, user_name, role, scope, created_at, expires_at,
                last_used_at, revoked_at
         FROM api_tokens WHERE id = $1",
        id
    )
    .fetch_optional(ex)
    .await?)
}

/// Revokes a token (idempotent: a revoked token keeps its first revocation time).
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(ex), err)]
pub async fn api_token_revoke(
    ex: impl PgExecutor<'_>,
    id: i64,
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    sqlx::query!(
        "UPDATE api_tokens SET revoked_at = coalesce(revoked_at, $2) WHERE id = $1",
        id,
        now
    )
    .execute(ex)
    .await?;
    Ok(())
}
