//! Request and response bodies of the REST api (`/v1/...`) and of the worker protocol,
//! shared by the api (which serves them), the worker and the CLI (which send them).
//! Times are RFC 3339 UTC; durations are seconds; memory is MiB.

use crate::spec::{JobSpec, OpenMode};
use crate::state::{JobState, NodeState};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use utoipa::{IntoParams, ToSchema};

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
    /// a job ended as it did.
    pub reason: Option<String>,
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

/// A job as `squeue` lists it (`GET /v1/queue`): the fields squeue's formats show, and
/// none of [`Job`]'s submitted spec, environment or per-node allocation detail, so that a
/// queue of 10,000 jobs is a small answer. Each field means what [`Job`]'s field of the
/// same name means. A field with no value (a pending job's `start_time` …) is left out
/// rather than sent as `null`: a queue is mostly pending jobs, and those fields are most
/// of its bytes. `GET /v1/queue?fields=…` leaves out every field it does not name but
/// `id` and `state` ([`QueueFields`]); a field left out reads as its default here (an
/// empty string, 0, 1970-01-01T00:00:00Z, none).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct QueueJob {
    /// The job id.
    pub id: i64,
    /// The job name.
    #[serde(default)]
    pub name: String,
    /// The submitting user.
    #[serde(default)]
    pub user: String,
    /// The account charged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// The partition (while pending, every partition it may start in, `a,b`).
    #[serde(default)]
    pub partition: String,
    /// The QOS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qos: Option<String>,
    /// The state.
    pub state: JobState,
    /// Why a pending job waits, or why a job ended as it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// When it was submitted.
    #[serde(default)]
    pub submit_time: DateTime<Utc>,
    /// When its current run started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<DateTime<Utc>>,
    /// When it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_time: Option<DateTime<Utc>>,
    /// The time limit in seconds; `None` is unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_limit: Option<u64>,
    /// Nodes asked for.
    #[serde(default)]
    pub num_nodes: u32,
    /// Tasks asked for.
    #[serde(default)]
    pub num_tasks: u32,
    /// CPUs: allocated once placed by CPU, else asked for.
    #[serde(default)]
    pub num_cpus: u32,
    /// GPUs on each node.
    #[serde(default)]
    pub gpus_per_node: u32,
    /// The allocated nodes as a compressed host list (`node-[1-2]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodelist: Option<String>,
    /// The working directory of the batch script.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_dir: Option<String>,
    /// How many times the job was requeued.
    #[serde(default)]
    pub restart_count: u32,
    /// The batch script's exit code, once ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The signal that ended the batch script, if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_signal: Option<i32>,
    /// A pending job's planned start (`squeue --start`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_start: Option<DateTime<Utc>>,
    /// A pending job's multifactor priority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
    /// `--nice`.
    #[serde(default)]
    pub nice: i32,
    /// The array's id, for an array task or master.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array_job_id: Option<i64>,
    /// The array task index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array_task_id: Option<u32>,
    /// For an array master: the task indices not started yet (`4-9`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array_tasks_pending: Option<String>,
    /// For an array master: the most tasks that may run at once (`%N`), if limited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array_max_running: Option<u32>,
}

impl From<&Job> for QueueJob {
    fn from(job: &Job) -> QueueJob {
        QueueJob {
            id: job.id,
            name: job.name.clone(),
            user: job.user.clone(),
            account: job.account.clone(),
            partition: job.partition.clone(),
            qos: job.qos.clone(),
            state: job.state,
            reason: job.reason.clone(),
            submit_time: job.submit_time,
            start_time: job.start_time,
            end_time: job.end_time,
            time_limit: job.time_limit,
            num_nodes: job.num_nodes,
            num_tasks: job.num_tasks,
            num_cpus: job.num_cpus,
            gpus_per_node: job.gpus_per_node,
            nodelist: job.nodelist.clone(),
            work_dir: job.work_dir.clone(),
            restart_count: job.restart_count,
            exit_code: job.exit_code,
            exit_signal: job.exit_signal,
            expected_start: job.expected_start,
            priority: job.priority,
            nice: job.nice,
            array_job_id: job.array_job_id,
            array_task_id: job.array_task_id,
            array_tasks_pending: job.array_tasks_pending.clone(),
            array_max_running: job.array_max_running,
        }
    }
}

