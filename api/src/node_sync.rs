//! The worker protocol: registration, the long-poll sync (heartbeat, reports, samples in;
//! assignments and cancellations out) and applying job reports exactly once.

use crate::error::ApiError;
use berth_core::state::JobState;
use berth_core::wire::{
    Assignment, Cancellation, JobReport, NodeRegister, ReportKind, SyncRequest, SyncResponse,
};
use berth_db::job::JobRow;
use berth_db::node::{GpuInsert, NodeRow};
use berth_db::{allocation, job, node, notify, preemption, DbError, Pool};
use std::collections::{BTreeMap, HashSet};

/// The longest a sync may be held, seconds.
pub const MAX_WAIT_SECONDS: u32 = 60;

/// Registers (or re-registers) a node with its inventory.
///
/// # Errors
/// 400 for an empty name or out-of-range numbers; 503 when the database is unreachable.
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
            })
        })
        .collect::<Result<_, ApiError>>()?;
    let mut tx = pool.begin().await.map_err(DbError::from)?;
    node::node_register_in_tx(
        &mut tx,
        &req.name,
        &req.hostname,
        i32::try_from(req.cpus).map_err(|_| ApiError::bad_field("cpus", "too large"))?,
        i64::try_from(req.memory_mib)
            .map_err(|_| ApiError::bad_field("memory_mib", "too large"))?,
        &req.features,
        &gpus,
    )
    .await?;
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
    } else if report.exit_code == Some(0) && report.signal.is_none() {
        JobState::Completed
    } else {
        JobState::Failed
    }
}

/// Applies one report from `node_row` in its own transaction; a report seen before
/// changes nothing.
///
/// # Errors
/// 503 when the database is unreachable.
pub async fn apply_report(
    pool: &Pool,
    node_row: &NodeRow,
    report: &JobReport,
) -> Result<(), ApiError> {
    let kind = match report.kind {
        ReportKind::Started => "started",
        ReportKind::Exited => "exited",
        ReportKind::LaunchFailed => "launch_failed",
    };
    let run =
        i32::try_from(report.run).map_err(|_| ApiError::bad_field("reports.run", "too large"))?;
    let mut tx = pool.begin().await.map_err(DbError::from)?;
    let Some(current) = job::job_lock_in_tx(&mut tx, report.job_id).await? else {
        return Ok(());
    };
    let detail = serde_json::to_value(report).unwrap_or_default();
    let first = job::job_event_insert(
        &mut *tx,
        report.job_id,
        kind,
        run,
        Some(&node_row.name),
        detail,
    )
    .await?;
    if first && report.kind != ReportKind::Started && current.restart_count == run {
        let state = end_state(report);
        let reason = match report.kind {
            ReportKind::LaunchFailed => Some(format!(
                "launch failed on {}: {}",
                node_row.name,
                report.message.as_deref().unwrap_or("unknown error")
            )),
            _ => None,
        };
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
        allocation::allocation_release_job_in_tx(&mut tx, report.job_id, run).await?;
        notify::notify(&mut *tx, notify::JOBS_CHANNEL, &report.job_id.to_string()).await?;
        tracing::info!(job.id = report.job_id, node.name = %node_row.name, state = %state, "job ended");
    }
    if first && report.kind != ReportKind::Started && current.restart_count != run {
        // An earlier run (preempted with REQUEUE) is gone: its GPUs are free again.
        allocation::allocation_release_job_in_tx(&mut tx, report.job_id, run).await?;
        notify::notify(&mut *tx, notify::JOBS_CHANNEL, &report.job_id.to_string()).await?;
    }
    if first && report.kind != ReportKind::Started {
        preemption::preemption_done_in_tx(&mut tx, report.job_id, run).await?;
    }
    tx.commit().await.map_err(DbError::from)?;
    Ok(())
}

fn assignment(job: &JobRow, run: i32, gpus: &[i32], nodes: &[String]) -> Assignment {
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
        nodes: nodes.to_vec(),
        ntasks: job.num_tasks as u32,
        cpus_per_task: spec.cpus_per_task,
        ntasks_per_node: spec.ntasks_per_node,
        environment,
        array_job_id: job.array_job_id,
        array_task_id: job.array_task_id.map(|t| t as u32),
        array_task_count: job.array_task_count.map(|c| c as u32),
    }
}

/// What the node must start and stop, given what it runs now.
///
/// # Errors
/// 503 when the database is unreachable.
pub async fn desired(
    pool: &Pool,
    node_row: &NodeRow,
    req: &SyncRequest,
) -> Result<SyncResponse, ApiError> {
    let running: HashSet<(i64, u32)> = req.running.iter().map(|r| (r.job_id, r.run)).collect();
    let reported_ended: HashSet<(i64, u32)> = req
        .reports
        .iter()
        .filter(|r| r.kind != ReportKind::Started)
        .map(|r| (r.job_id, r.run))
        .collect();
    let mut assignments = Vec::new();
    for row in allocation::allocation_batch_list_for_node(pool, node_row.id).await? {
        let key = (row.job_id, row.run as u32);
        if running.contains(&key) || reported_ended.contains(&key) {
            continue;
        }
        if let Some(job_row) = job::job_get(pool, row.job_id).await? {
            assignments.push(assignment(
                &job_row,
                row.run,
                &row.gpu_indices,
                &row.node_names,
            ));
        }
    }
    let job_ids: Vec<i64> = req.running.iter().map(|r| r.job_id).collect();
    let runs: Vec<i32> = req.running.iter().map(|r| r.run as i32).collect();
    let cancellations =
        allocation::allocation_stale_runs_for_node(pool, node_row.id, &job_ids, &runs)
            .await?
            .into_iter()
            .map(|(job_id, run)| Cancellation {
                job_id,
                run: run as u32,
            })
            .collect();
    Ok(SyncResponse {
        assignments,
        cancellations,
    })
}

/// Records the heartbeat and samples of a sync.
///
/// # Errors
/// 503 when the database is unreachable.
pub async fn heartbeat(pool: &Pool, node_row: &NodeRow, req: &SyncRequest) -> Result<(), ApiError> {
    let s = &req.samples;
    node::node_heartbeat(
        pool,
        node_row.id,
        &s.iter().map(|x| x.index as i32).collect::<Vec<_>>(),
        &s.iter()
            .map(|x| x.utilization_pct.min(100) as i32)
            .collect::<Vec<_>>(),
        &s.iter()
            .map(|x| x.memory_used_mib as i64)
            .collect::<Vec<_>>(),
        &s.iter().map(|x| x.power_w).collect::<Vec<_>>(),
        &s.iter().map(|x| x.temperature_c as i32).collect::<Vec<_>>(),
    )
    .await?;
    Ok(())
}
