//! Request and response bodies of the REST api (`/v1/...`) and of the worker protocol,
//! shared by the api (which serves them), the worker and the CLI (which send them).
//! Times are RFC 3339 UTC; durations are seconds; memory is MiB.

use crate::spec::{JobSpec, OpenMode};
use crate::state::{JobState, NodeState};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use utoipa::{IntoParams, ToSchema};

mod cluster;
mod queue;
mod reservation;
mod sync;
#[cfg(test)]
mod tests;

pub use cluster::*;
pub use queue::*;
pub use reservation::*;
pub use sync::*;

/// A job's incarnation: a random id (UUID v4) the database gives each job when it is
/// written, never changed. Job ids come from a sequence, and a PostgreSQL promoted from an
/// asynchronous standby that lost the last commits hands out ids the lost primary had
/// already given to other jobs; the incarnation tells those jobs apart. Every assignment,
/// run grant, job token, job report (and so every journal entry), output chunk, step task
/// and cancellation carries its job's, and the api refuses one that differs from the
/// job's record: another job's ending is never applied to a job that has its id.
pub type Incarnation = uuid::Uuid;

/// Whether two incarnations may name the same job: equal, or either unknown (a message
/// from an api or worker older than incarnations).
pub fn same_incarnation(a: Option<Incarnation>, b: Option<Incarnation>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    }
}

/// `POST /v1/jobs`: a batch script with optional `sbatch` command-line options, or a
/// structured spec with a script. Exactly one of `script` or `spec.wrap` must give the
/// commands to run.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct JobCreate {
    /// The batch script; its `#SBATCH` lines are parsed as `sbatch` does.
    #[serde(default)]
    pub script: Option<String>,
    /// `sbatch` command-line options (`["--gres=gpu:2", "-t", "10"]`); they win over the
    /// script's `#SBATCH` lines.
    #[serde(default)]
    pub args: Vec<String>,
    /// A structured spec, applied over the script's options (for clients that do not
    /// write `#SBATCH` lines).
    #[serde(default)]
    pub spec: Option<JobSpec>,
    /// The directory the job was submitted from (`SLURM_SUBMIT_DIR`); the default working
    /// directory.
    #[serde(default)]
    pub submit_dir: Option<String>,
    /// The submission environment exported to the job (`--export=ALL`, Slurm's default).
    #[serde(default)]
    pub environment: BTreeMap<String, String>,
    /// The batch script's file name, the job's name when no `--job-name` is given (as
    /// `sbatch` names jobs after their script).
    #[serde(default)]
    pub script_name: Option<String>,
    /// Arguments for the batch script (`sbatch job.sh a b`: `$1=a`, `$2=b`), passed to it
    /// as argv, never through a shell.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub script_args: Vec<String>,
}

/// `POST /v1/jobs/will-run` answer (`sbatch --test-only`): when and where the job would
/// start if it were submitted now, as Slurm's will-run test tells. Nothing is stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct JobWillRun {
    /// The id the job would have had: drawn from the job id sequence and never given to
    /// any job (Slurm prints one too, though nothing is kept).
    pub job_id: i64,
    /// The earliest expected start (RFC 3339, UTC): now when it could start at once, else
    /// the start the scheduler's plan reserves for it. `None`: the plan gives it no start
    /// yet (see `reason`).
    pub start_time: Option<chrono::DateTime<chrono::Utc>>,
    /// The nodes it would run on (at that start).
    pub nodes: Vec<String>,
    /// The CPUs it would hold in all (Slurm's "using N processors").
    pub cpus: u32,
    /// The partition it would run in.
    pub partition: String,
    /// Why it would wait (Slurm's reason names: `Priority`, `Resources` …), when it
    /// could not start at once.
    pub reason: Option<String>,
}

/// `POST /v1/jobs` answer.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct JobCreated {
    /// The new job's id.
    pub id: i64,
}

