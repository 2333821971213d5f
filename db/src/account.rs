//! The `accounts` table: Slurm's account tree (organisation → team → project), each with
//! its fairshare `shares`. `root` is the top and cannot be deleted.

use crate::DbError;
use sqlx::PgExecutor;
use tracing::instrument;

/// An account as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountRow {
    /// The account name.
    pub name: String,
    /// The parent account; `None` only for `root`.
    pub parent: Option<String>,
    /// Fairshare shares (relative to its siblings).
    pub shares: i32,
}

/// Adds an account under `parent`.
///
/// # Errors
/// [`DbError::Conflict`] on `accounts_pkey` when the name is taken,
/// [`DbError::ForeignKey`] on `accounts_parent_fkey` when the parent does not exist,
/// [`DbError::Check`] for a bad name or negative shares.
#[instrument(skip(ex), err)]
pub async fn account_insert(
    ex: impl PgExecutor<'_>,
    name: &str,
    parent: &str,
    shares: i32,
) -> Result<AccountRow, DbError> {
    Ok(sqlx::query_as!(
        AccountRow,
        "INSERT INTO accounts (name, parent, shares) VALUES ($1, $2, $3)
         RETURNING name, parent, shares",
        name,
        parent,
        shares
    )
    .fetch_one(ex)
    .await?)
}

/// One account by name.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn account_get(
    ex: impl PgExecutor<'_>,
    name: &str,
) -> Result<Option<AccountRow>, DbError> {
    Ok(sqlx::query_as!(
        AccountRow,
        "SELECT name, parent, shares FROM accounts WHERE name = $1",
        name
    )
    .fetch_optional(ex)
    .await?)
}

/// Every account, by name; with `member`, only the accounts that user belongs to.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn account_list(
    ex: impl PgExecutor<'_>,
    member: Option<&str>,
) -> Result<Vec<AccountRow>, DbError> {
    Ok(sqlx::query_as!(
        AccountRow,
        "SELECT a.name, a.parent, a.shares FROM accounts a
         WHERE $1::text IS NULL
            OR EXISTS (SELECT 1 FROM memberships m WHERE m.account = a.name AND m.user_name = $1)
         ORDER BY a.name",
        member
    )
    .fetch_all(ex)
    .await?)
}

/// Deletes an account (its memberships go with it). Returns whether one was deleted.
///
/// # Errors
/// [`DbError::ForeignKey`] on `accounts_parent_fkey` while it has sub-accounts.
#[instrument(skip(ex), err)]
pub async fn account_delete(ex: impl PgExecutor<'_>, name: &str) -> Result<bool, DbError> {
    let done = sqlx::query!("DELETE FROM accounts WHERE name = $1", name)
        .execute(ex)
        .await?;
    Ok(done.rows_affected() > 0)
}
