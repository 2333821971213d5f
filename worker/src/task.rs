//! Starting and supervising one task of a job step (`srun` inside an allocation).
//!
//! [`launch_task`] takes a [`StepTaskLaunch`] from a sync answer and spawns a supervisor
//! that runs the step's command as the leader of its own process group, in the step's
//! working directory (else the job's scratch directory), with `srun`'s environment
//! overlaid by the task's Slurm variables ([`task_environment`]), under a shepherd
//! (`berth shepherd`, as batch shells: the command and environment go through its spec,
//! applied only once it has become the job's user) that records its exit status. Its
//! stdout and stderr go to root's files (mode 0600) in the root-only
//! `{state_dir}/jobs/{job_id}.{run}/tasks/{step}.{task}/`, shipped to the api in chunks
//! (`POST /v1/jobs/{id}/steps/{step}/output`), from where `srun` prints them. It reports `Started`, then `Exited` once all its output is uploaded (or
//! `LaunchFailed`). A cancellation (the step is being stopped, or its job ended) sends
//! SIGTERM to the group, SIGKILL after the kill wait; whatever is left of the group when
//! the task's process exits is killed.
//!
//! A task survives a worker restart: its record (`task.json`, the launch and the pid)
//! lets the next worker process find it ([`unreported_tasks`]) and supervise it again
//! ([`adopt_task`]): the output is shipped on from where the last upload ended, and the
//! exit status the shepherd recorded is reported.

use crate::cgroup::JobCgroup;
use crate::launch::{
    send_signal, signal_group, write_signal_reason, HeldDevices, LaunchSettings, RunFiles,
    StopReason, Waiter, SECRET_VARIABLES,
};
use crate::output::{OutputTail, OutputUploader};
use crate::pty::PtyFiles;
use crate::shepherd::{OutputSpec, ShepherdSpec};
use berth_core::hostlist;
use berth_core::step::{StepTaskKey, StepTaskLaunch, StepTaskReport};
use berth_core::wire::{OutputStream, ReportKind};
use chrono::Utc;
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, Notify};
use tokio::task::{JoinHandle, JoinSet};
use tracing::Instrument;

/// A launched step task: its key and the means to stop or signal it.
#[derive(Debug)]
pub struct TaskHandle {
    key: StepTaskKey,
    incarnation: Option<berth_core::wire::Incarnation>,
    gpus: Vec<u32>,
    /// A `--pty` task's terminal input files.
    pty: Option<PtyFiles>,
    cancel: Arc<Notify>,
    cancelled: std::sync::atomic::AtomicBool,
    signals: mpsc::UnboundedSender<i32>,
    task: JoinHandle<()>,
}

impl TaskHandle {
    /// Which task.
    pub fn key(&self) -> StepTaskKey {
        self.key
    }

    /// Its job's incarnation, from its launch (`None` from an older api).
    pub fn incarnation(&self) -> Option<berth_core::wire::Incarnation> {
        self.incarnation
    }

    /// The GPUs it sees.
    pub fn gpus(&self) -> &[u32] {
        &self.gpus
    }

    /// A `--pty` task's terminal input files (`None`: no terminal).
    pub fn pty(&self) -> Option<&PtyFiles> {
        self.pty.as_ref()
    }

    /// Asks the supervisor to stop the task (SIGTERM, SIGKILL after the kill wait).
    /// Returns whether this was the first request.
    pub fn cancel(&self) -> bool {
        self.cancel.notify_one();
        !self
            .cancelled
            .swap(true, std::sync::atomic::Ordering::SeqCst)
    }

    /// Asks the supervisor to send signal number `signal` to the task's process group
    /// (`scancel --signal`) while it runs; one that comes before the task has started is
    /// sent once it has, one that comes once it is being stopped or has ended is dropped.
    /// Returns whether the supervisor was still there to take it.
    pub fn signal(&self, signal: i32) -> bool {
        self.signals.send(signal).is_ok()
    }

    /// Stops supervising (the worker is shutting down); the process keeps running.
    pub fn abandon(self) {
        self.task.abort();
    }

