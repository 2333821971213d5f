//! Job steps: what `srun` sends inside an allocation (`POST /v1/jobs/{id}/steps`), the
//! step and task views it follows, and the worker protocol's step messages (task
//! launches and cancellations out, task reports and output in).
//!
//! A step's tasks are spread over the job's nodes by Slurm's block distribution (see
//! [`layout`]); each task runs the step's command with its own `SLURM_PROCID`,
//! `SLURM_LOCALID`, `SLURM_NODEID` and, with `--gpus-per-task`, its own GPUs.

use crate::wire::OutputStream;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use utoipa::{IntoParams, ToSchema};

/// `POST /v1/jobs/{id}/steps`: `srun`'s options and command. Absent counts take the job's
/// (`-n` its task count, `--ntasks-per-node`, `--gpus-per-task`, `--cpus-per-task`), as
/// `srun` inherits them inside an allocation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StepCreate {
    /// The program and its arguments (`["bash", "-c", "echo hi"]`), run once per task.
    pub command: Vec<String>,
    /// `-n/--ntasks`.
    #[serde(default)]
    pub ntasks: Option<u32>,
    /// `--ntasks-per-node`.
    #[serde(default)]
    pub ntasks_per_node: Option<u32>,
    /// `-N/--nodes`: use the first N nodes of the allocation.
    #[serde(default)]
    pub nodes: Option<u32>,
    /// `-w/--nodelist`: these nodes of the allocation (a host list, `node-[1-2]`).
    #[serde(default)]
    pub nodelist: Option<String>,
    /// `--gpus-per-task`: each task gets this many of its node's allocated GPUs.
    #[serde(default)]
    pub gpus_per_task: Option<u32>,
    /// `-c/--cpus-per-task` (`SLURM_CPUS_PER_TASK`).
    #[serde(default)]
    pub cpus_per_task: Option<u32>,
    /// `-K/--kill-on-bad-exit`: a task ending with a non-zero code stops the others.
    #[serde(default)]
    pub kill_on_bad_exit: bool,
    /// `--overlap`: the step may share GPUs with other steps. Without it, a step with
    /// `--gpus-per-task` gets GPUs no other running step of that kind holds, and waits
    /// (409, srun retries) while too few are free.
    #[serde(default)]
    pub overlap: bool,
    /// `--gpu-bind`: `none` (every task sees all of its node's GPUs of the job),
    /// `single:N` (N tasks share each GPU, in order), `closest` (as the default: no
    /// topology is known yet). Default: each task its own GPUs with `--gpus-per-task`,
    /// else all of the node's.
    #[serde(default)]
    pub gpu_bind: Option<String>,
    /// The tasks' working directory (`srun`'s), absolute; absent: the job's.
    #[serde(default)]
    pub work_dir: Option<String>,
    /// The tasks' environment (what `srun --export` passes on).
    #[serde(default)]
    pub environment: BTreeMap<String, String>,
    /// `-m/--distribution`: how task ids go round the step's nodes: `block` (the
    /// default: ids grow node by node), `cyclic` (one task per node in turn), `plane=N`
    /// (N tasks per node in turn); a `:socket[:core]` part (`block`, `cyclic`, `fcyclic`,
    /// `*`) and `,Pack`/`,NoPack` are accepted and leave placement within a node as it
    /// is (tasks are not bound to CPUs of their own). `arbitrary` is refused.
    #[serde(default)]
    pub distribution: Option<String>,
    /// `--pty`: task 0 runs in a pseudo-terminal on its node (its stdin, stdout and
    /// stderr); what its user types arrives through `POST /v1/jobs/{id}/steps/{step}/input`
    /// and its output is task 0's stdout. Only the job's user (or an admin) may make one.
    #[serde(default)]
    pub pty: bool,
}

/// `POST /v1/jobs/{id}/steps/{step}/input`: what the user of a `--pty` step typed, and the
/// terminal's size when it changed (`srun --pty` sends both). Input is applied on the node
/// in the order the api stored it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StepInput {
    /// The bytes typed, base64 (RFC 4648 with padding), at most [`STEP_INPUT_MAX_BYTES`]
    /// once decoded; absent or empty: none.
    #[serde(default)]
    pub data: Option<String>,
    /// The terminal's rows (1..=65535), given with `cols` when its size changed.
    #[serde(default)]
    pub rows: Option<u16>,
    /// The terminal's columns (1..=65535), given with `rows`.
    #[serde(default)]
    pub cols: Option<u16>,
}

