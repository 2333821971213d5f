//! The audit log: every state-changing call (`POST`, `PUT`, `PATCH`, `DELETE`) is written
//! to `audit_log` with who made it (or nobody, when the credentials did not verify), what
//! (method, path, answer status), when and from where (peer address, request id), and
//! admins read it with `GET /v1/audit`.
//!
//! The worker protocol's routine traffic (`POST /v1/nodes/{name}/sync`, output uploads) is
//! machine chatter every few seconds per node, not a decision anyone made, and is not
//! recorded; node registration is.

use crate::auth::{AuditSlot, Caller};
use crate::error::ApiError;
use crate::AppState;
use axum::extract::rejection::QueryRejection;
use axum::extract::{ConnectInfo, Query, Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use axum::Json;
use berth_core::auth::Role;
use berth_core::identity::{AuditEntry, AuditList, AuditQuery};
use berth_core::wire::Problem;
use berth_db::audit::{self, AuditInsert};
use std::net::SocketAddr;

fn role_name(role: Role) -> &'static str {
    match role {
        Role::Admin => "admin",
        Role::Operator => "operator",
        Role::User => "user",
        Role::Node => "node",
    }
}

/// Whether a request is the worker protocol's routine traffic.
fn is_worker_chatter(method: &Method, path: &str) -> bool {
    *method == Method::POST
        && path.starts_with("/v1/")
        && (path.ends_with("/sync") && path.starts_with("/v1/nodes/")
            || path.ends_with("/output") && path.starts_with("/v1/jobs/"))
}

/// The middleware that records state-changing calls once they are answered.
pub async fn record(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    if matches!(method, Method::GET | Method::HEAD | Method::OPTIONS)
        || is_worker_chatter(&method, &path)
    {
        return next.run(request).await;
    }
    let slot = AuditSlot::default();
    request.extensions_mut().insert(slot.clone());
    let remote_addr = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.to_string());
    let request_id = request
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let response = next.run(request).await;
    let caller: Option<Caller> = slot.0.lock().ok().and_then(|c| c.clone());
    let entry = AuditInsert {
        actor: caller.as_ref().map(|c| c.name.clone()),
        role: caller.as_ref().map(|c| role_name(c.role).to_string()),
        token_id: caller.as_ref().and_then(|c| c.token_id),
        method: method.to_string(),
        path,
        status: i32::from(response.status().as_u16()),
        remote_addr,
        request_id,
    };
    if let Err(e) = audit::audit_insert(&state.pool, &entry).await {
        tracing::error!(error = &e as &dyn std::error::Error, method = %entry.method, path = %entry.path, "writing the audit log failed");
    }
    response
}

/// Read the audit log.
///
/// Newest first; pages follow `next_cursor`. Admins only.
#[utoipa::path(get, path = "/v1/audit", tag = "audit", operation_id = "audit_list",
    params(AuditQuery),
    responses((status = 200, description = "A page of audited calls", body = AuditList),
              (status = 400, description = "A bad filter", body = Problem),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "Not an admin", body = Problem)),
    security(("bearer" = [])))]
pub async fn audit_list(
    State(state): State<AppState>,
    caller: Caller,
    q: Result<Query<AuditQuery>, QueryRejection>,
) -> Result<Json<AuditList>, ApiError> {
    caller.require_admin()?;
    let q = q
        .map(|Query(v)| v)
        .map_err(|e| crate::error::rejection("query", e.body_text()))?;
    let limit = i64::from(q.limit.unwrap_or(100));
    if !(1..=1000).contains(&limit) {
        return Err(ApiError::bad_field("limit", "must be between 1 and 1000"));
    }
    let before = match &q.cursor {
        Some(c) => Some(
            c.parse::<i64>()
                .map_err(|_| ApiError::bad_field("cursor", "not a cursor from this api"))?,
        ),
        None => None,
    };
    let rows = audit::audit_list(&state.pool, before, q.actor.as_deref(), limit + 1).await?;
    let more = rows.len() as i64 > limit;
    let rows = &rows[..rows.len().min(limit as usize)];
    Ok(Json(AuditList {
        items: rows
            .iter()
            .map(|r| AuditEntry {
                id: r.id,
                at: r.at,
                actor: r.actor.clone(),
                role: r.role.clone(),
                token_id: r.token_id,
                method: r.method.clone(),
                path: r.path.clone(),
                status: u16::try_from(r.status).unwrap_or(0),
                remote_addr: r.remote_addr.clone(),
                request_id: r.request_id.clone(),
            })
            .collect(),
        next_cursor: more
            .then(|| rows.last().map(|r| r.id.to_string()))
            .flatten(),
    }))
}
