//! `ping/`, `diag/`, `nodes/`, `node/{node_name}`, `partitions/`,
//! `partition/{partition_name}`, `reservations/`, `reservation/{reservation_name}` and
//! `shares`: what `/v1` shows of the cluster, in slurmrestd's shapes.

use super::auth::SlurmCaller;
use super::jobs::{info_query, InfoQuery};
use super::types::{ControllerPing, NoVal, NodeInfo, ReservationInfo};
use super::{answer_ok, minutes, now, time, SlurmError, CLUSTER};
use crate::AppState;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::Uri;
use axum::response::Response;
use axum::Json;
use berth_core::state::NodeState;
use berth_core::wire::{Node, Partition, Reservation};
use serde::Deserialize;
use serde_json::json;
use std::time::Instant;

/// `GET /slurm/v0.0.44/ping/`: whether the controller answers. Berth's controller is
/// the leading scheduler: it answers when its lease is live (checked in the database,
/// whose round trip is the `latency`, in microseconds).
pub(super) async fn ping(
    State(state): State<AppState>,
    SlurmCaller(caller): SlurmCaller,
    uri: Uri,
) -> Result<Response, SlurmError> {
    let started = Instant::now();
    let leader = berth_db::lease::lease_current(&state.pool, "scheduler")
        .await
        .map_err(crate::error::ApiError::from)?;
    let latency = i64::try_from(started.elapsed().as_micros()).unwrap_or(i64::MAX);
    let ping = match leader {
        Some((holder, _term)) => ControllerPing {
            hostname: holder,
            pinged: "UP".into(),
            responding: true,
            latency,
            mode: "primary".into(),
            primary: true,
        },
        None => ControllerPing {
            hostname: "scheduler".into(),
            pinged: "DOWN".into(),
            responding: false,
            latency,
            mode: "primary".into(),
            primary: true,
        },
    };
    Ok(answer_ok(&uri, &caller, json!({ "pings": [ping] })))
}

/// `GET /slurm/v0.0.44/diag/`: the job counts of the api's metrics snapshot (refreshed
/// in the background, see [`crate::metrics`]); Slurm's RPC and backfill statistics have no
/// Berth counterpart and are left out.
pub(super) async fn diag(
    State(state): State<AppState>,
    SlurmCaller(caller): SlurmCaller,
    uri: Uri,
) -> Result<Response, SlurmError> {
    let snapshot = state.metrics.snapshot();
    let count = |wanted: &str| -> u64 {
        snapshot
            .jobs
            .iter()
            .filter(|((s, _), _)| s == wanted)
            .map(|(_, n)| *n)
            .sum()
    };
    let pending = count("PENDING");
    let taken = snapshot.taken_at.map(|t| t.timestamp());
    Ok(answer_ok(
        &uri,
        &caller,
        json!({ "statistics": {
            "req_time": now(),
            "req_time_start": NoVal::opt(taken),
            "jobs_pending": pending,
            "jobs_running": count("RUNNING"),
            "schedule_queue_length": pending,
            "job_states_ts": NoVal::opt(taken),
        } }),
    ))
}

/// Slurm's state flags of a node (`["MIXED", "DRAIN"]`).
fn node_state(node: &Node) -> Vec<String> {
    let busy = if node.gpus_allocated > 0 || node.cpus_allocated > 0 {
        "MIXED"
    } else {
        "IDLE"
    };
    let flags: &[&str] = match node.state {
        NodeState::Idle => &["IDLE"],
        NodeState::Mixed => &["MIXED"],
        NodeState::Allocated => &["ALLOCATED"],
        NodeState::Draining => &[busy, "DRAIN"],
        NodeState::Drained => &["IDLE", "DRAIN"],
        NodeState::Down => &["DOWN"],
        NodeState::PoweredDown => &["IDLE", "POWERED_DOWN"],
        NodeState::PoweringUp => &["IDLE", "POWERING_UP"],
        NodeState::PoweringDown => &["IDLE", "POWERING_DOWN"],
    };
    flags.iter().map(|s| s.to_string()).collect()
}

