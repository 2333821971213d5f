//! What the scheduler leader's scaling reconciler reads and writes: pools with their
//! back-off, their node slots with their instances, cooldowns and launches. Every write
//! runs in a transaction the caller term-checks first; no transaction spans a provider
//! call.

use crate::DbError;
use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgExecutor};
use tracing::instrument;
use uuid::Uuid;

/// A pool as the reconciler reads it.
#[derive(Debug, Clone)]
pub struct ScalingPoolRow {
    /// Name.
    pub name: String,
    /// Its `PoolSpec` as JSON.
    pub spec: serde_json::Value,
    /// Launches are held back until then.
    pub backoff_until: Option<DateTime<Utc>>,
    /// Launch failures in a row.
    pub consecutive_failures: i32,
}

/// Every pool.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn scaling_pool_list(ex: impl PgExecutor<'_>) -> Result<Vec<ScalingPoolRow>, DbError> {
    Ok(sqlx::query_as!(
        ScalingPoolRow,
        "SELECT name, spec, backoff_until, consecutive_failures FROM pools ORDER BY name"
    )
    .fetch_all(ex)
    .await?)
}

/// A pool's node slot as the reconciler reads it.
#[derive(Debug, Clone)]
pub struct ScalingNodeRow {
    /// Id.
    pub id: i64,
    /// Name.
    pub name: String,
    /// Its pool.
    pub pool: String,
    /// State (`UP`, `POWERED_DOWN`, …).
    pub state: String,
    /// Why.
    pub reason: Option<String>,
    /// Its instance.
    pub instance_id: Option<String>,
    /// Its instance type.
    pub instance_type: Option<String>,
    /// Its launch while POWERING_UP.
    pub launch_id: Option<Uuid>,
    /// When its instance was requested.
    pub launched_at: Option<DateTime<Utc>>,
    /// When its state last changed between power states (or it joined).
    pub power_changed_at: Option<DateTime<Utc>>,
    /// An operator's power request.
    pub power_request: Option<String>,
    /// It holds a live allocation.
    pub busy: bool,
    /// When its last allocation was released.
    pub last_release: Option<DateTime<Utc>>,
}

/// Every pool node.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn scaling_node_list(ex: impl PgExecutor<'_>) -> Result<Vec<ScalingNodeRow>, DbError> {
    Ok(sqlx::query_as!(
        ScalingNodeRow,
        r#"SELECT n.id, n.name, n.pool AS "pool!", n.state, n.reason, n.instance_id,
                  n.instance_type, n.launch_id, n.launched_at, n.power_changed_at,
                  n.power_request,
                  EXISTS (SELECT 1 FROM allocations a
                          WHERE a.node_id = n.id AND a.released_at IS NULL) AS "busy!",
                  (SELECT max(a.released_at) FROM allocations a WHERE a.node_id = n.id)
                      AS last_release
           FROM nodes n WHERE n.pool IS NOT NULL ORDER BY n.id"#
    )
    .fetch_all(ex)
    .await?)
}

/// An (instance type, zone) set aside.
#[derive(Debug, Clone)]
pub struct CooldownRow {
    /// Pool.
    pub pool: String,
    /// Instance type.
    pub instance_type: String,
    /// Zone (`""`: any).
    pub zone: String,
    /// Until.
    pub until: DateTime<Utc>,
    /// The provider's error.
    pub error: String,
}

/// Cooldowns still in force at `now`.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn cooldown_list(
    ex: impl PgExecutor<'_>,
    now: DateTime<Utc>,
) -> Result<Vec<CooldownRow>, DbError> {
    Ok(sqlx::query_as!(
        CooldownRow,
        "SELECT pool, instance_type, zone, until, error FROM pool_cooldowns WHERE until > $1",
        now
    )
    .fetch_all(ex)
    .await?)
}

/// Sets (type, zone) of `pool` aside until `until`.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn cooldown_set(
    ex: impl PgExecutor<'_>,
    pool: &str,
    instance_type: &str,
    zone: &str,
    until: DateTime<Utc>,
    error: &str,
) -> Result<(), DbError> {
    sqlx::query!(
        "INSERT INTO pool_cooldowns (pool, instance_type, zone, until, error)
         VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (pool, instance_type, zone) DO UPDATE SET until = EXCLUDED.until,
             error = EXCLUDED.error",
        pool,
        instance_type,
        zone,
        until,
        error
    )
    .execute(ex)
    .await?;
    Ok(())
}

/// A launch as stored.
#[derive(Debug, Clone)]
pub struct LaunchRow {
    /// The launch id (idempotency token).
    pub id: Uuid,
    /// Pool.
    pub pool: String,
    /// Its nodes in launch-index order.
    pub node_names: Vec<String>,
    /// The instance type asked for first.
    pub instance_type: String,
    /// `on_demand` or `spot`.
    pub market: String,
    /// `requested`, `launched` or `failed`.
    pub state: String,
    /// The job it was for.
    pub job_id: Option<i64>,
    /// When it was written.
    pub created_at: DateTime<Utc>,
}