/// Which of [`QueueJob`]'s fields an answer of `GET /v1/queue` carries (`fields=name,user`:
/// a sparse fieldset): `id` and `state` always, and those named. squeue asks for the
/// fields its format prints, so that 10,000 jobs are a third of the bytes to encode, send
/// and parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueFields(u32);

/// A [`QueueJob`] as an answer with [`QueueFields`] writes it: only those fields, each as
/// [`QueueJob`]'s own serialization writes it (a field with no value left out).
#[derive(Debug, Clone, Copy)]
pub struct SparseQueueJob<'a> {
    /// The job.
    pub job: &'a QueueJob,
    /// The fields written.
    pub fields: QueueFields,
}

/// Whether a field of a [`QueueJob`] has a value to write (an `Option` that is `Some`;
/// every other field always has).
trait QueueFieldValue {
    fn has_value(&self) -> bool {
        true
    }
}

impl<T> QueueFieldValue for Option<T> {
    fn has_value(&self) -> bool {
        self.is_some()
    }
}

impl QueueFieldValue for i64 {}
impl QueueFieldValue for i32 {}
impl QueueFieldValue for u32 {}
impl QueueFieldValue for String {}
impl QueueFieldValue for JobState {}
impl QueueFieldValue for DateTime<Utc> {}

/// Defines [`QueueFields::NAMES`] and [`SparseQueueJob`]'s serialization from one list of
/// [`QueueJob`]'s fields, which must name every field in its order (a destructuring
/// below fails to compile otherwise).
macro_rules! queue_fields {
    ($($field:ident),* $(,)?) => {
        impl QueueFields {
            /// Every field's name, in [`QueueJob`]'s order (field `i` is bit `i`).
            pub const NAMES: &'static [&'static str] = &[$(stringify!($field)),*];
        }

        impl Serialize for SparseQueueJob<'_> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeMap;
                let job = self.job;
                let mut map = serializer.serialize_map(None)?;
                let mut bit = 0;
                $(
                    if self.fields.0 & (1 << bit) != 0 && job.$field.has_value() {
                        map.serialize_entry(stringify!($field), &job.$field)?;
                    }
                    bit += 1;
                )*
                debug_assert_eq!(bit, QueueFields::NAMES.len());
                map.end()
            }
        }

        /// Compiles only while the list above names every field of [`QueueJob`].
        #[allow(dead_code)]
        fn queue_fields_name_every_field(job: QueueJob) {
            let QueueJob { $($field: _),* } = job;
        }
    };
}

queue_fields!(
    id,
    name,
    user,
    account,
    partition,
    qos,
    state,
    reason,
    submit_time,
    start_time,
    end_time,
    time_limit,
    num_nodes,
    num_tasks,
    num_cpus,
    gpus_per_node,
    nodelist,
    work_dir,
    restart_count,
    exit_code,
    exit_signal,
    expected_start,
    priority,
    nice,
    array_job_id,
    array_task_id,
    array_tasks_pending,
    array_max_running,
);

impl QueueFields {
    /// Every field: what an answer without `fields` carries.
    pub const ALL: QueueFields = QueueFields((1 << QueueFields::NAMES.len()) - 1);

    /// `id` and `state` and the fields named in `list` (comma-separated names of
    /// [`QueueJob`]'s fields, as `fields=` takes them; blanks around a name and empty
    /// items are ignored).
    ///
    /// # Errors
    /// A message naming the first name that is not a field, and listing the fields.
    pub fn parse(list: &str) -> Result<QueueFields, String> {
        let mut bits = QueueFields::bit("id") | QueueFields::bit("state");
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let Some(i) = QueueFields::NAMES.iter().position(|n| *n == name) else {
                return Err(format!(
                    "{name:?} is not a field of a queue job (one of {})",
                    QueueFields::NAMES.join(", ")
                ));
            };
            bits |= 1 << i;
        }
        Ok(QueueFields(bits))
    }

    /// Whether the field `name` is in the set (`false` for a name that is no field).
    pub fn contains(self, name: &str) -> bool {
        self.0 & QueueFields::bit(name) != 0
    }

    fn bit(name: &str) -> u32 {
        QueueFields::NAMES
            .iter()
            .position(|n| *n == name)
            .map_or(0, |i| 1 << i)
    }
}

