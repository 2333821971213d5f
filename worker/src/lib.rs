//! Berth's worker, the node agent (`berth worker`, like Slurm's `slurmd`).
//!
//! It registers its node and GPU inventory with the api, then long-polls
//! `POST /v1/nodes/{name}/sync`. Each poll carries the heartbeat (its arrival), the job
//! reports not yet acknowledged, the job runs it supervises and the latest GPU samples;
//! the answer lists the batch scripts the node must run and the ones to stop.
//!
//! * [`gpu`]: GPU backends, [`gpu::NvmlBackend`] for real devices and
//!   [`gpu::SimulatedBackend`] for nodes without them (development, tests).
//! * [`launch`]: starts one batch script as its own process group with Slurm's
//!   environment, enforces its time limit, cancels it, and reports what happened.
//! * [`task`]: starts one task of a job step (`srun`), ships its output to the api.
//! * [`output`]: tails a running job's output files and uploads new bytes to the api.
//! * [`agent`]: registration and the long-poll loop that ties the rest together.
//!
//! * [`journal`]: job reports numbered and kept on disk until acknowledged.
//!
//! If the api is unreachable, running jobs keep running; reports stay in the journal and
//! are sent again, in order (the api applies them at most once per (job, run, kind,
//! node)).
//!
//! A batch shell runs under a shepherd (`berth shepherd`, a small process that records
//! its exit status), so a worker that is restarted (upgrade, crash) finds its running
//! jobs again from `{state_dir}/jobs/*/run.json` and keeps supervising them. Nothing of
//! a job (its environment, arguments, paths) reaches a root process: the shepherd reads
//! it from a root-only spec and applies it after becoming the job's user
//! ([`shepherd`]); the run directories and who may read them are in [`run_dir`].
//!
//! * [`metadata`]: the instance metadata's spot interruption notice, reported to the api
//!   (which drains the node and requeues its jobs).
//!
//! * [`lease`]: the node's lease; a node out of contact with the api for longer stops
//!   its runs (through their shepherds) before the scheduler could start them again.
//!
//! A worker running as root runs each job as its submitting user (uid, gid and
//! supplementary groups, switched by the shepherd); a job whose user has no account on
//! the node fails to launch, naming the user.
//!
//! [`cgroup`]: batch jobs get a memory limit and a CPU quota where the node has cgroups
//! (v2, else the v1 `memory`/`cpu` hierarchies); an OOM kill ends the job OUT_OF_MEMORY.
//!
//! Step tasks join the job's cgroups on their node (made there when the batch shell runs
//! elsewhere).
//!
//! Where the node has the cgroup v1 `devices` hierarchy, a job may open only its own GPU
//! devices (`/dev/nvidiaN`); not on a pure cgroup v2 host ([`cgroup`]).
//!
//! Step tasks run under a shepherd too, their output in files: a restarted worker finds
//! them from `{state_dir}/jobs/*/tasks/*/task.json`, ships the rest of their output and
//! reports their end.

pub mod agent;
mod api;
pub mod bpf_device;
pub mod cgroup;
pub mod error;
pub mod gpu;
pub mod journal;
pub mod launch;
pub mod lease;
pub mod metadata;
pub mod output;
pub mod pty;
pub mod run_dir;
pub mod shepherd;
pub mod task;
pub mod topology;

pub use agent::run;
pub use error::WorkerError;
pub use gpu::{detect_backend, GpuBackend};

use std::path::PathBuf;
use std::time::Duration;

