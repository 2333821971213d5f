//! The shepherd (`berth shepherd`, like Slurm's slurmstepd): the small root process that
//! starts one batch shell or step task, outlives a worker that dies, records how the job
//! ended, and stops it when the node's lease runs out ([`crate::lease`]).
//!
//! Nothing that runs as root takes anything user-controlled from its command line or its
//! environment. The worker writes everything a run needs (the job's argv, environment,
//! working directory, output files and their open mode, umask, user) into a
//! [`ShepherdSpec`], `spec.json` (mode 0600) in the run's root-only directory, and starts
//! `berth shepherd --spec FILE` with a fixed environment (`PATH` = [`FIXED_PATH`], nothing
//! else). The shepherd starts `berth shepherd --exec --spec FILE` (the same fixed
//! environment) in the job's cgroups as the leader of a new process group. That stage,
//! still root, reads the spec, opens the run's private output files (step tasks': root's
//! files in the root-only run directory), then becomes the job's user (supplementary
//! groups, primary group, uid), sets the job's umask, makes and enters the working
//! directory, opens the output files the job names *as that user* (so the kernel decides
//! what it may write: a file of someone else's, a directory it may not enter, are refused;
//! `/dev/null` is fine) and only then executes the job's program with the job's
//! environment in place of its own (`env_clear` + the job's variables). The loader and
//! interpreter variables of the job (`LD_PRELOAD`, `GCONV_PATH`, `BASH_ENV`, `PYTHON*` …)
//! therefore reach no process running as root: harmless by construction, no deny-list.
//!
//! Before executing, the stage tells the shepherd on its stdout (a pipe, replaced by the
//! job's output file at the exec) what it opened, or why it could not start (one JSON
//! line, [`Handshake`]); the shepherd records it (`outputs.json`, or the reason in the
//! status file), then the job's pid (`batch.pid` / `pid`), waits, kills what is left of
//! the job's process group when its leader ends, and writes the status file.

use crate::lease::{now_ms, Lease};
use berth_core::spec::OpenMode;
use berth_core::wire::{LaunchFault, OutputStream};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The only environment of the shepherd's root processes: `PATH` with the system's
/// directories, nothing else.
pub const FIXED_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// What a shepherd runs (`spec.json`, written by the worker, mode 0600, root's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShepherdSpec {
    /// The user the job runs as (uid, primary and supplementary groups); `None`: the
    /// worker's own user (no switch).
    pub user: Option<String>,
    /// The job's umask (permission bits, `0o077`).
    pub umask: u32,
    /// The job's working directory (absolute).
    pub work_dir: PathBuf,
    /// Make the working directory (as the job's user, mode 0700) when missing: the run's
    /// scratch directory.
    pub make_work_dir: bool,
    /// The program and its arguments (the program by absolute path).
    pub argv: Vec<String>,
    /// The job's whole environment.
    pub environment: BTreeMap<String, String>,
    /// The output files: stdout first, then stderr when it goes elsewhere (one entry:
    /// both streams in one file).
    pub outputs: Vec<OutputSpec>,
    /// The cgroup directories the job starts in.
    pub cgroups: Vec<PathBuf>,
    /// The real CPUs the job is pinned to (its CPU affinity, set by the exec stage) where
    /// no cpuset confines it; empty: left as is.
    #[serde(default)]
    pub cpu_affinity: Vec<u32>,
    /// Where the shepherd writes the job's pid (its process group).
    pub pid_file: PathBuf,
    /// Where the shepherd writes how the job ended ([`ShepherdStatus`]).
    pub status_file: PathBuf,
    /// Where the shepherd writes the opened outputs ([`OpenedOutput`]s).
    pub outputs_file: PathBuf,
    /// The node's lease file ([`crate::lease`]); `None`: never fenced.
    pub lease: Option<PathBuf>,
    /// The job user's directory holding its signal reason file, which a fence rewrites
    /// (`node_failure`) before its SIGTERM.
    #[serde(default)]
    pub reason_dir: Option<PathBuf>,
    /// `srun --pty`: the job runs in a pseudo-terminal fed from these files
    /// ([`crate::pty`]); its terminal's output goes to the first output file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pty: Option<crate::pty::PtyFiles>,
}

