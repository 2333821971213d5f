//! The worker protocol: registration, the long-poll sync (heartbeat, reports, samples in;
//! assignments and cancellations out) and applying job reports exactly once.
//!
//! Every report names a job run, and is applied only when that run is the reporting
//! node's: it holds (or held) the run's batch allocation, or, when the database forgot
//! the placement (a failover with asynchronous replication lost its last commits), the
//! report carries the run's grant ([`crate::run_grant`]). Anything else is refused for
//! that report alone, logged with the node and the job, and listed in the answer
//! ([`SyncResponse::rejected`]) so that the worker stops sending it; so is a report that
//! can never apply. A database that remembers fewer of the node's reports than the
//! worker was told it took (its `acked_seq`) asks the worker to send them again
//! ([`SyncResponse::resend_after`]): the worker's journal, not the database's older
//! memory, decides what ran.

use crate::auth::Keys;
use crate::error::ApiError;
use berth_core::signal::{SignalDelivery, SignalTarget};
use berth_core::state::JobState;
use berth_core::step::{PtyInput, StepTaskKey, StepTaskLaunch, StepTaskReport};
use berth_core::wire::{
    Assignment, Cancellation, Interruption, JobReport, LaunchFault, NodeRegister, RejectedReport,
    ReportKind, ReportSource, RunLimit, RunningJob, SyncRequest, SyncResponse,
};
use berth_db::job::JobRow;
use berth_db::node::{GpuInsert, NodeRow};
use berth_db::{
    allocation, job, node, node_report, notify, preemption, signal, step, DbError, Pool,
};
use std::collections::{BTreeMap, HashMap, HashSet};

/// The longest a sync may be held, seconds.
pub const MAX_WAIT_SECONDS: u32 = 60;

/// The most devices a node may register: the scheduler places jobs on at most this many
/// per node.
pub const MAX_NODE_DEVICES: usize = 128;

/// Registers (or re-registers) a node with its inventory.
///
/// # Errors
/// 400 for an empty name, out-of-range numbers, a device index listed twice, more than
/// [`MAX_NODE_DEVICES`] devices, or a MIG instance or shard not naming its GPU (and a
/// whole GPU naming one); 503 when the database is unreachable.
pub async fn register(pool: &Pool, req: &NodeRegister) -> Result<NodeRow, ApiError> {
    if req.name.is_empty()
        || !req
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
    {
        return Err(ApiError::bad_field(
            "name",
            "node names use letters, digits, '_', '.' and '-'",
        ));
    }
    let gpus: Vec<GpuInsert> = req
        .gpus
        .iter()
        .map(|g| {
            Ok(GpuInsert {
                index: i32::try_from(g.index)
                    .map_err(|_| ApiError::bad_field("gpus.index", "too large"))?,
                uuid: g.uuid.clone(),
                model: g.model.clone(),
                memory_mib: i64::try_from(g.memory_mib)
                    .map_err(|_| ApiError::bad_field("gpus.memory_mib", "too large"))?,
                domain: g
                    .domain
                    .map(|d| {
                        i32::try_from(d)
                            .map_err(|_| ApiError::bad_field("gpus.domain", "too large"))
                    })
                    .transpose()?,
                kind: g.kind.as_str().to_string(),
                parent: g
                    .parent
                    .map(|p| {
                        i32::try_from(p)
                            .map_err(|_| ApiError::bad_field("gpus.parent", "too large"))
                    })
                    .transpose()?,
            })
        })
        .collect::<Result<_, ApiError>>()?;
    if gpus.len() > MAX_NODE_DEVICES {
        return Err(ApiError::bad_field(
            "gpus",
            format!(
                "{} devices: a node offers at most {MAX_NODE_DEVICES} (GPUs, MIG instances and shards)",
                gpus.len()
            ),
        ));
    }
    if let Some(bad) = gpus
        .iter()
        .find(|g| (g.kind == "gpu") != g.parent.is_none())
    {
        return Err(ApiError::bad_field(
            "gpus.parent",
            format!(
                "device {}: a MIG instance or shard names the GPU it is part of; a whole GPU names none",
                bad.index
            ),
        ));
    }
    let mut seen = HashSet::new();
    if let Some(dup) = gpus.iter().find(|g| !seen.insert(g.index)) {
        return Err(ApiError::bad_field(
            "gpus.index",
            format!("GPU index {} is listed twice", dup.index),
        ));
    }
    crate::nodes::check_features("features", &req.features)?;
    let reported = node::NodeReported {
        cpus: i32::try_from(req.cpus).map_err(|_| ApiError::bad_field("cpus", "too large"))?,
        memory_mib: i64::try_from(req.memory_mib)
            .map_err(|_| ApiError::bad_field("memory_mib", "too large"))?,
        features: req.features.clone(),
        weight: req
            .weight
            .map(|w| i32::try_from(w).map_err(|_| ApiError::bad_field("weight", "too large")))
            .transpose()?,
        // One domain per CPU id, or none; a domain number fits a GPU domain's column.
        cpu_domains: if req.cpu_domains.len() == req.cpus as usize {
            req.cpu_domains
                .iter()
                .map(|d| {
                    i32::try_from(*d).map_err(|_| ApiError::bad_field("cpu_domains", "too large"))
                })
                .collect::<Result<_, _>>()?
        } else if req.cpu_domains.is_empty() {
            Vec::new()
        } else {
            return Err(ApiError::bad_field(
                "cpu_domains",
                format!(
                    "{} domains for {} CPUs: one per CPU id, or none",
                    req.cpu_domains.len(),
                    req.cpus
                ),
            ));
        },
    };
    let mut reported = reported;
    let mut tx = berth_db::begin(pool).await?;
    // A cloud pool's node: it registers while POWERING_UP (its instance booted) or in
    // service (its worker restarted); a slot without an instance has no worker.
    let slot = berth_db::cloud::pool_slot_lock_in_tx(&mut tx, &req.name).await?;
    if let Some(slot) = &slot {
        if matches!(slot.state.as_str(), "POWERED_DOWN" | "POWERING_DOWN") {
            return Err(ApiError::Conflict {
                code: "node_powered_down",
                detail: format!(
                    "node {} of pool {} is {}: its instance is gone or going",
                    req.name, slot.pool, slot.state
                ),
            });
        }
        for f in &slot.features {
            if !reported.features.contains(f) {
                reported.features.push(f.clone());
            }
        }
    }
    node::node_register_reported_in_tx(&mut tx, &req.name, &req.hostname, &reported, &gpus).await?;
    if slot.is_some()
        && berth_db::cloud::pool_slot_joined_in_tx(&mut tx, &req.name, chrono::Utc::now()).await?
    {
        tracing::info!(node.name = %req.name, "pool node joined: in service");
    }
    notify::notify(&mut *tx, notify::JOBS_CHANNEL, "node").await?;
    tx.commit().await.map_err(DbError::from)?;
    node::node_get_by_name(pool, &req.name)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("node {} vanished", req.name)))
}

/// The end state of a run from a worker's exit report, by Slurm's rules: the time limit
/// wins over whatever signal ended the script, then cancellation, then the exit status.
pub fn end_state(report: &JobReport) -> JobState {
    if report.kind == ReportKind::LaunchFailed {
        JobState::Failed
    } else if report.timed_out {
        JobState::Timeout
    } else if report.cancelled {
        JobState::Cancelled
    } else if report.out_of_memory {
        JobState::OutOfMemory
    } else if report.exit_code == Some(0) && report.signal.is_none() {
        JobState::Completed
    } else {
        JobState::Failed
    }
}

/// Batch launches that fail in a row on one node for a reason of the node before it is
/// drained ("batch job launch failure"; Slurm drains at the first).
pub const LAUNCH_FAILURES_BEFORE_DRAIN: i32 = 3;