    /// Waits for the supervisor to finish until `deadline`, then stops supervising.
    pub async fn finish_by(mut self, deadline: tokio::time::Instant) {
        if tokio::time::timeout_at(deadline, &mut self.task)
            .await
            .is_err()
        {
            self.task.abort();
        }
    }
}

fn task_span(key: StepTaskKey) -> tracing::Span {
    tracing::info_span!(
        "task",
        job.id = key.job_id,
        job.run = key.run,
        step.id = key.step_id,
        task = key.task_id
    )
}

/// Launches a step task on a new supervisor (inside a Tokio runtime). Its reports arrive
/// on `reports`; with an `uploader`, its output goes to the api (else it is only written
/// locally).
pub fn launch_task(
    settings: Arc<LaunchSettings>,
    uploader: Option<OutputUploader>,
    reports: mpsc::UnboundedSender<StepTaskReport>,
    launch: StepTaskLaunch,
) -> TaskHandle {
    supervised(settings, uploader, reports, launch, |supervisor, launch| {
        supervisor.supervise(launch)
    })
}

/// Supervises again a step task that a previous worker process started (found by
/// [`unreported_tasks`]): its output, cancellation and end, reported as usual (no new
/// `Started`).
pub fn adopt_task(
    settings: Arc<LaunchSettings>,
    uploader: Option<OutputUploader>,
    reports: mpsc::UnboundedSender<StepTaskReport>,
    record: TaskRecord,
    launch: StepTaskLaunch,
) -> TaskHandle {
    supervised(settings, uploader, reports, launch, |supervisor, launch| {
        supervisor.adopt(record, launch)
    })
}

/// A new supervisor of task `launch`, running `run` on it (launching or adopting), and
/// the handle to it.
fn supervised<F, Fut>(
    settings: Arc<LaunchSettings>,
    uploader: Option<OutputUploader>,
    reports: mpsc::UnboundedSender<StepTaskReport>,
    launch: StepTaskLaunch,
    run: F,
) -> TaskHandle
where
    F: FnOnce(TaskSupervisor, StepTaskLaunch) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let cancel = Arc::new(Notify::new());
    let (signals, signals_rx) = mpsc::unbounded_channel();
    let (key, gpus, incarnation) = (launch.key, launch.gpus.clone(), launch.incarnation);
    let pty = launch
        .pty
        .then(|| PtyFiles::new(&task_record_dir(&settings, key)));
    let supervisor = TaskSupervisor {
        settings,
        uploader,
        reports,
        cancel: cancel.clone(),
        signals: signals_rx,
        incarnation,
    };
    let task = tokio::spawn(run(supervisor, launch).instrument(task_span(key)));
    TaskHandle {
        key,
        incarnation,
        gpus,
        pty,
        cancel,
        cancelled: std::sync::atomic::AtomicBool::new(false),
        signals,
        task,
    }
}

struct TaskSupervisor {
    settings: Arc<LaunchSettings>,
    uploader: Option<OutputUploader>,
    reports: mpsc::UnboundedSender<StepTaskReport>,
    cancel: Arc<Notify>,
    /// Signals to send to the task's process group while it runs.
    signals: mpsc::UnboundedReceiver<i32>,
    /// The job's incarnation, put on every report.
    incarnation: Option<berth_core::wire::Incarnation>,
}

fn report(key: StepTaskKey, kind: ReportKind) -> StepTaskReport {
    StepTaskReport {
        key,
        kind,
        at: Utc::now(),
        exit_code: None,
        signal: None,
        message: None,
        incarnation: None,
    }
}

/// A task's output file for `stream` in its directory.
fn output_path(task_dir: &std::path::Path, stream: OutputStream) -> PathBuf {
    task_dir.join(stream.as_str())
}

impl TaskSupervisor {
    fn send(&self, mut report: StepTaskReport) {
        report.incarnation = self.incarnation;
        if self.reports.send(report).is_err() {
            tracing::debug!("report dropped: the worker is shutting down");
        }
    }

