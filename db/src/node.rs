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
    /// Who set the reason: the operator who drained the node, or `slurm` for the reasons
    /// Berth sets itself (see [`node_reason_user_set_in_tx`]).
    pub reason_user: Option<String>,
    /// When the reason was set.
    pub reason_time: Option<DateTime<Utc>>,
    /// CPUs (effective: configured, else reported).
    pub cpus: i32,
    /// Memory (Slurm's RealMemory), MiB (effective: configured, else reported).
    pub memory_mib: i64,
    /// Features (effective: configured, else reported).
    pub features: Vec<String>,
    /// Last sync.
    pub last_heartbeat: Option<DateTime<Utc>>,
    /// Slurm's Weight (effective; 1 unless set): lower weights are placed first.
    pub weight: i32,
    /// Slurm's CoreSpecCount: CPUs kept for the system.
    pub core_spec_count: i32,
    /// Slurm's MemSpecLimit, MiB: memory kept for the system.
    pub mem_spec_limit_mib: i64,
    /// CPUs jobs may use: `cpus - core_spec_count` (at least 1 when `cpus` > 0).
    pub usable_cpus: i32,
    /// Memory jobs may use, MiB: `memory_mib - mem_spec_limit_mib` (at least 1 when
    /// `memory_mib` > 0).
    pub usable_memory_mib: i64,
    /// CPUs held by live allocations (the number of their CPU ids).
    pub cpus_allocated: i64,
    /// Memory held by live allocations, MiB.
    pub memory_allocated_mib: i64,
    /// Per CPU id, the core it is on, as the worker reported it (empty: not reported).
    pub cpu_cores: Vec<i32>,
    /// Per CPU id, its socket, as the worker reported it (empty: not reported).
    pub cpu_sockets: Vec<i32>,
    /// The cloud pool whose slot it is (`None`: a static node).
    pub pool: Option<String>,
    /// The provider's id of its current instance.
    pub instance_id: Option<String>,
    /// Its instance's type.
    pub instance_type: Option<String>,
    /// `on_demand` or `spot`.
    pub market: Option<String>,
    /// Its instance's zone.
    pub zone: Option<String>,
    /// When its instance was requested.
    pub launched_at: Option<DateTime<Utc>>,
}

/// `sqlx::query_as!(NodeRow, …)` selecting a [`NodeRow`] from `nodes n`, then `$tail`
/// (`WHERE …`, `ORDER BY …`) with `$args`.
macro_rules! select_nodes {
    ($tail:tt $(, $arg:expr)* $(,)?) => {
        sqlx::query_as!(
            NodeRow,
            r#"SELECT n.id, n.name, n.hostname, n.state, n.reason, n.reason_user,
                      n.reason_time, n.cpus, n.memory_mib,
                      n.features, n.last_heartbeat, n.weight, n.core_spec_count,
                      n.mem_spec_limit_mib, n.usable_cpus, n.usable_memory_mib,
                      n.pool, n.instance_id, n.instance_type, n.market, n.zone,
                      n.launched_at, n.cpu_cores, n.cpu_sockets,
                      (SELECT COALESCE(SUM(cardinality(a.cpu_ids)), 0) FROM allocations a
                       WHERE a.node_id = n.id AND a.released_at IS NULL)::bigint
                          AS "cpus_allocated!",
                      (SELECT COALESCE(SUM(a.mem_mib), 0) FROM allocations a
                       WHERE a.node_id = n.id AND a.released_at IS NULL)::bigint
                          AS "memory_allocated_mib!"
               FROM nodes n "# + $tail
            $(, $arg)*
        )
    };
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

/// Registers a node as [`node_register_reported_in_tx`] does, with `cpus`, `memory_mib`
/// and `features` reported and no weight.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn node_register_in_tx(
    conn: &mut PgConnection,
    name: &str,
    hostname: &str,
    cpus: i32,
    memory_mib: i64,
    features: &[String],
    gpus: &[GpuInsert],
) -> Result<i64, DbError> {
    let reported = NodeReported {
        cpus,
        memory_mib,
        features: features.to_vec(),
        weight: None,
        cpu_domains: Vec::new(),
        cpu_cores: Vec::new(),
        cpu_sockets: Vec::new(),
    };
    node_register_reported_in_tx(conn, name, hostname, &reported, gpus).await
}

/// What a worker reports of its node's resources (Slurm's node line as slurmd -C prints
/// it); configured values ([`node_config_set_in_tx`]) take precedence over these.
#[derive(Debug, Clone, Default)]
pub struct NodeReported {
    /// CPUs.
    pub cpus: i32,
    /// Memory, MiB.
    pub memory_mib: i64,
    /// Features.
    pub features: Vec<String>,
    /// Weight, when the worker declares one.
    pub weight: Option<i32>,
    /// Per CPU id, its topology domain (empty: unknown).
    pub cpu_domains: Vec<i32>,
    /// Per CPU id, the core it is on (empty: unknown).
    pub cpu_cores: Vec<i32>,
    /// Per CPU id, its socket (empty: unknown).
    pub cpu_sockets: Vec<i32>,
}