/// Distinct nodes on which one job's launch failed for a reason of the node before the job
/// is requeued held ([`job::LAUNCH_FAILED_HELD`]) instead of going back to the queue: a
/// job that no node can launch does not move from node to node for ever (one broken node
/// is drained before it holds a job).
pub const LAUNCH_FAILURES_BEFORE_HOLD: i64 = 3;

/// Why a report was not applied.
#[derive(Debug)]
pub enum ReportFailure {
    /// Refused for good: the HTTP status the report alone would get (403 not this
    /// node's run, 400 a bad field) and why.
    Refused {
        /// 400, 403 or 422.
        status: u16,
        /// Why, for the worker's log.
        detail: String,
    },
    /// The database failed: a transient failure (unreachable, a deadlock) fails the whole
    /// sync so that the worker sends it again; one the report itself causes (a constraint
    /// it violates) is refused as 422.
    Db(DbError),
}

impl From<DbError> for ReportFailure {
    fn from(e: DbError) -> Self {
        ReportFailure::Db(e)
    }
}

impl From<sqlx::Error> for ReportFailure {
    fn from(e: sqlx::Error) -> Self {
        ReportFailure::Db(DbError::from(e))
    }
}

fn refused(status: u16, detail: impl Into<String>) -> ReportFailure {
    ReportFailure::Refused {
        status,
        detail: detail.into(),
    }
}

fn not_placed(job_id: i64, run: i32, node: &str) -> ReportFailure {
    refused(
        403,
        format!("job {job_id} run {run} is not placed on node {node}"),
    )
}

/// Refuses (409) a message of incarnation `theirs` about job `job_id`, whose record is of
/// incarnation `ours`: another job had this id (a failover to a standby that lost the last
/// commits handed it out again). Logged with the node: it is never applied.
fn other_incarnation(
    node: &str,
    what: &str,
    job_id: i64,
    run: i32,
    theirs: Option<berth_core::wire::Incarnation>,
    ours: uuid::Uuid,
) -> Result<(), ReportFailure> {
    if berth_core::wire::same_incarnation(theirs, Some(ours)) {
        return Ok(());
    }
    let theirs = theirs.map(|t| t.to_string()).unwrap_or_default();
    tracing::warn!(node.name = %node, job.id = job_id, job.run = run, report.incarnation = %theirs,
        job.incarnation = %ours, what,
        "a report of another job that had this id (before a database failover) refused");
    Err(refused(
        409,
        format!(
            "{what} of job {job_id} run {run} is of another job that had this id (incarnation \
             {theirs}; the job's is {ours}): a database failover handed the id out again"
        ),
    ))
}

/// How a report's run is known to be the reporting node's.
enum Authority {
    /// The node holds (or held) the batch allocation of the run.
    Placed {
        gpus: Vec<i32>,
        cpu_ids: Vec<i32>,
        mem_mib: i64,
        exclusive: bool,
    },
    /// The database has no allocation of the run on the node, but the report carries the
    /// run's grant: the database forgot the placement (a failover).
    Granted(crate::run_grant::RunGrant),
}

/// Whether run `run` of job `job_id` is `node_row`'s to report on: it holds (or held) the
/// run's batch allocation (node index 0), or `grant` proves that the run was placed
/// there.
async fn authorize(
    pool: &Pool,
    keys: &Keys,
    node_row: &NodeRow,
    job_id: i64,
    run: i32,
    incarnation: Option<berth_core::wire::Incarnation>,
    grant: Option<&str>,
) -> Result<Authority, ReportFailure> {
    match allocation::allocation_run_on_node(pool, job_id, run, node_row.id).await? {
        Some(a) if a.node_index == 0 => Ok(Authority::Placed {
            gpus: a.gpu_indices,
            cpu_ids: a.cpu_ids,
            mem_mib: a.mem_mib,
            exclusive: false,
        }),
        Some(_) => Err(refused(
            403,
            format!(
                "node {} holds a share of job {job_id} run {run} but does not run its batch script",
                node_row.name
            ),
        )),
        None => grant
            .and_then(|g| {
                crate::run_grant::verify(keys, g, job_id, run, incarnation, &node_row.name)
            })
            .map(Authority::Granted)
            .ok_or_else(|| not_placed(job_id, run, &node_row.name)),
    }
}

