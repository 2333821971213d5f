//! One node, and what operators do to nodes: `GET /v1/nodes/{name}`, `POST
//! /v1/nodes/{name}/drain` and `POST /v1/nodes/{name}/resume` (scontrol's `update
//! NodeName=… State=DRAIN Reason=…` and `State=RESUME`). Drains and resumes are audited
//! like every state-changing call.

use crate::auth::Caller;
use crate::error::{rejection, ApiError};
use crate::{views, AppState};
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::Json;
use berth_core::wire::{Node, NodeDrain, Problem};
use berth_db::node::{AdminChange, NodeRow};
use berth_db::{allocation, node, notify, partition, DbError};

/// The longest drain reason, characters.
pub const MAX_REASON_CHARS: usize = 256;

async fn node_view(state: &AppState, name: &str) -> Result<Node, ApiError> {
    let row = node::node_get_by_name(&state.pool, name)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no node {name}")))?;
    row_view(state, &row).await
}

/// The view of one node's row: its GPUs, partitions and whether it runs anything.
///
/// # Errors
/// 503 when the database is unreachable.
pub(crate) async fn row_view(state: &AppState, row: &NodeRow) -> Result<Node, ApiError> {
    let gpus = node::gpu_list(&state.pool, Some(row.id)).await?;
    let mine: Vec<_> = gpus.iter().collect();
    let partitions = partition::partition_list(&state.pool).await?;
    let busy = allocation::allocation_busy_nodes(&state.pool)
        .await?
        .contains(&row.id);
    Ok(views::node_view(row, &mine, &partitions, busy))
}

/// Show one node.
#[utoipa::path(get, path = "/v1/nodes/{name}", tag = "nodes", operation_id = "node_get",
    params(("name" = String, Path, description = "Node name")),
    responses((status = 200, description = "The node", body = Node),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 404, description = "No such node", body = Problem)),
    security(("bearer" = [])))]
pub async fn node_get(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Json<Node>, ApiError> {
    caller.require_person()?;
    caller.require_unscoped()?;
    Ok(Json(node_view(&state, &name).await?))
}

fn outcome(name: &str, change: AdminChange) -> Result<(), ApiError> {
    match change {
        AdminChange::Done(_) => Ok(()),
        AdminChange::Missing => Err(ApiError::NotFound(format!("no node {name}"))),
        AdminChange::PowerState(state) => Err(ApiError::Conflict {
            code: "node_power_state",
            detail: format!(
                "node {name} is {state}: the cloud module powers it up or down, not an operator"
            ),
        }),
    }
}

/// Drain a node (admin or operator).
///
/// No new job is placed on it; jobs running there finish. The node is DRAINING while it
/// holds jobs and DRAINED after; a DOWN node stays DOWN but keeps the reason, so it does not
/// return to service by itself. Draining again replaces the reason.
#[utoipa::path(post, path = "/v1/nodes/{name}/drain", tag = "nodes", operation_id = "node_drain",
    params(("name" = String, Path, description = "Node name")),
    request_body = NodeDrain,
    responses((status = 200, description = "The node, draining or drained", body = Node),
              (status = 400, description = "No reason, or one too long", body = Problem),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "Not an admin or operator", body = Problem),
              (status = 404, description = "No such node", body = Problem),
              (status = 409, description = "A cloud node powered down or changing power state", body = Problem)),
    security(("bearer" = [])))]
pub async fn node_drain(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    body: Result<Json<NodeDrain>, JsonRejection>,
) -> Result<Json<Node>, ApiError> {
    caller.require_person()?;
    caller.require_unscoped()?;
    caller.require_staff()?;
    let Json(drain) = body.map_err(|e| rejection("JSON body", e.body_text()))?;
    let reason = drain.reason.trim();
    if reason.chars().any(char::is_control) {
        return Err(ApiError::bad_field(
            "reason",
            "control characters (newlines, tabs, escapes) are not allowed",
        ));
    }
    if reason.is_empty() || reason.chars().count() > MAX_REASON_CHARS {
        return Err(ApiError::bad_field(
            "reason",
            format!("a drain needs a reason of 1-{MAX_REASON_CHARS} characters"),
        ));
    }
    let mut tx = berth_db::begin(&state.pool).await?;
    let change = node::node_admin_drain_in_tx(&mut tx, &name, reason).await?;
    outcome(&name, change)?;
    tx.commit().await.map_err(DbError::from)?;
    tracing::info!(node.name = %name, %reason, by = %caller.name, "node drained");
    Ok(Json(node_view(&state, &name).await?))
}

/// Return a node to service (admin or operator).
///
/// A DRAINING, DRAINED or DOWN node becomes available for new jobs and loses its reason; a
/// node already available is left as it is. A DOWN node whose worker is still silent is
/// declared DOWN again after the node timeout.
#[utoipa::path(post, path = "/v1/nodes/{name}/resume", tag = "nodes", operation_id = "node_resume",
    params(("name" = String, Path, description = "Node name")),
    responses((status = 200, description = "The node, available", body = Node),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "Not an admin or operator", body = Problem),
              (status = 404, description = "No such node", body = Problem),
              (status = 409, description = "A cloud node powered down or changing power state", body = Problem)),
    security(("bearer" = [])))]
pub async fn node_resume(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Json<Node>, ApiError> {
    caller.require_person()?;
    caller.require_unscoped()?;
    caller.require_staff()?;
    let mut tx = berth_db::begin(&state.pool).await?;
    let change = node::node_resume_in_tx(&mut tx, &name).await?;
    outcome(&name, change)?;
    notify::notify(&mut *tx, notify::JOBS_CHANNEL, "node").await?;
    tx.commit().await.map_err(DbError::from)?;
    tracing::info!(node.name = %name, by = %caller.name, "node resumed");
    Ok(Json(node_view(&state, &name).await?))
}
