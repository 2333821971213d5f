//! QOS, partitions, node settings and cloud node pools defined in the server's
//! configuration file (`[qos.NAME]`, `[partitions.NAME]`, `[nodes.NAME]` and
//! `[pools.NAME]` tables, as Slurm's slurm.conf defines partitions and nodes), applied
//! when the api starts. Pools are declared last, in their own transaction, after QOS and
//! partitions; a pool the file does not name is left as it is. Node settings are written
//! first, in their own transaction; a `[nodes.NAME]` table replaces the values it names
//! (those set by `berth node set` included) at every start and leaves the others.
//!
//! Each table holds the same definition `PUT /v1/qos/{name}` and `PUT
//! /v1/partitions/{name}` take (absent fields take their defaults) and is checked the same
//! way. They are written in one transaction: either every definition applies or none does
//! and the api does not start, with an error naming the table and field. A definition
//! replaces what the API set for that name at every start; QOS and partitions the file does
//! not name are left as they are. The scheduler reads the change at its next cycle.

use crate::error::ApiError;
use crate::fairshare::qos_row;
use crate::partitions::partition_row;
use berth_core::pool::PoolSpec;
use berth_core::qos::QosSpec;
use berth_core::wire::{NodeUpdate, PartitionSpec};
use berth_db::{notify, partition, qos, DbError, Pool};
use serde::Deserialize;
use std::collections::BTreeMap;

/// The QOS and partitions a configuration file defines, by name.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Definitions {
    /// `[qos.NAME]` tables.
    #[serde(default)]
    pub qos: BTreeMap<String, QosSpec>,
    /// `[partitions.NAME]` tables.
    #[serde(default)]
    pub partitions: BTreeMap<String, PartitionSpec>,
    /// `[nodes.NAME]` tables (the body of `PATCH /v1/nodes/{name}`: cpus, memory_mib,
    /// features, weight, core_spec_count, mem_spec_limit_mib), for nodes registered or
    /// not yet: a node takes them when its worker registers.
    #[serde(default)]
    pub nodes: BTreeMap<String, NodeUpdate>,
    /// `[pools.NAME]` tables (the body of `PUT /v1/pools/{name}`): cloud node pools,
    /// declared after QOS and partitions (a pool's `partitions` may name partitions
    /// defined beside it).
    #[serde(default)]
    pub pools: BTreeMap<String, PoolSpec>,
}

impl Definitions {
    /// Nothing defined.
    pub fn is_empty(&self) -> bool {
        self.qos.is_empty()
            && self.partitions.is_empty()
            && self.nodes.is_empty()
            && self.pools.is_empty()
    }
}

/// Checks and writes the `[nodes.NAME]` tables in one transaction. Returns how many.
async fn apply_nodes(pool: &Pool, nodes: &BTreeMap<String, NodeUpdate>) -> Result<usize, String> {
    if nodes.is_empty() {
        return Ok(0);
    }
    let db = |e: DbError| format!("applying [nodes]: {e}");
    let mut patches = Vec::new();
    for (name, update) in nodes {
        let table = format!("nodes.{name}");
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
        {
            return Err(format!(
                "{table}: node names use letters, digits, '_', '.' and '-'"
            ));
        }
        patches.push((
            name,
            crate::nodes::config_patch(update).map_err(|e| named(&table, e))?,
        ));
    }
    let mut tx = berth_db::begin(pool).await.map_err(db)?;
    for (name, patch) in &patches {
        crate::nodes::config_write_in_tx(&mut tx, name, patch)
            .await
            .map_err(|e| named(&format!("nodes.{name}"), e))?;
    }
    notify::notify(&mut *tx, notify::JOBS_CHANNEL, "definitions")
        .await
        .map_err(db)?;
    tx.commit().await.map_err(|e| db(e.into()))?;
    tracing::info!(
        nodes = patches.len(),
        "node settings from the configuration applied"
    );
    Ok(patches.len())
}

/// `table.field: detail` for a definition's error.
fn named(table: &str, e: ApiError) -> String {
    match e {
        ApiError::BadRequest {
            field: Some(field),
            detail,
            ..
        } => format!("{table}.{field}: {detail}"),
        other => format!("{table}: {other}"),
    }
}

