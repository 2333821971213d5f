//! A run's files in its directory (`RunFiles`, the `RunRecord` a restarted worker adopts
//! the run from), starting the shepherd and waiting for it (`Start`, `Waiter`), and
//! ending what is left of a run.

#[allow(unused_imports)]
use super::*;

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
pub(crate) fn same_process_alive(pid: i32, start: Option<u64>) -> bool {
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
pub(crate) fn write_record(files: &RunFiles, record: &RunRecord) {
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