    fn launch_failed(&self, key: StepTaskKey, message: String) {
        tracing::warn!(error = %message, "step task launch failed");
        let mut failed = report(key, ReportKind::LaunchFailed);
        failed.message = Some(message);
        self.send(failed);
    }

    async fn supervise(self, launch: StepTaskLaunch) {
        let key = launch.key;
        let user = match crate::launch::job_user(&self.settings, &launch.user) {
            Ok(user) => user,
            Err(err) => return self.launch_failed(key, err.chain()),
        };
        // The job user's own directory of the run on this node (its scratch directory and
        // signal reason file), made here when the batch shell runs elsewhere.
        let own = match crate::run_dir::user_dir(&self.settings, key.job_id, key.run, user.as_ref())
        {
            Ok(dir) => dir,
            Err(err) => return self.launch_failed(key, err.chain()),
        };
        let (work_dir, make_work_dir) = match &launch.work_dir {
            Some(dir) => (PathBuf::from(dir), false),
            None => (own.join("work"), true),
        };
        let mut environment = task_environment(
            &self.settings,
            &launch,
            None,
            crate::launch::inherited_environment(&self.settings, user.as_ref()),
        );
        match crate::launch::checkpoint_dir(&self.settings, key.job_id, user.as_ref()) {
            Ok(dir) => {
                environment.insert(
                    "BERTH_CHECKPOINT_DIR".to_string(),
                    dir.display().to_string(),
                );
            }
            Err(err) => return self.launch_failed(key, err.chain()),
        }
        if let Err(err) = crate::launch::put_commands_on_path(&self.settings, &mut environment) {
            return self.launch_failed(key, err.chain());
        }
        // The job's cgroups on this node (made here when the batch shell is elsewhere):
        // its limits, and only the job's GPUs on this node may be opened.
        let limits = crate::cgroup::Limits {
            memory_mib: launch.memory_limit_mib,
            cpus: launch.cpu_limit,
            cpu_ids: self
                .settings
                .cpus
                .real_cpus(&launch.job_cpu_ids, launch.job_threads_per_core),
        };
        let cgroup = crate::launch::job_cgroup(
            &self.settings,
            key.job_id,
            key.run,
            &limits,
            &launch.job_gpus,
        );
        // The task's directory (root's alone): its record, the shepherd's files, and its
        // output.
        let task_dir = task_record_dir(&self.settings, key);
        let run_dir = crate::launch::run_dir(&self.settings, key.job_id, key.run);
        for dir in [&run_dir, &run_dir.join("tasks"), &task_dir] {
            if let Err(err) = crate::run_dir::ensure_dir(dir, crate::run_dir::RUN_DIR_MODE) {
                return self.launch_failed(key, err.chain());
            }
        }
        let files = RunFiles::new(&task_dir);
        files.clear();
        let outputs = [OutputStream::Stdout, OutputStream::Stderr]
            .into_iter()
            .map(|stream| OutputSpec {
                stream,
                path: output_path(&task_dir, stream),
                open_mode: berth_core::spec::OpenMode::Truncate,
                private: true,
            })
            .collect();
        // The task learns its own pid (SLURM_TASK_PID), then becomes the command.
        let mut argv = vec![
            "/bin/sh".to_string(),
            "-c".to_string(),
            "SLURM_TASK_PID=$$; export SLURM_TASK_PID; exec \"$@\"".to_string(),
            "berth-task".to_string(),
        ];
        argv.extend(launch.command.iter().cloned());
        let spec = ShepherdSpec {
            user: user.as_ref().map(|user| user.name.clone()),
            umask: crate::launch::job_umask(&launch.environment),
            work_dir,
            make_work_dir,
            argv,
            environment,
            outputs,
            cgroups: cgroup.iter().flat_map(|group| group.dirs.clone()).collect(),
            // Without a cpuset the exec stage pins the task to the job's CPUs here.
            cpu_affinity: match &cgroup {
                Some(group) if group.cpuset => Vec::new(),
                _ => limits.cpu_ids.clone(),
            },
            pid_file: files.pid.clone(),
            status_file: files.status.clone(),
            outputs_file: files.outputs.clone(),
            lease: self.settings.lease.clone(),
            reason_dir: Some(own.clone()),
            pty: launch.pty.then(|| PtyFiles::new(&task_dir)),
        };
        let start = match crate::launch::start_command(
            self.settings.client_exe.as_deref(),
            &files,
            &spec,
        ) {
            Ok(start) => start,
            Err(err) => return self.launch_failed(key, err.chain()),
        };
        // With a shepherd, the task can be found again after a worker restart: recorded
        // before the spawn (pid unknown yet), so that it is never launched twice.
        let shepherded = matches!(start, crate::launch::Start::Shepherd(_));
        let mut record = TaskRecord {
            key,
            pid: 0,
            pid_start: None,
            launch: None,
            cgroup,
        };
        if shepherded {
            record.launch = Some(launch.clone());
            record.write(&task_dir);
        }
        let (waiter, pid, _) = match crate::launch::spawn_supervised(start, &files).await {
            Ok(spawned) => spawned,
            Err(err) => {
                let _ = crate::run_dir::write_private(&files.reported, b"");
                return self.launch_failed(
                    key,
                    format!("starting {:?}: {}", launch.command.join(" "), err.chain()),
                );
            }
        };
        record.pid = pid;
        record.pid_start = crate::launch::process_start_ticks(pid);
        if shepherded {
            record.write(&task_dir);
        }
        tracing::info!(pid, gpus = ?launch.gpus, "step task started");
        self.send(report(key, ReportKind::Started));
        self.follow(record, launch, waiter, false).await;
    }