/// The most bytes one [`StepInput`] may carry (64 KiB).
pub const STEP_INPUT_MAX_BYTES: usize = 64 * 1024;

/// Terminal input for a `--pty` task the node runs (in a sync answer): apply each once,
/// in `seq` order, and report the highest applied in [`PtyApplied`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PtyInput {
    /// The task (task 0 of a `--pty` step).
    pub key: StepTaskKey,
    /// Arrival order at the api.
    pub seq: i64,
    /// The bytes typed, base64 (may be empty).
    #[serde(default)]
    pub data: String,
    /// The terminal's new rows, when it was resized.
    #[serde(default)]
    pub rows: Option<u16>,
    /// The terminal's new columns, when it was resized.
    #[serde(default)]
    pub cols: Option<u16>,
}

/// How far a worker has applied a running `--pty` task's input (in a sync request): the
/// highest [`PtyInput::seq`] written to its terminal, 0 before any. Listed for every
/// `--pty` task it runs, so the api knows which input to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PtyApplied {
    /// The task.
    pub key: StepTaskKey,
    /// The highest sequence number applied.
    pub seq: i64,
}

/// A step's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum StepState {
    /// Tasks are running (or about to be launched).
    Running,
    /// Every task exited 0.
    Completed,
    /// A task failed or was killed.
    Failed,
    /// The step (or its job) was cancelled.
    Cancelled,
}

impl StepState {
    /// Slurm's name (`RUNNING` …), as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            StepState::Running => "RUNNING",
            StepState::Completed => "COMPLETED",
            StepState::Failed => "FAILED",
            StepState::Cancelled => "CANCELLED",
        }
    }

    /// Parses a stored name; unknown names read as `FAILED`.
    pub fn from_stored(name: &str) -> StepState {
        match name {
            "RUNNING" => StepState::Running,
            "COMPLETED" => StepState::Completed,
            "CANCELLED" => StepState::Cancelled,
            _ => StepState::Failed,
        }
    }
}

/// One task of a step, as `GET /v1/jobs/{id}/steps/{step}` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct StepTask {
    /// `SLURM_PROCID`.
    pub task_id: u32,
    /// The node it runs on.
    pub node: String,
    /// `SLURM_NODEID`: the node's index in the job's allocation.
    pub node_index: u32,
    /// `SLURM_LOCALID`.
    pub local_id: u32,
    /// Physical GPU indices it sees.
    pub gpus: Vec<u32>,
    /// When its worker started it.
    pub started_at: Option<DateTime<Utc>>,
    /// When it ended.
    pub ended_at: Option<DateTime<Utc>>,
    /// Its exit code.
    pub exit_code: Option<i32>,
    /// The signal that ended it.
    pub exit_signal: Option<i32>,
    /// Why it could not be started, when it could not.
    pub message: Option<String>,
}

/// A job step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Step {
    /// The job.
    pub job_id: i64,
    /// The job's run the step belongs to.
    pub run: u32,
    /// `SLURM_STEP_ID`.
    pub step_id: u32,
    /// The state.
    pub state: StepState,
    /// The command.
    pub command: Vec<String>,
    /// The nodes, compressed (`SLURM_STEP_NODELIST`).
    pub nodelist: String,
    /// `--kill-on-bad-exit`.
    pub kill_on_bad_exit: bool,
    /// `--pty`: task 0 runs in a pseudo-terminal.
    #[serde(default)]
    pub pty: bool,
    /// Why the remaining tasks are being stopped, when they are.
    pub kill_reason: Option<String>,
    /// The highest task exit code once ended (128 + signal for a signalled task).
    pub exit_code: Option<i32>,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When its last task ended.
    pub end_time: Option<DateTime<Utc>>,
    /// Its tasks by `task_id`.
    pub tasks: Vec<StepTask>,
}

/// A list of steps.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct StepList {
    /// Steps of the job's current run, by id.
    pub items: Vec<Step>,
}

/// `GET /v1/jobs/{id}/steps/{step}/output` query.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StepOutputQuery {
    /// Only chunks after this sequence number (the last `seq` seen); default: all.
    pub after: Option<i64>,
}

