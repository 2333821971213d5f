//! Starting and supervising one batch script.
//!
//! [`Launcher::launch`] takes an [`Assignment`] and spawns a supervisor task that:
//!
//! 1. makes the run's root-only directory `{state_dir}/jobs/{job_id}.{run}/` and the job
//!    user's own `{state_dir}/spool/{job_id}.{run}/` (see [`crate::run_dir`] for the
//!    layout and modes) and writes the script there (`script.sh`, mode 0700, the user's);
//! 2. picks the working directory: the assignment's (which must exist and be the user's
//!    to enter; otherwise the run fails with a `LaunchFailed` report) or the scratch
//!    `spool/{job_id}.{run}/work`;
//! 3. names the output files by expanding `--output`/`--error` patterns (relative to the
//!    working directory; one file for both streams when `--error` is not given);
//! 4. writes everything the run needs into the shepherd's spec and starts the shepherd
//!    ([`crate::shepherd`]), which runs `bash script.sh` as the job's user, leader of its
//!    own process group, with the submission environment and Slurm's variables
//!    ([`job_environment`]), the submitter's umask, and the output files opened by that
//!    user (parent directories made; truncated or appended to per `--open-mode`);
//! 5. reports `Started`, then waits for the batch shell to exit, the time limit (which
//!    the api may move while the job runs: [`JobHandle::set_time_limit`]), or a
//!    cancellation: those two write why to the job's signal reason file, send SIGTERM to
//!    the process group and SIGKILL after the kill wait (a preempted run: after what is
//!    left of its QOS grace time);
//! 6. kills what is left of the process group (no job process outlives its batch
//!    shell), uploads the rest of the output, and reports `Exited`.
//!
//! Reports go out through an unbounded channel, so the launcher runs and is tested
//! without an api.

use crate::output::{OutputTail, OutputUploader};
pub use crate::shepherd::ShepherdStatus;
use crate::shepherd::{OpenedOutput, OutputSpec, ShepherdSpec};
use crate::WorkerError;
use berth_core::hostlist;
use berth_core::pattern::{self, PatternValues};
use berth_core::wire::{
    Assignment, GpuInfo, GpuKind, JobReport, LaunchFault, OutputStream, ReportKind,
};
use chrono::Utc;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::process::{Child, Command};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::{JoinHandle, JoinSet};
use tracing::Instrument;

mod environment;
mod processes;
mod signals;
mod supervisor;
#[cfg(test)]
mod tests;

pub use environment::*;
pub use processes::*;
pub use signals::*;
pub(crate) use supervisor::*;
/// Names of inherited variables that hold the worker's (or the servers') credentials;
/// never passed on to jobs.
pub(crate) const SECRET_VARIABLES: &[&str] = &[
    "BERTH_TOKEN",
    "BERTH_NODE_TOKEN",
    "BERTH_BOOTSTRAP_TOKEN",
    "BERTH_JWT_SECRET",
];

/// The umask of a job whose submission does not say (`SLURM_UMASK`, which `sbatch` and
/// `berth submit` send): its files are its user's alone.
pub const DEFAULT_UMASK: u32 = 0o077;

