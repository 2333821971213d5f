//! The `nodes` table and its `gpus`.

use crate::DbError;
use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgExecutor};
use tracing::instrument;

/// A node as stored.
#[derive(Debug, Clone)]
pub struct NodeRow {
    /// Id.
    pub id: i64,
    /// Name.
    pub name: String,
    /// Host name.
    pub hostname: String,
    /// Administrative state: `UP`, `DRAINING`, `DRAINED`, `DOWN` or a cloud state.
    pub state: String,
    /// Why drained or down.
    pub reason: Option<String>,
    /// CPUs.
    pub cpus: i32,
    /// Memory, MiB.
    pub memory_mib: i64,
    /// Features.
    pub features: Vec<String>,
    /// Last sync.
    pub last_heartbeat: Option<DateTime<Utc>>,
}

/// A GPU as stored, with the job holding it.
#[derive(Debug, Clone)]
pub struct GpuRow {
    /// The node.
    pub node_id: i64,
    /// Device index.
    pub index: i32,
    /// UUID.
    pub uuid: String,
    /// Model.
    pub model: String,
    /// Memory, MiB.
    pub memory_mib: i64,
    /// Topology domain (GPUs with the same number are close).
    pub domain: Option<i32>,
    /// `gpu`, `mig` or `shard`.
    pub kind: String,
    /// The physical GPU of a MIG instance or shard.
    pub parent: Option<i32>,
    /// The job holding it through a live allocation.
    pub job_id: Option<i64>,
    /// Latest utilisation, percent.
    pub utilization_pct: Option<i32>,
    /// Latest memory used, MiB.
    pub memory_used_mib: Option<i64>,
}

/// A GPU to register.
#[derive(Debug, Clone)]
pub struct GpuInsert {
    /// Device index.
    pub index: i32,
    /// UUID.
    pub uuid: String,
    /// Model.
    pub model: String,
    /// Memory, MiB.
    pub memory_mib: i64,
    /// Topology domain.
    pub domain: Option<i32>,
    /// `gpu`, `mig` or `shard`.
    pub kind: String,
    /// The physical GPU of a MIG instance or shard.
    pub parent: Option<i32>,
}

/// Registers a node (or updates it when the name is known) with its GPUs; GPUs it no
/// longer reports are marked absent. Returns the node's id.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn, features, gpus), err)]
pub async fn node_register_in_tx(
    conn: &mut PgConnection,
    name: &str,
    hostname: &str,
    cpus: i32,
    memory_mib: i64,
    features: &[String],
    gpus: &[GpuInsert],
) -> Result<i64, DbError> {
    let id = sqlx::query_scalar!(
        r#"INSERT INTO nodes (name, hostname, cpus, memory_mib, features, last_heartbeat)
           VALUES ($1, $2, $3, $4, $5, now())
           ON CONFLICT (name) DO UPDATE SET hostname = EXCLUDED.hostname, cpus = EXCLUDED.cpus,
               memory_mib = EXCLUDED.memory_mib, features = EXCLUDED.features,
               last_heartbeat = now()
           RETURNING id"#,
        name,
        hostname,
        cpus,
        memory_mib,
        features
    )
    .fetch_one(&mut *conn)
    .await?;
    let indices: Vec<i32> = gpus.iter().map(|g| g.index).collect();
    let uuids: Vec<String> = gpus.iter().map(|g| g.uuid.clone()).collect();
    let models: Vec<String> = gpus.iter().map(|g| g.model.clone()).collect();
    let memory: Vec<i64> = gpus.iter().map(|g| g.memory_mib).collect();
    let domains: Vec<Option<i32>> = gpus.iter().map(|g| g.domain).collect();
    let kinds: Vec<String> = gpus.iter().map(|g| g.kind.clone()).collect();
    let parents: Vec<Option<i32>> = gpus.iter().map(|g| g.parent).collect();
    sqlx::query!(
        r#"INSERT INTO gpus (node_id, index, uuid, model, memory_mib, domain, kind, parent, present)
           SELECT $1, g.index, g.uuid, g.model, g.memory_mib, g.domain, g.kind, g.parent, true
           FROM UNNEST($2::int[], $3::text[], $4::text[], $5::bigint[], $6::int[], $7::text[],
                       $8::int[])
                AS g(index, uuid, model, memory_mib, domain, kind, parent)
           ON CONFLICT (node_id, index) DO UPDATE SET uuid = EXCLUDED.uuid, model = EXCLUDED.model,
               memory_mib = EXCLUDED.memory_mib, domain = EXCLUDED.domain, kind = EXCLUDED.kind,
               parent = EXCLUDED.parent, present = true"#,
        id,
        &indices,
        &uuids,
        &models,
        &memory,
        &domains as &[Option<i32>],
        &kinds,
        &parents as &[Option<i32>]
    )
    .execute(&mut *conn)
    .await?;
    sqlx::query!(
        "UPDATE gpus SET present = false WHERE node_id = $1 AND NOT (index = ANY($2))",
        id,
        &indices
    )
    .execute(&mut *conn)
    .await?;
    Ok(id)
}

