//! The worker protocol: registration, the long-poll sync (heartbeat, reports, samples in;
//! assignments and cancellations out) and applying job reports exactly once.

use crate::auth::Keys;
use crate::error::ApiError;
use berth_core::state::JobState;
use berth_core::step::{StepTaskKey, StepTaskLaunch, StepTaskReport};
use berth_core::wire::{
    Assignment, Cancellation, JobReport, NodeRegister, ReportKind, RunLimit, SyncRequest,
    SyncResponse,
};
use berth_db::job::JobRow;
use berth_db::node::{GpuInsert, NodeRow};
use berth_db::{allocation, job, node, notify, preemption, step, DbError, Pool};
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
    let mut tx = berth_db::begin(pool).await?;
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
    } else if report.out_of_memory {
        JobState::OutOfMemory
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
    let mut tx = berth_db::begin(pool).await?;
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
        step::step_end_all_for_job_in_tx(&mut tx, report.job_id, run).await?;
        notify::notify(&mut *tx, notify::JOBS_CHANNEL, &report.job_id.to_string()).await?;
        // The job's other nodes stop its step tasks.
        for a in allocation::allocation_list_for_jobs(&mut *tx, &[report.job_id]).await? {
            if a.node_name != node_row.name {
                notify::notify(&mut *tx, notify::NODE_CHANNEL, &a.node_name).await?;
            }
        }
        tracing::info!(job.id = report.job_id, node.name = %node_row.name, state = %state, "job ended");
    } else if first && report.kind != ReportKind::Started && current.restart_count != run {
        // A run left behind by a requeue (scontrol requeue, node failure, preemption) is
        // gone: its GPUs are free for the next run.
        allocation::allocation_release_job_in_tx(&mut tx, report.job_id, run).await?;
        step::step_end_all_for_job_in_tx(&mut tx, report.job_id, run).await?;
        notify::notify(&mut *tx, notify::JOBS_CHANNEL, &report.job_id.to_string()).await?;
        tracing::info!(job.id = report.job_id, job.run = run, node.name = %node_row.name, "earlier run ended");
    }
    if first && report.kind != ReportKind::Started {
        preemption::preemption_done_in_tx(&mut tx, report.job_id, run).await?;
    }
    tx.commit().await.map_err(DbError::from)?;
    Ok(())
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

/// Records that the node's job runs in `req.time_limits` reached their time limit (once
/// per run, only for a run still current and RUNNING): their end state is TIMEOUT.
///
/// # Errors
/// 400 for an out-of-range run; 503 when the database is unreachable.
pub async fn record_time_limits(
    pool: &Pool,
    node_row: &NodeRow,
    req: &SyncRequest,
) -> Result<(), ApiError> {
    for expired in &req.time_limits {
        let run = i32::try_from(expired.run)
            .map_err(|_| ApiError::bad_field("time_limits.run", "too large"))?;
        let mut tx = berth_db::begin(pool).await?;
        let Some(current) = job::job_lock_in_tx(&mut tx, expired.job_id).await? else {
            continue;
        };
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
        tx.commit().await.map_err(DbError::from)?;
    }
    Ok(())
}

/// How long a job's token stays valid: its time limit plus a day, or 30 days when it
/// has none.
fn job_token_ttl(job: &JobRow) -> i64 {
    job.time_limit
        .map_or(30 * 86_400, |limit| limit.saturating_add(86_400))
}

fn assignment(keys: &Keys, job: &JobRow, run: i32, gpus: &[i32], nodes: &[String]) -> Assignment {
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
        gpus_per_task: spec.gpus_per_task,
        memory_limit_mib: memory_limit_mib(job, &spec, gpus.len() as u64),
        cpu_limit: Some(cpus_on_node(job, &spec)),
        warning_signal: spec
            .signal
            .as_deref()
            .and_then(berth_core::signal::parse_warning_signal),
        job_token: keys.mint_job_token(&job.user_name, job.id, job_token_ttl(job)),
    }
}

/// Applies one step task report from `node_row`; a report seen before changes nothing.
/// Under `--kill-on-bad-exit`, a failed task wakes the nodes of the step's other tasks,
/// which are then told to stop them.
///
/// # Errors
/// 400 for out-of-range numbers; 503 when the database is unreachable.
pub async fn apply_step_report(
    pool: &Pool,
    node_row: &NodeRow,
    report: &StepTaskReport,
) -> Result<(), ApiError> {
    let key = step_key(&report.key)?;
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
            tx.commit().await.map_err(DbError::from)?;
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
                keys,
                &job_row,
                row.run,
                &row.gpu_indices,
                &row.node_names,
            ));
        }
    }
    let job_ids: Vec<i64> = req.running.iter().map(|r| r.job_id).collect();
    let runs: Vec<i32> = req.running.iter().map(|r| r.run as i32).collect();
    let stale =
        allocation::allocation_stale_runs_for_node(pool, node_row.id, &job_ids, &runs).await?;
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
        stale
            .into_iter()
            .map(|(job_id, run)| {
                let grace_seconds = grace
                    .get(&(job_id, run))
                    .map(|&s| u32::try_from(s.max(0)).unwrap_or(u32::MAX));
                Cancellation {
                    job_id,
                    run: run as u32,
                    preempted: grace_seconds.is_some(),
                    grace_seconds,
                }
            })
            .collect()
    };
    let run_limits = job::job_running_time_limits(pool, &job_ids, &runs)
        .await?
        .into_iter()
        .map(|l| RunLimit {
            job_id: l.job_id,
            run: l.run as u32,
            time_limit: l.time_limit.map(|t| t.max(0) as u64),
        })
        .collect();
    let (step_tasks, step_cancellations) = desired_step_tasks(pool, node_row, req).await?;
    Ok(SyncResponse {
        assignments,
        cancellations,
        step_tasks,
        step_cancellations,
        run_limits,
    })
}

/// The step tasks the node must start (those it neither runs nor just reported ended)
/// and those of its running ones it must stop.
async fn desired_step_tasks(
    pool: &Pool,
    node_row: &NodeRow,
    req: &SyncRequest,
) -> Result<(Vec<StepTaskLaunch>, Vec<StepTaskKey>), ApiError> {
    let known: HashSet<StepTaskKey> = req
        .running_tasks
        .iter()
        .copied()
        .chain(req.step_reports.iter().map(|r| r.key))
        .collect();
    let mut launches = Vec::new();
    for row in step::step_task_launch_list_for_node(pool, node_row.id).await? {
        let key = StepTaskKey {
            job_id: row.job_id,
            run: row.run as u32,
            step_id: row.step_id as u32,
            task_id: row.task_id as u32,
        };
        if known.contains(&key) {
            continue;
        }
        let environment: BTreeMap<String, String> =
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
        let (memory_limit_mib, cpu_limit) = match job::job_get(pool, row.job_id).await? {
            Some(job_row) => (
                memory_limit_mib(&job_row, &spec, row.job_gpus.len() as u64),
                Some(cpus_on_node(&job_row, &spec)),
            ),
            None => (None, None),
        };
        launches.push(StepTaskLaunch {
            memory_limit_mib,
            cpu_limit,
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
        });
    }
    let running = &req.running_tasks;
    let stale = step::step_task_stale_for_node(
        pool,
        node_row.id,
        &running.iter().map(|k| k.job_id).collect::<Vec<_>>(),
        &running.iter().map(|k| k.run as i32).collect::<Vec<_>>(),
        &running.iter().map(|k| k.step_id as i32).collect::<Vec<_>>(),
        &running.iter().map(|k| k.task_id as i32).collect::<Vec<_>>(),
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
