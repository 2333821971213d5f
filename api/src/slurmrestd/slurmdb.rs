//! `/slurmdb/v0.0.44/`: `jobs/`, `job/{job_id}` (sacct, from `GET /v1/accounting/jobs`,
//! each run with its steps: `batch`, `0`, `1` …, unless `skip_steps`),
//! `accounts/`, `users/` and `qos/` (sacctmgr show), in slurmdbd's shapes, each with the
//! visibility of its `/v1` counterpart.
//!
//! Query parameters that only change the presentation (`skip_steps`, `with_assocs` …) are
//! accepted; filters Berth applies are applied; a filter Berth cannot apply is refused
//! (400 naming it) rather than ignored.

use super::auth::SlurmCaller;
use super::jobs::exit_code;
use super::types::{AssocShort, Coord, NoVal, Tres};
use super::{answer, answer_ok, minutes, SlurmError};
use crate::AppState;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, Uri};
use axum::response::Response;
use axum::Json;
use berth_core::accounting::{AcctJob, AcctJobQuery, AcctStep};
use berth_core::identity::{User, UserRole};
use serde_json::{json, Value};
use std::collections::HashMap;

/// Parameters accepted and not acted on: they shape slurmdbd's answer in ways Berth's
/// answer already has (no scripts or environments, no usage truncation); `skip_steps`
/// is acted on where steps are listed.
const PRESENTATION: &[&str] = &[
    "skip_steps",
    "disable_truncate_usage_time",
    "disable_wait_for_result",
    "whole_hetjob",
    "disable_whole_hetjob",
    "usage_time_as_submit_time",
    "show_batch_script",
    "show_job_environment",
    "with_assocs",
    "with_coords",
    "with_deleted",
    "with_wckeys",
    "without_defaults",
    "WithAssociations",
    "WithCoordinators",
    "NoUsersAreCoords",
    "UsersAreCoords",
    "DELETED",
    "Include deleted QOS",
];

/// Refuses the parameters of `q` that are neither handled (`handled`) nor presentation
/// only, when they carry a value.
fn refuse_unhandled(q: &HashMap<String, String>, handled: &[&str]) -> Result<(), SlurmError> {
    let mut names: Vec<&String> = q.keys().collect();
    names.sort();
    for name in names {
        if handled.contains(&name.as_str()) || PRESENTATION.contains(&name.as_str()) {
            continue;
        }
        if name == "cluster" && (q[name].is_empty() || q[name] == crate::cluster_name::get()) {
            continue;
        }
        if !q[name].is_empty() {
            return Err(SlurmError::bad_field(
                name,
                "Berth cannot filter by this parameter",
            ));
        }
    }
    Ok(())
}

fn query(
    q: Result<Query<HashMap<String, String>>, axum::extract::rejection::QueryRejection>,
) -> Result<HashMap<String, String>, SlurmError> {
    q.map(|Query(q)| q)
        .map_err(|e| SlurmError::bad_field("query", e.body_text()))
}

fn non_empty(q: &HashMap<String, String>, name: &str) -> Option<String> {
    q.get(name).filter(|v| !v.is_empty()).cloned()
}

/// A time parameter: a UNIX timestamp (as slurmrestd's clients send) becomes RFC 3339;
/// anything else goes to sacct's time parser as it is.
fn time_param(q: &HashMap<String, String>, name: &str) -> Result<Option<String>, SlurmError> {
    let Some(v) = non_empty(q, name) else {
        return Ok(None);
    };
    if v.bytes().all(|b| b.is_ascii_digit()) {
        let t = v
            .parse::<i64>()
            .ok()
            .and_then(|s| chrono::DateTime::from_timestamp(s, 0))
            .ok_or_else(|| SlurmError::bad_field(name, "not a UNIX timestamp"))?;
        return Ok(Some(t.to_rfc3339()));
    }
    Ok(Some(v))
}

fn tres_list(t: &berth_core::accounting::Tres) -> Vec<Tres> {
    let tres = |tres_type: &str, name: &str, id: i32, count: u64| Tres {
        tres_type: tres_type.into(),
        name: name.into(),
        id,
        count: i64::try_from(count).unwrap_or(i64::MAX),
    };
    let mut list = vec![tres("cpu", "", 1, t.cpu)];
    if let Some(mem) = t.mem_mib {
        list.push(tres("mem", "", 2, mem));
    }
    list.push(tres("node", "", 4, u64::from(t.nodes)));
    list.push(tres("billing", "", 5, t.billing));
    if t.gpus > 0 {
        list.push(tres("gres", "gpu", 1001, t.gpus));
    }
    list
}

