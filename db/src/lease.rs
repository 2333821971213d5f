//! The `leader_lease` table: leader election with a fencing term (river-style).
//!
//! * acquire: insert the lease row, or take it over when it has expired, incrementing the
//!   term; the holder keeps its term while it renews;
//! * renew: a conditional update that only succeeds for the current holder and term;
//! * every leader write runs [`lease_check_in_tx`] first, which locks the lease row
//!   (`FOR SHARE`) so a takeover cannot commit between the check and the write.

use crate::DbError;
use sqlx::{PgConnection, PgExecutor};

/// Tries to become (or stay) the holder of `role`'s lease for `ttl_seconds`. Returns the
/// term when this holder now holds the lease, `None` when another holder's lease is live.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn lease_acquire(
    ex: impl PgExecutor<'_>,
    role: &str,
    holder: &str,
    ttl_seconds: f64,
) -> Result<Option<i64>, DbError> {
    Ok(sqlx::query_scalar!(
        r#"INSERT INTO leader_lease (role, holder, term, expires_at)
           VALUES ($1, $2, 1, now() + make_interval(secs => $3))
           ON CONFLICT (role) DO UPDATE SET
               holder = EXCLUDED.holder,
               term = CASE WHEN leader_lease.holder = EXCLUDED.holder
                           THEN leader_lease.term ELSE leader_lease.term + 1 END,
               acquired_at = CASE WHEN leader_lease.holder = EXCLUDED.holder
                           THEN leader_lease.acquired_at ELSE now() END,
               expires_at = EXCLUDED.expires_at
           WHERE leader_lease.expires_at < now() OR leader_lease.holder = EXCLUDED.holder
           RETURNING term"#,
        role,
        holder,
        ttl_seconds
    )
    .fetch_optional(ex)
    .await?)
}

/// Extends the lease of `holder` at `term`. Returns false when it was lost.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn lease_renew(
    ex: impl PgExecutor<'_>,
    role: &str,
    holder: &str,
    term: i64,
    ttl_seconds: f64,
) -> Result<bool, DbError> {
    let done = sqlx::query!(
        r#"UPDATE leader_lease SET expires_at = now() + make_interval(secs => $4)
           WHERE role = $1 AND holder = $2 AND term = $3 AND expires_at > now()"#,
        role,
        holder,
        term,
        ttl_seconds
    )
    .execute(ex)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Gives the lease up early (graceful shutdown), so a standby takes over at once.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn lease_release(
    ex: impl PgExecutor<'_>,
    role: &str,
    holder: &str,
    term: i64,
) -> Result<(), DbError> {
    sqlx::query!(
        "UPDATE leader_lease SET expires_at = now() - interval '1 second' WHERE role = $1 AND holder = $2 AND term = $3",
        role,
        holder,
        term
    )
    .execute(ex)
    .await?;
    Ok(())
}

/// Inside a leader's transaction: true when `term` is still the live term of `role`. Locks
/// the lease row against a concurrent takeover until the transaction ends.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn lease_check_in_tx(
    conn: &mut PgConnection,
    role: &str,
    term: i64,
) -> Result<bool, DbError> {
    let live = sqlx::query_scalar!(
        r#"SELECT (term = $2 AND expires_at > now()) AS "live!" FROM leader_lease
           WHERE role = $1 FOR SHARE"#,
        role,
        term
    )
    .fetch_optional(conn)
    .await?;
    Ok(live.unwrap_or(false))
}

/// The current holder and term of `role`'s lease, if live.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn lease_current(
    ex: impl PgExecutor<'_>,
    role: &str,
) -> Result<Option<(String, i64)>, DbError> {
    let row = sqlx::query!(
        "SELECT holder, term FROM leader_lease WHERE role = $1 AND expires_at > now()",
        role
    )
    .fetch_optional(ex)
    .await?;
    Ok(row.map(|r| (r.holder, r.term)))
}
