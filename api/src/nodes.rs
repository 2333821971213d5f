//! One node, and what operators do to nodes: `GET /v1/nodes/{name}`, `PATCH
//! /v1/nodes/{name}` (slurm.conf's node line: CPUs, RealMemory, Features, Weight,
//! CoreSpecCount, MemSpecLimit), `POST
//! /v1/nodes/{name}/drain` and `POST /v1/nodes/{name}/resume` (scontrol's `update
//! NodeName=… State=DRAIN Reason=…` and `State=RESUME`). Drains and resumes are audited
//! like every state-changing call.

use crate::auth::Caller;
use crate::error::{rejection, ApiError};
use crate::{views, AppState};
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::Json;
use berth_core::wire::{Node, NodeDrain, NodeUpdate, Problem};
use berth_db::node::{AdminChange, ConfigChange, NodeConfigPatch, NodeRow};
use berth_db::{allocation, node, notify, partition, DbError};

/// The longest drain reason, characters.
pub const MAX_REASON_CHARS: usize = 256;

/// Leaves out of `nodes` what `caller` may not see of other tenants' jobs: of a GPU held by
/// a job that is not theirs (nor of an account they coordinate), the job's id and its GPU
/// use; the GPU still shows as allocated. Admins and operators see everything. An
/// invisible job answers like an absent one everywhere (SECURITY.md), the node views too.
///
/// # Errors
/// 503 when the database is unreachable.
pub(crate) async fn hide_invisible_jobs(
    state: &AppState,
    caller: &Caller,
    nodes: &mut [Node],
) -> Result<(), ApiError> {
    if caller.sees_all_jobs() {
        return Ok(());
    }
    let mut ids: Vec<i64> = nodes
        .iter()
        .flat_map(|n| n.gpus.iter().filter_map(|g| g.job_id))
        .collect();
    if ids.is_empty() {
        return Ok(());
    }
    ids.sort_unstable();
    ids.dedup();
    let accounts = caller.coordinated_accounts(state).await?;
    let visible: std::collections::HashSet<i64> =
        berth_db::job::job_visible_ids(&state.pool, &ids, Some(&caller.name), &accounts)
            .await?
            .into_iter()
            .collect();
    for gpu in nodes.iter_mut().flat_map(|n| n.gpus.iter_mut()) {
        if gpu.job_id.is_some_and(|id| !visible.contains(&id)) {
            gpu.job_id = None;
            gpu.utilization_pct = None;
            gpu.memory_used_mib = None;
        }
    }
    Ok(())
}

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
///
/// Of a GPU held by a job the caller may not see (another tenant's), the job's id and the
/// GPU's use are left out; it shows as allocated.
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
    let mut view = node_view(&state, &name).await?;
    hide_invisible_jobs(&state, &caller, std::slice::from_mut(&mut view)).await?;
    Ok(Json(view))
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
    if let Some(c) = berth_core::text::forbidden_char(reason) {
        return Err(ApiError::bad_field(
            "reason",
            berth_core::text::forbidden_message(c),
        ));
    }
    if reason.is_empty() || reason.chars().count() > MAX_REASON_CHARS {
        return Err(ApiError::bad_field(
            "reason",
            format!("a drain needs a reason of 1-{MAX_REASON_CHARS} characters"),
        ));
    }
    let mut tx = berth_db::begin(&state.pool).await?;
    node::node_reason_user_set_in_tx(&mut tx, &caller.name).await?;
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

/// The most features a node carries.
pub const MAX_FEATURES: usize = 64;
/// The longest feature name, characters.
pub const MAX_FEATURE_CHARS: usize = 64;

/// Checks feature names (letters, digits, `_`, `.`, `-`, 1-64 characters; at most 64, no
/// repeats); errors name `field`.
///
/// # Errors
/// 400 naming `field`.
pub fn check_features(field: &str, features: &[String]) -> Result<(), ApiError> {
    if features.len() > MAX_FEATURES {
        return Err(ApiError::bad_field(
            field,
            format!(
                "{} features: a node carries at most {MAX_FEATURES}",
                features.len()
            ),
        ));
    }
    for (i, f) in features.iter().enumerate() {
        if f.is_empty()
            || f.chars().count() > MAX_FEATURE_CHARS
            || !f
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
        {
            return Err(ApiError::bad_field(
                field,
                format!(
                    "feature {:?}: features are 1-{MAX_FEATURE_CHARS} letters, digits, '_', '.' or '-'",
                    berth_core::text::escape(f)
                ),
            ));
        }
        if features[..i].contains(f) {
            return Err(ApiError::bad_field(
                field,
                format!("feature {f} is listed twice"),
            ));
        }
    }
    Ok(())
}

