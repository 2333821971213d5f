//! Applying what a node reports: job reports (each once, only for a run that is the
//! node's, of the job's incarnation), time-limit notices and step task reports, refusing
//! one that can never apply alone; and what the database remembers of a node's report
//! stream (forgotten reports after a failover, the job ids a worker remembers).

#[allow(unused_imports)]
use super::*;

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

pub(crate) fn refused(status: u16, detail: impl Into<String>) -> ReportFailure {
    ReportFailure::Refused {
        status,
        detail: detail.into(),
    }
}

pub(crate) fn not_placed(job_id: i64, run: i32, node: &str) -> ReportFailure {
    refused(
        403,
        format!("job {job_id} run {run} is not placed on node {node}"),
    )
}

/// Refuses (409) a message of incarnation `theirs` about job `job_id`, whose record is of
/// incarnation `ours`: another job had this id (a failover to a standby that lost the last
/// commits handed it out again). Logged with the node: it is never applied.
pub(crate) fn other_incarnation(
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
pub(crate) enum Authority {
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
pub(crate) async fn authorize(
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
pub(crate) fn launch_failed_reason(node_row: &NodeRow, report: &JobReport) -> Option<String> {
    (report.kind == ReportKind::LaunchFailed).then(|| {
        format!(
            "{} on {}: {}",
            berth_core::reason::LAUNCH_FAILED_PREFIX,
            node_row.name,
            report.message.as_deref().unwrap_or("unknown error")
        )
    })
}

/// Releases an ended run's allocations, ends its steps and wakes the job's other nodes
/// (they stop its step tasks).
pub(crate) async fn end_run_in_tx(
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
pub(crate) async fn launch_failed_by_node_in_tx(
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
pub(crate) async fn take_back_in_tx(
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
pub(crate) fn is_permanent(e: &DbError) -> bool {
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
pub(crate) fn settle(
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

pub(crate) fn step_key(key: &StepTaskKey) -> Result<(i64, i32, i32, i32), ApiError> {
    let int =
        |v: u32, field: &str| i32::try_from(v).map_err(|_| ApiError::bad_field(field, "too large"));
    Ok((
        key.job_id,
        int(key.run, "step_reports.key.run")?,
        int(key.step_id, "step_reports.key.step_id")?,
        int(key.task_id, "step_reports.key.task_id")?,
    ))
}
