//! Fairshare, priority and QOS: `GET /v1/fairshare` (sshare), `GET /v1/jobs/{id}/priority`
//! (sprio), and `GET /v1/qos`, `GET|PUT /v1/qos/{name}` (sacctmgr's QOS, admins and operators to
//! change). Thin handlers over `berth_db::{usage, job_priority, qos}`; the fairshare
//! arithmetic is [`berth_core::priority::fairshare_table`], the same the scheduler uses.

use crate::auth::Caller;
use crate::error::{rejection, ApiError};
use crate::AppState;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use berth_core::priority::{self, ShareAccount};
use berth_core::qos::{
    FairshareList, JobPriority, PreemptMode, PriorityRecord, Qos, QosSpec, TresLimits,
};
use berth_core::wire::Problem;
use berth_db::qos::QosRow;
use berth_db::{job_priority, qos, usage};

/// Every association's fairshare (sshare).
///
/// Normalized shares `S` (down the account tree), decayed usage in billing-seconds,
/// normalized usage `U` and the classic factor `2^(−U/S)`. Users see their own
/// associations; admins and operators see all.
#[utoipa::path(get, path = "/v1/fairshare", tag = "fairshare", operation_id = "fairshare_list",
    responses((status = 200, description = "Associations by account, then user", body = FairshareList),
              (status = 401, description = "No or bad credentials", body = Problem)),
    security(("bearer" = [])))]
pub async fn fairshare_list(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<FairshareList>, ApiError> {
    caller.require_person()?;
    let (_, mut table) = fairshare_all(&state).await?;
    if !caller.sees_all_jobs() {
        table.retain(|r| r.user == caller.name);
    }
    Ok(Json(FairshareList {
        associations: table,
    }))
}

/// The account tree and every association's fairshare, whoever asks (callers filter
/// what they show: [`fairshare_list`], the slurmrestd `shares` answer).
///
/// # Errors
/// [`ApiError`] from the database.
pub(crate) async fn fairshare_all(
    state: &AppState,
) -> Result<(Vec<ShareAccount>, Vec<berth_core::priority::FairshareRow>), ApiError> {
    let accounts: Vec<ShareAccount> = usage::usage_account_tree(&state.pool)
        .await?
        .into_iter()
        .map(|a| ShareAccount {
            name: a.name,
            parent: a.parent,
            shares: a.shares.max(0) as u32,
        })
        .collect();
    let rows: Vec<(String, String, f64)> = usage::usage_list(&state.pool)
        .await?
        .into_iter()
        .map(|u| (u.account, u.user_name, u.raw_usage))
        .collect();
    let associations = usage::usage_associations(&state.pool).await?;
    let table = priority::fairshare_table(&accounts, &rows, &associations);
    Ok((accounts, table))
}

/// A pending job's priority, factor by factor (sprio).
///
/// The factors the scheduler computed with the last change of the job's priority: each
/// factor (0..=1), the same times its weight, nice, the admin adjustment and the total.
#[utoipa::path(get, path = "/v1/jobs/{id}/priority", tag = "jobs", operation_id = "job_priority",
    params(("id" = i64, Path, description = "Job id")),
    responses((status = 200, description = "The priority factors", body = JobPriority),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 404, description = "No such job (or not yours)", body = Problem),
              (status = 409, description = "Not pending, or not prioritized yet", body = Problem)),
    security(("bearer" = [])))]
pub async fn job_priority(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<i64>,
) -> Result<Json<JobPriority>, ApiError> {
    let row = crate::routes::visible_job(&state, &caller, id).await?;
    let record = match job_priority::job_priority_get(&state.pool, id).await? {
        Some((factors, at)) if row.state == "PENDING" => {
            serde_json::from_value::<PriorityRecord>(factors)
                .ok()
                .map(|r| (r, at))
        }
        _ => None,
    };
    let Some((record, at)) = record else {
        return Err(ApiError::Conflict {
            code: "no_priority",
            detail: format!(
                "job {id} is {} and has no computed priority (only pending jobs do, after a scheduler cycle)",
                row.state
            ),
        });
    };
    Ok(Json(JobPriority {
        job_id: id,
        user: row.user_name,
        account: Some(record.account.clone()),
        partition: row.partition,
        qos: row.qos,
        weighted: record.weighted(),
        factors: record.factors,
        computed_at: at.to_rfc3339(),
    }))
}

fn tres(value: &serde_json::Value) -> TresLimits {
    serde_json::from_value(value.clone()).unwrap_or_default()
}

fn qos_view(row: QosRow) -> Qos {
    Qos {
        spec: QosSpec {
            description: row.description,
            priority: row.priority.max(0) as u32,
            usage_factor: row.usage_factor,
            max_tres_per_user: tres(&row.max_tres_per_user),
            max_tres_per_account: tres(&row.max_tres_per_account),
            grp_tres: tres(&row.grp_tres),
            max_jobs_per_user: row.max_jobs_per_user.map(|v| v.max(0) as u32),
            max_submit_jobs_per_user: row.max_submit_jobs_per_user.map(|v| v.max(0) as u32),
            max_wall: row.max_wall.map(|v| v.max(0) as u64),
            preempt: row.preempt,
            preempt_mode: if row.preempt_mode == "REQUEUE" {
                PreemptMode::Requeue
            } else {
                PreemptMode::Cancel
            },
            grace_time: row.grace_time.max(0) as u64,
            preempt_exempt_time: row.preempt_exempt_time.max(0) as u64,
        },
        name: row.name,
    }
}

