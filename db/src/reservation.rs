//! The `reservations` and `reservation_nodes` tables: advance reservations (Slurm's
//! `scontrol create reservation`) with the nodes, or GPUs of nodes, they hold.
//!
//! Writers take [`reservation_lock_in_tx`] first, so that the api's overlap and busy
//! checks and the write that follows them see no concurrent reservation change.

use crate::DbError;
use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgExecutor};

/// A node a reservation holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReservedNodeRow {
    /// The node's id.
    pub node_id: i64,
    /// The node's name.
    pub node: String,
    /// The GPU indices held (a GPU-count reservation); `None`: the whole node.
    pub gpus: Option<Vec<i32>>,
}

/// A reservation as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct ReservationRow {
    /// `ReservationName`.
    pub name: String,
    /// The first window's start.
    pub start_time: DateTime<Utc>,
    /// The first window's end (after `start_time`).
    pub end_time: DateTime<Utc>,
    /// Users allowed.
    pub users: Vec<String>,
    /// Accounts allowed.
    pub accounts: Vec<String>,
    /// Flags, by Slurm's names (`MAINT`, `IGNORE_JOBS`, `DAILY`, `WEEKLY`, `FLEX`).
    pub flags: Vec<String>,
    /// `PartitionName` (where its nodes were picked from), if any.
    pub partition: Option<String>,
    /// Who created it.
    pub created_by: String,
    /// What it holds, by node name (ignored by writes except `node_id` and `gpus`).
    pub nodes: Vec<ReservedNodeRow>,
}

struct Raw {
    name: String,
    start_time: DateTime<Utc>,
    end_time: DateTime<Utc>,
    users: Vec<String>,
    accounts: Vec<String>,
    flags: Vec<String>,
    partition: Option<String>,
    created_by: String,
    nodes: serde_json::Value,
}

impl From<Raw> for ReservationRow {
    fn from(r: Raw) -> Self {
        let nodes = r
            .nodes
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .map(|n| ReservedNodeRow {
                        node_id: n["node_id"].as_i64().unwrap_or_default(),
                        node: n["node"].as_str().unwrap_or_default().to_string(),
                        gpus: n["gpus"].as_array().map(|g| {
                            g.iter()
                                .filter_map(|i| i.as_i64())
                                .map(|i| i as i32)
                                .collect()
                        }),
                    })
                    .collect()
            })
            .unwrap_or_default();
        ReservationRow {
            name: r.name,
            start_time: r.start_time,
            end_time: r.end_time,
            users: r.users,
            accounts: r.accounts,
            flags: r.flags,
            partition: r.partition,
            created_by: r.created_by,
            nodes,
        }
    }
}

/// Every reservation (ended ones not yet purged too), by start time and name.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn reservation_list(ex: impl PgExecutor<'_>) -> Result<Vec<ReservationRow>, DbError> {
    let rows = sqlx::query_as!(
        Raw,
        r#"SELECT r.name, r.start_time, r.end_time, r.users, r.accounts, r.flags, r.partition,
                  r.created_by,
                  COALESCE((SELECT jsonb_agg(jsonb_build_object('node_id', n.node_id, 'node', nd.name,
                                                               'gpus', n.gpu_indices)
                                             ORDER BY nd.name)
                            FROM reservation_nodes n JOIN nodes nd ON nd.id = n.node_id
                            WHERE n.reservation = r.name), '[]'::jsonb) AS "nodes!"
           FROM reservations r ORDER BY r.start_time, r.name"#
    )
    .fetch_all(ex)
    .await?;
    Ok(rows.into_iter().map(ReservationRow::from).collect())
}

/// One reservation by name.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn reservation_get(
    ex: impl PgExecutor<'_>,
    name: &str,
) -> Result<Option<ReservationRow>, DbError> {
    let row = sqlx::query_as!(
        Raw,
        r#"SELECT r.name, r.start_time, r.end_time, r.users, r.accounts, r.flags, r.partition,
                  r.created_by,
                  COALESCE((SELECT jsonb_agg(jsonb_build_object('node_id', n.node_id, 'node', nd.name,
                                                               'gpus', n.gpu_indices)
                                             ORDER BY nd.name)
                            FROM reservation_nodes n JOIN nodes nd ON nd.id = n.node_id
                            WHERE n.reservation = r.name), '[]'::jsonb) AS "nodes!"
           FROM reservations r WHERE r.name = $1"#,
        name
    )
    .fetch_optional(ex)
    .await?;
    Ok(row.map(ReservationRow::from))
}

/// Serialises reservation writers for the rest of the transaction (a transaction-scoped
/// advisory lock), so that checks against the other reservations stay true until commit.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn reservation_lock_in_tx(conn: &mut PgConnection) -> Result<(), DbError> {
    sqlx::query!("SELECT pg_advisory_xact_lock(hashtext('berth.reservations'))")
        .execute(conn)
        .await?;
    Ok(())
}

