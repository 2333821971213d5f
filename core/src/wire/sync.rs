//! The worker protocol: a node's sync request (reports, running jobs and tasks, samples)
//! and the answer (assignments, cancellations, limits, rejected reports), output chunks.

#[allow(unused_imports)]
use super::*;

/// A GPU sample, taken by the worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct GpuSample {
    /// The device index.
    pub index: u32,
    /// Utilisation, percent.
    pub utilization_pct: u32,
    /// Memory in use, MiB.
    pub memory_used_mib: u64,
    /// Power draw, watts.
    pub power_w: f64,
    /// Temperature, degrees Celsius.
    pub temperature_c: u32,
}

/// What happened to a job's process on a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReportKind {
    /// The batch script was started.
    Started,
    /// The batch script ended (exit code or signal below).
    Exited,
    /// The batch script could not be started (message below).
    LaunchFailed,
}

/// Whose fault a failed batch launch was (`LaunchFailed`), which decides what becomes of
/// the job. As Slurm treats a "batch job launch failure", a launch the node could not make
/// requeues the job rather than failing it; the job's (or its user's) own problems fail
/// it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum LaunchFault {
    /// The job's own setting (its `--chdir` does not exist, its `--output` cannot be
    /// opened): the job ends FAILED, as before.
    Job,
    /// The node (its job directory, its scratch space, starting the shepherd or the
    /// batch shell): the job is requeued, and a few such failures in a row drain the node
    /// ("batch job launch failure").
    Node,
    /// The job's user on this node (unknown here, or root where root jobs are refused): as
    /// for [`LaunchFault::Job`] the job ends FAILED naming why, and the node stays in
    /// service. Users are the same on every node of a cluster (Slurm's assumption), so
    /// another node would refuse it too; and a user must not be able to drain nodes by
    /// submitting jobs.
    User,
}

/// A job report from a worker. Reports are applied at most once per (job, run, kind).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct JobReport {
    /// The job.
    pub job_id: i64,
    /// The run (the job's restart count when it was assigned).
    pub run: u32,
    /// What happened.
    pub kind: ReportKind,
    /// When.
    pub at: DateTime<Utc>,
    /// The exit code (`Exited`).
    pub exit_code: Option<i32>,
    /// The signal that killed it (`Exited`).
    pub signal: Option<i32>,
    /// The worker ended it at its time limit.
    #[serde(default)]
    pub timed_out: bool,
    /// The worker ended it because it was cancelled.
    #[serde(default)]
    pub cancelled: bool,
    /// The kernel's OOM killer killed a process of the job (its memory limit).
    #[serde(default)]
    pub out_of_memory: bool,
    /// CPU time (user and system) of the run's processes on the batch node, seconds, from
    /// the job's cgroup (`Exited`; absent where the node has no cgroup for the job).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_time_seconds: Option<f64>,
    /// Peak memory of the run's cgroup on the batch node, MiB (`Exited`; sacct's
    /// `MaxRSS`; absent where not reported).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rss_mib: Option<u64>,
    /// A message (`LaunchFailed`).
    pub message: Option<String>,
    /// The worker's sequence number for this report: reports of one node are numbered in
    /// the order they happened, kept on disk until acknowledged, and sent again in that
    /// order after an outage (the api applies each once per job, run, kind and node).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// The batch shell's process id, which is also its process group (`Started`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Whose fault a failed launch was (`LaunchFailed`; absent: the job's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch_fault: Option<LaunchFault>,
    /// The run's grant ([`Assignment::grant`]): lets the api accept the report even when
    /// its database forgot that the run was placed on this node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant: Option<String>,
    /// The node, not the job, ended the run (`Exited`): it lost contact with the api for
    /// its whole lease and stopped the run so that the job could never run twice at once,
    /// or its worker stopped with its jobs (`berth dev`). The api treats the run as one
    /// on a failed node: requeued (`--requeue`, the default) or ended NODE_FAIL, unless it
    /// has already moved on.
    #[serde(default)]
    pub node_failed: bool,
    /// The job's incarnation ([`Assignment::incarnation`]): the api refuses a report whose
    /// incarnation differs from its job's (another job that had the same id). Absent from
    /// workers older than incarnations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = Uuid)]
    pub incarnation: Option<Incarnation>,
}