/// Checks a node update and turns it into the database's change.
///
/// # Errors
/// 400 naming the field: CPUs or RealMemory 0, a value out of range, a bad feature name.
pub fn config_patch(update: &NodeUpdate) -> Result<NodeConfigPatch, ApiError> {
    fn int<T: TryInto<i32> + Copy>(
        field: &str,
        v: Option<Option<T>>,
        min: i32,
        max: i32,
    ) -> Result<ConfigChange<i32>, ApiError> {
        v.map(|v| {
            v.map(|v| {
                v.try_into()
                    .ok()
                    .filter(|v| (min..=max).contains(v))
                    .ok_or_else(|| ApiError::bad_field(field, format!("must be {min} to {max}")))
            })
            .transpose()
        })
        .transpose()
    }
    fn big(field: &str, v: Option<Option<u64>>, min: i64) -> Result<ConfigChange<i64>, ApiError> {
        v.map(|v| {
            v.map(|v| {
                i64::try_from(v).ok().filter(|v| *v >= min).ok_or_else(|| {
                    ApiError::bad_field(field, format!("must be {min} to {}", i64::MAX))
                })
            })
            .transpose()
        })
        .transpose()
    }
    if let Some(Some(features)) = &update.features {
        check_features("features", features)?;
    }
    Ok(NodeConfigPatch {
        cpus: int(
            "cpus",
            update.cpus,
            1,
            berth_core::cores::MAX_NODE_CPUS as i32,
        )?,
        memory_mib: big("memory_mib", update.memory_mib, 1)?,
        features: update.features.clone(),
        weight: int("weight", update.weight, 0, i32::MAX)?,
        core_spec_count: int("core_spec_count", update.core_spec_count, 0, i32::MAX)?,
        mem_spec_limit_mib: big("mem_spec_limit_mib", update.mem_spec_limit_mib, 0)?,
    })
}

/// Checks a node's values after a change: the reserves leave something for jobs.
///
/// # Errors
/// 400 naming `core_spec_count` or `mem_spec_limit_mib`.
pub fn check_reserves(row: &NodeRow) -> Result<(), ApiError> {
    if row.core_spec_count > 0 && row.core_spec_count >= row.cpus {
        return Err(ApiError::bad_field(
            "core_spec_count",
            format!(
                "node {}: CoreSpecCount {} leaves none of its {} CPUs to jobs",
                row.name, row.core_spec_count, row.cpus
            ),
        ));
    }
    if row.mem_spec_limit_mib > 0 && row.mem_spec_limit_mib >= row.memory_mib {
        return Err(ApiError::bad_field(
            "mem_spec_limit_mib",
            format!(
                "node {}: MemSpecLimit {} MiB leaves none of its {} MiB to jobs",
                row.name, row.mem_spec_limit_mib, row.memory_mib
            ),
        ));
    }
    Ok(())
}

/// Writes `patch` for node `name` in `tx` and checks the node's values after it. Returns
/// whether the node exists.
///
/// # Errors
/// 400 naming the field when a reserve would leave nothing; 503 when the database is
/// unreachable.
pub async fn config_write_in_tx(
    tx: &mut sqlx::PgConnection,
    name: &str,
    patch: &NodeConfigPatch,
) -> Result<bool, ApiError> {
    let exists = node::node_config_set_in_tx(tx, name, patch).await?;
    if exists {
        if let Some(row) = node::node_get_by_name(&mut *tx, name).await? {
            check_reserves(&row)?;
        }
    }
    Ok(exists)
}

/// Configure a node (admin or operator).
///
/// Sets what slurm.conf's node line (and `scontrol update NodeName=…`) sets: CPUs,
/// RealMemory (MiB), Features, Weight, CoreSpecCount and MemSpecLimit (MiB). A field left
/// out keeps its value; `null` returns it to what the worker reports. Configured values
/// survive the worker's re-registration; the scheduler places by them from its next cycle.
#[utoipa::path(patch, path = "/v1/nodes/{name}", tag = "nodes", operation_id = "node_update",
    params(("name" = String, Path, description = "Node name")),
    request_body = NodeUpdate,
    responses((status = 200, description = "The node, with its new values", body = Node),
              (status = 400, description = "A bad field", body = Problem),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "Not an admin or operator", body = Problem),
              (status = 404, description = "No such node", body = Problem)),
    security(("bearer" = [])))]
pub async fn node_update(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    body: Result<Json<NodeUpdate>, JsonRejection>,
) -> Result<Json<Node>, ApiError> {
    caller.require_person()?;
    caller.require_unscoped()?;
    caller.require_staff()?;
    let Json(update) = body.map_err(|e| rejection("JSON body", e.body_text()))?;
    let patch = config_patch(&update)?;
    if node::node_get_by_name(&state.pool, &name).await?.is_none() {
        return Err(ApiError::NotFound(format!("no node {name}")));
    }
    let mut tx = berth_db::begin(&state.pool).await?;
    if !config_write_in_tx(&mut tx, &name, &patch).await? {
        return Err(ApiError::NotFound(format!("no node {name}")));
    }
    notify::notify(&mut *tx, notify::JOBS_CHANNEL, "node").await?;
    tx.commit().await.map_err(DbError::from)?;
    tracing::info!(node.name = %name, ?patch, by = %caller.name, "node configured");
    Ok(Json(node_view(&state, &name).await?))
}
