//! Starting and supervising one task of a job step (`srun` inside an allocation).
//!
//! [`launch_task`] takes a [`StepTaskLaunch`] from a sync answer and spawns a supervisor
//! that runs the step's command as the leader of its own process group, in the step's
//! working directory (else the job's scratch directory), with `srun`'s environment
//! overlaid by the task's Slurm variables ([`task_environment`]); pipes its stdout and
//! stderr to the api in chunks (`POST /v1/jobs/{id}/steps/{step}/output`), from where
//! `srun` prints them; and reports `Started`, then `Exited` once all its output is
//! uploaded (or `LaunchFailed`). A cancellation (the step is being stopped, or its job
//! ended) sends SIGTERM to the group, SIGKILL after the kill wait; whatever is left of
//! the group when the task's process exits is killed.

use crate::launch::{
    job_bin_dir, write_signal_reason, LaunchSettings, StopReason, SECRET_VARIABLES,
};
use crate::output::{utf8_complete_len, OutputUploader, CHUNK_BYTES};
use berth_core::hostlist;
use berth_core::step::{StepOutputUpload, StepTaskKey, StepTaskLaunch, StepTaskReport};
use berth_core::wire::{OutputStream, ReportKind};
use chrono::Utc;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;
use tokio::sync::{mpsc, Notify};
use tokio::task::JoinHandle;
use tracing::Instrument;

/// How long the output of a task that exited may still be read (a background process
/// outside its group could hold the pipe open forever).
const OUTPUT_DRAIN: Duration = Duration::from_secs(5);

/// A launched step task: its key and the means to stop it.
#[derive(Debug)]
pub struct TaskHandle {
    key: StepTaskKey,
    gpus: Vec<u32>,
    cancel: Arc<Notify>,
    task: JoinHandle<()>,
}

impl TaskHandle {
    /// Which task.
    pub fn key(&self) -> StepTaskKey {
        self.key
    }

    /// The GPUs it sees.
    pub fn gpus(&self) -> &[u32] {
        &self.gpus
    }

    /// Asks the supervisor to stop the task (SIGTERM, SIGKILL after the kill wait).
    pub fn cancel(&self) {
        self.cancel.notify_one();
    }

    /// Stops supervising (the worker is shutting down); the process keeps running.
    pub fn abandon(self) {
        self.task.abort();
    }
}

/// Launches a step task on a new supervisor (inside a Tokio runtime). Its reports arrive
/// on `reports`; with an `uploader`, its output goes to the api (else it is discarded).
pub fn launch_task(
    settings: Arc<LaunchSettings>,
    uploader: Option<OutputUploader>,
    reports: mpsc::UnboundedSender<StepTaskReport>,
    launch: StepTaskLaunch,
) -> TaskHandle {
    let cancel = Arc::new(Notify::new());
    let key = launch.key;
    let span = tracing::info_span!(
        "task",
        job.id = key.job_id,
        job.run = key.run,
        step.id = key.step_id,
        task = key.task_id
    );
    let gpus = launch.gpus.clone();
    let supervisor = TaskSupervisor {
        settings,
        uploader,
        reports,
        cancel: cancel.clone(),
    };
    let task = tokio::spawn(supervisor.supervise(launch).instrument(span));
    TaskHandle {
        key,
        gpus,
        cancel,
        task,
    }
}

struct TaskSupervisor {
    settings: Arc<LaunchSettings>,
    uploader: Option<OutputUploader>,
    reports: mpsc::UnboundedSender<StepTaskReport>,
    cancel: Arc<Notify>,
}

fn report(key: StepTaskKey, kind: ReportKind) -> StepTaskReport {
    StepTaskReport {
        key,
        kind,
        at: Utc::now(),
        exit_code: None,
        signal: None,
        message: None,
    }
}

impl TaskSupervisor {
    fn send(&self, report: StepTaskReport) {
        if self.reports.send(report).is_err() {
            tracing::debug!("report dropped: the worker is shutting down");
        }
    }