/// One output file of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputSpec {
    /// The stream (stdout; stderr when split).
    pub stream: OutputStream,
    /// The absolute path.
    pub path: PathBuf,
    /// `--open-mode`: truncate or append.
    pub open_mode: OpenMode,
    /// A file of the run's root-only directory (a step task's output), opened by root
    /// before the switch to the job's user, mode 0600, without following a link.
    pub private: bool,
}

/// An output file as opened for the run, and where the run's output starts in it (its
/// size when appended to, else 0).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpenedOutput {
    /// The stream.
    pub stream: OutputStream,
    /// The path.
    pub path: PathBuf,
    /// Where this run's output starts, bytes.
    pub start: u64,
}

/// What the exec stage tells the shepherd before it executes the job (one JSON line).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Handshake {
    /// Everything is in place; the job's program is executed next.
    Started {
        /// The opened outputs.
        outputs: Vec<OpenedOutput>,
    },
    /// The job could not be started: why (an output file its user may not write …).
    Failed {
        /// The reason, for the `LaunchFailed` report.
        message: String,
        /// Whose fault it was (absent: the node's).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fault: Option<LaunchFault>,
    },
}

/// How the shepherd saw the job end (the status file).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ShepherdStatus {
    /// The exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The signal, when one killed it.
    pub signal: Option<i32>,
    /// The shepherd stopped it because the node's lease ran out.
    #[serde(default)]
    pub fenced: bool,
    /// It never started: why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch_error: Option<String>,
    /// Whose fault it was that it never started (absent: the node's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch_fault: Option<LaunchFault>,
}

/// Reads a spec file.
///
/// # Errors
/// A message naming the file.
pub fn read_spec(path: &Path) -> Result<ShepherdSpec, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("reading {}: {e}", path.display()))
}

fn write_status(path: &Path, status: &ShepherdStatus) -> std::io::Result<()> {
    let text = serde_json::to_string(status).unwrap_or_default();
    crate::run_dir::write_private(path, text.as_bytes())
}