/// A job run the worker is supervising.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct RunningJob {
    /// The job.
    pub job_id: i64,
    /// Its run.
    pub run: u32,
    /// The job's incarnation, from the run's assignment: a run of another job that had
    /// the same id (before a database failover) is stopped, not mistaken for this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = Uuid)]
    pub incarnation: Option<Incarnation>,
}

/// A step task the worker is running, with its job's incarnation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct RunningTask {
    /// Which task.
    #[serde(flatten)]
    pub key: crate::step::StepTaskKey,
    /// Its job's incarnation ([`crate::step::StepTaskLaunch::incarnation`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = Uuid)]
    pub incarnation: Option<Incarnation>,
}

/// `POST /v1/nodes/{name}/sync`: the worker's long poll. It carries the heartbeat (its
/// arrival), job reports and GPU samples, and returns what the node must run or stop.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SyncRequest {
    /// Job reports since the last acknowledged sync, oldest first.
    #[serde(default)]
    pub reports: Vec<JobReport>,
    /// Job runs the worker is supervising now.
    #[serde(default)]
    pub running: Vec<RunningJob>,
    /// The latest GPU samples.
    #[serde(default)]
    pub samples: Vec<GpuSample>,
    /// How long the api may hold the request when there is nothing new, seconds
    /// (0..=60, default 0).
    #[serde(default)]
    pub wait_seconds: u32,
    /// Step tasks the worker is running now.
    #[serde(default)]
    pub running_tasks: Vec<RunningTask>,
    /// Step task reports since the last acknowledged sync, oldest first.
    #[serde(default)]
    pub step_reports: Vec<crate::step::StepTaskReport>,
    /// GPU faults seen since the last acknowledged sync; each drains the node.
    #[serde(default)]
    pub gpu_faults: Vec<crate::stats::GpuFault>,
    /// Job runs that reached their time limit: the api records the TIMEOUT decision, and
    /// the worker signals them only once this sync is answered (or after a few seconds
    /// without an answer).
    #[serde(default)]
    pub time_limits: Vec<RunningJob>,
    /// The highest report sequence number the api has acknowledged to this worker. When
    /// the api's database remembers less (it lost its last commits in a failover), the
    /// answer asks for the reports after what it remembers ([`SyncResponse::resend_after`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acked_seq: Option<u64>,
    /// The node's instance has an interruption notice (a spot reclaim, from the instance
    /// metadata's `spot/instance-action`): the api drains the node and stops and requeues
    /// its jobs. Sent in every sync while the notice stands; absent from older workers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interruption: Option<Interruption>,
    /// How far the worker has applied the terminal input of each `--pty` task it runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pty_applied: Vec<crate::step::PtyApplied>,
    /// The ids of the signals ([`SyncResponse::signals`]) the worker has dealt with since
    /// its last successful sync (sent, or dropped for a run it no longer runs): the api
    /// forgets them, so each is sent once. Absent from older workers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signals_delivered: Vec<i64>,
    /// The highest job id this worker remembers (its runs, step tasks and journal): after
    /// a database failover that lost the last commits, the api moves the job id sequence
    /// past it so that no new job takes the id of a run the node remembers. Absent from
    /// older workers, and when it remembers none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_job_id: Option<i64>,
}

/// An interruption notice of the node's cloud instance, as EC2's instance metadata
/// `spot/instance-action` gives it (`{"action": "terminate", "time": "2026-12-01T12:00:00Z"}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Interruption {
    /// What will happen to the instance: `terminate`, `stop` or `hibernate`.
    pub action: String,
    /// When it will happen (RFC 3339, UTC).
    pub time: chrono::DateTime<chrono::Utc>,
}