/// Applies one report from `node_row` in its own transaction; a report seen before
/// changes nothing. `ends_in_sync` says the same sync also carries the end of the run (a
/// run the database forgot is then ended, not taken back).
///
/// The run must be the node's ([`authorize`]): its batch allocation, or the run's grant
/// when the database forgot the placement. A launch that failed for a reason of the node
/// ([`LaunchFault::Node`]) requeues the job (held after [`LAUNCH_FAILURES_BEFORE_HOLD`]);
/// [`LAUNCH_FAILURES_BEFORE_DRAIN`] node failures in a row drain the node. A run the
/// database forgot (the job PENDING in the same run) is taken back when its start is
/// reported, or ended with the reported end.
///
/// # Errors
/// [`ReportFailure::Refused`] for a run that is not the node's or an out-of-range run;
/// [`ReportFailure::Db`] when the database fails.
pub async fn apply_report(
    pool: &Pool,
    keys: &Keys,
    node_row: &NodeRow,
    report: &JobReport,
    ends_in_sync: bool,
) -> Result<(), ReportFailure> {
    let kind = match report.kind {
        ReportKind::Started => "started",
        ReportKind::Exited => "exited",
        ReportKind::LaunchFailed => "launch_failed",
    };
    let run = i32::try_from(report.run)
        .map_err(|_| refused(400, format!("reports.run: {} is too large", report.run)))?;
    let authority = authorize(
        pool,
        keys,
        node_row,
        report.job_id,
        run,
        report.incarnation,
        report.grant.as_deref(),
    )
    .await?;
    let mut tx = berth_db::begin(pool).await?;
    let Some(current) = job::job_lock_in_tx(&mut tx, report.job_id).await? else {
        return Err(not_placed(report.job_id, run, &node_row.name));
    };
    // Another job's report, before anything of it is written (its event would otherwise
    // stand for this job's own report of the same kind).
    other_incarnation(
        &node_row.name,
        "a report",
        report.job_id,
        run,
        report.incarnation,
        current.incarnation,
    )?;
    if let Authority::Granted(grant) = &authority {
        other_incarnation(
            &node_row.name,
            "a run grant",
            report.job_id,
            run,
            grant.inc,
            current.incarnation,
        )?;
    }
    // The grant is the worker's to keep, not part of the job's history; usage figures
    // no kernel reports (negative CPU time, a peak beyond 2^40 MiB) are left out, so that
    // accounting reads only what fits its columns.
    let mut detail = serde_json::to_value(report).unwrap_or_default();
    if let Some(map) = detail.as_object_mut() {
        map.remove("grant");
        if report
            .cpu_time_seconds
            .is_some_and(|s| !(0.0..1e15).contains(&s))
        {
            map.remove("cpu_time_seconds");
        }
        if report.max_rss_mib.is_some_and(|m| m > 1 << 40) {
            map.remove("max_rss_mib");
        }
    }
    let first = job::job_event_insert(
        &mut *tx,
        report.job_id,
        kind,
        run,
        Some(&node_row.name),
        detail,
    )
    .await?;
    if !first {
        tx.commit().await?;
        return Ok(());
    }
    let same_run = current.restart_count == run;
    let forgotten = same_run && current.state == "PENDING";
    if matches!(authority, Authority::Granted(_))
        && report.cancelled
        && !allocation::allocation_batch_nodes_of_run(&mut *tx, report.job_id, run)
            .await?
            .is_empty()
    {
        // The database forgot this node's placement and placed the run elsewhere since;
        // this node's copy was stopped: its end is not the job's.
        tx.commit().await?;
        return Ok(());
    }
    if report.kind == ReportKind::Started {
        node_report::node_launch_failures_reset(&mut *tx, node_row.id).await?;
        if forgotten && !ends_in_sync {
            take_back_in_tx(&mut tx, node_row, &current, run, report, authority).await?;
        }
        tx.commit().await?;
        return Ok(());
    }
    let fault = match report.kind {
        ReportKind::LaunchFailed => report.launch_fault.unwrap_or(LaunchFault::Job),
        _ => LaunchFault::Job,
    };
    if report.kind == ReportKind::LaunchFailed && fault == LaunchFault::Node {
        launch_failed_by_node_in_tx(&mut tx, node_row, &current, run, report).await?;
    } else if report.kind == ReportKind::Exited && report.node_failed && same_run && forgotten {
        // The node stopped a run the database forgot (its lease ran out): the run is
        // gone; the job stays PENDING, in the next run so that this one is never placed
        // again.
        if job::job_skip_run_in_tx(
            &mut tx,
            report.job_id,
            run,
            &node_row.name,
            "the node stopped a run the database had forgotten",
        )
        .await?
        {
            notify::notify(&mut *tx, notify::JOBS_CHANNEL, &report.job_id.to_string()).await?;
        }
    } else if report.kind == ReportKind::Exited && report.node_failed && same_run {
        // The node stopped the run (its lease ran out, or its worker stopped with its
        // jobs): a node failure, as the scheduler's node timeout would have made it.
        match job::job_node_fail_in_tx(&mut tx, report.job_id, run, &node_row.name).await? {
            job::NodeFailOutcome::Unchanged => {}
            outcome => {
                tracing::info!(job.id = report.job_id, node.name = %node_row.name, ?outcome, "run stopped by its node")
            }
        }
        end_run_in_tx(&mut tx, node_row, report.job_id, run).await?;
    } else if forgotten {
        // The database forgot the run; the node ran it to its end: that end is the job's.
        let state = end_state(report);
        let reason = launch_failed_reason(node_row, report);
        if job::job_finish_forgotten_in_tx(
            &mut tx,
            report.job_id,
            run,
            state.as_str(),
            reason.as_deref(),
            report.exit_code,
            report.signal,
            report.at,
        )
        .await?
        .is_some()
        {
            allocation::allocation_release_job_in_tx(&mut tx, report.job_id, run).await?;
            notify::notify(&mut *tx, notify::JOBS_CHANNEL, &report.job_id.to_string()).await?;
            tracing::warn!(job.id = report.job_id, job.run = run, node.name = %node_row.name, state = %state,
                "the database had forgotten this run; the node's report of its end is accepted");
        }
    } else if same_run {
        // The TIMEOUT decision recorded before the first signal holds, whatever signal
        // ended the script and whatever the report says.
        let mut report = report.clone();
        if report.kind == ReportKind::Exited
            && job::job_event_exists(&mut *tx, report.job_id, run, "time_limit").await?
        {
            report.timed_out = true;
        }
        let report = &report;
        let state = end_state(report);
        let reason = launch_failed_reason(node_row, report);
        job::job_finish_in_tx(
            &mut tx,
            report.job_id,
            run,
            state.as_str(),
            reason.as_deref(),
            report.exit_code,
            report.signal,
        )
        .await?;
        end_run_in_tx(&mut tx, node_row, report.job_id, run).await?;
        tracing::info!(job.id = report.job_id, node.name = %node_row.name, state = %state, "job ended");
    } else {
        // A run left behind by a requeue (scontrol requeue, node failure, preemption) is
        // gone: its GPUs are free for the next run.
        allocation::allocation_release_job_in_tx(&mut tx, report.job_id, run).await?;
        step::step_end_all_for_job_in_tx(&mut tx, report.job_id, run).await?;
        notify::notify(&mut *tx, notify::JOBS_CHANNEL, &report.job_id.to_string()).await?;
        tracing::info!(job.id = report.job_id, job.run = run, node.name = %node_row.name, "earlier run ended");
    }
    preemption::preemption_done_in_tx(&mut tx, report.job_id, run).await?;
    tx.commit().await?;
    Ok(())
}

/// The job's reason for a launch that failed for its own fault.
fn launch_failed_reason(node_row: &NodeRow, report: &JobReport) -> Option<String> {
    (report.kind == ReportKind::LaunchFailed).then(|| {
        format!(
            "launch failed on {}: {}",
            node_row.name,
            report.message.as_deref().unwrap_or("unknown error")
        )
    })
}

/// Releases an ended run's allocations, ends its steps and wakes the job's other nodes
/// (they stop its step tasks).
async fn end_run_in_tx(
    tx: &mut sqlx::PgConnection,
    node_row: &NodeRow,
    job_id: i64,
    run: i32,
) -> Result<(), DbError> {
    allocation::allocation_release_job_in_tx(tx, job_id, run).await?;
    step::step_end_all_for_job_in_tx(tx, job_id, run).await?;
    notify::notify(&mut *tx, notify::JOBS_CHANNEL, &job_id.to_string()).await?;
    for a in allocation::allocation_list_for_jobs(&mut *tx, &[job_id]).await? {
        if a.node_name != node_row.name {
            notify::notify(&mut *tx, notify::NODE_CHANNEL, &a.node_name).await?;
        }
    }
    Ok(())
}

/// A batch launch failed for a reason of the node (Slurm's "batch job launch failure"):
/// the job goes back to the queue (held after [`LAUNCH_FAILURES_BEFORE_HOLD`] such
/// failures), and the failure counts towards draining the node. A job cancelled meanwhile
/// ends as it is.
async fn launch_failed_by_node_in_tx(
    tx: &mut sqlx::PgConnection,
    node_row: &NodeRow,
    current: &JobRow,
    run: i32,
    report: &JobReport,
) -> Result<(), DbError> {
    let job_id = report.job_id;
    let message = report.message.as_deref().unwrap_or("unknown error");
    let held = job::job_launch_failures(&mut *tx, job_id).await? >= LAUNCH_FAILURES_BEFORE_HOLD;
    let requeued = if current.restart_count != run {
        false
    } else if current.state == "PENDING" {
        // The database forgot the run: never place it again under this number.
        job::job_skip_run_in_tx(tx, job_id, run, &node_row.name, message).await?
    } else {
        job::job_requeue_launch_failed_in_tx(tx, job_id, run, &node_row.name, message, held)
            .await?
            .is_some()
    };
    if requeued {
        tracing::warn!(job.id = job_id, job.run = run, node.name = %node_row.name, held, error = %message,
            "batch launch failed on the node; job requeued");
    } else if current.restart_count == run {
        // Cancelled (or otherwise ended) meanwhile: it keeps its end.
        job::job_finish_in_tx(
            tx,
            job_id,
            run,
            JobState::Failed.as_str(),
            launch_failed_reason(node_row, report).as_deref(),
            None,
            None,
        )
        .await?;
    }
    end_run_in_tx(tx, node_row, job_id, run).await?;
    let failures = node_report::node_launch_failed_in_tx(tx, node_row.id).await?;
    if failures >= LAUNCH_FAILURES_BEFORE_DRAIN {
        let short: String = message.chars().take(200).collect();
        let reason = format!("batch job launch failure: {short}");
        if node::node_drain(&mut *tx, node_row.id, &reason).await? {
            tracing::warn!(node.name = %node_row.name, failures, %reason, "node drained");
        }
        node_report::node_launch_failures_reset(&mut *tx, node_row.id).await?;
    }
    Ok(())
}

