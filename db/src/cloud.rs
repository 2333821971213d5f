//! Cloud node pools' rows: `pools`, their node slots (rows of `nodes` with `pool` set),
//! `cloud_launches`, `pool_cooldowns` and `cloud_events`. The api declares pools and
//! their slots; the scheduler leader's scaling reconciler launches and terminates.

//!
//! Partition membership: a pool's `partitions` are joined by adding its slot names to
//! those partitions' node lists (what `GET /v1/partitions` shows and the scheduler
//! reads). A partition that lists no nodes holds every node, pool slots included, and is
//! left as it is. Names of slots that no longer exist are taken out; a pool that stops
//! naming a partition takes its slot names out of it, and is refused when that would
//! leave the partition's list empty (an empty list means every node).

use crate::DbError;
use berth_core::pool::{slot_name, InstanceShape, PoolSpec};
use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgExecutor};
use tracing::instrument;

/// Gives node slot `name` of pool `pool` the shape of an instance type: its CPUs,
/// memory, features and simulated-until-joined GPU rows (`slot-<node>-<i>` uuids), and
/// creates it POWERED_DOWN when it does not exist. A slot with an instance keeps what its
/// worker reported: only POWERED_DOWN and POWERING_UP slots are reshaped. Returns the
/// node id, or `None` when a node of that name exists outside the pool.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn, shape, features), err)]
pub async fn slot_shape_set_in_tx(
    conn: &mut PgConnection,
    pool: &str,
    name: &str,
    shape: &InstanceShape,
    features: &[String],
) -> Result<Option<i64>, DbError> {
    let cpus = i32::try_from(shape.cpus).unwrap_or(i32::MAX);
    let memory = i64::try_from(shape.memory_mib).unwrap_or(i64::MAX);
    let id = sqlx::query_scalar!(
        r#"INSERT INTO nodes (name, hostname, state, pool, cpus, memory_mib, features,
                              reported_cpus, reported_memory_mib, reported_features,
                              power_changed_at)
           VALUES ($1, '', 'POWERED_DOWN', $2, $3, $4, $5, $3, $4, $5, now())
           ON CONFLICT (name) DO UPDATE SET
               cpus = CASE WHEN nodes.state IN ('POWERED_DOWN', 'POWERING_UP')
                           THEN EXCLUDED.cpus ELSE nodes.cpus END,
               memory_mib = CASE WHEN nodes.state IN ('POWERED_DOWN', 'POWERING_UP')
                                 THEN EXCLUDED.memory_mib ELSE nodes.memory_mib END,
               reported_cpus = CASE WHEN nodes.state IN ('POWERED_DOWN', 'POWERING_UP')
                                    THEN EXCLUDED.reported_cpus ELSE nodes.reported_cpus END,
               reported_memory_mib = CASE WHEN nodes.state IN ('POWERED_DOWN', 'POWERING_UP')
                                          THEN EXCLUDED.reported_memory_mib
                                          ELSE nodes.reported_memory_mib END,
               features = EXCLUDED.features,
               reported_features = EXCLUDED.reported_features
           WHERE nodes.pool = $2
           RETURNING id"#,
        name,
        pool,
        cpus,
        memory,
        features
    )
    .fetch_optional(&mut *conn)
    .await?;
    let Some(id) = id else {
        return Ok(None);
    };
    let reshape = sqlx::query_scalar!(
        r#"SELECT state IN ('POWERED_DOWN', 'POWERING_UP') AS "r!" FROM nodes WHERE id = $1"#,
        id
    )
    .fetch_one(&mut *conn)
    .await?;
    if reshape {
        let n = i32::try_from(shape.gpu_count).unwrap_or(0);
        let memory = i64::try_from(shape.gpu_memory_mib).unwrap_or(i64::MAX);
        sqlx::query!(
            r#"INSERT INTO gpus (node_id, index, uuid, model, memory_mib, kind, present)
               SELECT $1, i, 'slot-' || $2 || '-' || i, $3, $4, 'gpu', true
               FROM generate_series(0, $5 - 1) AS i
               ON CONFLICT (node_id, index) DO UPDATE SET uuid = EXCLUDED.uuid,
                   model = EXCLUDED.model, memory_mib = EXCLUDED.memory_mib,
                   kind = 'gpu', parent = NULL, domain = NULL, present = true"#,
            id,
            name,
            shape.gpu_model,
            memory,
            n
        )
        .execute(&mut *conn)
        .await?;
        sqlx::query!(
            "UPDATE gpus SET present = false WHERE node_id = $1 AND index >= $2 AND present",
            id,
            n
        )
        .execute(&mut *conn)
        .await?;
    }
    Ok(Some(id))
}

