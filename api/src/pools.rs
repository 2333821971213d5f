//! Cloud node pools (`GET|PUT|DELETE /v1/pools/{name}`, `GET /v1/pools`) and operators'
//! power requests (`POST /v1/nodes/{name}/power`, Slurm's `scontrol update NodeName=…
//! State=POWER_UP|POWER_DOWN|POWER_DOWN_FORCE`).
//!
//! Declaring a pool creates its node slots `<pool>-1` … `<pool>-<max_nodes>`, POWERED_DOWN,
//! with the shape of its first instance type; the scheduler leader's scaling reconciler
//! launches and terminates their instances and carries out power requests. Everyone may
//! read pools; admins declare and delete them; admins and operators power nodes up and
//! down. Changes are audited like every state-changing call.

use crate::auth::Caller;
use crate::error::{rejection, ApiError};
use crate::{views, AppState};
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use berth_core::pool::{
    valid_pool_name, CloudEvent, NodePower, Pool, PoolCooldown, PoolList, PoolNode, PoolSpec,
};
use berth_core::state::NodeState;
use berth_core::wire::{Node, Problem};
use berth_db::cloud::{self, PoolDelete, PoolRow, PoolUpsert, PowerRequest};
use berth_db::{allocation, node, notify, partition, DbError};
use std::collections::BTreeMap;

/// The most recent events a pool's view shows.
pub const POOL_EVENTS_SHOWN: i64 = 50;

/// The view of pool `row`: its nodes (as `GET /v1/nodes` shows them), counts, launches
/// in flight, cooldowns, spend and latest events (with the jobs they were for only when
/// `staff`: admins and operators), read on `conn`: a [`berth_db::begin_snapshot`]
/// transaction that also read `row`, so that the row's error and back-off agree with the
/// nodes and events the scheduler wrote beside them.
///
/// # Errors
/// 503 when the database is unreachable.
pub(crate) async fn pool_view(
    conn: &mut sqlx::PgConnection,
    row: PoolRow,
    with_events: bool,
    staff: bool,
) -> Result<Pool, ApiError> {
    let now = chrono::Utc::now();
    let rows = node::node_list_in_pool(&mut *conn, &row.name).await?;
    let gpus = node::gpu_list(&mut *conn, None).await?;
    let partitions = partition::partition_list(&mut *conn).await?;
    let busy = allocation::allocation_busy_nodes(&mut *conn).await?;
    let mut nodes_by_state = BTreeMap::new();
    let mut nodes = Vec::new();
    let mut nodes_active = 0;
    for r in &rows {
        let mine: Vec<_> = gpus.iter().filter(|g| g.node_id == r.id).collect();
        let view = views::node_view(r, &mine, &partitions, busy.contains(&r.id));
        *nodes_by_state
            .entry(view.state.as_str().to_string())
            .or_insert(0u32) += 1;
        if view.state != NodeState::PoweredDown || r.instance_id.is_some() {
            nodes_active += 1;
        }
        nodes.push(PoolNode {
            name: view.name,
            state: view.state,
            instance_id: view.instance_id,
            instance_type: view.instance_type,
            market: view.market,
            zone: view.zone,
            age_seconds: r
                .launched_at
                .filter(|_| r.instance_id.is_some() || view.state == NodeState::PoweringUp)
                .map(|at| u64::try_from((now - at).num_seconds()).unwrap_or(0)),
            reason: view.reason,
        });
    }
    let in_flight = cloud::pool_launches_in_flight(&mut *conn, &row.name).await?;
    let cooldowns = cloud::pool_cooldowns_active(&mut *conn, &row.name, now).await?;
    let spend = cloud::pool_hourly_spend(&mut *conn, &row.name).await?;
    let events = if with_events {
        cloud::cloud_event_list(&mut *conn, &row.name, POOL_EVENTS_SHOWN).await?
    } else {
        cloud::cloud_event_list(&mut *conn, &row.name, 1).await?
    };
    Ok(Pool {
        name: row.name,
        spec: row.spec,
        nodes_by_state,
        nodes_active,
        launches_in_flight: u32::try_from(in_flight).unwrap_or(u32::MAX),
        last_error: row.last_error,
        last_error_at: row.last_error_at,
        backoff_until: row.backoff_until.filter(|b| *b > now),
        cooldowns: cooldowns
            .into_iter()
            .map(|c| PoolCooldown {
                instance_type: c.instance_type,
                zone: c.zone,
                until: c.until,
                error: c.error,
            })
            .collect(),
        hourly_spend: spend,
        nodes,
        events: events
            .into_iter()
            .map(|e| CloudEvent {
                at: e.at,
                kind: e.kind,
                node: e.node_name,
                instance_id: e.instance_id,
                // Which job a launch was for is its owner's business (and staff's).
                job_id: e.job_id.filter(|_| staff),
                reason: e.reason,
            })
            .collect(),
    })
}

