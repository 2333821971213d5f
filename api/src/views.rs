//! Rows to views: the conversions from database rows to the wire types clients see.

use berth_core::hostlist;
use berth_core::identity::{is_secret_name, MASK};
use berth_core::pattern::{self, PatternValues};
use berth_core::reason;
use berth_core::spec::JobSpec;
use berth_core::state::{JobState, NodeState};
use berth_core::wire::{Gpu, GpuKind, Job, JobAllocation, Node, Partition, QueueJob};
use berth_db::allocation::JobAllocationRow;
use berth_db::job::{JobQueueRow, JobRow};
use berth_db::node::{GpuRow, NodeRow};
use berth_db::partition::PartitionRow;
use std::collections::{BTreeMap, HashMap};

fn to_u32(v: i32) -> u32 {
    u32::try_from(v).unwrap_or(0)
}

fn to_u64(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

/// Expands an output pattern for the batch node of `job`.
pub fn output_path(job: &JobRow, pattern_text: &str, batch_node: &str) -> String {
    let values = PatternValues {
        job_id: job.id,
        job_name: &job.name,
        array_job_id: job.array_job_id,
        array_task_id: job.array_task_id.map(to_u32),
        user: &job.user_name,
        node_name: batch_node,
        node_index: 0,
        task_id: 0,
    };
    let expanded = pattern::expand(pattern_text, &values);
    match &job.work_dir {
        Some(dir) if !expanded.starts_with('/') => {
            format!("{}/{}", dir.trim_end_matches('/'), expanded)
        }
        _ => expanded,
    }
}

/// `--export` with the values of variables named like secrets masked
/// (`ALL,HF_TOKEN=********,N=3`).
pub fn mask_export(export: &str) -> String {
    export
        .split(',')
        .map(|item| match item.split_once('=') {
            Some((k, _)) if is_secret_name(k.trim()) => format!("{k}={MASK}"),
            _ => item.to_string(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// A job view from its row and its current run's allocations (in node-index order).
pub fn job_view(row: &JobRow, allocations: &[&JobAllocationRow]) -> Job {
    let state = row.state.parse::<JobState>().unwrap_or(JobState::Failed);
    let mut spec: JobSpec = serde_json::from_value(row.spec.clone()).unwrap_or_default();
    spec.export = spec.export.as_deref().map(mask_export);
    let environment: BTreeMap<String, String> =
        serde_json::from_value(row.environment.clone()).unwrap_or_default();
    let environment = environment
        .into_iter()
        .map(|(k, v)| {
            let v = if is_secret_name(&k) {
                MASK.to_string()
            } else {
                v
            };
            (k, v)
        })
        .collect();
    let nodes: Vec<String> = allocations.iter().map(|a| a.node_name.clone()).collect();
    let batch_node = nodes.first().map(String::as_str).unwrap_or("");
    let allocations: Vec<JobAllocation> = allocations
        .iter()
        .map(|a| JobAllocation {
            node: a.node_name.clone(),
            gpus: a.gpu_indices.iter().map(|g| to_u32(*g)).collect(),
            cpus: a.cpu_ids.iter().map(|c| to_u32(*c)).collect(),
            memory_mib: to_u64(a.mem_mib),
        })
        .collect();
    let allocated_cpus: u32 = allocations.iter().map(|a| a.cpus.len() as u32).sum();
    let num_cpus = num_cpus(allocated_cpus, row.num_tasks, row.cpus_per_task);
    let stdout_path = output_path(row, &row.stdout_pattern, batch_node);
    let stderr_path = row
        .stderr_pattern
        .as_deref()
        .map(|p| output_path(row, p, batch_node))
        .unwrap_or_else(|| stdout_path.clone());
    Job {
        id: row.id,
        name: row.name.clone(),
        user: row.user_name.clone(),
        account: row.account.clone(),
        // As squeue shows it: every partition a pending job may start in (`a,b`), then
        // the one it started in.
        partition: shown_partition(state, &row.partition, &row.partitions),
        qos: row.qos.clone(),
        state,
        reason: reason::shown_reason(state, row.exit_code, row.exit_signal, row.reason.clone()),
        state_description: reason::state_description(
            state,
            row.exit_code,
            row.exit_signal,
            row.reason.as_deref(),
        ),
        submit_time: row.submit_time,
        start_time: row.start_time,
        end_time: row.end_time,
        time_limit: row.time_limit.map(to_u64),
        exit_code: row.exit_code,
        exit_signal: row.exit_signal,
        num_nodes: to_u32(row.num_nodes),
        num_tasks: to_u32(row.num_tasks),
        num_cpus,
        gpus_per_node: match allocations.first() {
            Some(a) if row.whole_node => a.gpus.len() as u32,
            _ => to_u32(row.gpus_per_node),
        },
        nodelist: (!nodes.is_empty()).then(|| hostlist::compress(&nodes)),
        allocations,
        work_dir: row.work_dir.clone(),
        stdout_path: Some(stdout_path),
        stderr_path: Some(stderr_path),
        restart_count: to_u32(row.restart_count),
        spec,
        expected_start: row.expected_start.filter(|_| state == JobState::Pending),
        queue_position: None,
        priority: row.priority.filter(|_| state == JobState::Pending),
        nice: row.nice,
        array_job_id: row.array_job_id,
        array_task_id: row.array_task_id.map(to_u32),
        array_tasks_pending: row.array_pending.clone(),
        array_max_running: row.array_max_running.map(to_u32),
        environment,
        // Filled in by the handlers that show output state (a separate lookup).
        output_truncated: false,
    }
}

/// The partition as squeue shows it: every partition a pending job may start in
/// (`a,b`), then the one it started in.
fn shown_partition(state: JobState, partition: &str, partitions: &[String]) -> String {
    if state == JobState::Pending && !partitions.is_empty() {
        partitions.join(",")
    } else {
        partition.to_string()
    }
}

/// Slurm's `NumCPUs`: those allocated when placed by CPU, else tasks × CPUs per task.
fn num_cpus(allocated: u32, num_tasks: i32, cpus_per_task: i32) -> u32 {
    if allocated > 0 {
        allocated
    } else {
        to_u32(num_tasks)
            .max(1)
            .saturating_mul(to_u32(cpus_per_task).max(1))
    }
}

/// `allocations` (sorted by job id then node index) grouped by job id.
fn allocations_by_job(allocations: &[JobAllocationRow]) -> HashMap<i64, Vec<&JobAllocationRow>> {
    let mut by_job: HashMap<i64, Vec<&JobAllocationRow>> = HashMap::new();
    for a in allocations {
        by_job.entry(a.job_id).or_default().push(a);
    }
    by_job
}

/// Job views for rows, with their allocations looked up from `allocations` (sorted by job
/// id then node index).
pub fn job_views(rows: &[JobRow], allocations: &[JobAllocationRow]) -> Vec<Job> {
    let by_job = allocations_by_job(allocations);
    rows.iter()
        .map(|row| job_view(row, by_job.get(&row.id).map_or(&[], Vec::as_slice)))
        .collect()
}

/// The queue view (squeue's columns) of a row of [`berth_db::job::job_queue_rows`]: the
/// same values [`job_view`] gives those fields, the allocation's from the row's `alloc_*`
/// columns.
pub fn queue_view(row: JobQueueRow) -> QueueJob {
    let state = row.state.parse::<JobState>().unwrap_or(JobState::Failed);
    let allocated_cpus = row
        .alloc_cpus
        .map_or(0, |n| u32::try_from(n.max(0)).unwrap_or(u32::MAX));
    let partition = shown_partition(state, &row.partition, &row.partitions);
    QueueJob {
        id: row.id,
        name: row.name,
        user: row.user_name,
        account: row.account,
        partition,
        qos: row.qos,
        state,
        reason: reason::shown_reason(state, row.exit_code, row.exit_signal, row.reason),
        submit_time: row.submit_time,
        start_time: row.start_time,
        end_time: row.end_time,
        time_limit: row.time_limit.map(to_u64),
        num_nodes: to_u32(row.num_nodes),
        num_tasks: to_u32(row.num_tasks),
        num_cpus: num_cpus(allocated_cpus, row.num_tasks, row.cpus_per_task),
        gpus_per_node: match row.alloc_node_gpus {
            Some(gpus) if row.whole_node => to_u32(gpus),
            _ => to_u32(row.gpus_per_node),
        },
        nodelist: row
            .alloc_nodes
            .filter(|nodes| !nodes.is_empty())
            .map(|nodes| hostlist::compress(&nodes)),
        work_dir: row.work_dir,
        restart_count: to_u32(row.restart_count),
        exit_code: row.exit_code,
        exit_signal: row.exit_signal,
        expected_start: row.expected_start.filter(|_| state == JobState::Pending),
        priority: row.priority.filter(|_| state == JobState::Pending),
        nice: row.nice,
        array_job_id: row.array_job_id,
        array_task_id: row.array_task_id.map(to_u32),
        array_tasks_pending: row.array_pending,
        array_max_running: row.array_max_running.map(to_u32),
    }
}

/// A node view from its row, its GPUs and the partitions it belongs to. `busy`: the node
/// holds a live allocation. An available node's state is [`NodeState::from_holdings`]
/// (a node whose GPUs are all held but whose CPUs are not is MIXED, as in Slurm).
pub fn node_view(row: &NodeRow, gpus: &[&GpuRow], partitions: &[PartitionRow], busy: bool) -> Node {
    let allocated = gpus.iter().filter(|g| g.job_id.is_some()).count() as u32;
    let cpu_cores: Vec<u32> = row.cpu_cores.iter().map(|c| to_u32(*c)).collect();
    let cpu_sockets: Vec<u32> = row.cpu_sockets.iter().map(|s| to_u32(*s)).collect();
    let shape = berth_core::cores::NodeShape::new(to_u32(row.cpus), &cpu_cores, &cpu_sockets);
    // Where jobs get whole cores, CPUs of a core cut by CoreSpecCount are never given.
    let givable =
        berth_core::cores::CoreLayout::new(&cpu_cores, to_u32(row.usable_cpus)).usable_cpus();
    let cpus_full = givable > 0 && row.cpus_allocated >= i64::from(givable);
    let state = match row.state.as_str() {
        "UP" => NodeState::from_holdings(
            busy,
            row.usable_cpus > 0,
            cpus_full,
            gpus.len() as u64,
            u64::from(allocated),
        ),
        other => other.parse().unwrap_or(NodeState::Down),
    };
    Node {
        name: row.name.clone(),
        state,
        reason: row.reason.clone(),
        reason_user: row.reason_user.clone(),
        reason_time: row.reason_time,
        cpus: to_u32(row.cpus),
        memory_mib: to_u64(row.memory_mib),
        features: row.features.clone(),
        cpus_effective: to_u32(row.usable_cpus),
        cpus_allocated: u32::try_from(row.cpus_allocated.max(0)).unwrap_or(u32::MAX),
        memory_effective_mib: to_u64(row.usable_memory_mib),
        memory_allocated_mib: to_u64(row.memory_allocated_mib),
        weight: to_u32(row.weight),
        core_spec_count: to_u32(row.core_spec_count),
        mem_spec_limit_mib: to_u64(row.mem_spec_limit_mib),
        sockets: shape.sockets,
        cores_per_socket: shape.cores_per_socket,
        threads_per_core: shape.threads_per_core,
        gpus: gpus
            .iter()
            .map(|g| Gpu {
                index: to_u32(g.index),
                uuid: g.uuid.clone(),
                model: g.model.clone(),
                memory_mib: to_u64(g.memory_mib),
                domain: g.domain.map(to_u32),
                kind: GpuKind::parse(&g.kind).unwrap_or_default(),
                parent: g.parent.map(to_u32),
                allocated: g.job_id.is_some(),
                job_id: g.job_id,
                utilization_pct: g.utilization_pct.map(to_u32),
                memory_used_mib: g.memory_used_mib.map(to_u64),
            })
            .collect(),
        gpus_allocated: allocated,
        last_heartbeat: row.last_heartbeat,
        partitions: partitions
            .iter()
            .filter(|p| p.nodes.is_empty() || p.nodes.contains(&row.name))
            .map(|p| p.name.clone())
            .collect(),
        pool: row.pool.clone(),
        instance_id: row.instance_id.clone(),
        instance_type: row.instance_type.clone(),
        market: row.market.as_deref().and_then(market),
        zone: row.zone.clone(),
    }
}

/// A stored market (`on_demand`, `spot`).
pub fn market(s: &str) -> Option<berth_core::pool::Market> {
    match s {
        "on_demand" => Some(berth_core::pool::Market::OnDemand),
        "spot" => Some(berth_core::pool::Market::Spot),
        _ => None,
    }
}

/// A partition view, with the node and GPU counts of its members.
pub fn partition_view(row: &PartitionRow, nodes: &[NodeRow], gpus: &[GpuRow]) -> Partition {
    let members: std::collections::HashSet<i64> = nodes
        .iter()
        .filter(|n| row.nodes.is_empty() || row.nodes.contains(&n.name))
        .map(|n| n.id)
        .collect();
    let total_gpus = gpus.iter().filter(|g| members.contains(&g.node_id)).count() as u32;
    Partition {
        name: row.name.clone(),
        is_default: row.is_default,
        default_time: row.default_time.map(to_u64),
        max_time: row.max_time.map(to_u64),
        nodes: row.nodes.clone(),
        total_nodes: members.len() as u32,
        total_gpus,
        priority_tier: to_u32(row.priority_tier),
        max_nodes: row.max_nodes.map(to_u32),
        allowed_accounts: row.allowed_accounts.clone(),
        allowed_qos: row.allowed_qos.clone(),
        def_cpu_per_gpu: row.def_cpu_per_gpu.map(to_u32),
        def_mem_per_gpu: row.def_mem_per_gpu.map(to_u64),
        def_mem_per_cpu: row.def_mem_per_cpu.map(to_u64),
        max_mem_per_node: row.max_mem_per_node.map(to_u64),
    }
}
