//! The `users` table: who may log in, with their role and default account.

use crate::DbError;
use sqlx::PgExecutor;
use tracing::instrument;

/// A user as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserRow {
    /// The user name (a token's `sub`).
    pub name: String,
    /// `admin`, `operator` or `user`.
    pub role: String,
    /// The account jobs are charged to when the submission names none.
    pub default_account: Option<String>,
}

/// Adds a user.
///
/// # Errors
/// [`DbError::Conflict`] on `users_pkey` when the name is taken; [`DbError::Check`] on
/// `users_name_format` for a bad name.
#[instrument(skip(ex), err)]
pub async fn user_insert(
    ex: impl PgExecutor<'_>,
    name: &str,
    role: &str,
) -> Result<UserRow, DbError> {
    Ok(sqlx::query_as!(
        UserRow,
        "INSERT INTO users (name, role) VALUES ($1, $2) RETURNING name, role, default_account",
        name,
        role
    )
    .fetch_one(ex)
    .await?)
}

/// One user by name.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn user_get(ex: impl PgExecutor<'_>, name: &str) -> Result<Option<UserRow>, DbError> {
    Ok(sqlx::query_as!(
        UserRow,
        "SELECT name, role, default_account FROM users WHERE name = $1",
        name
    )
    .fetch_optional(ex)
    .await?)
}

/// Every user, by name.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn user_list(ex: impl PgExecutor<'_>) -> Result<Vec<UserRow>, DbError> {
    Ok(sqlx::query_as!(
        UserRow,
        "SELECT name, role, default_account FROM users ORDER BY name"
    )
    .fetch_all(ex)
    .await?)
}

/// Deletes a user (their memberships go with them). Returns whether one was deleted.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(ex), err)]
pub async fn user_delete(ex: impl PgExecutor<'_>, name: &str) -> Result<bool, DbError> {
    let done = sqlx::query!("DELETE FROM users WHERE name = $1", name)
        .execute(ex)
        .await?;
    Ok(done.rows_affected() > 0)
}

/// Sets a user's default account (which must be one of their memberships' accounts).
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(ex), err)]
pub async fn user_set_default_account(
    ex: impl PgExecutor<'_>,
    name: &str,
    account: Option<&str>,
) -> Result<(), DbError> {
    sqlx::query!(
        "UPDATE users SET default_account = $2 WHERE name = $1",
        name,
        account
    )
    .execute(ex)
    .await?;
    Ok(())
}