/// A Berth node as slurmrestd's `node`.
fn node_info(node: &Node) -> NodeInfo {
    let gpus = node.gpus.iter().filter(|g| g.parent.is_none()).count();
    let int = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    let mut tres = format!("cpu={},mem={}M", node.cpus, node.memory_mib);
    let mut tres_used = format!(
        "cpu={},mem={}M",
        node.cpus_allocated, node.memory_allocated_mib
    );
    if gpus > 0 {
        tres.push_str(&format!(",gres/gpu={gpus}"));
        tres_used.push_str(&format!(",gres/gpu={}", node.gpus_allocated));
    }
    NodeInfo {
        name: node.name.clone(),
        hostname: node.name.clone(),
        address: node.name.clone(),
        cluster_name: CLUSTER.into(),
        state: node_state(node),
        reason: node.reason.clone().unwrap_or_default(),
        cpus: i64::from(node.cpus),
        effective_cpus: i64::from(node.cpus_effective),
        alloc_cpus: i64::from(node.cpus_allocated),
        alloc_idle_cpus: i64::from(node.cpus_effective.saturating_sub(node.cpus_allocated)),
        specialized_cores: i64::from(node.core_spec_count),
        real_memory: int(node.memory_mib),
        alloc_memory: int(node.memory_allocated_mib),
        specialized_memory: int(node.mem_spec_limit_mib),
        features: node.features.clone(),
        active_features: node.features.clone(),
        gres: if gpus > 0 {
            format!("gpu:{gpus}")
        } else {
            String::new()
        },
        gres_used: if gpus > 0 {
            format!("gpu:{}", node.gpus_allocated)
        } else {
            String::new()
        },
        partitions: node.partitions.clone(),
        weight: i64::from(node.weight),
        tres,
        tres_used,
        last_busy: time(node.last_heartbeat),
        instance_id: node.instance_id.clone(),
        instance_type: node.instance_type.clone(),
    }
}

/// `GET /slurm/v0.0.44/nodes/`: every node (`GET /v1/nodes`).
pub(super) async fn nodes(
    State(state): State<AppState>,
    SlurmCaller(caller): SlurmCaller,
    uri: Uri,
    q: Result<Query<InfoQuery>, QueryRejection>,
) -> Result<Response, SlurmError> {
    info_query(q)?;
    let Json(list) = crate::routes::node_list(State(state), caller.clone()).await?;
    let nodes: Vec<NodeInfo> = list.items.iter().map(node_info).collect();
    Ok(answer_ok(
        &uri,
        &caller,
        json!({ "nodes": nodes, "last_update": now() }),
    ))
}

/// `GET /slurm/v0.0.44/node/{node_name}`: one node (`GET /v1/nodes/{name}`).
pub(super) async fn node(
    State(state): State<AppState>,
    SlurmCaller(caller): SlurmCaller,
    uri: Uri,
    Path(name): Path<String>,
    q: Result<Query<InfoQuery>, QueryRejection>,
) -> Result<Response, SlurmError> {
    info_query(q)?;
    let Json(node) = crate::nodes::node_get(State(state), caller.clone(), Path(name)).await?;
    Ok(answer_ok(
        &uri,
        &caller,
        json!({ "nodes": [node_info(&node)], "last_update": now() }),
    ))
}