/// One node by name.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn node_get_by_name(
    ex: impl PgExecutor<'_>,
    name: &str,
) -> Result<Option<NodeRow>, DbError> {
    Ok(sqlx::query_as!(
        NodeRow,
        r#"SELECT id, name, hostname, state, reason, cpus, memory_mib, features, last_heartbeat
           FROM nodes WHERE name = $1"#,
        name
    )
    .fetch_optional(ex)
    .await?)
}

/// Every node, by name.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn node_list(ex: impl PgExecutor<'_>) -> Result<Vec<NodeRow>, DbError> {
    Ok(sqlx::query_as!(
        NodeRow,
        r#"SELECT id, name, hostname, state, reason, cpus, memory_mib, features, last_heartbeat
           FROM nodes ORDER BY name"#
    )
    .fetch_all(ex)
    .await?)
}

/// What one node can give jobs, as submission checks read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeCapacity {
    /// Id.
    pub id: i64,
    /// Name.
    pub name: String,
    /// CPUs jobs may use (0: not counted, no limit).
    pub cpus: i64,
    /// Memory jobs may use, MiB (0: not counted, no limit).
    pub memory_mib: i64,
    /// Features (`Features=`).
    pub features: Vec<String>,
}

/// Every node with the CPUs and memory jobs may use on it and its features, by name.
/// The one place that says what "usable" means (today: what the node has; with
/// `CoreSpecCount`/`MemSpecLimit`, what it has less what they keep for the system).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn node_capacity_list(ex: impl PgExecutor<'_>) -> Result<Vec<NodeCapacity>, DbError> {
    Ok(sqlx::query_as!(
        NodeCapacity,
        r#"SELECT id, name, GREATEST(cpus, 0)::bigint AS "cpus!",
                  GREATEST(memory_mib, 0) AS "memory_mib!", features
           FROM nodes ORDER BY name"#
    )
    .fetch_all(ex)
    .await?)
}

/// Every present GPU with its holder, by node and index; with `node`, only that node's.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn gpu_list(ex: impl PgExecutor<'_>, node: Option<i64>) -> Result<Vec<GpuRow>, DbError> {
    Ok(sqlx::query_as!(
        GpuRow,
        r#"SELECT g.node_id, g.index, g.uuid, g.model, g.memory_mib, g.domain, g.kind, g.parent,
                  g.utilization_pct,
                  g.memory_used_mib,
                  (SELECT a.job_id FROM allocation_gpus ag JOIN allocations a ON a.id = ag.allocation_id
                   WHERE ag.node_id = g.node_id AND ag.gpu_index = g.index AND ag.released_at IS NULL
                   LIMIT 1) AS job_id
           FROM gpus g WHERE g.present AND ($1::bigint IS NULL OR g.node_id = $1)
           ORDER BY g.node_id, g.index"#,
        node
    )
    .fetch_all(ex)
    .await?)
}

/// Records a sync from the node: its heartbeat and latest GPU samples.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn node_heartbeat(
    ex: impl PgExecutor<'_>,
    node_id: i64,
    indices: &[i32],
    utilization_pct: &[i32],
    memory_used_mib: &[i64],
    power_w: &[f64],
    temperature_c: &[i32],
) -> Result<(), DbError> {
    sqlx::query!(
        r#"WITH hb AS (UPDATE nodes SET last_heartbeat = now() WHERE id = $1)
           UPDATE gpus SET utilization_pct = s.util, memory_used_mib = s.mem, power_w = s.power,
                  temperature_c = s.temp, sampled_at = now()
           FROM UNNEST($2::int[], $3::int[], $4::bigint[], $5::float8[], $6::int[])
                AS s(index, util, mem, power, temp)
           WHERE gpus.node_id = $1 AND gpus.index = s.index"#,
        node_id,
        indices,
        utilization_pct,
        memory_used_mib,
        power_w,
        temperature_c
    )
    .execute(ex)
    .await?;
    Ok(())
}

