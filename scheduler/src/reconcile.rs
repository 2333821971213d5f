//! The leader's reconcilers: loops that look at the database and make the world match it.
//! Each pass is idempotent (the next pass is the retry) and every write it makes runs in a
//! transaction that first checks the leader's term (`lease_check_in_tx`), so a deposed
//! leader cannot change anything.
//!
//! * **Node timeout** (Slurm's `SlurmdTimeout`): a node whose worker has not synced for
//!   longer than the node timeout becomes DOWN with reason `Not responding`; every job run
//!   holding an allocation there fails as a whole (all its nodes' allocations released):
//!   requeueable jobs go back to PENDING with `SLURM_RESTART_COUNT` + 1, the others end
//!   NODE_FAIL. The planner does not place on DOWN nodes. A leader only declares nodes
//!   silent after it has itself led for a whole node timeout, so a failover or a database
//!   outage (during which no sync could be recorded) never takes healthy nodes down.
//! * **Return to service** (Slurm's `ReturnToService`): a DOWN node that syncs again comes
//!   back UP, when it was DOWN for not responding (`1`, the default) or for any reason
//!   (`2`); `0` leaves it DOWN for an operator.
//! * **Stuck COMPLETING** (Slurm's `UnkillableStepTimeout`): an allocation still live
//!   longer than the bound after its job ended (its node never reported the processes
//!   gone) is released, its node drained with reason `Kill task failed`, and a job still
//!   COMPLETING ends FAILED.
//! * **Inactive allocations** (Slurm's `InactiveLimit`): a job whose client (salloc, srun
//!   outside an allocation) sends keep-alives ends once the last one has expired (the api
//!   sets the expiry from `inactive_limit_seconds` when it records one): a running job
//!   becomes TIMEOUT, a pending one CANCELLED, reason `InactiveLimit`; its nodes' long
//!   polls are woken so the workers stop it at once. Jobs without keep-alives (sbatch's)
//!   are never touched.

use crate::LEASE_ROLE;
use berth_db::allocation::{self, LiveRunRow};
use berth_db::job::{self, NodeFailOutcome};
use berth_db::{job_keepalive, lease, node, notify, DbError, Pool};
use std::collections::BTreeSet;
use std::time::Duration;
use tracing::instrument;

/// Slurm's `ReturnToService`: when a DOWN node that syncs again is returned to service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReturnToService {
    /// `0`: never by itself; an operator resumes it.
    Never,
    /// `1`: when it was DOWN because it was not responding (the default).
    #[default]
    NonResponsive,
    /// `2`: whatever made it DOWN.
    Any,
}

impl ReturnToService {
    /// From Slurm's number (0, 1, 2); `None` for anything else.
    pub fn from_slurm(n: u8) -> Option<Self> {
        match n {
            0 => Some(ReturnToService::Never),
            1 => Some(ReturnToService::NonResponsive),
            2 => Some(ReturnToService::Any),
            _ => None,
        }
    }
}

/// What one reconcile pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Nodes declared DOWN.
    pub nodes_down: Vec<String>,
    /// Nodes returned to service.
    pub nodes_returned: Vec<String>,
    /// Jobs requeued after a node failure.
    pub requeued: Vec<i64>,
    /// Jobs ended NODE_FAIL.
    pub node_failed: Vec<i64>,
    /// Stuck allocations released (job ids).
    pub stuck_released: Vec<i64>,
    /// Jobs ended because their client's keep-alive expired (Slurm's `InactiveLimit`).
    pub inactive: Vec<i64>,
    /// The term was stale: nothing more was written.
    pub deposed: bool,
}

/// Settings of the reconcilers.
#[derive(Debug, Clone, Copy)]
pub struct ReconcileSettings {
    /// Silence after which a node is DOWN.
    pub node_timeout: Duration,
    /// [`ReturnToService`].
    pub return_to_service: ReturnToService,
    /// How long an ended job's allocation may stay live before it is resolved.
    pub completing_timeout: Duration,
}

