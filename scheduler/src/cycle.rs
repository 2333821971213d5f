//! One scheduling cycle: snapshot → plan → one locking commit.
//!
//! The snapshot is built from the database each cycle: nodes and GPUs, live allocations
//! (with their start + time limit, for reservations), and pending jobs with what the
//! planner needs to decide eligibility: `--begin`, dependencies (evaluated here by
//! [`crate::dependency`] against the jobs they name), and for an array master the task
//! indices that may start now within its `%LIMIT`.

use crate::dependency::{self, Dependency, Target};
use crate::planner::{
    self, AccountLimits, ArrayTasks, DependencyState, NodeView, PendingJob, Plan, PlannerConfig,
    PreemptMode, QosLimits, QosPreemption, RunningAlloc, RunningJob, Snapshot, TresLimits,
};
use crate::{fairshare, LEASE_ROLE};
use berth_core::array::IndexSet;
use berth_core::qos::PriorityRecord;
use berth_db::job::JobRow;
use berth_db::{
    account, allocation, job, job_priority, lease, node, notify, partition, preemption, qos,
    DbError, Pool,
};
use chrono::{DateTime, TimeZone, Utc};
use std::collections::{BTreeSet, HashMap, HashSet};
use tracing::instrument;

/// What a cycle did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The plan was committed; `started` jobs were placed.
    Committed {
        /// Jobs started.
        started: usize,
    },
    /// The term was stale: another scheduler leads. Nothing was written.
    Deposed,
}

/// The most task indices of one array looked at per cycle.
const ARRAY_LOOKAHEAD: usize = 1024;

/// Dependency state of every pending job with a `--dependency` (array masters: per task
/// index, for the first indices), from the jobs they name.
struct Dependencies {
    parsed: HashMap<i64, Dependency>,
    targets: Vec<Target>,
    singleton_blocked: HashSet<i64>,
}

impl Dependencies {
    async fn load(pool: &Pool, pending: &[JobRow]) -> Result<Self, DbError> {
        let parsed: HashMap<i64, Dependency> = pending
            .iter()
            .filter_map(|j| {
                let d = j.dependency.as_deref()?;
                match dependency::parse(d) {
                    Ok(d) => Some((j.id, d)),
                    Err(e) => {
                        tracing::warn!(job.id = j.id, error = %e, "unreadable dependency ignored");
                        None
                    }
                }
            })
            .collect();
        let ids: Vec<i64> = parsed
            .values()
            .flat_map(Dependency::job_ids)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let targets = if ids.is_empty() {
            Vec::new()
        } else {
            job::job_dependency_targets(pool, &ids)
                .await?
                .into_iter()
                .map(|t| Target {
                    id: t.id,
                    array_job_id: t.array_job_id,
                    array_task_id: t.array_task_id.map(|x| x as u32),
                    has_pending_tasks: t.array_pending.is_some(),
                    state: t.state,
                })
                .collect()
        };
        let singles: Vec<&JobRow> = pending
            .iter()
            .filter(|j| parsed.get(&j.id).is_some_and(Dependency::singleton))
            .collect();
        let mut singleton_blocked = HashSet::new();
        if !singles.is_empty() {
            let users: Vec<String> = singles.iter().map(|j| j.user_name.clone()).collect();
            let names: Vec<String> = singles.iter().map(|j| j.name.clone()).collect();
            let active = job::job_singleton_active(pool, &users, &names).await?;
            for j in singles {
                if active.iter().any(|(id, u, n)| {
                    *id < j.id && *u == j.user_name && *n == j.name && j.array_job_id != Some(*id)
                }) {
                    singleton_blocked.insert(j.id);
                }
            }
        }
        Ok(Dependencies {
            parsed,
            targets,
            singleton_blocked,
        })
    }

    fn state(&self, job: &JobRow, task: Option<u32>) -> DependencyState {
        match self.parsed.get(&job.id) {
            Some(d) => dependency::evaluate(
                d,
                task,
                &self.targets,
                self.singleton_blocked.contains(&job.id),
            ),
            None => DependencyState::Satisfied,
        }
    }
}

fn epoch(t: DateTime<Utc>) -> i64 {
    t.timestamp()
}