/// A Berth partition as slurmrestd's `partition_info`; `all_nodes` names every node
/// (a partition with no member list holds them all).
fn partition_info(p: &Partition, all_nodes: &[String]) -> serde_json::Value {
    let members = if p.nodes.is_empty() {
        all_nodes.join(",")
    } else {
        p.nodes.join(",")
    };
    let mib = |v: Option<u64>| NoVal::opt(v.map(|m| i64::try_from(m).unwrap_or(i64::MAX)));
    json!({
        "name": p.name,
        "cluster": CLUSTER,
        "nodes": { "configured": members, "total": p.total_nodes, "allowed_allocation": "" },
        "accounts": { "allowed": p.allowed_accounts.join(","), "deny": "" },
        "qos": { "allowed": p.allowed_qos.join(","), "deny": "", "assigned": "" },
        "tres": { "configured": format!("node={},gres/gpu={}", p.total_nodes, p.total_gpus),
                  "billing_weights": "" },
        "defaults": {
            "time": p.default_time.map_or_else(NoVal::unset, |t| minutes(Some(t))),
            "partition_memory_per_cpu": mib(p.def_mem_per_cpu),
        },
        "maximums": {
            "time": minutes(p.max_time),
            "nodes": NoVal::limit(p.max_nodes.map(i64::from)),
            "partition_memory_per_node": mib(p.max_mem_per_node),
        },
        "priority": { "tier": p.priority_tier, "job_factor": 1 },
        "partition": { "state": ["UP"] },
    })
}

async fn node_names(
    state: &AppState,
    caller: &crate::auth::Caller,
) -> Result<Vec<String>, SlurmError> {
    let Json(list) = crate::routes::node_list(State(state.clone()), caller.clone()).await?;
    Ok(list.items.into_iter().map(|n| n.name).collect())
}

/// `GET /slurm/v0.0.44/partitions/`: every partition (`GET /v1/partitions`).
pub(super) async fn partitions(
    State(state): State<AppState>,
    SlurmCaller(caller): SlurmCaller,
    uri: Uri,
    q: Result<Query<InfoQuery>, QueryRejection>,
) -> Result<Response, SlurmError> {
    info_query(q)?;
    let Json(list) = crate::routes::partition_list(State(state.clone()), caller.clone()).await?;
    let all = node_names(&state, &caller).await?;
    let partitions: Vec<_> = list.items.iter().map(|p| partition_info(p, &all)).collect();
    Ok(answer_ok(
        &uri,
        &caller,
        json!({ "partitions": partitions, "last_update": now() }),
    ))
}

/// `GET /slurm/v0.0.44/partition/{partition_name}` (`GET /v1/partitions/{name}`).
pub(super) async fn partition(
    State(state): State<AppState>,
    SlurmCaller(caller): SlurmCaller,
    uri: Uri,
    Path(name): Path<String>,
    q: Result<Query<InfoQuery>, QueryRejection>,
) -> Result<Response, SlurmError> {
    info_query(q)?;
    let Json(p) =
        crate::partitions::partition_get(State(state.clone()), caller.clone(), Path(name)).await?;
    let all = node_names(&state, &caller).await?;
    Ok(answer_ok(
        &uri,
        &caller,
        json!({ "partitions": [partition_info(&p, &all)], "last_update": now() }),
    ))
}

/// A Berth reservation as slurmrestd's `reservation_info`.
fn reservation_info(r: &Reservation) -> ReservationInfo {
    ReservationInfo {
        name: r.name.clone(),
        accounts: r.accounts.join(","),
        users: r.users.join(","),
        core_count: i64::from(r.cpus),
        node_count: i64::from(r.node_cnt),
        node_list: r.node_list.clone(),
        partition: r.partition.clone().unwrap_or_default(),
        start_time: time(Some(r.start_time)),
        end_time: time(Some(r.end_time)),
        flags: r.flags.iter().map(|f| f.as_str().to_string()).collect(),
        tres: r.tres.clone(),
    }
}

/// `update_time` of the reservation list: accepted, Berth answers with the current state.
#[derive(Debug, Deserialize)]
pub(super) struct ReservationQuery {
    #[serde(default)]
    #[allow(dead_code)]
    update_time: Option<String>,
}