/// Records a cloud event (and the same in the audit log, actor `scheduler`, method
/// `CLOUD`, path `/v1/pools/<pool>` with the kind, node and reason).
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn), err)]
pub async fn cloud_event_insert_in_tx(
    conn: &mut PgConnection,
    pool: &str,
    kind: &str,
    node_name: Option<&str>,
    instance_id: Option<&str>,
    job_id: Option<i64>,
    reason: &str,
) -> Result<(), DbError> {
    sqlx::query!(
        "INSERT INTO cloud_events (pool, node_name, instance_id, job_id, kind, reason)
         VALUES ($1, $2, $3, $4, $5, $6)",
        pool,
        node_name,
        instance_id,
        job_id,
        kind,
        reason
    )
    .execute(&mut *conn)
    .await?;
    let path = format!(
        "/v1/pools/{pool} {kind}{}{}: {reason}",
        node_name.map(|n| format!(" node={n}")).unwrap_or_default(),
        instance_id
            .map(|n| format!(" instance={n}"))
            .unwrap_or_default()
    );
    sqlx::query!(
        "INSERT INTO audit_log (actor, role, method, path, status) VALUES ('scheduler', 'system', 'CLOUD', $1, 200)",
        path
    )
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// The slot number of node `name` in pool `pool` (`burst-3` → 3); `None` when `name` is
/// not `<pool>-<n>` with n ≥ 1 written without leading zeros.
pub fn slot_index(pool: &str, name: &str) -> Option<u32> {
    let n = name.strip_prefix(pool)?.strip_prefix('-')?;
    if n.is_empty() || n.starts_with('0') || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    n.parse().ok()
}

fn spec_decode(e: serde_json::Error) -> DbError {
    DbError::Sqlx(sqlx::Error::Decode(Box::new(e)))
}

/// A pool as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolRow {
    /// Its name.
    pub name: String,
    /// What was declared.
    pub spec: PoolSpec,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last declared.
    pub updated_at: DateTime<Utc>,
    /// Launches are held back until then after repeated failures.
    pub backoff_until: Option<DateTime<Utc>>,
    /// Launch failures in a row.
    pub consecutive_failures: i32,
    /// The last launch error.
    pub last_error: Option<String>,
    /// When it happened.
    pub last_error_at: Option<DateTime<Utc>>,
}

struct PoolRecord {
    name: String,
    spec: serde_json::Value,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    backoff_until: Option<DateTime<Utc>>,
    consecutive_failures: i32,
    last_error: Option<String>,
    last_error_at: Option<DateTime<Utc>>,
}

impl PoolRecord {
    fn into_row(self) -> Result<PoolRow, DbError> {
        Ok(PoolRow {
            spec: serde_json::from_value(self.spec).map_err(spec_decode)?,
            name: self.name,
            created_at: self.created_at,
            updated_at: self.updated_at,
            backoff_until: self.backoff_until,
            consecutive_failures: self.consecutive_failures,
            last_error: self.last_error,
            last_error_at: self.last_error_at,
        })
    }
}

/// One pool by name.
///
/// # Errors
/// [`DbError`] from the driver, or a decode error for a stored spec that no longer
/// parses.
pub async fn pool_get(ex: impl PgExecutor<'_>, name: &str) -> Result<Option<PoolRow>, DbError> {
    sqlx::query_as!(
        PoolRecord,
        "SELECT name, spec, created_at, updated_at, backoff_until, consecutive_failures,
                last_error, last_error_at FROM pools WHERE name = $1",
        name
    )
    .fetch_optional(ex)
    .await?
    .map(PoolRecord::into_row)
    .transpose()
}