/// A batch script the node must run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Assignment {
    /// The job id.
    pub job_id: i64,
    /// The run (the job's restart count).
    pub run: u32,
    /// The job name.
    pub name: String,
    /// The submitting user.
    pub user: String,
    /// The account.
    pub account: Option<String>,
    /// The partition.
    pub partition: String,
    /// The batch script.
    pub script: String,
    /// The batch script's arguments (`sbatch job.sh a b`): its `$1`, `$2` …, given to it
    /// as argv (never through a shell).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub script_args: Vec<String>,
    /// The directory the job was submitted from.
    pub submit_dir: Option<String>,
    /// The working directory (`--chdir`, else the submit directory); `None`: the worker
    /// makes a scratch directory.
    pub work_dir: Option<String>,
    /// The stdout pattern (`--output`, else `slurm-%j.out`).
    pub stdout: String,
    /// The stderr pattern, when split from stdout.
    pub stderr: Option<String>,
    /// `--open-mode`.
    pub open_mode: OpenMode,
    /// The time limit, seconds; `None`: unlimited.
    pub time_limit: Option<u64>,
    /// The GPU indices allocated on this node.
    pub gpus: Vec<u32>,
    /// This node's index in the allocation (`SLURM_NODEID`).
    pub node_index: u32,
    /// Every allocated node, in node-index order.
    pub nodes: Vec<String>,
    /// Tasks in the job.
    pub ntasks: u32,
    /// `--cpus-per-task`, when given.
    pub cpus_per_task: Option<u32>,
    /// `--ntasks-per-node`, when given.
    pub ntasks_per_node: Option<u32>,
    /// The submission environment.
    pub environment: BTreeMap<String, String>,
    /// The array's master job id, for an array task.
    pub array_job_id: Option<i64>,
    /// The array task index.
    pub array_task_id: Option<u32>,
    /// Tasks in the array.
    pub array_task_count: Option<u32>,
    /// Slurm's output variables the api works out from the job's record (see
    /// [`crate::wire::API_SLURM_VARIABLES`]): the worker sets these, and removes those of
    /// that list that are absent (never inheriting its own).
    #[serde(default)]
    pub slurm_variables: BTreeMap<String, String>,
    /// `--gpus-per-task`, when given (`SLURM_GPUS_PER_TASK`, inherited by `srun`).
    #[serde(default)]
    pub gpus_per_task: Option<u32>,
    /// The job's memory limit on this node, MiB (`--mem`, `--mem-per-gpu` × GPUs here, or
    /// `--mem-per-cpu` × CPUs here); enforced with cgroups where the node has them.
    #[serde(default)]
    pub memory_limit_mib: Option<u64>,
    /// CPUs the job may use on this node (`--cpus-per-task` × its tasks here); enforced
    /// as a CPU quota with cgroups where the node has them.
    #[serde(default)]
    pub cpu_limit: Option<u32>,
    /// The logical CPU ids allocated to the job on this node (as the node reported its
    /// CPUs: `0 .. cpus`); the worker confines the job to them (a cpuset) where it can.
    /// Empty: not placed by CPU (a scheduler older than CPU placement).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_ids: Vec<u32>,
    /// The most hardware threads of each of its cores the job runs on (Slurm's
    /// `threads_per_core`: 1 for `--hint=nomultithread`); the worker confines the job to
    /// the lowest that many CPU ids of each core of `cpu_ids`, by the core of each id it
    /// reported. `None`: every CPU of `cpu_ids`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads_per_core: Option<u32>,
    /// `--signal`, parsed: the warning before the time limit.
    #[serde(default)]
    pub warning_signal: Option<crate::signal::WarningSignal>,
    /// A token scoped to this job (`BERTH_TOKEN` in the job): it may read, requeue and
    /// cancel the job, create its steps and submit jobs as its user, nothing else.
    #[serde(default)]
    pub job_token: Option<String>,
    /// The api's signed statement that this run (job, run, node, GPUs) was placed on this
    /// node (a JWT with audience `berth-run-grant`, signed with the server's HS256
    /// secret; absent when the server has none). The worker keeps it with the run and
    /// attaches it to the run's reports: after a database failover that forgot the
    /// placement, it proves the run is this node's. It is no bearer token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant: Option<String>,
    /// The job's incarnation ([`Incarnation`]): the worker keeps it with the run, puts it
    /// on the run's reports and output, and never takes a run of another incarnation for
    /// this one (it stops that one first). Absent from apis older than incarnations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = Uuid)]
    pub incarnation: Option<Incarnation>,
}

