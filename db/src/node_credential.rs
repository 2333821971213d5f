//! The `node_bootstrap_tokens` and `node_credentials` tables: how a worker joins (a
//! bootstrap token, one-time or reusable until it expires) and what it then holds (a
//! credential for its own node only). Only SHA-256 hashes are stored.

use crate::DbError;
use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgExecutor};
use tracing::instrument;

/// The SHA-256 of a secret (API token, bootstrap token, node credential), lower-case
/// hex: the only form the database stores.
pub fn secret_hash(secret: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(secret.as_bytes()))
}

/// `prefix` and 43 characters of base62 (256 bits) from the operating system's random
/// source.
pub fn secret_with_prefix(prefix: &str) -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::rng();
    let body: String = (0..43)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect();
    format!("{prefix}{body}")
}

/// A bootstrap token as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BootstrapTokenRow {
    /// Id.
    pub id: i64,
    /// Used once, then refused.
    pub one_time: bool,
    /// Who created it.
    pub created_by: String,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Refused after this.
    pub expires_at: DateTime<Utc>,
    /// First used.
    pub used_at: Option<DateTime<Utc>>,
    /// The only node name it joins as (a cloud instance's token), when bound.
    pub node_name: Option<String>,
}

/// Stores a bootstrap token.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(ex, token_hash), err)]
pub async fn bootstrap_token_insert(
    ex: impl PgExecutor<'_>,
    token_hash: &str,
    one_time: bool,
    created_by: &str,
    expires_at: DateTime<Utc>,
) -> Result<BootstrapTokenRow, DbError> {
    Ok(sqlx::query_as!(
        BootstrapTokenRow,
        "INSERT INTO node_bootstrap_tokens (token_hash, one_time, created_by, expires_at)
         VALUES ($1, $2, $3, $4)
         RETURNING id, one_time, created_by, created_at, expires_at, used_at, node_name",
        token_hash,
        one_time,
        created_by,
        expires_at
    )
    .fetch_one(ex)
    .await?)
}

/// Stores a one-time bootstrap token bound to node `node_name` (created by
/// `scheduler`): the token of one cloud instance, put in its user-data. It joins only as
/// that node, only while that node is a pool slot POWERING_UP without a live credential,
/// and only before `expires_at` (launch + the pool's `boot_timeout`).
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(ex, token_hash), err)]
pub async fn bootstrap_token_insert_for_node(
    ex: impl PgExecutor<'_>,
    token_hash: &str,
    node_name: &str,
    expires_at: DateTime<Utc>,
) -> Result<BootstrapTokenRow, DbError> {
    Ok(sqlx::query_as!(
        BootstrapTokenRow,
        "INSERT INTO node_bootstrap_tokens (token_hash, one_time, created_by, expires_at, node_name)
         VALUES ($1, true, 'scheduler', $2, $3)
         RETURNING id, one_time, created_by, created_at, expires_at, used_at, node_name",
        token_hash,
        expires_at,
        node_name
    )
    .fetch_one(ex)
    .await?)
}

/// Revokes node `node_name`'s live credentials (its instance was terminated: whatever
/// held them can no longer act as the node) and expires its unused bound bootstrap
/// tokens. Returns how many credentials were revoked.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(ex), err)]
pub async fn node_credential_revoke_for_node(
    ex: impl PgExecutor<'_>,
    node_name: &str,
) -> Result<u64, DbError> {
    let revoked = sqlx::query_scalar!(
        r#"WITH c AS (
               UPDATE node_credentials SET revoked_at = now()
               WHERE node_name = $1 AND revoked_at IS NULL RETURNING 1),
           t AS (
               UPDATE node_bootstrap_tokens SET expires_at = greatest(created_at + interval '1 microsecond', now())
               WHERE node_name = $1 AND used_at IS NULL AND expires_at > now() RETURNING 1)
           SELECT (SELECT count(*) FROM c) AS "n!""#,
        node_name
    )
    .fetch_one(ex)
    .await?;
    Ok(u64::try_from(revoked).unwrap_or(0))
}

/// Spends a bootstrap token at `now`: returns it when it exists, has not expired and (if
/// one-time) was not used before, marking it used.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn bootstrap_token_use_in_tx(
    conn: &mut PgConnection,
    token_hash: &str,
    now: DateTime<Utc>,
) -> Result<Option<BootstrapTokenRow>, DbError> {
    Ok(sqlx::query_as!(
        BootstrapTokenRow,
        "UPDATE node_bootstrap_tokens SET used_at = coalesce(used_at, $2)
         WHERE token_hash = $1 AND expires_at > $2 AND (NOT one_time OR used_at IS NULL)
         RETURNING id, one_time, created_by, created_at, expires_at, used_at, node_name",
        token_hash,
        now
    )
    .fetch_optional(conn)
    .await?)
}

/// Whether node name `node_name` is taken: a node of that name is registered, or a live
/// credential names it, ignoring case (`NODE-1` would pass for `node-1` in every listing).
/// Joining under a taken name is refused.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn node_name_taken(ex: impl PgExecutor<'_>, node_name: &str) -> Result<bool, DbError> {
    Ok(sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM nodes WHERE lower(name) = lower($1))
               OR EXISTS (SELECT 1 FROM node_credentials
                          WHERE lower(node_name) = lower($1) AND revoked_at IS NULL) AS "taken!""#,
        node_name
    )
    .fetch_one(ex)
    .await?)
}

/// Issues the first credential of a node joining with bootstrap token `bootstrap_id`.
///
/// # Errors
/// [`DbError::Conflict`] on `node_credentials_one_live` when the node already has a live
/// credential (a join racing this one won); [`DbError::Check`] on a bad node name.
pub async fn node_credential_insert_in_tx(
    conn: &mut PgConnection,
    token_hash: &str,
    node_name: &str,
    bootstrap_id: i64,
) -> Result<(), DbError> {
    sqlx::query!(
        "INSERT INTO node_credentials (token_hash, node_name, bootstrap_id) VALUES ($1, $2, $3)",
        token_hash,
        node_name,
        bootstrap_id
    )
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Re-keys a node (an admin's explicit act): revokes its live credentials and issues a
/// new one, made by no bootstrap token.
///
/// # Errors
/// [`DbError::Check`] on a bad node name.
pub async fn node_credential_rekey_in_tx(
    conn: &mut PgConnection,
    token_hash: &str,
    node_name: &str,
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    sqlx::query!(
        "UPDATE node_credentials SET revoked_at = $2 WHERE node_name = $1 AND revoked_at IS NULL",
        node_name,
        now
    )
    .execute(&mut *conn)
    .await?;
    sqlx::query!(
        "INSERT INTO node_credentials (token_hash, node_name) VALUES ($1, $2)",
        token_hash,
        node_name
    )
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Whether node `node_name` holds a live credential.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn node_credential_live(
    ex: impl PgExecutor<'_>,
    node_name: &str,
) -> Result<bool, DbError> {
    Ok(sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM node_credentials
                          WHERE lower(node_name) = lower($1) AND revoked_at IS NULL) AS "live!""#,
        node_name
    )
    .fetch_one(ex)
    .await?)
}

/// The node a live credential belongs to.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn node_credential_node(
    ex: impl PgExecutor<'_>,
    token_hash: &str,
) -> Result<Option<String>, DbError> {
    let row = sqlx::query!(
        "SELECT node_name FROM node_credentials WHERE token_hash = $1 AND revoked_at IS NULL",
        token_hash
    )
    .fetch_optional(ex)
    .await?;
    Ok(row.map(|r| r.node_name))
}
