//! Users, accounts and memberships (`/v1/users`, `/v1/accounts`): managed by admins and
//! operators. Only admins create, change or delete admins and operators. Plain users may
//! read their own user and the accounts they belong to; anything else is 404 to them.

use crate::auth::Caller;
use crate::error::{rejection, ApiError};
use crate::AppState;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use berth_core::auth::Role;
use berth_core::identity::{
    Account, AccountCreate, AccountList, AccountUpdate, Membership, MembershipSet, User,
    UserCreate, UserList, UserRole, Whoami,
};
use berth_core::qos::TresLimits;
use berth_core::wire::Problem;
use berth_db::account::AccountRow;
use berth_db::membership::MembershipRow;
use berth_db::user::UserRow;
use berth_db::{account, membership, user, DbError};

fn json_body<T>(body: Result<Json<T>, JsonRejection>) -> Result<T, ApiError> {
    body.map(|Json(v)| v)
        .map_err(|e| rejection("JSON body", e.body_text()))
}

fn valid_name(field: &str, name: &str, extra: &str) -> Result<(), ApiError> {
    let ok = !name.is_empty()
        && name.len() <= 100
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || extra.contains(c));
    if ok {
        Ok(())
    } else {
        Err(ApiError::bad_field(
            field,
            format!("1 to 100 letters, digits or `{extra}`"),
        ))
    }
}

fn membership_view(m: &MembershipRow) -> Membership {
    Membership {
        account: m.account.clone(),
        user: m.user_name.clone(),
        coordinator: m.coordinator,
    }
}

fn user_view(u: &UserRow, memberships: &[MembershipRow]) -> User {
    User {
        name: u.name.clone(),
        role: UserRole::parse(&u.role).unwrap_or(UserRole::User),
        default_account: u.default_account.clone(),
        memberships: memberships
            .iter()
            .filter(|m| m.user_name == u.name)
            .map(membership_view)
            .collect(),
    }
}

fn account_view(a: &AccountRow) -> Account {
    Account {
        name: a.name.clone(),
        parent: a.parent.clone(),
        shares: u32::try_from(a.shares).unwrap_or(0),
        grp_tres: serde_json::from_value(a.grp_tres.clone()).unwrap_or_default(),
    }
}

fn shares_value(shares: u32) -> Result<i32, ApiError> {
    i32::try_from(shares)
        .map_err(|_| ApiError::bad_field("shares", format!("at most {}", i32::MAX)))
}

fn grp_tres_value(limits: &TresLimits) -> serde_json::Value {
    serde_json::to_value(limits).unwrap_or_else(|_| serde_json::json!({}))
}

/// Operators manage plain users; only admins manage admins and operators.
fn may_manage(caller: &Caller, role: UserRole) -> Result<(), ApiError> {
    caller.require_staff()?;
    if role != UserRole::User && caller.role != Role::Admin {
        return Err(ApiError::Forbidden(
            "only admins manage admins and operators".into(),
        ));
    }
    Ok(())
}

async fn load_user(state: &AppState, name: &str) -> Result<User, ApiError> {
    let row = user::user_get(&state.pool, name)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no user {name}")))?;
    let memberships = membership::membership_list(&state.pool, Some(name)).await?;
    Ok(user_view(&row, &memberships))
}

/// Add a user.
#[utoipa::path(post, path = "/v1/users", tag = "users", operation_id = "user_create",
    request_body = UserCreate,
    responses((status = 201, description = "The user", body = User),
              (status = 400, description = "A bad field", body = Problem),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "Not an admin or operator (only admins add admins and operators)", body = Problem),
              (status = 409, description = "The name is taken", body = Problem)),
    security(("bearer" = [])))]
pub async fn user_create(
    State(state): State<AppState>,
    caller: Caller,
    body: Result<Json<UserCreate>, JsonRejection>,
) -> Result<(StatusCode, Json<User>), ApiError> {
    caller.require_staff()?;
    let req = json_body(body)?;
    may_manage(&caller, req.role)?;
    valid_name("name", &req.name, "_.@-")?;
    let row = match user::user_insert(&state.pool, &req.name, req.role.as_str()).await {
        Ok(row) => row,
        Err(DbError::Conflict { .. }) => {
            return Err(ApiError::Conflict {
                code: "user_exists",
                detail: format!("user {} already exists", req.name),
            })
        }
        Err(e) => return Err(e.into()),
    };
    Ok((StatusCode::CREATED, Json(user_view(&row, &[]))))
}