/// A chunk of a task's output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct StepOutputChunk {
    /// Arrival order within the step; pass the last one seen as `after`.
    pub seq: i64,
    /// The task that wrote it.
    pub task_id: u32,
    /// Which stream.
    pub stream: OutputStream,
    /// The bytes, as UTF-8.
    pub data: String,
}

/// The answer to `GET /v1/jobs/{id}/steps/{step}/output`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct StepOutput {
    /// New chunks in arrival order (at most 1000).
    pub chunks: Vec<StepOutputChunk>,
}

/// `POST /v1/jobs/{id}/steps/{step}/output`: a chunk of a task's output, uploaded by its
/// worker. Keyed by (run, task, stream, offset), so a repeated upload is harmless.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StepOutputUpload {
    /// The job's run.
    pub run: u32,
    /// The task.
    pub task_id: u32,
    /// Which stream.
    pub stream: OutputStream,
    /// Byte offset of `data` in the task's stream.
    pub offset: u64,
    /// The bytes, as UTF-8 (invalid sequences replaced).
    pub data: String,
    /// The job's incarnation ([`crate::wire::Incarnation`]): output of another job that
    /// had the same id is refused (404). Absent from older workers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = Uuid)]
    pub incarnation: Option<crate::wire::Incarnation>,
}

/// Names one task of one step of one job run.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ToSchema,
)]
pub struct StepTaskKey {
    /// The job.
    pub job_id: i64,
    /// The job's run.
    pub run: u32,
    /// The step.
    pub step_id: u32,
    /// The task (`SLURM_PROCID`).
    pub task_id: u32,
}

/// A step task a node must start (in a sync answer).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct StepTaskLaunch {
    /// Which task.
    pub key: StepTaskKey,
    /// The command (argv).
    pub command: Vec<String>,
    /// The working directory; absent: the job's work dir, else a scratch directory.
    pub work_dir: Option<String>,
    /// The environment from `srun`; the worker overlays the task's Slurm variables.
    pub environment: BTreeMap<String, String>,
    /// `SLURM_LOCALID`.
    pub local_id: u32,
    /// `SLURM_NODEID`.
    pub node_index: u32,
    /// The task's GPUs (`CUDA_VISIBLE_DEVICES`).
    pub gpus: Vec<u32>,
    /// The step's GPUs on this node (`SLURM_STEP_GPUS`).
    pub step_gpus: Vec<u32>,
    /// The job's GPUs on this node (`SLURM_JOB_GPUS`).
    pub job_gpus: Vec<u32>,
    /// Tasks in the step (`SLURM_NTASKS`, `SLURM_STEP_NUM_TASKS`).
    pub ntasks: u32,
    /// Tasks of the step on this node (`SLURM_STEP_TASKS_PER_NODE` here).
    pub tasks_on_node: u32,
    /// The step's nodes, in order (`SLURM_STEP_NODELIST`).
    pub step_nodes: Vec<String>,
    /// `--cpus-per-task`.
    pub cpus_per_task: Option<u32>,
    /// The job's `--signal` without `B:`: the signal number to send the task …
    #[serde(default)]
    pub warning_signal: Option<i32>,
    /// … at this time (the job's start plus its time limit less the warning's seconds).
    #[serde(default)]
    pub warning_at: Option<DateTime<Utc>>,
    /// The job's user (whom a worker running as root runs the task as).
    #[serde(default)]
    pub user: String,
    /// The job's memory limit on this node, MiB (its cgroup's, shared with the batch
    /// shell on the batch node).
    #[serde(default)]
    pub memory_limit_mib: Option<u64>,
    /// The job's CPUs on this node (its cgroup's quota).
    #[serde(default)]
    pub cpu_limit: Option<u32>,
    /// The job's logical CPU ids on this node (its cpuset, which the step's tasks share);
    /// empty: not placed by CPU.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub job_cpu_ids: Vec<u32>,
    /// The job's most hardware threads per core (`--hint=nomultithread`: 1): the task
    /// runs on the lowest that many ids of each core of `job_cpu_ids`, as the job does.
    /// `None`: every CPU of `job_cpu_ids`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_threads_per_core: Option<u32>,
    /// Run in a pseudo-terminal (task 0 of a `--pty` step): its input arrives as
    /// [`PtyInput`]s.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pty: bool,
    /// The job's incarnation ([`crate::wire::Incarnation`]): the worker puts it on the
    /// task's reports and never takes a task of another incarnation for this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = Uuid)]
    pub incarnation: Option<crate::wire::Incarnation>,
}

