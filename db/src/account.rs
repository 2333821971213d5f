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
    /// `GrpTRES`: a serialized `TresLimits` (`{"gpu": 8, "cpu": 64}`) capping what all
    /// running jobs of the account and its sub-accounts hold together.
    pub grp_tres: serde_json::Value,
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
    grp_tres: &serde_json::Value,
) -> Result<AccountRow, DbError> {
    Ok(sqlx::query_as!(
        AccountRow,
        "INSERT INTO accounts (name, parent, shares, grp_tres) VALUES ($1, $2, $3, $4)
         RETURNING name, parent, shares, grp_tres",
        name,
        parent,
        shares,
        grp_tres
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
        "SELECT name, parent, shares, grp_tres FROM accounts WHERE name = $1",
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
        "SELECT a.name, a.parent, a.shares, a.grp_tres FROM accounts a
         WHERE $1::text IS NULL
            OR EXISTS (SELECT 1 FROM memberships m WHERE m.account = a.name AND m.user_name = $1)
         ORDER BY a.name",
        member
    )
    .fetch_all(ex)
    .await?)
}

/// Changes an account's shares and/or `GrpTRES` (`None` leaves a field as it is); the
/// account as it is now, `None` when there is no such account.
///
/// # Errors
/// [`DbError::Check`] for negative shares or a `grp_tres` that is not a JSON object.
#[instrument(skip(ex), err)]
pub async fn account_update(
    ex: impl PgExecutor<'_>,
    name: &str,
    shares: Option<i32>,
    grp_tres: Option<&serde_json::Value>,
) -> Result<Option<AccountRow>, DbError> {
    Ok(sqlx::query_as!(
        AccountRow,
        "UPDATE accounts SET shares = COALESCE($2, shares), grp_tres = COALESCE($3, grp_tres)
         WHERE name = $1
         RETURNING name, parent, shares, grp_tres",
        name,
        shares,
        grp_tres
    )
    .fetch_optional(ex)
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