/// How a worker runs: where the api is, who it is, and its local settings.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// The api's base URL (`http://127.0.0.1:8080`), without `/v1`.
    pub api_url: String,
    /// The node token sent as `Authorization: Bearer …`; never passed to jobs.
    pub token: String,
    /// The node name, unique in the cluster (`node-1`).
    pub name: String,
    /// Simulated GPUs: `"8"`, `"8xH100"`, `"4xA100"`. `None`: NVML if it loads, else 8
    /// simulated H100s.
    pub simulate_gpus: Option<String>,
    /// Offer each whole GPU as this many shards (Slurm's `shard` GRES, gres.conf's
    /// `Name=shard Count=…`; jobs ask `--gres=shard:N`), NVML or simulated. `None`: whole
    /// GPUs.
    pub gpu_shards: Option<u32>,
    /// Where the worker keeps its records, and jobs their scripts and scratch working
    /// directories ([`run_dir`] has the layout).
    pub state_dir: PathBuf,
    /// Grace between SIGTERM and SIGKILL when a job is cancelled or hits its time limit
    /// (Slurm's `KillWait`, 30 s by default).
    pub kill_wait: Duration,
    /// How long the api may hold a sync when it has nothing new, seconds (default 10:
    /// GPU samples reach the api at least this often).
    pub poll_wait_seconds: u32,
    /// Extra CA certificates (PEM) to trust for the api's TLS certificate (`--ca-file`).
    pub ca_pem: Option<Vec<u8>>,
    /// Where jobs' checkpoint directories live (`BERTH_CHECKPOINT_DIR` is
    /// `{checkpoint_root}/{job_id}`, the same for every run of the job); `None`:
    /// `{state_dir}/checkpoints`. Put it on storage every node shares for checkpoints to
    /// follow a requeued job to another node.
    pub checkpoint_root: Option<PathBuf>,
    /// How long a GPU held by a running job may stay at 0 % utilisation before it counts
    /// as stuck and drains the node (default 10 minutes).
    pub gpu_stuck_after: Duration,
    /// Run jobs as their submitting users (default: when the worker runs as root).
    pub run_as_user: bool,
    /// Run jobs of a submitting user who is root on the node as root (default false: they
    /// fail to launch).
    pub allow_root_jobs: bool,
    /// Limit jobs' memory and CPUs with cgroups where the node has them (default true).
    pub cgroups: bool,
    /// Stop the node's jobs and step tasks when the worker stops (SIGTERM, SIGKILL after
    /// the kill wait; their cgroups removed; reported as node failures at the next start):
    /// what `berth dev` does. Default false: they keep running under their shepherds and
    /// a restarted worker supervises them again.
    pub stop_jobs_on_shutdown: bool,
    /// Simulated CPUs (`--simulate-cpus`): the node declares this many instead of the
    /// machine's; job `i`'s CPU id runs on real CPU `i mod` the real count.
    pub simulate_cpus: Option<u32>,
    /// Simulated hardware threads per core (`--simulate-threads-per-core`): the node
    /// declares its CPU ids as cores of this many threads (ids `T·c .. T·c + T` on core
    /// `c`), each core running on one real CPU ([`topology`]); the declared CPUs must be
    /// a multiple. `None`: a simulated node's CPUs are cores of one thread, a real node's
    /// are laid out as the machine's.
    pub simulate_threads_per_core: Option<u32>,
    /// Simulated memory, MiB (`--simulate-memory`): the node declares this much.
    pub simulate_memory_mib: Option<u64>,
    /// Features the node declares (`--feature`; slurm.conf's Features).
    pub features: Vec<String>,
    /// The node's Weight, when the worker declares one (`--weight`).
    pub weight: Option<u32>,
    /// The instance metadata service's base URL (`--metadata-url`; EC2:
    /// `http://169.254.169.254`), watched for spot interruption notices ([`metadata`]).
    /// `None`: not watched.
    pub metadata_url: Option<String>,
    /// How often the instance metadata is polled (default 5 s).
    pub metadata_poll_interval: Duration,
}

impl WorkerConfig {
    /// A configuration with the defaults: GPUs detected, `kill_wait` 30 s, polls held up
    /// to 10 s, GPUs stuck after 10 minutes at 0 %, no instance metadata watched.
    pub fn new(
        api_url: impl Into<String>,
        token: impl Into<String>,
        name: impl Into<String>,
        state_dir: impl Into<PathBuf>,
    ) -> Self {
        WorkerConfig {
            api_url: api_url.into(),
            token: token.into(),
            name: name.into(),
            simulate_gpus: None,
            gpu_shards: None,
            state_dir: state_dir.into(),
            kill_wait: Duration::from_secs(30),
            poll_wait_seconds: 10,
            ca_pem: None,
            checkpoint_root: None,
            gpu_stuck_after: Duration::from_secs(600),
            run_as_user: nix::unistd::geteuid().is_root(),
            allow_root_jobs: false,
            cgroups: true,
            stop_jobs_on_shutdown: false,
            simulate_cpus: None,
            simulate_threads_per_core: None,
            simulate_memory_mib: None,
            features: Vec::new(),
            weight: None,
            metadata_url: None,
            metadata_poll_interval: Duration::from_secs(5),
        }
    }
}

/// This machine's host name (`/proc/sys/kernel/hostname`, else `$HOSTNAME`, else
/// `localhost`).
pub(crate) fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|name| name.trim().to_string())
        .filter(|name| !name.is_empty())
        .or_else(|| {
            std::env::var("HOSTNAME")
                .ok()
                .filter(|name| !name.is_empty())
        })
        .unwrap_or_else(|| "localhost".to_string())
}