/// One pass of every reconciler under `term`. `led_for` is how long this process has led
/// without interruption: nodes are only declared silent once it reaches the node timeout.
///
/// # Errors
/// [`DbError`] from the driver (the next pass retries).
#[instrument(skip(pool), err)]
pub async fn reconcile(
    pool: &Pool,
    term: i64,
    led_for: Duration,
    settings: &ReconcileSettings,
) -> Result<Report, DbError> {
    let mut report = Report::default();
    let timeout = settings.node_timeout.as_secs_f64();
    if settings.return_to_service != ReturnToService::Never {
        let mut tx = berth_db::begin(pool).await?;
        if !lease::lease_check_in_tx(&mut tx, LEASE_ROLE, term).await? {
            report.deposed = true;
            return Ok(report);
        }
        report.nodes_returned = node::node_return_to_service_in_tx(
            &mut tx,
            timeout,
            settings.return_to_service == ReturnToService::Any,
        )
        .await?;
        if !report.nodes_returned.is_empty() {
            notify::notify(&mut *tx, notify::JOBS_CHANNEL, "node").await?;
        }
        tx.commit().await?;
        for name in &report.nodes_returned {
            tracing::info!(node.name = %name, term, "node returned to service");
        }
    }
    if led_for >= settings.node_timeout {
        for silent in node::node_silent_list(pool, timeout).await? {
            let mut tx = berth_db::begin(pool).await?;
            if !lease::lease_check_in_tx(&mut tx, LEASE_ROLE, term).await? {
                report.deposed = true;
                return Ok(report);
            }
            if !node::node_down_if_silent_in_tx(&mut tx, silent.id, timeout, node::NOT_RESPONDING)
                .await?
            {
                continue;
            }
            let runs = fail_node_runs_in_tx(&mut tx, silent.id, &silent.name).await?;
            for (job_id, outcome) in &runs {
                match outcome {
                    NodeFailOutcome::Requeued { .. } => report.requeued.push(*job_id),
                    NodeFailOutcome::Failed => report.node_failed.push(*job_id),
                    NodeFailOutcome::Unchanged => {}
                }
            }
            notify::notify(&mut *tx, notify::JOBS_CHANNEL, "node").await?;
            tx.commit().await?;
            tracing::warn!(node.name = %silent.name, term, jobs = runs.len(), "node not responding: DOWN");
            report.nodes_down.push(silent.name);
        }
    }
    for stuck in
        allocation::allocation_stuck_list(pool, settings.completing_timeout.as_secs_f64()).await?
    {
        let mut tx = berth_db::begin(pool).await?;
        if !lease::lease_check_in_tx(&mut tx, LEASE_ROLE, term).await? {
            report.deposed = true;
            return Ok(report);
        }
        resolve_stuck(&mut tx, &stuck).await?;
        tx.commit().await?;
        report.stuck_released.push(stuck.job_id);
    }
    if !job_keepalive::job_keepalive_expired_list(pool)
        .await?
        .is_empty()
    {
        let mut tx = berth_db::begin(pool).await?;
        if !lease::lease_check_in_tx(&mut tx, LEASE_ROLE, term).await? {
            report.deposed = true;
            return Ok(report);
        }
        report.inactive = end_inactive_in_tx(&mut tx, term).await?;
        tx.commit().await?;
    }
    Ok(report)
}

