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
    /// The real CPUs the node's CPU ids map onto (id `i` is `real_cpus[i mod len]`,
    /// [`crate::topology`]); empty: jobs are not confined to CPUs.
    pub real_cpus: Vec<u32>,
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

/// The account a job runs as, when the worker switches users.
#[derive(Debug, Clone)]
pub struct JobUser {
    /// The user name.
    pub name: String,
    /// Its uid.
    pub uid: nix::unistd::Uid,
    /// Its primary gid.
    pub gid: nix::unistd::Gid,
}

/// The account `user` runs as on this node: `None` when the worker does not switch
/// users.
///
/// # Errors
/// [`WorkerError::UserUnknown`] when it has no account here.
pub fn job_user(settings: &LaunchSettings, user: &str) -> Result<Option<JobUser>, WorkerError> {
    if !settings.run_as_user {
        return Ok(None);
    }
    match nix::unistd::User::from_name(user) {
        Ok(Some(account)) if account.uid.is_root() && !settings.allow_root_jobs => {
            Err(WorkerError::RootRefused {
                user: user.to_string(),
                node: settings.node_name.clone(),
            })
        }
        Ok(Some(account)) => Ok(Some(JobUser {
            name: account.name,
            uid: account.uid,
            gid: account.gid,
        })),
        _ => Err(WorkerError::UserUnknown {
            user: user.to_string(),
            node: settings.node_name.clone(),
        }),
    }
}

/// The job's checkpoint directory, `{checkpoint_root}/{job_id}`: see
/// [`crate::run_dir::checkpoint_dir`].
pub use crate::run_dir::checkpoint_dir;

/// The names the `berth` binary answers to inside a job.
pub const CLIENT_COMMANDS: &[&str] = &[
    "srun", "scontrol", "squeue", "scancel", "sbatch", "sinfo", "sstat", "sacct", "sprio",
    "sattach", "sbcast",
];

/// Makes (or finds) the node's directory of client commands, `{state_dir}/bin` (mode
/// 0755, root's): links named after [`CLIENT_COMMANDS`] to `settings.client_exe`, the same
/// for every job. `None` when there is no client executable.
///
/// # Errors
/// [`WorkerError::Io`] when the directory or a link cannot be made.
pub fn client_command_dir(settings: &LaunchSettings) -> Result<Option<PathBuf>, WorkerError> {
    let Some(exe) = &settings.client_exe else {
        return Ok(None);
    };
    let dir = settings.state_dir.join("bin");
    if !dir.is_dir() {
        crate::run_dir::ensure_dir(&dir, 0o755)?;
    }
    for name in CLIENT_COMMANDS {
        let link = dir.join(name);
        if std::fs::read_link(&link).ok().as_deref() == Some(exe.as_path()) {
            continue;
        }
        let _ = std::fs::remove_file(&link);
        if let Err(source) = std::os::unix::fs::symlink(exe, &link) {
            // Another launch may have made it meanwhile.
            if std::fs::read_link(&link).ok().as_deref() != Some(exe.as_path()) {
                return Err(WorkerError::Io {
                    action: "link a client command",
                    path: link,
                    source,
                });
            }
        }
    }
    Ok(Some(dir))
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

/// Why the wait for the batch shell ended.
enum Ending {
    Exited(Result<ShepherdStatus, String>),
    TimeLimit,
    Stopped(Stop),
}

struct Supervisor {
    settings: Arc<LaunchSettings>,
    uploader: Option<OutputUploader>,
    reports: mpsc::UnboundedSender<JobReport>,
    /// Set once when the run must stop.
    stop: watch::Receiver<Option<Stop>>,
    /// The time limit to enforce, seconds from the launch.
    time_limit: watch::Receiver<Option<u64>>,
    time_limits: Option<mpsc::UnboundedSender<TimeLimitNotice>>,
    /// Signals to send to the batch shell while it runs.
    signals: mpsc::UnboundedReceiver<BatchSignal>,
}

/// A job ready to spawn.
struct Prepared {
    start: Start,
    script: PathBuf,
    files: RunFiles,
    cgroup: Option<crate::cgroup::JobCgroup>,
    /// The job's user, whose output files alone are shipped.
    user: Option<JobUser>,
}

/// The files of a job run's directory that let a restarted worker find it again.
#[derive(Debug, Clone)]
pub struct RunFiles {
    /// `run.json`: the [`RunRecord`].
    pub record: PathBuf,
    /// `batch.pid`: the batch shell's pid, written by the shepherd.
    pub pid: PathBuf,
    /// `exit_status.json`: how the batch shell ended, written by the shepherd.
    pub status: PathBuf,
    /// `ending`: `time_limit`, `preempted` or `cancelled` ([`StopReason`]), written before
    /// the first SIGTERM.
    pub ending: PathBuf,
    /// `reported`: the run's end was reported; a restarted worker leaves it alone.
    pub reported: PathBuf,
    /// `spec.json`: what the shepherd runs ([`ShepherdSpec`]).
    pub spec: PathBuf,
    /// `outputs.json`: the output files as the job opened them ([`OpenedOutput`]s).
    pub outputs: PathBuf,
    /// `shepherd.log`: the shepherd's own messages.
    pub log: PathBuf,
}

impl RunFiles {
    /// The files of the run directory `dir`.
    pub fn new(dir: &Path) -> Self {
        RunFiles {
            record: dir.join("run.json"),
            pid: dir.join("batch.pid"),
            status: dir.join("exit_status.json"),
            ending: dir.join("ending"),
            reported: dir.join("reported"),
            spec: dir.join("spec.json"),
            outputs: dir.join("outputs.json"),
            log: dir.join("shepherd.log"),
        }
    }

    /// Removes what a previous start of the same run left (its pid, status, outputs,
    /// ending, reported mark and upload progress).
    pub fn clear(&self) {
        for stale in [
            &self.status,
            &self.pid,
            &self.ending,
            &self.reported,
            &self.outputs,
        ] {
            let _ = std::fs::remove_file(stale);
        }
        self.clear_progress();
    }

    /// The output files the shepherd recorded, as (stream, path, start).
    pub fn opened_outputs(&self) -> Vec<(OutputStream, PathBuf, u64)> {
        std::fs::read_to_string(&self.outputs)
            .ok()
            .and_then(|text| serde_json::from_str::<Vec<OpenedOutput>>(&text).ok())
            .unwrap_or_default()
            .into_iter()
            .map(|o| (o.stream, o.path, o.start))
            .collect()
    }

    /// Removes the upload progress of both output streams (a fresh start).
    pub fn clear_progress(&self) {
        for stream in [OutputStream::Stdout, OutputStream::Stderr] {
            let _ = std::fs::remove_file(self.progress(stream));
        }
    }

    /// `{stream}.sent`: how many bytes of that output were uploaded.
    pub fn progress(&self, stream: OutputStream) -> PathBuf {
        self.status
            .with_file_name(format!("{}.sent", stream.as_str()))
    }
}

/// What a restarted worker needs to supervise a run it did not start: written to
/// `run.json` once the batch shell runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRecord {
    /// The assignment as received.
    pub assignment: Assignment,
    /// The batch shell's pid (its process group's id).
    pub batch_pid: i32,
    /// The batch shell's start time in clock ticks since boot (`/proc/PID/stat` field
    /// 22), to tell it from a later process with a reused pid.
    pub pid_start: Option<u64>,
    /// When it was started (the time limit counts from here).
    pub launched_at: chrono::DateTime<Utc>,
    /// The output files and where this run's output starts in each.
    pub outputs: Vec<(OutputStream, PathBuf, u64)>,
    /// The run's cgroups, when it has limits.
    #[serde(default)]
    pub cgroup: Option<crate::cgroup::JobCgroup>,
}

/// A process's start time in clock ticks since boot (`/proc/PID/stat` field 22).
pub fn process_start_ticks(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    // Fields after the command: state is field 3, starttime field 22.
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Whether `pid` is the process recorded (alive, not a zombie, same start time).
fn same_process_alive(pid: i32, start: Option<u64>) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let zombie = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.trim_start().starts_with('Z'))
        .unwrap_or(false);
    !zombie && (start.is_none() || process_start_ticks(pid) == start)
}

/// The runs under `{state_dir}/jobs` that a previous worker left unreported: their
/// records, oldest job first.
pub fn unreported_runs(state_dir: &Path) -> Vec<RunRecord> {
    let Ok(entries) = std::fs::read_dir(state_dir.join("jobs")) else {
        return Vec::new();
    };
    let mut records: Vec<RunRecord> = entries
        .flatten()
        .filter_map(|entry| {
            let files = RunFiles::new(&entry.path());
            if files.reported.exists() {
                return None;
            }
            let text = std::fs::read_to_string(&files.record).ok()?;
            serde_json::from_str(&text).ok()
        })
        .collect();
    records.sort_by_key(|r| (r.assignment.job_id, r.assignment.run));
    records
}

/// The pid a shepherd wrote to `path`, once it has.
pub(crate) fn read_pid(path: &Path) -> Option<i32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Writes a run's record (`run.json`, mode 0600), what a restarted worker finds it again
/// by.
fn write_record(files: &RunFiles, record: &RunRecord) {
    let text = serde_json::to_string(record).unwrap_or_default();
    if let Err(err) = crate::run_dir::write_private(&files.record, text.as_bytes()) {
        tracing::warn!(error = %err, "could not record the run; a restarted worker will not find it");
    }
}