/// Every pool, by name.
///
/// # Errors
/// As [`pool_get`].
pub async fn pool_list(ex: impl PgExecutor<'_>) -> Result<Vec<PoolRow>, DbError> {
    sqlx::query_as!(
        PoolRecord,
        "SELECT name, spec, created_at, updated_at, backoff_until, consecutive_failures,
                last_error, last_error_at FROM pools ORDER BY name"
    )
    .fetch_all(ex)
    .await?
    .into_iter()
    .map(PoolRecord::into_row)
    .collect()
}

/// What [`pool_upsert_in_tx`] did, or why it did not. On any answer but `Written` the
/// caller must roll the transaction back (it may have written part of the change).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PoolUpsert {
    /// Stored, slots and partitions synced.
    Written {
        /// The pool is new.
        created: bool,
        /// Slots above `max_nodes` that have an instance or are not POWERED_DOWN, left in
        /// place: they are removed by a later declaration once powered down (the
        /// scaling reconciler launches none above `max_nodes`).
        slots_kept: Vec<String>,
    },
    /// The spec does not validate: the field and why.
    Invalid {
        /// The field (`instance_types[0].memory`).
        field: String,
        /// Why.
        message: String,
    },
    /// A slot's name belongs to a node outside the pool (or one holding a credential).
    NameTaken(String),
    /// `partitions` names a partition that does not exist.
    NoPartition(String),
    /// Leaving this partition (no longer in `partitions`) would empty its node list,
    /// which would make it hold every node.
    PartitionEmptied(String),
}

/// Whether node `node_id` appears in job records (allocations, steps, GPU samples): such
/// a row is kept when its slot goes away.
async fn node_has_history(conn: &mut PgConnection, node_id: i64) -> Result<bool, DbError> {
    Ok(sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM allocations WHERE node_id = $1)
               OR EXISTS (SELECT 1 FROM step_tasks WHERE node_id = $1)
               OR EXISTS (SELECT 1 FROM job_gpu_stats WHERE node_id = $1) AS "h!""#,
        node_id
    )
    .fetch_one(&mut *conn)
    .await?)
}

/// Takes the slot names of pool `pool` out of partition node list `nodes` (names of
/// nodes outside the pool that happen to look like slots stay), then adds `members`.
async fn partition_nodes_with(
    conn: &mut PgConnection,
    pool: &str,
    nodes: Vec<String>,
    members: &[String],
) -> Result<Vec<String>, DbError> {
    let foreign: Vec<String> = sqlx::query_scalar!(
        "SELECT name FROM nodes WHERE name = ANY($1) AND pool IS DISTINCT FROM $2",
        &nodes,
        pool
    )
    .fetch_all(&mut *conn)
    .await?;
    let mut out: Vec<String> = nodes
        .into_iter()
        .filter(|n| slot_index(pool, n).is_none() || foreign.contains(n))
        .collect();
    out.extend(members.iter().cloned());
    out.sort();
    out.dedup();
    Ok(out)
}

