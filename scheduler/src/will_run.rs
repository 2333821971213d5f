//! `sbatch --test-only`: when and where a job that is not stored would start (Slurm's
//! will-run test).
//!
//! The api validates the submission as it would store it, inserts it in a transaction it
//! then rolls back, and hands the job's scheduler row here. This reads the database's
//! current state as the leader does (one `REPEATABLE READ` snapshot: jobs not ended,
//! nodes, GPUs, allocations, reservations, limits, fairshare usage), adds the job, and runs
//! the planner ([`crate::planner::plan`]) over it with the leader's settings, committing
//! nothing. When the plan starts the job, it would start now; otherwise its expected start
//! is the reservation the plan makes for it, which counts the pending jobs ahead of it in
//! priority order and the running jobs' time limits (as squeue `--start` shows for pending
//! jobs). A job the plan gives no start (behind more than `backfill_depth` blocked jobs,
//! held by a limit or a dependency …) gets its pending reason and no time. A `--begin` in
//! the future is planned as if the job could start now, and its start is then the later
//! of the plan's and the begin time.
//!
//! Cloud node pools are not counted: a job that only a node still to be launched could
//! hold gets no start here.

use crate::planner::{self, Placement, PlannerConfig};
use crate::snapshot::SnapshotCache;
use berth_core::wire::JobWillRun;
use berth_db::snapshot::SchedJobRow;
use berth_db::{DbError, Pool};
use chrono::{DateTime, Utc};

/// Plans `job` (a row that is not stored: its id names no job) over the database's state
/// at `now` with the planner settings `config`, and says when and where it would start.
///
/// # Errors
/// [`DbError`] from reading the state.
#[tracing::instrument(skip_all, fields(job.id = job.id), err)]
pub async fn will_run(
    pool: &Pool,
    config: &PlannerConfig,
    job: SchedJobRow,
    now: DateTime<Utc>,
) -> Result<JobWillRun, DbError> {
    let (id, partition, held) = (job.id, job.partition.clone(), job.hold);
    // A future `--begin`: planned as if it could start now, then no earlier than then
    // (Slurm's will-run starts its test at the later of now and the begin time).
    let begin = job.begin_time.filter(|b| *b > now).map(|b| b.timestamp());
    let job = SchedJobRow {
        begin_time: None,
        ..job
    };
    let not_before = |start: i64| begin.map_or(start, |b| start.max(b));
    let input = SnapshotCache::read_with(pool, now, config, job).await?;
    let snapshot = &input.snapshot;
    let plan = planner::plan(snapshot, config);
    let asked_cpus = snapshot
        .pending
        .iter()
        .find(|p| p.id == id)
        .map_or(0, |p| p.cpus);
    let answer = |start: Option<i64>, placements: &[Placement], reason: Option<String>| {
        let placed: u32 = placements.iter().map(|p| p.cpus).sum();
        JobWillRun {
            job_id: id,
            start_time: start.and_then(|s| DateTime::from_timestamp(s, 0)),
            nodes: placements
                .iter()
                .filter_map(|p| snapshot.nodes.iter().find(|n| n.id == p.node_id))
                .map(|n| n.name.clone())
                .collect(),
            cpus: if placed > 0 { placed } else { asked_cpus },
            partition: partition.clone(),
            reason,
        }
    };
    if let Some(start) = plan.starts.iter().find(|s| s.job_id == id) {
        return Ok(answer(
            Some(not_before(snapshot.now)),
            &start.placements,
            None,
        ));
    }
    let reason = plan
        .pending
        .iter()
        .find(|w| w.job_id == id)
        .map(|w| w.reason.clone())
        // A held job (`--hold`) is not planned at all.
        .or_else(|| held.then(|| "JobHeldUser".to_string()));
    Ok(match plan.reservations.iter().find(|r| r.job_id == id) {
        Some(r) => answer(Some(not_before(r.start)), &r.placements, reason),
        None => answer(None, &[], reason),
    })
}