/// The node reports the start of a run the database forgot (the job is PENDING in that
/// run, as after a failover that lost the placement): the run is taken back (its
/// allocation written again with the GPUs of its placement, the job RUNNING) so that it
/// is neither stopped nor started a second time elsewhere. When it cannot be (its GPUs are
/// held by another job now, or it spans several nodes), the job moves on to the next run
/// and the node is told to stop this one.
async fn take_back_in_tx(
    tx: &mut sqlx::PgConnection,
    node_row: &NodeRow,
    current: &JobRow,
    run: i32,
    report: &JobReport,
    authority: Authority,
) -> Result<(), DbError> {
    let job_id = current.id;
    if !allocation::allocation_list_for_run(&mut *tx, job_id, run)
        .await?
        .is_empty()
    {
        return Ok(());
    }
    let (gpus, cpu_ids, mem_mib, exclusive) = match authority {
        Authority::Placed {
            gpus,
            cpu_ids,
            mem_mib,
            exclusive,
        } => (gpus, cpu_ids, mem_mib, exclusive),
        Authority::Granted(grant) => (grant.gpus, grant.cpu_ids, grant.mem_mib, grant.exclusive),
    };
    let why = if current.num_nodes > 1 {
        Some("a multi-node run cannot be taken back from one node".to_string())
    } else {
        let mut sp = sqlx::Acquire::begin(&mut *tx).await?;
        let inserted = match allocation::allocation_insert_in_tx(
            &mut sp,
            &allocation::AllocationInsert {
                job_id,
                run,
                node_id: node_row.id,
                node_index: 0,
                gpu_indices: &gpus,
                cpu_ids: &cpu_ids,
                mem_mib,
                exclusive,
                term: 0,
            },
        )
        .await
        {
            Ok(_) => true,
            Err(DbError::Conflict { .. }) => false,
            Err(e) => return Err(e),
        };
        if inserted && job::job_adopt_in_tx(&mut sp, job_id, run, &node_row.name, report.at).await?
        {
            sp.commit().await?;
            None
        } else {
            sp.rollback().await?;
            Some(format!(
                "its GPUs {gpus:?} or CPUs {cpu_ids:?} on {} are held by another job now",
                node_row.name
            ))
        }
    };
    match why {
        None => {
            notify::notify(&mut *tx, notify::JOBS_CHANNEL, &job_id.to_string()).await?;
            tracing::warn!(job.id = job_id, job.run = run, node.name = %node_row.name,
                "the database had forgotten this running run; taken back");
        }
        Some(why) => {
            job::job_skip_run_in_tx(tx, job_id, run, &node_row.name, &why).await?;
            tracing::warn!(job.id = job_id, job.run = run, node.name = %node_row.name, %why,
                "the database had forgotten this running run and cannot take it back; the job moves on to its next run");
        }
    }
    Ok(())
}

/// Applies a sync's time-limit notices, job reports and step reports, each on its own:
/// one refused (not the node's, or one that can never apply) is listed with why and the
/// others go on. The job reports are applied in order.
///
/// # Errors
/// 503 when the database is unreachable (or another transient failure): the sync fails
/// as a whole and the worker sends it again.
pub async fn apply_reports(
    pool: &Pool,
    keys: &Keys,
    node_row: &NodeRow,
    req: &SyncRequest,
) -> Result<Vec<RejectedReport>, ApiError> {
    let mut rejected = Vec::new();
    for expired in &req.time_limits {
        let outcome = record_time_limit(pool, node_row, expired).await;
        settle(outcome, &mut rejected, node_row, || RejectedReport {
            source: ReportSource::TimeLimit,
            job_id: expired.job_id,
            run: expired.run,
            seq: None,
            task: None,
            status: 0,
            detail: String::new(),
        })?;
    }
    let ended: HashSet<(i64, u32)> = req
        .reports
        .iter()
        .filter(|r| r.kind != ReportKind::Started)
        .map(|r| (r.job_id, r.run))
        .collect();
    for report in &req.reports {
        let ends_in_sync = ended.contains(&(report.job_id, report.run));
        let outcome = apply_report(pool, keys, node_row, report, ends_in_sync).await;
        settle(outcome, &mut rejected, node_row, || RejectedReport {
            source: ReportSource::JobReport,
            job_id: report.job_id,
            run: report.run,
            seq: report.seq,
            task: None,
            status: 0,
            detail: String::new(),
        })?;
    }
    for report in &req.step_reports {
        let outcome = apply_step_report(pool, node_row, report).await;
        settle(outcome, &mut rejected, node_row, || RejectedReport {
            source: ReportSource::StepReport,
            job_id: report.key.job_id,
            run: report.key.run,
            seq: None,
            task: Some(report.key),
            status: 0,
            detail: String::new(),
        })?;
    }
    Ok(rejected)
}

/// The highest report sequence number of `node_row` the database remembers applying.
///
/// # Errors
/// 503 when the database is unreachable.
pub async fn reports_remembered(pool: &Pool, node_row: &NodeRow) -> Result<u64, ApiError> {
    Ok(u64::try_from(node_report::node_report_seq(pool, node_row.id).await?).unwrap_or(0))
}

/// What the database remembers of `node_row`'s report stream: the highest report
/// sequence number applied and the highest job id its worker said it remembers.
///
/// # Errors
/// 503 when the database is unreachable.
pub async fn report_state(
    pool: &Pool,
    node_row: &NodeRow,
) -> Result<node_report::NodeReportState, ApiError> {
    Ok(node_report::node_report_state(pool, node_row.id).await?)
}

/// When the worker remembers a job id (`req.max_job_id`) above what the database has
/// recorded for its node (`seen`), records it and moves the job id sequence past it: after
/// a failover to a standby that lost the last commits, the promoted server's sequence is
/// behind the ids the lost primary gave out, and a new job must not take the id of a run a
/// worker remembers (its incarnation would still tell them apart).
///
/// # Errors
/// 503 when the database is unreachable.
pub async fn note_job_ids_seen(
    pool: &Pool,
    node_row: &NodeRow,
    req: &SyncRequest,
    seen: i64,
) -> Result<(), ApiError> {
    let Some(max) = req.max_job_id.filter(|&max| max > seen) else {
        return Ok(());
    };
    let mut conn = pool.acquire().await.map_err(DbError::from)?;
    if let Some(moved) = node_report::node_job_id_seen_raise(&mut conn, node_row.id, max).await? {
        tracing::warn!(node.name = %node_row.name, job_id_seen = max, sequence = moved,
            "the node remembers job ids this database had not given out (a failover lost the last commits?): the job id sequence moved past them");
    }
    Ok(())
}

/// When the database remembers (`remembered`, [`reports_remembered`]) fewer of this node's
/// reports than the worker was told it took (`req.acked_seq` above it: a failover lost the
/// last commits), the sequence number it remembers up to: the worker must send the
/// reports after it again before anything is decided. `None` when nothing was forgotten,
/// or when this sync is that resend (it carries reports numbered at or below
/// `acked_seq`).
pub fn forgotten_reports(node_row: &NodeRow, req: &SyncRequest, remembered: u64) -> Option<u64> {
    let acked = req.acked_seq?;
    let resending = req
        .reports
        .iter()
        .any(|r| r.seq.is_some_and(|seq| seq <= acked));
    if acked > remembered && !resending {
        tracing::warn!(node.name = %node_row.name, acked, remembered,
            "the database forgot reports it had acknowledged; asking the worker for them again");
        return Some(remembered);
    }
    None
}

/// Records the highest report sequence number this sync has taken from the node (its
/// `acked_seq` or a report's, whichever is higher): the worker's numbering decides, so a
/// worker whose journal started again lowers it. Only over `remembered`, the number read
/// before the reports were applied: one that moved meanwhile (a failover) stays, so that
/// the answer's last check ([`forgotten_reports`]) still sees what was lost.
///
/// # Errors
/// 503 when the database is unreachable.
pub async fn note_reports_taken(
    pool: &Pool,
    node_row: &NodeRow,
    req: &SyncRequest,
    remembered: u64,
) -> Result<(), ApiError> {
    let Some(acked) = req.acked_seq else {
        return Ok(());
    };
    let top = req
        .reports
        .iter()
        .filter_map(|r| r.seq)
        .fold(acked, u64::max);
    let int = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    node_report::node_report_seq_set(pool, node_row.id, int(top), int(remembered)).await?;
    Ok(())
}