/// Registers a node (or updates it when the name is known) with its GPUs; GPUs it no
/// longer reports are marked absent. The node's effective CPUs, memory, features and
/// weight are its configured values (`node_config`) where set, else `reported`. Returns
/// the node's id.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn, reported, gpus), err)]
pub async fn node_register_reported_in_tx(
    conn: &mut PgConnection,
    name: &str,
    hostname: &str,
    reported: &NodeReported,
    gpus: &[GpuInsert],
) -> Result<i64, DbError> {
    let id = sqlx::query_scalar!(
        r#"INSERT INTO nodes (name, hostname, reported_cpus, reported_memory_mib,
                              reported_features, reported_weight, cpus, memory_mib, features,
                              weight, core_spec_count, mem_spec_limit_mib, cpu_domains,
                              cpu_cores, cpu_sockets, last_heartbeat)
           SELECT $1, $2, $3, $4, $5, $6, COALESCE(c.cpus, $3), COALESCE(c.memory_mib, $4),
                  COALESCE(c.features, $5), COALESCE(c.weight, $6, 1),
                  COALESCE(c.core_spec_count, 0), COALESCE(c.mem_spec_limit_mib, 0), $7,
                  $8, $9, now()
           FROM (SELECT $1::text AS name) k LEFT JOIN node_config c ON c.name = k.name
           ON CONFLICT (name) DO UPDATE SET hostname = EXCLUDED.hostname,
               reported_cpus = EXCLUDED.reported_cpus,
               reported_memory_mib = EXCLUDED.reported_memory_mib,
               reported_features = EXCLUDED.reported_features,
               reported_weight = EXCLUDED.reported_weight,
               cpus = EXCLUDED.cpus, memory_mib = EXCLUDED.memory_mib,
               features = EXCLUDED.features, weight = EXCLUDED.weight,
               core_spec_count = EXCLUDED.core_spec_count,
               mem_spec_limit_mib = EXCLUDED.mem_spec_limit_mib,
               cpu_domains = EXCLUDED.cpu_domains,
               cpu_cores = EXCLUDED.cpu_cores, cpu_sockets = EXCLUDED.cpu_sockets,
               last_heartbeat = now()
           RETURNING id"#,
        name,
        hostname,
        reported.cpus,
        reported.memory_mib,
        &reported.features,
        reported.weight,
        &reported.cpu_domains,
        &reported.cpu_cores,
        &reported.cpu_sockets
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
    Ok(select_nodes!("WHERE n.name = $1", name)
        .fetch_optional(ex)
        .await?)
}

/// The nodes (slots) of cloud pool `pool`, by name.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn node_list_in_pool(
    ex: impl PgExecutor<'_>,
    pool: &str,
) -> Result<Vec<NodeRow>, DbError> {
    Ok(
        select_nodes!("WHERE n.pool = $1 ORDER BY length(n.name), n.name", pool)
            .fetch_all(ex)
            .await?,
    )
}

/// Every node, by name.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn node_list(ex: impl PgExecutor<'_>) -> Result<Vec<NodeRow>, DbError> {
    Ok(select_nodes!("ORDER BY n.name").fetch_all(ex).await?)
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
    /// Per CPU id, the core it is on (empty: not reported); with `cpus`, what
    /// [`berth_core::cores::CoreLayout`] makes of them.
    pub cpu_cores: Vec<i32>,
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
        r#"SELECT id, name, GREATEST(usable_cpus, 0)::bigint AS "cpus!",
                  GREATEST(usable_memory_mib, 0) AS "memory_mib!", features, cpu_cores
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
    Ok(select_nodes!(
        "WHERE n.state IN ('UP', 'DRAINING', 'DRAINED')
           AND (n.last_heartbeat IS NULL OR n.last_heartbeat < now() - make_interval(secs => $1))
         ORDER BY n.name",
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

/// Drains node `node_id` because its instance is being reclaimed (a spot interruption
/// notice): an UP, DRAINING or DRAINED node becomes DRAINING (DRAINED when nothing is
/// allocated on it) with `reason`, replacing an earlier drain's. Returns true when it
/// changed (false when it already had this reason, or is DOWN or powered down).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn node_reclaim_drain(
    ex: impl PgExecutor<'_>,
    node_id: i64,
    reason: &str,
) -> Result<bool, DbError> {
    let changed = sqlx::query!(
        r#"UPDATE nodes SET reason = $2,
              state = CASE WHEN EXISTS (SELECT 1 FROM allocations a
                                        WHERE a.node_id = nodes.id AND a.released_at IS NULL)
                           THEN 'DRAINING' ELSE 'DRAINED' END
           WHERE id = $1 AND state IN ('UP', 'DRAINING', 'DRAINED')
             AND reason IS DISTINCT FROM $2"#,
        node_id,
        reason
    )
    .execute(ex)
    .await?;
    Ok(changed.rows_affected() > 0)
}

/// A node's cloud placement: its pool and its instance, when it has them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeCloudRow {
    /// The pool it is a slot of (`None`: a node of the static fleet).
    pub pool: Option<String>,
    /// Its current instance's id.
    pub instance_id: Option<String>,
}

