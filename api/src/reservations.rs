//! Advance reservations (`/v1/reservations`), Slurm's `scontrol create|update|delete
//! reservation` and `scontrol show reservation`.
//!
//! A reservation holds whole nodes (`nodes`, `node_cnt`) or some GPUs of some nodes
//! (`gpus`) from its start to its end (every day or week with `DAILY`/`WEEKLY`) for the
//! jobs that name it (`--reservation`) and whose user or account it allows. What it holds
//! is chosen here, once, and stored concretely; the scheduler plans around it.
//!
//! Rules (Slurm's, where Slurm has one):
//! * Admins and operators create, update and delete; everyone lists and shows the
//!   reservations they may use (their user name or one of their accounts is allowed);
//!   admins and operators see all.
//! * A reservation over resources that running jobs would still hold inside its window is
//!   refused (409 `nodes_busy`, Slurm's "Requested nodes are busy") unless `IGNORE_JOBS`.
//!   `MAINT` does not imply it (Slurm's maintenance example says `Flags=MAINT,IGNORE_JOBS`).
//! * A reservation over resources another one holds at an overlapping time is refused
//!   (409 `reservation_overlap`) unless it is `MAINT`.
//! * Deleting one that running jobs use is refused (409 `reservation_in_use`), as Slurm
//!   does; its pending jobs stay pending (reason `ReservationDeleted`).
//! * A one-off reservation is gone once it ends (Slurm purges it): it is no longer shown,
//!   planned around or accepted at submission, and its row is deleted at the next
//!   reservation write. Recurring ones stay.

use crate::auth::Caller;
use crate::error::{rejection, ApiError};
use crate::AppState;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use berth_core::reservation::{period, windows, windows_overlap, ReservationFlag};
use berth_core::wire::{
    Problem, Reservation, ReservationCreate, ReservationList, ReservationNode, ReservationUpdate,
};
use berth_db::node::{GpuRow, NodeRow};
use berth_db::reservation::{
    self, LiveAllocationRow, ReservationDelete, ReservationRow, ReservedNodeRow,
};
use berth_db::{account, membership, node, notify, partition, DbError};
use chrono::{DateTime, Utc};
use std::collections::{BTreeSet, HashMap};

fn bad(field: &str, detail: impl Into<String>) -> ApiError {
    ApiError::Unprocessable {
        detail: detail.into(),
        field: Some(field.to_string()),
    }
}

fn epoch(t: DateTime<Utc>) -> i64 {
    t.timestamp()
}

fn flags_of(row: &ReservationRow) -> Vec<ReservationFlag> {
    row.flags
        .iter()
        .filter_map(|f| ReservationFlag::parse(f))
        .collect()
}

/// The window of `row` shown at `now`: the current or next one (a one-off: its only one),
/// or `None` for a one-off that has ended.
fn shown_window(row: &ReservationRow, now: DateTime<Utc>) -> Option<(i64, i64)> {
    windows(
        epoch(row.start_time),
        epoch(row.end_time),
        period(&flags_of(row)),
        epoch(now),
        1,
    )
    .into_iter()
    .next()
}

/// Whether jobs of `user` charged to one of `accounts` may use `row`.
fn allows(row: &ReservationRow, user: &str, accounts: &[String]) -> bool {
    row.users.iter().any(|u| u == user) || row.accounts.iter().any(|a| accounts.contains(a))
}

fn gpu_counted(g: &GpuRow) -> bool {
    g.kind != "shard"
}