    /// SIGTERM to the task's group, SIGKILL after the kill wait.
    async fn stop(
        &self,
        child: &mut tokio::process::Child,
        group: Pid,
    ) -> std::io::Result<std::process::ExitStatus> {
        tracing::info!("stopping step task");
        signal_group(group, Signal::SIGTERM);
        tokio::select! {
            status = child.wait() => status,
            _ = tokio::time::sleep(self.settings.kill_wait) => {
                signal_group(group, Signal::SIGKILL);
                child.wait().await
            }
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
        let work_dir = match &launch.work_dir {
            Some(dir) if PathBuf::from(dir).is_dir() => PathBuf::from(dir),
            Some(dir) => {
                return self.launch_failed(
                    key,
                    format!("the working directory {dir} does not exist on this node"),
                )
            }
            None => {
                let dir = self
                    .settings
                    .state_dir
                    .join("jobs")
                    .join(format!("{}.{}", key.job_id, key.run))
                    .join("work");
                if let Err(err) = std::fs::create_dir_all(&dir) {
                    return self.launch_failed(key, format!("creating {}: {err}", dir.display()));
                }
                dir
            }
        };
        let bin_dir = match job_bin_dir(&self.settings, key.job_id, key.run) {
            Ok(dir) => dir,
            Err(err) => return self.launch_failed(key, err.chain()),
        };
        let mut environment = task_environment(
            &self.settings,
            &launch,
            bin_dir.as_deref(),
            std::env::vars(),
        );
        match crate::launch::checkpoint_dir(&self.settings, key.job_id) {
            Ok(dir) => {
                environment.insert(
                    "BERTH_CHECKPOINT_DIR".to_string(),
                    dir.display().to_string(),
                );
            }
            Err(err) => return self.launch_failed(key, err.chain()),
        }
        let user = match crate::launch::job_user(&self.settings, &launch.user) {
            Ok(user) => user,
            Err(err) => return self.launch_failed(key, err.chain()),
        };
        // With a user to become, a shepherd switches to it (supplementary groups too) and
        // records the exit status; its pid file names the task's process group.
        let task_dir = crate::launch::run_dir(&self.settings, key.job_id, key.run)
            .join("tasks")
            .join(format!("{}.{}", key.step_id, key.task_id));
        // The job's cgroups on this node (made here when the batch shell is elsewhere):
        // its limits, and only the job's GPUs on this node may be opened.
        let limits = crate::cgroup::Limits {
            memory_mib: launch.memory_limit_mib,
            cpus: launch.cpu_limit,
        };
        let cgroup = crate::launch::job_cgroup(
            &self.settings,
            key.job_id,
            key.run,
            limits,
            &launch.job_gpus,
        );
        let shepherd = match &self.settings.client_exe {
            Some(exe) if user.is_some() || cgroup.is_some() => {
                if let Err(err) = std::fs::create_dir_all(&task_dir) {
                    return self
                        .launch_failed(key, format!("creating {}: {err}", task_dir.display()));
                }
                if let Err(err) = crate::launch::give_to(&task_dir, user.as_ref()) {
                    return self.launch_failed(key, err.chain());
                }
                let files = crate::launch::RunFiles::new(&task_dir);
                let _ = std::fs::remove_file(&files.status);
                let _ = std::fs::remove_file(&files.pid);
                Some((exe.clone(), user.as_ref().map(|u| u.name.clone()), files))
            }
            _ => None,
        };
        // The task learns its own pid (SLURM_TASK_PID), then becomes the command.
        let mut command = match &shepherd {
            Some((exe, name, files)) => {
                let mut command = Command::new(exe);
                command
                    .arg("shepherd")
                    .arg("--status")
                    .arg(&files.status)
                    .arg("--pid-file")
                    .arg(&files.pid);
                if let Some(name) = name {
                    command.arg("--user").arg(name);
                }
                for dir in cgroup.iter().flat_map(|group| &group.dirs) {
                    command.arg("--cgroup").arg(dir);
                }
                command.arg("--").arg("/bin/sh");
                command
            }
            None => {
                let mut command = Command::new("/bin/sh");
                command.process_group(0);
                if let Some(user) = &user {
                    command.uid(user.uid.as_raw()).gid(user.gid.as_raw());
                }
                command
            }
        };
        command
            .arg("-c")
            .arg("SLURM_TASK_PID=$$; export SLURM_TASK_PID; exec \"$@\"")
            .arg("berth-task")
            .args(&launch.command)
            .current_dir(&work_dir)
            .env_clear()
            .envs(&environment)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(false);
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(err) => {
                return self.launch_failed(
                    key,
                    format!("starting {:?}: {err}", launch.command.join(" ")),
                )
            }
        };
        let pid = match &shepherd {
            Some((_, _, files)) => {
                let mut pid = None;
                for _ in 0..200 {
                    if let Some(found) = crate::launch::read_pid(&files.pid) {
                        pid = Some(found);
                        break;
                    }
                    if matches!(child.try_wait(), Ok(Some(_))) {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                pid
            }
            None => child.id().map(|pid| pid as i32),
        };
        let Some(pid) = pid else {
            return self.launch_failed(key, "the task did not start".into());
        };
        let status_file = shepherd.as_ref().map(|(_, _, files)| files.status.clone());
        let group = Pid::from_raw(pid);
        // A record lets a restarted worker stop the task and report it lost.
        let record = TaskRecord {
            key,
            pid,
            pid_start: crate::launch::process_start_ticks(pid),
        };
        let record_dir = task_record_dir(&self.settings, key);
        let record_file = record_dir.join("task.json");
        if std::fs::create_dir_all(&record_dir).is_ok() {
            let _ = std::fs::remove_file(record_dir.join("reported"));
            let _ = std::fs::write(
                &record_file,
                serde_json::to_string(&record).unwrap_or_default(),
            );
        }
        tracing::info!(pid, gpus = ?launch.gpus, "step task started");
        self.send(report(key, ReportKind::Started));

        let mut pumps = Vec::new();
        if let Some(stdout) = child.stdout.take() {
            pumps.push(tokio::spawn(
                pump(self.uploader.clone(), key, OutputStream::Stdout, stdout).in_current_span(),
            ));
        }
        if let Some(stderr) = child.stderr.take() {
            pumps.push(tokio::spawn(
                pump(self.uploader.clone(), key, OutputStream::Stderr, stderr).in_current_span(),
            ));
        }

        let warning = launch.warning_signal.zip(launch.warning_at);
        let mut warned = false;
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
                status = child.wait() => break status,
                _ = self.cancel.notified() => break self.stop(&mut child, group).await,
                _ = at_warning => {
                    warned = true;
                    if let Some((signal, _)) = warning {
                        tracing::info!(signal, "sending the time-limit warning to the task");
                        write_signal_reason(&self.settings, key.job_id, key.run, StopReason::TimeLimit);
                        if let Ok(signal) = Signal::try_from(signal) {
                            let _ = killpg(group, signal);
                        }
                    }
                }
            }
        };
        signal_group(group, Signal::SIGKILL);
        for pump in pumps {
            if tokio::time::timeout(OUTPUT_DRAIN, pump).await.is_err() {
                tracing::warn!("task output still open after its exit; leaving the rest");
            }
        }
        let mut exited = report(key, ReportKind::Exited);
        match (status, status_file) {
            (Ok(_), Some(file)) => {
                // The shepherd's own status says nothing; its file says how the task ended.
                match std::fs::read_to_string(&file)
                    .ok()
                    .and_then(|t| serde_json::from_str::<crate::launch::ShepherdStatus>(&t).ok())
                {
                    Some(recorded) => {
                        exited.exit_code = recorded.exit_code;
                        exited.signal = recorded.signal;
                    }
                    None => exited.message = Some("the task's exit status was not recorded".into()),
                }
            }
            (Ok(status), None) => {
                exited.exit_code = status.code();
                exited.signal = status.signal();
            }
            (Err(err), _) => exited.message = Some(format!("could not wait for the task: {err}")),
        }
        tracing::info!(
            exit_code = exited.exit_code,
            signal = exited.signal,
            "step task exited"
        );
        if let Some(group) = cgroup {
            // The last one out removes it (it stays while the batch shell or other tasks
            // are inside).
            tokio::spawn(async move { group.remove_when_empty().await });
        }
        let _ = std::fs::write(record_dir.join("reported"), "");
        self.send(exited);
    }
}