/// Declares pool `name` (creates or replaces it) and syncs its slots: `<name>-1` …
/// `<name>-<max_nodes>` get the shape of the first instance type and the pool's features
/// ([`slot_shape_set_in_tx`]), created POWERED_DOWN; slots above `max_nodes` are
/// deleted when POWERED_DOWN with no instance (kept, with a reason, when job records
/// name them), else left ([`PoolUpsert::Written::slots_kept`]); the slots join the node
/// lists of `spec.partitions` (see the module's doc) and leave those of partitions the
/// previous spec named and this one does not.
///
/// # Errors
/// [`DbError`] from the driver; refusals are [`PoolUpsert`] answers.
#[instrument(skip(conn, spec), err)]
pub async fn pool_upsert_in_tx(
    conn: &mut PgConnection,
    name: &str,
    spec: &PoolSpec,
) -> Result<PoolUpsert, DbError> {
    if let Err((field, message)) = spec.validate() {
        return Ok(PoolUpsert::Invalid { field, message });
    }
    let shape = match spec.instance_types[0].shape() {
        Ok(s) => s,
        Err(e) => {
            return Ok(PoolUpsert::Invalid {
                field: "instance_types[0]".into(),
                message: e,
            })
        }
    };
    let old: Option<serde_json::Value> =
        sqlx::query_scalar!("SELECT spec FROM pools WHERE name = $1 FOR UPDATE", name)
            .fetch_optional(&mut *conn)
            .await?;
    let old_partitions: Vec<String> = old
        .as_ref()
        .and_then(|v| v.get("partitions"))
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default();
    let mut partition_lists = Vec::new();
    for p in &spec.partitions {
        let nodes: Option<Vec<String>> =
            sqlx::query_scalar!("SELECT nodes FROM partitions WHERE name = $1 FOR UPDATE", p)
                .fetch_optional(&mut *conn)
                .await?;
        let Some(nodes) = nodes else {
            return Ok(PoolUpsert::NoPartition(p.clone()));
        };
        partition_lists.push((p.clone(), nodes));
    }
    let slots: Vec<String> = (1..=spec.max_nodes).map(|n| slot_name(name, n)).collect();
    let taken: Option<String> = sqlx::query_scalar!(
        r#"SELECT s AS "s!" FROM unnest($2::text[]) AS s
           WHERE EXISTS (SELECT 1 FROM nodes WHERE lower(nodes.name) = lower(s)
                                              AND nodes.pool IS DISTINCT FROM $1)
              OR (NOT EXISTS (SELECT 1 FROM nodes WHERE nodes.name = s AND nodes.pool = $1)
                  AND EXISTS (SELECT 1 FROM node_credentials c
                              WHERE lower(c.node_name) = lower(s) AND c.revoked_at IS NULL))
           LIMIT 1"#,
        name,
        &slots
    )
    .fetch_optional(&mut *conn)
    .await?;
    if let Some(t) = taken {
        return Ok(PoolUpsert::NameTaken(t));
    }
    let json = serde_json::to_value(spec).map_err(spec_decode)?;
    let created = sqlx::query_scalar!(
        r#"INSERT INTO pools (name, spec) VALUES ($1, $2)
           ON CONFLICT (name) DO UPDATE SET spec = EXCLUDED.spec, updated_at = now()
           RETURNING (xmax = 0) AS "created!""#,
        name,
        json
    )
    .fetch_one(&mut *conn)
    .await?;
    for slot in &slots {
        if slot_shape_set_in_tx(conn, name, slot, &shape, &spec.features)
            .await?
            .is_none()
        {
            return Ok(PoolUpsert::NameTaken(slot.clone()));
        }
    }
    // Slots back under max_nodes lose the reason they were kept with.
    sqlx::query!(
        "UPDATE nodes SET reason = NULL
         WHERE pool = $1 AND name = ANY($2) AND reason LIKE 'above max_nodes%'",
        name,
        &slots
    )
    .execute(&mut *conn)
    .await?;
    // Slots above max_nodes.
    let rows = sqlx::query!(
        "SELECT id, name, state, instance_id FROM nodes WHERE pool = $1 ORDER BY id FOR UPDATE",
        name
    )
    .fetch_all(&mut *conn)
    .await?;
    let mut slots_kept = Vec::new();
    for r in rows {
        if slot_index(name, &r.name).is_some_and(|n| n <= spec.max_nodes) {
            continue;
        }
        if r.state != "POWERED_DOWN" || r.instance_id.is_some() {
            slots_kept.push(r.name);
            continue;
        }
        if node_has_history(conn, r.id).await? {
            sqlx::query!(
                "UPDATE nodes SET reason = $2 WHERE id = $1",
                r.id,
                format!(
                    "above max_nodes ({}) of pool {name}; kept for its jobs' records",
                    spec.max_nodes
                )
            )
            .execute(&mut *conn)
            .await?;
        } else {
            crate::node_credential::node_credential_revoke_for_node(&mut *conn, &r.name).await?;
            sqlx::query!("DELETE FROM nodes WHERE id = $1", r.id)
                .execute(&mut *conn)
                .await?;
        }
    }
    let members: Vec<String> = sqlx::query_scalar!(
        "SELECT name FROM nodes WHERE pool = $1 AND (reason IS NULL OR reason NOT LIKE 'above max_nodes%')",
        name
    )
    .fetch_all(&mut *conn)
    .await?;
    for (p, nodes) in partition_lists {
        if nodes.is_empty() {
            continue;
        }
        let nodes = partition_nodes_with(conn, name, nodes, &members).await?;
        sqlx::query!(
            "UPDATE partitions SET nodes = $2 WHERE name = $1",
            p,
            &nodes
        )
        .execute(&mut *conn)
        .await?;
    }
    for p in old_partitions
        .iter()
        .filter(|p| !spec.partitions.contains(p))
    {
        if let Some(emptied) = partition_leave_in_tx(conn, name, p).await? {
            return Ok(PoolUpsert::PartitionEmptied(emptied));
        }
    }
    Ok(PoolUpsert::Written {
        created,
        slots_kept,
    })
}