/// Loads the planner's snapshot from the database, as of `now`.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn load_snapshot(
    pool: &Pool,
    now: DateTime<Utc>,
    config: &PlannerConfig,
) -> Result<Snapshot, DbError> {
    Ok(load_cycle_input(pool, now, config).await?.snapshot)
}

/// A snapshot and what the commit needs besides the plan: each pending job's account (for
/// the priority record).
pub struct CycleInput {
    /// The planner's input.
    pub snapshot: Snapshot,
    /// Each pending job's fairshare association account.
    pub accounts: HashMap<i64, String>,
}

/// Loads the snapshot and each pending job's account.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn load_cycle_input(
    pool: &Pool,
    now: DateTime<Utc>,
    config: &PlannerConfig,
) -> Result<CycleInput, DbError> {
    let nodes = node::node_list(pool).await?;
    let gpus = node::gpu_list(pool, None).await?;
    let live = allocation::allocation_live_list(pool).await?;
    let in_flight = preemption::preemption_in_flight(pool).await?;
    let kill_at: HashMap<(i64, i32), i64> = in_flight
        .iter()
        .map(|p| ((p.job_id, p.run), epoch(p.kill_at)))
        .collect();
    let preemptors: HashSet<i64> = in_flight.iter().map(|p| p.preemptor).collect();
    let partitions = partition::partition_list(pool).await?;
    let pending = job::job_pending_list(pool).await?;
    let qos = qos::qos_list(pool).await?;
    let account_rows = account::account_list(pool, None).await?;
    let share = fairshare::load(pool, now, config.half_life).await?;
    let partition_by_name: HashMap<&str, &partition::PartitionRow> =
        partitions.iter().map(|p| (p.name.as_str(), p)).collect();
    let qos_priority: HashMap<&str, u32> = qos
        .iter()
        .map(|q| (q.name.as_str(), q.priority.max(0) as u32))
        .collect();
    let mut accounts = HashMap::new();
    let deps = Dependencies::load(pool, &pending).await?;
    let masters: Vec<i64> = pending
        .iter()
        .filter(|j| j.array_pending.is_some())
        .map(|j| j.id)
        .collect();
    let running_tasks: HashMap<i64, i64> = if masters.is_empty() {
        HashMap::new()
    } else {
        job::job_array_running_counts(pool, &masters)
            .await?
            .into_iter()
            .collect()
    };
    // GPUs by node in one pass (the list is ordered by node then index).
    let mut gpus_by_node: HashMap<i64, Vec<(u32, String)>> = HashMap::new();
    for g in &gpus {
        gpus_by_node
            .entry(g.node_id)
            .or_default()
            .push((g.index as u32, g.model.clone()));
    }
    let nodes = nodes
        .iter()
        .map(|n| NodeView {
            id: n.id,
            name: n.name.clone(),
            available: n.state == "UP",
            gpus: gpus_by_node.remove(&n.id).unwrap_or_default(),
            features: n.features.clone(),
        })
        .collect();
    let running = live
        .iter()
        .map(|a| RunningAlloc {
            job_id: a.job_id,
            node_id: a.node_id,
            gpus: a.gpu_indices.iter().map(|g| *g as u32).collect(),
            exclusive: a.exclusive,
            end: match (
                a.time_limit.map(|l| epoch(a.created_at).saturating_add(l)),
                kill_at.get(&(a.job_id, a.run)),
            ) {
                (Some(end), Some(kill)) => Some(end.min(*kill)),
                (end, kill) => kill.copied().or(end),
            },
        })
        .collect();
    let pending = pending
        .iter()
        .map(|j| {
            let spec: berth_core::spec::JobSpec =
                serde_json::from_value(j.spec.clone()).unwrap_or_default();
            let mut dependency = deps.state(j, j.array_task_id.map(|t| t as u32));
            let array = j.array_pending.as_deref().map(|p| {
                let set = IndexSet::parse(p).unwrap_or_default();
                let running = running_tasks.get(&j.id).copied().unwrap_or(0) as u32;
                let room = j
                    .array_max_running
                    .map_or(ARRAY_LOOKAHEAD, |m| {
                        (m as u32).saturating_sub(running) as usize
                    })
                    .min(ARRAY_LOOKAHEAD);
                let mut ready = Vec::new();
                let mut all_never = true;
                for i in set.iter().take(ARRAY_LOOKAHEAD) {
                    if ready.len() >= room.max(1) {
                        all_never = false;
                        break;
                    }
                    match deps.state(j, Some(i)) {
                        DependencyState::Satisfied => {
                            ready.push(i);
                            all_never = false;
                        }
                        DependencyState::Waiting => all_never = false,
                        DependencyState::Never => {}
                    }
                }
                dependency = if !ready.is_empty() {
                    DependencyState::Satisfied
                } else if all_never {
                    DependencyState::Never
                } else {
                    DependencyState::Waiting
                };
                ArrayTasks {
                    ready,
                    remaining: set.count(),
                    running,
                    max_running: j.array_max_running.map(|m| m as u32),
                }
            });
            let partition = partition_by_name.get(j.partition.as_str());
            let account = share.account_of(j.account.as_deref(), &j.user_name);
            let fairshare = share.factor(&account, &j.user_name);
            accounts.insert(j.id, account.clone());
            PendingJob {
                id: j.id,
                submit_time: epoch(j.submit_time),
                partition_nodes: partition.map(|p| p.nodes.clone()).unwrap_or_default(),
                partition_tier: partition.map_or(1, |p| p.priority_tier.max(0) as u32),
                qos_priority: qos_priority
                    .get(j.qos.as_deref().unwrap_or("normal"))
                    .copied()
                    .unwrap_or(0),
                fairshare,
                nice: j.nice,
                adjust: j.priority_adjust,
                nodes: j.num_nodes as u32,
                gpus_per_node: j.gpus_per_node as u32,
                gpu_type: j.gpu_type.clone(),
                constraint: spec.constraint,
                exclusive: j.exclusive,
                whole_node: j.whole_node,
                time_limit: j.time_limit,
                held: None,
                begin: j.begin_time.map(epoch),
                dependency,
                array,
                user: j.user_name.clone(),
                account,
                qos: j.qos.clone().unwrap_or_else(|| "normal".to_string()),
                cpus: (j.num_tasks.max(1) as u32).saturating_mul(j.cpus_per_task.max(1) as u32),
                partition_max_time: partition.and_then(|p| p.max_time),
                partition_max_nodes: partition.and_then(|p| p.max_nodes).map(|n| n.max(0) as u32),
                preempting: preemptors.contains(&j.id),
            }
        })
        .collect();
    let running_jobs = job::job_running_list(pool)
        .await?
        .into_iter()
        .map(|r| RunningJob {
            account: share.account_of(r.account.as_deref(), &r.user_name),
            job_id: r.id,
            user: r.user_name,
            qos: r.qos.unwrap_or_else(|| "normal".to_string()),
            cpus: (r.num_tasks.max(1) as u32).saturating_mul(r.cpus_per_task.max(1) as u32),
            gpus: r.gpus.max(0) as u32,
            nodes: r.num_nodes.max(0) as u32,
            start: r.start_time.map_or(0, epoch),
        })
        .collect();
    let qos_limits = qos
        .iter()
        .map(|q| {
            let tres = |v: &serde_json::Value| -> TresLimits {
                serde_json::from_value(v.clone()).unwrap_or_default()
            };
            (
                q.name.clone(),
                QosLimits {
                    max_tres_per_user: tres(&q.max_tres_per_user),
                    max_tres_per_account: tres(&q.max_tres_per_account),
                    grp_tres: tres(&q.grp_tres),
                    max_jobs_per_user: q.max_jobs_per_user.map(|m| m.max(0) as u32),
                    max_wall: q.max_wall,
                },
            )
        })
        .collect();
    let account_limits = account_rows
        .into_iter()
        .map(|a| {
            (
                a.name,
                AccountLimits {
                    parent: a.parent,
                    grp_tres: serde_json::from_value(a.grp_tres).unwrap_or_default(),
                },
            )
        })
        .collect();
    Ok(CycleInput {
        snapshot: Snapshot {
            now: epoch(now),
            nodes,
            running,
            pending,
            partition_tier_max: partitions
                .iter()
                .map(|p| p.priority_tier.max(0) as u32)
                .max()
                .unwrap_or(1),
            qos_priority_max: qos_priority.values().copied().max().unwrap_or(0),
            qos_limits,
            running_jobs,
            qos_preemption: qos
                .iter()
                .map(|q| {
                    (
                        q.name.clone(),
                        QosPreemption {
                            priority: q.priority.max(0) as u32,
                            preempt: q.preempt.clone(),
                            mode: if q.preempt_mode == "REQUEUE" {
                                PreemptMode::Requeue
                            } else {
                                PreemptMode::Cancel
                            },
                            grace_time: q.grace_time,
                            exempt_time: q.preempt_exempt_time,
                        },
                    )
                })
                .collect(),
            accounts: account_limits,
        },
        accounts,
    })
}