/// The view of a reservation whose window at `now` is `window`.
fn view(
    row: &ReservationRow,
    window: (i64, i64),
    nodes: &[NodeRow],
    gpus: &[GpuRow],
    now: DateTime<Utc>,
) -> Reservation {
    let cpus_of: HashMap<i64, u32> = nodes.iter().map(|n| (n.id, n.cpus.max(0) as u32)).collect();
    let mut gpu_count: HashMap<i64, u32> = HashMap::new();
    for g in gpus.iter().filter(|g| gpu_counted(g)) {
        *gpu_count.entry(g.node_id).or_default() += 1;
    }
    let (mut cpus, mut held_gpus, mut whole) = (0u32, 0u32, false);
    for n in &row.nodes {
        match &n.gpus {
            None => {
                whole = true;
                cpus += cpus_of.get(&n.node_id).copied().unwrap_or(0);
                held_gpus += gpu_count.get(&n.node_id).copied().unwrap_or(0);
            }
            Some(g) => held_gpus += g.len() as u32,
        }
    }
    let mut tres = Vec::new();
    if whole {
        tres.push(format!("cpu={cpus}"));
    }
    if held_gpus > 0 {
        tres.push(format!("gres/gpu={held_gpus}"));
    }
    let names: Vec<String> = row.nodes.iter().map(|n| n.node.clone()).collect();
    let now = epoch(now);
    let at = |s: i64| DateTime::<Utc>::from_timestamp(s, 0).unwrap_or_default();
    Reservation {
        name: row.name.clone(),
        start_time: at(window.0),
        end_time: at(window.1),
        duration: (window.1 - window.0).max(0) as u64,
        nodes: row
            .nodes
            .iter()
            .map(|n| ReservationNode {
                name: n.node.clone(),
                gpus: n
                    .gpus
                    .as_ref()
                    .map(|g| g.iter().map(|i| (*i).max(0) as u32).collect()),
            })
            .collect(),
        node_list: berth_core::hostlist::compress(&names),
        node_cnt: row.nodes.len() as u32,
        cpus,
        gpus: held_gpus,
        tres: tres.join(","),
        partition: row.partition.clone(),
        users: row.users.clone(),
        accounts: row.accounts.clone(),
        flags: flags_of(row),
        state: if window.0 <= now && now < window.1 {
            "ACTIVE"
        } else {
            "INACTIVE"
        }
        .to_string(),
        created_by: row.created_by.clone(),
    }
}

/// The accounts `caller` may use (none needed for admins and operators, who see all).
async fn caller_accounts(state: &AppState, caller: &Caller) -> Result<Vec<String>, ApiError> {
    Ok(membership::membership_list(&state.pool, Some(&caller.name))
        .await?
        .into_iter()
        .map(|m| m.account)
        .collect())
}

/// List the advance reservations the caller may use (all for admins and operators).
#[utoipa::path(get, path = "/v1/reservations", tag = "reservations", operation_id = "reservation_list",
    responses((status = 200, description = "Reservations not ended, by start", body = ReservationList),
              (status = 401, description = "No or bad credentials", body = Problem)),
    security(("bearer" = [])))]
pub async fn reservation_list(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<ReservationList>, ApiError> {
    caller.require_person()?;
    caller.require_unscoped()?;
    let now = Utc::now();
    let rows = reservation::reservation_list(&state.pool).await?;
    let accounts = if caller.sees_all_jobs() {
        Vec::new()
    } else {
        caller_accounts(&state, &caller).await?
    };
    let nodes = node::node_list(&state.pool).await?;
    let gpus = node::gpu_list(&state.pool, None).await?;
    let mut items: Vec<Reservation> = rows
        .iter()
        .filter(|r| caller.sees_all_jobs() || allows(r, &caller.name, &accounts))
        .filter_map(|r| shown_window(r, now).map(|w| view(r, w, &nodes, &gpus, now)))
        .collect();
    items.sort_by(|a, b| (a.start_time, &a.name).cmp(&(b.start_time, &b.name)));
    Ok(Json(ReservationList { items }))
}

async fn visible(state: &AppState, caller: &Caller, name: &str) -> Result<Reservation, ApiError> {
    let missing = || ApiError::NotFound(format!("no reservation {name}"));
    let row = reservation::reservation_get(&state.pool, name)
        .await?
        .ok_or_else(missing)?;
    if !caller.sees_all_jobs()
        && !allows(&row, &caller.name, &caller_accounts(state, caller).await?)
    {
        return Err(missing());
    }
    let now = Utc::now();
    let window = shown_window(&row, now).ok_or_else(missing)?;
    let nodes = node::node_list(&state.pool).await?;
    let gpus = node::gpu_list(&state.pool, None).await?;
    Ok(view(&row, window, &nodes, &gpus, now))
}

/// Show one advance reservation.
#[utoipa::path(get, path = "/v1/reservations/{name}", tag = "reservations", operation_id = "reservation_get",
    params(("name" = String, Path, description = "Reservation name")),
    responses((status = 200, description = "The reservation", body = Reservation),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 404, description = "No such reservation, ended, or not one the caller may use", body = Problem)),
    security(("bearer" = [])))]