/// Takes pool `pool`'s slot names out of partition `partition`'s node list; returns the
/// partition's name when that would empty a list that was not empty (nothing written).
async fn partition_leave_in_tx(
    conn: &mut PgConnection,
    pool: &str,
    partition: &str,
) -> Result<Option<String>, DbError> {
    let nodes: Option<Vec<String>> = sqlx::query_scalar!(
        "SELECT nodes FROM partitions WHERE name = $1 FOR UPDATE",
        partition
    )
    .fetch_optional(&mut *conn)
    .await?;
    let Some(nodes) = nodes.filter(|n| !n.is_empty()) else {
        return Ok(None);
    };
    let left = partition_nodes_with(conn, pool, nodes, &[]).await?;
    if left.is_empty() {
        return Ok(Some(partition.to_string()));
    }
    sqlx::query!(
        "UPDATE partitions SET nodes = $2 WHERE name = $1",
        partition,
        &left
    )
    .execute(&mut *conn)
    .await?;
    Ok(None)
}

/// The slot names of the pools that name partition `partition` in their `partitions`:
/// what a partition that lists its nodes keeps when it is redefined.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn pool_slots_of_partition(
    ex: impl PgExecutor<'_>,
    partition: &str,
) -> Result<Vec<String>, DbError> {
    Ok(sqlx::query_scalar!(
        r#"SELECT n.name FROM nodes n JOIN pools p ON p.name = n.pool
           WHERE p.spec->'partitions' ? $1
             AND (n.reason IS NULL OR n.reason NOT LIKE 'above max_nodes%')
           ORDER BY n.name"#,
        partition
    )
    .fetch_all(ex)
    .await?)
}

/// What [`pool_delete_in_tx`] did, or why it did not (roll back on any but `Deleted`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PoolDelete {
    /// Deleted, with its slots.
    Deleted,
    /// No such pool.
    Missing,
    /// A slot has an instance or is not POWERED_DOWN: its name and state.
    Busy {
        /// The slot.
        node: String,
        /// Its state.
        state: String,
    },
    /// Leaving this partition would empty its node list (making it hold every node).
    PartitionEmptied(String),
}

/// Deletes pool `name` and its slots, refused while any slot has an instance or is not
/// POWERED_DOWN. Its slot names leave the partitions it names. A slot that job records
/// name cannot be deleted: it stays as a node outside any pool, DOWN, with the reason
/// `pool <name> deleted; kept for its jobs' records`. Its launches and cooldowns go with
/// it; its events stay.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn), err)]
pub async fn pool_delete_in_tx(conn: &mut PgConnection, name: &str) -> Result<PoolDelete, DbError> {
    let spec: Option<serde_json::Value> =
        sqlx::query_scalar!("SELECT spec FROM pools WHERE name = $1 FOR UPDATE", name)
            .fetch_optional(&mut *conn)
            .await?;
    let Some(spec) = spec else {
        return Ok(PoolDelete::Missing);
    };
    let rows = sqlx::query!(
        "SELECT id, name, state, instance_id FROM nodes WHERE pool = $1 ORDER BY id FOR UPDATE",
        name
    )
    .fetch_all(&mut *conn)
    .await?;
    if let Some(busy) = rows
        .iter()
        .find(|r| r.state != "POWERED_DOWN" || r.instance_id.is_some())
    {
        return Ok(PoolDelete::Busy {
            node: busy.name.clone(),
            state: if busy.state == "POWERED_DOWN" {
                "POWERED_DOWN with an instance".into()
            } else {
                busy.state.clone()
            },
        });
    }
    let partitions: Vec<String> = spec
        .get("partitions")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default();
    for p in &partitions {
        if let Some(emptied) = partition_leave_in_tx(conn, name, p).await? {
            return Ok(PoolDelete::PartitionEmptied(emptied));
        }
    }
    for r in rows {
        crate::node_credential::node_credential_revoke_for_node(&mut *conn, &r.name).await?;
        if node_has_history(conn, r.id).await? {
            sqlx::query!(
                "UPDATE nodes SET pool = NULL, state = 'DOWN', power_request = NULL, reason = $2
                 WHERE id = $1",
                r.id,
                format!("pool {name} deleted; kept for its jobs' records")
            )
            .execute(&mut *conn)
            .await?;
        } else {
            sqlx::query!("DELETE FROM nodes WHERE id = $1", r.id)
                .execute(&mut *conn)
                .await?;
        }
    }
    sqlx::query!("DELETE FROM pools WHERE name = $1", name)
        .execute(&mut *conn)
        .await?;
    Ok(PoolDelete::Deleted)
}

