//! API tokens for CI pipelines and scripts (`/v1/tokens`): created by any person for
//! themselves, shown once, stored as a SHA-256 hash, scoped, expiring, revocable. Admins
//! list and revoke everyone's; others only their own (anyone else's is 404).

use crate::auth::{api_token_generate, api_token_hash, Caller, API_TOKEN_PREFIX};
use crate::error::{rejection, ApiError};
use crate::AppState;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use berth_core::auth::Role;
use berth_core::identity::{ApiToken, ApiTokenCreate, ApiTokenCreated, ApiTokenList, TokenScope};
use berth_core::wire::Problem;
use berth_db::api_token::{self, ApiTokenInsert, ApiTokenRow};

/// Days a token lives when the request says nothing.
pub const DEFAULT_EXPIRY_DAYS: u32 = 90;
/// The longest a token may live, days.
pub const MAX_EXPIRY_DAYS: u32 = 365;

fn token_view(row: &ApiTokenRow) -> ApiToken {
    ApiToken {
        id: row.id,
        name: row.name.clone(),
        prefix: row.prefix.clone(),
        user: row.user_name.clone(),
        scope: TokenScope::parse(&row.scope).unwrap_or(TokenScope::ReadOnly),
        created_at: row.created_at,
        expires_at: row.expires_at,
        last_used_at: row.last_used_at,
        revoked_at: row.revoked_at,
    }
}

/// Create an API token.
///
/// The token is in the answer once and never again: only its hash is kept. It acts as the
/// caller, limited by its scope: `read-only` reads, `submit` also submits and cancels
/// jobs, `admin` (admins and operators only) does all the caller's role allows.
#[utoipa::path(post, path = "/v1/tokens", tag = "tokens", operation_id = "token_create",
    request_body = ApiTokenCreate,
    responses((status = 201, description = "The token, shown this once", body = ApiTokenCreated),
              (status = 400, description = "A bad field", body = Problem),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "A node token, a job's token, or an admin scope without the admin or operator role", body = Problem)),
    security(("bearer" = [])))]
pub async fn token_create(
    State(state): State<AppState>,
    caller: Caller,
    body: Result<Json<ApiTokenCreate>, JsonRejection>,
) -> Result<(StatusCode, Json<ApiTokenCreated>), ApiError> {
    caller.require_person()?;
    // A job's token never mints a credential that would outlive its run.
    caller.require_unscoped()?;
    let req = body
        .map(|Json(v)| v)
        .map_err(|e| rejection("JSON body", e.body_text()))?;
    if req.scope == TokenScope::Admin {
        caller.require_staff()?;
    }
    let name = req.name.trim();
    if name.is_empty() || name.chars().count() > 200 {
        return Err(ApiError::bad_field("name", "1 to 200 characters"));
    }
    if let Some(c) = berth_core::text::forbidden_char(name) {
        return Err(ApiError::bad_field(
            "name",
            berth_core::text::forbidden_message(c),
        ));
    }
    let days = req.expires_in_days.unwrap_or(DEFAULT_EXPIRY_DAYS);
    if !(1..=MAX_EXPIRY_DAYS).contains(&days) {
        return Err(ApiError::bad_field(
            "expires_in_days",
            format!("must be between 1 and {MAX_EXPIRY_DAYS}"),
        ));
    }
    let role = match caller.role {
        Role::Admin => "admin",
        Role::Operator => "operator",
        _ => "user",
    };
    let token = api_token_generate();
    let hash = api_token_hash(&token);
    let prefix = format!("{}…", &token[..API_TOKEN_PREFIX.len() + 4]);
    let row = api_token::api_token_insert(
        &state.pool,
        &ApiTokenInsert {
            token_hash: &hash,
            prefix: &prefix,
            name,
            user_name: &caller.name,
            role,
            scope: req.scope.as_str(),
            expires_at: chrono::Utc::now() + chrono::Duration::days(i64::from(days)),
        },
    )
    .await?;
    tracing::info!(token.id = row.id, user = %caller.name, scope = req.scope.as_str(), "API token created");
    Ok((
        StatusCode::CREATED,
        Json(ApiTokenCreated {
            token,
            info: token_view(&row),
        }),
    ))
}

/// List API tokens.
///
/// The caller's own tokens (every user's, for admins), without their secrets.
#[utoipa::path(get, path = "/v1/tokens", tag = "tokens", operation_id = "token_list",
    responses((status = 200, description = "The tokens", body = ApiTokenList),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "A node token", body = Problem)),
    security(("bearer" = [])))]
pub async fn token_list(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<ApiTokenList>, ApiError> {
    caller.require_person()?;
    let owner = (caller.role != Role::Admin).then_some(caller.name.as_str());
    let rows = api_token::api_token_list(&state.pool, owner).await?;
    Ok(Json(ApiTokenList {
        items: rows.iter().map(token_view).collect(),
    }))
}

/// Revoke an API token.
///
/// It is refused from then on. Revoking a revoked token changes nothing.
#[utoipa::path(delete, path = "/v1/tokens/{id}", tag = "tokens", operation_id = "token_revoke",
    params(("id" = i64, Path, description = "Token id")),
    responses((status = 204, description = "Revoked"),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "A node token", body = Problem),
              (status = 404, description = "No such token (or not yours)", body = Problem)),
    security(("bearer" = [])))]
pub async fn token_revoke(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<i64>,
) -> Result<StatusCode, ApiError> {
    caller.require_person()?;
    match api_token::api_token_get(&state.pool, id).await? {
        Some(row) if caller.role == Role::Admin || row.user_name == caller.name => {
            api_token::api_token_revoke(&state.pool, id, chrono::Utc::now()).await?;
            tracing::info!(token.id = id, user = %caller.name, "API token revoked");
            Ok(StatusCode::NO_CONTENT)
        }
        _ => Err(ApiError::NotFound(format!("no token {id}"))),
    }
}