/// The batch environment's Slurm variables that the api works out from the job's record
/// ([`Assignment::slurm_variables`]), after Slurm's sbatch "OUTPUT ENVIRONMENT
/// VARIABLES": QOS, reservation, GPUs and memory asked, tasks per node, start and end
/// times (seconds since the epoch), the array's index range, the `--export` setting, the
/// dependency, the `--open-mode` (`a` or `t`), and the `--hint` (which sbatch puts in the
/// job's environment as `SLURM_HINT`).
pub const API_SLURM_VARIABLES: &[&str] = &[
    "SLURM_JOB_QOS",
    "SLURM_JOB_RESERVATION",
    "SLURM_GPUS",
    "SLURM_GPUS_PER_NODE",
    "SLURM_CPUS_PER_GPU",
    "SLURM_MEM_PER_NODE",
    "SLURM_MEM_PER_CPU",
    "SLURM_MEM_PER_GPU",
    "SLURM_TASKS_PER_NODE",
    "SLURM_JOB_START_TIME",
    "SLURM_JOB_END_TIME",
    "SLURM_ARRAY_TASK_MIN",
    "SLURM_ARRAY_TASK_MAX",
    "SLURM_ARRAY_TASK_STEP",
    "SLURM_EXPORT_ENV",
    "SLURM_JOB_DEPENDENCY",
    "SLURM_OPEN_MODE",
    "SLURM_HINT",
];

/// A job run the node must stop: SIGTERM to its batch shell's process group at once,
/// SIGKILL after `grace_seconds` (when given) or the worker's kill wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Cancellation {
    /// The job.
    pub job_id: i64,
    /// Its run.
    pub run: u32,
    /// The run was preempted (QOS `PreemptMode` `CANCEL` or `REQUEUE`): the worker names
    /// the ending `preempted` in the job's signal reason file before the SIGTERM.
    #[serde(default)]
    pub preempted: bool,
    /// Seconds from now until SIGKILL, in place of the worker's kill wait: what is left of
    /// a preempted run's QOS `GraceTime` (0: SIGKILL right after the SIGTERM). `None`:
    /// the worker's kill wait.
    #[serde(default)]
    pub grace_seconds: Option<u32>,
    /// The node's instance is being reclaimed (a spot interruption notice): the worker
    /// names the ending `reclaimed` in the job's signal reason file and sends the job its
    /// `--signal` warning (or SIGTERM when it asked for none), then SIGTERM and SIGKILL
    /// within `grace_seconds`.
    #[serde(default)]
    pub reclaimed: bool,
    /// The incarnation of the run to stop, as the worker said it runs it
    /// ([`RunningJob::incarnation`]): a run of another incarnation under the same job id
    /// and run is not this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = Uuid)]
    pub incarnation: Option<Incarnation>,
}

/// The current time limit of a job run the node is running, so that a change made while
/// it runs (`scontrol update JobId=… TimeLimit=…`) moves its deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct RunLimit {
    /// The job.
    pub job_id: i64,
    /// Its run.
    pub run: u32,
    /// The time limit, seconds, counted from the run's start; `None`: unlimited.
    pub time_limit: Option<u64>,
}