/// What happened to a step task (in a sync request). Applied at most once per task and
/// kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct StepTaskReport {
    /// Which task.
    pub key: StepTaskKey,
    /// What happened (`started`, `exited`, `launch_failed`).
    pub kind: crate::wire::ReportKind,
    /// When.
    pub at: DateTime<Utc>,
    /// The exit code (`exited`).
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// The signal that ended it (`exited`).
    #[serde(default)]
    pub signal: Option<i32>,
    /// Why it could not start (`launch_failed`).
    #[serde(default)]
    pub message: Option<String>,
    /// The job's incarnation, from the task's launch: the api refuses a report of another
    /// job that had the same id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = Uuid)]
    pub incarnation: Option<crate::wire::Incarnation>,
}

/// `--gpu-bind`, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuBind {
    /// The default: a task's own GPUs with `--gpus-per-task`, else all of its node's.
    Default,
    /// `none`: every task sees all of its node's GPUs.
    None,
    /// `single:N`: N consecutive tasks share one GPU.
    Single(u32),
}

/// Parses `--gpu-bind` (`none`, `single:N`, `closest`; an optional `verbose,` prefix is
/// ignored).
///
/// # Errors
/// [`LayoutError`] on `--gpu-bind` for anything else.
pub fn parse_gpu_bind(value: Option<&str>) -> Result<GpuBind, LayoutError> {
    let Some(value) = value else {
        return Ok(GpuBind::Default);
    };
    let value = value.trim();
    let value = value.strip_prefix("verbose,").unwrap_or(value);
    match value {
        "none" => Ok(GpuBind::None),
        "closest" | "" => Ok(GpuBind::Default),
        _ => match value.strip_prefix("single:").map(str::parse::<u32>) {
            Some(Ok(n)) if n >= 1 => Ok(GpuBind::Single(n)),
            _ => Err(layout_error(
                "--gpu-bind",
                format!("{value:?}: expected none, single:N or closest"),
            )),
        },
    }
}

/// The GPUs task `local` of `tasks_on_node` sees, from the job's GPUs on its node.
///
/// # Errors
/// [`LayoutError`] on `--gpus-per-task` or `--gpu-bind` when the node has too few GPUs.
pub fn task_gpus(
    node_gpus: &[u32],
    local: u32,
    tasks_on_node: u32,
    gpus_per_task: Option<u32>,
    bind: GpuBind,
) -> Result<Vec<u32>, LayoutError> {
    match bind {
        GpuBind::None => Ok(node_gpus.to_vec()),
        GpuBind::Single(n) => {
            let needed = tasks_on_node.div_ceil(n) as usize;
            if needed > node_gpus.len() {
                return Err(layout_error(
                    "--gpu-bind",
                    format!(
                        "single:{n} for {tasks_on_node} task(s) needs {needed} GPUs; the job holds {} on the node",
                        node_gpus.len()
                    ),
                ));
            }
            Ok(vec![node_gpus[(local / n) as usize]])
        }
        GpuBind::Default => match gpus_per_task {
            Some(per) => {
                let needed = per as usize * tasks_on_node as usize;
                if needed > node_gpus.len() {
                    return Err(layout_error(
                        "--gpus-per-task",
                        format!(
                            "{tasks_on_node} task(s) × {per} GPU(s) need {needed} GPUs; the job holds {} on the node",
                            node_gpus.len()
                        ),
                    ));
                }
                let start = (local * per) as usize;
                Ok(node_gpus[start..start + per as usize].to_vec())
            }
            None => Ok(node_gpus.to_vec()),
        },
    }
}

/// A node's share of a step: tasks per node index, in the order of `nodes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepLayout {
    /// Indices (into the job's node list) of the step's nodes, ascending.
    pub nodes: Vec<usize>,
    /// Tasks on each of those nodes (same order); block distribution: task ids grow
    /// node by node.
    pub tasks_per_node: Vec<u32>,
}

/// `srun -m/--distribution`'s node level: how task ids go round the step's nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Distribution {
    /// Task ids grow node by node (Slurm's default).
    #[default]
    Block,
    /// One task per node in turn.
    Cyclic,
    /// This many tasks per node in turn.
    Plane(u32),
}