/// List cloud node pools.
///
/// Every pool with its nodes per state, launches in flight, last error, cooldowns,
/// hourly spend and nodes (the latest event only; `GET /v1/pools/{name}` shows 50).
#[utoipa::path(get, path = "/v1/pools", tag = "pools", operation_id = "pool_list",
    responses((status = 200, description = "Pools by name", body = PoolList),
              (status = 401, description = "No or bad credentials", body = Problem)),
    security(("bearer" = [])))]
pub async fn pool_list(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<PoolList>, ApiError> {
    caller.require_person()?;
    caller.require_unscoped()?;
    let mut items = Vec::new();
    let mut tx = berth_db::begin_snapshot(&state.pool).await?;
    for row in cloud::pool_list(&mut *tx).await? {
        items.push(pool_view(&mut tx, row, false, caller.sees_all_jobs()).await?);
    }
    Ok(Json(PoolList { items }))
}

/// Show one cloud node pool.
///
/// Its spec, nodes (state, instance, type, market, zone, age), counts, launches in
/// flight, cooldowns, hourly spend and its 50 latest events, newest first.
#[utoipa::path(get, path = "/v1/pools/{name}", tag = "pools", operation_id = "pool_get",
    params(("name" = String, Path, description = "Pool name")),
    responses((status = 200, description = "The pool", body = Pool),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 404, description = "No such pool", body = Problem)),
    security(("bearer" = [])))]
pub async fn pool_get(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Json<Pool>, ApiError> {
    caller.require_person()?;
    caller.require_unscoped()?;
    let mut tx = berth_db::begin_snapshot(&state.pool).await?;
    let row = cloud::pool_get(&mut *tx, &name)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no pool {name}")))?;
    Ok(Json(
        pool_view(&mut tx, row, true, caller.sees_all_jobs()).await?,
    ))
}

/// Checks pool `name`'s spec and writes it in `tx` with its slots and partitions.
/// Returns whether it was created and the slots above `max_nodes` left in place.
///
/// # Errors
/// 400 naming the field (`name`, `max_nodes`, `instance_types[0].memory`, `partitions`);
/// 409 when a slot's name belongs to a node outside the pool, or leaving a partition would
/// empty its node list; 503 when the database is unreachable.
pub async fn pool_write_in_tx(
    tx: &mut sqlx::PgConnection,
    name: &str,
    spec: &PoolSpec,
) -> Result<(bool, Vec<String>), ApiError> {
    if !valid_pool_name(name) {
        return Err(ApiError::bad_field(
            "name",
            "a pool name is a lowercase letter, then up to 30 lowercase letters, digits or `-`",
        ));
    }
    if let Err((field, message)) = spec.validate() {
        return Err(ApiError::bad_field(&field, message));
    }
    crate::nodes::check_features("features", &spec.features)?;
    match cloud::pool_upsert_in_tx(tx, name, spec).await? {
        PoolUpsert::Written {
            created,
            slots_kept,
        } => Ok((created, slots_kept)),
        PoolUpsert::Invalid { field, message } => Err(ApiError::bad_field(&field, message)),
        PoolUpsert::NoPartition(p) => {
            Err(ApiError::bad_field("partitions", format!("no partition {p}")))
        }
        PoolUpsert::NameTaken(n) => Err(ApiError::Conflict {
            code: "node_exists",
            detail: format!(
                "node {n} exists outside pool {name} (or holds a credential): pool {name} names its nodes {name}-1 … {name}-{}",
                spec.max_nodes
            ),
        }),
        PoolUpsert::PartitionEmptied(p) => Err(ApiError::Conflict {
            code: "partition_emptied",
            detail: format!(
                "partition {p} lists only pool {name}'s nodes: leaving it would make it hold every node; give it other nodes or delete it first"
            ),
        }),
    }
}

/// Declare a cloud node pool (admins).
///
/// The body is the pool's whole definition (what `[pools.NAME]` in the server
/// configuration holds). Its node slots `<name>-1` … `<name>-<max_nodes>` are created
/// POWERED_DOWN with the shape of the first instance type, and join the node lists of
/// `partitions` (a partition listing no nodes holds every node already). Lowering
/// `max_nodes` removes the slots above it that are powered down; the others stay until
/// they are powered down (no instance is launched for them) and a later declaration
/// removes them.
#[utoipa::path(put, path = "/v1/pools/{name}", tag = "pools", operation_id = "pool_put",
    params(("name" = String, Path, description = "Pool name (a lowercase letter, then lowercase letters, digits or `-`)")),
    request_body = PoolSpec,
    responses((status = 200, description = "Replaced", body = Pool),
              (status = 201, description = "Created", body = Pool),
              (status = 400, description = "Bad definition (the field is named)", body = Problem),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "Not an admin", body = Problem),
              (status = 409, description = "A slot name is taken by another node, or a partition would lose all its nodes", body = Problem)),
    security(("bearer" = [])))]