/// Launches not yet answered (state `requested`), oldest first.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn launch_open_list(ex: impl PgExecutor<'_>) -> Result<Vec<LaunchRow>, DbError> {
    Ok(sqlx::query_as!(
        LaunchRow,
        "SELECT id, pool, node_names, instance_type, market, state, job_id, created_at
         FROM cloud_launches WHERE state = 'requested' ORDER BY created_at, id"
    )
    .fetch_all(ex)
    .await?)
}

/// Launch ids of `pool` in state `launched` or `requested` written after `since`, with
/// their node count: what the rate limit counts.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn launch_recent_count(
    ex: impl PgExecutor<'_>,
    pool: &str,
    since: DateTime<Utc>,
) -> Result<i64, DbError> {
    Ok(sqlx::query_scalar!(
        r#"SELECT COALESCE(sum(cardinality(node_names)), 0)::bigint AS "n!" FROM cloud_launches
           WHERE pool = $1 AND created_at > $2 AND state <> 'failed'"#,
        pool,
        since
    )
    .fetch_one(ex)
    .await?)
}

/// Writes a launch of `node_names` (slots of `pool`, all POWERED_DOWN) and marks them
/// POWERING_UP: all or none. Returns false (writing nothing) when any of them is not a
/// POWERED_DOWN slot of the pool any more.
///
/// # Errors
/// [`DbError`] from the driver.
#[allow(clippy::too_many_arguments)]
#[instrument(skip(conn), err)]
pub async fn launch_create_in_tx(
    conn: &mut PgConnection,
    id: Uuid,
    pool: &str,
    node_names: &[String],
    instance_type: &str,
    market: &str,
    job_id: Option<i64>,
    term: i64,
) -> Result<bool, DbError> {
    let marked = sqlx::query!(
        "UPDATE nodes SET state = 'POWERING_UP', launch_id = $1, launched_at = now(),
                power_changed_at = now(), instance_type = $4, market = $5, zone = NULL,
                instance_id = NULL, reason = NULL, power_request = NULL
         WHERE pool = $2 AND name = ANY($3) AND state = 'POWERED_DOWN'",
        id,
        pool,
        node_names,
        instance_type,
        market
    )
    .execute(&mut *conn)
    .await?
    .rows_affected();
    if marked != node_names.len() as u64 {
        return Ok(false);
    }
    sqlx::query!(
        "INSERT INTO cloud_launches (id, pool, node_names, instance_type, market, job_id, term)
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
        id,
        pool,
        node_names,
        instance_type,
        market,
        job_id,
        term
    )
    .execute(&mut *conn)
    .await?;
    Ok(true)
}

/// One instance of a launch: (node name, instance id, instance type, zone).
pub type LaunchedInstance = (String, String, String, Option<String>);

/// A launch answered with its instances: the launch becomes `launched`, each node of it
/// still POWERING_UP under it gets its instance. Returns the nodes updated.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn), err)]
pub async fn launch_done_in_tx(
    conn: &mut PgConnection,
    id: Uuid,
    instances: &[LaunchedInstance],
) -> Result<u64, DbError> {
    sqlx::query!(
        "UPDATE cloud_launches SET state = 'launched', finished_at = now(), error = NULL
         WHERE id = $1",
        id
    )
    .execute(&mut *conn)
    .await?;
    let mut n = 0;
    for (node, instance, itype, zone) in instances {
        n += sqlx::query!(
            "UPDATE nodes SET instance_id = $3, instance_type = $4, zone = $5
             WHERE name = $2 AND launch_id = $1",
            id,
            node,
            instance,
            itype,
            zone.as_deref()
        )
        .execute(&mut *conn)
        .await?
        .rows_affected();
    }
    Ok(n)
}

/// A launch the provider refused everywhere: it becomes `failed` with `error`, its nodes
/// that are still POWERING_UP under it go back to POWERED_DOWN.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn), err)]
pub async fn launch_failed_in_tx(
    conn: &mut PgConnection,
    id: Uuid,
    error: &str,
) -> Result<(), DbError> {
    sqlx::query!(
        "UPDATE cloud_launches SET state = 'failed', finished_at = now(), error = $2
         WHERE id = $1",
        id,
        error
    )
    .execute(&mut *conn)
    .await?;
    sqlx::query!(
        "UPDATE nodes SET state = 'POWERED_DOWN', launch_id = NULL, launched_at = NULL,
                power_changed_at = now(), instance_id = NULL, zone = NULL,
                reason = left($2, 200)
         WHERE launch_id = $1 AND state = 'POWERING_UP'",
        id,
        error
    )
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// A pool's launch failures in a row (0 when the pool is gone).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn pool_consecutive_failures(
    ex: impl PgExecutor<'_>,
    pool: &str,
) -> Result<i32, DbError> {
    Ok(sqlx::query_scalar!(
        "SELECT consecutive_failures FROM pools WHERE name = $1",
        pool
    )
    .fetch_optional(ex)
    .await?
    .unwrap_or(0))
}