/// Locks node rows (in id order, so two transactions never deadlock) for the rest of the
/// transaction, and returns the ids still available for placement (state `UP`).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn node_lock_in_tx(conn: &mut PgConnection, ids: &[i64]) -> Result<Vec<i64>, DbError> {
    let rows = sqlx::query!(
        "SELECT id, state FROM nodes WHERE id = ANY($1) ORDER BY id FOR UPDATE",
        ids
    )
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .filter(|r| r.state == "UP")
        .map(|r| r.id)
        .collect())
}

/// Slurm's reason for a node declared DOWN by the node-timeout sweep.
pub const NOT_RESPONDING: &str = "Not responding";

/// Nodes that can take work or are draining (`UP`, `DRAINING`, `DRAINED`) whose last
/// sync is older than `timeout_seconds`, by name.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn node_silent_list(
    ex: impl PgExecutor<'_>,
    timeout_seconds: f64,
) -> Result<Vec<NodeRow>, DbError> {
    Ok(sqlx::query_as!(
        NodeRow,
        r#"SELECT id, name, hostname, state, reason, cpus, memory_mib, features, last_heartbeat
           FROM nodes
           WHERE state IN ('UP', 'DRAINING', 'DRAINED')
             AND (last_heartbeat IS NULL OR last_heartbeat < now() - make_interval(secs => $1))
           ORDER BY name"#,
        timeout_seconds
    )
    .fetch_all(ex)
    .await?)
}

/// Declares node `id` DOWN with `reason` when it is still silent (its last sync older than
/// `timeout_seconds`, re-checked under the row lock the update takes, so a sync that just
/// arrived wins). Returns false when the node spoke meanwhile or is already DOWN.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn), err)]
pub async fn node_down_if_silent_in_tx(
    conn: &mut PgConnection,
    id: i64,
    timeout_seconds: f64,
    reason: &str,
) -> Result<bool, DbError> {
    let done = sqlx::query!(
        r#"UPDATE nodes SET state = 'DOWN', reason = $3
           WHERE id = $1 AND state IN ('UP', 'DRAINING', 'DRAINED')
             AND (last_heartbeat IS NULL OR last_heartbeat < now() - make_interval(secs => $2))"#,
        id,
        timeout_seconds,
        reason
    )
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Returns DOWN nodes that synced within the last `timeout_seconds` to service (`UP`, no
/// reason), as Slurm's `ReturnToService`: with `any_reason` false only nodes that were
/// DOWN because they were not responding (`ReturnToService=1`), with true every DOWN node
/// (`ReturnToService=2`). Returns the names of the nodes returned.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn), err)]
pub async fn node_return_to_service_in_tx(
    conn: &mut PgConnection,
    timeout_seconds: f64,
    any_reason: bool,
) -> Result<Vec<String>, DbError> {
    Ok(sqlx::query_scalar!(
        r#"UPDATE nodes SET state = 'UP', reason = NULL
           WHERE state = 'DOWN' AND last_heartbeat >= now() - make_interval(secs => $1)
             AND ($2 OR reason = $3)
           RETURNING name"#,
        timeout_seconds,
        any_reason,
        NOT_RESPONDING
    )
    .fetch_all(conn)
    .await?)
}

/// Drains node `id` (Slurm's `DRAIN`: no new work) with `reason`, unless it is already
/// DOWN or drained. Returns true when it changed.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn), err)]
pub async fn node_drain_in_tx(
    conn: &mut PgConnection,
    id: i64,
    reason: &str,
) -> Result<bool, DbError> {
    let done = sqlx::query!(
        r#"UPDATE nodes SET state = 'DRAINED', reason = $2
           WHERE id = $1 AND state IN ('UP', 'DRAINING')"#,
        id,
        reason
    )
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Drains a node for `reason` (a GPU fault): an UP node becomes DRAINING, or DRAINED when
/// it holds no live allocation; a node already drained or down keeps its state and
/// reason. Returns whether it changed.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn node_drain(
    ex: impl PgExecutor<'_>,
    node_id: i64,
    reason: &str,
) -> Result<bool, DbError> {
    let changed = sqlx::query!(
        r#"UPDATE nodes SET reason = $2,
              state = CASE WHEN EXISTS (SELECT 1 FROM allocations a
                                        WHERE a.node_id = nodes.id AND a.released_at IS NULL)
                           THEN 'DRAINING' ELSE 'DRAINED' END
           WHERE id = $1 AND state = 'UP'"#,
        node_id,
        reason
    )
    .execute(ex)
    .await?;
    Ok(changed.rows_affected() > 0)
}

/// A DRAINING node whose last allocation is released becomes DRAINED.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn node_drain_settle(ex: impl PgExecutor<'_>, node_id: i64) -> Result<(), DbError> {
    sqlx::query!(
        r#"UPDATE nodes SET state = 'DRAINED'
           WHERE id = $1 AND state = 'DRAINING'
             AND NOT EXISTS (SELECT 1 FROM allocations a
                             WHERE a.node_id = nodes.id AND a.released_at IS NULL)"#,
        node_id
    )
    .execute(ex)
    .await?;
    Ok(())
}

/// What an operator's drain or resume did to a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdminChange {
    /// The node's state after the change (`DRAINING`, `DRAINED`, `DOWN` or `UP`).
    Done(String),
    /// No such node.
    Missing,
    /// The node is in a cloud power state (`POWERED_DOWN`, `POWERING_UP`,
    /// `POWERING_DOWN`) that the cloud module owns; its state.
    PowerState(String),
}