/// List users.
#[utoipa::path(get, path = "/v1/users", tag = "users", operation_id = "user_list",
    responses((status = 200, description = "Every user, with their memberships", body = UserList),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "Not an admin or operator", body = Problem)),
    security(("bearer" = [])))]
pub async fn user_list(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<UserList>, ApiError> {
    caller.require_staff()?;
    let users = user::user_list(&state.pool).await?;
    let memberships = membership::membership_list(&state.pool, None).await?;
    Ok(Json(UserList {
        items: users.iter().map(|u| user_view(u, &memberships)).collect(),
    }))
}

/// Who am I.
///
/// The caller as the api sees this request: user, role, the API token and its scope or
/// the job a job's token belongs to, and the user's accounts. Any valid credentials may
/// ask (a console shows its pages and actions from this).
#[utoipa::path(get, path = "/v1/whoami", tag = "users", operation_id = "whoami_get",
    responses((status = 200, description = "The caller", body = Whoami),
              (status = 401, description = "No or bad credentials", body = Problem)),
    security(("bearer" = [])))]
pub async fn whoami(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<Whoami>, ApiError> {
    let role = match caller.role {
        Role::Admin => "admin",
        Role::Operator => "operator",
        Role::User => "user",
        Role::Node => "node",
    };
    let (default_account, accounts) = if caller.role == Role::Node {
        (None, Vec::new())
    } else {
        let row = user::user_get(&state.pool, &caller.name).await?;
        let accounts = membership::membership_list(&state.pool, Some(&caller.name))
            .await?
            .into_iter()
            .map(|m| Membership {
                account: m.account,
                user: m.user_name,
                coordinator: m.coordinator,
            })
            .collect();
        (row.and_then(|r| r.default_account), accounts)
    };
    Ok(Json(Whoami {
        user: caller.name,
        role: role.to_string(),
        token_id: caller.token_id,
        scope: caller.scope,
        job_id: caller.job_id,
        default_account,
        accounts,
    }))
}

/// Show a user.
///
/// Admins and operators see every user; others only themselves.
#[utoipa::path(get, path = "/v1/users/{name}", tag = "users", operation_id = "user_get",
    params(("name" = String, Path, description = "User name")),
    responses((status = 200, description = "The user", body = User),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "A node token", body = Problem),
              (status = 404, description = "No such user (or not you)", body = Problem)),
    security(("bearer" = [])))]
pub async fn user_get(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Json<User>, ApiError> {
    caller.require_person()?;
    if !caller.sees_all_jobs() && caller.name != name {
        return Err(ApiError::NotFound(format!("no user {name}")));
    }
    Ok(Json(load_user(&state, &name).await?))
}

/// Delete a user.
///
/// Their memberships go with them; their jobs stay.
#[utoipa::path(delete, path = "/v1/users/{name}", tag = "users", operation_id = "user_delete",
    params(("name" = String, Path, description = "User name")),
    responses((status = 204, description = "Deleted"),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "Not an admin or operator (only admins delete admins and operators)", body = Problem),
              (status = 404, description = "No such user", body = Problem)),
    security(("bearer" = [])))]
pub async fn user_delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    caller.require_staff()?;
    let row = user::user_get(&state.pool, &name)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no user {name}")))?;
    may_manage(
        &caller,
        UserRole::parse(&row.role).unwrap_or(UserRole::Admin),
    )?;
    user::user_delete(&state.pool, &name).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Add an account.
///
/// Accounts form a tree under `root` (organisation → team → project); `shares` weigh it
/// against its siblings in fairshare.
#[utoipa::path(post, path = "/v1/accounts", tag = "accounts", operation_id = "account_create",
    request_body = AccountCreate,
    responses((status = 201, description = "The account", body = Account),
              (status = 400, description = "A bad field (or no such parent)", body = Problem),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "Not an admin or operator", body = Problem),
              (status = 409, description = "The name is taken", body = Problem)),
    security(("bearer" = [])))]