    /// Supervises a task a previous worker process started (from its `task.json`).
    async fn adopt(self, mut record: TaskRecord, launch: StepTaskLaunch) {
        let key = launch.key;
        let task_dir = task_record_dir(&self.settings, key);
        let files = RunFiles::new(&task_dir);
        if record.pid == 0 {
            // The previous worker died between the spawn and the shepherd's pid file.
            match crate::launch::await_pid(&files).await {
                Some(pid) => {
                    record.pid = pid;
                    record.pid_start = crate::launch::process_start_ticks(pid);
                    record.write(&task_dir);
                }
                None => {
                    let _ = crate::run_dir::write_private(&files.reported, b"");
                    let err = crate::launch::launch_error(
                        &files,
                        "the worker restarted before the shepherd started the task",
                    );
                    return self.launch_failed(key, err.to_string());
                }
            }
        }
        tracing::info!(
            pid = record.pid,
            "supervising a step task started before a restart"
        );
        let waiter = Waiter::Adopted {
            files,
            pid: record.pid,
            start: record.pid_start,
        };
        self.follow(record, launch, waiter, true).await;
    }

    /// Ships the output, sends the time-limit warning, stops the task when cancelled,
    /// waits for its end and reports it.
    async fn follow(
        mut self,
        record: TaskRecord,
        launch: StepTaskLaunch,
        mut waiter: Waiter,
        adopted: bool,
    ) {
        let key = launch.key;
        let task_dir = task_record_dir(&self.settings, key);
        let files = RunFiles::new(&task_dir);
        let group = Pid::from_raw(record.pid);
        let mut tails = JoinSet::new();
        let mut stops = Vec::new();
        if let Some(uploader) = &self.uploader {
            for stream in [OutputStream::Stdout, OutputStream::Stderr] {
                let (stop, stopped) = oneshot::channel();
                stops.push(stop);
                let tail = OutputTail {
                    job_id: key.job_id,
                    run: key.run,
                    incarnation: launch.incarnation,
                    step: Some((key.step_id, key.task_id)),
                    stream,
                    path: output_path(&task_dir, stream),
                    start: 0,
                    progress: Some(files.progress(stream)),
                    // Root's own file in the run's root-only directory.
                    owner: None,
                    interval: if launch.pty {
                        crate::output::TERMINAL_TAIL_INTERVAL
                    } else {
                        crate::output::TAIL_INTERVAL
                    },
                };
                tails.spawn(tail.follow(uploader.clone(), stopped).in_current_span());
            }
        }

        let warning = launch.warning_signal.zip(launch.warning_at);
        // A restarted worker does not repeat a warning already due.
        let mut warned = adopted && warning.is_some_and(|(_, at)| at <= Utc::now());
        let status = loop {
            let at_warning = async {
                match warning {
                    Some((_, at)) if !warned => {
                        let wait = (at - Utc::now()).to_std().unwrap_or(Duration::ZERO);
                        tokio::time::sleep(wait).await
                    }
                    _ => std::future::pending().await,
                }
            };
            tokio::select! {
                status = waiter.wait() => break status,
                _ = self.cancel.notified() => {
                    tracing::info!("stopping step task");
                    break crate::launch::terminate(&mut waiter, group, self.settings.kill_wait).await;
                }
                _ = at_warning => {
                    warned = true;
                    if let Some((signal, _)) = warning {
                        tracing::info!(signal, "sending the time-limit warning to the task");
                        write_signal_reason(&self.settings, key.job_id, key.run, StopReason::TimeLimit);
                        send_signal(group, None, signal, true);
                    }
                }
                Some(signal) = self.signals.recv() => {
                    tracing::info!(signal, "signalling the step task (scancel)");
                    send_signal(group, Some(record.pid_start), signal, true);
                }
            }
        };
        // Nothing of the task outlives it.
        signal_group(group, Signal::SIGKILL);
        for stop in stops {
            let _ = stop.send(());
        }
        while tails.join_next().await.is_some() {}
        let mut exited = report(key, ReportKind::Exited);
        match status {
            Ok(status) => {
                exited.exit_code = status.exit_code;
                exited.signal = status.signal;
            }
            Err(message) => exited.message = Some(format!("the task's exit status: {message}")),
        }
        tracing::info!(
            exit_code = exited.exit_code,
            signal = exited.signal,
            "step task exited"
        );
        if let Some(group) = record.cgroup {
            // The last one out removes it (it stays while the batch shell or other tasks
            // are inside).
            tokio::spawn(async move { group.remove_when_empty().await });
        }
        self.send(exited);
    }
}