/// States a run is still in (its exit is not known yet).
fn live(state: &str) -> bool {
    matches!(state, "PENDING" | "RUNNING" | "SUSPENDED" | "COMPLETING")
}

/// One step of run `j` as slurmdbd's `step`: `step.id` is `JOB.STEP` (`12.batch`,
/// `12.0`), times in seconds since the epoch, `nodes.list` the step's hosts.
fn step(j: &AcctJob, s: &AcctStep) -> Value {
    let hosts: Vec<String> = if s.nodelist.is_empty() || s.nodelist == "None assigned" {
        Vec::new()
    } else {
        berth_core::hostlist::expand(&s.nodelist).unwrap_or_else(|_| vec![s.nodelist.clone()])
    };
    json!({
        "step": { "id": format!("{}.{}", j.job_id, s.step), "name": s.name },
        "state": [s.state],
        "exit_code": exit_code(!live(&s.state), s.exit_code, s.exit_signal),
        "time": {
            "start": super::time(s.start_time),
            "end": super::time(s.end_time),
            "elapsed": s.elapsed,
        },
        "nodes": { "count": hosts.len(), "range": s.nodelist, "list": hosts },
        "tasks": { "count": s.ntasks },
        "tres": { "allocated": tres_list(&s.alloc_tres) },
    })
}

/// One run as slurmdbd's `job`, with its steps when the run has them listed.
pub(super) fn job(j: &AcctJob) -> Value {
    let ts = |t: Option<chrono::DateTime<chrono::Utc>>| t.map_or(0, |t| t.timestamp());
    let steps: Vec<Value> = j.steps.iter().map(|s| step(j, s)).collect();
    json!({
        "steps": steps,
        "job_id": j.job_id,
        "name": j.name,
        "user": j.user,
        "account": j.account,
        "partition": j.partition,
        "qos": j.qos,
        "cluster": crate::cluster_name::get(),
        "association": AssocShort {
            account: j.account.clone(),
            cluster: crate::cluster_name::get().into(),
            partition: String::new(),
            user: j.user.clone(),
        },
        "state": { "current": [j.state], "reason": j.reason.clone().unwrap_or_else(|| "None".into()) },
        "exit_code": exit_code(!live(&j.state), j.exit_code, j.exit_signal),
        "derived_exit_code": exit_code(!live(&j.state), j.exit_code, j.exit_signal),
        "time": {
            "submission": j.submit_time.timestamp(),
            "eligible": j.eligible_time.timestamp(),
            "start": ts(j.start_time),
            "end": ts(j.end_time),
            "elapsed": j.elapsed,
            "limit": minutes(j.time_limit),
        },
        "nodes": j.nodelist,
        "restart_cnt": j.restarts,
        "required": {
            "CPUs": j.req_tres.cpu,
            "memory_per_node": NoVal::opt(j.req_tres.mem_mib.map(|m| {
                (m / u64::from(j.req_tres.nodes.max(1))) as i64
            })),
        },
        "tres": { "requested": tres_list(&j.req_tres), "allocated": tres_list(&j.alloc_tres) },
    })
}

/// Whether `skip_steps` asks to leave the steps out (present and not `false`/`0`).
fn skips_steps(q: &HashMap<String, String>) -> bool {
    q.get("skip_steps")
        .is_some_and(|v| !matches!(v.to_ascii_lowercase().as_str(), "false" | "0" | "no"))
}

/// The most runs one answer holds.
const MAX_RUNS: usize = 10_000;

async fn runs(
    state: &AppState,
    caller: &crate::auth::Caller,
    mut q: AcctJobQuery,
) -> Result<(Vec<AcctJob>, bool), SlurmError> {
    let mut out = Vec::new();
    q.limit = Some(1000);
    loop {
        let Json(page) = crate::accounting::accounting_job_list(
            State(state.clone()),
            caller.clone(),
            Ok(Query(q.clone())),
        )
        .await?;
        out.extend(page.items);
        match page.next_cursor {
            Some(next) if out.len() < MAX_RUNS => q.cursor = Some(next),
            Some(_) => return Ok((out, true)),
            None => return Ok((out, false)),
        }
    }
}