pub async fn reservation_get(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Json<Reservation>, ApiError> {
    caller.require_person()?;
    caller.require_unscoped()?;
    Ok(Json(visible(&state, &caller, &name).await?))
}

/// A time in a reservation request: RFC 3339, or what `--begin` takes (`now`,
/// `now+1hour`, `YYYY-MM-DDTHH:MM[:SS]` in UTC).
fn parse_time(v: &str, field: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, ApiError> {
    if let Ok(t) = DateTime::parse_from_rfc3339(v.trim()) {
        return Ok(t.with_timezone(&Utc));
    }
    berth_core::begin::parse_begin(v, now).map_err(|e| bad(field, e.replace("begin time", "time")))
}

fn parse_duration(v: &str) -> Result<i64, ApiError> {
    match berth_core::duration::parse_duration(v) {
        Ok(Some(s)) if s > 0 => Ok(s as i64),
        Ok(Some(_)) => Err(bad("duration", "must be at least 1 second")),
        Ok(None) => Err(bad(
            "duration",
            "a reservation needs an end: give a finite duration",
        )),
        Err(e) => Err(bad("duration", e.to_string())),
    }
}

/// What a definition asks to hold.
enum Held {
    /// `Nodes=`: a host list or `ALL`.
    Nodes(String),
    /// `NodeCnt=`.
    NodeCnt(u32),
    /// `TRES=gres/gpu:N`.
    Gpus(u32),
    /// Unchanged (an update that names none of them).
    Keep(Vec<ReservedNodeRow>),
}

fn held(
    nodes: Option<String>,
    node_cnt: Option<u32>,
    gpus: Option<u32>,
) -> Result<Option<Held>, ApiError> {
    let given = [nodes.is_some(), node_cnt.is_some(), gpus.is_some()]
        .iter()
        .filter(|g| **g)
        .count();
    if given > 1 {
        return Err(bad("nodes", "give one of nodes, node_cnt or gpus"));
    }
    Ok(match (nodes, node_cnt, gpus) {
        (Some(n), _, _) if n.trim().is_empty() => return Err(bad("nodes", "an empty node list")),
        (Some(n), _, _) => Some(Held::Nodes(n.trim().to_string())),
        (_, Some(0), _) => return Err(bad("node_cnt", "must be at least 1")),
        (_, Some(c), _) => Some(Held::NodeCnt(c)),
        (_, _, Some(0)) => return Err(bad("gpus", "must be at least 1")),
        (_, _, Some(g)) => Some(Held::Gpus(g)),
        _ => None,
    })
}

/// A reservation to store, before what it holds is resolved.
struct Definition {
    name: String,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    held: Held,
    partition: Option<String>,
    users: Vec<String>,
    accounts: Vec<String>,
    flags: Vec<ReservationFlag>,
}

/// Checks the parts of a definition that need no lock: the window, flags, users,
/// accounts and partition.
async fn check_definition(
    state: &AppState,
    def: &mut Definition,
    now: DateTime<Utc>,
) -> Result<(), ApiError> {
    let name = &def.name;
    let name_ok = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
    if !name_ok {
        return Err(bad(
            "name",
            "a reservation name is 1-64 letters, digits, `_`, `.` or `-`, not starting with `-`",
        ));
    }
    def.flags.sort();
    def.flags.dedup();
    if def.flags.contains(&ReservationFlag::Daily) && def.flags.contains(&ReservationFlag::Weekly) {
        return Err(bad("flags", "DAILY and WEEKLY exclude each other"));
    }
    if def.end <= def.start {
        return Err(bad("end_time", "the end must be after the start"));
    }
    if let Some(p) = period(&def.flags) {
        if epoch(def.end) - epoch(def.start) > p {
            return Err(bad(
                "duration",
                "a DAILY or WEEKLY reservation lasts at most its period",
            ));
        }
    } else if def.end <= now {
        return Err(bad("end_time", "the reservation would already have ended"));
    }
    if (epoch(def.end) - epoch(now)).abs() > berth_core::begin::MAX_AHEAD_SECONDS {
        return Err(bad("end_time", "more than 100 years away"));
    }
    if def.users.is_empty() && def.accounts.is_empty() {
        return Err(bad("users", "name the users or accounts that may use it"));
    }
    def.users.sort();
    def.users.dedup();
    def.accounts.sort();
    def.accounts.dedup();
    // Users are token subjects, not necessarily registered (as a job's user): their
    // names are checked, not their existence.
    for u in &def.users {
        let ok = !u.is_empty()
            && u.len() <= 100
            && u.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.@-".contains(c));
        if !ok {
            return Err(bad("users", format!("{u:?} is not a user name")));
        }
    }
    for a in &def.accounts {
        if account::account_get(&state.pool, a).await?.is_none() {
            return Err(bad("accounts", format!("no account {a}")));
        }
    }
    if let Some(p) = &def.partition {
        if partition::partition_get(&state.pool, Some(p))
            .await?
            .is_none()
        {
            return Err(bad("partition", format!("no partition {p}")));
        }
    }
    Ok(())
}

/// The resources other reservations and running jobs hold, as one definition's checks
/// see them.
struct Holders<'a> {
    def: &'a Definition,
    others: Vec<ReservationRow>,
    allocations: Vec<LiveAllocationRow>,
    now: DateTime<Utc>,
}

impl Holders<'_> {
    fn window(&self) -> (i64, i64, Option<i64>) {
        (
            epoch(self.def.start),
            epoch(self.def.end),
            period(&self.def.flags),
        )
    }

    /// Another reservation that holds any of `gpus` (`None`: the whole node) of node
    /// `node_id` at a time this one does (none counts for a `MAINT` one).
    fn reserved_by(&self, node_id: i64, gpus: Option<&[i32]>) -> Option<&str> {
        if self.def.flags.contains(&ReservationFlag::Maint) {
            return None;
        }
        self.others
            .iter()
            .find(|r| {
                let theirs = (epoch(r.start_time), epoch(r.end_time), period(&flags_of(r)));
                r.nodes.iter().any(|n| {
                    n.node_id == node_id
                        && match (&n.gpus, gpus) {
                            (Some(a), Some(b)) => a.iter().any(|g| b.contains(g)),
                            _ => true,
                        }
                }) && windows_overlap(self.window(), theirs, epoch(self.now))
            })
            .map(|r| r.name.as_str())
    }

    /// A running job that would still hold any of `gpus` (`None`: anything) of node
    /// `node_id` when this reservation starts (none counts with `IGNORE_JOBS`).
    fn busy_with(&self, node_id: i64, gpus: Option<&[i32]>) -> Option<i64> {
        if self.def.flags.contains(&ReservationFlag::IgnoreJobs) {
            return None;
        }
        self.allocations
            .iter()
            .find(|a| {
                a.node_id == node_id
                    && a.end.is_none_or(|e| e > self.def.start)
                    && match gpus {
                        None => true,
                        Some(g) => a.exclusive || a.gpus.iter().any(|i| g.contains(i)),
                    }
            })
            .map(|a| a.job_id)
    }
}