/// The `PATH` of a job whose environment has none (`--export=NONE`), after the client
/// commands' directory.
pub const DEFAULT_JOB_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// What the launcher needs to know about its node.
#[derive(Debug, Clone)]
pub struct LaunchSettings {
    /// The node name (`SLURMD_NODENAME`, `%N`).
    pub node_name: String,
    /// The api's URL, passed to jobs as `BERTH_API`.
    pub api_url: String,
    /// Where job directories are made (`{state_dir}/jobs/{job_id}.{run}/`).
    pub state_dir: PathBuf,
    /// Grace between SIGTERM and SIGKILL.
    pub kill_wait: Duration,
    /// The worker's token: inherited variables holding it are removed from jobs'
    /// environments (as are `BERTH_TOKEN` and `BERTH_NODE_TOKEN`).
    pub token: Option<String>,
    /// The `berth` executable that runs shepherds and that jobs call as `srun`,
    /// `scontrol`, `squeue`, `scancel`, `sbatch` and `sinfo` (links to it in
    /// `{state_dir}/bin`, first on the job's `PATH`); `None`: no shepherds and no such
    /// commands (tests: the worker starts jobs itself, only as its own user).
    pub client_exe: Option<PathBuf>,
    /// Where checkpoint directories are made (`BERTH_CHECKPOINT_DIR` is
    /// `{checkpoint_root}/{job_id}`, kept across requeues and never deleted by Berth).
    pub checkpoint_root: PathBuf,
    /// Run jobs as their submitting user (uid, gid, supplementary groups): what a worker
    /// running as root does. A job whose user has no account here fails to launch.
    pub run_as_user: bool,
    /// Let jobs of a submitting user who is root on this node run as root (the
    /// administrator's choice, `--allow-root-jobs`); otherwise they fail to launch.
    pub allow_root_jobs: bool,
    /// The node's cgroup layout, when jobs get memory and CPU limits.
    pub cgroups: Option<crate::cgroup::Hierarchy>,
    /// The node's devices as (device index, minor number of the GPU's `/dev/nvidiaN`; a
    /// MIG instance's or shard's is its GPU's): a job's device group denies the GPUs it
    /// holds no device of ([`crate::cgroup::denied_gpu_minors`]).
    pub gpu_minors: Vec<(u32, u32)>,
    /// The node's devices, for naming them to jobs ([`HeldDevices`]); a device index not
    /// here is taken for a whole GPU.
    pub devices: Vec<GpuInfo>,
    /// The node's lease file (`{state_dir}/lease`), which shepherds watch to stop their
    /// jobs when it runs out ([`crate::lease`]); `None`: jobs are never fenced.
    pub lease: Option<PathBuf>,
    /// How the node's CPU ids map onto real CPUs, and the core of each
    /// ([`crate::topology::CpuMap`]); no real CPUs: jobs are not confined to CPUs.
    pub cpus: crate::topology::CpuMap,
}

/// The devices a job (or step task) holds on this node, as its environment names them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HeldDevices {
    /// `CUDA_VISIBLE_DEVICES` and `GPU_DEVICE_ORDINAL` entries: a whole GPU's index, a MIG
    /// instance's `MIG-…` UUID, a shard's GPU index; in the order held, each once.
    pub visible: Vec<String>,
    /// The physical GPU indices (`SLURM_JOB_GPUS`, `SLURM_STEP_GPUS`): whole GPUs, and the
    /// GPUs of MIG instances and shards; in the order held, each once.
    pub physical: Vec<u32>,
    /// How many whole GPUs and MIG instances (`SLURM_GPUS_ON_NODE`).
    pub gpus: usize,
    /// How many shards (`SLURM_SHARDS_ON_NODE`).
    pub shards: usize,
}

impl HeldDevices {
    /// `held` (device indices) named with `devices` (the node's); an index not among
    /// `devices` is a whole GPU of that index (as every device was before MIG and shards).
    pub fn new(devices: &[GpuInfo], held: &[u32]) -> Self {
        let mut named = HeldDevices::default();
        for &index in held {
            let device = devices.iter().find(|device| device.index == index);
            let kind = device.map_or(GpuKind::Gpu, |device| device.kind);
            let gpu = device.and_then(|device| device.parent).unwrap_or(index);
            let visible = match (kind, device) {
                (GpuKind::Mig, Some(device)) => device.uuid.clone(),
                _ => gpu.to_string(),
            };
            match kind {
                GpuKind::Shard => named.shards += 1,
                GpuKind::Gpu | GpuKind::Mig => named.gpus += 1,
            }
            if !named.visible.contains(&visible) {
                named.visible.push(visible);
            }
            if !named.physical.contains(&gpu) {
                named.physical.push(gpu);
            }
        }
        named
    }

    /// `CUDA_VISIBLE_DEVICES`' value; `None` when nothing is held.
    pub fn visible_list(&self) -> Option<String> {
        (!self.visible.is_empty()).then(|| self.visible.join(","))
    }

