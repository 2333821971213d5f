//! One scheduling cycle: snapshot → plan → one locking commit.
//!
//! The snapshot comes from the leader's [`SnapshotCache`] (refreshed with the changes
//! since the previous cycle): nodes and GPUs, live allocations (with their start + time
//! limit, for reservations), and pending jobs with what the planner needs to decide
//! eligibility: `--begin`, dependencies (evaluated by [`crate::dependency`] against the
//! jobs they name), and for an array master the task indices that may start now within
//! its `%LIMIT`.

use crate::cpus::{pick_cpus, NodeHoldings};
use crate::planner::{self, Plan, PlannerConfig};
pub use crate::snapshot::{CycleInput, SnapshotCache};
use crate::{fairshare, LEASE_ROLE};
use berth_core::qos::PriorityRecord;
use berth_db::{allocation, job, job_priority, lease, node, notify, preemption, DbError, Pool};
use chrono::{DateTime, TimeZone, Utc};
use std::collections::{BTreeSet, HashMap};
use tracing::instrument;

/// The most ended job runs recorded for accounting per cycle (sacct's records, see
/// [`berth_db::accounting`]).
const ACCT_RECORD_BATCH: i64 = 1000;

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

/// Commits a plan under `term`: checks the term (locking the lease row), locks the
/// affected node rows in id order, and for each start marks the job RUNNING (splitting an
/// array task off its master first, storing the shorter time limit backfill gave it) and
/// writes its allocations with the CPU ids it picks (see [`crate::cpus`]), each start in
/// its own savepoint so one refused start (a GPU or CPU already held, CPUs or memory no
/// longer free, a job cancelled meanwhile) does not undo the others. Records pending reasons, expected starts and priorities, and notifies
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
    let mut tx = berth_db::begin(pool).await?;
    // A row an api transaction holds (a job being updated, a node syncing) must not stall
    // the cycle past the lease: wait at most this long for any lock, else fail the cycle
    // (the next one retries).
    berth_db::lock_timeout_in_tx(&mut tx, 1500).await?;
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
            if !job::job_start_in_tx(&mut sp, job_id, term, start.time_limit).await? {
                return Ok(None);
            }
            if !current.partitions.is_empty() {
                let nodes: Vec<i64> = start.placements.iter().map(|p| p.node_id).collect();
                job::job_start_partition_in_tx(&mut sp, job_id, &nodes).await?;
            }
            for (index, p) in start.placements.iter().enumerate() {
                let Some(cpus) = place_cpus_in_tx(&mut sp, job_id, p, start.exclusive).await?
                else {
                    return Ok(None);
                };
                let gpus: Vec<i32> = p.gpus.iter().map(|g| *g as i32).collect();
                allocation::allocation_insert_in_tx(
                    &mut sp,
                    &allocation::AllocationInsert {
                        job_id,
                        run: current.restart_count,
                        node_id: p.node_id,
                        node_index: index as i32,
                        gpu_indices: &gpus,
                        cpu_ids: &cpus,
                        mem_mib: i64::try_from(p.mem_mib).unwrap_or(i64::MAX),
                        exclusive: start.exclusive,
                        term,
                    },
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
    // In id order, the order other writers lock job rows in.
    let mut waiting: Vec<&planner::Waiting> = plan.pending.iter().collect();
    waiting.sort_by_key(|w| w.job_id);
    let ids: Vec<i64> = waiting.iter().map(|w| w.job_id).collect();
    let reasons: Vec<String> = waiting.iter().map(|w| w.reason.clone()).collect();
    let expected: Vec<Option<DateTime<Utc>>> = waiting
        .iter()
        .map(|w| {
            w.expected_start
                .and_then(|t| Utc.timestamp_opt(t, 0).single())
        })
        .collect();
    let priorities: Vec<i64> = waiting.iter().map(|w| w.priority).collect();
    // The nice and adjustment each priority was computed with (from the records).
    let inputs: HashMap<i64, (i32, i64)> = records
        .iter()
        .map(|(id, r)| (*id, (r.factors.nice, r.factors.adjust)))
        .collect();
    let nices: Vec<Option<i32>> = ids.iter().map(|id| inputs.get(id).map(|i| i.0)).collect();
    let adjusts: Vec<Option<i64>> = ids.iter().map(|id| inputs.get(id).map(|i| i.1)).collect();
    if !records.is_empty() {
        let record_ids: Vec<i64> = records.iter().map(|(id, _)| *id).collect();
        let values: Vec<serde_json::Value> = records
            .iter()
            .map(|(_, r)| serde_json::to_value(r).unwrap_or_default())
            .collect();
        job_priority::job_priority_set(&mut *tx, &record_ids, &values).await?;
    }
    job::job_set_pending_plan(
        &mut *tx,
        &ids,
        &reasons,
        &expected,
        &priorities,
        &nices,
        &adjusts,
    )
    .await?;
    tx.commit().await?;
    Ok(Outcome::Committed { started })
}

/// The CPU ids placement `p` of job `job_id` gets on its node, re-checked under the
/// node's row lock against the node's live allocations (those written earlier in this
/// transaction included); `None` (logged) when the node no longer has the CPUs or the
/// memory free.
async fn place_cpus_in_tx(
    conn: &mut sqlx::PgConnection,
    job_id: i64,
    p: &planner::Placement,
    exclusive: bool,
) -> Result<Option<Vec<i32>>, DbError> {
    let gpus: Vec<i32> = p.gpus.iter().map(|g| *g as i32).collect();
    let Some(row) = allocation::allocation_node_holdings_in_tx(conn, p.node_id, &gpus).await?
    else {
        return Ok(None);
    };
    let holdings = NodeHoldings {
        cpus: row.cpus.max(0) as u32,
        memory_mib: row.memory_mib.max(0) as u64,
        held_cpu_ids: row
            .held_cpu_ids
            .iter()
            .map(|c| (*c).max(0) as u32)
            .collect(),
        held_mem_mib: row.held_mem_mib.max(0) as u64,
        cpu_cores: row.cpu_cores.iter().map(|c| (*c).max(0) as u32).collect(),
    };
    // The CPUs of the job's GPUs' domains come first (`--gpu-bind=closest`'s CPU side);
    // without topology, lowest free ids, packed.
    let near: BTreeSet<u32> = row
        .cpu_domains
        .iter()
        .enumerate()
        .filter(|(_, d)| row.gpu_domains.contains(d))
        .map(|(i, _)| i as u32)
        .collect();
    match pick_cpus(&holdings, p.cpus, p.mem_mib, exclusive, &near) {
        Ok(ids) => Ok(Some(ids.into_iter().map(|c| c as i32).collect())),
        Err(misfit) => {
            tracing::info!(
                job.id = job_id,
                node.id = p.node_id,
                ?misfit,
                "placement no longer fits its node; the job waits for the next cycle"
            );
            Ok(None)
        }
    }
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

/// One cycle under `term`, with the leader's snapshot `cache` (a new one for each term).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn run_cycle(
    pool: &Pool,
    term: i64,
    config: &PlannerConfig,
    cache: &mut SnapshotCache,
) -> Result<Outcome, DbError> {
    run_cycle_with_cloud(pool, term, config, cache, None).await
}

/// [`run_cycle`] with the cloud module: pool slots are offered to the planner and the
/// launches the plan needs are written after the commit (see [`crate::cloud`]).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn run_cycle_with_cloud(
    pool: &Pool,
    term: i64,
    config: &PlannerConfig,
    cache: &mut SnapshotCache,
    cloud: Option<&crate::cloud::Cloud>,
) -> Result<Outcome, DbError> {
    let now = Utc::now();
    fairshare::charge_ended_runs(pool, now, &config.billing, config.half_life).await?;
    berth_db::accounting::acct_record_pending(pool, ACCT_RECORD_BATCH).await?;
    let mut input = cache.refresh(pool, now, config).await?;
    let slots = match cloud {
        Some(cloud) => {
            let slots = cache.slots();
            cloud.adjust_snapshot(&mut input.snapshot, &slots);
            slots
        }
        None => Vec::new(),
    };
    let snapshot = &input.snapshot;
    if snapshot.pending.is_empty() {
        if let Some(cloud) = cloud {
            cloud.launch_intents(&mut Plan::default(), snapshot.now, &slots);
        }
        return Ok(Outcome::Committed { started: 0 });
    }
    let mut plan = planner::plan(snapshot, config);
    let intents = match cloud {
        Some(cloud) => cloud.launch_intents(&mut plan, snapshot.now, &slots),
        None => Vec::new(),
    };
    if config.kill_invalid_depend {
        let never: Vec<i64> = plan
            .pending
            .iter()
            .filter(|w| w.reason == "DependencyNeverSatisfied")
            .map(|w| w.job_id)
            .collect();
        if !never.is_empty() {
            let mut tx = berth_db::begin(pool).await?;
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
    let outcome = commit_with_priorities(pool, term, &plan, &records).await?;
    if let (Some(cloud), Outcome::Committed { .. }) = (cloud, outcome) {
        if !cloud.write_launches(pool, term, &intents).await? {
            return Ok(Outcome::Deposed);
        }
    }
    Ok(outcome)
}