/// Resolves what `def` holds into concrete nodes (and GPUs), checked against running jobs
/// and other reservations.
fn resolve(
    h: &Holders<'_>,
    nodes: &[NodeRow],
    gpus: &[GpuRow],
    partition_nodes: &[String],
) -> Result<Vec<ReservedNodeRow>, ApiError> {
    let in_partition =
        |n: &NodeRow| partition_nodes.is_empty() || partition_nodes.contains(&n.name);
    let by_name: HashMap<&str, &NodeRow> = nodes.iter().map(|n| (n.name.as_str(), n)).collect();
    let busy_now: BTreeSet<i64> = h.allocations.iter().map(|a| a.node_id).collect();
    let explicit: Vec<ReservedNodeRow> = match &h.def.held {
        Held::Keep(kept) => kept.clone(),
        Held::Nodes(list) if list.eq_ignore_ascii_case("all") => nodes
            .iter()
            .filter(|n| in_partition(n))
            .map(|n| ReservedNodeRow {
                node_id: n.id,
                node: n.name.clone(),
                gpus: None,
            })
            .collect(),
        Held::Nodes(list) => {
            let names = berth_core::hostlist::expand(list)
                .map_err(|e| bad("nodes", format!("bad host list {list:?}: {e}")))?;
            let mut out = Vec::new();
            for name in names {
                let n = by_name
                    .get(name.as_str())
                    .ok_or_else(|| bad("nodes", format!("no node {name}")))?;
                if !out.iter().any(|o: &ReservedNodeRow| o.node_id == n.id) {
                    out.push(ReservedNodeRow {
                        node_id: n.id,
                        node: n.name.clone(),
                        gpus: None,
                    });
                }
            }
            out
        }
        Held::NodeCnt(count) => {
            let candidates: Vec<&NodeRow> = nodes.iter().filter(|n| in_partition(n)).collect();
            if candidates.len() < *count as usize {
                return Err(bad(
                    "node_cnt",
                    format!("{count} nodes asked, {} exist here", candidates.len()),
                ));
            }
            let mut free: Vec<&NodeRow> = candidates
                .into_iter()
                .filter(|n| n.state == "UP")
                .filter(|n| {
                    h.reserved_by(n.id, None).is_none() && h.busy_with(n.id, None).is_none()
                })
                .collect();
            // Idle nodes first, then by name.
            free.sort_by_key(|n| (busy_now.contains(&n.id), n.name.clone()));
            if free.len() < *count as usize {
                return Err(ApiError::Conflict {
                    code: "nodes_busy",
                    detail: format!(
                        "Requested nodes are busy: {count} nodes asked, {} free for the whole window",
                        free.len()
                    ),
                });
            }
            return Ok(free
                .into_iter()
                .take(*count as usize)
                .map(|n| ReservedNodeRow {
                    node_id: n.id,
                    node: n.name.clone(),
                    gpus: None,
                })
                .collect());
        }
        Held::Gpus(count) => return pick_gpus(h, nodes, gpus, &in_partition, *count, &busy_now),
    };
    for n in &explicit {
        if let Some(other) = h.reserved_by(n.node_id, n.gpus.as_deref()) {
            return Err(ApiError::Conflict {
                code: "reservation_overlap",
                detail: format!(
                    "{} is held by reservation {other} at an overlapping time (only MAINT reservations may overlap)",
                    n.node
                ),
            });
        }
        if let Some(job) = h.busy_with(n.node_id, n.gpus.as_deref()) {
            return Err(ApiError::Conflict {
                code: "nodes_busy",
                detail: format!(
                    "Requested nodes are busy: job {job} on {} would still run when the reservation starts (add IGNORE_JOBS to reserve anyway)",
                    n.node
                ),
            });
        }
    }
    Ok(explicit)
}