/// What a restarted worker needs to stop a step task it lost track of.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TaskRecord {
    /// Which task.
    pub key: StepTaskKey,
    /// Its process group.
    pub pid: i32,
    /// Its start time in clock ticks since boot, against pid reuse.
    pub pid_start: Option<u64>,
}

fn task_record_dir(settings: &LaunchSettings, key: StepTaskKey) -> PathBuf {
    crate::launch::run_dir(settings, key.job_id, key.run)
        .join("tasks")
        .join(format!("{}.{}", key.step_id, key.task_id))
}

/// Step tasks a previous worker process left unreported: they cannot be followed again
/// (their output went through pipes to that process), so each one still running is
/// killed and all are reported ended, with a message saying why. Returns the reports.
pub fn lost_tasks(settings: &LaunchSettings) -> Vec<StepTaskReport> {
    let Ok(runs) = std::fs::read_dir(settings.state_dir.join("jobs")) else {
        return Vec::new();
    };
    let mut reports = Vec::new();
    for run in runs.flatten() {
        let Ok(tasks) = std::fs::read_dir(run.path().join("tasks")) else {
            continue;
        };
        for task in tasks.flatten() {
            let dir = task.path();
            if dir.join("reported").exists() {
                continue;
            }
            let Some(record) = std::fs::read_to_string(dir.join("task.json"))
                .ok()
                .and_then(|text| serde_json::from_str::<TaskRecord>(&text).ok())
            else {
                continue;
            };
            if crate::launch::process_start_ticks(record.pid) == record.pid_start
                && record.pid_start.is_some()
            {
                signal_group(Pid::from_raw(record.pid), Signal::SIGKILL);
            }
            let mut lost = report(record.key, ReportKind::Exited);
            lost.signal = Some(9);
            lost.message =
                Some("the worker restarted while the task ran; it was stopped".to_string());
            let _ = std::fs::write(dir.join("reported"), "");
            reports.push(lost);
        }
    }
    reports
}