/// The pool and instance of node `node_id` (`None` when there is no such node).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn node_cloud_get(
    ex: impl PgExecutor<'_>,
    node_id: i64,
) -> Result<Option<NodeCloudRow>, DbError> {
    Ok(sqlx::query_as!(
        NodeCloudRow,
        r#"SELECT pool, instance_id FROM nodes WHERE id = $1"#,
        node_id
    )
    .fetch_optional(ex)
    .await?)
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

/// Names `user` as who sets the node reasons this transaction changes (`sinfo -R`'s USER;
/// a trigger stamps them, `slurm` when no one is named).
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn), err)]
pub async fn node_reason_user_set_in_tx(
    conn: &mut PgConnection,
    user: &str,
) -> Result<(), DbError> {
    sqlx::query_scalar!(
        r#"SELECT set_config('berth.reason_user', $1, true) AS "set!""#,
        user
    )
    .fetch_one(&mut *conn)
    .await?;
    Ok(())
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

/// A change to one configured value: `None` leaves it, `Some(None)` clears it (the node's
/// reported value applies again; the default for Weight 1, for the reserves 0),
/// `Some(Some(v))` sets it.
pub type ConfigChange<T> = Option<Option<T>>;

/// What an operator configures for a node (slurm.conf's node line), by node name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeConfigPatch {
    /// CPUs.
    pub cpus: ConfigChange<i32>,
    /// RealMemory, MiB.
    pub memory_mib: ConfigChange<i64>,
    /// Features.
    pub features: ConfigChange<Vec<String>>,
    /// Weight.
    pub weight: ConfigChange<i32>,
    /// CoreSpecCount.
    pub core_spec_count: ConfigChange<i32>,
    /// MemSpecLimit, MiB.
    pub mem_spec_limit_mib: ConfigChange<i64>,
}

impl NodeConfigPatch {
    /// Whether it changes nothing.
    pub fn is_empty(&self) -> bool {
        *self == NodeConfigPatch::default()
    }
}

/// Applies `patch` to the configured values of node `name` (kept by name, so they may
/// name a node that has not registered yet), then recomputes the node's effective values
/// (configured, else reported) when it exists. Returns whether a node of that name exists.
///
/// # Errors
/// [`DbError`] from the driver (a value out of range is a check violation).
#[instrument(skip(conn), err)]
pub async fn node_config_set_in_tx(
    conn: &mut PgConnection,
    name: &str,
    patch: &NodeConfigPatch,
) -> Result<bool, DbError> {
    let features: Option<Vec<String>> = patch.features.clone().flatten();
    sqlx::query!(
        r#"INSERT INTO node_config (name, cpus, memory_mib, features, weight, core_spec_count,
                                    mem_spec_limit_mib)
           VALUES ($1, $3, $5, $7, $9, $11, $13)
           ON CONFLICT (name) DO UPDATE SET
               cpus = CASE WHEN $2 THEN EXCLUDED.cpus ELSE node_config.cpus END,
               memory_mib = CASE WHEN $4 THEN EXCLUDED.memory_mib ELSE node_config.memory_mib END,
               features = CASE WHEN $6 THEN EXCLUDED.features ELSE node_config.features END,
               weight = CASE WHEN $8 THEN EXCLUDED.weight ELSE node_config.weight END,
               core_spec_count = CASE WHEN $10 THEN EXCLUDED.core_spec_count
                                      ELSE node_config.core_spec_count END,
               mem_spec_limit_mib = CASE WHEN $12 THEN EXCLUDED.mem_spec_limit_mib
                                         ELSE node_config.mem_spec_limit_mib END,
               updated_at = now()"#,
        name,
        patch.cpus.is_some(),
        patch.cpus.flatten(),
        patch.memory_mib.is_some(),
        patch.memory_mib.flatten(),
        patch.features.is_some(),
        features.as_deref(),
        patch.weight.is_some(),
        patch.weight.flatten(),
        patch.core_spec_count.is_some(),
        patch.core_spec_count.flatten(),
        patch.mem_spec_limit_mib.is_some(),
        patch.mem_spec_limit_mib.flatten(),
    )
    .execute(&mut *conn)
    .await?;
    let updated = sqlx::query!(
        r#"UPDATE nodes n SET
               cpus = COALESCE(c.cpus, n.reported_cpus, n.cpus),
               memory_mib = COALESCE(c.memory_mib, n.reported_memory_mib, n.memory_mib),
               features = COALESCE(c.features, n.reported_features, n.features),
               weight = COALESCE(c.weight, n.reported_weight, 1),
               core_spec_count = COALESCE(c.core_spec_count, 0),
               mem_spec_limit_mib = COALESCE(c.mem_spec_limit_mib, 0)
           FROM node_config c WHERE c.name = n.name AND n.name = $1"#,
        name
    )
    .execute(&mut *conn)
    .await?;
    Ok(updated.rows_affected() == 1)
}