/// `GET /v1/queue`'s own parameters (beside [`JobListQuery`]'s filters).
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct QueueQuery {
    /// Only these fields of each job (comma-separated names of `QueueJob`'s fields:
    /// `name,user,partition`); `id` and `state` are always sent. Every field when absent.
    pub fields: Option<String>,
}

/// A page of the queue (`GET /v1/queue`).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct QueueList {
    /// The jobs, by ascending id.
    pub items: Vec<QueueJob>,
    /// Pass as `cursor` to get the next page; absent on the last page.
    pub next_cursor: Option<String>,
}

/// `GET /v1/jobs` and `GET /v1/queue` filters.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct JobListQuery {
    /// Only jobs in these states (comma-separated, long or compact names).
    pub state: Option<String>,
    /// Only this user's jobs.
    pub user: Option<String>,
    /// Only jobs of this partition.
    pub partition: Option<String>,
    /// Only jobs with this name.
    pub name: Option<String>,
    /// Only jobs charged to these accounts (comma-separated, as `squeue -A`).
    pub account: Option<String>,
    /// Only jobs of these QOS (comma-separated, as `squeue -q`).
    pub qos: Option<String>,
    /// Page size: `GET /v1/jobs` 1..=1000 (default 100); `GET /v1/queue` 1..=10000
    /// (default 10000; as `application/x-ndjson`, every job unless given).
    pub limit: Option<u32>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

/// Which output stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum OutputStream {
    /// Standard output (and standard error when they share a file).
    Stdout,
    /// Standard error, when `--error` names its own file.
    Stderr,
}

impl OutputStream {
    /// The lower-case name, as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            OutputStream::Stdout => "stdout",
            OutputStream::Stderr => "stderr",
        }
    }
}

/// `GET /v1/jobs/{id}/output` query.
#[derive(Debug, Clone, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct OutputQuery {
    /// `stdout` (default) or `stderr`.
    pub stream: Option<OutputStream>,
    /// Keep the response open and stream new output until the job ends.
    #[serde(default)]
    pub follow: bool,
}

/// What kind of device a node offers for GPU requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum GpuKind {
    /// A whole GPU.
    #[default]
    Gpu,
    /// A MIG instance of a GPU in MIG mode (`CUDA_VISIBLE_DEVICES` names its `MIG-…`
    /// UUID); requested as a GPU, its profile (`3g.40gb`) as the type:
    /// `--gres=gpu:3g.40gb:1`.
    Mig,
    /// A share of a GPU (Slurm's `shard` GRES: several jobs on one GPU), requested with
    /// `--gres=shard:N`; `CUDA_VISIBLE_DEVICES` names its GPU.
    Shard,
}

impl GpuKind {
    /// `gpu`, `mig` or `shard`.
    pub fn as_str(self) -> &'static str {
        match self {
            GpuKind::Gpu => "gpu",
            GpuKind::Mig => "mig",
            GpuKind::Shard => "shard",
        }
    }

    /// Parses [`GpuKind::as_str`]'s names.
    pub fn parse(s: &str) -> Option<GpuKind> {
        match s {
            "gpu" => Some(GpuKind::Gpu),
            "mig" => Some(GpuKind::Mig),
            "shard" => Some(GpuKind::Shard),
            _ => None,
        }
    }

    fn is_gpu(&self) -> bool {
        *self == GpuKind::Gpu
    }
}

/// A GPU (or a MIG instance or shard of one) as a node reports it: a device the
/// scheduler places jobs on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct GpuInfo {
    /// The device index on the node (what `CUDA_VISIBLE_DEVICES` names).
    pub index: u32,
    /// The device UUID (`GPU-…`).
    pub uuid: String,
    /// The model name (`NVIDIA H100 80GB HBM3`).
    pub model: String,
    /// Total memory, MiB.
    pub memory_mib: u64,
    /// Topology domain: GPUs of the node with the same number are close (the NUMA node of
    /// the GPU's PCI device under NVML; `--gpus 8xH100/2` domains when simulated). The
    /// scheduler gives a job GPUs of one domain when it can. Absent when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<u32>,
    /// Whole GPU (the default), MIG instance or shard.
    #[serde(default, skip_serializing_if = "GpuKind::is_gpu")]
    pub kind: GpuKind,
    /// For a MIG instance or a shard: the index of the physical GPU it is part of (whose
    /// `/dev/nvidiaN` the job may open).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<u32>,
}