/// Launch requests of pool `pool` sent (or about to be) and not answered yet
/// (`cloud_launches` in state `requested`).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn pool_launches_in_flight(ex: impl PgExecutor<'_>, pool: &str) -> Result<i64, DbError> {
    Ok(sqlx::query_scalar!(
        r#"SELECT count(*) AS "n!" FROM cloud_launches WHERE pool = $1 AND state = 'requested'"#,
        pool
    )
    .fetch_one(ex)
    .await?)
}

/// An (instance type, zone) of a pool set aside after a capacity error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolCooldownRow {
    /// The instance type.
    pub instance_type: String,
    /// The zone (`""`: any).
    pub zone: String,
    /// Set aside until then.
    pub until: DateTime<Utc>,
    /// The provider's error.
    pub error: String,
}

/// Pool `pool`'s cooldowns still running at `now`, soonest over first.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn pool_cooldowns_active(
    ex: impl PgExecutor<'_>,
    pool: &str,
    now: DateTime<Utc>,
) -> Result<Vec<PoolCooldownRow>, DbError> {
    Ok(sqlx::query_as!(
        PoolCooldownRow,
        "SELECT instance_type, zone, until, error FROM pool_cooldowns
         WHERE pool = $1 AND until > $2 ORDER BY until, instance_type, zone",
        pool,
        now
    )
    .fetch_all(ex)
    .await?)
}

/// A cloud event as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloudEventRow {
    /// Id (increasing).
    pub id: i64,
    /// When.
    pub at: DateTime<Utc>,
    /// The pool.
    pub pool: String,
    /// The node, when one.
    pub node_name: Option<String>,
    /// The instance, when one.
    pub instance_id: Option<String>,
    /// The job, when one.
    pub job_id: Option<i64>,
    /// `launch`, `joined`, `capacity_error`, ….
    pub kind: String,
    /// What happened.
    pub reason: String,
}

/// Pool `pool`'s most recent events, newest first, at most `limit`.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn cloud_event_list(
    ex: impl PgExecutor<'_>,
    pool: &str,
    limit: i64,
) -> Result<Vec<CloudEventRow>, DbError> {
    Ok(sqlx::query_as!(
        CloudEventRow,
        "SELECT id, at, pool, node_name, instance_id, job_id, kind, reason FROM cloud_events
         WHERE pool = $1 ORDER BY at DESC, id DESC LIMIT $2",
        pool,
        limit
    )
    .fetch_all(ex)
    .await?)
}

/// What pool `pool`'s instances cost per hour: the sum, over its nodes that have an
/// instance, of the `price_per_hour` of their instance type in the pool's spec (a type
/// no longer in the spec counts 0).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn pool_hourly_spend(ex: impl PgExecutor<'_>, pool: &str) -> Result<f64, DbError> {
    Ok(sqlx::query_scalar!(
        r#"SELECT COALESCE(SUM((
                   SELECT (t->>'price_per_hour')::float8
                   FROM jsonb_array_elements(p.spec->'instance_types') t
                   WHERE t->>'name' = n.instance_type LIMIT 1)), 0)::float8 AS "spend!"
           FROM nodes n JOIN pools p ON p.name = n.pool
           WHERE n.pool = $1 AND n.instance_id IS NOT NULL"#,
        pool
    )
    .fetch_one(ex)
    .await?)
}

