//! `ping/`, `diag/`, `nodes/`, `node/{node_name}`, `partitions/`,
//! `partition/{partition_name}`, `reservations/`, `reservation/{reservation_name}` and
//! `shares`: what `/v1` shows of the cluster, in slurmrestd's shapes.

use super::auth::SlurmCaller;
use super::jobs::{info_query, InfoQuery};
use super::types::{ControllerPing, NoVal, NodeInfo, ReservationInfo};
use super::{answer_ok, minutes, now, time, SlurmError};
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
pub(super) fn node_state(node: &Node) -> Vec<String> {
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

/// Slurm's `Gres` and `GresUsed` of a node: `gpu:TYPE:N` per GPU model, the type as
/// sacct and Slurm's `AutoDetect=nvml` write it ([`berth_core::accounting::gres_type`]:
/// `gpu:h100:8`), and `gpu:TYPE:N(IDX:0-1,3)` for those in use (a GPU is in use when a job
/// holds it or one of its MIG instances or shards); both empty on a node without GPUs.
pub(super) fn node_gres(node: &Node) -> (String, String) {
    let mut by_type: std::collections::BTreeMap<String, (u32, Vec<u32>)> = Default::default();
    for gpu in node.gpus.iter().filter(|g| g.parent.is_none()) {
        let entry = by_type
            .entry(berth_core::accounting::gres_type(&gpu.model))
            .or_default();
        entry.0 += 1;
        let held = gpu.job_id.is_some()
            || node
                .gpus
                .iter()
                .any(|c| c.parent == Some(gpu.index) && c.job_id.is_some());
        if held {
            entry.1.push(gpu.index);
        }
    }
    let name = |t: &str| {
        if t.is_empty() {
            "gpu".to_string()
        } else {
            format!("gpu:{t}")
        }
    };
    let total: Vec<String> = by_type
        .iter()
        .map(|(t, (n, _))| format!("{}:{n}", name(t)))
        .collect();
    let used: Vec<String> = by_type
        .iter()
        .map(|(t, (_, held))| {
            let idx = if held.is_empty() {
                "N/A".to_string()
            } else {
                index_ranges(held)
            };
            format!("{}:{}(IDX:{idx})", name(t), held.len())
        })
        .collect();
    (total.join(","), used.join(","))
}

/// Sorted indices as Slurm writes them: `0-1,3`.
fn index_ranges(indices: &[u32]) -> String {
    let mut sorted = indices.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    parts.join(",")
}

/// A Berth node as slurmrestd's `node`.
pub(super) fn node_info(node: &Node) -> NodeInfo {
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
    let (gres, gres_used) = node_gres(node);
    NodeInfo {
        name: node.name.clone(),
        hostname: node.name.clone(),
        address: node.name.clone(),
        cluster_name: crate::cluster_name::get().into(),
        state: node_state(node),
        reason: node.reason.clone().unwrap_or_default(),
        reason_changed_at: time(node.reason_time),
        reason_set_by_user: node.reason_user.clone().unwrap_or_default(),
        cpus: i64::from(node.cpus),
        sockets: i64::from(node.sockets),
        cores: i64::from(node.cores_per_socket),
        threads: i64::from(node.threads_per_core),
        boards: 1,
        effective_cpus: i64::from(node.cpus_effective),
        alloc_cpus: i64::from(node.cpus_allocated),
        alloc_idle_cpus: i64::from(node.cpus_effective.saturating_sub(node.cpus_allocated)),
        specialized_cores: i64::from(node.core_spec_count),
        real_memory: int(node.memory_mib),
        alloc_memory: int(node.memory_allocated_mib),
        specialized_memory: int(node.mem_spec_limit_mib),
        features: node.features.clone(),
        active_features: node.features.clone(),
        gres,
        gres_used,
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
pub(super) fn partition_info(p: &Partition, all_nodes: &[String]) -> serde_json::Value {
    let members = if p.nodes.is_empty() {
        all_nodes.join(",")
    } else {
        p.nodes.join(",")
    };
    let mib = |v: Option<u64>| NoVal::opt(v.map(|m| i64::try_from(m).unwrap_or(i64::MAX)));
    json!({
        "name": p.name,
        "cluster": crate::cluster_name::get(),
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
pub(super) fn reservation_info(r: &Reservation) -> ReservationInfo {
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

/// The `v0.0.44_shares_resp_msg` of the association tree, as Slurm's
/// `assoc_mgr_get_shares` walks it: `root`, then each account (`ASSOCIATION` rows, in
/// name order, depth first) followed by its users' rows (`USER`) and its sub-accounts.
///
/// * `accounts`: the account tree (name, parent, raw shares); accounts of `all` missing
///   from it are children of `root` with one share, as fairshare counts them.
/// * `all`: every user association's fairshare ([`crate::fairshare::fairshare_all`]);
///   an account's `usage` (billing-seconds, decayed) and `usage_normalized` sum those of
///   the associations below it, and `total_shares` is the cluster's total usage (what
///   Slurm's `tot_shares` holds: the root's raw usage).
/// * `visible`: the user rows the caller may see (`GET /v1/fairshare`'s); an account row
///   is shown when `all_accounts` (admins and operators) or when one of `visible` is
///   below it.
/// * `accounts_filter`/`users_filter`: Slurm's `accounts`/`users` parameters: an account
///   row passes the first (by its name), a user row both (by its account and user).
///
/// An account's `shares` is its raw shares; a user's is unset (Berth divides an
/// account's shares evenly among its users). `shares_normalized` is the account's share
/// of the cluster down the tree (a user's: its part of its account's); `fairshare` is
/// the classic factor `2^(−U/S)` of each row, `level` the same.
pub(super) fn share_rows(
    accounts: &[berth_core::priority::ShareAccount],
    all: &[berth_core::priority::FairshareRow],
    visible: &[berth_core::priority::FairshareRow],
    all_accounts: bool,
    accounts_filter: Option<&[&str]>,
    users_filter: Option<&[&str]>,
) -> serde_json::Value {
    use std::collections::{BTreeMap, BTreeSet};
    let mut tree: BTreeMap<String, (Option<String>, u32)> = accounts
        .iter()
        .map(|a| (a.name.clone(), (a.parent.clone(), a.shares)))
        .collect();
    tree.entry("root".into()).or_insert((None, 1));
    for row in all {
        tree.entry(row.account.clone())
            .or_insert((Some("root".into()), 1));
    }
    let mut children: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut sibling_sum: BTreeMap<String, u64> = BTreeMap::new();
    for (name, (parent, shares)) in &tree {
        if let Some(parent) = parent {
            children
                .entry(parent.clone())
                .or_default()
                .push(name.clone());
            *sibling_sum.entry(parent.clone()).or_default() += u64::from(*shares);
        }
    }
    // The path of `account` up to the root (itself first), at most 64 levels deep.
    let path = |account: &str| -> Vec<String> {
        let mut out = vec![account.to_string()];
        let mut current = account.to_string();
        while let Some((Some(parent), _)) = tree.get(&current) {
            if out.len() >= 64 || out.contains(parent) {
                break;
            }
            out.push(parent.clone());
            current = parent.clone();
        }
        out
    };
    let norm_shares = |account: &str| -> f64 {
        let mut s = 1.0;
        for name in path(account) {
            let Some((Some(parent), shares)) = tree.get(&name) else {
                continue;
            };
            let sum = sibling_sum.get(parent).copied().unwrap_or(0);
            if sum == 0 {
                return 0.0;
            }
            s *= f64::from(*shares) / sum as f64;
        }
        s
    };
    let mut raw: BTreeMap<String, f64> = BTreeMap::new();
    let mut norm_usage: BTreeMap<String, f64> = BTreeMap::new();
    for row in all {
        for name in path(&row.account) {
            *raw.entry(name.clone()).or_default() += row.raw_usage.max(0.0);
            *norm_usage.entry(name).or_default() += row.norm_usage;
        }
    }
    let shown_accounts: BTreeSet<String> = if all_accounts {
        tree.keys().cloned().collect()
    } else {
        visible.iter().flat_map(|r| path(&r.account)).collect()
    };
    let mut users: BTreeMap<&str, Vec<&berth_core::priority::FairshareRow>> = BTreeMap::new();
    for row in visible {
        users.entry(row.account.as_str()).or_default().push(row);
    }
    let account_ok = |a: &str| accounts_filter.is_none_or(|f| f.contains(&a));
    let user_ok = |u: &str| users_filter.is_none_or(|f| f.contains(&u));
    let usage = |v: f64| {
        if v.is_finite() {
            v.max(0.0).round() as i64
        } else {
            0
        }
    };
    let mut rows: Vec<serde_json::Value> = Vec::new();
    let mut stack = vec!["root".to_string()];
    let mut seen = BTreeSet::new();
    while let Some(account) = stack.pop() {
        if !seen.insert(account.clone()) {
            continue;
        }
        if shown_accounts.contains(&account) && account_ok(&account) {
            let s = norm_shares(&account);
            let u = norm_usage.get(&account).copied().unwrap_or(0.0);
            let (parent, shares) = tree.get(&account).cloned().unwrap_or((None, 1));
            let factor = float(berth_core::priority::fairshare_factor(s, u));
            rows.push(json!({
                "id": rows.len() + 1,
                "cluster": crate::cluster_name::get(),
                "name": account,
                "parent": parent.unwrap_or_default(),
                "partition": "",
                "shares_normalized": float(s),
                "shares": NoVal::num(i64::from(shares)),
                "usage": usage(raw.get(&account).copied().unwrap_or(0.0)),
                "usage_normalized": float(u),
                "effective_usage": float(u),
                "fairshare": { "factor": factor, "level": factor },
                "type": ["ASSOCIATION"],
            }));
            let mut mine = users.get(account.as_str()).cloned().unwrap_or_default();
            mine.sort_by(|a, b| a.user.cmp(&b.user));
            for row in mine.into_iter().filter(|r| user_ok(&r.user)) {
                rows.push(json!({
                    "id": rows.len() + 1,
                    "cluster": crate::cluster_name::get(),
                    "name": row.user,
                    "parent": row.account,
                    "partition": "",
                    "shares_normalized": float(row.norm_shares),
                    "shares": NoVal::<i64>::unset(),
                    "usage": usage(row.raw_usage),
                    "usage_normalized": float(row.norm_usage),
                    "effective_usage": float(row.norm_usage),
                    "fairshare": { "factor": float(row.fairshare),
                                   "level": float(row.fairshare) },
                    "type": ["USER"],
                }));
            }
        }
        // Children in name order: pushed in reverse so that the first pops first.
        if let Some(kids) = children.get(&account) {
            stack.extend(kids.iter().rev().cloned());
        }
    }
    let total = usage(all.iter().map(|r| r.raw_usage.max(0.0)).sum());
    json!({ "shares": rows, "total_shares": total })
}

/// `GET /slurm/v0.0.44/shares`: the association tree's fairshare (sshare), see
/// [`share_rows`]: the user rows `GET /v1/fairshare` shows the caller, and the account
/// rows above them (every account for admins and operators).
pub(super) async fn shares(
    State(state): State<AppState>,
    SlurmCaller(caller): SlurmCaller,
    uri: Uri,
    q: Result<Query<SharesQuery>, QueryRejection>,
) -> Result<Response, SlurmError> {
    let Query(q) = q.map_err(|e| SlurmError::bad_field("query", e.body_text()))?;
    let Json(visible) =
        crate::fairshare::fairshare_list(State(state.clone()), caller.clone()).await?;
    let (accounts, all) = crate::fairshare::fairshare_all(&state).await?;
    let accounts_filter = csv(q.accounts.as_deref());
    let users_filter = csv(q.users.as_deref());
    let shares = share_rows(
        &accounts,
        &all,
        &visible.associations,
        caller.sees_all_jobs(),
        accounts_filter.as_deref(),
        users_filter.as_deref(),
    );
    Ok(answer_ok(&uri, &caller, json!({ "shares": shares })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_core::priority::{FairshareRow, ShareAccount};

    fn row(account: &str, user: &str, raw: f64, norm_usage: f64) -> FairshareRow {
        FairshareRow {
            account: account.into(),
            user: user.into(),
            norm_shares: 0.25,
            raw_usage: raw,
            norm_usage,
            fairshare: 0.5,
        }
    }

    fn account(name: &str, parent: &str, shares: u32) -> ShareAccount {
        ShareAccount {
            name: name.into(),
            parent: Some(parent.into()),
            shares,
        }
    }

    /// (type, name, parent) of each row.
    fn rows(v: &serde_json::Value) -> Vec<(String, String, String)> {
        v["shares"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["type"][0].as_str().unwrap().to_string(),
                    r["name"].as_str().unwrap().to_string(),
                    r["parent"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn shares_walk_the_association_tree_with_account_rows() {
        let tree = vec![
            account("physics", "root", 3),
            account("chem", "root", 1),
            account("hep", "physics", 1),
        ];
        let all = vec![
            row("hep", "bob", 300.0, 0.3),
            row("physics", "amy", 600.0, 0.6),
            row("chem", "carl", 100.0, 0.1),
        ];
        let v = share_rows(&tree, &all, &all, true, None, None);
        let t = |k: &str, n: &str, p: &str| (k.to_string(), n.to_string(), p.to_string());
        assert_eq!(
            rows(&v),
            vec![
                t("ASSOCIATION", "root", ""),
                t("ASSOCIATION", "chem", "root"),
                t("USER", "carl", "chem"),
                t("ASSOCIATION", "physics", "root"),
                t("USER", "amy", "physics"),
                t("ASSOCIATION", "hep", "physics"),
                t("USER", "bob", "hep"),
            ]
        );
        let physics = &v["shares"][3];
        // Usage sums down the tree; shares are the account's of its siblings'.
        assert_eq!(physics["usage"], 900);
        assert!((physics["usage_normalized"]["number"].as_f64().unwrap() - 0.9).abs() < 1e-9);
        assert_eq!(physics["shares"]["number"], 3);
        assert_eq!(physics["shares_normalized"]["number"], 0.75);
        assert_eq!(v["shares"][5]["shares_normalized"]["number"], 0.75);
        assert_eq!(v["shares"][0]["usage"], 1000);
        assert_eq!(v["total_shares"], 1000);
        assert_eq!(v["shares"][6]["shares"]["set"], false);
        let ids: Vec<i64> = v["shares"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_i64().unwrap())
            .collect();
        assert_eq!(ids, [1, 2, 3, 4, 5, 6, 7]);

        // A user sees their own row and the accounts above it; the filters apply.
        let bob = vec![all[0].clone()];
        let v = share_rows(&tree, &all, &bob, false, None, None);
        assert_eq!(
            rows(&v),
            vec![
                t("ASSOCIATION", "root", ""),
                t("ASSOCIATION", "physics", "root"),
                t("ASSOCIATION", "hep", "physics"),
                t("USER", "bob", "hep"),
            ]
        );
        let v = share_rows(&tree, &all, &all, true, Some(&["chem"]), None);
        assert_eq!(
            rows(&v),
            vec![t("ASSOCIATION", "chem", "root"), t("USER", "carl", "chem")]
        );
        let v = share_rows(&tree, &all, &all, true, None, Some(&["amy"]));
        assert_eq!(
            rows(&v).iter().filter(|r| r.0 == "USER").count(),
            1,
            "{v:#}"
        );
    }

    #[test]
    fn gpu_indices_compress_as_slurm_writes_them() {
        assert_eq!(index_ranges(&[3, 0, 1]), "0-1,3");
        assert_eq!(index_ranges(&[7]), "7");
        assert_eq!(index_ranges(&[0, 1, 2, 3]), "0-3");
    }
}