/// The answer to a sync.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
pub struct SyncResponse {
    /// Job runs the node must be running; the worker starts those it does not know.
    pub assignments: Vec<Assignment>,
    /// Job runs the node must stop (SIGTERM to the process group, SIGKILL after a grace).
    pub cancellations: Vec<Cancellation>,
    /// Step tasks the node must run; the worker starts those it does not know.
    #[serde(default)]
    pub step_tasks: Vec<crate::step::StepTaskLaunch>,
    /// Step tasks the node must stop (SIGTERM, SIGKILL after the grace).
    #[serde(default)]
    pub step_cancellations: Vec<crate::step::StepTaskKey>,
    /// Terminal input for the `--pty` tasks the node runs, after what it said it applied
    /// ([`SyncRequest::pty_applied`]), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pty_input: Vec<crate::step::PtyInput>,
    /// The time limit of each job run the node said it runs and may go on running; the
    /// worker moves a run's deadline when it differs from the one it enforces.
    #[serde(default)]
    pub run_limits: Vec<RunLimit>,
    /// Reports of this sync the api refused and will never apply (a run not placed on
    /// this node, a report that contradicts the job's record), each with why. They count
    /// as answered: the worker logs them and does not send them again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rejected: Vec<RejectedReport>,
    /// The database remembers this node's reports only up to this sequence number, less
    /// than the worker's `acked_seq` (a failover lost its last commits): the worker sends
    /// again the reports after it that it still keeps. Nothing else was applied or
    /// decided in this answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resend_after: Option<u64>,
    /// The node's lease, milliseconds counted from when the worker sent this sync: how
    /// long its runs may go on without another successful sync. It is shorter than the
    /// scheduler's node timeout (after which a silent node's runs are requeued), so a
    /// worker whose lease runs out has stopped its runs (SIGTERM, SIGKILL by the lease's
    /// end) before any of them can start again elsewhere. `None`: no lease (runs go on
    /// through any silence).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_ms: Option<u64>,
    /// Signals for the processes of runs the node runs (`scancel --signal`), oldest
    /// first; the worker sends each to the process groups it started for that run and
    /// acknowledges it in its next sync ([`SyncRequest::signals_delivered`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signals: Vec<crate::signal::SignalDelivery>,
}

/// Which kind of report a [`RejectedReport`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReportSource {
    /// A job report ([`SyncRequest::reports`]).
    JobReport,
    /// A step task report ([`SyncRequest::step_reports`]).
    StepReport,
    /// A time-limit notice ([`SyncRequest::time_limits`]).
    TimeLimit,
}

/// A report the api refused for good, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct RejectedReport {
    /// Which list of the request it came from.
    pub source: ReportSource,
    /// The job.
    pub job_id: i64,
    /// The run.
    pub run: u32,
    /// The job report's sequence number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// The step task's key, for a step report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<crate::step::StepTaskKey>,
    /// The HTTP status the report alone would have had: 403 for a run not placed on this
    /// node, 409 for a report of another job that had the same id (its incarnation
    /// differs from the job's), 422 for one that can never apply, 400 for a bad field.
    pub status: u16,
    /// Why.
    pub detail: String,
}

/// `POST /v1/jobs/{id}/output`: a chunk of a job's output file, uploaded by the worker.
/// Chunks are keyed by (run, stream, offset), so a repeated upload is harmless.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OutputChunk {
    /// The run.
    pub run: u32,
    /// Which stream.
    pub stream: OutputStream,
    /// Byte offset of `data` in this run's stream.
    pub offset: u64,
    /// The bytes, as UTF-8 (invalid sequences replaced).
    pub data: String,
    /// The job's incarnation ([`Assignment::incarnation`]): output of another job that
    /// had the same id is refused (404). Absent from older workers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = Uuid)]
    pub incarnation: Option<Incarnation>,
}