pub async fn pool_put(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    body: Result<Json<PoolSpec>, JsonRejection>,
) -> Result<(StatusCode, Json<Pool>), ApiError> {
    caller.require_person()?;
    caller.require_unscoped()?;
    caller.require_admin()?;
    let Json(spec) = body.map_err(|e| rejection("JSON body", e.body_text()))?;
    let mut tx = berth_db::begin(&state.pool).await?;
    let (created, kept) = pool_write_in_tx(&mut tx, &name, &spec).await?;
    notify::notify(&mut *tx, notify::JOBS_CHANNEL, "pool").await?;
    tx.commit().await.map_err(DbError::from)?;
    tracing::info!(pool = %name, created, slots_kept = ?kept, by = %caller.name, "pool declared");
    let mut tx = berth_db::begin_snapshot(&state.pool).await?;
    let row = cloud::pool_get(&mut *tx, &name)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no pool {name}")))?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        Json(pool_view(&mut tx, row, true, caller.sees_all_jobs()).await?),
    ))
}

/// Delete a cloud node pool (admins).
///
/// Refused (409) while any of its nodes has an instance or is not POWERED_DOWN: power
/// them down first (`max_nodes` and `min_nodes` lowered, or `POST
/// /v1/nodes/{name}/power`). Its slots go with it (a slot that job records name stays as
/// a DOWN node outside any pool).
#[utoipa::path(delete, path = "/v1/pools/{name}", tag = "pools", operation_id = "pool_delete",
    params(("name" = String, Path, description = "Pool name")),
    responses((status = 204, description = "Deleted"),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "Not an admin", body = Problem),
              (status = 404, description = "No such pool", body = Problem),
              (status = 409, description = "A node of the pool has an instance, or a partition would lose all its nodes", body = Problem)),
    security(("bearer" = [])))]
pub async fn pool_delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    caller.require_person()?;
    caller.require_unscoped()?;
    caller.require_admin()?;
    let mut tx = berth_db::begin(&state.pool).await?;
    match cloud::pool_delete_in_tx(&mut tx, &name).await? {
        PoolDelete::Deleted => {}
        PoolDelete::Missing => return Err(ApiError::NotFound(format!("no pool {name}"))),
        PoolDelete::Busy { node, state } => {
            return Err(ApiError::Conflict {
                code: "pool_in_use",
                detail: format!(
                    "node {node} of pool {name} is {state}: its nodes must be powered down first"
                ),
            })
        }
        PoolDelete::PartitionEmptied(p) => {
            return Err(ApiError::Conflict {
                code: "partition_emptied",
                detail: format!(
                    "partition {p} lists only pool {name}'s nodes: deleting the pool would make it hold every node; give it other nodes or delete it first"
                ),
            })
        }
    }
    notify::notify(&mut *tx, notify::JOBS_CHANNEL, "pool").await?;
    tx.commit().await.map_err(DbError::from)?;
    tracing::info!(pool = %name, by = %caller.name, "pool deleted");
    Ok(StatusCode::NO_CONTENT)
}

/// Power a pool node up or down (admin or operator).
///
/// Slurm's `scontrol update NodeName=… State=POWER_UP | POWER_DOWN | POWER_DOWN_FORCE`:
/// `up` launches its instance, `down` terminates it once its jobs end, `down_force`
/// requeues its jobs and terminates it now. The request is recorded on the node and
/// carried out by the scheduler's scaling reconciler; asking for the state the node is in
/// (or going to) does nothing.
#[utoipa::path(post, path = "/v1/nodes/{name}/power", tag = "nodes", operation_id = "node_power",
    params(("name" = String, Path, description = "Node name")),
    request_body = NodePower,
    responses((status = 200, description = "The node (its request recorded, or nothing to do)", body = Node),
              (status = 400, description = "A bad body", body = Problem),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "Not an admin or operator", body = Problem),
              (status = 404, description = "No such node", body = Problem),
              (status = 409, description = "Not a node of a cloud pool", body = Problem)),
    security(("bearer" = [])))]
pub async fn node_power(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    body: Result<Json<NodePower>, JsonRejection>,
) -> Result<Json<Node>, ApiError> {
    caller.require_person()?;
    caller.require_unscoped()?;
    caller.require_staff()?;
    let Json(power) = body.map_err(|e| rejection("JSON body", e.body_text()))?;
    let mut tx = berth_db::begin(&state.pool).await?;
    match cloud::node_power_request_set_in_tx(&mut tx, &name, power.action.as_str()).await? {
        PowerRequest::Set => {
            tracing::info!(node.name = %name, action = power.action.as_str(), by = %caller.name,
                "node power requested");
        }
        PowerRequest::AlreadyThere(st) => {
            tracing::info!(node.name = %name, action = power.action.as_str(), state = %st,
                "node power request: nothing to do");
        }
        PowerRequest::Missing => return Err(ApiError::NotFound(format!("no node {name}"))),
        PowerRequest::NotPool => {
            return Err(ApiError::Conflict {
                code: "not_a_pool_node",
                detail: format!(
                    "node {name} belongs to no cloud pool: only pool nodes are powered up and down (drain or resume it instead)"
                ),
            })
        }
    }
    notify::notify(&mut *tx, notify::JOBS_CHANNEL, "node").await?;
    tx.commit().await.map_err(DbError::from)?;
    let row = node::node_get_by_name(&state.pool, &name)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no node {name}")))?;
    Ok(Json(crate::nodes::row_view(&state, &row).await?))
}