/// A GPU in a node view, with its latest sample and holder.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Gpu {
    /// The device index.
    pub index: u32,
    /// The device UUID.
    pub uuid: String,
    /// The model name.
    pub model: String,
    /// Total memory, MiB.
    pub memory_mib: u64,
    /// Topology domain (see [`GpuInfo::domain`]), when the node reports one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<u32>,
    /// Whole GPU, MIG instance or shard.
    #[serde(default, skip_serializing_if = "GpuKind::is_gpu")]
    pub kind: GpuKind,
    /// The physical GPU of a MIG instance or shard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<u32>,
    /// A job holds it (whether or not the caller may see which).
    #[serde(default)]
    pub allocated: bool,
    /// The job holding it, when the caller may see that job (admins and operators see
    /// every job; a user their own and their coordinated accounts'). Another tenant's
    /// job is left out, as it is everywhere: an invisible job answers like an absent one.
    pub job_id: Option<i64>,
    /// Latest utilisation, percent (left out, like `job_id`, while a job the caller may
    /// not see holds it).
    pub utilization_pct: Option<u32>,
    /// Latest memory in use, MiB (left out like `utilization_pct`).
    pub memory_used_mib: Option<u64>,
}

/// A node, as `GET /v1/nodes` shows it.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Node {
    /// The node name (`node-1`).
    pub name: String,
    /// The state (IDLE/MIXED/ALLOCATED are derived from its allocations).
    pub state: NodeState,
    /// Why it is drained or down.
    pub reason: Option<String>,
    /// Who set the reason (Slurm's `REASON_UID`, sinfo's `%u`): the operator who drained
    /// the node, or `slurm` for the reasons Berth sets itself (`Not responding`, `Kill task
    /// failed`, a GPU fault …).
    #[serde(default)]
    pub reason_user: Option<String>,
    /// When the reason was set (sinfo's `%H`).
    #[serde(default)]
    pub reason_time: Option<DateTime<Utc>>,
    /// CPUs (Slurm's CPUTot): the configured value, else what the worker reported.
    pub cpus: u32,
    /// Memory (Slurm's RealMemory), MiB: the configured value, else what the worker
    /// reported.
    pub memory_mib: u64,
    /// Features for `--constraint` (Slurm's AvailableFeatures).
    pub features: Vec<String>,
    /// CPUs jobs may use (Slurm's CPUEfctv): `cpus` less `core_spec_count`.
    #[serde(default)]
    pub cpus_effective: u32,
    /// CPUs held by running jobs (Slurm's CPUAlloc).
    #[serde(default)]
    pub cpus_allocated: u32,
    /// Memory jobs may use, MiB: `memory_mib` less `mem_spec_limit_mib`.
    #[serde(default)]
    pub memory_effective_mib: u64,
    /// Memory held by running jobs, MiB (Slurm's AllocMem).
    #[serde(default)]
    pub memory_allocated_mib: u64,
    /// Slurm's Weight: nodes of lower weight are placed first (default 1).
    #[serde(default = "default_weight")]
    pub weight: u32,
    /// Slurm's CoreSpecCount: CPUs kept for the system.
    #[serde(default)]
    pub core_spec_count: u32,
    /// Slurm's MemSpecLimit, MiB: memory kept for the system.
    #[serde(default)]
    pub mem_spec_limit_mib: u64,
    /// Its GPUs by index.
    pub gpus: Vec<Gpu>,
    /// GPUs held by live allocations.
    pub gpus_allocated: u32,
    /// The last time the worker synced.
    pub last_heartbeat: Option<DateTime<Utc>>,
    /// Partitions it belongs to.
    pub partitions: Vec<String>,
    /// The cloud pool whose node slot it is (absent: a static node).
    #[serde(default)]
    pub pool: Option<String>,
    /// The provider's id of its instance, while it has one.
    #[serde(default)]
    pub instance_id: Option<String>,
    /// Its instance's type (`p5.48xlarge`).
    #[serde(default)]
    pub instance_type: Option<String>,
    /// How its instance is bought.
    #[serde(default)]
    pub market: Option<crate::pool::Market>,
    /// Its instance's availability zone.
    #[serde(default)]
    pub zone: Option<String>,
}

