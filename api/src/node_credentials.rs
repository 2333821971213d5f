//! How workers join: an admin makes a bootstrap token (one-time, or reusable until it
//! expires for an autoscaled pool's instances); a worker presents it to
//! `POST /v1/nodes/join` with its node name and receives a node credential
//! (`berth_node_…`) that works only for that node's routes. Both are stored hashed.

use crate::auth::{
    api_token_hash, secret_with_prefix, AuditSlot, Caller, BOOTSTRAP_TOKEN_PREFIX,
    NODE_CREDENTIAL_PREFIX,
};
use crate::error::{rejection, ApiError};
use crate::AppState;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::{Extension, Json};
use berth_core::auth::Role;
use berth_core::identity::{NodeBootstrapCreate, NodeBootstrapCreated, NodeJoin, NodeJoined};
use berth_core::wire::Problem;
use berth_db::{cloud, node_credential, DbError};

/// The longest a bootstrap token may live, minutes (30 days).
pub const MAX_BOOTSTRAP_MINUTES: u32 = 43_200;

/// Create a node bootstrap token.
///
/// The token is in the answer once; a worker joins with it (`berth worker
/// --bootstrap-token`). Admins only.
#[utoipa::path(post, path = "/v1/nodes/bootstrap-tokens", tag = "nodes", operation_id = "node_bootstrap_create",
    request_body = NodeBootstrapCreate,
    responses((status = 201, description = "The bootstrap token, shown this once", body = NodeBootstrapCreated),
              (status = 400, description = "A bad field", body = Problem),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "Not an admin", body = Problem)),
    security(("bearer" = [])))]
pub async fn node_bootstrap_create(
    State(state): State<AppState>,
    caller: Caller,
    body: Result<Json<NodeBootstrapCreate>, JsonRejection>,
) -> Result<(StatusCode, Json<NodeBootstrapCreated>), ApiError> {
    caller.require_admin()?;
    let req = body
        .map(|Json(v)| v)
        .map_err(|e| rejection("JSON body", e.body_text()))?;
    let minutes = req.ttl_minutes.unwrap_or(60);
    if !(1..=MAX_BOOTSTRAP_MINUTES).contains(&minutes) {
        return Err(ApiError::bad_field(
            "ttl_minutes",
            format!("must be between 1 and {MAX_BOOTSTRAP_MINUTES}"),
        ));
    }
    let token = secret_with_prefix(BOOTSTRAP_TOKEN_PREFIX);
    let row = node_credential::bootstrap_token_insert(
        &state.pool,
        &api_token_hash(&token),
        req.one_time,
        &caller.name,
        chrono::Utc::now() + chrono::Duration::minutes(i64::from(minutes)),
    )
    .await?;
    Ok((
        StatusCode::CREATED,
        Json(NodeBootstrapCreated {
            id: row.id,
            token,
            one_time: row.one_time,
            expires_at: row.expires_at,
        }),
    ))
}

/// Join a node (worker) with a bootstrap token.
///
/// The bearer is a bootstrap token (`berth_boot_…`), not a user's token. The answer holds
/// the node's credential, for its own routes only (register, sync, its jobs' output).
/// A name that is taken (a registered node, or one holding a live credential) is refused:
/// a bootstrap token never takes over a node; an admin re-keys one explicitly
/// (`POST /v1/nodes/{name}/credential`). A token bound to a node (a cloud instance's,
/// minted by the scheduler at launch) joins only as that node, and only while that pool
/// node is POWERING_UP without a live credential.
#[utoipa::path(post, path = "/v1/nodes/join", tag = "nodes", operation_id = "node_join",
    request_body = NodeJoin,
    responses((status = 200, description = "The node credential", body = NodeJoined),
              (status = 400, description = "A bad node name", body = Problem),
              (status = 401, description = "No bootstrap token, or one that is unknown, expired or used", body = Problem),
              (status = 403, description = "A token bound to another node", body = Problem),
              (status = 409, description = "A node of that name exists or has joined (or, for a bound token, is not POWERING_UP)", body = Problem)),
    security(("bearer" = [])))]