pub async fn account_create(
    State(state): State<AppState>,
    caller: Caller,
    body: Result<Json<AccountCreate>, JsonRejection>,
) -> Result<(StatusCode, Json<Account>), ApiError> {
    caller.require_staff()?;
    let req = json_body(body)?;
    // `@` as in Slurm account names made from e-mail-like group names (`ml@corp`).
    valid_name("name", &req.name, "_.@-")?;
    let shares = shares_value(req.shares.unwrap_or(1))?;
    let parent = req.parent.as_deref().unwrap_or("root");
    let grp_tres = grp_tres_value(&req.grp_tres.unwrap_or_default());
    match account::account_insert(&state.pool, &req.name, parent, shares, &grp_tres).await {
        Ok(row) => Ok((StatusCode::CREATED, Json(account_view(&row)))),
        Err(DbError::Conflict { .. }) => Err(ApiError::Conflict {
            code: "account_exists",
            detail: format!("account {} already exists", req.name),
        }),
        Err(DbError::ForeignKey { .. }) => Err(ApiError::bad_field(
            "parent",
            format!("no account named {parent:?}"),
        )),
        Err(e) => Err(e.into()),
    }
}

/// List accounts.
///
/// Admins and operators see every account; others the accounts they belong to.
#[utoipa::path(get, path = "/v1/accounts", tag = "accounts", operation_id = "account_list",
    responses((status = 200, description = "The accounts", body = AccountList),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "A node token", body = Problem)),
    security(("bearer" = [])))]
pub async fn account_list(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<AccountList>, ApiError> {
    caller.require_person()?;
    let member = (!caller.sees_all_jobs()).then_some(caller.name.as_str());
    let rows = account::account_list(&state.pool, member).await?;
    Ok(Json(AccountList {
        items: rows.iter().map(account_view).collect(),
    }))
}

/// Change an account (`sacctmgr modify account NAME set ...`).
///
/// Sets its fairshare `shares` and/or its `grp_tres` (Slurm's association `GrpTRES`:
/// what all running jobs charged to the account and its sub-accounts may hold together;
/// a job that would go past it waits with `AssocGrpGRES`, `AssocGrpCpuLimit` or
/// `AssocGrpNodeLimit`). Absent fields stay as they are; `grp_tres` replaces the whole
/// limit set. Running jobs are never stopped by a lower limit.
#[utoipa::path(patch, path = "/v1/accounts/{name}", tag = "accounts", operation_id = "account_update",
    params(("name" = String, Path, description = "Account name")),
    request_body = AccountUpdate,
    responses((status = 200, description = "The account as it is now", body = Account),
              (status = 400, description = "A bad field", body = Problem),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "Not an admin or operator", body = Problem),
              (status = 404, description = "No such account", body = Problem)),
    security(("bearer" = [])))]
pub async fn account_update(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    body: Result<Json<AccountUpdate>, JsonRejection>,
) -> Result<Json<Account>, ApiError> {
    caller.require_staff()?;
    let req = json_body(body)?;
    let shares = req.shares.map(shares_value).transpose()?;
    let grp_tres = req.grp_tres.as_ref().map(grp_tres_value);
    match account::account_update(&state.pool, &name, shares, grp_tres.as_ref()).await? {
        Some(row) => Ok(Json(account_view(&row))),
        None => Err(ApiError::NotFound(format!("no account {name}"))),
    }
}

/// Delete an account.
///
/// Its memberships go with it; an account with sub-accounts cannot be deleted (409), nor
/// can `root`.
#[utoipa::path(delete, path = "/v1/accounts/{name}", tag = "accounts", operation_id = "account_delete",
    params(("name" = String, Path, description = "Account name")),
    responses((status = 204, description = "Deleted"),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "Not an admin or operator", body = Problem),
              (status = 404, description = "No such account", body = Problem),
              (status = 409, description = "It has sub-accounts, or is root", body = Problem)),
    security(("bearer" = [])))]
