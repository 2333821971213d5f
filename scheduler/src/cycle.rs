//! One scheduling cycle: snapshot → plan → one locking commit.

use crate::planner::{self, NodeView, PendingJob, Plan, PlannerConfig, RunningAlloc, Snapshot};
use crate::LEASE_ROLE;
use berth_db::{allocation, job, lease, node, notify, partition, DbError, Pool};
use std::collections::{BTreeSet, HashMap};
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

/// Loads the planner's snapshot from the database.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn load_snapshot(pool: &Pool) -> Result<Snapshot, DbError> {
    let nodes = node::node_list(pool).await?;
    let gpus = node::gpu_list(pool).await?;
    let live = allocation::allocation_live_list(pool).await?;
    let partitions = partition::partition_list(pool).await?;
    let pending = job::job_pending_list(pool).await?;
    let partition_nodes: HashMap<&str, &Vec<String>> = partitions
        .iter()
        .map(|p| (p.name.as_str(), &p.nodes))
        .collect();
    let now = chrono::Utc::now().timestamp();
    let nodes = nodes
        .iter()
        .map(|n| NodeView {
            id: n.id,
            name: n.name.clone(),
            available: n.state == "UP",
            gpus: gpus
                .iter()
                .filter(|g| g.node_id == n.id)
                .map(|g| (g.index as u32, g.model.clone()))
                .collect(),
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
            end: a.time_limit.map(|l| a.created_at.timestamp() + l),
        })
        .collect();
    let pending = pending
        .iter()
        .map(|j| PendingJob {
            id: j.id,
            submit_time: j.submit_time.timestamp(),
            partition_nodes: partition_nodes
                .get(j.partition.as_str())
                .map(|v| (*v).clone())
                .unwrap_or_default(),
            partition_tier: 1,
            fairshare: 1.0,
            nodes: j.num_nodes as u32,
            gpus_per_node: j.gpus_per_node as u32,
            gpu_type: j.gpu_type.clone(),
            exclusive: j.exclusive,
            whole_node: j.whole_node,
            time_limit: j.time_limit,
            ..Default::default()
        })
        .collect();
    Ok(Snapshot {
        now,
        nodes,
        running,
        pending,
        ..Default::default()
    })
}

/// Commits a plan under `term`: checks the term (locking the lease row), locks the
/// affected node rows in id order, and for each start marks the job RUNNING and writes its
/// allocations, each start in its own savepoint so one refused start (a GPU already held,
/// a job cancelled meanwhile) does not undo the others. Sets pending reasons and notifies
/// the batch nodes.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(pool, plan), err)]
pub async fn commit(pool: &Pool, term: i64, plan: &Plan) -> Result<Outcome, DbError> {
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
        let result: Result<bool, DbError> = async {
            let Some(current) = job::job_lock_in_tx(&mut sp, start.job_id).await? else {
                return Ok(false);
            };
            if !job::job_start_in_tx(&mut sp, start.job_id, term).await? {
                return Ok(false);
            }
            for (index, p) in start.placements.iter().enumerate() {
                let gpus: Vec<i32> = p.gpus.iter().map(|g| *g as i32).collect();
                allocation::allocation_insert_in_tx(
                    &mut sp,
                    start.job_id,
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
            Ok(true)
        }
        .await;
        match result {
            Ok(true) => {
                sp.commit().await?;
                started += 1;
                tracing::info!(job.id = start.job_id, term, "job started");
            }
            Ok(false) => sp.rollback().await?,
            Err(e @ DbError::Conflict { .. }) => {
                tracing::warn!(job.id = start.job_id, error = %e, "placement refused by the database");
                sp.rollback().await?;
            }
            Err(e) => return Err(e),
        }
    }
    let (ids, reasons): (Vec<i64>, Vec<String>) = plan
        .pending
        .iter()
        .map(|w| (w.job_id, w.reason.clone()))
        .unzip();
    job::job_set_pending_reasons(&mut *tx, &ids, &reasons).await?;
    tx.commit().await?;
    Ok(Outcome::Committed { started })
}

/// One cycle under `term`.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn run_cycle(pool: &Pool, term: i64) -> Result<Outcome, DbError> {
    let snapshot = load_snapshot(pool).await?;
    if snapshot.pending.is_empty() {
        return Ok(Outcome::Committed { started: 0 });
    }
    let plan = planner::plan(&snapshot, &PlannerConfig::default());
    commit(pool, term, &plan).await
}