/// Ends the jobs whose client's keep-alive expired and wakes their nodes' long polls
/// (see the module's *Inactive allocations*). Returns their ids.
async fn end_inactive_in_tx(tx: &mut sqlx::PgConnection, term: i64) -> Result<Vec<i64>, DbError> {
    let ended = job_keepalive::job_keepalive_expired_end_in_tx(&mut *tx).await?;
    let ids: Vec<i64> = ended.iter().map(|e| e.job_id).collect();
    if ids.is_empty() {
        return Ok(ids);
    }
    let mut woken = BTreeSet::new();
    for a in allocation::allocation_list_for_jobs(&mut *tx, &ids).await? {
        if woken.insert(a.node_name.clone()) {
            notify::notify(&mut *tx, notify::NODE_CHANNEL, &a.node_name).await?;
        }
    }
    notify::notify(&mut *tx, notify::JOBS_CHANNEL, "inactive").await?;
    for end in &ended {
        tracing::info!(job.id = end.job_id, state = %end.state, term,
            "inactivity time limit reached: the allocation's client sent no keep-alive");
    }
    Ok(ids)
}

/// Slurm's reason for a node that could not end a job's processes.
pub const KILL_TASK_FAILED: &str = "Kill task failed";

async fn resolve_stuck(tx: &mut sqlx::PgConnection, stuck: &LiveRunRow) -> Result<(), DbError> {
    let name = node::node_list(&mut *tx)
        .await?
        .into_iter()
        .find(|n| n.id == stuck.node_id)
        .map(|n| n.name)
        .unwrap_or_default();
    node::node_drain_in_tx(tx, stuck.node_id, KILL_TASK_FAILED).await?;
    job::job_stuck_resolve_in_tx(tx, stuck.job_id, stuck.run, &name, KILL_TASK_FAILED).await?;
    let woken = allocation::allocation_release_job_in_tx(tx, stuck.job_id, stuck.run).await?;
    wake_nodes(tx, &woken.into_iter().collect()).await?;
    notify::notify(&mut *tx, notify::JOBS_CHANNEL, "stuck").await?;
    tracing::warn!(job.id = stuck.job_id, node.name = %name, state = %stuck.job_state, "stuck allocation released; node drained");
    Ok(())
}

/// Wakes the long polls of `node_ids` so their workers learn of cancellations at once.
/// Ends the live runs on a failed node `node_id` (`node_name`): each job is requeued, or
/// ends NODE_FAIL when it may not be requeued; their allocations on every node are
/// released and those nodes' long polls woken. Returns each job with what became of it.
/// The caller holds the transaction (and has checked its term).
///
/// # Errors
/// [`DbError`] from the driver.
pub(crate) async fn fail_node_runs_in_tx(
    tx: &mut sqlx::PgConnection,
    node_id: i64,
    node_name: &str,
) -> Result<Vec<(i64, NodeFailOutcome)>, DbError> {
    let runs = allocation::allocation_live_runs_on_node(&mut *tx, node_id).await?;
    let mut woken = BTreeSet::new();
    let mut outcomes = Vec::with_capacity(runs.len());
    for run in &runs {
        let outcome = job::job_node_fail_in_tx(tx, run.job_id, run.run, node_name).await?;
        match &outcome {
            NodeFailOutcome::Requeued { restart_count } => {
                tracing::info!(job.id = run.job_id, restart_count, node.name = %node_name, "job requeued after node failure");
            }
            NodeFailOutcome::Failed => {
                tracing::info!(job.id = run.job_id, node.name = %node_name, "job ended NODE_FAIL");
            }
            NodeFailOutcome::Unchanged => {}
        }
        woken.extend(allocation::allocation_release_job_in_tx(tx, run.job_id, run.run).await?);
        outcomes.push((run.job_id, outcome));
    }
    wake_nodes(tx, &woken).await?;
    Ok(outcomes)
}

async fn wake_nodes(tx: &mut sqlx::PgConnection, node_ids: &BTreeSet<i64>) -> Result<(), DbError> {
    if node_ids.is_empty() {
        return Ok(());
    }
    for n in node::node_list(&mut *tx).await? {
        if node_ids.contains(&n.id) {
            notify::notify(&mut *tx, notify::NODE_CHANNEL, &n.name).await?;
        }
    }
    Ok(())
}
