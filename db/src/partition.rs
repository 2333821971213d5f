//! The `partitions` table.

use crate::DbError;
use sqlx::{PgConnection, PgExecutor};

/// A partition as stored.
#[derive(Debug, Clone)]
pub struct PartitionRow {
    /// Name.
    pub name: String,
    /// Jobs naming no partition land here.
    pub is_default: bool,
    /// Default time limit, seconds.
    pub default_time: Option<i64>,
    /// Maximum time limit, seconds.
    pub max_time: Option<i64>,
    /// Member nodes; empty = all.
    pub nodes: Vec<String>,
    /// `PriorityTier`: the partition factor of the multifactor priority.
    pub priority_tier: i32,
    /// `MaxNodes` per job.
    pub max_nodes: Option<i32>,
    /// `AllowAccounts`; empty = all.
    pub allowed_accounts: Vec<String>,
    /// `AllowQos`; empty = all.
    pub allowed_qos: Vec<String>,
    /// `DefCpuPerGPU`.
    pub def_cpu_per_gpu: Option<i32>,
    /// `DefMemPerGPU`, MiB.
    pub def_mem_per_gpu: Option<i64>,
    /// `DefMemPerCPU`, MiB.
    pub def_mem_per_cpu: Option<i64>,
    /// `MaxMemPerNode`, MiB.
    pub max_mem_per_node: Option<i64>,
}

impl PartitionRow {
    /// The partition's CPU and memory defaults and cap, as resource requests read them.
    pub fn resource_defaults(&self) -> berth_core::resources::PartitionDefaults {
        let pos = |v: Option<i64>| v.and_then(|v| u64::try_from(v).ok());
        berth_core::resources::PartitionDefaults {
            def_cpu_per_gpu: self.def_cpu_per_gpu.and_then(|v| u32::try_from(v).ok()),
            def_mem_per_gpu: pos(self.def_mem_per_gpu),
            def_mem_per_cpu: pos(self.def_mem_per_cpu),
            max_mem_per_node: pos(self.max_mem_per_node),
        }
    }
}

/// Every partition, by name.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn partition_list(ex: impl PgExecutor<'_>) -> Result<Vec<PartitionRow>, DbError> {
    Ok(sqlx::query_as!(
        PartitionRow,
        r#"SELECT name, is_default, default_time, max_time, nodes, priority_tier, max_nodes,
                  allowed_accounts, allowed_qos, def_cpu_per_gpu, def_mem_per_gpu,
                  def_mem_per_cpu, max_mem_per_node FROM partitions ORDER BY name"#
    )
    .fetch_all(ex)
    .await?)
}

/// One partition by name, or the default one when `name` is `None`.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn partition_get(
    ex: impl PgExecutor<'_>,
    name: Option<&str>,
) -> Result<Option<PartitionRow>, DbError> {
    Ok(sqlx::query_as!(
        PartitionRow,
        r#"SELECT name, is_default, default_time, max_time, nodes, priority_tier, max_nodes,
                  allowed_accounts, allowed_qos, def_cpu_per_gpu, def_mem_per_gpu,
                  def_mem_per_cpu, max_mem_per_node FROM partitions
           WHERE ($1::text IS NULL AND is_default) OR name = $1"#,
        name
    )
    .fetch_optional(ex)
    .await?)
}

/// Creates or replaces partition `row.name` (every column from `row`); when `row` is the
/// default, the previous default stops being one. Returns true when it was created.
///
/// # Errors
/// [`DbError`] from the driver (a CHECK violation for a bad name or times).
pub async fn partition_put_in_tx(
    conn: &mut PgConnection,
    row: &PartitionRow,
) -> Result<bool, DbError> {
    if row.is_default {
        sqlx::query!(
            "UPDATE partitions SET is_default = false WHERE is_default AND name <> $1",
            row.name
        )
        .execute(&mut *conn)
        .await?;
    }
    Ok(sqlx::query_scalar!(
        r#"INSERT INTO partitions (name, is_default, default_time, max_time, nodes, priority_tier,
                                  max_nodes, allowed_accounts, allowed_qos, def_cpu_per_gpu,
                                  def_mem_per_gpu, def_mem_per_cpu, max_mem_per_node)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
           ON CONFLICT (name) DO UPDATE SET is_default = EXCLUDED.is_default,
               default_time = EXCLUDED.default_time, max_time = EXCLUDED.max_time,
               nodes = EXCLUDED.nodes, priority_tier = EXCLUDED.priority_tier,
               max_nodes = EXCLUDED.max_nodes, allowed_accounts = EXCLUDED.allowed_accounts,
               allowed_qos = EXCLUDED.allowed_qos, def_cpu_per_gpu = EXCLUDED.def_cpu_per_gpu,
               def_mem_per_gpu = EXCLUDED.def_mem_per_gpu,
               def_mem_per_cpu = EXCLUDED.def_mem_per_cpu,
               max_mem_per_node = EXCLUDED.max_mem_per_node
           RETURNING (xmax = 0) AS "created!""#,
        row.name,
        row.is_default,
        row.default_time,
        row.max_time,
        &row.nodes,
        row.priority_tier,
        row.max_nodes,
        &row.allowed_accounts,
        &row.allowed_qos,
        row.def_cpu_per_gpu,
        row.def_mem_per_gpu,
        row.def_mem_per_cpu,
        row.max_mem_per_node
    )
    .fetch_one(&mut *conn)
    .await?)
}

/// Why a partition could not be deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PartitionDelete {
    /// Deleted.
    Deleted,
    /// No such partition.
    Missing,
    /// It is the default partition.
    IsDefault,
    /// Jobs not yet ended (pending, running, completing, suspended) are in it; their
    /// count.
    ActiveJobs(i64),
}

/// Deletes partition `name` unless it is the default or holds jobs that have not ended,
/// including pending jobs that list it among several (`-p a,b`) (its row is locked
/// first, so a submission naming it waits or fails cleanly).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn partition_delete_in_tx(
    conn: &mut PgConnection,
    name: &str,
) -> Result<PartitionDelete, DbError> {
    let Some(is_default) = sqlx::query_scalar!(
        "SELECT is_default FROM partitions WHERE name = $1 FOR UPDATE",
        name
    )
    .fetch_optional(&mut *conn)
    .await?
    else {
        return Ok(PartitionDelete::Missing);
    };
    if is_default {
        return Ok(PartitionDelete::IsDefault);
    }
    let active = sqlx::query_scalar!(
        r#"SELECT count(*) AS "n!" FROM jobs
           WHERE (partition = $1 OR $1 = ANY(partitions)) AND state IN ('PENDING', 'RUNNING', 'SUSPENDED', 'COMPLETING')"#,
        name
    )
    .fetch_one(&mut *conn)
    .await?;
    if active > 0 {
        return Ok(PartitionDelete::ActiveJobs(active));
    }
    sqlx::query!("DELETE FROM partitions WHERE name = $1", name)
        .execute(&mut *conn)
        .await?;
    Ok(PartitionDelete::Deleted)
}

/// Holds partition `name` for the rest of the transaction against a concurrent delete (a
/// key-share lock). Returns false when it no longer exists.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn partition_hold_in_tx(conn: &mut PgConnection, name: &str) -> Result<bool, DbError> {
    Ok(sqlx::query_scalar!(
        "SELECT 1 AS \"one!\" FROM partitions WHERE name = $1 FOR KEY SHARE",
        name
    )
    .fetch_optional(conn)
    .await?
    .is_some())
}