/// Whether a database error is the report's own doing (it can never apply) rather than a
/// passing failure.
fn is_permanent(e: &DbError) -> bool {
    matches!(
        e,
        DbError::Check { .. }
            | DbError::ForeignKey { .. }
            | DbError::Conflict { .. }
            | DbError::InvalidText(_)
    )
}

/// Lists a refused report (logging it with the node and the job), or fails the sync for a
/// transient database failure.
fn settle(
    outcome: Result<(), ReportFailure>,
    rejected: &mut Vec<RejectedReport>,
    node_row: &NodeRow,
    which: impl Fn() -> RejectedReport,
) -> Result<(), ApiError> {
    let (status, detail) = match outcome {
        Ok(()) => return Ok(()),
        Err(ReportFailure::Refused { status, detail }) => (status, detail),
        Err(ReportFailure::Db(e)) if is_permanent(&e) => {
            let entry = which();
            tracing::error!(node.name = %node_row.name, job.id = entry.job_id, job.run = entry.run,
                error = &e as &dyn std::error::Error, "a report can never apply to its job's record; set aside");
            (
                422,
                format!(
                    "the report cannot apply to job {}'s record (refused by the database's {})",
                    entry.job_id,
                    e.constraint().unwrap_or("rules")
                ),
            )
        }
        Err(ReportFailure::Db(e)) => return Err(e.into()),
    };
    let mut entry = which();
    entry.status = status;
    entry.detail = detail;
    tracing::warn!(node.name = %node_row.name, job.id = entry.job_id, job.run = entry.run,
        seq = entry.seq, source = ?entry.source, status, detail = %entry.detail, "report refused");
    rejected.push(entry);
    Ok(())
}

/// The CPUs an allocation holds on its node (the number of its CPU ids); `None` for an
/// allocation not placed by CPU.
fn placed_cpus(cpu_ids: &[i32]) -> Option<u32> {
    (!cpu_ids.is_empty()).then_some(cpu_ids.len() as u32)
}

/// The memory an allocation holds on its node, MiB; `None` for an allocation not placed
/// by memory (0).
fn placed_memory_mib(mem_mib: i64) -> Option<u64> {
    (mem_mib > 0).then_some(mem_mib as u64)
}

/// CPUs the job uses on one node: `--cpus-per-task` × its tasks per node
/// (`--ntasks-per-node`, else its tasks spread evenly).
fn cpus_on_node(job: &JobRow, spec: &berth_core::spec::JobSpec) -> u32 {
    let nodes = job.num_nodes.max(1) as u32;
    let tasks = spec
        .ntasks_per_node
        .unwrap_or_else(|| (job.num_tasks.max(1) as u32).div_ceil(nodes));
    (job.cpus_per_task.max(1) as u32).saturating_mul(tasks.max(1))
}

/// The job's memory on one node, MiB: `--mem` (0 means the whole node: no limit), else
/// `--mem-per-gpu` × its GPUs there, else `--mem-per-cpu` × its CPUs there.
fn memory_limit_mib(job: &JobRow, spec: &berth_core::spec::JobSpec, gpus: u64) -> Option<u64> {
    if let Some(mem) = job.mem_mib.or(spec.mem_mib.map(|m| m as i64)) {
        return (mem > 0).then_some(mem as u64);
    }
    if let (Some(per_gpu), true) = (spec.mem_per_gpu_mib, gpus > 0) {
        return Some(per_gpu * gpus);
    }
    spec.mem_per_cpu_mib
        .map(|per_cpu| per_cpu * u64::from(cpus_on_node(job, spec)))
}

/// Records that a job run of the node reached its time limit (once per run, only for a
/// run still current and RUNNING): its end state is TIMEOUT.
///
/// # Errors
/// [`ReportFailure::Refused`] for a run not placed on this node or out of range;
/// [`ReportFailure::Db`] when the database fails.
pub async fn record_time_limit(
    pool: &Pool,
    node_row: &NodeRow,
    expired: &RunningJob,
) -> Result<(), ReportFailure> {
    let run = i32::try_from(expired.run).map_err(|_| {
        refused(
            400,
            format!("time_limits.run: {} is too large", expired.run),
        )
    })?;
    match allocation::allocation_run_on_node(pool, expired.job_id, run, node_row.id).await? {
        Some(a) if a.node_index == 0 => {}
        _ => return Err(not_placed(expired.job_id, run, &node_row.name)),
    }
    let mut tx = berth_db::begin(pool).await?;
    let Some(current) = job::job_lock_in_tx(&mut tx, expired.job_id).await? else {
        return Err(not_placed(expired.job_id, run, &node_row.name));
    };
    other_incarnation(
        &node_row.name,
        "a time-limit notice",
        expired.job_id,
        run,
        expired.incarnation,
        current.incarnation,
    )?;
    if current.restart_count == run
        && current.state == "RUNNING"
        && !job::job_event_exists(&mut *tx, expired.job_id, run, "time_limit").await?
    {
        job::job_event_insert(
            &mut *tx,
            expired.job_id,
            "time_limit",
            run,
            Some(&node_row.name),
            serde_json::json!({ "time_limit": current.time_limit }),
        )
        .await?;
        tracing::info!(job.id = expired.job_id, job.run = run, node.name = %node_row.name, "time limit reached; TIMEOUT recorded");
    }
    tx.commit().await?;
    Ok(())
}

/// How long a job's token stays valid: its time limit plus a day, or 30 days when it
/// has none.
fn job_token_ttl(job: &JobRow) -> i64 {
    job.time_limit
        .map_or(30 * 86_400, |limit| limit.saturating_add(86_400))
}

/// The assignment of batch allocation `row` (of `job`) on node `node`: what the worker
/// runs, with the run's token and its grant ([`crate::run_grant`]).
fn assignment(
    keys: &Keys,
    job: &JobRow,
    row: &allocation::NodeAssignmentRow,
    node: &str,
) -> Assignment {
    let (run, gpus) = (row.run, &row.gpu_indices);
    let job_run = crate::auth::JobRun {
        job_id: job.id,
        run: run as u32,
        incarnation: job.incarnation,
    };
    let environment: BTreeMap<String, String> =
        serde_json::from_value(job.environment.clone()).unwrap_or_default();
    let spec: berth_core::spec::JobSpec =
        serde_json::from_value(job.spec.clone()).unwrap_or_default();
    Assignment {
        job_id: job.id,
        run: run as u32,
        name: job.name.clone(),
        user: job.user_name.clone(),
        account: job.account.clone(),
        partition: job.partition.clone(),
        script: job.script.clone(),
        script_args: job.script_args.clone(),
        submit_dir: job.submit_dir.clone(),
        work_dir: job.work_dir.clone(),
        stdout: job.stdout_pattern.clone(),
        stderr: job.stderr_pattern.clone(),
        open_mode: spec
            .open_mode
            .unwrap_or(berth_core::spec::OpenMode::Truncate),
        time_limit: job.time_limit.map(|t| t as u64),
        gpus: gpus.iter().map(|g| *g as u32).collect(),
        node_index: 0,
        nodes: row.node_names.clone(),
        ntasks: job.num_tasks as u32,
        cpus_per_task: spec.cpus_per_task,
        ntasks_per_node: spec.ntasks_per_node,
        environment,
        array_job_id: job.array_job_id,
        array_task_id: job.array_task_id.map(|t| t as u32),
        array_task_count: job.array_task_count.map(|c| c as u32),
        slurm_variables: crate::slurm_variables::slurm_variables(job, &spec, &row.node_names),
        gpus_per_task: spec.gpus_per_task,
        memory_limit_mib: placed_memory_mib(row.mem_mib)
            .or_else(|| memory_limit_mib(job, &spec, gpus.len() as u64)),
        cpu_limit: Some(placed_cpus(&row.cpu_ids).unwrap_or_else(|| cpus_on_node(job, &spec))),
        cpu_ids: to_u32s(&row.cpu_ids),
        warning_signal: spec
            .signal
            .as_deref()
            .and_then(berth_core::signal::parse_warning_signal),
        job_token: keys.mint_job_token(&job.user_name, job_run, job_token_ttl(job)),
        incarnation: Some(job.incarnation),
        grant: crate::run_grant::mint(
            keys,
            job_run,
            node,
            crate::run_grant::Share {
                gpus,
                cpu_ids: &row.cpu_ids,
                mem_mib: row.mem_mib,
                exclusive: row.exclusive,
            },
            job_token_ttl(job),
        ),
    }
}