/// A list of nodes.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct NodeList {
    /// Nodes by name.
    pub items: Vec<Node>,
}

/// A partition, as `GET /v1/partitions` shows it.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Partition {
    /// The name.
    pub name: String,
    /// Whether jobs that name no partition land here.
    pub is_default: bool,
    /// The time limit given to jobs that set none, seconds (`None`: unlimited).
    pub default_time: Option<u64>,
    /// The largest time limit a job may ask, seconds (`None`: unlimited).
    pub max_time: Option<u64>,
    /// Member nodes; empty means every node.
    pub nodes: Vec<String>,
    /// Nodes currently in it.
    pub total_nodes: u32,
    /// GPUs currently in it.
    pub total_gpus: u32,
    /// `PriorityTier`: the partition factor of the multifactor priority.
    #[serde(default)]
    pub priority_tier: u32,
    /// `MaxNodes` per job (`None`: unlimited).
    #[serde(default)]
    pub max_nodes: Option<u32>,
    /// `AllowAccounts`; empty means every account.
    #[serde(default)]
    pub allowed_accounts: Vec<String>,
    /// `AllowQos`; empty means every QOS.
    #[serde(default)]
    pub allowed_qos: Vec<String>,
    /// `DefCpuPerGPU`: CPUs per GPU for jobs that ask GPUs but no CPUs (`None`: one per
    /// task).
    #[serde(default)]
    pub def_cpu_per_gpu: Option<u32>,
    /// `DefMemPerGPU`, MiB: memory per GPU for GPU jobs that ask no memory.
    #[serde(default)]
    pub def_mem_per_gpu: Option<u64>,
    /// `DefMemPerCPU`, MiB: memory per CPU for jobs that ask no memory.
    #[serde(default)]
    pub def_mem_per_cpu: Option<u64>,
    /// `MaxMemPerNode`, MiB: the most memory a job may have on one node.
    #[serde(default)]
    pub max_mem_per_node: Option<u64>,
}

/// `PUT /v1/partitions/{name}`: a partition's whole definition, as Slurm's `PartitionName=`
/// line in slurm.conf or `scontrol create partition` take it. Absent fields take their
/// defaults.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PartitionSpec {
    /// Jobs that name no partition land here (`Default=YES`); the previous default stops
    /// being one.
    #[serde(default)]
    pub is_default: bool,
    /// The time limit given to jobs that set none, seconds (`DefaultTime`; absent:
    /// unlimited).
    #[serde(default)]
    pub default_time: Option<u64>,
    /// The largest time limit a job may ask, seconds (`MaxTime`; absent: unlimited).
    #[serde(default)]
    pub max_time: Option<u64>,
    /// Member node names (`Nodes`); empty means every node. Names need not be registered
    /// yet (a node that joins later is a member).
    #[serde(default)]
    pub nodes: Vec<String>,
    /// `PriorityTier`, default 1.
    #[serde(default = "default_priority_tier")]
    pub priority_tier: u32,
    /// `MaxNodes` per job (absent: unlimited).
    #[serde(default)]
    pub max_nodes: Option<u32>,
    /// `AllowAccounts` (existing accounts); empty means every account.
    #[serde(default)]
    pub allowed_accounts: Vec<String>,
    /// `AllowQos` (existing QOS); empty means every QOS.
    #[serde(default)]
    pub allowed_qos: Vec<String>,
    /// `DefCpuPerGPU`: CPUs per GPU given to a job that asks GPUs but neither
    /// `-c/--cpus-per-task` nor `--cpus-per-gpu` (absent: one CPU per task).
    #[serde(default)]
    pub def_cpu_per_gpu: Option<u32>,
    /// `DefMemPerGPU`, MiB: memory per GPU given to a GPU job that asks no memory.
    #[serde(default)]
    pub def_mem_per_gpu: Option<u64>,
    /// `DefMemPerCPU`, MiB: memory per CPU given to a job that asks no memory (and no
    /// GPUs where `DefMemPerGPU` is set).
    #[serde(default)]
    pub def_mem_per_cpu: Option<u64>,
    /// `MaxMemPerNode`, MiB: a job asking more memory on a node is refused at submission;
    /// defaults are capped to it.
    #[serde(default)]
    pub max_mem_per_node: Option<u64>,
}