/// How a run's process is started.
pub(crate) enum Start {
    /// `berth shepherd --spec FILE`, with the fixed environment.
    Shepherd(Command),
    /// The worker starts the job itself (no `berth` executable: tests), with the outputs
    /// it opened.
    Direct(Command, Vec<OpenedOutput>),
}

/// Writes `spec` to `files.spec` (mode 0600) and builds the command that starts it: the
/// shepherd (`client_exe shepherd --spec FILE`; nothing of the job on its command line or
/// in its environment, its own messages to `files.log`) or, without a client executable,
/// the job itself ([`crate::shepherd::direct_command`]).
///
/// # Errors
/// [`WorkerError::Io`] when the spec or log cannot be written; [`WorkerError::Launch`]
/// when the job cannot be started directly.
pub(crate) fn start_command(
    client_exe: Option<&Path>,
    files: &RunFiles,
    spec: &ShepherdSpec,
) -> Result<Start, WorkerError> {
    let Some(exe) = client_exe else {
        let (command, outputs) = crate::shepherd::direct_command(spec)
            .map_err(|(message, fault)| WorkerError::Launch { message, fault })?;
        let mut command = Command::from(command);
        command.kill_on_drop(false);
        return Ok(Start::Direct(command, outputs));
    };
    let text = serde_json::to_string(spec).unwrap_or_default();
    crate::run_dir::write_private(&files.spec, text.as_bytes()).map_err(|source| {
        WorkerError::Io {
            action: "write the shepherd's spec",
            path: files.spec.clone(),
            source,
        }
    })?;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&files.log)
        .map_err(|source| WorkerError::Io {
            action: "open the shepherd's log",
            path: files.log.clone(),
            source,
        })?;
    let mut command = Command::new(exe);
    command
        .arg("shepherd")
        .arg("--spec")
        .arg(&files.spec)
        .env_clear()
        .env("PATH", crate::shepherd::FIXED_PATH)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log))
        // Its own process group: a Ctrl-C meant for the worker's terminal does not reach
        // it (it outlives the worker and records how the job ends).
        .process_group(0)
        .kill_on_drop(false);
    Ok(Start::Shepherd(command))
}