/// `GET /v1/cluster` answer: what this cluster is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ClusterInfo {
    /// The cluster's name (Slurm's `ClusterName`, the servers' `cluster_name`): what
    /// `-M/--clusters` of the Slurm-named commands must name, and what slurmrestd's
    /// answers carry in `meta.slurm.cluster`.
    pub name: String,
    /// The api's Berth version.
    pub version: String,
}

/// `POST /v1/jobs/{id}/keepalive` answer: the allocation's client (salloc, srun outside
/// an allocation) is alive, and until when the job lasts without another keep-alive
/// (Slurm's `InactiveLimit`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct JobKeepalive {
    /// The job.
    pub job_id: i64,
    /// The cluster's inactive limit, seconds (`[scheduler] inactive_limit_seconds`; 0:
    /// none, the job is never ended for its client's silence). A client sends its next
    /// keep-alive well within it (salloc and srun: every quarter of it, at most 30 s).
    pub inactive_limit: u64,
    /// When the job ends (a running one TIMEOUT, a pending one CANCELLED, reason
    /// `InactiveLimit`) unless another keep-alive comes first; `None` without a limit.
    pub expires_at: Option<DateTime<Utc>>,
}

/// One node's share of a job's allocation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct JobAllocation {
    /// The node's name.
    pub node: String,
    /// Physical GPU indices on that node.
    pub gpus: Vec<u32>,
    /// Logical CPU ids on that node (Slurm's `CPU_IDs`); empty: not placed by CPU.
    #[serde(default)]
    pub cpus: Vec<u32>,
    /// Memory on that node, MiB (Slurm's `Mem`); 0: not placed by memory.
    #[serde(default)]
    pub memory_mib: u64,
}

/// A job, as `GET /v1/jobs/{id}` shows it.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Job {
    /// The job id.
    pub id: i64,
    /// The job name (`--job-name`, else the script's file name, else `sbatch`).
    pub name: String,
    /// The submitting user.
    pub user: String,
    /// The account charged.
    pub account: Option<String>,
    /// The partition: while a job that listed several (`-p a,b`) is pending, all of them
    /// separated by commas (as squeue shows them); once it started, the one it runs in.
    pub partition: String,
    /// The QOS.
    pub qos: Option<String>,
    /// The state.
    pub state: JobState,
    /// Why a pending job waits (Slurm's reason names: `Priority`, `Resources` …), or why
    /// a job ended as it did, in Slurm's names (`None` for COMPLETED, `NonZeroExitCode`,
    /// `RaisedSignal`, `TimeLimit`, `NodeDown`, `OutOfMemory`, `JobLaunchFailure`, …;
    /// see [`crate::reason::ended_job_reason`]).
    pub reason: Option<String>,
    /// What ended the job, when Berth knows more than the reason's name (Slurm's
    /// `state_desc`: `launch failed on node-1: …`, `preempted by job 7`); absent
    /// otherwise and while the job has not ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_description: Option<String>,
    /// When it was submitted.
    pub submit_time: DateTime<Utc>,
    /// When its current run started.
    pub start_time: Option<DateTime<Utc>>,
    /// When it ended.
    pub end_time: Option<DateTime<Utc>>,
    /// The time limit in seconds; `None` is unlimited.
    pub time_limit: Option<u64>,
    /// The batch script's exit code, once ended.
    pub exit_code: Option<i32>,
    /// The signal that ended the batch script, if one did.
    pub exit_signal: Option<i32>,
    /// Nodes asked for.
    pub num_nodes: u32,
    /// Tasks asked for.
    pub num_tasks: u32,
    /// CPUs (Slurm's `NumCPUs`): those allocated over all its nodes once placed by CPU,
    /// else those asked for (tasks × CPUs per task).
    #[serde(default)]
    pub num_cpus: u32,
    /// GPUs asked for on each node (all of the node's for a whole-node exclusive job).
    pub gpus_per_node: u32,
    /// The allocation, node by node in node-index order, once placed.
    pub allocations: Vec<JobAllocation>,
    /// The allocated nodes as a compressed host list (`node-[1-2]`).
    pub nodelist: Option<String>,
    /// The working directory of the batch script.
    pub work_dir: Option<String>,
    /// The stdout file, pattern expanded for the batch node.
    pub stdout_path: Option<String>,
    /// The stderr file, pattern expanded (same as stdout when not split).
    pub stderr_path: Option<String>,
    /// How many times the job was requeued.
    pub restart_count: u32,
    /// The full specification as submitted (values of `--export` variables named like
    /// secrets are masked).
    pub spec: JobSpec,
    /// For a pending job with a backfill reservation: when it is planned to start
    /// (`squeue --start`).
    #[serde(default)]
    pub expected_start: Option<DateTime<Utc>>,
    /// For a pending job that is not held: its place in the scheduler's order (1 = the
    /// first it considers), by priority, then submit time, then id, over every pending
    /// job of every partition.
    #[serde(default)]
    pub queue_position: Option<u64>,
    /// The multifactor priority the scheduler computed last (pending jobs).
    #[serde(default)]
    pub priority: Option<i64>,
    /// `--nice`.
    #[serde(default)]
    pub nice: i32,
    /// The array's id (`%A`), for an array task or master.
    #[serde(default)]
    pub array_job_id: Option<i64>,
    /// The array task index (`%a`), once the task has its own row.
    #[serde(default)]
    pub array_task_id: Option<u32>,
    /// For an array master: the task indices not started yet (`3-99%4` style, without
    /// the limit).
    #[serde(default)]
    pub array_tasks_pending: Option<String>,
    /// For an array master: the most tasks that may run at once (`--array=…%N`), if
    /// limited.
    #[serde(default)]
    pub array_max_running: Option<u32>,
    /// The job's environment; values of variables named like secrets
    /// ([`crate::identity::is_secret_name`]) are masked as `********`.
    #[serde(default)]
    pub environment: BTreeMap<String, String>,
    /// Whether the api stopped keeping this job's output at its cap (`[api]
    /// output_cap_mib`) for some run and stream: `GET /v1/jobs/{id}/output` then ends that
    /// run's part with a truncation line; the files on the node are whole.
    #[serde(default)]
    pub output_truncated: bool,
}