    /// `SLURM_JOB_GPUS`' value; `None` when nothing is held.
    pub fn physical_list(&self) -> Option<String> {
        (!self.physical.is_empty()).then(|| {
            self.physical
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(",")
        })
    }
}

/// The name of a job run's cgroup under `berth/`: this worker's state directory (so two
/// workers on one machine never share a group) and the run, `{state_dir}.job_{id}.{run}`
/// with `/` and other odd characters as `_` (`var_lib_berth_worker.job_12.0`).
pub fn cgroup_name(settings: &LaunchSettings, job_id: i64, run: u32) -> String {
    format!("{}{job_id}.{run}", cgroup_prefix(settings))
}

/// What the names of this worker's job cgroups start with: `{state_dir}.job_` (as
/// [`cgroup_name`] writes it).
pub fn cgroup_prefix(settings: &LaunchSettings) -> String {
    let dir: String = settings
        .state_dir
        .to_string_lossy()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{}.job_", dir.trim_matches('_'))
}

/// A job run's groups on this node, where it has cgroups and a shepherd to join them:
/// `limits`, and no access to the node's GPU devices other than `gpus` (the run's GPU
/// indices here). Made by the first process of the run on the node (batch shell or step
/// task), found by the others. `None` when nothing applies or the groups cannot be made
/// (logged; the job then runs without them).
pub(crate) fn job_cgroup(
    settings: &LaunchSettings,
    job_id: i64,
    run: u32,
    limits: &crate::cgroup::Limits,
    gpus: &[u32],
) -> Option<crate::cgroup::JobCgroup> {
    let (Some(hierarchy), Some(_)) = (&settings.cgroups, &settings.client_exe) else {
        return None;
    };
    let denied = crate::cgroup::denied_gpu_minors(&settings.gpu_minors, gpus);
    if !hierarchy.needed(limits, &denied) {
        return None;
    }
    match hierarchy.create(&cgroup_name(settings, job_id, run), limits, &denied) {
        Ok(group) => Some(group),
        Err(err) => {
            tracing::warn!(error = %err, "could not make the job's cgroup; running it without limits or device isolation");
            None
        }
    }
}

/// Starts batch scripts and reports what becomes of them.
#[derive(Debug, Clone)]
pub struct Launcher {
    settings: Arc<LaunchSettings>,
    uploader: Option<OutputUploader>,
    reports: mpsc::UnboundedSender<JobReport>,
    time_limits: Option<mpsc::UnboundedSender<TimeLimitNotice>>,
}

/// A run that reached its time limit (job id, run), and the sender to fire once the api
/// has recorded it (the worker then signals the job).
pub type TimeLimitNotice = ((i64, u32), oneshot::Sender<()>);

/// How long a run at its time limit waits for the api to record the TIMEOUT before it is
/// signalled anyway (the worker's own `ending` file and exit report still say TIMEOUT).
pub const TIME_LIMIT_RECORD_WAIT: Duration = Duration::from_secs(5);

/// How a run is to be stopped: why (named in the job's signal reason file) and how long
/// after the SIGTERM its processes get before SIGKILL.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stop {
    /// A preemption (the reason file says `preempted`), else a cancellation (`cancelled`).
    pub preempted: bool,
    /// Time between SIGTERM and SIGKILL; `None`: the worker's kill wait.
    pub grace: Option<Duration>,
    /// The node stops its jobs (its worker shuts down with them, as `berth dev` does):
    /// the reason file says `node_failure` and the exit report `node_failed`.
    pub node_failure: bool,
    /// The node's instance is being reclaimed (a spot interruption notice): the reason
    /// file says `reclaimed`; the job gets its `--signal` warning at once (SIGTERM when it
    /// asked for none), then SIGTERM so that SIGKILL comes within `grace` (the time left
    /// until the instance goes).
    pub reclaimed: bool,
}

