//! What a node must run and stop: its batch assignments (with the run's token and grant),
//! cancellations, run time limits, step tasks, terminal input and signals.

#[allow(unused_imports)]
use super::*;

/// The CPUs an allocation holds on its node (the number of its CPU ids); `None` for an
/// allocation not placed by CPU.
pub(crate) fn placed_cpus(cpu_ids: &[i32]) -> Option<u32> {
    (!cpu_ids.is_empty()).then_some(cpu_ids.len() as u32)
}

/// The memory an allocation holds on its node, MiB; `None` for an allocation not placed
/// by memory (0).
pub(crate) fn placed_memory_mib(mem_mib: i64) -> Option<u64> {
    (mem_mib > 0).then_some(mem_mib as u64)
}

/// CPUs the job uses on one node: `--cpus-per-task` × its tasks per node
/// (`--ntasks-per-node`, else its tasks spread evenly).
pub(crate) fn cpus_on_node(job: &JobRow, spec: &berth_core::spec::JobSpec) -> u32 {
    let nodes = job.num_nodes.max(1) as u32;
    let tasks = spec
        .ntasks_per_node
        .unwrap_or_else(|| (job.num_tasks.max(1) as u32).div_ceil(nodes));
    (job.cpus_per_task.max(1) as u32).saturating_mul(tasks.max(1))
}

/// The job's memory on one node, MiB: `--mem` (0 means the whole node: no limit), else
/// `--mem-per-gpu` × its GPUs there, else `--mem-per-cpu` × its CPUs there.
pub(crate) fn memory_limit_mib(
    job: &JobRow,
    spec: &berth_core::spec::JobSpec,
    gpus: u64,
) -> Option<u64> {
    if let Some(mem) = job.mem_mib.or(spec.mem_mib.map(|m| m as i64)) {
        return (mem > 0).then_some(mem as u64);
    }
    if let (Some(per_gpu), true) = (spec.mem_per_gpu_mib, gpus > 0) {
        return Some(per_gpu * gpus);
    }
    spec.mem_per_cpu_mib
        .map(|per_cpu| per_cpu * u64::from(cpus_on_node(job, spec)))
}

/// How long a job's token stays valid: its time limit plus a day, or 30 days when it
/// has none.
pub(crate) fn job_token_ttl(job: &JobRow) -> i64 {
    job.time_limit
        .map_or(30 * 86_400, |limit| limit.saturating_add(86_400))
}

/// The assignment of batch allocation `row` (of `job`) on node `node`: what the worker
/// runs, with the run's token and its grant ([`crate::run_grant`]).
pub(crate) fn assignment(
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
        threads_per_core: berth_core::cores::hint_threads_per_core(spec.hint.as_deref()),
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

pub(crate) fn to_u32s(values: &[i32]) -> Vec<u32> {
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
pub(crate) async fn pty_input(
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
pub(crate) async fn pending_signals(
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
pub(crate) async fn desired_step_tasks(
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
            job_threads_per_core: berth_core::cores::hint_threads_per_core(spec.hint.as_deref()),
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