/// Applies one step task report from `node_row`; a report seen before changes nothing.
/// Under `--kill-on-bad-exit`, a failed task wakes the nodes of the step's other tasks,
/// which are then told to stop them.
///
/// # Errors
/// [`ReportFailure::Refused`] for out-of-range numbers or a task not placed on this node;
/// [`ReportFailure::Db`] when the database fails.
pub async fn apply_step_report(
    pool: &Pool,
    node_row: &NodeRow,
    report: &StepTaskReport,
) -> Result<(), ReportFailure> {
    let key = step_key(&report.key).map_err(|e| refused(400, e.to_string()))?;
    let placement = step::step_task_placement(pool, key).await?;
    if placement.map(|(node, _)| node) != Some(node_row.id) {
        return Err(refused(
            403,
            format!(
                "task {} of step {}.{} in run {} is not placed on node {}",
                key.3, key.0, key.2, key.1, node_row.name
            ),
        ));
    }
    if let Some((_, incarnation)) = placement {
        other_incarnation(
            &node_row.name,
            "a step task report",
            key.0,
            key.1,
            report.incarnation,
            incarnation,
        )?;
    }
    match report.kind {
        ReportKind::Started => step::step_task_started(pool, key, report.at).await?,
        ReportKind::Exited | ReportKind::LaunchFailed => {
            let mut tx = berth_db::begin(pool).await?;
            let outcome = step::step_task_ended_in_tx(
                &mut tx,
                key,
                report.at,
                report.exit_code,
                report.signal,
                report.message.as_deref(),
            )
            .await?;
            for name in &outcome.kill_nodes {
                notify::notify(&mut *tx, notify::NODE_CHANNEL, name).await?;
            }
            tx.commit().await?;
            if outcome.applied {
                tracing::info!(job.id = key.0, step.id = key.2, task = key.3, node.name = %node_row.name,
                    exit_code = report.exit_code, signal = report.signal, step_ended = outcome.step_ended,
                    "step task ended");
            }
        }
    }
    Ok(())
}

fn step_key(key: &StepTaskKey) -> Result<(i64, i32, i32, i32), ApiError> {
    let int =
        |v: u32, field: &str| i32::try_from(v).map_err(|_| ApiError::bad_field(field, "too large"));
    Ok((
        key.job_id,
        int(key.run, "step_reports.key.run")?,
        int(key.step_id, "step_reports.key.step_id")?,
        int(key.task_id, "step_reports.key.task_id")?,
    ))
}

fn to_u32s(values: &[i32]) -> Vec<u32> {
    values
        .iter()
        .map(|v| u32::try_from(*v).unwrap_or(0))
        .collect()
}

/// What the node must start and stop, given what it runs now.
///
/// # Errors
/// 503 when the database is unreachable.
pub async fn desired(
    pool: &Pool,
    keys: &Keys,
    node_row: &NodeRow,
    req: &SyncRequest,
) -> Result<SyncResponse, ApiError> {
    use berth_core::wire::same_incarnation;
    // What the node runs, and what it reported ended, with their incarnations: a run of
    // another job that had the same id is not this job's (this one is assigned, that one
    // stopped).
    let running: HashMap<(i64, u32), Option<berth_core::wire::Incarnation>> = req
        .running
        .iter()
        .map(|r| ((r.job_id, r.run), r.incarnation))
        .collect();
    let reported_ended: HashMap<(i64, u32), Option<berth_core::wire::Incarnation>> = req
        .reports
        .iter()
        .filter(|r| r.kind != ReportKind::Started)
        .map(|r| ((r.job_id, r.run), r.incarnation))
        .collect();
    let mut assignments = Vec::new();
    for row in allocation::allocation_batch_list_for_node(pool, node_row.id).await? {
        let key = (row.job_id, row.run as u32);
        let known = |seen: &HashMap<_, Option<berth_core::wire::Incarnation>>| {
            seen.get(&key)
                .is_some_and(|&inc| same_incarnation(inc, Some(row.incarnation)))
        };
        if known(&running) || known(&reported_ended) {
            continue;
        }
        if let Some(job_row) = job::job_get(pool, row.job_id).await? {
            assignments.push(assignment(keys, &job_row, &row, &node_row.name));
        }
    }
    let job_ids: Vec<i64> = req.running.iter().map(|r| r.job_id).collect();
    let runs: Vec<i32> = req.running.iter().map(|r| r.run as i32).collect();
    let incarnations: Vec<uuid::Uuid> = req
        .running
        .iter()
        .map(|r| r.incarnation.unwrap_or_default())
        .collect();
    let stale = allocation::allocation_stale_runs_for_node(
        pool,
        node_row.id,
        &job_ids,
        &runs,
        &incarnations,
    )
    .await?;
    let stale_keys: HashSet<(i64, u32)> = stale.iter().map(|&(j, r)| (j, r as u32)).collect();
    let cancellations = if stale.is_empty() {
        Vec::new()
    } else {
        // A preempted run is killed when its QOS GraceTime ends, not after the kill wait.
        let (stale_ids, stale_runs): (Vec<i64>, Vec<i32>) = stale.iter().copied().unzip();
        let grace: HashMap<(i64, i32), i64> =
            preemption::preemption_grace_left(pool, &stale_ids, &stale_runs)
                .await?
                .into_iter()
                .map(|g| ((g.job_id, g.run), g.seconds))
                .collect();
        // A reclaimed run is stopped before its instance goes.
        let reclaimed: HashMap<(i64, i32), i64> =
            job::job_reclaim_times(pool, &stale_ids, &stale_runs)
                .await?
                .into_iter()
                .map(|r| ((r.job_id, r.run), r.seconds))
                .collect();
        let seconds = |s: i64| u32::try_from(s.max(0)).unwrap_or(u32::MAX);
        stale
            .into_iter()
            .map(|(job_id, run)| {
                let incarnation = running.get(&(job_id, run as u32)).copied().flatten();
                match reclaimed.get(&(job_id, run)) {
                    Some(&left) => Cancellation {
                        job_id,
                        run: run as u32,
                        preempted: false,
                        grace_seconds: Some(seconds(left)),
                        reclaimed: true,
                        incarnation,
                    },
                    None => {
                        let grace_seconds = grace.get(&(job_id, run)).map(|&s| seconds(s));
                        Cancellation {
                            job_id,
                            run: run as u32,
                            preempted: grace_seconds.is_some(),
                            grace_seconds,
                            reclaimed: false,
                            incarnation,
                        }
                    }
                }
            })
            .collect()
    };
    let run_limits = job::job_running_time_limits(pool, node_row.id, &job_ids, &runs)
        .await?
        .into_iter()
        .map(|l| RunLimit {
            job_id: l.job_id,
            run: l.run as u32,
            time_limit: l.time_limit.map(|t| t.max(0) as u64),
        })
        // A run being stopped (another job that had this id among them) keeps its own.
        .filter(|l| !stale_keys.contains(&(l.job_id, l.run)))
        .collect();
    let (step_tasks, step_cancellations) = desired_step_tasks(pool, keys, node_row, req).await?;
    let pty_input = pty_input(pool, node_row, req).await?;
    let signals = pending_signals(pool, node_row, req).await?;
    Ok(SyncResponse {
        assignments,
        cancellations,
        step_tasks,
        step_cancellations,
        pty_input,
        run_limits,
        rejected: Vec::new(),
        resend_after: None,
        lease_ms: None,
        signals,
    })
}