/// Parses `-m/--distribution` (Slurm's `block|cyclic|plane=N|arbitrary|*`, then optional
/// `:block|cyclic|fcyclic|*` for sockets and cores, then optional `,Pack|NoPack`).
///
/// # Errors
/// [`LayoutError`] on `--distribution`: an unknown word, `plane` without a size ≥ 1,
/// `arbitrary` (it needs a host file Berth does not read).
pub fn parse_distribution(value: &str) -> Result<Distribution, LayoutError> {
    let bad = |why: String| layout_error("--distribution", why);
    let (levels, pack) = match value.split_once(',') {
        Some((levels, pack)) => (levels, Some(pack)),
        None => (value, None),
    };
    if let Some(pack) = pack {
        if !pack.eq_ignore_ascii_case("pack") && !pack.eq_ignore_ascii_case("nopack") {
            return Err(bad(format!("{pack:?} is not Pack or NoPack")));
        }
    }
    let mut parts = levels.split(':');
    let node = parts.next().unwrap_or_default();
    let distribution = match node.to_ascii_lowercase().as_str() {
        "block" | "*" | "" => Distribution::Block,
        "cyclic" => Distribution::Cyclic,
        "arbitrary" => {
            return Err(bad(
                "arbitrary needs SLURM_HOSTFILE, which Berth does not read: use block, cyclic \
                 or plane=N"
                    .to_string(),
            ))
        }
        other => match other.strip_prefix("plane=").map(str::parse::<u32>) {
            Some(Ok(n)) if n >= 1 => Distribution::Plane(n),
            Some(_) => return Err(bad(format!("{node:?}: plane needs a size ≥ 1 (plane=4)"))),
            None => {
                return Err(bad(format!(
                    "{node:?} is not block, cyclic, plane=N or arbitrary"
                )))
            }
        },
    };
    let mut levels_left = 2;
    for level in parts {
        if levels_left == 0 {
            return Err(bad(format!("{value:?} has more than three levels")));
        }
        levels_left -= 1;
        if !matches!(
            level.to_ascii_lowercase().as_str(),
            "block" | "cyclic" | "fcyclic" | "*"
        ) {
            return Err(bad(format!(
                "{level:?} is not block, cyclic, fcyclic or * (the socket and core levels)"
            )));
        }
    }
    Ok(distribution)
}

/// The task ids on each node of a laid-out step (`tasks_per_node` in node order) under
/// `distribution`: block gives node 0 the first ids; cyclic and plane go round the nodes
/// that still have room, one or N ids at a time. Ids are `0 .. sum`, each once.
pub fn task_ids(tasks_per_node: &[u32], distribution: Distribution) -> Vec<Vec<u32>> {
    let mut ids: Vec<Vec<u32>> = tasks_per_node
        .iter()
        .map(|&n| Vec::with_capacity(n as usize))
        .collect();
    let total: u32 = tasks_per_node.iter().sum();
    let chunk = match distribution {
        Distribution::Block => u32::MAX,
        Distribution::Cyclic => 1,
        Distribution::Plane(n) => n,
    };
    let mut next = 0u32;
    while next < total {
        for (node, &room) in tasks_per_node.iter().enumerate() {
            let here = &mut ids[node];
            let mut taken = 0;
            while taken < chunk && (here.len() as u32) < room && next < total {
                here.push(next);
                next += 1;
                taken += 1;
            }
        }
    }
    ids
}

/// Why a step cannot be laid out; `field` names the `srun` option.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct LayoutError {
    /// The offending option (`--ntasks`, `--nodelist` …).
    pub field: &'static str,
    /// What is wrong.
    pub message: String,
}

fn layout_error(field: &'static str, message: impl Into<String>) -> LayoutError {
    LayoutError {
        field,
        message: message.into(),
    }
}