/// `berth shepherd --spec FILE`: starts the job described by the spec (through
/// `berth shepherd --exec`), records its outputs and pid, fences it when the node's lease
/// runs out, waits for it and writes how it ended. Returns the shepherd's own exit code.
pub fn shepherd_main(spec_path: &Path) -> i32 {
    let spec = match read_spec(spec_path) {
        Ok(spec) => spec,
        Err(message) => {
            eprintln!("berth shepherd: {message}");
            return 2;
        }
    };
    let failed = |message: String, fault: Option<LaunchFault>| {
        eprintln!("berth shepherd: {message}");
        let status = ShepherdStatus {
            launch_error: Some(message),
            launch_fault: fault,
            ..ShepherdStatus::default()
        };
        if let Err(err) = write_status(&spec.status_file, &status) {
            eprintln!(
                "berth shepherd: writing {}: {err}",
                spec.status_file.display()
            );
        }
    };
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(err) => {
            failed(format!("finding its own executable: {err}"), None);
            return 127;
        }
    };
    // With a terminal (`srun --pty`), the job's process starts on its slave side as the
    // leader of a session of its own whose controlling terminal it is; the master side
    // stays here.
    let terminal = match &spec.pty {
        Some(files) => match crate::pty::open(files, spec.user.as_deref()) {
            Ok(pair) => Some(pair),
            Err(message) => {
                failed(message, None);
                return 0;
            }
        },
        None => None,
    };
    let mut command = std::process::Command::new(exe);
    command
        .arg("shepherd")
        .arg("--exec")
        .arg("--spec")
        .arg(spec_path)
        .env_clear()
        .env("PATH", FIXED_PATH)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let master = match terminal {
        // The exec stage makes its own session (not a process group first: a group's
        // leader cannot).
        Some((master, slave)) => {
            command.stdin(Stdio::from(slave));
            Some(master)
        }
        None => {
            command.stdin(Stdio::null()).process_group(0);
            None
        }
    };
    let spawned = command.spawn();
    // The slave side is the job's alone from here (the relay sees the end of its output
    // once no process of the job holds it).
    drop(command);
    let mut child = match spawned {
        Ok(child) => child,
        Err(err) => {
            failed(format!("starting the job's process: {err}"), None);
            return 127;
        }
    };
    let handshake = match child.stdout.take() {
        Some(stdout) => {
            let mut line = String::new();
            match std::io::BufReader::new(stdout).read_line(&mut line) {
                Ok(n) if n > 0 => {
                    serde_json::from_str::<Handshake>(&line).unwrap_or_else(|e| Handshake::Failed {
                        message: format!("the job's process said something unexpected: {e}"),
                        fault: None,
                    })
                }
                _ => Handshake::Failed {
                    message: "the job's process ended before it started".to_string(),
                    fault: None,
                },
            }
        }
        None => Handshake::Failed {
            message: "no channel to the job's process".to_string(),
            fault: None,
        },
    };
    let outputs = match handshake {
        Handshake::Started { outputs } => outputs,
        Handshake::Failed { message, fault } => {
            let ended = child.wait();
            // Killed before it said anything: by the job's own memory limit (the exec
            // stage runs in the job's cgroups), or by the job's user once it had switched
            // to them. Neither is the node's fault, and neither may count against it.
            let (message, fault) = match ended.ok().and_then(|status| status.signal()) {
                Some(signal) if fault.is_none() => {
                    let oom = spec.cgroups.iter().any(|dir| {
                        ["memory.events", "memory.oom_control"].iter().any(|file| {
                            std::fs::read_to_string(dir.join(file))
                                .is_ok_and(|text| crate::cgroup::oom_kills(&text) > 0)
                        })
                    });
                    let why = if oom {
                        "it ran out of its memory limit (--mem) before it started".to_string()
                    } else {
                        format!("it was killed by signal {signal} before it started")
                    };
                    (format!("{message}: {why}"), Some(LaunchFault::Job))
                }
                _ => (message, fault),
            };
            failed(message, fault);
            return 0;
        }
    };
    let text = serde_json::to_string(&outputs).unwrap_or_default();
    if let Err(err) = crate::run_dir::write_private(&spec.outputs_file, text.as_bytes()) {
        eprintln!(
            "berth shepherd: writing {}: {err}",
            spec.outputs_file.display()
        );
    }
    if let Err(err) =
        crate::run_dir::write_private(&spec.pid_file, child.id().to_string().as_bytes())
    {
        eprintln!("berth shepherd: writing {}: {err}", spec.pid_file.display());
    }
    let relay = match (master, &spec.pty, spec.outputs.first()) {
        (Some(master), Some(files), Some(stdout)) => {
            match crate::pty::Relay::start(master, files, &stdout.path) {
                Ok(relay) => Some(relay),
                Err(message) => {
                    eprintln!("berth shepherd: the terminal's output: {message}");
                    None
                }
            }
        }
        _ => None,
    };
    let group = Pid::from_raw(child.id() as i32);
    let done = Arc::new(AtomicBool::new(false));
    let fenced = Arc::new(AtomicBool::new(false));
    if let Some(lease) = spec.lease.clone() {
        fence(
            lease,
            spec.reason_dir.clone(),
            group,
            done.clone(),
            fenced.clone(),
        );
    }
    let status = child.wait();
    done.store(true, Ordering::SeqCst);
    // Nothing of the job outlives its leader.
    let _ = killpg(group, Signal::SIGKILL);
    if let Some(relay) = relay {
        relay.finish(Duration::from_secs(2));
    }
    let status = match status {
        Ok(status) => ShepherdStatus {
            exit_code: status.code(),
            signal: status.signal(),
            fenced: fenced.load(Ordering::SeqCst),
            ..ShepherdStatus::default()
        },
        Err(err) => {
            eprintln!("berth shepherd: waiting: {err}");
            ShepherdStatus {
                fenced: fenced.load(Ordering::SeqCst),
                ..ShepherdStatus::default()
            }
        }
    };
    if let Err(err) = write_status(&spec.status_file, &status) {
        eprintln!(
            "berth shepherd: writing {}: {err}",
            spec.status_file.display()
        );
        return 1;
    }
    0
}