/// The terminal input the node has not applied yet for the `--pty` tasks it runs (what it
/// did apply is deleted).
async fn pty_input(
    pool: &Pool,
    node_row: &NodeRow,
    req: &SyncRequest,
) -> Result<Vec<PtyInput>, ApiError> {
    use base64::Engine as _;
    if req.pty_applied.is_empty() {
        return Ok(Vec::new());
    }
    let applied: Vec<((i64, i32, i32), i64)> = req
        .pty_applied
        .iter()
        .map(|a| {
            let run = i32::try_from(a.key.run).unwrap_or(i32::MAX);
            let step = i32::try_from(a.key.step_id).unwrap_or(i32::MAX);
            ((a.key.job_id, run, step), a.seq)
        })
        .collect();
    let mut conn = pool.acquire().await.map_err(DbError::from)?;
    let rows = step::step_input_for_node(&mut conn, node_row.id, &applied).await?;
    let size = |v: Option<i32>| v.and_then(|v| u16::try_from(v).ok());
    Ok(rows
        .into_iter()
        .map(|row| PtyInput {
            key: StepTaskKey {
                job_id: row.job_id,
                run: row.run as u32,
                step_id: row.step_id as u32,
                task_id: 0,
            },
            seq: row.seq,
            data: base64::engine::general_purpose::STANDARD.encode(&row.data),
            rows: size(row.rows),
            cols: size(row.cols),
        })
        .collect())
}

/// The signals the node must send (`scancel --signal`): those of its running runs that
/// its worker has not acknowledged, oldest first.
async fn pending_signals(
    pool: &Pool,
    node_row: &NodeRow,
    req: &SyncRequest,
) -> Result<Vec<SignalDelivery>, ApiError> {
    Ok(signal::job_signal_list_for_node(pool, node_row.id)
        .await?
        .into_iter()
        .filter(|row| !req.signals_delivered.contains(&row.id))
        .filter_map(|row| {
            Some(SignalDelivery {
                id: row.id,
                job_id: row.job_id,
                run: u32::try_from(row.run).ok()?,
                signal: row.signal,
                target: SignalTarget::from_stored(&row.target)?,
                step: row.step_id.and_then(|s| u32::try_from(s).ok()),
                incarnation: Some(row.incarnation),
            })
        })
        .collect())
}

/// Forgets the signals the worker says it has dealt with ([`SyncRequest::signals_delivered`]:
/// sent, or dropped for a run it no longer runs), and the node's signals of runs that
/// left it, so that each is sent once.
///
/// # Errors
/// 503 when the database is unreachable.
pub async fn ack_signals(
    pool: &Pool,
    node_row: &NodeRow,
    req: &SyncRequest,
) -> Result<(), ApiError> {
    if req.signals_delivered.is_empty() {
        return Ok(());
    }
    let gone = signal::job_signal_ack(pool, node_row.id, &req.signals_delivered).await?;
    tracing::debug!(node.name = %node_row.name, acknowledged = req.signals_delivered.len(), gone, "signals acknowledged");
    Ok(())
}

/// The step tasks the node must start (those it neither runs nor just reported ended)
/// and those of its running ones it must stop. Each task's `BERTH_TOKEN` is a token of
/// its job's run, as the batch shell's (srun's own credential is never passed on).
async fn desired_step_tasks(
    pool: &Pool,
    keys: &Keys,
    node_row: &NodeRow,
    req: &SyncRequest,
) -> Result<(Vec<StepTaskLaunch>, Vec<StepTaskKey>), ApiError> {
    // The tasks the node runs or reported ended, with their incarnations: a task of
    // another job that had the same id does not stand for this job's.
    let known: HashMap<StepTaskKey, Option<berth_core::wire::Incarnation>> = req
        .running_tasks
        .iter()
        .map(|t| (t.key, t.incarnation))
        .chain(req.step_reports.iter().map(|r| (r.key, r.incarnation)))
        .collect();
    let mut launches = Vec::new();
    for row in step::step_task_launch_list_for_node(pool, node_row.id).await? {
        let key = StepTaskKey {
            job_id: row.job_id,
            run: row.run as u32,
            step_id: row.step_id as u32,
            task_id: row.task_id as u32,
        };
        if known
            .get(&key)
            .is_some_and(|&inc| berth_core::wire::same_incarnation(inc, Some(row.job_incarnation)))
        {
            continue;
        }
        let mut environment: BTreeMap<String, String> =
            serde_json::from_value(row.environment).unwrap_or_default();
        let spec: berth_core::spec::JobSpec =
            serde_json::from_value(row.job_spec).unwrap_or_default();
        // `--signal` without `B:` goes to the tasks, `seconds` before the time limit.
        let warning = spec
            .signal
            .as_deref()
            .and_then(berth_core::signal::parse_warning_signal)
            .filter(|w| !w.batch_only);
        let warning_at = match (warning, row.job_start_time, row.job_time_limit) {
            (Some(w), Some(start), Some(limit)) => {
                let lead = (w.seconds as i64).min(limit);
                Some(start + chrono::Duration::seconds(limit - lead))
            }
            _ => None,
        };
        let job_row = job::job_get(pool, row.job_id).await?;
        // The task's credential is its job run's token, whatever srun's environment held
        // (the api never stores one: see `steps::step_create`).
        environment.remove("BERTH_TOKEN");
        let token = job_row.as_ref().and_then(|job_row| {
            keys.mint_job_token(
                &job_row.user_name,
                crate::auth::JobRun {
                    job_id: job_row.id,
                    run: row.run as u32,
                    incarnation: job_row.incarnation,
                },
                job_token_ttl(job_row),
            )
        });
        if let Some(token) = token {
            environment.insert("BERTH_TOKEN".to_string(), token);
        }
        // A step's tasks stay within the job's CPUs and memory on the node.
        let (memory_limit_mib, cpu_limit) = match &job_row {
            Some(job_row) => (
                placed_memory_mib(row.job_mem_mib)
                    .or_else(|| memory_limit_mib(job_row, &spec, row.job_gpus.len() as u64)),
                Some(placed_cpus(&row.job_cpu_ids).unwrap_or_else(|| cpus_on_node(job_row, &spec))),
            ),
            None => (None, None),
        };
        // The job's own variables, as its batch shell has them (under salloc, srun's
        // environment holds only what salloc set).
        if let Some(job_row) = &job_row {
            let (facts, defaults) = crate::slurm_variables::step_job_variables(
                job_row,
                &spec,
                &row.job_nodes,
                cpu_limit,
            );
            for (name, value) in facts {
                match value {
                    Some(value) => environment.insert(name.to_string(), value),
                    None => environment.remove(name),
                };
            }
            for (name, value) in defaults {
                if let Some(value) = value {
                    environment.entry(name.to_string()).or_insert(value);
                }
            }
        }
        launches.push(StepTaskLaunch {
            memory_limit_mib,
            cpu_limit,
            job_cpu_ids: to_u32s(&row.job_cpu_ids),
            warning_signal: warning_at.and(warning.map(|w| w.signal)),
            warning_at,
            user: row.job_user,
            key,
            command: row.command,
            work_dir: row.work_dir.or(row.job_work_dir),
            environment,
            local_id: row.local_id as u32,
            node_index: row.node_index as u32,
            gpus: to_u32s(&row.gpu_indices),
            step_gpus: to_u32s(&row.step_gpus),
            job_gpus: to_u32s(&row.job_gpus),
            ntasks: row.ntasks as u32,
            tasks_on_node: row.tasks_on_node as u32,
            step_nodes: row.step_nodes,
            cpus_per_task: row.cpus_per_task.map(|c| c as u32),
            pty: row.pty && row.task_id == 0,
            incarnation: Some(row.job_incarnation),
        });
    }
    let running = &req.running_tasks;
    let stale = step::step_task_stale_for_node(
        pool,
        node_row.id,
        &running.iter().map(|t| t.key.job_id).collect::<Vec<_>>(),
        &running.iter().map(|t| t.key.run as i32).collect::<Vec<_>>(),
        &running
            .iter()
            .map(|t| t.key.step_id as i32)
            .collect::<Vec<_>>(),
        &running
            .iter()
            .map(|t| t.key.task_id as i32)
            .collect::<Vec<_>>(),
        &running
            .iter()
            .map(|t| t.incarnation.unwrap_or_default())
            .collect::<Vec<_>>(),
    )
    .await?;
    let cancellations = stale
        .into_iter()
        .map(|(job_id, run, step_id, task_id)| StepTaskKey {
            job_id,
            run: run as u32,
            step_id: step_id as u32,
            task_id: task_id as u32,
        })
        .collect();
    Ok((launches, cancellations))
}