async fn admin_change_outcome(
    conn: &mut PgConnection,
    name: &str,
    changed: Option<String>,
) -> Result<AdminChange, DbError> {
    if let Some(state) = changed {
        return Ok(AdminChange::Done(state));
    }
    let state = sqlx::query_scalar!("SELECT state FROM nodes WHERE name = $1", name)
        .fetch_optional(&mut *conn)
        .await?;
    Ok(match state {
        None => AdminChange::Missing,
        Some(s) => AdminChange::PowerState(s),
    })
}

/// An operator drains node `name` (scontrol's `State=DRAIN Reason=…`): an UP or DRAINING
/// node becomes DRAINING while it holds live allocations and DRAINED otherwise; a DRAINED
/// node stays so; a DOWN node stays DOWN. Each takes `reason`, which also keeps a DOWN
/// node from returning to service by itself (only "Not responding" nodes return).
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn), err)]
pub async fn node_admin_drain_in_tx(
    conn: &mut PgConnection,
    name: &str,
    reason: &str,
) -> Result<AdminChange, DbError> {
    let changed = sqlx::query_scalar!(
        r#"UPDATE nodes SET reason = $2,
              state = CASE
                  WHEN state IN ('DRAINED', 'DOWN') THEN state
                  WHEN EXISTS (SELECT 1 FROM allocations a
                               WHERE a.node_id = nodes.id AND a.released_at IS NULL)
                  THEN 'DRAINING' ELSE 'DRAINED' END
           WHERE name = $1 AND state IN ('UP', 'DRAINING', 'DRAINED', 'DOWN')
           RETURNING state"#,
        name,
        reason
    )
    .fetch_optional(&mut *conn)
    .await?;
    admin_change_outcome(conn, name, changed).await
}

/// An operator returns node `name` to service (scontrol's `State=RESUME`): a DRAINING,
/// DRAINED or DOWN node becomes UP with no reason; an UP node is left as it is. A DOWN
/// node that is still silent is declared DOWN again by the next node-timeout sweep.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn), err)]
pub async fn node_resume_in_tx(
    conn: &mut PgConnection,
    name: &str,
) -> Result<AdminChange, DbError> {
    let changed = sqlx::query_scalar!(
        r#"UPDATE nodes SET state = 'UP', reason = NULL
           WHERE name = $1 AND state IN ('UP', 'DRAINING', 'DRAINED', 'DOWN')
           RETURNING state"#,
        name
    )
    .fetch_optional(&mut *conn)
    .await?;
    admin_change_outcome(conn, name, changed).await
}