pub async fn node_join(
    State(state): State<AppState>,
    slot: Option<Extension<AuditSlot>>,
    headers: HeaderMap,
    body: Result<Json<NodeJoin>, JsonRejection>,
) -> Result<Json<NodeJoined>, ApiError> {
    let token = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim)
        .filter(|t| t.starts_with(BOOTSTRAP_TOKEN_PREFIX))
        .ok_or_else(|| {
            ApiError::Unauthorized("joining needs `Authorization: Bearer berth_boot_…`".into())
        })?;
    let req = body
        .map(|Json(v)| v)
        .map_err(|e| rejection("JSON body", e.body_text()))?;
    if !valid_node_name(&req.name) {
        return Err(ApiError::bad_field(
            "name",
            "1 to 100 letters, digits or `_.-`",
        ));
    }
    let now = chrono::Utc::now();
    let credential = secret_with_prefix(NODE_CREDENTIAL_PREFIX);
    let mut tx = berth_db::begin(&state.pool).await?;
    let bootstrap =
        node_credential::bootstrap_token_use_in_tx(&mut tx, &api_token_hash(token), now)
            .await?
            .ok_or_else(|| {
                ApiError::Unauthorized("unknown, expired or already used bootstrap token".into())
            })?;
    let taken = || {
        tracing::warn!(node.name = %req.name, bootstrap.id = bootstrap.id,
            "join under a taken node name refused");
        ApiError::Conflict {
            code: "node_exists",
            detail: format!(
                "node {} exists or has joined; an admin re-keys it (POST /v1/nodes/{}/credential)",
                req.name, req.name
            ),
        }
    };
    match &bootstrap.node_name {
        // A cloud instance's token: only its own node, only while that node boots.
        Some(bound) => {
            if bound != &req.name {
                tracing::warn!(node.name = %req.name, bound = %bound, bootstrap.id = bootstrap.id,
                    "join with a token bound to another node refused");
                return Err(ApiError::Forbidden(format!(
                    "this bootstrap token joins only as node {bound}"
                )));
            }
            let slot = cloud::pool_slot_lock_in_tx(&mut tx, &req.name).await?;
            match slot {
                Some(s) if s.state == "POWERING_UP" => {}
                Some(s) => {
                    return Err(ApiError::Conflict {
                        code: "node_not_powering_up",
                        detail: format!(
                            "node {} is {}: a pool node joins only while POWERING_UP",
                            req.name, s.state
                        ),
                    })
                }
                None => return Err(taken()),
            }
            if node_credential::node_credential_live(&mut *tx, &req.name).await? {
                return Err(taken());
            }
        }
        None => {
            if node_credential::node_name_taken(&mut *tx, &req.name).await? {
                return Err(taken());
            }
        }
    }
    match node_credential::node_credential_insert_in_tx(
        &mut tx,
        &api_token_hash(&credential),
        &req.name,
        bootstrap.id,
    )
    .await
    {
        Ok(()) => {}
        Err(DbError::Conflict { .. }) => return Err(taken()),
        Err(e) => return Err(e.into()),
    }
    tx.commit().await.map_err(DbError::from)?;
    if let Some(Extension(slot)) = slot {
        if let Ok(mut slot) = slot.0.lock() {
            *slot = Some(Caller {
                name: format!("node:{}", req.name),
                role: Role::Node,
                token_id: None,
                scope: None,
                job_id: None,
            });
        }
    }
    tracing::info!(node.name = %req.name, bootstrap.id = bootstrap.id, "node joined");
    Ok(Json(NodeJoined {
        node: req.name,
        credential,
    }))
}

/// Re-key a node (admins).
///
/// Revokes the node's credentials and returns a new one, shown this once: what a worker
/// that lost its state directory (or a replaced machine) runs with, written to its
/// `{state_dir}/node-credential` (mode 0600) or passed with `--token`. The only way to
/// give a taken node name a new credential.
#[utoipa::path(post, path = "/v1/nodes/{name}/credential", tag = "nodes", operation_id = "node_rekey",
    params(("name" = String, Path, description = "Node name")),
    responses((status = 200, description = "The new node credential", body = NodeJoined),
              (status = 400, description = "A bad node name", body = Problem),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "Not an admin", body = Problem)),
    security(("bearer" = [])))]
pub async fn node_rekey(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Json<NodeJoined>, ApiError> {
    caller.require_admin()?;
    caller.require_unscoped()?;
    if !valid_node_name(&name) {
        return Err(ApiError::bad_field(
            "name",
            "1 to 100 letters, digits or `_.-`",
        ));
    }
    let credential = secret_with_prefix(NODE_CREDENTIAL_PREFIX);
    let mut tx = berth_db::begin(&state.pool).await?;
    node_credential::node_credential_rekey_in_tx(
        &mut tx,
        &api_token_hash(&credential),
        &name,
        chrono::Utc::now(),
    )
    .await?;
    tx.commit().await.map_err(DbError::from)?;
    tracing::warn!(node.name = %name, by = %caller.name, "node re-keyed");
    Ok(Json(NodeJoined {
        node: name,
        credential,
    }))
}

/// A node name a credential may carry: 1 to 100 letters, digits or `_.-`.
fn valid_node_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 100
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
}