/// The node's drain reason for an interruption notice:
/// `reclaimed: spot interruption notice (terminate at 2026-12-01T12:00:00Z)`.
pub fn reclaim_reason(notice: &Interruption) -> String {
    format!(
        "reclaimed: spot interruption notice ({} at {})",
        notice.action,
        notice
            .time
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    )
}

/// The node's instance has an interruption notice (a spot reclaim), which only the node
/// itself reports (the sync is authenticated as it): the node drains with
/// [`reclaim_reason`] (a `reclaim` cloud event when it belongs to a pool), and every job
/// run on it is stopped and requeued as a `PreemptMode=REQUEUE` preemption is
/// ([`job::job_reclaim_in_tx`]: PENDING again with its restart count one higher, a
/// `reclaimed` event; `--no-requeue` jobs end NODE_FAIL). The node's next answer lists
/// those runs as cancellations marked `reclaimed`, with the seconds left until the
/// notice's time as their grace. A notice repeated in later syncs changes nothing more.
///
/// # Errors
/// 400 for an action that is not a word; 503 when the database is unreachable.
pub async fn reclaim(
    pool: &Pool,
    node_row: &NodeRow,
    notice: &Interruption,
) -> Result<(), ApiError> {
    if notice.action.is_empty()
        || notice.action.len() > 32
        || !notice
            .action
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(ApiError::bad_field(
            "interruption.action",
            "a word: terminate, stop or hibernate",
        ));
    }
    let reason = reclaim_reason(notice);
    let mut tx = berth_db::begin(pool).await?;
    let drained = node::node_reclaim_drain(&mut *tx, node_row.id, &reason).await?;
    let cloud = node::node_cloud_get(&mut *tx, node_row.id).await?;
    let pool_name = cloud.as_ref().and_then(|c| c.pool.clone());
    let instance_id = cloud.as_ref().and_then(|c| c.instance_id.clone());
    if drained {
        tracing::warn!(node.name = %node_row.name, %reason, "node drained: its instance is being reclaimed");
        if let Some(pool_name) = &pool_name {
            berth_db::cloud::cloud_event_insert_in_tx(
                &mut tx,
                pool_name,
                "reclaim",
                Some(&node_row.name),
                instance_id.as_deref(),
                None,
                &reason,
            )
            .await?;
        }
    }
    let mut seen = HashSet::new();
    for live in allocation::allocation_live_runs_on_node(&mut *tx, node_row.id).await? {
        if !seen.insert(live.job_id)
            || !matches!(
                live.job_state.as_str(),
                "RUNNING" | "SUSPENDED" | "COMPLETING"
            )
        {
            continue;
        }
        let nodes = allocation::allocation_list_for_jobs(&mut *tx, &[live.job_id]).await?;
        let outcome =
            job::job_reclaim_in_tx(&mut tx, live.job_id, live.run, &node_row.name, notice.time)
                .await?;
        if outcome == job::NodeFailOutcome::Unchanged {
            continue;
        }
        tracing::warn!(job.id = live.job_id, job.run = live.run, node.name = %node_row.name, ?outcome,
            "job stopped: its node's instance is being reclaimed");
        if let Some(pool_name) = &pool_name {
            let what = match outcome {
                job::NodeFailOutcome::Requeued { .. } => "requeued",
                _ => "ended NODE_FAIL (--no-requeue)",
            };
            berth_db::cloud::cloud_event_insert_in_tx(
                &mut tx,
                pool_name,
                "reclaim",
                Some(&node_row.name),
                instance_id.as_deref(),
                Some(live.job_id),
                &format!("job {} run {} {what}: {reason}", live.job_id, live.run),
            )
            .await?;
        }
        // Every node of the run stops it at its next sync.
        for a in &nodes {
            notify::notify(&mut *tx, notify::NODE_CHANNEL, &a.node_name).await?;
        }
        notify::notify(&mut *tx, notify::JOBS_CHANNEL, &live.job_id.to_string()).await?;
    }
    tx.commit().await.map_err(DbError::from)?;
    Ok(())
}

/// Records the heartbeat and samples of a sync, folds the samples into the stats of the
/// jobs holding those GPUs, and drains the node for any GPU fault it reports.
///
/// # Errors
/// 503 when the database is unreachable.
pub async fn heartbeat(pool: &Pool, node_row: &NodeRow, req: &SyncRequest) -> Result<(), ApiError> {
    // One sample per GPU index (the last one sent): the stats upsert may touch a row once.
    let mut by_index = BTreeMap::new();
    for sample in &req.samples {
        by_index.insert(sample.index, sample);
    }
    let s: Vec<_> = by_index.into_values().collect();
    let indices: Vec<i32> = s.iter().map(|x| x.index as i32).collect();
    let utilization: Vec<i32> = s
        .iter()
        .map(|x| x.utilization_pct.min(100) as i32)
        .collect();
    let memory: Vec<i64> = s.iter().map(|x| x.memory_used_mib as i64).collect();
    let power: Vec<f64> = s.iter().map(|x| x.power_w).collect();
    let temperature: Vec<i32> = s.iter().map(|x| x.temperature_c as i32).collect();
    node::node_heartbeat(
        pool,
        node_row.id,
        &indices,
        &utilization,
        &memory,
        &power,
        &temperature,
    )
    .await?;
    if !s.is_empty() {
        berth_db::gpu_stats::job_gpu_stats_record(
            pool,
            node_row.id,
            &indices,
            &utilization,
            &memory,
            &power,
            &temperature,
        )
        .await?;
        berth_db::gpu_stats::job_gpu_samples_record(
            pool,
            node_row.id,
            &indices,
            &utilization,
            &memory,
            &power,
        )
        .await?;
    }
    if let Some(fault) = req.gpu_faults.first() {
        let reason = req
            .gpu_faults
            .iter()
            .map(berth_core::stats::GpuFault::reason)
            .collect::<Vec<_>>()
            .join("; ");
        if node::node_drain(pool, node_row.id, &reason).await? {
            tracing::warn!(node.name = %node_row.name, gpu = fault.index, %reason, "node drained for a GPU fault");
        }
    }
    node::node_drain_settle(pool, node_row.id).await?;
    Ok(())
}