fn default_priority_tier() -> u32 {
    1
}

fn default_weight() -> u32 {
    1
}

/// Reads a field that may be absent (leave the value), `null` (clear it) or a value.
fn patch_field<'de, D, T>(de: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(de).map(Some)
}

/// `PATCH /v1/nodes/{name}`: what an operator configures for a node, as slurm.conf's node
/// line (and `scontrol update NodeName=…`) does. A field left out keeps its value; `null`
/// clears the configured value, so the worker's reported one applies again (Weight: 1;
/// the reserves: 0). Configured values survive the worker's re-registration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeUpdate {
    /// Slurm's CPUs: logical CPUs (sockets × cores × threads), 1 or more.
    #[serde(
        default,
        deserialize_with = "patch_field",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<u32>, nullable)]
    pub cpus: Option<Option<u32>>,
    /// Slurm's RealMemory, MiB, 1 or more.
    #[serde(
        default,
        deserialize_with = "patch_field",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<u64>, nullable)]
    pub memory_mib: Option<Option<u64>>,
    /// Slurm's Features (`h100`, `ib`): letters, digits, `_`, `.`, `-`; an empty list
    /// configures none.
    #[serde(
        default,
        deserialize_with = "patch_field",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<Vec<String>>, nullable)]
    pub features: Option<Option<Vec<String>>>,
    /// Slurm's Weight: nodes of lower weight are placed first.
    #[serde(
        default,
        deserialize_with = "patch_field",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<u32>, nullable)]
    pub weight: Option<Option<u32>>,
    /// Slurm's CoreSpecCount: CPUs kept for the system (fewer than the node's CPUs).
    #[serde(
        default,
        deserialize_with = "patch_field",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<u32>, nullable)]
    pub core_spec_count: Option<Option<u32>>,
    /// Slurm's MemSpecLimit, MiB: memory kept for the system (less than RealMemory).
    #[serde(
        default,
        deserialize_with = "patch_field",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<u64>, nullable)]
    pub mem_spec_limit_mib: Option<Option<u64>>,
}

/// `POST /v1/nodes/{name}/drain`: why the node is drained (scontrol's `Reason=`, required
/// as in Slurm).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeDrain {
    /// The reason shown by `berth nodes` and `sinfo -R` (1-256 characters).
    pub reason: String,
}

/// A list of partitions.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct PartitionList {
    /// Partitions by name.
    pub items: Vec<Partition>,
}

/// `POST /v1/nodes/register`: a worker announces its node and inventory. Registering
/// again (after a restart) updates the inventory.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeRegister {
    /// The node name, unique in the cluster.
    pub name: String,
    /// The host's name, for information.
    pub hostname: String,
    /// CPUs.
    pub cpus: u32,
    /// Memory, MiB.
    pub memory_mib: u64,
    /// Features for `--constraint`.
    #[serde(default)]
    pub features: Vec<String>,
    /// Slurm's Weight, when the worker declares one (operators' configured weight wins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<u32>,
    /// Per CPU id (`0 .. cpus`), its topology domain, numbered as GPU domains are
    /// ([`GpuInfo`]'s `domain`: the NUMA node); empty when unknown. The scheduler gives a
    /// job CPUs of its GPUs' domains first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_domains: Vec<u32>,
    /// GPUs.
    pub gpus: Vec<GpuInfo>,
}

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
/// times (seconds since the epoch), the array's index range, the `--export` setting.
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