/// Commits a plan under `term`: checks the term (locking the lease row), locks the
/// affected node rows in id order, and for each start marks the job RUNNING (splitting an
/// array task off its master first) and writes its allocations, each start in its own
/// savepoint so one refused start (a GPU already held, a job cancelled meanwhile) does not
/// undo the others. Records pending reasons, expected starts and priorities, and notifies
/// the batch nodes.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(pool, plan), err)]
pub async fn commit(pool: &Pool, term: i64, plan: &Plan) -> Result<Outcome, DbError> {
    commit_with_priorities(pool, term, plan, &[]).await
}

/// [`commit`], also recording the priority factors of pending jobs (job id, record) whose
/// priority changed.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(pool, plan, records), err)]
pub async fn commit_with_priorities(
    pool: &Pool,
    term: i64,
    plan: &Plan,
    records: &[(i64, PriorityRecord)],
) -> Result<Outcome, DbError> {
    let mut tx = pool.begin().await?;
    if !lease::lease_check_in_tx(&mut tx, LEASE_ROLE, term).await? {
        return Ok(Outcome::Deposed);
    }
    let node_ids: Vec<i64> = plan
        .starts
        .iter()
        .flat_map(|s| s.placements.iter().map(|p| p.node_id))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let available: BTreeSet<i64> = node::node_lock_in_tx(&mut tx, &node_ids)
        .await?
        .into_iter()
        .collect();
    let names: HashMap<i64, String> = node::node_list(&mut *tx)
        .await?
        .into_iter()
        .map(|n| (n.id, n.name))
        .collect();
    for p in &plan.preemptions {
        let mut sp = sqlx::Acquire::begin(&mut *tx).await?;
        let done = preempt_in_tx(&mut sp, p).await?;
        if done {
            sp.commit().await?;
            tracing::info!(
                job.id = p.victim,
                preemptor = p.preemptor,
                mode = p.mode.as_str(),
                term,
                "job preempted"
            );
        } else {
            sp.rollback().await?;
        }
    }
    let mut started = 0;
    for start in &plan.starts {
        if !start
            .placements
            .iter()
            .all(|p| available.contains(&p.node_id))
        {
            continue;
        }
        let mut sp = sqlx::Acquire::begin(&mut *tx).await?;
        let result: Result<Option<i64>, DbError> = async {
            let job_id = match start.array_task_id {
                Some(task) => {
                    match job::job_array_split_in_tx(&mut sp, start.job_id, task as i32).await? {
                        Some(id) => id,
                        None => return Ok(None),
                    }
                }
                None => start.job_id,
            };
            let Some(current) = job::job_lock_in_tx(&mut sp, job_id).await? else {
                return Ok(None);
            };
            if !job::job_start_in_tx(&mut sp, job_id, term).await? {
                return Ok(None);
            }
            for (index, p) in start.placements.iter().enumerate() {
                let gpus: Vec<i32> = p.gpus.iter().map(|g| *g as i32).collect();
                allocation::allocation_insert_in_tx(
                    &mut sp,
                    job_id,
                    current.restart_count,
                    p.node_id,
                    index as i32,
                    &gpus,
                    start.exclusive,
                    term,
                )
                .await?;
            }
            if let Some(batch) = start.placements.first().and_then(|p| names.get(&p.node_id)) {
                notify::notify(&mut *sp, notify::NODE_CHANNEL, batch).await?;
            }
            Ok(Some(job_id))
        }
        .await;
        match result {
            Ok(Some(job_id)) => {
                sp.commit().await?;
                started += 1;
                tracing::info!(job.id = job_id, array.task = ?start.array_task_id, term, "job started");
            }
            Ok(None) => sp.rollback().await?,
            Err(e @ DbError::Conflict { .. }) => {
                tracing::warn!(job.id = start.job_id, error = %e, "placement refused by the database");
                sp.rollback().await?;
            }
            Err(e) => return Err(e),
        }
    }
    let ids: Vec<i64> = plan.pending.iter().map(|w| w.job_id).collect();
    let reasons: Vec<String> = plan.pending.iter().map(|w| w.reason.clone()).collect();
    let expected: Vec<Option<DateTime<Utc>>> = plan
        .pending
        .iter()
        .map(|w| {
            w.expected_start
                .and_then(|t| Utc.timestamp_opt(t, 0).single())
        })
        .collect();
    let priorities: Vec<i64> = plan.pending.iter().map(|w| w.priority).collect();
    if !records.is_empty() {
        let record_ids: Vec<i64> = records.iter().map(|(id, _)| *id).collect();
        let values: Vec<serde_json::Value> = records
            .iter()
            .map(|(_, r)| serde_json::to_value(r).unwrap_or_default())
            .collect();
        job_priority::job_priority_set(&mut *tx, &record_ids, &values).await?;
    }
    job::job_set_pending_plan(&mut *tx, &ids, &reasons, &expected, &priorities).await?;
    tx.commit().await?;
    Ok(Outcome::Committed { started })
}