/// Lays out a step on a job's allocation (`job_nodes` in node-index order), by Slurm's
/// rules inside an allocation:
///
/// * nodes: `-w` (each must be allocated to the job), else the first `-N`, else every
///   node, but no more nodes than tasks when `-n` is given;
/// * tasks: `-n`, else `--ntasks-per-node` × nodes, else one per node when `-N`/`-w` is
///   given, else the job's task count (`job_ntasks`, with the job's
///   `--ntasks-per-node` when it had one);
/// * distribution: `--ntasks-per-node` each when given, else as even as possible with
///   the first nodes taking the remainder (block: task ids grow node by node).
///
/// # Errors
/// [`LayoutError`] naming the option: a node not in the allocation, more nodes than
/// allocated, zero tasks, or more tasks than `--ntasks-per-node` allows.
pub fn layout(
    req: &StepCreate,
    job_nodes: &[String],
    job_ntasks: u32,
    job_ntasks_per_node: Option<u32>,
) -> Result<StepLayout, LayoutError> {
    let allocated = job_nodes.len();
    if allocated == 0 {
        return Err(layout_error("job", "the job has no allocation"));
    }
    let explicit_nodes = req.nodes.is_some() || req.nodelist.is_some();
    let mut nodes: Vec<usize> = match &req.nodelist {
        Some(list) => {
            let names = crate::hostlist::expand(list)
                .map_err(|e| layout_error("--nodelist", e.to_string()))?;
            let mut indices = Vec::new();
            for name in names {
                let index = job_nodes.iter().position(|n| *n == name).ok_or_else(|| {
                    layout_error("--nodelist", format!("{name} is not allocated to the job"))
                })?;
                if !indices.contains(&index) {
                    indices.push(index);
                }
            }
            indices.sort_unstable();
            indices
        }
        None => {
            let n = req.nodes.map(|n| n as usize).unwrap_or(allocated);
            if n == 0 {
                return Err(layout_error("--nodes", "must be at least 1"));
            }
            if n > allocated {
                return Err(layout_error(
                    "--nodes",
                    format!("{n} nodes asked, the job has {allocated}"),
                ));
            }
            (0..n).collect()
        }
    };
    if let (Some(n), Some(min)) = (req.nodes, req.nodelist.as_ref().map(|_| nodes.len())) {
        if (n as usize) < min {
            return Err(layout_error(
                "--nodes",
                format!("{n} nodes is fewer than the {min} of --nodelist"),
            ));
        }
    }
    let per_node = req
        .ntasks_per_node
        .or(if req.ntasks.is_none() && !explicit_nodes {
            job_ntasks_per_node
        } else {
            None
        });
    if per_node == Some(0) {
        return Err(layout_error("--ntasks-per-node", "must be at least 1"));
    }
    let ntasks = match (req.ntasks, per_node) {
        (Some(n), _) => n,
        (None, Some(per)) => per * nodes.len() as u32,
        (None, None) if explicit_nodes => nodes.len() as u32,
        (None, None) => job_ntasks.max(1),
    };
    if ntasks == 0 {
        return Err(layout_error("--ntasks", "must be at least 1"));
    }
    if req.nodes.is_none() && req.nodelist.is_none() && (ntasks as usize) < nodes.len() {
        nodes.truncate(ntasks as usize);
    }
    let count = nodes.len() as u32;
    let tasks_per_node: Vec<u32> = match per_node {
        Some(per) => {
            if ntasks > per * count {
                return Err(layout_error(
                    "--ntasks",
                    format!("{ntasks} tasks do not fit {per} per node on {count} node(s)"),
                ));
            }
            // Fill nodes up to `per` in order.
            let mut left = ntasks;
            nodes
                .iter()
                .map(|_| {
                    let here = left.min(per);
                    left -= here;
                    here
                })
                .collect()
        }
        None => (0..count)
            .map(|i| ntasks / count + u32::from(i < ntasks % count))
            .collect(),
    };
    Ok(StepLayout {
        nodes,
        tasks_per_node,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("node-{i}")).collect()
    }

    #[test]
    fn distributions_hand_out_task_ids_round_the_nodes() {
        assert_eq!(
            task_ids(&[3, 2], Distribution::Block),
            vec![vec![0, 1, 2], vec![3, 4]]
        );
        assert_eq!(
            task_ids(&[3, 2], Distribution::Cyclic),
            vec![vec![0, 2, 4], vec![1, 3]]
        );
        assert_eq!(
            task_ids(&[4, 4], Distribution::Plane(2)),
            vec![vec![0, 1, 4, 5], vec![2, 3, 6, 7]]
        );
        assert_eq!(
            task_ids(&[1, 3], Distribution::Plane(2)),
            vec![vec![0], vec![1, 2, 3]]
        );
        for (value, expected) in [
            ("block", Distribution::Block),
            ("cyclic:fcyclic", Distribution::Cyclic),
            ("plane=4", Distribution::Plane(4)),
            ("*:block:cyclic,Pack", Distribution::Block),
        ] {
            assert_eq!(parse_distribution(value).unwrap(), expected, "{value}");
        }
        for bad in [
            "arbitrary",
            "plane=0",
            "zigzag",
            "block:spiral",
            "block,tight",
            "a:b:c:d",
        ] {
            let e = parse_distribution(bad).unwrap_err();
            assert_eq!(e.field, "--distribution", "{bad}");
        }
    }

    #[test]
    fn inherits_the_jobs_tasks() {
        let l = layout(&StepCreate::default(), &nodes(1), 8, None).unwrap();
        assert_eq!(l.nodes, vec![0]);
        assert_eq!(l.tasks_per_node, vec![8]);
        let l = layout(&StepCreate::default(), &nodes(2), 2, Some(1)).unwrap();
        assert_eq!(l.nodes, vec![0, 1]);
        assert_eq!(l.tasks_per_node, vec![1, 1]);
    }

    #[test]
    fn spreads_tasks_in_blocks() {
        let req = StepCreate {
            ntasks: Some(5),
            ..Default::default()
        };
        let l = layout(&req, &nodes(2), 2, None).unwrap();
        assert_eq!(l.tasks_per_node, vec![3, 2]);
        let req = StepCreate {
            ntasks: Some(1),
            ..Default::default()
        };
        let l = layout(&req, &nodes(2), 2, None).unwrap();
        assert_eq!(l.nodes, vec![0]);
        assert_eq!(l.tasks_per_node, vec![1]);
    }

    #[test]
    fn nodes_and_nodelist_pick_nodes() {
        let req = StepCreate {
            nodes: Some(1),
            ..Default::default()
        };
        let l = layout(&req, &nodes(3), 6, None).unwrap();
        assert_eq!((l.nodes, l.tasks_per_node), (vec![0], vec![1]));
        let req = StepCreate {
            nodelist: Some("node-[2-3]".into()),
            ntasks_per_node: Some(2),
            ..Default::default()
        };
        let l = layout(&req, &nodes(3), 6, None).unwrap();
        assert_eq!((l.nodes, l.tasks_per_node), (vec![1, 2], vec![2, 2]));
    }

    #[test]
    fn gpu_binding_per_task() {
        let gpus = [2, 3, 4, 5];
        let bind = parse_gpu_bind(None).unwrap();
        assert_eq!(task_gpus(&gpus, 1, 4, Some(1), bind).unwrap(), vec![3]);
        assert_eq!(task_gpus(&gpus, 1, 2, Some(2), bind).unwrap(), vec![4, 5]);
        assert_eq!(task_gpus(&gpus, 0, 2, None, bind).unwrap(), gpus.to_vec());
        assert!(task_gpus(&gpus, 0, 5, Some(1), bind).is_err());
        let none = parse_gpu_bind(Some("none")).unwrap();
        assert_eq!(
            task_gpus(&gpus, 3, 4, Some(1), none).unwrap(),
            gpus.to_vec()
        );
        let single = parse_gpu_bind(Some("single:2")).unwrap();
        assert_eq!(task_gpus(&gpus, 3, 8, None, single).unwrap(), vec![3]);
        assert_eq!(task_gpus(&gpus, 7, 8, None, single).unwrap(), vec![5]);
        assert!(task_gpus(&gpus, 0, 9, None, single).is_err());
        assert_eq!(parse_gpu_bind(Some("closest")).unwrap(), GpuBind::Default);
        assert_eq!(
            parse_gpu_bind(Some("map_gpu:0")).unwrap_err().field,
            "--gpu-bind"
        );
    }

    #[test]
    fn refuses_what_the_allocation_lacks() {
        let req = StepCreate {
            nodelist: Some("node-9".into()),
            ..Default::default()
        };
        assert_eq!(
            layout(&req, &nodes(2), 2, None).unwrap_err().field,
            "--nodelist"
        );
        let req = StepCreate {
            nodes: Some(3),
            ..Default::default()
        };
        assert_eq!(
            layout(&req, &nodes(2), 2, None).unwrap_err().field,
            "--nodes"
        );
        let req = StepCreate {
            ntasks: Some(5),
            ntasks_per_node: Some(2),
            ..Default::default()
        };
        assert_eq!(
            layout(&req, &nodes(2), 2, None).unwrap_err().field,
            "--ntasks"
        );
    }
}