/// `POST /v1/reservations`: an advance reservation, as Slurm's `scontrol create
/// reservation` takes it. Exactly one of `nodes`, `node_cnt` or `gpus` says what it holds;
/// at least one of `users` or `accounts` says who may use it; `end_time` or `duration`
/// says when it ends.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReservationCreate {
    /// `ReservationName`: 1-64 letters, digits, `_`, `.` or `-`, not starting with `-`.
    pub name: String,
    /// `StartTime`: `now`, `now+N[minutes|hours|days…]`, `YYYY-MM-DDTHH:MM[:SS]` (UTC) or
    /// RFC 3339; absent: now.
    #[serde(default)]
    pub start_time: Option<String>,
    /// `EndTime`, in the forms of `start_time`.
    #[serde(default)]
    pub end_time: Option<String>,
    /// `Duration`, Slurm's time format: `minutes`, `hours:minutes:seconds`,
    /// `days-hours[:minutes[:seconds]]`.
    #[serde(default)]
    pub duration: Option<String>,
    /// `Nodes`: a host list (`node-[1-2]`) or `ALL`.
    #[serde(default)]
    pub nodes: Option<String>,
    /// `NodeCnt`: this many whole nodes, picked at creation (idle ones first).
    #[serde(default)]
    pub node_cnt: Option<u32>,
    /// `TRES=gres/gpu:N`: this many GPUs, picked at creation (on as few nodes as they fit).
    #[serde(default)]
    pub gpus: Option<u32>,
    /// `PartitionName`: `node_cnt`, `gpus` and `ALL` pick from this partition's nodes.
    #[serde(default)]
    pub partition: Option<String>,
    /// `Users`: user names whose jobs may use it.
    #[serde(default)]
    pub users: Vec<String>,
    /// `Accounts`: accounts whose jobs may use it.
    #[serde(default)]
    pub accounts: Vec<String>,
    /// `Flags`.
    #[serde(default)]
    pub flags: Vec<crate::reservation::ReservationFlag>,
}

/// `PATCH /v1/reservations/{name}` (`scontrol update ReservationName=…`): the fields given
/// replace the reservation's; the rest stay. A new `start_time` without `end_time` or
/// `duration` keeps the duration; new `nodes`, `node_cnt` or `gpus` pick the held
/// resources again.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReservationUpdate {
    /// `StartTime`, as in [`ReservationCreate::start_time`].
    #[serde(default)]
    pub start_time: Option<String>,
    /// `EndTime`.
    #[serde(default)]
    pub end_time: Option<String>,
    /// `Duration`.
    #[serde(default)]
    pub duration: Option<String>,
    /// `Nodes`.
    #[serde(default)]
    pub nodes: Option<String>,
    /// `NodeCnt`.
    #[serde(default)]
    pub node_cnt: Option<u32>,
    /// `TRES=gres/gpu:N`.
    #[serde(default)]
    pub gpus: Option<u32>,
    /// `PartitionName`.
    #[serde(default)]
    pub partition: Option<String>,
    /// `Users`.
    #[serde(default)]
    pub users: Option<Vec<String>>,
    /// `Accounts`.
    #[serde(default)]
    pub accounts: Option<Vec<String>>,
    /// `Flags`.
    #[serde(default)]
    pub flags: Option<Vec<crate::reservation::ReservationFlag>>,
}

/// A node an advance reservation holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ReservationNode {
    /// The node name.
    pub name: String,
    /// The GPU indices held there (a GPU-count reservation); absent: the whole node.
    #[serde(default)]
    pub gpus: Option<Vec<u32>>,
}

/// An advance reservation, as `GET /v1/reservations/{name}` shows it. For `DAILY` and
/// `WEEKLY` ones, `start_time` and `end_time` are the current or next window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Reservation {
    /// `ReservationName`.
    pub name: String,
    /// The (current or next) window's start.
    pub start_time: DateTime<Utc>,
    /// The (current or next) window's end.
    pub end_time: DateTime<Utc>,
    /// Seconds.
    pub duration: u64,
    /// What it holds, node by node (by name).
    pub nodes: Vec<ReservationNode>,
    /// The nodes as a compressed host list (`node-[1-2]`).
    pub node_list: String,
    /// Nodes held (wholly or in part).
    pub node_cnt: u32,
    /// CPUs of the wholly held nodes.
    pub cpus: u32,
    /// GPUs held (all of a wholly held node's).
    pub gpus: u32,
    /// Slurm's `TRES=` (`cpu=8,gres/gpu=8`).
    pub tres: String,
    /// `PartitionName`.
    #[serde(default)]
    pub partition: Option<String>,
    /// `Users`.
    pub users: Vec<String>,
    /// `Accounts`.
    pub accounts: Vec<String>,
    /// `Flags`.
    pub flags: Vec<crate::reservation::ReservationFlag>,
    /// `ACTIVE` inside the window, else `INACTIVE`.
    pub state: String,
    /// Who created it.
    pub created_by: String,
}