/// Picks `count` GPUs: on the node whose free GPUs fit them most tightly, else on as few
/// nodes as possible (most free first); idle nodes before busy ones, then by name.
fn pick_gpus(
    h: &Holders<'_>,
    nodes: &[NodeRow],
    gpus: &[GpuRow],
    in_partition: &dyn Fn(&NodeRow) -> bool,
    count: u32,
    busy_now: &BTreeSet<i64>,
) -> Result<Vec<ReservedNodeRow>, ApiError> {
    let mut total = 0usize;
    let mut free: Vec<(&NodeRow, Vec<i32>)> = Vec::new();
    for n in nodes.iter().filter(|n| in_partition(n)) {
        let mine: Vec<i32> = gpus
            .iter()
            .filter(|g| g.node_id == n.id && gpu_counted(g))
            .map(|g| g.index)
            .collect();
        total += mine.len();
        if n.state != "UP" {
            continue;
        }
        let usable: Vec<i32> = mine
            .into_iter()
            .filter(|g| {
                h.reserved_by(n.id, Some(&[*g])).is_none()
                    && h.busy_with(n.id, Some(&[*g])).is_none()
            })
            .collect();
        if !usable.is_empty() {
            free.push((n, usable));
        }
    }
    let count = count as usize;
    if total < count {
        return Err(bad(
            "gpus",
            format!("{count} GPUs asked, {total} exist here"),
        ));
    }
    let rank = |n: &NodeRow| (busy_now.contains(&n.id), n.name.clone());
    let single = free
        .iter()
        .filter(|(_, g)| g.len() >= count)
        .min_by_key(|(n, g)| (g.len(), rank(n)));
    let chosen: Vec<(&NodeRow, Vec<i32>)> = match single {
        Some((n, g)) => vec![(*n, g[..count].to_vec())],
        None => {
            free.sort_by_key(|(n, g)| (std::cmp::Reverse(g.len()), rank(n)));
            let mut left = count;
            let mut out = Vec::new();
            for (n, g) in free {
                if left == 0 {
                    break;
                }
                let take = left.min(g.len());
                out.push((n, g[..take].to_vec()));
                left -= take;
            }
            if left > 0 {
                return Err(ApiError::Conflict {
                    code: "nodes_busy",
                    detail: format!(
                        "Requested nodes are busy: {count} GPUs asked, {} free for the whole window",
                        count - left
                    ),
                });
            }
            out
        }
    };
    let mut rows: Vec<ReservedNodeRow> = chosen
        .into_iter()
        .map(|(n, g)| ReservedNodeRow {
            node_id: n.id,
            node: n.name.clone(),
            gpus: Some(g),
        })
        .collect();
    rows.sort_by(|a, b| a.node.cmp(&b.node));
    Ok(rows)
}