/// List QOS.
#[utoipa::path(get, path = "/v1/qos", tag = "qos", operation_id = "qos_list",
    responses((status = 200, description = "Every QOS, by name", body = [Qos]),
              (status = 401, description = "No or bad credentials", body = Problem)),
    security(("bearer" = [])))]
pub async fn qos_list(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<Vec<Qos>>, ApiError> {
    caller.require_person()?;
    Ok(Json(
        qos::qos_list(&state.pool)
            .await?
            .into_iter()
            .map(qos_view)
            .collect(),
    ))
}

/// Show a QOS.
#[utoipa::path(get, path = "/v1/qos/{name}", tag = "qos", operation_id = "qos_get",
    params(("name" = String, Path, description = "QOS name")),
    responses((status = 200, description = "The QOS", body = Qos),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 404, description = "No such QOS", body = Problem)),
    security(("bearer" = [])))]
pub async fn qos_get(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Json<Qos>, ApiError> {
    caller.require_person()?;
    qos::qos_get(&state.pool, &name)
        .await?
        .map(|r| Json(qos_view(r)))
        .ok_or_else(|| ApiError::NotFound(format!("no QOS {name}")))
}

/// A name Slurm's configuration would accept: 1-64 letters, digits, `_`, `.` or `-`.
pub(crate) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

fn i32_field(v: Option<u32>, field: &str) -> Result<Option<i32>, ApiError> {
    v.map(|v| i32::try_from(v).map_err(|_| ApiError::bad_field(field, "too large")))
        .transpose()
}

/// Seconds for a QOS time setting, at most [`berth_core::duration::MAX_SECONDS`].
fn seconds_field(v: u64, field: &str) -> Result<i64, ApiError> {
    if v > berth_core::duration::MAX_SECONDS {
        return Err(ApiError::bad_field(field, "longer than 100 years"));
    }
    Ok(v as i64)
}

/// Checks a QOS definition (`known`: the QOS names `preempt` may name) and turns it into
/// the row to store.
///
/// # Errors
/// [`ApiError::BadRequest`] naming the field.
pub(crate) fn qos_row(name: &str, spec: &QosSpec, known: &[String]) -> Result<QosRow, ApiError> {
    if !valid_name(name) {
        return Err(ApiError::bad_field(
            "name",
            "a QOS name is 1-64 letters, digits, `_`, `.` or `-`",
        ));
    }
    if !(spec.usage_factor.is_finite() && spec.usage_factor >= 0.0) {
        return Err(ApiError::bad_field("usage_factor", "must be a number ≥ 0"));
    }
    if spec.max_wall == Some(0) {
        return Err(ApiError::bad_field("max_wall", "must be at least 1 second"));
    }
    for p in &spec.preempt {
        if p == name {
            return Err(ApiError::bad_field(
                "preempt",
                "a QOS cannot preempt itself",
            ));
        }
        if !known.iter().any(|q| q == p) {
            return Err(ApiError::bad_field("preempt", format!("no QOS {p}")));
        }
    }
    Ok(QosRow {
        name: name.to_string(),
        description: spec.description.clone(),
        priority: i32_field(Some(spec.priority), "priority")?.unwrap_or(0),
        usage_factor: spec.usage_factor,
        max_tres_per_user: serde_json::to_value(spec.max_tres_per_user).unwrap_or_default(),
        max_tres_per_account: serde_json::to_value(spec.max_tres_per_account).unwrap_or_default(),
        grp_tres: serde_json::to_value(spec.grp_tres).unwrap_or_default(),
        max_jobs_per_user: i32_field(spec.max_jobs_per_user, "max_jobs_per_user")?,
        max_submit_jobs_per_user: i32_field(
            spec.max_submit_jobs_per_user,
            "max_submit_jobs_per_user",
        )?,
        max_wall: spec
            .max_wall
            .map(|w| seconds_field(w, "max_wall"))
            .transpose()?,
        preempt: spec.preempt.clone(),
        preempt_mode: spec.preempt_mode.as_str().to_string(),
        grace_time: seconds_field(spec.grace_time, "grace_time")?,
        preempt_exempt_time: seconds_field(spec.preempt_exempt_time, "preempt_exempt_time")?,
    })
}

/// Create or replace a QOS (admin or operator).
///
/// The body is the QOS's whole definition; absent fields take their defaults. QOS named
/// in `preempt` must exist (a QOS may not preempt itself).
#[utoipa::path(put, path = "/v1/qos/{name}", tag = "qos", operation_id = "qos_put",
    params(("name" = String, Path, description = "QOS name (letters, digits, `_.-`)")),
    request_body = QosSpec,
    responses((status = 200, description = "Replaced", body = Qos),
              (status = 201, description = "Created", body = Qos),
              (status = 400, description = "Bad definition (the field is named)", body = Problem),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "Not an admin or operator", body = Problem)),
    security(("bearer" = [])))]
pub async fn qos_put(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    body: Result<Json<QosSpec>, JsonRejection>,
) -> Result<(StatusCode, Json<Qos>), ApiError> {
    caller.require_person()?;
    caller.require_unscoped()?;
    caller.require_staff()?;
    let Json(spec) = body.map_err(|e| rejection("JSON body", e.body_text()))?;
    let known: Vec<String> = qos::qos_list(&state.pool)
        .await?
        .into_iter()
        .map(|q| q.name)
        .collect();
    let row = qos_row(&name, &spec, &known)?;
    let created = qos::qos_upsert(&state.pool, &row).await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(Qos { name, spec })))
}