/// Reads one of a task's pipes to its end, uploading what arrives in chunks that do not
/// split UTF-8 characters.
async fn pump(
    uploader: Option<OutputUploader>,
    key: StepTaskKey,
    stream: OutputStream,
    mut pipe: impl AsyncRead + Unpin,
) {
    let mut buf: Vec<u8> = Vec::with_capacity(CHUNK_BYTES);
    let mut read = vec![0u8; CHUNK_BYTES];
    let mut offset = 0u64;
    loop {
        let n = pipe.read(&mut read).await.unwrap_or(0);
        let eof = n == 0;
        buf.extend_from_slice(&read[..n]);
        let len = if eof {
            buf.len()
        } else {
            utf8_complete_len(&buf)
        };
        if len > 0 {
            let data: Vec<u8> = buf.drain(..len).collect();
            if let Some(uploader) = &uploader {
                let chunk = StepOutputUpload {
                    run: key.run,
                    task_id: key.task_id,
                    stream,
                    offset,
                    data: String::from_utf8_lossy(&data).into_owned(),
                };
                if let Err(err) = uploader.upload_step(key.job_id, key.step_id, &chunk).await {
                    tracing::error!(error = %err.chain(), "the api refused task output; skipping it");
                }
            }
            offset += len as u64;
        }
        if eof {
            return;
        }
    }
}

fn signal_group(group: Pid, signal: Signal) {
    match killpg(group, signal) {
        Ok(()) | Err(nix::errno::Errno::ESRCH) => {}
        Err(err) => tracing::warn!(error = %err, ?signal, "could not signal the task"),
    }
}

fn join(values: &[u32]) -> String {
    values
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// A step task's environment: `inherited` (the worker's) without its credentials,
/// overlaid with `srun`'s environment, then the task's variables: `SLURM_STEP_ID`,
/// `SLURM_PROCID`, `SLURM_LOCALID`, `SLURM_NODEID`, `SLURM_NTASKS`, `SLURM_STEP_NODELIST`,
/// `SLURM_STEP_GPUS` and `SLURM_JOB_GPUS` (physical indices), `CUDA_VISIBLE_DEVICES`
/// (the task's GPUs: its own with `--gpus-per-task`, else every GPU of the job on this
/// node), `SLURMD_NODENAME`; `PATH` starts with the job's client commands on this node.
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
    let gpus = (!launch.gpus.is_empty()).then(|| join(&launch.gpus));
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
    set(
        "SLURM_STEP_GPUS",
        (!launch.step_gpus.is_empty()).then(|| join(&launch.step_gpus)),
    );
    set(
        "SLURM_JOB_GPUS",
        (!launch.job_gpus.is_empty()).then(|| join(&launch.job_gpus)),
    );
    set(
        "SLURM_GPUS_ON_NODE",
        Some(launch.job_gpus.len().to_string()),
    );
    set("CUDA_VISIBLE_DEVICES", gpus.clone());
    set("GPU_DEVICE_ORDINAL", gpus);
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
            gpu_minors: Vec::new(),
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