/// What a restarted worker needs to supervise a step task it did not start
/// (`task.json` in the task's directory).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TaskRecord {
    /// Which task.
    pub key: StepTaskKey,
    /// Its process group; 0 while the shepherd has not said yet.
    pub pid: i32,
    /// Its start time in clock ticks since boot, against pid reuse.
    pub pid_start: Option<u64>,
    /// The launch as received; `None` in records of workers from before tasks could be
    /// adopted (such a task is stopped and reported lost).
    #[serde(default)]
    pub launch: Option<StepTaskLaunch>,
    /// The job's cgroups it joined, removed when it ends (if nothing else is inside).
    #[serde(default)]
    pub cgroup: Option<JobCgroup>,
}

impl TaskRecord {
    fn write(&self, task_dir: &std::path::Path) {
        let text = serde_json::to_string(self).unwrap_or_default();
        if let Err(err) =
            crate::run_dir::write_private(&task_dir.join("task.json"), text.as_bytes())
        {
            tracing::warn!(error = %err, "could not record the task; a restarted worker will not find it");
        }
    }
}

fn task_record_dir(settings: &LaunchSettings, key: StepTaskKey) -> PathBuf {
    crate::launch::run_dir(settings, key.job_id, key.run)
        .join("tasks")
        .join(format!("{}.{}", key.step_id, key.task_id))
}

/// Marks a task's end as acknowledged by the api: a restarted worker leaves it alone.
pub fn mark_reported(settings: &LaunchSettings, key: StepTaskKey) {
    let dir = task_record_dir(settings, key);
    if dir.is_dir() {
        let _ = crate::run_dir::write_private(&RunFiles::new(&dir).reported, b"");
    }
}