/// Watches the node's lease on a thread: once its SIGTERM time passes without a renewal,
/// the job's process group gets SIGTERM (`fenced` is set), and SIGKILL at the lease's
/// end, unless the job ended (`done`) first.
fn fence(
    lease_path: PathBuf,
    reason_dir: Option<PathBuf>,
    group: Pid,
    done: Arc<AtomicBool>,
    fenced: Arc<AtomicBool>,
) {
    let nap = |ms: u64| std::thread::sleep(Duration::from_millis(ms.clamp(10, 1000)));
    std::thread::spawn(move || loop {
        if done.load(Ordering::SeqCst) {
            return;
        }
        let now = now_ms();
        let Some(lease) = Lease::read(&lease_path) else {
            nap(1000);
            continue;
        };
        if now < lease.term_at_ms {
            nap(lease.term_at_ms - now);
            continue;
        }
        fenced.store(true, Ordering::SeqCst);
        eprintln!(
            "berth shepherd: the node's lease ran out (no contact with the api); stopping the job"
        );
        if let Some(dir) = &reason_dir {
            let _ = crate::run_dir::replace_file_in(
                dir,
                crate::launch::SIGNAL_REASON,
                b"node_failure\n",
                0o600,
            );
        }
        if !done.load(Ordering::SeqCst) {
            let _ = killpg(group, Signal::SIGTERM);
        }
        loop {
            if done.load(Ordering::SeqCst) {
                return;
            }
            let now = now_ms();
            if now >= lease.kill_at_ms {
                let _ = killpg(group, Signal::SIGKILL);
                return;
            }
            nap((lease.kill_at_ms - now).min(100));
        }
    });
}

/// `berth shepherd --exec --spec FILE`: becomes the job (see the module's documentation)
/// and executes its program in this process. Returns only on failure, with an exit code.
pub fn exec_main(spec_path: &Path) -> i32 {
    let tell = |handshake: &Handshake| {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(
            out,
            "{}",
            serde_json::to_string(handshake).unwrap_or_default()
        );
        let _ = out.flush();
    };
    let spec = match read_spec(spec_path) {
        Ok(spec) => spec,
        Err(message) => {
            tell(&Handshake::Failed {
                message,
                fault: None,
            });
            return 2;
        }
    };
    if spec.pty.is_some() {
        if let Err(err) = crate::pty::take_terminal() {
            tell(&Handshake::Failed {
                message: format!("taking its pseudo-terminal: {err}"),
                fault: None,
            });
            return 2;
        }
    }
    match become_job(&spec) {
        Ok((mut command, outputs)) => {
            tell(&Handshake::Started { outputs });
            let err = command.exec();
            // The job's stderr is its output file now: say it there.
            eprintln!("berth: executing {}: {err}", spec.argv[0]);
            127
        }
        Err((message, fault)) => {
            tell(&Handshake::Failed {
                message,
                fault: Some(fault),
            });
            126
        }
    }
}

/// Everything between root and the job's program: private outputs, the switch to the
/// user, the umask, the working directory, the job's own outputs, the command. A failure
/// says whose fault it was: the node's until the switch to the user (its spec, its private
/// files), the user's account for the switch itself, the job's after it (its `--chdir`,
/// its `--output`), except in the scratch directory the worker made for it (the node's).
/// Sets this process's CPU affinity to `cpus` (inherited by what it starts).
fn pin_cpus(cpus: &[u32]) -> nix::Result<()> {
    let mut set = nix::sched::CpuSet::new();
    for &cpu in cpus {
        set.set(cpu as usize)?;
    }
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set)
}