pub async fn account_delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    caller.require_staff()?;
    if name == "root" {
        return Err(ApiError::Conflict {
            code: "account_in_use",
            detail: "the root account cannot be deleted".into(),
        });
    }
    match account::account_delete(&state.pool, &name).await {
        Ok(true) => Ok(StatusCode::NO_CONTENT),
        Ok(false) => Err(ApiError::NotFound(format!("no account {name}"))),
        Err(DbError::ForeignKey { .. }) => Err(ApiError::Conflict {
            code: "account_in_use",
            detail: format!("account {name} has sub-accounts; delete them first"),
        }),
        Err(e) => Err(e.into()),
    }
}

/// Add a user to an account, or change their membership.
///
/// `coordinator` lets the user see and manage every job of the account and its
/// sub-accounts; `default` makes it the account used when a submission names none (a
/// user's first account becomes their default anyway).
#[utoipa::path(put, path = "/v1/accounts/{name}/users/{user}", tag = "accounts", operation_id = "membership_set",
    params(("name" = String, Path, description = "Account name"),
           ("user" = String, Path, description = "User name")),
    request_body = MembershipSet,
    responses((status = 200, description = "The user with their memberships", body = User),
              (status = 400, description = "A bad field", body = Problem),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "Not an admin or operator", body = Problem),
              (status = 404, description = "No such account or user", body = Problem)),
    security(("bearer" = [])))]
pub async fn membership_set(
    State(state): State<AppState>,
    caller: Caller,
    Path((name, user_name)): Path<(String, String)>,
    body: Result<Json<MembershipSet>, JsonRejection>,
) -> Result<Json<User>, ApiError> {
    caller.require_staff()?;
    let req = json_body(body)?;
    let target = user::user_get(&state.pool, &user_name)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no user {user_name}")))?;
    if account::account_get(&state.pool, &name).await?.is_none() {
        return Err(ApiError::NotFound(format!("no account {name}")));
    }
    let mut tx = berth_db::begin(&state.pool).await?;
    membership::membership_upsert(&mut *tx, &name, &user_name, req.coordinator).await?;
    if req.default || target.default_account.is_none() {
        user::user_set_default_account(&mut *tx, &user_name, Some(&name)).await?;
    }
    tx.commit().await.map_err(DbError::from)?;
    Ok(Json(load_user(&state, &user_name).await?))
}

/// Remove a user from an account.
///
/// When it was their default account, they have none until another is set.
#[utoipa::path(delete, path = "/v1/accounts/{name}/users/{user}", tag = "accounts", operation_id = "membership_delete",
    params(("name" = String, Path, description = "Account name"),
           ("user" = String, Path, description = "User name")),
    responses((status = 204, description = "Removed"),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "Not an admin or operator", body = Problem),
              (status = 404, description = "The user is not in the account", body = Problem)),
    security(("bearer" = [])))]
pub async fn membership_delete(
    State(state): State<AppState>,
    caller: Caller,
    Path((name, user_name)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    caller.require_staff()?;
    if membership::membership_delete(&state.pool, &name, &user_name).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound(format!(
            "user {user_name} is not in account {name}"
        )))
    }
}

/// The account a submission by `user_name` is charged to: the one it names, which must be
/// one of the user's accounts (admins may name any existing account), else the user's
/// default account, else none.
///
/// # Errors
/// 400 naming `--account` when the named account is not one of the user's.
pub async fn submission_account(
    pool: &berth_db::Pool,
    user_name: &str,
    role: Role,
    named: Option<&str>,
) -> Result<Option<String>, ApiError> {
    match named {
        Some(acct) => {
            let allowed = if role == Role::Admin {
                account::account_get(pool, acct).await?.is_some()
            } else {
                membership::membership_list(pool, Some(user_name))
                    .await?
                    .iter()
                    .any(|m| m.account == acct)
            };
            if allowed {
                Ok(Some(acct.to_string()))
            } else {
                Err(ApiError::bad_field(
                    "--account",
                    format!("{acct:?} is not an account of user {user_name}"),
                ))
            }
        }
        None => Ok(user::user_get(pool, user_name)
            .await?
            .and_then(|u| u.default_account)),
    }
}