/// What an operator's power request did ([`node_power_request_set_in_tx`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PowerRequest {
    /// Recorded: the scaling reconciler carries it out.
    Set,
    /// Nothing to do: the node is already in (or going to) the state asked for; its
    /// state.
    AlreadyThere(String),
    /// No such node.
    Missing,
    /// The node is not a pool slot.
    NotPool,
}

/// Records an operator's power request for pool node `name` (`up`, `down`,
/// `down_force`: [`berth_core::pool::PowerAction::as_str`]). `up` for a node that is
/// not POWERED_DOWN / POWERING_DOWN, or `down` for one POWERED_DOWN or POWERING_DOWN, does
/// nothing (and clears an opposite pending request).
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn), err)]
pub async fn node_power_request_set_in_tx(
    conn: &mut PgConnection,
    name: &str,
    action: &str,
) -> Result<PowerRequest, DbError> {
    let row = sqlx::query!(
        "SELECT pool, state FROM nodes WHERE name = $1 FOR UPDATE",
        name
    )
    .fetch_optional(&mut *conn)
    .await?;
    let Some(row) = row else {
        return Ok(PowerRequest::Missing);
    };
    if row.pool.is_none() {
        return Ok(PowerRequest::NotPool);
    }
    let down = matches!(row.state.as_str(), "POWERED_DOWN" | "POWERING_DOWN");
    let there = if action == "up" { !down } else { down };
    if there {
        sqlx::query!(
            "UPDATE nodes SET power_request = NULL WHERE name = $1",
            name
        )
        .execute(&mut *conn)
        .await?;
        return Ok(PowerRequest::AlreadyThere(row.state));
    }
    sqlx::query!(
        "UPDATE nodes SET power_request = $2 WHERE name = $1",
        name,
        action
    )
    .execute(&mut *conn)
    .await?;
    Ok(PowerRequest::Set)
}

/// A pool slot as a joining or registering worker finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotJoin {
    /// The pool.
    pub pool: String,
    /// Its state (`POWERING_UP` while its instance boots).
    pub state: String,
    /// When its instance was requested.
    pub launched_at: Option<DateTime<Utc>>,
    /// The pool's features (kept when the worker reports its own).
    pub features: Vec<String>,
}

/// Pool node `name`, locked for the rest of the transaction; `None` when no pool slot
/// has that name.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn pool_slot_lock_in_tx(
    conn: &mut PgConnection,
    name: &str,
) -> Result<Option<SlotJoin>, DbError> {
    let row = sqlx::query!(
        r#"SELECT n.pool AS "pool!", n.state, n.launched_at, p.spec->'features' AS features
           FROM nodes n JOIN pools p ON p.name = n.pool
           WHERE n.name = $1 FOR UPDATE OF n"#,
        name
    )
    .fetch_optional(&mut *conn)
    .await?;
    Ok(row.map(|r| SlotJoin {
        pool: r.pool,
        state: r.state,
        launched_at: r.launched_at,
        features: r
            .features
            .and_then(|f| serde_json::from_value(f).ok())
            .unwrap_or_default(),
    }))
}

/// A POWERING_UP pool node whose worker registered: it becomes UP (in service), idle
/// since `now`, its reason cleared, and a `joined` event records the seconds since its
/// launch. Returns false (nothing written) when it was not POWERING_UP.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn), err)]
pub async fn pool_slot_joined_in_tx(
    conn: &mut PgConnection,
    name: &str,
    now: DateTime<Utc>,
) -> Result<bool, DbError> {
    let row = sqlx::query!(
        r#"UPDATE nodes SET state = 'UP', reason = NULL, power_changed_at = $2,
                            idle_since = $2
           WHERE name = $1 AND state = 'POWERING_UP' AND pool IS NOT NULL
           RETURNING pool AS "pool!", instance_id, launched_at"#,
        name,
        now
    )
    .fetch_optional(&mut *conn)
    .await?;
    let Some(row) = row else {
        return Ok(false);
    };
    let reason = match row.launched_at {
        Some(at) => format!(
            "joined {} s after its launch",
            (now - at).num_seconds().max(0)
        ),
        None => "joined".to_string(),
    };
    cloud_event_insert_in_tx(
        conn,
        &row.pool,
        "joined",
        Some(name),
        row.instance_id.as_deref(),
        None,
        &reason,
    )
    .await?;
    Ok(true)
}