fn become_job(
    spec: &ShepherdSpec,
) -> Result<(std::process::Command, Vec<OpenedOutput>), (String, LaunchFault)> {
    let node = |message: String| (message, LaunchFault::Node);
    if spec.argv.is_empty() {
        return Err(node("no command".to_string()));
    }
    crate::cgroup::join(&spec.cgroups).map_err(|e| node(format!("joining its cgroup: {e}")))?;
    if !spec.cpu_affinity.is_empty() {
        pin_cpus(&spec.cpu_affinity).map_err(|e| node(format!("pinning it to its CPUs: {e}")))?;
    }
    let mut opened: Vec<Option<(File, u64)>> = Vec::new();
    for output in &spec.outputs {
        opened.push(if output.private {
            Some(open_output(output, "root").map_err(node)?)
        } else {
            None
        });
    }
    let who = match &spec.user {
        Some(user) => {
            become_user(user).map_err(|message| (message, LaunchFault::User))?;
            user.clone()
        }
        None => "the worker's user".to_string(),
    };
    let job = |message: String| {
        if spec.make_work_dir {
            (message, LaunchFault::Node)
        } else {
            (message, LaunchFault::Job)
        }
    };
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(spec.umask & 0o777));
    if spec.make_work_dir {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&spec.work_dir)
            .map_err(|e| {
                node(format!(
                    "making the working directory {}: {e}",
                    spec.work_dir.display()
                ))
            })?;
    }
    std::env::set_current_dir(&spec.work_dir).map_err(|e| {
        job(format!(
            "working directory {}: {who} cannot enter it: {e}",
            spec.work_dir.display()
        ))
    })?;
    for (output, slot) in spec.outputs.iter().zip(opened.iter_mut()) {
        if slot.is_none() {
            // The job names its output files, even in its scratch directory.
            *slot = Some(open_output(output, &who).map_err(|message| (message, LaunchFault::Job))?);
        }
    }
    let (command, outputs) = job_command(spec, opened).map_err(node)?;
    Ok((command, outputs))
}

/// The job's command: its argv, environment (nothing else) and output files.
fn job_command(
    spec: &ShepherdSpec,
    opened: Vec<Option<(File, u64)>>,
) -> Result<(std::process::Command, Vec<OpenedOutput>), String> {
    let mut files = Vec::new();
    let mut outputs = Vec::new();
    for (output, slot) in spec.outputs.iter().zip(opened) {
        let (file, start) = slot.ok_or("an output file was not opened")?;
        files.push(file);
        outputs.push(OpenedOutput {
            stream: output.stream,
            path: output.path.clone(),
            start,
        });
    }
    let mut files = files.into_iter();
    let stdout = files.next().ok_or("no output file")?;
    let stderr = match files.next() {
        Some(file) => file,
        None => stdout
            .try_clone()
            .map_err(|e| format!("sharing the output file: {e}"))?,
    };
    let mut command = std::process::Command::new(&spec.argv[0]);
    command
        .args(&spec.argv[1..])
        .env_clear()
        .envs(&spec.environment);
    if spec.pty.is_some() {
        // The terminal the shepherd gave this process as its stdin is the job's stdin,
        // stdout and stderr; the output files stay closed (the shepherd's relay writes the
        // terminal's output to the first).
        drop((stdout, stderr));
        let terminal = || {
            std::io::stdin()
                .as_fd()
                .try_clone_to_owned()
                .map(Stdio::from)
                .map_err(|e| format!("sharing the terminal: {e}"))
        };
        command
            .stdin(terminal()?)
            .stdout(terminal()?)
            .stderr(terminal()?);
    } else {
        command.stdin(Stdio::null()).stdout(stdout).stderr(stderr);
    }
    Ok((command, outputs))
}

/// Opens one output file: a private one as root (mode 0600, no link followed, truncated),
/// else as the process is now (the job's user), with its umask, making missing parent
/// directories, per `--open-mode`. A FIFO without a reader is refused rather than waited
/// for. Returns the file and where this run's output starts.
fn open_output(output: &OutputSpec, who: &str) -> Result<(File, u64), String> {
    let path = &output.path;
    let refused = |e: std::io::Error| {
        format!(
            "could not open the output file {}: {who} may not write it: {e}",
            path.display()
        )
    };
    let mut options = OpenOptions::new();
    if output.private {
        options
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NOCTTY);
    } else {
        if let Some(parent) = path.parent() {
            if !parent.as_os_str().is_empty() && !parent.is_dir() {
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o777)
                    .create(parent)
                    .map_err(refused)?;
            }
        }
        options
            .create(true)
            .mode(0o666)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
        match output.open_mode {
            OpenMode::Truncate => options.write(true).truncate(true),
            OpenMode::Append => options.append(true),
        };
    }
    let file = options.open(path).map_err(refused)?;
    // Writes block as usual from here on.
    use nix::fcntl::{fcntl, FcntlArg, OFlag};
    let flags = fcntl(&file, FcntlArg::F_GETFL).map_err(|e| refused(e.into()))?;
    let flags = OFlag::from_bits_truncate(flags) - OFlag::O_NONBLOCK;
    fcntl(&file, FcntlArg::F_SETFL(flags)).map_err(|e| refused(e.into()))?;
    let meta = file.metadata().map_err(refused)?;
    let start = match output.open_mode {
        OpenMode::Append if meta.is_file() && !output.private => meta.size(),
        _ => 0,
    };
    Ok((file, start))
}

