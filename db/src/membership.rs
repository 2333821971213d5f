//! The `memberships` table: which users belong to which accounts (Slurm's user
//! associations), and who coordinates an account.

use crate::DbError;
use sqlx::PgExecutor;
use tracing::instrument;

/// A membership as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MembershipRow {
    /// The account.
    pub account: String,
    /// The user.
    pub user_name: String,
    /// Whether the user coordinates the account (sees and manages its jobs, and those of
    /// its sub-accounts).
    pub coordinator: bool,
}

/// Adds a user to an account, or updates the coordinator flag of an existing membership.
///
/// # Errors
/// [`DbError::ForeignKey`] on `memberships_account_fkey` / `memberships_user_name_fkey`
/// when the account or user does not exist.
#[instrument(skip(ex), err)]
pub async fn membership_upsert(
    ex: impl PgExecutor<'_>,
    account: &str,
    user_name: &str,
    coordinator: bool,
) -> Result<MembershipRow, DbError> {
    Ok(sqlx::query_as!(
        MembershipRow,
        "INSERT INTO memberships (account, user_name, coordinator) VALUES ($1, $2, $3)
         ON CONFLICT (account, user_name) DO UPDATE SET coordinator = EXCLUDED.coordinator
         RETURNING account, user_name, coordinator",
        account,
        user_name,
        coordinator
    )
    .fetch_one(ex)
    .await?)
}

/// Removes a user from an account; clears the user's default account when it was this
/// one. Returns whether a membership was removed.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(ex), err)]
pub async fn membership_delete(
    ex: impl PgExecutor<'_>,
    account: &str,
    user_name: &str,
) -> Result<bool, DbError> {
    let done = sqlx::query!(
        "WITH gone AS (DELETE FROM memberships WHERE account = $1 AND user_name = $2 RETURNING 1),
              cleared AS (UPDATE users SET default_account = NULL
                          WHERE name = $2 AND default_account = $1 AND EXISTS (SELECT 1 FROM gone))
         SELECT count(*) AS \"n!\" FROM gone",
        account,
        user_name
    )
    .fetch_one(ex)
    .await?;
    Ok(done.n > 0)
}

/// The memberships of one user, or every membership when `user_name` is `None`; by
/// user then account.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn membership_list(
    ex: impl PgExecutor<'_>,
    user_name: Option<&str>,
) -> Result<Vec<MembershipRow>, DbError> {
    Ok(sqlx::query_as!(
        MembershipRow,
        "SELECT account, user_name, coordinator FROM memberships
         WHERE $1::text IS NULL OR user_name = $1
         ORDER BY user_name, account",
        user_name
    )
    .fetch_all(ex)
    .await?)
}

/// The accounts whose jobs `user_name` may see and manage as a coordinator: every account
/// they coordinate and all of its sub-accounts, down the tree.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn membership_coordinated_accounts(
    ex: impl PgExecutor<'_>,
    user_name: &str,
) -> Result<Vec<String>, DbError> {
    let rows = sqlx::query!(
        r#"WITH RECURSIVE tree(name) AS (
               SELECT account FROM memberships WHERE user_name = $1 AND coordinator
               UNION
               SELECT a.name FROM accounts a JOIN tree t ON a.parent = t.name
           )
           SELECT name AS "name!" FROM tree ORDER BY name"#,
        user_name
    )
    .fetch_all(ex)
    .await?;
    Ok(rows.into_iter().map(|r| r.name).collect())
}