/// Resolves and stores `def` (a new reservation with `create`, else an update of the one
/// named), in one transaction under the reservation lock.
async fn store(
    state: &AppState,
    caller: &Caller,
    def: Definition,
    now: DateTime<Utc>,
    create: bool,
) -> Result<(), ApiError> {
    let partition_nodes = match &def.partition {
        Some(p) => partition::partition_get(&state.pool, Some(p))
            .await?
            .map(|p| p.nodes)
            .unwrap_or_default(),
        None => Vec::new(),
    };
    let mut tx = berth_db::begin(&state.pool).await?;
    reservation::reservation_lock_in_tx(&mut tx).await?;
    reservation::reservation_purge_ended_in_tx(&mut tx, now).await?;
    let existing = reservation::reservation_get(&mut *tx, &def.name).await?;
    match (create, &existing) {
        (true, Some(_)) => {
            return Err(ApiError::Conflict {
                code: "reservation_exists",
                detail: format!("reservation {} already exists", def.name),
            })
        }
        (false, None) => return Err(ApiError::NotFound(format!("no reservation {}", def.name))),
        _ => {}
    }
    let others: Vec<ReservationRow> = reservation::reservation_list(&mut *tx)
        .await?
        .into_iter()
        .filter(|r| r.name != def.name)
        .collect();
    let allocations = reservation::reservation_live_allocations(&mut *tx).await?;
    let nodes = node::node_list(&mut *tx).await?;
    let gpus = node::gpu_list(&mut *tx, None).await?;
    let holders = Holders {
        def: &def,
        others,
        allocations,
        now,
    };
    let held = resolve(&holders, &nodes, &gpus, &partition_nodes)?;
    if held.is_empty() {
        return Err(bad("nodes", "the reservation holds no node"));
    }
    let row = ReservationRow {
        name: def.name.clone(),
        start_time: def.start,
        end_time: def.end,
        users: def.users.clone(),
        accounts: def.accounts.clone(),
        flags: def.flags.iter().map(|f| f.as_str().to_string()).collect(),
        partition: def.partition.clone(),
        created_by: caller.name.clone(),
        nodes: held,
    };
    if create {
        reservation::reservation_insert_in_tx(&mut tx, &row)
            .await
            .map_err(|e| match e {
                DbError::Conflict { .. } => ApiError::Conflict {
                    code: "reservation_exists",
                    detail: format!("reservation {} already exists", def.name),
                },
                e => e.into(),
            })?;
    } else {
        reservation::reservation_update_in_tx(&mut tx, &row).await?;
    }
    notify::notify(&mut *tx, notify::JOBS_CHANNEL, "reservation").await?;
    tx.commit().await.map_err(DbError::from)?;
    tracing::info!(reservation = %def.name, create, by = %caller.name, "reservation stored");
    Ok(())
}

