//! The `partitions` table.

use crate::DbError;
use sqlx::PgExecutor;

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
}

/// Every partition, by name.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn partition_list(ex: impl PgExecutor<'_>) -> Result<Vec<PartitionRow>, DbError> {
    Ok(sqlx::query_as!(
        PartitionRow,
        r#"SELECT name, is_default, default_time, max_time, nodes, priority_tier, max_nodes,
                  allowed_accounts, allowed_qos FROM partitions ORDER BY name"#
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
                  allowed_accounts, allowed_qos FROM partitions
           WHERE ($1::text IS NULL AND is_default) OR name = $1"#,
        name
    )
    .fetch_optional(ex)
    .await?)
}