/// `GET /slurmdb/v0.0.44/jobs/`: job runs the caller may see (sacct), filtered by
/// `account`, `users`, `partition`, `qos`, `state`, `node`, `job_name`, `start_time`,
/// `end_time`; `show_duplicates` gives every run of a requeued job.
pub(super) async fn jobs(
    State(state): State<AppState>,
    SlurmCaller(caller): SlurmCaller,
    uri: Uri,
    q: Result<Query<HashMap<String, String>>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, SlurmError> {
    let q = query(q)?;
    refuse_unhandled(
        &q,
        &[
            "account",
            "users",
            "partition",
            "qos",
            "state",
            "node",
            "job_name",
            "start_time",
            "end_time",
            "show_duplicates",
        ],
    )?;
    let filter = AcctJobQuery {
        start: time_param(&q, "start_time")?,
        end: time_param(&q, "end_time")?,
        user: non_empty(&q, "users"),
        account: non_empty(&q, "account"),
        partition: non_empty(&q, "partition"),
        state: non_empty(&q, "state"),
        qos: non_empty(&q, "qos"),
        node: non_empty(&q, "node"),
        duplicates: q.contains_key("show_duplicates").then_some(true),
        steps: Some(!skips_steps(&q)),
        ..AcctJobQuery::default()
    };
    let (mut found, truncated) = runs(&state, &caller, filter).await?;
    if let Some(names) = non_empty(&q, "job_name") {
        let names: Vec<&str> = names.split(',').map(str::trim).collect();
        found.retain(|j| names.contains(&j.name.as_str()));
    }
    let warnings = if truncated {
        vec![super::types::OpenapiWarning {
            description: format!("only the first {MAX_RUNS} runs are listed"),
            source: "jobs".into(),
        }]
    } else {
        Vec::new()
    };
    let list: Vec<Value> = found.iter().map(job).collect();
    Ok(answer(
        uri.path(),
        &caller.name,
        json!({ "jobs": list }),
        warnings,
    ))
}

/// `GET /slurmdb/v0.0.44/job/{job_id}`: a job's latest run (sacct -j); 404 for a job
/// the caller may not see or that does not exist.
pub(super) async fn job_get(
    State(state): State<AppState>,
    SlurmCaller(caller): SlurmCaller,
    uri: Uri,
    Path(raw): Path<String>,
) -> Result<Response, SlurmError> {
    let id = raw
        .parse::<i64>()
        .ok()
        .filter(|id| *id > 0)
        .ok_or_else(|| SlurmError::bad_field("job_id", format!("{raw:?} is not a job id")))?;
    let (found, _) = runs(
        &state,
        &caller,
        AcctJobQuery {
            job: Some(id.to_string()),
            steps: Some(true),
            ..AcctJobQuery::default()
        },
    )
    .await?;
    let list: Vec<Value> = found.iter().filter(|j| j.job_id == id).map(job).collect();
    if list.is_empty() {
        return Err(SlurmError::new(
            StatusCode::NOT_FOUND,
            super::errno::INVALID_JOB_ID,
            format!("no job {id}"),
            "job_id",
        ));
    }
    Ok(answer_ok(&uri, &caller, json!({ "jobs": list })))
}

/// `GET /slurmdb/v0.0.44/accounts/`: the accounts the caller may see
/// (`GET /v1/accounts`). `description` and `organization` are Slurm's defaults (the
/// account's name, its parent's).
pub(super) async fn accounts(
    State(state): State<AppState>,
    SlurmCaller(caller): SlurmCaller,
    uri: Uri,
    q: Result<Query<HashMap<String, String>>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, SlurmError> {
    let q = query(q)?;
    refuse_unhandled(&q, &[])?;
    let Json(list) = crate::identity::account_list(State(state), caller.clone()).await?;
    let accounts: Vec<Value> = list
        .items
        .iter()
        .map(|a| {
            json!({
                "name": a.name,
                "description": a.name,
                "organization": a.parent.clone().unwrap_or_else(|| a.name.clone()),
                "coordinators": [],
                "flags": [],
            })
        })
        .collect();
    Ok(answer_ok(&uri, &caller, json!({ "accounts": accounts })))
}

/// Slurm's `AdminLevel` of a Berth role.
fn admin_level(role: UserRole) -> &'static str {
    match role {
        UserRole::Admin => "Administrator",
        UserRole::Operator => "Operator",
        UserRole::User => "None",
    }
}

fn user(u: &User) -> Value {
    let associations: Vec<AssocShort> = u
        .memberships
        .iter()
        .map(|m| AssocShort {
            account: m.account.clone(),
            cluster: crate::cluster_name::get().into(),
            partition: String::new(),
            user: u.name.clone(),
        })
        .collect();
    let coordinators: Vec<Coord> = u
        .memberships
        .iter()
        .filter(|m| m.coordinator)
        .map(|m| Coord {
            name: m.account.clone(),
            direct: true,
        })
        .collect();
    json!({
        "name": u.name,
        "administrator_level": [admin_level(u.role)],
        "default": { "account": u.default_account.clone().unwrap_or_default() },
        "associations": associations,
        "coordinators": coordinators,
        "flags": ["NONE"],
    })
}

/// `GET /slurmdb/v0.0.44/users/`: every user for admins and operators
/// (`GET /v1/users`); a user sees only themself (`GET /v1/users/{name}`). Filters:
/// `admin_level`, `default_account`.
pub(super) async fn users(
    State(state): State<AppState>,
    SlurmCaller(caller): SlurmCaller,
    uri: Uri,
    q: Result<Query<HashMap<String, String>>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, SlurmError> {
    let q = query(q)?;
    refuse_unhandled(&q, &["admin_level", "default_account"])?;
    let mut found = if caller.sees_all_jobs() {
        crate::identity::user_list(State(state), caller.clone())
            .await?
            .0
            .items
    } else {
        vec![
            crate::identity::user_get(State(state), caller.clone(), Path(caller.name.clone()))
                .await?
                .0,
        ]
    };
    if let Some(level) = non_empty(&q, "admin_level") {
        if level == "Not Set" {
            found.clear();
        } else {
            found.retain(|u| admin_level(u.role) == level);
        }
    }
    if let Some(account) = non_empty(&q, "default_account") {
        found.retain(|u| u.default_account.as_deref() == Some(account.as_str()));
    }
    let list: Vec<Value> = found.iter().map(user).collect();
    Ok(answer_ok(&uri, &caller, json!({ "users": list })))
}

/// `GET /slurmdb/v0.0.44/qos/`: every QOS (`GET /v1/qos`), filtered by `name`
/// (comma-separated) and `preempt_mode`.
pub(super) async fn qos(
    State(state): State<AppState>,
    SlurmCaller(caller): SlurmCaller,
    uri: Uri,
    q: Result<Query<HashMap<String, String>>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, SlurmError> {
    let q = query(q)?;
    refuse_unhandled(&q, &["name", "preempt_mode"])?;
    let Json(mut list) = crate::fairshare::qos_list(State(state), caller.clone()).await?;
    if let Some(names) = non_empty(&q, "name") {
        let names: Vec<&str> = names.split(',').map(str::trim).collect();
        list.retain(|qos| names.contains(&qos.name.as_str()));
    }
    if let Some(mode) = non_empty(&q, "preempt_mode") {
        list.retain(|qos| qos.spec.preempt_mode.as_str() == mode);
    }
    let count = |v: Option<u32>| NoVal::limit(v.map(i64::from));
    let items: Vec<Value> = list
        .iter()
        .enumerate()
        .map(|(i, qos)| {
            let s = &qos.spec;
            json!({
                "id": i + 1,
                "name": qos.name,
                "description": s.description,
                "priority": NoVal::num(i64::from(s.priority)),
                "usage_factor": if s.usage_factor.is_finite() { NoVal::num(s.usage_factor) } else { NoVal::unset() },
                "limits": {
                    "grace_time": s.grace_time,
                    "max": {
                        "jobs": {
                            "active_jobs": { "per": { "user": count(s.max_jobs_per_user) } },
                            "per": { "user": count(s.max_submit_jobs_per_user) },
                        },
                        "wall_clock": { "per": { "job": minutes(s.max_wall) } },
                    },
                },
                "preempt": {
                    "list": s.preempt,
                    "mode": [s.preempt_mode.as_str()],
                    "exempt_time": NoVal::num(i64::try_from(s.preempt_exempt_time).unwrap_or(i64::MAX)),
                },
                "flags": [],
            })
        })
        .collect();
    Ok(answer_ok(&uri, &caller, json!({ "qos": items })))
}