/// Spawns a [`start_command`] and learns the pid of the job's process (the shepherd
/// writes it to `files.pid` once the job's process has become its user and opened its
/// outputs) and its outputs. Returns how to wait for its end, the pid (its process
/// group's id) and the outputs as (stream, path, start).
///
/// # Errors
/// [`WorkerError::Launch`]: the spawn failed, or the job could not start (the shepherd's
/// reason: an output file its user may not write …).
pub(crate) async fn spawn_supervised(
    start: Start,
    files: &RunFiles,
) -> Result<(Waiter, i32, Vec<(OutputStream, PathBuf, u64)>), WorkerError> {
    let launch = |message: String| WorkerError::Launch {
        message,
        fault: LaunchFault::Node,
    };
    let mut command = match start {
        Start::Direct(mut command, outputs) => {
            let child = command
                .spawn()
                .map_err(|e| launch(format!("starting the job: {e}")))?;
            let pid = child
                .id()
                .ok_or_else(|| launch("the job's process has no pid".to_string()))?;
            let outputs = outputs
                .into_iter()
                .map(|o| (o.stream, o.path, o.start))
                .collect();
            return Ok((Waiter::Direct(child), pid as i32, outputs));
        }
        Start::Shepherd(command) => command,
    };
    let mut child = command
        .spawn()
        .map_err(|e| launch(format!("starting the shepherd: {e}")))?;
    loop {
        if let Some(pid) = read_pid(&files.pid) {
            let outputs = files.opened_outputs();
            return Ok((Waiter::Shepherd(child, files.clone()), pid, outputs));
        }
        if let Ok(Some(_)) = child.try_wait() {
            if let Some(pid) = read_pid(&files.pid) {
                return Ok((
                    Waiter::Shepherd(child, files.clone()),
                    pid,
                    files.opened_outputs(),
                ));
            }
            return Err(launch_error(files, "the shepherd did not start the job"));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Why a shepherd did not start its job, and whose fault that was, from its status file;
/// `otherwise` (the node's fault) when it wrote none.
pub(crate) fn launch_error(files: &RunFiles, otherwise: &str) -> WorkerError {
    let status = read_status(&files.status).unwrap_or_default();
    WorkerError::Launch {
        message: status.launch_error.unwrap_or_else(|| otherwise.to_string()),
        fault: status.launch_fault.unwrap_or(LaunchFault::Node),
    }
}

/// The pid a shepherd writes to `files.pid`, for a supervised process found after a
/// restart whose record was written before the pid was known: waits up to 5 s.
pub(crate) async fn await_pid(files: &RunFiles) -> Option<i32> {
    for _ in 0..100 {
        if let Some(pid) = read_pid(&files.pid) {
            return Some(pid);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

/// Stops a supervised process group: SIGTERM, then SIGKILL once `kill_wait` has passed;
/// returns how the process ended.
pub(crate) async fn terminate(
    waiter: &mut Waiter,
    group: Pid,
    kill_wait: Duration,
) -> Result<ShepherdStatus, String> {
    signal_group(group, Signal::SIGTERM);
    tokio::select! {
        status = waiter.wait() => status,
        _ = tokio::time::sleep(kill_wait) => {
            tracing::info!(wait_seconds = kill_wait.as_secs_f64(), "still running after the kill wait; sending SIGKILL");
            signal_group(group, Signal::SIGKILL);
            waiter.wait().await
        }
    }
}

/// Stops a run whose node's instance is being reclaimed, `grace` before the instance
/// goes (`None`: unknown, then the warning's own lead or the kill wait): the job's
/// `--signal` warning at once (to the batch shell with `B:`, else to its whole process
/// group), then, unless it ends first, SIGTERM `kill_wait` before the instance goes and
/// SIGKILL when it does. A job without a warning gets SIGTERM at once and SIGKILL after
/// the kill wait (or at the instance's end, when sooner).
pub(crate) async fn reclaim(
    waiter: &mut Waiter,
    group: Pid,
    warning: Option<berth_core::signal::WarningSignal>,
    grace: Option<Duration>,
    kill_wait: Duration,
) -> Result<ShepherdStatus, String> {
    let Some(warning) = warning else {
        return terminate(waiter, group, grace.map_or(kill_wait, |g| g.min(kill_wait))).await;
    };
    let total = grace.unwrap_or(Duration::from_secs(warning.seconds) + kill_wait);
    tracing::info!(
        signal = warning.signal,
        grace_seconds = total.as_secs(),
        "sending the job its warning signal before the reclaim"
    );
    send_signal(group, None, warning.signal, !warning.batch_only);
    let kill_wait = kill_wait.min(total);
    tokio::select! {
        status = waiter.wait() => status,
        _ = tokio::time::sleep(total - kill_wait) => terminate(waiter, group, kill_wait).await,
    }
}

/// How the end of a supervised process (batch shell, step task) is awaited.
pub(crate) enum Waiter {
    /// The batch shell is the worker's child (no shepherd: tests without the `berth`
    /// binary).
    Direct(Child),
    /// The shepherd is the worker's child; its status file says how the shell ended.
    Shepherd(Child, RunFiles),
    /// Found again after a restart: the status file, and the pid for liveness.
    Adopted {
        files: RunFiles,
        pid: i32,
        start: Option<u64>,
    },
}

/// The status a shepherd wrote to `path`, once it has.
pub(crate) fn read_status(path: &Path) -> Option<ShepherdStatus> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

impl Waiter {
    /// Waits for the batch shell to end (cancel-safe).
    pub(crate) async fn wait(&mut self) -> Result<ShepherdStatus, String> {
        match self {
            Waiter::Direct(child) => child
                .wait()
                .await
                .map(|status| ShepherdStatus {
                    exit_code: status.code(),
                    signal: status.signal(),
                    ..ShepherdStatus::default()
                })
                .map_err(|err| format!("could not wait for the process: {err}")),
            Waiter::Shepherd(child, files) => {
                let _ = child.wait().await;
                read_status(&files.status)
                    .ok_or_else(|| "the shepherd recorded no exit status".to_string())
            }
            Waiter::Adopted { files, pid, start } => loop {
                if let Some(status) = read_status(&files.status) {
                    return Ok(status);
                }
                if !same_process_alive(*pid, *start) {
                    // The shepherd writes the status right after the shell ends.
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    return read_status(&files.status).ok_or_else(|| {
                        "it ended while the worker was away; its exit status is unknown".to_string()
                    });
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            },
        }
    }
}

impl Supervisor {
    async fn supervise(self, assignment: Assignment) {
        let prepared = match prepare(&self.settings, &assignment) {
            Ok(prepared) => prepared,
            Err(err) => return self.launch_failed(&assignment, &err),
        };
        let Prepared {
            start,
            script,
            files,
            cgroup,
            user,
        } = prepared;
        // Recorded before the spawn, with the pid still unknown, so that a worker killed
        // between the spawn and the shepherd's pid file still finds this run after a
        // restart and never launches it a second time.
        let shepherded = matches!(start, Start::Shepherd(_));
        if shepherded {
            let provisional = RunRecord {
                assignment: assignment.clone(),
                batch_pid: 0,
                pid_start: None,
                launched_at: Utc::now(),
                outputs: Vec::new(),
                cgroup: cgroup.clone(),
            };
            write_record(&files, &provisional);
        }
        let (waiter, pid, outputs) = match spawn_supervised(start, &files).await {
            Ok(spawned) => spawned,
            Err(err) => {
                tracing::debug!(script = %script.display(), "the job did not start");
                return self.launch_failed(&assignment, &err);
            }
        };
        let record = RunRecord {
            assignment,
            batch_pid: pid,
            pid_start: process_start_ticks(pid),
            launched_at: Utc::now(),
            outputs,
            cgroup,
        };
        if shepherded {
            write_record(&files, &record);
        }
        tracing::info!(pid, gpus = ?record.assignment.gpus, "job started");
        let mut started = report(&record.assignment, ReportKind::Started);
        started.pid = u32::try_from(pid).ok();
        self.send(started);
        let owner = user.map(|user| user.uid.as_raw());
        self.follow(record, waiter, files, false, owner).await;
    }

    /// Supervises a run a previous worker started (from its `run.json`).
    async fn adopt(self, mut record: RunRecord) {
        let files = RunFiles::new(&run_dir(
            &self.settings,
            record.assignment.job_id,
            record.assignment.run,
        ));
        if record.batch_pid == 0 {
            // The previous worker died between the spawn and the shepherd's pid file: the
            // shepherd writes it as soon as the batch shell runs.
            if let Some(pid) = await_pid(&files).await {
                record.batch_pid = pid;
                record.pid_start = process_start_ticks(pid);
                record.outputs = files.opened_outputs();
            } else {
                let err = launch_error(
                    &files,
                    "the worker restarted before the shepherd started the batch shell",
                );
                return self.launch_failed(&record.assignment, &err);
            }
            write_record(&files, &record);
        }
        let ending = files.ending.exists();
        tracing::info!(
            pid = record.batch_pid,
            ending,
            "supervising a job started before a restart"
        );
        let waiter = Waiter::Adopted {
            files: files.clone(),
            pid: record.batch_pid,
            start: record.pid_start,
        };
        let owner = job_user(&self.settings, &record.assignment.user)
            .ok()
            .flatten()
            .map(|user| user.uid.as_raw());
        self.follow(record, waiter, files, true, owner).await;
    }

    /// Ships the output (regular files of `owner`, the job's uid, when it has its own
    /// user), enforces the limits, waits for the end and reports it.
    async fn follow(
        mut self,
        record: RunRecord,
        mut waiter: Waiter,
        files: RunFiles,
        adopted: bool,
        owner: Option<u32>,
    ) {
        let assignment = &record.assignment;
        let group = Pid::from_raw(record.batch_pid);
        let mut tails = JoinSet::new();
        let mut stops = Vec::new();
        if let Some(uploader) = &self.uploader {
            for (stream, path, start) in record.outputs.clone() {
                let (stop, stopped) = oneshot::channel();
                stops.push(stop);
                let tail = OutputTail {
                    job_id: assignment.job_id,
                    run: assignment.run,
                    incarnation: assignment.incarnation,
                    step: None,
                    stream,
                    path,
                    start,
                    progress: Some(files.progress(stream)),
                    owner,
                    interval: crate::output::TAIL_INTERVAL,
                };
                tails.spawn(tail.follow(uploader.clone(), stopped).in_current_span());
            }
        }

        let (status, timed_out, cancelled, node_failure) = self
            .wait(&mut waiter, group, &record, &files, adopted)
            .await;
        let ended_at = Utc::now();
        // Nothing of the job outlives its batch shell.
        signal_group(group, Signal::SIGKILL);

        for stop in stops {
            let _ = stop.send(());
        }
        while tails.join_next().await.is_some() {}

        let mut exited = report(assignment, ReportKind::Exited);
        exited.at = ended_at;
        exited.timed_out = timed_out;
        exited.cancelled = cancelled;
        exited.node_failed = node_failure;
        if let Some(group) = record.cgroup.clone() {
            exited.out_of_memory = group.oom_killed();
            let usage = group.usage();
            exited.cpu_time_seconds = usage.cpu_seconds;
            exited.max_rss_mib = usage.memory_peak_mib;
            tokio::spawn(async move { group.remove_when_empty().await });
        }
        match status {
            Ok(status) => {
                exited.exit_code = status.exit_code;
                exited.signal = status.signal;
                if status.fenced {
                    // Its shepherd stopped it: the node's lease ran out.
                    exited.node_failed = true;
                    exited.cancelled = false;
                    exited.message = Some(
                        "stopped on its node, which had no contact with the api for its whole lease"
                            .to_string(),
                    );
                }
            }
            Err(message) => {
                tracing::error!(error = %message, "no exit status for the batch shell");
                exited.message = Some(message);
            }
        }
        tracing::info!(
            exit_code = exited.exit_code,
            signal = exited.signal,
            timed_out,
            cancelled,
            out_of_memory = exited.out_of_memory,
            node_failed = exited.node_failed,
            "job exited"
        );
        if let Err(err) = crate::run_dir::write_private(&files.reported, b"") {
            tracing::debug!(error = %err, "could not mark the run reported");
        }
        self.send(exited);
    }

    /// Waits for the batch shell, enforcing the time limit (counted from the launch, and
    /// moved when the api changes it), its `--signal=B:` warning and cancellation.
    /// Returns how it ended and whether the time limit, a cancellation or the node
    /// (stopping with its worker) ended it. An adopted run that was already being stopped
    /// (its `ending` file) is stopped again.
    async fn wait(
        &mut self,
        waiter: &mut Waiter,
        group: Pid,
        record: &RunRecord,
        files: &RunFiles,
        adopted: bool,
    ) -> (Result<ShepherdStatus, String>, bool, bool, bool) {
        let assignment = &record.assignment;
        let started = tokio::time::Instant::now();
        let at_wall = |offset: u64| {
            let when = record.launched_at + chrono::Duration::seconds(offset as i64);
            let now = tokio::time::Instant::now();
            now + (when - Utc::now()).to_std().unwrap_or(Duration::ZERO)
        };
        let batch_warning = assignment.warning_signal.filter(|w| w.batch_only);
        let prior = if adopted {
            std::fs::read_to_string(&files.ending).ok()
        } else {
            None
        };
        let mut warned = false;
        let ending = match prior.as_deref().map(str::trim) {
            Some("time_limit") => Ending::TimeLimit,
            Some("preempted") => Ending::Stopped(Stop {
                preempted: true,
                ..Stop::default()
            }),
            Some("node_failure") => Ending::Stopped(Stop {
                node_failure: true,
                ..Stop::default()
            }),
            Some("reclaimed") => Ending::Stopped(Stop {
                reclaimed: true,
                ..Stop::default()
            }),
            Some(_) => Ending::Stopped(Stop::default()),
            None => loop {
                let time_limit = *self.time_limit.borrow_and_update();
                let deadline = time_limit.map(at_wall);
                let warning = batch_warning.and_then(|w| {
                    let limit = time_limit?;
                    let at = at_wall(limit - w.seconds.min(limit));
                    // A restarted worker does not repeat a warning already due.
                    (!adopted || at > started).then_some((w, at))
                });
                let at_limit = async {
                    match deadline {
                        Some(deadline) => tokio::time::sleep_until(deadline).await,
                        None => std::future::pending().await,
                    }
                };
                let at_warning = async {
                    match warning {
                        Some((_, at)) if !warned => tokio::time::sleep_until(at).await,
                        _ => std::future::pending().await,
                    }
                };
                let stop_rx = &mut self.stop;
                let stopped = async {
                    let stop = stop_rx.wait_for(Option::is_some).await.map(|stop| *stop);
                    match stop {
                        Ok(stop) => stop,
                        // The handle is gone (the worker is shutting down): no more stops.
                        Err(_) => std::future::pending().await,
                    }
                };
                let limit_rx = &mut self.time_limit;
                let limit_moved = async {
                    if limit_rx.changed().await.is_err() {
                        std::future::pending::<()>().await;
                    }
                };
                tokio::select! {
                    status = waiter.wait() => break Ending::Exited(status),
                    _ = at_limit => break Ending::TimeLimit,
                    stop = stopped => break Ending::Stopped(stop.unwrap_or_default()),
                    _ = limit_moved => {
                        let limit = *self.time_limit.borrow();
                        tracing::info!(time_limit = ?limit, "the job's time limit changed");
                        // A limit raised past a warning already sent warns again.
                        if let (Some(w), Some(limit)) = (batch_warning, limit) {
                            if at_wall(limit - w.seconds.min(limit)) > tokio::time::Instant::now() {
                                warned = false;
                            }
                        }
                    }
                    _ = at_warning => {
                        warned = true;
                        if let Some((w, _)) = warning {
                            tracing::info!(signal = w.signal, seconds = w.seconds, "sending the time-limit warning to the batch shell");
                            write_signal_reason(&self.settings, assignment.job_id, assignment.run, StopReason::TimeLimit);
                            send_signal(group, None, w.signal, false);
                        }
                    }
                    Some(sent) = self.signals.recv() => {
                        tracing::info!(signal = sent.signal, whole_group = sent.whole_group, "signalling the batch shell (scancel)");
                        send_signal(group, Some(record.pid_start), sent.signal, sent.whole_group);
                    }
                }
            },
        };
        let reclaim_grace = match &ending {
            Ending::Stopped(stop) if stop.reclaimed => stop.grace,
            _ => None,
        };
        let (reason, kill_wait) = match ending {
            Ending::Exited(status) => return (status, false, false, false),
            Ending::TimeLimit => {
                let time_limit = *self.time_limit.borrow();
                tracing::info!(?time_limit, "job reached its time limit");
                (StopReason::TimeLimit, self.settings.kill_wait)
            }
            Ending::Stopped(stop) => {
                let kill_wait = stop.grace.unwrap_or(self.settings.kill_wait);
                if stop.node_failure {
                    tracing::info!("the node stops the job");
                    (StopReason::NodeFailure, kill_wait)
                } else if stop.reclaimed {
                    tracing::info!(
                        grace_seconds = stop.grace.map(|g| g.as_secs()),
                        "the node's instance is being reclaimed; stopping the job"
                    );
                    (StopReason::Reclaimed, kill_wait)
                } else if stop.preempted {
                    tracing::info!(grace_seconds = kill_wait.as_secs(), "job preempted");
                    (StopReason::Preempted, kill_wait)
                } else {
                    tracing::info!("job cancelled");
                    (StopReason::Cancelled, kill_wait)
                }
            }
        };
        let timed_out = reason == StopReason::TimeLimit;
        if let Err(err) = crate::run_dir::write_private(&files.ending, reason.as_str().as_bytes()) {
            tracing::debug!(error = %err, "could not record the ending");
        }
        if let (true, Some(notices)) = (timed_out, &self.time_limits) {
            // The api records the TIMEOUT decision before the first signal.
            let (ack, acked) = oneshot::channel();
            if notices
                .send(((assignment.job_id, assignment.run), ack))
                .is_ok()
                && tokio::time::timeout(TIME_LIMIT_RECORD_WAIT, acked)
                    .await
                    .is_err()
            {
                tracing::warn!("the api did not confirm the time limit in time; signalling anyway");
            }
        }
        write_signal_reason(&self.settings, assignment.job_id, assignment.run, reason);
        let status = if reason == StopReason::Reclaimed {
            reclaim(
                waiter,
                group,
                assignment.warning_signal,
                reclaim_grace,
                self.settings.kill_wait,
            )
            .await
        } else {
            terminate(waiter, group, kill_wait).await
        };
        let node_failure = reason == StopReason::NodeFailure;
        (status, timed_out, !timed_out && !node_failure, node_failure)
    }

    fn launch_failed(&self, assignment: &Assignment, err: &WorkerError) {
        let message = err.chain();
        tracing::warn!(error = %message, "job launch failed");
        let mut failed = report(assignment, ReportKind::LaunchFailed);
        failed.message = Some(message);
        failed.launch_fault = Some(err.launch_fault());
        self.send(failed);
        // A restarted worker must not find this run again (its report is journaled).
        let files = RunFiles::new(&run_dir(&self.settings, assignment.job_id, assignment.run));
        if files.record.exists() {
            let _ = crate::run_dir::write_private(&files.reported, b"");
        }
    }

    fn send(&self, report: JobReport) {
        if self.reports.send(report).is_err() {
            tracing::debug!("report dropped: the worker is shutting down");
        }
    }
}

/// The file that says why a warning signal came (`BERTH_SIGNAL_REASON_FILE`), in the
/// job user's own directory of the run ([`crate::run_dir::user_dir_path`]).
pub fn signal_reason_file(settings: &LaunchSettings, job_id: i64, run: u32) -> PathBuf {
    crate::run_dir::user_dir_path(settings, job_id, run).join(SIGNAL_REASON)
}

/// The signal reason file's name in the job user's directory of the run.
pub const SIGNAL_REASON: &str = "signal_reason";

/// Writes `reason` (`time_limit`, `preempted`, `cancelled`, `node_failure`) to the job's
/// signal reason file, before a time-limit warning and before the SIGTERM that stops the
/// job. The file is in a directory the job's user owns: it is replaced, never written
/// through ([`crate::run_dir::replace_file_in`]), and handed to that user (mode 0600).
pub(crate) fn write_signal_reason(
    settings: &LaunchSettings,
    job_id: i64,
    run: u32,
    reason: StopReason,
) {
    let dir = crate::run_dir::user_dir_path(settings, job_id, run);
    let text = format!("{}\n", reason.as_str());
    if let Err(err) = crate::run_dir::replace_file_in(&dir, SIGNAL_REASON, text.as_bytes(), 0o600) {
        tracing::warn!(dir = %dir.display(), error = %err, "could not write the signal reason");
    }
}

/// Sends signal number `signal` to the process `leader` (a batch shell or step task the
/// worker started, leader of its own process group) or, with `whole_group`, to its whole
/// process group: a time-limit warning, a `scancel --signal`. With `start` (`Some` of the
/// leader's recorded start time, itself optional), only while the leader is that same
/// process and alive: once it has ended its id may name another process, and what is
/// left of its group is being killed anyway. A signal number that is not one of Linux's
/// 31 standard signals, or a group already gone, is logged and left.
pub(crate) fn send_signal(leader: Pid, start: Option<Option<u64>>, signal: i32, whole_group: bool) {
    if let Some(start) = start {
        if !same_process_alive(leader.as_raw(), start) {
            tracing::debug!(
                pid = leader.as_raw(),
                signal,
                "not signalled: the process has ended"
            );
            return;
        }
    }
    let Ok(number) = Signal::try_from(signal) else {
        tracing::warn!(signal, "not a signal this worker sends");
        return;
    };
    let sent = if whole_group {
        killpg(leader, number)
    } else {
        nix::sys::signal::kill(leader, number)
    };
    match sent {
        Ok(()) | Err(nix::errno::Errno::ESRCH) => {}
        Err(err) => tracing::warn!(error = %err, signal, whole_group, "could not send the signal"),
    }
}

/// Sends `signal` to process group `group`; a group already gone is fine.
pub(crate) fn signal_group(group: Pid, signal: Signal) {
    match killpg(group, signal) {
        Ok(()) | Err(nix::errno::Errno::ESRCH) => {}
        Err(err) => {
            tracing::warn!(error = %err, ?signal, "could not signal the job's process group")
        }
    }
}

fn report(assignment: &Assignment, kind: ReportKind) -> JobReport {
    JobReport {
        job_id: assignment.job_id,
        run: assignment.run,
        kind,
        at: Utc::now(),
        exit_code: None,
        signal: None,
        timed_out: false,
        cancelled: false,
        out_of_memory: false,
        cpu_time_seconds: None,
        max_rss_mib: None,
        message: None,
        seq: None,
        pid: None,
        launch_fault: None,
        grant: assignment.grant.clone(),
        node_failed: false,
        incarnation: assignment.incarnation,
    }
}

/// A run's directory, `{state_dir}/jobs/{job_id}.{run}`.
pub fn run_dir(settings: &LaunchSettings, job_id: i64, run: u32) -> PathBuf {
    settings
        .state_dir
        .join("jobs")
        .join(format!("{job_id}.{run}"))
}

/// Makes the run's directories, writes the script, names the working directory and the
/// output files, and writes the shepherd's spec: everything of the job goes to the spec,
/// nothing to a root process's command line or environment.
fn prepare(settings: &LaunchSettings, assignment: &Assignment) -> Result<Prepared, WorkerError> {
    let user = job_user(settings, &assignment.user)?;
    let (job_id, run) = (assignment.job_id, assignment.run);
    let job_dir = run_dir(settings, job_id, run);
    crate::run_dir::ensure_dir(&job_dir, crate::run_dir::RUN_DIR_MODE)?;
    let files = RunFiles::new(&job_dir);
    files.clear();

    // The job user's own directory of the run: the script, the scratch directory and the
    // signal reason file.
    let own = crate::run_dir::user_dir(settings, job_id, run, user.as_ref())?;
    let script = own.join("script.sh");
    crate::run_dir::replace_file_in(&own, "script.sh", assignment.script.as_bytes(), 0o700)
        .map_err(|source| WorkerError::Io {
            action: "write the batch script",
            path: script.clone(),
            source,
        })?;
    let (work_dir, make_work_dir) = match &assignment.work_dir {
        Some(dir) => (PathBuf::from(dir), false),
        None => (own.join("work"), true),
    };

    let values = PatternValues {
        job_id,
        job_name: &assignment.name,
        array_job_id: assignment.array_job_id,
        array_task_id: assignment.array_task_id,
        user: &assignment.user,
        node_name: &settings.node_name,
        node_index: assignment.node_index,
        task_id: 0,
    };
    let resolve = |pattern: &str| {
        let path = PathBuf::from(pattern::expand(pattern, &values));
        if path.is_absolute() {
            path
        } else {
            work_dir.join(path)
        }
    };
    let stdout_path = resolve(&assignment.stdout);
    let mut outputs = vec![OutputSpec {
        stream: OutputStream::Stdout,
        path: stdout_path.clone(),
        open_mode: assignment.open_mode,
        private: false,
    }];
    if let Some(path) = assignment.stderr.as_deref().map(resolve) {
        if path != stdout_path {
            outputs.push(OutputSpec {
                stream: OutputStream::Stderr,
                path,
                open_mode: assignment.open_mode,
                private: false,
            });
        }
    }

    let mut environment = job_environment(
        settings,
        assignment,
        &work_dir,
        inherited_environment(settings, user.as_ref()),
    );
    let checkpoints = checkpoint_dir(settings, job_id, user.as_ref())?;
    environment.insert(
        "BERTH_CHECKPOINT_DIR".to_string(),
        checkpoints.display().to_string(),
    );
    put_commands_on_path(settings, &mut environment)?;
    let limits = crate::cgroup::Limits {
        memory_mib: assignment.memory_limit_mib,
        cpus: assignment.cpu_limit,
        cpu_ids: crate::topology::real_cpus(&settings.real_cpus, &assignment.cpu_ids),
    };
    let cgroup = job_cgroup(settings, job_id, run, &limits, &assignment.gpus);
    // Without a cpuset the exec stage pins the job to its CPUs (sched_setaffinity).
    let cpu_affinity = match &cgroup {
        Some(group) if group.cpuset => Vec::new(),
        _ => limits.cpu_ids.clone(),
    };
    // The batch shell learns its own pid (SLURM_TASK_PID) and then becomes
    // `bash script.sh ARGS…` in the same process. The script's arguments (`sbatch job.sh a
    // b`) are argv words after the script's path ("$0"), passed on as "$@": never part of
    // the shell text.
    let bash = if Path::new("/bin/bash").exists() {
        "/bin/bash"
    } else {
        "/usr/bin/bash"
    };
    let spec = ShepherdSpec {
        user: user.as_ref().map(|user| user.name.clone()),
        umask: job_umask(&assignment.environment),
        work_dir,
        make_work_dir,
        argv: [
            bash.to_string(),
            "-c".to_string(),
            "export SLURM_TASK_PID=$$; exec bash \"$0\" \"$@\"".to_string(),
            script.display().to_string(),
        ]
        .into_iter()
        .chain(assignment.script_args.iter().cloned())
        .collect(),
        environment,
        outputs,
        cgroups: cgroup.iter().flat_map(|group| group.dirs.clone()).collect(),
        cpu_affinity,
        pid_file: files.pid.clone(),
        status_file: files.status.clone(),
        outputs_file: files.outputs.clone(),
        lease: settings.lease.clone(),
        reason_dir: Some(own.clone()),
        pty: None,
    };
    let start = start_command(settings.client_exe.as_deref(), &files, &spec)?;
    Ok(Prepared {
        start,
        script,
        files,
        cgroup,
        user,
    })
}

/// The umask a job's files get: its submission's `SLURM_UMASK` (octal, as `sbatch` sends
/// it: `0022`), else [`DEFAULT_UMASK`].
pub fn job_umask(environment: &BTreeMap<String, String>) -> u32 {
    environment
        .get("SLURM_UMASK")
        .and_then(|mask| u32::from_str_radix(mask.trim(), 8).ok())
        .filter(|mask| *mask <= 0o777)
        .unwrap_or(DEFAULT_UMASK)
}

/// What a job inherits besides its submission's environment: a job run as its own user
/// gets nothing of the worker's environment, only its account's `HOME`, `USER`,
/// `LOGNAME` and `SHELL` (its submission's win); a job run as the worker's user gets the
/// worker's environment, less its credentials ([`SECRET_VARIABLES`], the node token).
pub fn inherited_environment(
    settings: &LaunchSettings,
    user: Option<&JobUser>,
) -> Vec<(String, String)> {
    match user {
        Some(user) => {
            let account = nix::unistd::User::from_uid(user.uid).ok().flatten();
            let mut env = vec![
                ("USER".to_string(), user.name.clone()),
                ("LOGNAME".to_string(), user.name.clone()),
            ];
            if let Some(account) = account {
                env.push(("HOME".to_string(), account.dir.display().to_string()));
                env.push(("SHELL".to_string(), account.shell.display().to_string()));
            }
            env
        }
        None => std::env::vars()
            .filter(|(name, value)| {
                !SECRET_VARIABLES.contains(&name.as_str())
                    && settings.token.as_deref() != Some(value.as_str())
            })
            .collect(),
    }
}

/// Puts the node's client commands ([`client_command_dir`]) first on the job's `PATH`
/// (after which [`DEFAULT_JOB_PATH`] when the job has none).
pub(crate) fn put_commands_on_path(
    settings: &LaunchSettings,
    environment: &mut BTreeMap<String, String>,
) -> Result<(), WorkerError> {
    let Some(bin) = client_command_dir(settings)? else {
        return Ok(());
    };
    let bin = bin.display().to_string();
    let path = environment
        .get("PATH")
        .filter(|path| !path.is_empty())
        .cloned()
        .unwrap_or_else(|| DEFAULT_JOB_PATH.to_string());
    // `srun`'s environment already has it first.
    if path.split(':').next() != Some(bin.as_str()) {
        environment.insert("PATH".to_string(), format!("{bin}:{path}"));
    }
    Ok(())
}

/// The batch script's environment: `inherited` (the worker's own) without the worker's
/// credentials, overlaid with the submission environment, then Slurm's variables
/// (`SLURM_JOB_ID`, `SLURM_JOB_NODELIST` compressed, `CUDA_VISIBLE_DEVICES` …) and
/// Berth's (`BERTH_JOB_ID`, `BERTH_API`). The job's devices are named as [`HeldDevices`]
/// says: `CUDA_VISIBLE_DEVICES` and `GPU_DEVICE_ORDINAL` by GPU index, MIG UUID or a
/// shard's GPU index, `SLURM_JOB_GPUS` by physical GPU index, `SLURM_GPUS_ON_NODE` counts
/// GPUs and MIG instances, `SLURM_SHARDS_ON_NODE` shards. Variables that do not apply
/// (array ids for a job that is not an array task, GPU lists for a job without GPUs) are
/// removed even when inherited. `SLURM_TASK_PID` is set by the batch shell itself. The
/// variables of [`berth_core::wire::API_SLURM_VARIABLES`] come from the assignment.
pub fn job_environment(
    settings: &LaunchSettings,
    assignment: &Assignment,
    work_dir: &Path,
    inherited: impl IntoIterator<Item = (String, String)>,
) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = inherited
        .into_iter()
        .filter(|(name, value)| {
            !SECRET_VARIABLES.contains(&name.as_str())
                && settings.token.as_deref() != Some(value.as_str())
        })
        .collect();
    env.extend(
        assignment
            .environment
            .iter()
            // A job submitted from inside a step does not inherit that step's variables.
            .filter(|(name, _)| !name.starts_with("SLURM_STEP"))
            .map(|(name, value)| (name.clone(), value.clone())),
    );

    let mut set = |name: &str, value: Option<String>| match value {
        Some(value) => {
            env.insert(name.to_string(), value);
        }
        None => {
            env.remove(name);
        }
    };
    let job_id = assignment.job_id.to_string();
    let nodelist = if assignment.nodes.is_empty() {
        settings.node_name.clone()
    } else {
        hostlist::compress(&assignment.nodes)
    };
    let num_nodes = assignment.nodes.len().max(1).to_string();
    let ntasks = assignment.ntasks.to_string();
    let held = HeldDevices::new(&settings.devices, &assignment.gpus);
    let visible = held.visible_list();
    let submit_dir = assignment
        .submit_dir
        .clone()
        .unwrap_or_else(|| work_dir.display().to_string());
    let submit_host = assignment
        .environment
        .get("HOSTNAME")
        .cloned()
        .unwrap_or_else(crate::host_name);

    set("SLURM_JOB_ID", Some(job_id.clone()));
    set("SLURM_JOBID", Some(job_id.clone()));
    set("SLURM_JOB_NAME", Some(assignment.name.clone()));
    set("SLURM_JOB_USER", Some(assignment.user.clone()));
    set("SLURM_JOB_ACCOUNT", assignment.account.clone());
    set("SLURM_JOB_PARTITION", Some(assignment.partition.clone()));
    set("SLURM_JOB_NODELIST", Some(nodelist.clone()));
    set("SLURM_NODELIST", Some(nodelist));
    set("SLURM_JOB_NUM_NODES", Some(num_nodes.clone()));
    set("SLURM_NNODES", Some(num_nodes));
    set("SLURM_NTASKS", Some(ntasks.clone()));
    set("SLURM_NPROCS", Some(ntasks));
    set(
        "SLURM_NTASKS_PER_NODE",
        assignment.ntasks_per_node.map(|n| n.to_string()),
    );
    set(
        "SLURM_CPUS_PER_TASK",
        assignment.cpus_per_task.map(|n| n.to_string()),
    );
    // The CPUs allocated here (every node of a job gets as many; Slurm writes
    // `SLURM_JOB_CPUS_PER_NODE` as `N(xK)` for K nodes).
    let cpus_here = if assignment.cpu_ids.is_empty() {
        assignment.cpu_limit
    } else {
        Some(assignment.cpu_ids.len() as u32)
    };
    let node_count = assignment.nodes.len().max(1);
    set("SLURM_CPUS_ON_NODE", cpus_here.map(|n| n.to_string()));
    set(
        "SLURM_JOB_CPUS_PER_NODE",
        cpus_here.map(|n| {
            if node_count > 1 {
                format!("{n}(x{node_count})")
            } else {
                n.to_string()
            }
        }),
    );
    set("SLURM_GPUS_ON_NODE", Some(held.gpus.to_string()));
    set(
        "SLURM_SHARDS_ON_NODE",
        (held.shards > 0).then(|| held.shards.to_string()),
    );
    set("SLURM_JOB_GPUS", held.physical_list());
    set("CUDA_VISIBLE_DEVICES", visible.clone());
    set("GPU_DEVICE_ORDINAL", visible);
    set("SLURM_SUBMIT_DIR", Some(submit_dir));
    set("SLURM_SUBMIT_HOST", Some(submit_host));
    set("SLURMD_NODENAME", Some(settings.node_name.clone()));
    set("SLURM_NODEID", Some(assignment.node_index.to_string()));
    set("SLURM_PROCID", Some("0".to_string()));
    set("SLURM_LOCALID", Some("0".to_string()));
    set("SLURM_TASK_PID", None);
    set("SLURM_RESTART_COUNT", Some(assignment.run.to_string()));
    set("SLURM_CLUSTER_NAME", Some("berth".to_string()));
    set(
        "SLURM_ARRAY_JOB_ID",
        assignment.array_job_id.map(|id| id.to_string()),
    );
    set(
        "SLURM_ARRAY_TASK_ID",
        assignment.array_task_id.map(|id| id.to_string()),
    );
    set(
        "SLURM_ARRAY_TASK_COUNT",
        assignment.array_task_count.map(|n| n.to_string()),
    );
    // The assignment gives the array's size, not its index set: this assumes tasks
    // 0..count (kept consistent with this task's own index).
    set(
        "SLURM_ARRAY_TASK_MIN",
        assignment.array_task_count.map(|_| "0".to_string()),
    );
    set(
        "SLURM_ARRAY_TASK_MAX",
        assignment.array_task_count.map(|count| {
            count
                .saturating_sub(1)
                .max(assignment.array_task_id.unwrap_or(0))
                .to_string()
        }),
    );
    set(
        "SLURM_GPUS_PER_TASK",
        assignment.gpus_per_task.map(|n| n.to_string()),
    );
    set(
        berth_core::signal::SIGNAL_REASON_VARIABLE,
        Some(
            signal_reason_file(settings, assignment.job_id, assignment.run)
                .display()
                .to_string(),
        ),
    );
    set("BERTH_JOB_ID", Some(job_id));
    set("BERTH_API", Some(settings.api_url.clone()));
    // The client commands inside the job talk to the api with the job's own token.
    set("BERTH_URL", Some(settings.api_url.clone()));
    set("BERTH_TOKEN", assignment.job_token.clone());
    // The variables the api works out from the job's record; absent ones are not
    // inherited (the array's range stays the worker's estimate from an older api).
    for name in berth_core::wire::API_SLURM_VARIABLES {
        match assignment.slurm_variables.get(*name) {
            Some(value) => {
                env.insert(name.to_string(), value.clone());
            }
            None if name.starts_with("SLURM_ARRAY_TASK_M")
                && assignment.array_task_id.is_some() => {}
            None => {
                env.remove(*name);
            }
        }
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_core::spec::OpenMode;
    use std::os::unix::fs::PermissionsExt;
    use std::time::Instant;

    /// A fresh directory under the system temp dir for one test.
    fn test_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("berth-worker-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn settings(dir: &Path) -> LaunchSettings {
        LaunchSettings {
            node_name: "node-2".to_string(),
            api_url: "http://127.0.0.1:9".to_string(),
            state_dir: dir.join("state"),
            kill_wait: Duration::from_secs(1),
            token: Some("node-secret".to_string()),
            client_exe: None,
            checkpoint_root: dir.join("checkpoints"),
            run_as_user: false,
            allow_root_jobs: false,
            cgroups: None,
            real_cpus: Vec::new(),
            gpu_minors: Vec::new(),
            devices: Vec::new(),
            lease: None,
        }
    }

    fn assignment(job_id: i64, script: &str, work_dir: &Path) -> Assignment {
        Assignment {
            job_id,
            run: 0,
            name: "test-job".to_string(),
            user: "alice".to_string(),
            account: Some("research".to_string()),
            partition: "gpu".to_string(),
            script: script.to_string(),
            script_args: Vec::new(),
            submit_dir: Some("/home/alice".to_string()),
            work_dir: Some(work_dir.display().to_string()),
            stdout: "slurm-%j.out".to_string(),
            stderr: None,
            open_mode: OpenMode::Truncate,
            time_limit: None,
            gpus: vec![],
            node_index: 0,
            nodes: vec!["node-2".to_string()],
            ntasks: 1,
            cpus_per_task: None,
            ntasks_per_node: None,
            environment: BTreeMap::new(),
            array_job_id: None,
            array_task_id: None,
            array_task_count: None,
            slurm_variables: Default::default(),
            gpus_per_task: None,
            memory_limit_mib: None,
            cpu_limit: None,
            cpu_ids: Vec::new(),
            warning_signal: None,
            job_token: Some("job-token".to_string()),
            grant: None,
            incarnation: None,
        }
    }

    /// Launches `assignment` and collects its reports until the last one.
    async fn run_to_end(
        settings: LaunchSettings,
        assignment: Assignment,
        during: impl FnOnce(&JobHandle),
    ) -> Vec<JobReport> {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let launcher = Launcher::new(settings, None, tx);
        let handle = launcher.launch(assignment);
        let mut reports = Vec::new();
        let mut during = Some(during);
        while let Some(report) = tokio::time::timeout(Duration::from_secs(20), rx.recv())
            .await
            .unwrap()
        {
            let last = report.kind != ReportKind::Started;
            if report.kind == ReportKind::Started {
                if let Some(during) = during.take() {
                    during(&handle);
                }
            }
            reports.push(report);
            if last {
                break;
            }
        }
        reports
    }

    fn read_env(file: &Path) -> BTreeMap<String, String> {
        std::fs::read_to_string(file)
            .unwrap()
            .lines()
            .filter_map(|line| line.split_once('='))
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect()
    }

    fn process_gone(pid: i32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            // A zombie waiting for its reaper is dead too.
            Ok(stat) => stat
                .rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().starts_with('Z'))
                .unwrap_or(false),
        }
    }

    async fn wait_gone(pid: i32) -> bool {
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until {
            if process_gone(pid) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    }

    #[tokio::test]
    async fn runs_a_script_with_slurm_environment() {
        let dir = test_dir("env");
        let mut job = assignment(
            42,
            "#!/bin/bash\necho \"pid=$$\"\nenv\necho 'to stderr' >&2\n",
            &dir,
        );
        job.gpus = vec![1, 3];
        job.nodes = vec!["node-1".into(), "node-2".into(), "node-3".into()];
        job.node_index = 1;
        job.stdout = "logs/%x-%j.out".to_string();
        job.environment
            .insert("FROM_SUBMIT".to_string(), "yes".to_string());
        let reports = run_to_end(settings(&dir), job, |_| {}).await;

        assert_eq!(reports.len(), 2);
        assert_eq!(reports[0].kind, ReportKind::Started);
        assert_eq!(reports[1].kind, ReportKind::Exited);
        assert_eq!(reports[1].exit_code, Some(0));
        assert!(!reports[1].timed_out && !reports[1].cancelled);

        let out = dir.join("logs/test-job-42.out");
        let env = read_env(&out);
        assert_eq!(env["SLURM_JOB_ID"], "42");
        assert_eq!(env["SLURM_JOB_NODELIST"], "node-[1-3]");
        assert_eq!(env["SLURM_NNODES"], "3");
        assert_eq!(env["SLURM_NODEID"], "1");
        assert_eq!(env["CUDA_VISIBLE_DEVICES"], "1,3");
        assert_eq!(env["SLURM_JOB_GPUS"], "1,3");
        assert_eq!(env["SLURM_GPUS_ON_NODE"], "2");
        assert_eq!(env["SLURM_JOB_ACCOUNT"], "research");
        assert_eq!(env["SLURMD_NODENAME"], "node-2");
        assert_eq!(env["SLURM_SUBMIT_DIR"], "/home/alice");
        assert_eq!(env["BERTH_JOB_ID"], "42");
        assert_eq!(env["FROM_SUBMIT"], "yes");
        assert_eq!(env["PWD"], dir.display().to_string());
        assert_eq!(env["SLURM_TASK_PID"], env["pid"]);
        assert!(!env.contains_key("SLURM_ARRAY_TASK_ID"));
        // stderr shares the stdout file when --error is not given.
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(text.contains("to stderr"));

        let script = dir.join("state/spool/42.0/script.sh");
        let mode = std::fs::metadata(&script).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }

    #[tokio::test]
    async fn separate_stderr_append_and_scratch_dir() {
        let dir = test_dir("streams");
        let mut job = assignment(7, "echo out\necho err >&2\nexit 3\n", &dir);
        job.work_dir = None;
        job.stdout = format!("{}/o-%j.txt", dir.display());
        job.stderr = Some(format!("{}/e-%j.txt", dir.display()));
        job.open_mode = OpenMode::Append;
        std::fs::write(dir.join("o-7.txt"), "earlier\n").unwrap();
        let reports = run_to_end(settings(&dir), job, |_| {}).await;

        assert_eq!(reports[1].exit_code, Some(3));
        assert_eq!(
            std::fs::read_to_string(dir.join("o-7.txt")).unwrap(),
            "earlier\nout\n"
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("e-7.txt")).unwrap(),
            "err\n"
        );
        assert!(dir.join("state/spool/7.0/work").is_dir());
    }

    #[tokio::test]
    async fn missing_work_dir_fails_the_launch() {
        let dir = test_dir("nowork");
        let job = assignment(8, "true\n", &dir.join("does/not/exist"));
        let reports = run_to_end(settings(&dir), job, |_| {}).await;
        assert_eq!(reports.len(), 1);
        assert_eq!(reports[0].kind, ReportKind::LaunchFailed);
        let message = reports[0].message.as_deref().unwrap();
        assert!(message.contains("does/not/exist"), "{message}");
    }

    #[tokio::test]
    async fn time_limit_terminates_the_job() {
        let dir = test_dir("timelimit");
        let mut job = assignment(
            9,
            "trap 'echo got TERM; exit 3' TERM\nwhile true; do sleep 0.1; done\n",
            &dir,
        );
        job.time_limit = Some(1);
        let started = Instant::now();
        let reports = run_to_end(settings(&dir), job, |_| {}).await;
        let exited = &reports[1];
        assert!(exited.timed_out);
        assert!(!exited.cancelled);
        assert_eq!(exited.exit_code, Some(3));
        assert!(started.elapsed() < Duration::from_secs(5));
        let text = std::fs::read_to_string(dir.join("slurm-9.out")).unwrap();
        assert!(text.contains("got TERM"), "{text}");
    }

    #[tokio::test]
    async fn time_limit_kills_a_job_that_ignores_term() {
        let dir = test_dir("ignoreterm");
        let mut job = assignment(10, "trap '' TERM\nsleep 60\n", &dir);
        job.time_limit = Some(1);
        let started = Instant::now();
        let reports = run_to_end(settings(&dir), job, |_| {}).await;
        let exited = &reports[1];
        assert!(exited.timed_out);
        assert_eq!(exited.signal, Some(9));
        assert_eq!(exited.exit_code, None);
        // 1 s limit + 1 s kill wait.
        assert!(started.elapsed() >= Duration::from_secs(2));
        assert!(started.elapsed() < Duration::from_secs(6));
    }

    #[tokio::test]
    async fn a_lowered_time_limit_moves_the_deadline() {
        let dir = test_dir("movelimit");
        let mut job = assignment(31, "sleep 60\n", &dir);
        job.time_limit = Some(600);
        let started = Instant::now();
        let reports = run_to_end(settings(&dir), job, |handle| {
            assert_eq!(handle.time_limit(), Some(600));
            assert!(handle.set_time_limit(Some(1)));
            assert!(
                !handle.set_time_limit(Some(1)),
                "the same limit is no change"
            );
        })
        .await;
        let exited = &reports[1];
        assert!(exited.timed_out);
        assert!(!exited.cancelled);
        assert!(started.elapsed() < Duration::from_secs(10));
        let reason = std::fs::read_to_string(signal_reason_file(&settings(&dir), 31, 0)).unwrap();
        assert_eq!(reason, "time_limit\n");
    }

    #[tokio::test]
    async fn a_preempted_job_gets_its_grace_not_the_kill_wait() {
        let dir = test_dir("grace");
        let ready = dir.join("ready");
        // The TERM handler needs 3 s; the kill wait is 1 s, the grace 10 s.
        let script = format!(
            "trap 'echo reason=$(cat $BERTH_SIGNAL_REASON_FILE); sleep 3; echo cleaned; exit 0' TERM\n\
             touch {}\nsleep 60 & wait\n",
            ready.display()
        );
        let job = assignment(32, &script, &dir);
        let reports = run_to_end(settings(&dir), job, |handle| {
            let until = Instant::now() + Duration::from_secs(10);
            while !ready.exists() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(20));
            }
            handle.stop(Stop {
                preempted: true,
                grace: Some(Duration::from_secs(10)),
                ..Stop::default()
            });
            // Only the first request counts.
            handle.cancel();
        })
        .await;
        let exited = &reports[1];
        assert!(exited.cancelled);
        assert!(!exited.timed_out);
        assert_eq!((exited.exit_code, exited.signal), (Some(0), None));
        let text = std::fs::read_to_string(dir.join("slurm-32.out")).unwrap();
        assert_eq!(text, "reason=preempted\ncleaned\n");
        let ending = std::fs::read_to_string(run_dir(&settings(&dir), 32, 0).join("ending"));
        assert_eq!(ending.unwrap(), "preempted");
    }

    /// `scancel -b` reaches the batch shell alone, `scancel -f` its whole process group
    /// (what it started too), and the job goes on to end as its script says.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_batch_signal_reaches_the_shell_alone_or_its_whole_group() {
        let dir = test_dir("batch-signal");
        let ready = dir.join("ready");
        let out = dir.join("slurm-35.out");
        let script = format!(
            "trap 'echo shell got USR1' USR1\n\
             bash -c 'trap \"echo child got USR1; exit 0\" USR1; while :; do sleep 0.05; done' &\n\
             child=$!\ntouch {}\n\
             while kill -0 $child 2>/dev/null; do wait $child; done\necho end\n",
            ready.display()
        );
        let (tx, mut rx) = mpsc::unbounded_channel();
        let launcher = Launcher::new(settings(&dir), None, tx);
        let handle = launcher.launch(assignment(35, &script, &dir));
        let lines = |line: &str| {
            std::fs::read_to_string(&out)
                .unwrap_or_default()
                .lines()
                .filter(|l| *l == line)
                .count()
        };
        let until = Instant::now() + Duration::from_secs(10);
        while !ready.exists() && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(handle.signal(BatchSignal {
            signal: 10,
            whole_group: false
        }));
        while lines("shell got USR1") == 0 && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // The child, still running, got nothing.
        assert_eq!(lines("child got USR1"), 0);
        assert!(handle.signal(BatchSignal {
            signal: 10,
            whole_group: true
        }));
        let exited = loop {
            let report = tokio::time::timeout(Duration::from_secs(20), rx.recv())
                .await
                .unwrap()
                .unwrap();
            if report.kind != ReportKind::Started {
                break report;
            }
        };
        assert_eq!(exited.kind, ReportKind::Exited);
        assert!(!exited.cancelled);
        assert_eq!((exited.exit_code, exited.signal), (Some(0), None));
        assert_eq!(
            (
                lines("shell got USR1"),
                lines("child got USR1"),
                lines("end")
            ),
            (2, 1, 1),
            "{}",
            std::fs::read_to_string(&out).unwrap_or_default()
        );
        // Once the run has ended, a signal has no one to go to.
        let _ = tokio::time::timeout(Duration::from_secs(5), async {
            while !handle.is_finished() {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await;
        assert!(!handle.signal(BatchSignal {
            signal: 10,
            whole_group: true
        }));
    }

    #[tokio::test]
    async fn a_reclaimed_job_gets_its_warning_signal_and_the_reclaimed_reason() {
        let dir = test_dir("reclaim");
        let ready = dir.join("ready");
        let script = format!(
            "trap 'echo caught USR1 reason=$(cat $BERTH_SIGNAL_REASON_FILE); exit 0' USR1\n\
             touch {}\nsleep 60 & wait\n",
            ready.display()
        );
        let mut job = assignment(34, &script, &dir);
        job.warning_signal = berth_core::signal::parse_warning_signal("B:USR1@60");
        let started = Instant::now();
        let reports = run_to_end(settings(&dir), job, |handle| {
            let until = Instant::now() + Duration::from_secs(10);
            while !ready.exists() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(20));
            }
            handle.stop(Stop {
                reclaimed: true,
                grace: Some(Duration::from_secs(30)),
                ..Stop::default()
            });
        })
        .await;
        let exited = &reports[1];
        assert!(exited.cancelled);
        assert_eq!((exited.exit_code, exited.signal), (Some(0), None));
        assert!(started.elapsed() < Duration::from_secs(15));
        let text = std::fs::read_to_string(dir.join("slurm-34.out")).unwrap();
        assert_eq!(text, "caught USR1 reason=reclaimed\n");
        let ending = std::fs::read_to_string(run_dir(&settings(&dir), 34, 0).join("ending"));
        assert_eq!(ending.unwrap(), "reclaimed");
    }

    #[tokio::test]
    async fn a_reclaimed_job_without_a_warning_gets_sigterm_within_its_grace() {
        let dir = test_dir("reclaim-term");
        let ready = dir.join("ready");
        let script = format!("trap '' TERM\ntouch {}\nsleep 60\n", ready.display());
        let job = assignment(35, &script, &dir);
        let mut slow = settings(&dir);
        slow.kill_wait = Duration::from_secs(30);
        let started = Instant::now();
        let reports = run_to_end(slow, job, |handle| {
            let until = Instant::now() + Duration::from_secs(10);
            while !ready.exists() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(20));
            }
            handle.stop(Stop {
                reclaimed: true,
                grace: Some(Duration::from_secs(2)),
                ..Stop::default()
            })
        })
        .await;
        // SIGTERM ignored: SIGKILL when the instance goes (2 s), not after the kill wait.
        assert_eq!(reports[1].signal, Some(9));
        assert!(started.elapsed() < Duration::from_secs(15));
    }

    #[tokio::test]
    async fn a_grace_of_zero_kills_right_after_the_term() {
        let dir = test_dir("nograce");
        let ready = dir.join("ready");
        let script = format!("trap '' TERM\ntouch {}\nsleep 60\n", ready.display());
        let job = assignment(33, &script, &dir);
        let mut slow = settings(&dir);
        slow.kill_wait = Duration::from_secs(30);
        let started = Instant::now();
        let reports = run_to_end(slow, job, |handle| {
            let until = Instant::now() + Duration::from_secs(10);
            while !ready.exists() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(20));
            }
            handle.stop(Stop {
                preempted: true,
                grace: Some(Duration::ZERO),
                ..Stop::default()
            })
        })
        .await;
        assert_eq!(reports[1].signal, Some(9));
        // Not after the 30 s kill wait.
        assert!(started.elapsed() < Duration::from_secs(15));
    }

    #[tokio::test]
    async fn cancellation_kills_the_whole_process_group() {
        let dir = test_dir("cancel");
        let pid_file = dir.join("child.pid");
        let script = format!(
            "sleep 300 &\necho $! > {}.tmp && mv {0}.tmp {0}\nwait\n",
            pid_file.display()
        );
        let job = assignment(11, &script, &dir);
        let reports = run_to_end(settings(&dir), job, |handle| {
            let until = Instant::now() + Duration::from_secs(10);
            while !pid_file.exists() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(20));
            }
            handle.cancel();
        })
        .await;
        let exited = &reports[1];
        assert!(exited.cancelled);
        assert!(!exited.timed_out);
        assert_eq!(exited.signal, Some(15));
        let child: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(wait_gone(child).await, "background sleep {child} survived");
    }

    #[tokio::test]
    async fn no_process_outlives_the_batch_shell() {
        let dir = test_dir("leftover");
        let pid_file = dir.join("child.pid");
        let script = format!("sleep 300 &\necho $! > {}\nexit 0\n", pid_file.display());
        let reports = run_to_end(settings(&dir), assignment(12, &script, &dir), |_| {}).await;
        assert_eq!(reports[1].exit_code, Some(0));
        let child: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(wait_gone(child).await, "background sleep {child} survived");
    }

    #[test]
    fn environment_hides_credentials_and_unallocated_gpus() {
        let dir = PathBuf::from("/tmp/work");
        let mut job = assignment(5, "true", &dir);
        job.array_job_id = Some(4);
        job.array_task_id = Some(1);
        job.array_task_count = Some(3);
        job.cpus_per_task = Some(8);
        let inherited = [
            ("BERTH_TOKEN", "abc"),
            ("OTHER_SECRET", "node-secret"),
            ("CUDA_VISIBLE_DEVICES", "0,1,2,3"),
            ("PATH", "/usr/bin:/bin"),
        ]
        .map(|(name, value)| (name.to_string(), value.to_string()));
        let env = job_environment(&settings(&dir), &job, &dir, inherited);
        assert_eq!(env["BERTH_TOKEN"], "job-token");
        assert!(!env.contains_key("OTHER_SECRET"));
        assert!(!env.contains_key("CUDA_VISIBLE_DEVICES"));
        assert!(!env.contains_key("GPU_DEVICE_ORDINAL"));
        assert_eq!(env["SLURM_GPUS_ON_NODE"], "0");
        assert_eq!(env["PATH"], "/usr/bin:/bin");
        assert_eq!(env["SLURM_ARRAY_JOB_ID"], "4");
        assert_eq!(env["SLURM_ARRAY_TASK_ID"], "1");
        assert_eq!(env["SLURM_ARRAY_TASK_COUNT"], "3");
        assert_eq!(env["SLURM_ARRAY_TASK_MAX"], "2");
        assert_eq!(env["SLURM_CPUS_PER_TASK"], "8");
        assert_eq!(env["SLURM_JOB_NODELIST"], "node-2");
        assert_eq!(env["SLURM_CLUSTER_NAME"], "berth");
    }

    #[test]
    fn the_umask_is_the_submitters_else_private() {
        let env = |mask: &str| -> BTreeMap<String, String> {
            [("SLURM_UMASK".to_string(), mask.to_string())].into()
        };
        assert_eq!(job_umask(&env("0022")), 0o022);
        assert_eq!(job_umask(&env("027")), 0o027);
        assert_eq!(job_umask(&env("rw-")), DEFAULT_UMASK);
        assert_eq!(job_umask(&env("07777")), DEFAULT_UMASK);
        assert_eq!(job_umask(&BTreeMap::new()), 0o077);
    }

    #[test]
    fn a_job_of_its_own_user_inherits_nothing_of_the_worker() {
        let dir = PathBuf::from("/tmp/work");
        let me = nix::unistd::User::from_uid(nix::unistd::geteuid())
            .unwrap()
            .unwrap();
        let user = JobUser {
            name: me.name.clone(),
            uid: me.uid,
            gid: me.gid,
        };
        let inherited = inherited_environment(&settings(&dir), Some(&user));
        let names: Vec<&str> = inherited.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["USER", "LOGNAME", "HOME", "SHELL"]);
        let mut job = assignment(5, "true", &dir);
        job.environment
            .insert("HOME".to_string(), "/home/elsewhere".to_string());
        let env = job_environment(&settings(&dir), &job, &dir, inherited);
        assert_eq!(env["HOME"], "/home/elsewhere", "the submission's wins");
        assert_eq!(env["USER"], me.name);
        assert!(!env.contains_key("CARGO"), "nothing of the worker's own");
    }

    /// The devices of a simulated node of `spec`.
    fn node_devices(spec: &str) -> Vec<GpuInfo> {
        use crate::gpu::GpuBackend;
        crate::gpu::SimulatedBackend::parse(spec, "node-2")
            .unwrap()
            .inventory()
    }

    #[test]
    fn held_devices_name_gpus_mig_instances_and_shard_gpus() {
        // Whole GPUs: by index, in the order held, as before devices had kinds (also for
        // indices the node does not list).
        let whole = node_devices("4xH100");
        let held = HeldDevices::new(&whole, &[3, 1]);
        assert_eq!(held.visible, ["3", "1"]);
        assert_eq!(held.physical, [3, 1]);
        assert_eq!((held.gpus, held.shards), (2, 0));
        assert_eq!(
            HeldDevices::new(&[], &[1, 3]).visible_list().as_deref(),
            Some("1,3")
        );
        assert_eq!(HeldDevices::new(&whole, &[]), HeldDevices::default());
        assert_eq!(HeldDevices::new(&whole, &[]).visible_list(), None);

        // MIG instances: by UUID; their GPUs each once.
        let mig = node_devices("2xA100:mig=3g.40gb*2");
        let held = HeldDevices::new(&mig, &[0, 1, 2]);
        assert_eq!(
            held.visible,
            [
                mig[0].uuid.clone(),
                mig[1].uuid.clone(),
                mig[2].uuid.clone()
            ]
        );
        assert!(held.visible.iter().all(|v| v.starts_with("MIG-sim-")));
        assert_eq!(held.physical_list().as_deref(), Some("0,1"));
        assert_eq!((held.gpus, held.shards), (3, 0));

        // Shards: by their GPU's index, each GPU once.
        let shards = node_devices("4xH100:shards=4");
        let held = HeldDevices::new(&shards, &[4, 5, 6, 13]);
        assert_eq!(held.visible_list().as_deref(), Some("1,3"));
        assert_eq!(held.physical_list().as_deref(), Some("1,3"));
        assert_eq!((held.gpus, held.shards), (0, 4));
    }

    #[test]
    fn environment_names_mig_instances_and_shard_gpus() {
        let dir = PathBuf::from("/tmp/work");
        let mut settings = settings(&dir);
        settings.devices = node_devices("2xA100:mig=3g.40gb*2");
        let mut job = assignment(6, "true", &dir);
        job.gpus = vec![2, 3];
        let inherited = [("SLURM_SHARDS_ON_NODE".to_string(), "9".to_string())];
        let env = job_environment(&settings, &job, &dir, inherited);
        let visible = format!("{},{}", settings.devices[2].uuid, settings.devices[3].uuid);
        assert_eq!(env["CUDA_VISIBLE_DEVICES"], visible);
        assert_eq!(env["GPU_DEVICE_ORDINAL"], visible);
        assert_eq!(env["SLURM_JOB_GPUS"], "1");
        assert_eq!(env["SLURM_GPUS_ON_NODE"], "2");
        assert!(!env.contains_key("SLURM_SHARDS_ON_NODE"));

        settings.devices = node_devices("8xH100:shards=2/2");
        job.gpus = vec![6, 7, 8];
        let env = job_environment(&settings, &job, &dir, []);
        assert_eq!(env["CUDA_VISIBLE_DEVICES"], "3,4");
        assert_eq!(env["GPU_DEVICE_ORDINAL"], "3,4");
        assert_eq!(env["SLURM_JOB_GPUS"], "3,4");
        assert_eq!(env["SLURM_GPUS_ON_NODE"], "0");
        assert_eq!(env["SLURM_SHARDS_ON_NODE"], "3");

        // A whole-GPU node names its GPUs as it always did.
        settings.devices = node_devices("4xH100");
        job.gpus = vec![1, 3];
        let env = job_environment(&settings, &job, &dir, []);
        assert_eq!(env["CUDA_VISIBLE_DEVICES"], "1,3");
        assert_eq!(env["SLURM_JOB_GPUS"], "1,3");
        assert_eq!(env["SLURM_GPUS_ON_NODE"], "2");
        assert!(!env.contains_key("SLURM_SHARDS_ON_NODE"));
    }
}