/// The reason a run's processes are signalled, as the job reads it in its signal reason
/// file (`$BERTH_SIGNAL_REASON_FILE`) and the worker keeps it in the run's `ending` file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// `time_limit`: the time limit (or its `--signal` warning).
    TimeLimit,
    /// `preempted`: a QOS preemption.
    Preempted,
    /// `cancelled`: `scancel`, a requeue, or the run no longer being this node's.
    Cancelled,
    /// `node_failure`: the node stops it (its lease ran out, or its worker shuts down
    /// with its jobs); the job is requeued as after a node failure.
    NodeFailure,
    /// `reclaimed`: the node's cloud instance is being reclaimed (a spot interruption
    /// notice); the job is requeued.
    Reclaimed,
}

impl StopReason {
    /// The word written to the files.
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::TimeLimit => "time_limit",
            StopReason::Preempted => "preempted",
            StopReason::Cancelled => "cancelled",
            StopReason::NodeFailure => "node_failure",
            StopReason::Reclaimed => "reclaimed",
        }
    }
}

/// A signal for a running batch shell (`scancel -b`, `scancel -f`), passed to its
/// supervisor ([`JobHandle::signal`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchSignal {
    /// The signal number (Linux numbering).
    pub signal: i32,
    /// The shell's whole process group, everything it started (`scancel -f`); else the
    /// shell's process alone (`scancel -b`).
    pub whole_group: bool,
}

/// A launched job run: its key, its GPUs, and the means to cancel it, signal it or move
/// its time limit.
#[derive(Debug)]
pub struct JobHandle {
    job_id: i64,
    run: u32,
    incarnation: Option<berth_core::wire::Incarnation>,
    gpus: Vec<u32>,
    stop: watch::Sender<Option<Stop>>,
    time_limit: watch::Sender<Option<u64>>,
    signals: mpsc::UnboundedSender<BatchSignal>,
    task: JoinHandle<()>,
}

impl JobHandle {
    /// The job id.
    pub fn job_id(&self) -> i64 {
        self.job_id
    }

    /// The run.
    pub fn run(&self) -> u32 {
        self.run
    }

    /// The job's incarnation, from the run's assignment (`None` from an older api).
    pub fn incarnation(&self) -> Option<berth_core::wire::Incarnation> {
        self.incarnation
    }

    /// The GPU indices it holds on this node.
    pub fn gpus(&self) -> &[u32] {
        &self.gpus
    }

    /// Asks the supervisor to stop the job: SIGTERM to its process group, SIGKILL after
    /// the kill wait. Its `Exited` report has `cancelled` set. Cancelling twice, or a
    /// job that already ended, does nothing more.
    pub fn cancel(&self) {
        self.stop(Stop::default());
    }

    /// Like [`JobHandle::cancel`], saying why and, with `stop.grace`, how long the job
    /// has between SIGTERM and SIGKILL. Only the first request counts.
    pub fn stop(&self, stop: Stop) {
        self.stop.send_if_modified(|current| {
            if current.is_some() {
                return false;
            }
            *current = Some(stop);
            true
        });
    }

    /// The time limit the supervisor enforces, seconds from the run's start; `None`:
    /// unlimited.
    pub fn time_limit(&self) -> Option<u64> {
        *self.time_limit.borrow()
    }

    /// Moves the run's time limit (seconds from its start; `None`: unlimited): its
    /// deadline, and its `--signal=B:` warning with it. A limit already past ends the run
    /// as TIMEOUT at once. Returns whether it changed.
    pub fn set_time_limit(&self, time_limit: Option<u64>) -> bool {
        self.time_limit.send_if_modified(|current| {
            if *current == time_limit {
                return false;
            }
            *current = time_limit;
            true
        })
    }

    /// Whether it was asked to stop.
    pub fn is_stopping(&self) -> bool {
        self.stop.borrow().is_some()
    }

    /// Asks the supervisor to send `signal` to the batch shell (or its process group)
    /// while it runs; one that comes before the shell has started is sent once it has,
    /// one that comes once it is being stopped or has ended is dropped. Returns whether
    /// the supervisor was still there to take it.
    pub fn signal(&self, signal: BatchSignal) -> bool {
        self.signals.send(signal).is_ok()
    }

    /// Stops supervising (the worker is shutting down): the job's processes keep
    /// running, but nothing enforces its time limit or reports its end any more.
    pub fn abandon(self) {
        self.task.abort();
    }