/// Create an advance reservation (admin or operator).
///
/// Slurm's `scontrol create reservation`: what it holds is picked now and stored. Refused
/// with 409 where running jobs would still hold those resources in its window (without
/// `IGNORE_JOBS`) or another reservation holds them at an overlapping time (without
/// `MAINT`).
#[utoipa::path(post, path = "/v1/reservations", tag = "reservations", operation_id = "reservation_create",
    request_body = ReservationCreate,
    responses((status = 201, description = "Created", body = Reservation),
              (status = 400, description = "A body that does not parse", body = Problem),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "Not an admin or operator", body = Problem),
              (status = 409, description = "The name is taken, the nodes are busy, or another reservation holds them", body = Problem),
              (status = 422, description = "A bad definition (the field is named)", body = Problem)),
    security(("bearer" = [])))]
pub async fn reservation_create(
    State(state): State<AppState>,
    caller: Caller,
    body: Result<Json<ReservationCreate>, JsonRejection>,
) -> Result<(StatusCode, Json<Reservation>), ApiError> {
    caller.require_person()?;
    caller.require_unscoped()?;
    caller.require_staff()?;
    let Json(req) = body.map_err(|e| rejection("JSON body", e.body_text()))?;
    let now = Utc::now();
    let start = match &req.start_time {
        Some(s) => parse_time(s, "start_time", now)?,
        None => now,
    };
    let end = match (&req.end_time, &req.duration) {
        (Some(_), Some(_)) => return Err(bad("duration", "give end_time or duration, not both")),
        (Some(e), None) => parse_time(e, "end_time", now)?,
        (None, Some(d)) => start + chrono::Duration::seconds(parse_duration(d)?),
        (None, None) => {
            return Err(bad(
                "duration",
                "a reservation needs an end_time or a duration",
            ))
        }
    };
    let held = held(req.nodes, req.node_cnt, req.gpus)?
        .ok_or_else(|| bad("nodes", "give nodes, node_cnt or gpus"))?;
    let mut def = Definition {
        name: req.name,
        start,
        end,
        held,
        partition: req.partition,
        users: req.users,
        accounts: req.accounts,
        flags: req.flags,
    };
    check_definition(&state, &mut def, now).await?;
    let name = def.name.clone();
    store(&state, &caller, def, now, true).await?;
    Ok((
        StatusCode::CREATED,
        Json(visible(&state, &caller, &name).await?),
    ))
}

/// Change an advance reservation (admin or operator).
///
/// Slurm's `scontrol update ReservationName=…`: the fields given replace the stored ones;
/// the result is checked as a new reservation would be (its own hold does not count).
#[utoipa::path(patch, path = "/v1/reservations/{name}", tag = "reservations", operation_id = "reservation_update",
    params(("name" = String, Path, description = "Reservation name")),
    request_body = ReservationUpdate,
    responses((status = 200, description = "Changed", body = Reservation),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "Not an admin or operator", body = Problem),
              (status = 404, description = "No such reservation", body = Problem),
              (status = 409, description = "The nodes are busy, or another reservation holds them", body = Problem),
              (status = 422, description = "A bad definition (the field is named)", body = Problem)),
    security(("bearer" = [])))]