/// `POST /v1/jobs/cancel`, `/v1/jobs/hold`, `/v1/jobs/release`: one action on many jobs
/// in one request (`scancel 12 13 14_2`, `scontrol hold 12 13`).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct JobBatch {
    /// The jobs, as `scancel` names them: `12`, or one array task `12_3` (cancel only);
    /// 1 to 1000 of them.
    pub jobs: Vec<String>,
}

/// The answer to a [`JobBatch`]: one item per job named, in the order given.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct JobBatchResult {
    /// The outcome for each job.
    pub items: Vec<JobBatchItem>,
}

/// One job's outcome in a [`JobBatchResult`]: what the single-job request
/// (`POST /v1/jobs/{id}/cancel` …) would have answered.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct JobBatchItem {
    /// The job as named in the request (`12`, `12_3`).
    pub job: String,
    /// The HTTP status the single-job request would have had (200, 404, 409 …).
    pub status: u16,
    /// The job after the action, when it succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Box<Job>>,
    /// Why it failed, otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<Problem>,
}

/// A page of jobs.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct JobList {
    /// The jobs, by ascending id.
    pub items: Vec<Job>,
    /// Pass as `cursor` to get the next page; absent on the last page.
    pub next_cursor: Option<String>,
}

/// An RFC 9457 problem document, the body of every error.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Problem {
    /// A URI naming the problem type (`urn:berth:problem:invalid-option`).
    #[serde(rename = "type")]
    pub problem_type: String,
    /// A short summary of the type.
    pub title: String,
    /// The HTTP status.
    pub status: u16,
    /// What went wrong in this instance.
    pub detail: String,
    /// A stable machine-readable code (`invalid_option`).
    pub code: String,
    /// The offending field or option, when there is one (`--nodes`, `spec.time_limit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// The offending script line (1-based), for batch-script errors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// The request id, to find it in the logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}