/// `GET /slurm/v0.0.44/reservations/`: those the caller may see
/// (`GET /v1/reservations`).
pub(super) async fn reservations(
    State(state): State<AppState>,
    SlurmCaller(caller): SlurmCaller,
    uri: Uri,
    q: Result<Query<ReservationQuery>, QueryRejection>,
) -> Result<Response, SlurmError> {
    q.map_err(|e| SlurmError::bad_field("query", e.body_text()))?;
    let Json(list) = crate::reservations::reservation_list(State(state), caller.clone()).await?;
    let items: Vec<_> = list.items.iter().map(reservation_info).collect();
    Ok(answer_ok(
        &uri,
        &caller,
        json!({ "reservations": items, "last_update": now() }),
    ))
}

/// `GET /slurm/v0.0.44/reservation/{reservation_name}` (`GET /v1/reservations/{name}`).
pub(super) async fn reservation(
    State(state): State<AppState>,
    SlurmCaller(caller): SlurmCaller,
    uri: Uri,
    Path(name): Path<String>,
    q: Result<Query<ReservationQuery>, QueryRejection>,
) -> Result<Response, SlurmError> {
    q.map_err(|e| SlurmError::bad_field("query", e.body_text()))?;
    let Json(r) =
        crate::reservations::reservation_get(State(state), caller.clone(), Path(name)).await?;
    Ok(answer_ok(
        &uri,
        &caller,
        json!({ "reservations": [reservation_info(&r)], "last_update": now() }),
    ))
}

/// `GET shares` filters: comma-separated accounts and users.
#[derive(Debug, Deserialize)]
pub(super) struct SharesQuery {
    #[serde(default)]
    accounts: Option<String>,
    #[serde(default)]
    users: Option<String>,
}

/// A float as a `float64_no_val`: unset when it is not a finite number (JSON has no NaN).
fn float(v: f64) -> NoVal<f64> {
    if v.is_finite() {
        NoVal::num(v)
    } else {
        NoVal::unset()
    }
}

fn csv(s: Option<&str>) -> Option<Vec<&str>> {
    s.map(|s| {
        s.split(',')
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .collect()
    })
    .filter(|v: &Vec<&str>| !v.is_empty())
}

/// `GET /slurm/v0.0.44/shares`: each association's fairshare (sshare), from
/// `GET /v1/fairshare`: one `USER` entry per (account, user).
pub(super) async fn shares(
    State(state): State<AppState>,
    SlurmCaller(caller): SlurmCaller,
    uri: Uri,
    q: Result<Query<SharesQuery>, QueryRejection>,
) -> Result<Response, SlurmError> {
    let Query(q) = q.map_err(|e| SlurmError::bad_field("query", e.body_text()))?;
    let Json(list) = crate::fairshare::fairshare_list(State(state), caller.clone()).await?;
    let accounts = csv(q.accounts.as_deref());
    let users = csv(q.users.as_deref());
    let shares: Vec<_> = list
        .associations
        .iter()
        .filter(|row| accounts.as_ref().is_none_or(|a| a.contains(&row.account.as_str())))
        .filter(|row| users.as_ref().is_none_or(|u| u.contains(&row.user.as_str())))
        .enumerate()
        .map(|(i, row)| {
            json!({
                "id": i + 1,
                "cluster": CLUSTER,
                "name": row.user,
                "parent": row.account,
                "partition": "",
                "shares_normalized": float(row.norm_shares),
                "shares": NoVal::<i64>::unset(),
                "usage": if row.raw_usage.is_finite() { row.raw_usage.max(0.0).round() as i64 } else { 0 },
                "usage_normalized": float(row.norm_usage),
                "effective_usage": float(row.norm_usage),
                "fairshare": { "factor": float(row.fairshare),
                               "level": float(row.fairshare) },
                "type": ["USER"],
            })
        })
        .collect();
    let total = shares.len();
    Ok(answer_ok(
        &uri,
        &caller,
        json!({ "shares": { "shares": shares, "total_shares": total } }),
    ))
}