/// The step tasks a previous worker process left whose end the api has not acknowledged:
/// the records to adopt ([`adopt_task`]), and the reports of those that cannot be
/// followed (records without a launch, from older workers): each still running is killed
/// and reported ended, with a message saying why.
pub fn unreported_tasks(settings: &LaunchSettings) -> (Vec<TaskRecord>, Vec<StepTaskReport>) {
    let Ok(runs) = std::fs::read_dir(settings.state_dir.join("jobs")) else {
        return (Vec::new(), Vec::new());
    };
    let mut adoptable = Vec::new();
    let mut lost = Vec::new();
    for run in runs.flatten() {
        let Ok(tasks) = std::fs::read_dir(run.path().join("tasks")) else {
            continue;
        };
        for task in tasks.flatten() {
            let dir = task.path();
            if RunFiles::new(&dir).reported.exists() {
                continue;
            }
            let Some(record) = std::fs::read_to_string(dir.join("task.json"))
                .ok()
                .and_then(|text| serde_json::from_str::<TaskRecord>(&text).ok())
            else {
                continue;
            };
            if record.launch.is_some() {
                adoptable.push(record);
                continue;
            }
            if crate::launch::process_start_ticks(record.pid) == record.pid_start
                && record.pid_start.is_some()
            {
                signal_group(Pid::from_raw(record.pid), Signal::SIGKILL);
            }
            let mut ended = report(record.key, ReportKind::Exited);
            ended.signal = Some(9);
            ended.message =
                Some("the worker restarted while the task ran; it was stopped".to_string());
            lost.push(ended);
        }
    }
    adoptable.sort_by_key(|record| record.key);
    (adoptable, lost)
}