/// Preempts `p.victim` for `p.preemptor` (both re-checked: the victim still RUNNING, the
/// preemptor still PENDING and not held) and wakes the victim's nodes, whose next sync
/// stops its run. Returns false when nothing was done.
async fn preempt_in_tx(
    conn: &mut sqlx::PgConnection,
    p: &planner::Preemption,
) -> Result<bool, DbError> {
    let Some(victim) = job::job_lock_in_tx(conn, p.victim).await? else {
        return Ok(false);
    };
    let Some(preemptor) = job::job_get(&mut *conn, p.preemptor).await? else {
        return Ok(false);
    };
    if victim.state != "RUNNING" || preemptor.state != "PENDING" || preemptor.hold {
        return Ok(false);
    }
    let run = victim.restart_count;
    let nodes = allocation::allocation_list_for_jobs(&mut *conn, &[p.victim]).await?;
    let mode = p.mode.as_str();
    if job::job_preempt_in_tx(conn, p.victim, run, p.preemptor, mode, p.grace_time)
        .await?
        .is_none()
    {
        return Ok(false);
    }
    preemption::preemption_insert_in_tx(conn, p.victim, run, p.preemptor, mode, p.grace_time)
        .await?;
    for a in &nodes {
        notify::notify(&mut *conn, notify::NODE_CHANNEL, &a.node_name).await?;
    }
    notify::notify(&mut *conn, notify::JOBS_CHANNEL, &p.victim.to_string()).await?;
    Ok(true)
}