/// The job a launch was made for, if any (`None` also when the launch is gone).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn cloud_launch_job(
    ex: impl PgExecutor<'_>,
    launch: Uuid,
) -> Result<Option<i64>, DbError> {
    Ok(
        sqlx::query_scalar!("SELECT job_id FROM cloud_launches WHERE id = $1", launch)
            .fetch_optional(ex)
            .await?
            .flatten(),
    )
}

/// Records a failed launch on its pool: one more failure in a row, the error, and
/// launches held back until `backoff_until`.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn pool_failure(
    ex: impl PgExecutor<'_>,
    pool: &str,
    error: &str,
    backoff_until: DateTime<Utc>,
) -> Result<(), DbError> {
    sqlx::query!(
        "UPDATE pools SET consecutive_failures = consecutive_failures + 1, last_error = $2,
                last_error_at = now(), backoff_until = $3
         WHERE name = $1",
        pool,
        error,
        backoff_until
    )
    .execute(ex)
    .await?;
    Ok(())
}

/// Records an error on a pool without backing it off (a capacity error that another
/// instance type or zone got past).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn pool_error_note(
    ex: impl PgExecutor<'_>,
    pool: &str,
    error: &str,
) -> Result<(), DbError> {
    sqlx::query!(
        "UPDATE pools SET last_error = $2, last_error_at = now() WHERE name = $1",
        pool,
        error
    )
    .execute(ex)
    .await?;
    Ok(())
}

/// A launch succeeded: the pool's failure count and back-off are cleared, unless it is
/// backing off now (after instances that never joined: a launch is no success then).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn pool_success(ex: impl PgExecutor<'_>, pool: &str) -> Result<(), DbError> {
    sqlx::query!(
        "UPDATE pools SET consecutive_failures = 0, backoff_until = NULL
         WHERE name = $1 AND (backoff_until IS NULL OR backoff_until <= now())",
        pool
    )
    .execute(ex)
    .await?;
    Ok(())
}

/// Starts powering node `id` down: locks it, and when it holds no live allocation (or
/// `force`) and is not already powered down, sets POWERING_DOWN with `reason`. Returns
/// whether it did.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn), err)]
pub async fn node_power_down_begin_in_tx(
    conn: &mut PgConnection,
    id: i64,
    reason: &str,
    force: bool,
) -> Result<bool, DbError> {
    Ok(sqlx::query!(
        "WITH n AS (SELECT id FROM nodes WHERE id = $1 FOR UPDATE)
         UPDATE nodes SET state = 'POWERING_DOWN', reason = $2, power_changed_at = now()
         FROM n
         WHERE nodes.id = n.id AND nodes.state NOT IN ('POWERED_DOWN', 'POWERING_DOWN')
           AND ($3 OR NOT EXISTS (SELECT 1 FROM allocations a
                                  WHERE a.node_id = nodes.id AND a.released_at IS NULL))",
        id,
        reason,
        force
    )
    .execute(&mut *conn)
    .await?
    .rows_affected()
        == 1)
}

/// A node's instance is terminated (or never came): the slot becomes POWERED_DOWN with
/// no instance, its power request cleared, and every credential of its name revoked (the
/// next instance joins with a new bootstrap token).
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn), err)]
pub async fn node_powered_down_in_tx(
    conn: &mut PgConnection,
    id: i64,
    reason: Option<&str>,
) -> Result<(), DbError> {
    let name = sqlx::query_scalar!(
        "UPDATE nodes SET state = 'POWERED_DOWN', instance_id = NULL, zone = NULL,
                launch_id = NULL, launched_at = NULL, power_changed_at = now(),
                power_request = NULL, reason = $2, hostname = ''
         WHERE id = $1 RETURNING name",
        id,
        reason
    )
    .fetch_one(&mut *conn)
    .await?;
    crate::node_credential::node_credential_revoke_for_node(&mut *conn, &name).await?;
    Ok(())
}

/// A node whose instance vanished: DOWN with `reason`, its instance cleared and its
/// credentials revoked (the caller requeues its jobs).
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn), err)]
pub async fn node_instance_gone_in_tx(
    conn: &mut PgConnection,
    id: i64,
    reason: &str,
) -> Result<(), DbError> {
    let name = sqlx::query_scalar!(
        "UPDATE nodes SET state = 'DOWN', instance_id = NULL, launch_id = NULL,
                power_changed_at = now(), reason = $2
         WHERE id = $1 RETURNING name",
        id,
        reason
    )
    .fetch_one(&mut *conn)
    .await?;
    crate::node_credential::node_credential_revoke_for_node(&mut *conn, &name).await?;
    Ok(())
}

/// Clears a node's power request.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn node_power_request_clear(ex: impl PgExecutor<'_>, id: i64) -> Result<(), DbError> {
    sqlx::query!("UPDATE nodes SET power_request = NULL WHERE id = $1", id)
        .execute(ex)
        .await?;
    Ok(())
}