/// Deletes the one-off reservations (neither `DAILY` nor `WEEKLY`) that ended at or
/// before `now` (Slurm purges a reservation when it ends). Returns how many.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn reservation_purge_ended_in_tx(
    conn: &mut PgConnection,
    now: DateTime<Utc>,
) -> Result<u64, DbError> {
    Ok(sqlx::query!(
        r#"DELETE FROM reservations
           WHERE end_time <= $1 AND NOT flags && ARRAY['DAILY', 'WEEKLY']::text[]"#,
        now
    )
    .execute(conn)
    .await?
    .rows_affected())
}

async fn nodes_write_in_tx(conn: &mut PgConnection, row: &ReservationRow) -> Result<(), DbError> {
    sqlx::query!(
        "DELETE FROM reservation_nodes WHERE reservation = $1",
        row.name
    )
    .execute(&mut *conn)
    .await?;
    for n in &row.nodes {
        sqlx::query!(
            "INSERT INTO reservation_nodes (reservation, node_id, gpu_indices) VALUES ($1, $2, $3)",
            row.name,
            n.node_id,
            n.gpus.as_deref()
        )
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// Stores a new reservation and what it holds.
///
/// # Errors
/// [`DbError::Conflict`] on `reservations_pkey` when the name is taken; a CHECK violation
/// for a bad name, window or flags; [`DbError`] from the driver.
pub async fn reservation_insert_in_tx(
    conn: &mut PgConnection,
    row: &ReservationRow,
) -> Result<(), DbError> {
    sqlx::query!(
        r#"INSERT INTO reservations (name, start_time, end_time, users, accounts, flags, partition,
                                    created_by)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"#,
        row.name,
        row.start_time,
        row.end_time,
        &row.users,
        &row.accounts,
        &row.flags,
        row.partition,
        row.created_by
    )
    .execute(&mut *conn)
    .await?;
    nodes_write_in_tx(conn, row).await
}

/// Replaces reservation `row.name`'s window, access, flags, partition and held nodes
/// (not its creator). Returns false when it does not exist.
///
/// # Errors
/// A CHECK violation for a bad window or flags; [`DbError`] from the driver.
pub async fn reservation_update_in_tx(
    conn: &mut PgConnection,
    row: &ReservationRow,
) -> Result<bool, DbError> {
    let found = sqlx::query!(
        r#"UPDATE reservations SET start_time = $2, end_time = $3, users = $4, accounts = $5,
                  flags = $6, partition = $7
           WHERE name = $1"#,
        row.name,
        row.start_time,
        row.end_time,
        &row.users,
        &row.accounts,
        &row.flags,
        row.partition
    )
    .execute(&mut *conn)
    .await?
    .rows_affected()
        > 0;
    if found {
        nodes_write_in_tx(conn, row).await?;
    }
    Ok(found)
}

/// What [`reservation_delete_in_tx`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReservationDelete {
    /// Deleted.
    Deleted,
    /// No such reservation.
    Missing,
    /// Jobs that name it are running (RUNNING, SUSPENDED, COMPLETING); their count.
    RunningJobs(i64),
}

/// Deletes reservation `name` unless jobs that name it are running (as Slurm refuses).
/// Pending jobs that name it stay pending (the scheduler gives them the reason
/// `ReservationDeleted`).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn reservation_delete_in_tx(
    conn: &mut PgConnection,
    name: &str,
) -> Result<ReservationDelete, DbError> {
    let exists = sqlx::query_scalar!(
        r#"SELECT 1 AS "one!" FROM reservations WHERE name = $1 FOR UPDATE"#,
        name
    )
    .fetch_optional(&mut *conn)
    .await?
    .is_some();
    if !exists {
        return Ok(ReservationDelete::Missing);
    }
    let running = sqlx::query_scalar!(
        r#"SELECT count(*) AS "n!" FROM jobs
           WHERE spec->>'reservation' = $1 AND state IN ('RUNNING', 'SUSPENDED', 'COMPLETING')"#,
        name
    )
    .fetch_one(&mut *conn)
    .await?;
    if running > 0 {
        return Ok(ReservationDelete::RunningJobs(running));
    }
    sqlx::query!("DELETE FROM reservations WHERE name = $1", name)
        .execute(&mut *conn)
        .await?;
    Ok(ReservationDelete::Deleted)
}

/// A live allocation as reservation checks see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveAllocationRow {
    /// The job.
    pub job_id: i64,
    /// The node.
    pub node_id: i64,
    /// The GPU indices it holds there.
    pub gpus: Vec<i32>,
    /// When its time limit ends it (`None`: no limit).
    pub end: Option<DateTime<Utc>>,
    /// Whether it holds the whole node (`--exclusive`).
    pub exclusive: bool,
}

/// Every live allocation with the end its job's time limit gives it.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn reservation_live_allocations(
    ex: impl PgExecutor<'_>,
) -> Result<Vec<LiveAllocationRow>, DbError> {
    Ok(sqlx::query_as!(
        LiveAllocationRow,
        r#"SELECT a.job_id, a.node_id, a.gpu_indices AS gpus, a.exclusive,
                  a.created_at + make_interval(secs => j.time_limit) AS end
           FROM allocations a JOIN jobs j ON j.id = a.job_id
           WHERE a.released_at IS NULL
           ORDER BY a.node_id, a.job_id"#
    )
    .fetch_all(ex)
    .await?)
}