pub async fn reservation_update(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    body: Result<Json<ReservationUpdate>, JsonRejection>,
) -> Result<Json<Reservation>, ApiError> {
    caller.require_person()?;
    caller.require_unscoped()?;
    caller.require_staff()?;
    let Json(req) = body.map_err(|e| rejection("JSON body", e.body_text()))?;
    let now = Utc::now();
    let old = reservation::reservation_get(&state.pool, &name)
        .await?
        .filter(|r| shown_window(r, now).is_some())
        .ok_or_else(|| ApiError::NotFound(format!("no reservation {name}")))?;
    let start = match &req.start_time {
        Some(s) => parse_time(s, "start_time", now)?,
        None => old.start_time,
    };
    let end = match (&req.end_time, &req.duration) {
        (Some(_), Some(_)) => return Err(bad("duration", "give end_time or duration, not both")),
        (Some(e), None) => parse_time(e, "end_time", now)?,
        (None, Some(d)) => start + chrono::Duration::seconds(parse_duration(d)?),
        (None, None) => start + (old.end_time - old.start_time),
    };
    let held = held(req.nodes, req.node_cnt, req.gpus)?.unwrap_or(Held::Keep(old.nodes.clone()));
    let mut def = Definition {
        name: name.clone(),
        start,
        end,
        held,
        partition: req.partition.or(old.partition.clone()),
        users: req.users.unwrap_or(old.users.clone()),
        accounts: req.accounts.unwrap_or(old.accounts.clone()),
        flags: req.flags.unwrap_or_else(|| flags_of(&old)),
    };
    check_definition(&state, &mut def, now).await?;
    store(&state, &caller, def, now, false).await?;
    Ok(Json(visible(&state, &caller, &name).await?))
}

/// Delete an advance reservation (admin or operator).
///
/// Refused (409) while jobs that name it run, as Slurm does; its pending jobs stay pending
/// with reason `ReservationDeleted` until they are cancelled or changed.
#[utoipa::path(delete, path = "/v1/reservations/{name}", tag = "reservations", operation_id = "reservation_delete",
    params(("name" = String, Path, description = "Reservation name")),
    responses((status = 204, description = "Deleted"),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "Not an admin or operator", body = Problem),
              (status = 404, description = "No such reservation", body = Problem),
              (status = 409, description = "Jobs that use it are running", body = Problem)),
    security(("bearer" = [])))]
pub async fn reservation_delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    caller.require_person()?;
    caller.require_unscoped()?;
    caller.require_staff()?;
    let mut tx = berth_db::begin(&state.pool).await?;
    reservation::reservation_lock_in_tx(&mut tx).await?;
    reservation::reservation_purge_ended_in_tx(&mut tx, Utc::now()).await?;
    match reservation::reservation_delete_in_tx(&mut tx, &name).await? {
        ReservationDelete::Deleted => {}
        ReservationDelete::Missing => {
            return Err(ApiError::NotFound(format!("no reservation {name}")))
        }
        ReservationDelete::RunningJobs(n) => {
            return Err(ApiError::Conflict {
                code: "reservation_in_use",
                detail: format!("{n} running jobs use reservation {name}"),
            })
        }
    }
    notify::notify(&mut *tx, notify::JOBS_CHANNEL, "reservation").await?;
    tx.commit().await.map_err(DbError::from)?;
    tracing::info!(reservation = %name, by = %caller.name, "reservation deleted");
    Ok(StatusCode::NO_CONTENT)
}

/// Checks a submission's `--reservation`: it exists, has not ended, and allows the user
/// or the account the job is charged to (`account`; `root` when none).
///
/// # Errors
/// 422 naming `--reservation` otherwise (Slurm: "Invalid reservation name" / "Access
/// denied to requested reservation").
pub async fn check_submission(
    pool: &berth_db::Pool,
    name: &str,
    user: &str,
    account: Option<&str>,
) -> Result<(), ApiError> {
    let field = "--reservation";
    let row = reservation::reservation_get(pool, name)
        .await?
        .filter(|r| shown_window(r, Utc::now()).is_some())
        .ok_or_else(|| bad(field, format!("no reservation named {name:?}")))?;
    let account = account.unwrap_or("root");
    if !allows(&row, user, &[account.to_string()]) {
        return Err(bad(
            field,
            format!("reservation {name} allows neither user {user} nor account {account}"),
        ));
    }
    Ok(())
}