/// A step task's environment: `inherited` (the worker's) without its credentials,
/// overlaid with `srun`'s environment, then the task's variables: `SLURM_STEP_ID`,
/// `SLURM_PROCID`, `SLURM_LOCALID`, `SLURM_NODEID`, `SLURM_NTASKS`, `SLURM_STEP_NODELIST`,
/// `SLURM_STEP_GPUS` and `SLURM_JOB_GPUS` (physical GPU indices: a MIG instance's or
/// shard's GPU), `SLURM_GPUS_ON_NODE` and `SLURM_SHARDS_ON_NODE` (the job's devices here),
/// `CUDA_VISIBLE_DEVICES` (the task's devices: its own with `--gpus-per-task`, else every
/// device of the job on this node; as [`HeldDevices`] names them), `SLURMD_NODENAME`;
/// `PATH` starts with the job's client commands on this node.
pub fn task_environment(
    settings: &LaunchSettings,
    launch: &StepTaskLaunch,
    bin_dir: Option<&std::path::Path>,
    inherited: impl IntoIterator<Item = (String, String)>,
) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = inherited
        .into_iter()
        .filter(|(name, value)| {
            !SECRET_VARIABLES.contains(&name.as_str())
                && settings.token.as_deref() != Some(value.as_str())
        })
        .collect();
    env.extend(launch.environment.clone());
    let key = launch.key;
    let mut set = |name: &str, value: Option<String>| match value {
        Some(value) => {
            env.insert(name.to_string(), value);
        }
        None => {
            env.remove(name);
        }
    };
    let ntasks = launch.ntasks.to_string();
    let nodelist = hostlist::compress(&launch.step_nodes);
    let step_id = key.step_id.to_string();
    let visible = HeldDevices::new(&settings.devices, &launch.gpus).visible_list();
    let step = HeldDevices::new(&settings.devices, &launch.step_gpus);
    let job = HeldDevices::new(&settings.devices, &launch.job_gpus);
    set("SLURM_STEP_ID", Some(step_id.clone()));
    set("SLURM_STEPID", Some(step_id));
    set("SLURM_PROCID", Some(key.task_id.to_string()));
    set("SLURM_LOCALID", Some(launch.local_id.to_string()));
    set("SLURM_NODEID", Some(launch.node_index.to_string()));
    set("SLURM_NTASKS", Some(ntasks.clone()));
    set("SLURM_NPROCS", Some(ntasks.clone()));
    set("SLURM_STEP_NUM_TASKS", Some(ntasks));
    set("SLURM_STEP_NODELIST", Some(nodelist));
    set(
        "SLURM_STEP_NUM_NODES",
        Some(launch.step_nodes.len().to_string()),
    );
    set(
        "SLURM_STEP_TASKS_PER_NODE",
        Some(launch.tasks_on_node.to_string()),
    );
    set("SLURM_STEP_GPUS", step.physical_list());
    set("SLURM_JOB_GPUS", job.physical_list());
    set("SLURM_GPUS_ON_NODE", Some(job.gpus.to_string()));
    set(
        "SLURM_SHARDS_ON_NODE",
        (job.shards > 0).then(|| job.shards.to_string()),
    );
    set("CUDA_VISIBLE_DEVICES", visible.clone());
    set("GPU_DEVICE_ORDINAL", visible);
    set(
        "SLURM_CPUS_PER_TASK",
        launch.cpus_per_task.map(|c| c.to_string()),
    );
    set("SLURMD_NODENAME", Some(settings.node_name.clone()));
    set("SLURM_TASK_PID", None);
    set("BERTH_API", Some(settings.api_url.clone()));
    set("BERTH_URL", Some(settings.api_url.clone()));
    set(
        berth_core::signal::SIGNAL_REASON_VARIABLE,
        Some(
            crate::launch::signal_reason_file(settings, key.job_id, key.run)
                .display()
                .to_string(),
        ),
    );
    if let Some(bin) = bin_dir {
        let path = env.get("PATH").cloned().unwrap_or_default();
        let bin = bin.display().to_string();
        let path = if path.is_empty() {
            bin
        } else {
            format!("{bin}:{path}")
        };
        env.insert("PATH".to_string(), path);
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> LaunchSettings {
        LaunchSettings {
            node_name: "node-2".to_string(),
            api_url: "http://127.0.0.1:9".to_string(),
            state_dir: std::env::temp_dir().join("berth-task-test"),
            kill_wait: Duration::from_secs(1),
            token: Some("node-secret".to_string()),
            client_exe: None,
            checkpoint_root: std::env::temp_dir().join("berth-task-test/checkpoints"),
            run_as_user: false,
            allow_root_jobs: false,
            cgroups: None,
            cpus: Default::default(),
            gpu_minors: Vec::new(),
            devices: Vec::new(),
            lease: None,
        }
    }

    fn launch(task_id: u32, local_id: u32, gpus: Vec<u32>) -> StepTaskLaunch {
        StepTaskLaunch {
            key: StepTaskKey {
                job_id: 7,
                run: 0,
                step_id: 1,
                task_id,
            },
            command: vec!["true".into()],
            work_dir: None,
            environment: [
                ("SLURM_PROCID".to_string(), "0".to_string()),
                ("SLURMD_NODENAME".to_string(), "node-1".to_string()),
                ("CUDA_VISIBLE_DEVICES".to_string(), "0,1,2,3".to_string()),
                ("MASTER_ADDR".to_string(), "node-1".to_string()),
                ("SLURM_TASK_PID".to_string(), "4242".to_string()),
            ]
            .into(),
            local_id,
            node_index: 1,
            gpus,
            step_gpus: vec![4, 5],
            job_gpus: vec![4, 5, 6, 7],
            ntasks: 4,
            tasks_on_node: 2,
            step_nodes: vec!["node-1".into(), "node-2".into()],
            cpus_per_task: Some(8),
            warning_signal: None,
            warning_at: None,
            user: "alice".into(),
            memory_limit_mib: None,
            cpu_limit: None,
            job_cpu_ids: Vec::new(),
            job_threads_per_core: None,
            pty: false,
            incarnation: None,
        }
    }

    #[test]
    fn each_task_sees_its_own_ranks_and_gpus() {
        let inherited = [
            ("BERTH_NODE_TOKEN".to_string(), "x".to_string()),
            ("PATH".to_string(), "/usr/bin".to_string()),
        ];
        let bin = PathBuf::from("/state/jobs/7.0/bin");
        let env = task_environment(&settings(), &launch(3, 1, vec![5]), Some(&bin), inherited);
        assert_eq!(env["SLURM_PROCID"], "3");
        assert_eq!(env["SLURM_LOCALID"], "1");
        assert_eq!(env["SLURM_NODEID"], "1");
        assert_eq!(env["SLURM_STEP_ID"], "1");
        assert_eq!(env["SLURM_NTASKS"], "4");
        assert_eq!(env["SLURM_STEP_NODELIST"], "node-[1-2]");
        assert_eq!(env["CUDA_VISIBLE_DEVICES"], "5");
        assert_eq!(env["SLURM_STEP_GPUS"], "4,5");
        assert_eq!(env["SLURM_JOB_GPUS"], "4,5,6,7");
        assert_eq!(env["SLURMD_NODENAME"], "node-2");
        assert_eq!(env["SLURM_CPUS_PER_TASK"], "8");
        assert_eq!(env["MASTER_ADDR"], "node-1");
        assert_eq!(env["PATH"], "/state/jobs/7.0/bin:/usr/bin");
        assert!(!env.contains_key("SLURM_TASK_PID"));
        assert!(!env.contains_key("BERTH_NODE_TOKEN"));
        let env = task_environment(&settings(), &launch(0, 0, vec![]), None, []);
        assert!(!env.contains_key("CUDA_VISIBLE_DEVICES"));
    }

    #[test]
    fn tasks_name_mig_instances_and_shard_gpus() {
        use crate::gpu::GpuBackend;
        let devices = |spec: &str| -> Vec<berth_core::wire::GpuInfo> {
            crate::gpu::SimulatedBackend::parse(spec, "node-2")
                .unwrap()
                .inventory()
        };
        // 4 GPUs as 2 shards each: the job holds shards 4-7 (GPUs 2, 3), the step 4, 5
        // (GPU 2), this task shard 5.
        let mut settings = settings();
        settings.devices = devices("4xH100:shards=2");
        let mut task = launch(0, 0, vec![5]);
        task.step_gpus = vec![4, 5];
        task.job_gpus = vec![4, 5, 6, 7];
        let env = task_environment(&settings, &task, None, []);
        assert_eq!(env["CUDA_VISIBLE_DEVICES"], "2");
        assert_eq!(env["GPU_DEVICE_ORDINAL"], "2");
        assert_eq!(env["SLURM_STEP_GPUS"], "2");
        assert_eq!(env["SLURM_JOB_GPUS"], "2,3");
        assert_eq!(env["SLURM_SHARDS_ON_NODE"], "4");
        assert_eq!(env["SLURM_GPUS_ON_NODE"], "0");

        // 4 GPUs as 2 MIG instances each: the job holds instances 4-7 (GPUs 2, 3).
        settings.devices = devices("4xA100:mig=3g.40gb*2");
        let env = task_environment(&settings, &task, None, []);
        assert_eq!(env["CUDA_VISIBLE_DEVICES"], settings.devices[5].uuid);
        assert_eq!(env["SLURM_STEP_GPUS"], "2");
        assert_eq!(env["SLURM_JOB_GPUS"], "2,3");
        assert_eq!(env["SLURM_GPUS_ON_NODE"], "4");
        assert!(!env.contains_key("SLURM_SHARDS_ON_NODE"));
    }

    #[tokio::test]
    async fn a_task_reports_its_exit_code() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut job = launch(0, 0, vec![]);
        job.command = vec!["sh".into(), "-c".into(), "exit 7".into()];
        let _handle = launch_task(Arc::new(settings()), None, tx, job);
        let started = rx.recv().await.unwrap();
        assert_eq!(started.kind, ReportKind::Started);
        let exited = rx.recv().await.unwrap();
        assert_eq!(exited.kind, ReportKind::Exited);
        assert_eq!(exited.exit_code, Some(7));
    }

    #[tokio::test]
    async fn a_cancelled_task_is_stopped() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut job = launch(1, 0, vec![]);
        job.command = vec!["sleep".into(), "300".into()];
        let handle = launch_task(Arc::new(settings()), None, tx, job);
        assert_eq!(rx.recv().await.unwrap().kind, ReportKind::Started);
        handle.cancel();
        let exited = rx.recv().await.unwrap();
        assert_eq!(exited.kind, ReportKind::Exited);
        assert_eq!(exited.signal, Some(15));
    }
}