/// Switches this process to `user`: its supplementary groups, primary group and uid (in
/// that order; the uid last, as root is needed for the others).
fn become_user(user: &str) -> Result<(), String> {
    let account = nix::unistd::User::from_name(user)
        .ok()
        .flatten()
        .ok_or_else(|| format!("user {user} does not exist"))?;
    let name = std::ffi::CString::new(user).map_err(|_| format!("bad user name {user:?}"))?;
    nix::unistd::initgroups(&name, account.gid)
        .map_err(|e| format!("setting the groups of {user}: {e}"))?;
    nix::unistd::setgid(account.gid).map_err(|e| format!("setgid {}: {e}", account.gid))?;
    nix::unistd::setuid(account.uid).map_err(|e| format!("setuid {}: {e}", account.uid))?;
    Ok(())
}

/// The job's command for a worker without the `berth` executable (unit tests): the
/// worker's own process opens the outputs and makes the working directory; no user
/// switch, no umask, no fencing.
///
/// # Errors
/// A message when the spec asks for a user switch, or an output or the working directory
/// cannot be had.
pub(crate) fn direct_command(
    spec: &ShepherdSpec,
) -> Result<(std::process::Command, Vec<OpenedOutput>), (String, LaunchFault)> {
    let node = |message: String| (message, LaunchFault::Node);
    if spec.user.is_some() {
        return Err(node(
            "running jobs as their users needs the berth executable (its shepherd)".to_string(),
        ));
    }
    if spec.pty.is_some() {
        return Err(node(
            "a pseudo-terminal (srun --pty) needs the berth executable (its shepherd)".to_string(),
        ));
    }
    if spec.argv.is_empty() {
        return Err(node("no command".to_string()));
    }
    if spec.make_work_dir {
        std::fs::create_dir_all(&spec.work_dir)
            .map_err(|e| node(format!("making {}: {e}", spec.work_dir.display())))?;
    }
    if !spec.work_dir.is_dir() {
        return Err((
            format!(
                "working directory {} does not exist or is not a directory",
                spec.work_dir.display()
            ),
            LaunchFault::Job,
        ));
    }
    let mut opened = Vec::new();
    for output in &spec.outputs {
        opened.push(Some(
            open_output(output, "the worker's user").map_err(|m| (m, LaunchFault::Job))?,
        ));
    }
    let (mut command, outputs) = job_command(spec, opened).map_err(node)?;
    command.current_dir(&spec.work_dir).process_group(0);
    Ok((command, outputs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handshake_is_one_json_line() {
        let started = Handshake::Started {
            outputs: vec![OpenedOutput {
                stream: OutputStream::Stdout,
                path: "/dev/null".into(),
                start: 0,
            }],
        };
        let text = serde_json::to_string(&started).unwrap();
        assert!(!text.contains('\n'));
        assert_eq!(serde_json::from_str::<Handshake>(&text).unwrap(), started);
        let status: ShepherdStatus =
            serde_json::from_str(r#"{"exit_code":0,"signal":null}"#).unwrap();
        assert!(!status.fenced && status.launch_error.is_none());
    }

    #[test]
    fn a_character_device_is_a_valid_output() {
        let output = OutputSpec {
            stream: OutputStream::Stdout,
            path: "/dev/null".into(),
            open_mode: OpenMode::Truncate,
            private: false,
        };
        let (_, start) = open_output(&output, "me").unwrap();
        assert_eq!(start, 0);
    }
}