/// Checks and writes `definitions` (QOS first, so partitions may allow QOS defined beside
/// them, and QOS may preempt each other). Returns how many were written.
///
/// # Errors
/// A message naming the table and field (`qos.high.preempt: no QOS gold`), or the
/// database error; nothing is written then.
pub async fn apply(pool: &Pool, definitions: &Definitions) -> Result<usize, String> {
    let written = apply_qos_partitions(pool, definitions).await?;
    Ok(written + apply_pools(pool, &definitions.pools).await?)
}

/// Checks and writes the `[pools.NAME]` tables in one transaction. Returns how many.
async fn apply_pools(pool: &Pool, pools: &BTreeMap<String, PoolSpec>) -> Result<usize, String> {
    if pools.is_empty() {
        return Ok(0);
    }
    let db = |e: DbError| format!("applying [pools]: {e}");
    let mut tx = berth_db::begin(pool).await.map_err(db)?;
    for (name, spec) in pools {
        let (_, kept) = crate::pools::pool_write_in_tx(&mut tx, name, spec)
            .await
            .map_err(|e| named(&format!("pools.{name}"), e))?;
        if !kept.is_empty() {
            tracing::warn!(pool = %name, slots = ?kept,
                "slots above max_nodes still have instances: removed once powered down");
        }
    }
    notify::notify(&mut *tx, notify::JOBS_CHANNEL, "definitions")
        .await
        .map_err(db)?;
    tx.commit().await.map_err(|e| db(e.into()))?;
    tracing::info!(pools = pools.len(), "pools from the configuration applied");
    Ok(pools.len())
}

async fn apply_qos_partitions(pool: &Pool, definitions: &Definitions) -> Result<usize, String> {
    let nodes = apply_nodes(pool, &definitions.nodes).await?;
    if definitions.qos.is_empty() && definitions.partitions.is_empty() {
        return Ok(nodes);
    }
    let db = |e: DbError| format!("applying [qos] and [partitions]: {e}");
    let defaults: Vec<&String> = definitions
        .partitions
        .iter()
        .filter(|(_, p)| p.is_default)
        .map(|(n, _)| n)
        .collect();
    if defaults.len() > 1 {
        return Err(format!(
            "partitions: {} are all is_default = true; one partition is the default",
            defaults
                .iter()
                .map(|n| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let mut known: Vec<String> = qos::qos_list(pool)
        .await
        .map_err(db)?
        .into_iter()
        .map(|q| q.name)
        .collect();
    known.extend(definitions.qos.keys().cloned());
    let mut qos_rows = Vec::new();
    for (name, spec) in &definitions.qos {
        qos_rows.push(qos_row(name, spec, &known).map_err(|e| named(&format!("qos.{name}"), e))?);
    }
    let defined_qos: Vec<String> = definitions.qos.keys().cloned().collect();
    let mut partition_rows = Vec::new();
    for (name, spec) in &definitions.partitions {
        partition_rows.push(
            partition_row(pool, name, spec.clone(), &defined_qos)
                .await
                .map_err(|e| named(&format!("partitions.{name}"), e))?,
        );
    }
    let mut tx = berth_db::begin(pool).await.map_err(db)?;
    for row in &qos_rows {
        qos::qos_upsert(&mut *tx, row).await.map_err(db)?;
    }
    for row in &partition_rows {
        partition::partition_put_in_tx(&mut tx, row)
            .await
            .map_err(db)?;
    }
    if partition::partition_get(&mut *tx, None)
        .await
        .map_err(db)?
        .is_none()
    {
        return Err(
            "partitions: no partition would be the default; set is_default = true on one"
                .to_string(),
        );
    }
    notify::notify(&mut *tx, notify::JOBS_CHANNEL, "definitions")
        .await
        .map_err(db)?;
    tx.commit().await.map_err(|e| db(e.into()))?;
    let written = nodes + qos_rows.len() + partition_rows.len();
    tracing::info!(
        qos = qos_rows.len(),
        partitions = partition_rows.len(),
        "QOS and partitions from the configuration applied"
    );
    Ok(written)
}