/// `GET /v1/reservations`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ReservationList {
    /// The reservations the caller may see, by start time.
    pub items: Vec<Reservation>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A queue job with every field given a value, and one with every optional field empty.
    fn jobs() -> [QueueJob; 2] {
        let t = |s: &str| s.parse::<DateTime<Utc>>().unwrap();
        let full = QueueJob {
            id: 12,
            name: "train".into(),
            user: "vera".into(),
            account: Some("ml".into()),
            partition: "gpu".into(),
            qos: Some("high".into()),
            state: JobState::Running,
            reason: Some("None".into()),
            submit_time: t("2026-12-01T10:00:00Z"),
            start_time: Some(t("2026-12-01T10:05:00Z")),
            end_time: Some(t("2026-12-01T11:05:00Z")),
            time_limit: Some(3600),
            num_nodes: 2,
            num_tasks: 16,
            num_cpus: 32,
            gpus_per_node: 8,
            nodelist: Some("gpu-[1-2]".into()),
            work_dir: Some("/home/vera".into()),
            restart_count: 1,
            exit_code: Some(0),
            exit_signal: Some(9),
            expected_start: Some(t("2026-12-01T10:04:00Z")),
            priority: Some(7),
            nice: -5,
            array_job_id: Some(10),
            array_task_id: Some(2),
            array_tasks_pending: Some("3-9".into()),
            array_max_running: Some(2),
        };
        let empty = QueueJob {
            account: None,
            qos: None,
            reason: None,
            start_time: None,
            end_time: None,
            time_limit: None,
            nodelist: None,
            work_dir: None,
            exit_code: None,
            exit_signal: None,
            expected_start: None,
            priority: None,
            array_job_id: None,
            array_task_id: None,
            array_tasks_pending: None,
            array_max_running: None,
            ..full.clone()
        };
        [full, empty]
    }

    #[test]
    fn every_field_written_sparsely_is_the_job_as_it_serializes() {
        for job in jobs() {
            let sparse = SparseQueueJob {
                job: &job,
                fields: QueueFields::ALL,
            };
            assert_eq!(
                serde_json::to_string(&sparse).unwrap(),
                serde_json::to_string(&job).unwrap()
            );
        }
    }

    #[test]
    fn a_sparse_job_carries_id_state_and_the_fields_named() {
        let [job, _] = jobs();
        let fields = QueueFields::parse("name, partition,,start_time").unwrap();
        let text = serde_json::to_string(&SparseQueueJob { job: &job, fields }).unwrap();
        assert_eq!(
            text,
            r#"{"id":12,"name":"train","partition":"gpu","state":"RUNNING","start_time":"2026-12-01T10:05:00Z"}"#
        );
        // It reads back with the other fields at their defaults.
        let back: QueueJob = serde_json::from_str(&text).unwrap();
        assert_eq!(
            (back.id, back.state, back.name.as_str()),
            (12, JobState::Running, "train")
        );
        assert_eq!(
            (back.user.as_str(), back.num_nodes, back.account),
            ("", 0, None)
        );
        assert_eq!(back.submit_time, DateTime::<Utc>::default());
        assert!(fields.contains("partition") && fields.contains("id"));
        assert!(!fields.contains("user") && !fields.contains("nonsense"));
    }

    #[test]
    fn a_name_that_is_no_field_is_refused_by_name() {
        let err = QueueFields::parse("name,script").unwrap_err();
        assert!(
            err.starts_with("\"script\" is not a field of a queue job (one of id, name,"),
            "{err}"
        );
        assert_eq!(
            QueueFields::parse("").unwrap(),
            QueueFields::parse("id,state").unwrap()
        );
    }
}