/// One cycle under `term`.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn run_cycle(pool: &Pool, term: i64, config: &PlannerConfig) -> Result<Outcome, DbError> {
    let now = Utc::now();
    fairshare::charge_ended_runs(pool, now, &config.billing, config.half_life).await?;
    let input = load_cycle_input(pool, now, config).await?;
    let snapshot = &input.snapshot;
    if snapshot.pending.is_empty() {
        return Ok(Outcome::Committed { started: 0 });
    }
    let plan = planner::plan(snapshot, config);
    if config.kill_invalid_depend {
        let never: Vec<i64> = plan
            .pending
            .iter()
            .filter(|w| w.reason == "DependencyNeverSatisfied")
            .map(|w| w.job_id)
            .collect();
        if !never.is_empty() {
            let mut tx = pool.begin().await?;
            if !lease::lease_check_in_tx(&mut tx, LEASE_ROLE, term).await? {
                return Ok(Outcome::Deposed);
            }
            for id in job::job_cancel_invalid_depend_in_tx(&mut tx, &never).await? {
                tracing::info!(
                    job.id = id,
                    "cancelled: its dependency can never be satisfied (kill_invalid_depend)"
                );
                notify::notify(&mut *tx, notify::JOBS_CHANNEL, &id.to_string()).await?;
            }
            tx.commit().await?;
        }
    }
    let records: Vec<(i64, PriorityRecord)> = planner::priorities(snapshot, config)
        .into_iter()
        .map(|(id, factors)| {
            let account = input.accounts.get(&id).cloned().unwrap_or_default();
            (
                id,
                PriorityRecord {
                    factors,
                    weights: config.weights,
                    account,
                },
            )
        })
        .collect();
    commit_with_priorities(pool, term, &plan, &records).await
}