    /// Waits for the supervisor to finish (its last report sent) until `deadline`, then
    /// stops supervising.
    pub async fn finish_by(mut self, deadline: tokio::time::Instant) {
        if tokio::time::timeout_at(deadline, &mut self.task)
            .await
            .is_err()
        {
            self.task.abort();
        }
    }

    /// Whether the supervisor has finished (the job's last report is sent).
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }
}

impl Launcher {
    /// A launcher sending reports to `reports`. With an `uploader`, output files are
    /// shipped to the api while jobs run; without, they are only written locally.
    pub fn new(
        settings: LaunchSettings,
        uploader: Option<OutputUploader>,
        reports: mpsc::UnboundedSender<JobReport>,
    ) -> Self {
        Launcher {
            settings: Arc::new(settings),
            uploader,
            reports,
            time_limits: None,
        }
    }

    /// Runs at their time limit are announced on `notices` and signalled once the
    /// announcement is acknowledged (or after [`TIME_LIMIT_RECORD_WAIT`]).
    pub fn with_time_limit_notices(
        mut self,
        notices: mpsc::UnboundedSender<TimeLimitNotice>,
    ) -> Self {
        self.time_limits = Some(notices);
        self
    }

    /// Supervises again a run that a previous worker process started (found by
    /// [`unreported_runs`]): its time limit, cancellation and end, reported as usual
    /// (no new `Started`).
    pub fn adopt(&self, record: RunRecord) -> JobHandle {
        let (stop, stop_rx) = watch::channel(None);
        let (signals, signals_rx) = mpsc::unbounded_channel();
        let (time_limit, time_limit_rx) = watch::channel(record.assignment.time_limit);
        let assignment = &record.assignment;
        let span = tracing::info_span!(
            "job",
            job.id = assignment.job_id,
            job.run = assignment.run,
            node.name = %self.settings.node_name
        );
        let (job_id, run, gpus) = (assignment.job_id, assignment.run, assignment.gpus.clone());
        let incarnation = assignment.incarnation;
        let supervisor = Supervisor {
            settings: self.settings.clone(),
            uploader: self.uploader.clone(),
            reports: self.reports.clone(),
            stop: stop_rx,
            time_limit: time_limit_rx,
            time_limits: self.time_limits.clone(),
            signals: signals_rx,
        };
        let task = tokio::spawn(supervisor.adopt(record).instrument(span));
        JobHandle {
            job_id,
            run,
            incarnation,
            gpus,
            stop,
            time_limit,
            signals,
            task,
        }
    }

    /// Launches `assignment` on a new supervisor task (call it inside a Tokio runtime).
    /// Its reports (`Started` then `Exited`, or `LaunchFailed`) arrive on the channel.
    pub fn launch(&self, assignment: Assignment) -> JobHandle {
        let (stop, stop_rx) = watch::channel(None);
        let (signals, signals_rx) = mpsc::unbounded_channel();
        let (time_limit, time_limit_rx) = watch::channel(assignment.time_limit);
        let span = tracing::info_span!(
            "job",
            job.id = assignment.job_id,
            job.run = assignment.run,
            node.name = %self.settings.node_name
        );
        let job_id = assignment.job_id;
        let run = assignment.run;
        let incarnation = assignment.incarnation;
        let gpus = assignment.gpus.clone();
        let supervisor = Supervisor {
            settings: self.settings.clone(),
            uploader: self.uploader.clone(),
            reports: self.reports.clone(),
            stop: stop_rx,
            time_limit: time_limit_rx,
            time_limits: self.time_limits.clone(),
            signals: signals_rx,
        };
        let task = tokio::spawn(supervisor.supervise(assignment).instrument(span));
        JobHandle {
            job_id,
            run,
            incarnation,
            gpus,
            stop,
            time_limit,
            signals,
            task,
        }
    }
}

/// A run's directory, `{state_dir}/jobs/{job_id}.{run}`.
pub fn run_dir(settings: &LaunchSettings, job_id: i64, run: u32) -> PathBuf {
    settings
        .state_dir
        .join("jobs")
        .join(format!("{job_id}.{run}"))
}
