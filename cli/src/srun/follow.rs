//! Following a running step: printing its tasks' output as it arrives, forwarding the
//! user's signals and cancelling it.

#[allow(unused_imports)]
use super::*;

/// Writes chunks to stdout/stderr, labelled by task when asked.
pub(crate) struct Printer {
    pub(crate) label: bool,
    /// Only this task's stdout (sattach `--output-filter`).
    pub(crate) stdout_task: Option<u32>,
    /// Only this task's stderr (sattach `--error-filter`).
    pub(crate) stderr_task: Option<u32>,
    pub(crate) width: usize,
    /// Incomplete last lines per (task, stream), when labelling.
    pub(crate) partial: HashMap<(u32, OutputStream), String>,
    pub(crate) printed: HashSet<i64>,
}

impl Printer {
    pub(crate) fn print(&mut self, chunk: &StepOutputChunk) {
        if !self.printed.insert(chunk.seq) {
            return;
        }
        let only = match chunk.stream {
            OutputStream::Stdout => self.stdout_task,
            OutputStream::Stderr => self.stderr_task,
        };
        if only.is_some_and(|task| task != chunk.task_id) {
            return;
        }
        let text = if self.label {
            let key = (chunk.task_id, chunk.stream);
            let mut pending = self.partial.remove(&key).unwrap_or_default();
            pending.push_str(&chunk.data);
            let mut out = String::new();
            let mut rest = pending.as_str();
            while let Some(end) = rest.find('\n') {
                out.push_str(&format!(
                    "{:>width$}: {}\n",
                    chunk.task_id,
                    &rest[..end],
                    width = self.width
                ));
                rest = &rest[end + 1..];
            }
            if !rest.is_empty() {
                self.partial.insert(key, rest.to_string());
            }
            out
        } else {
            chunk.data.clone()
        };
        write_stream(chunk.stream, &text);
    }

    pub(crate) fn flush(&mut self) {
        for ((task, stream), rest) in std::mem::take(&mut self.partial) {
            write_stream(
                stream,
                &format!("{task:>width$}: {rest}\n", width = self.width),
            );
        }
    }
}

fn write_stream(stream: OutputStream, text: &str) {
    if text.is_empty() {
        return;
    }
    match stream {
        OutputStream::Stdout => {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
        }
        OutputStream::Stderr => {
            let mut err = std::io::stderr().lock();
            let _ = err.write_all(text.as_bytes());
            let _ = err.flush();
        }
    }
}

/// Reads output chunks after `after` until none is left, printing each not printed yet.
/// Returns the highest sequence number seen.
async fn drain(
    client: &Client,
    path: &str,
    mut after: i64,
    printer: &mut Printer,
) -> anyhow::Result<i64> {
    loop {
        let page: StepOutput = client
            .get_output_json(&format!("{path}/output?after={after}"))
            .await
            .context("reading the step's output")?;
        let Some(last) = page.chunks.last().map(|c| c.seq) else {
            return Ok(after);
        };
        for chunk in &page.chunks {
            printer.print(chunk);
        }
        after = last;
    }
}

/// How a step is followed.
#[derive(Debug, Clone, Copy)]
pub enum Follow {
    /// srun's own step: `--wait` and the time limit (seconds) stop it, so does Ctrl-C.
    Own {
        /// `-t/--time`, seconds.
        limit: Option<u64>,
    },
    /// sattach: Ctrl-C detaches and leaves the step running; only these tasks' streams
    /// when given.
    Attached {
        /// `--output-filter`.
        stdout_task: Option<u32>,
        /// `--error-filter`.
        stderr_task: Option<u32>,
    },
}

/// Follows a created step: prints its output, stops it when `--wait` or `--time` runs out
/// or on Ctrl-C (srun's own step), returns the exit code srun ends with (sattach: the
/// step's; 0 when detached).
pub async fn follow_step(
    client: &Client,
    args: &SrunArgs,
    job_id: i64,
    step: &Step,
    follow: Follow,
) -> anyhow::Result<i32> {
    let (limit, own, stdout_task, stderr_task) = match follow {
        Follow::Own { limit } => (limit, true, None, None),
        Follow::Attached {
            stdout_task,
            stderr_task,
        } => (None, false, stdout_task, stderr_task),
    };
    let path = format!("/v1/jobs/{job_id}/steps/{}", step.step_id);
    let mut printer = Printer {
        label: args.label,
        stdout_task,
        stderr_task,
        width: (step.tasks.len().max(1) - 1).to_string().len(),
        partial: HashMap::new(),
        printed: HashSet::new(),
    };
    let started = Instant::now();
    let mut first_end: Option<Instant> = None;
    let mut stopping = false;
    let mut after = -1;
    let mut failures = 0;
    // The tasks whose end srun has spoken of (`srun: error: node-1: task 0: …`).
    let mut told: HashSet<u32> = HashSet::new();
    let mut ended_lines: Vec<String> = Vec::new();
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    // As Slurm's srun, it passes on to its tasks the USR1 and USR2 it gets (a batch
    // shell's `kill -USR1 %1`, `scancel -f`), which would otherwise end it.
    let mut user_signals = UserSignals::new();
    let ended = loop {
        let state: Result<Step, _> = client.get_json(&path).await;
        match state {
            Ok(step) if step.state != StepState::Running => break step,
            Ok(step) => {
                failures = 0;
                if first_end.is_none() && step.tasks.iter().any(|t| t.ended_at.is_some()) {
                    first_end = Some(Instant::now());
                }
                if own {
                    ended_lines = task_exit_lines(&step.tasks, &mut told, stopping);
                }
                let wait = args.wait.filter(|&w| w > 0 && own);
                let stop = match (limit, wait, first_end) {
                    (Some(limit), _, _) if started.elapsed().as_secs() >= limit => Some(format!(
                        "srun: error: *** STEP {job_id}.{} CANCELLED AT {} DUE TO TIME LIMIT ***",
                        step.step_id,
                        chrono::Local::now().format("%Y-%m-%dT%H:%M:%S")
                    )),
                    (_, Some(wait), Some(first)) if first.elapsed().as_secs() >= wait => {
                        // Slurm's srun: the alarm, each task's state, the termination.
                        let mut lines = vec![format!("srun: First task exited {wait}s ago")];
                        lines.extend(task_state_lines(job_id, step.step_id, &step.tasks));
                        lines.push(format!(
                            "srun: Terminating StepId={job_id}.{}",
                            step.step_id
                        ));
                        Some(lines.join("\n"))
                    }
                    _ => None,
                };
                if let (Some(message), false) = (stop, stopping) {
                    eprintln!("{message}");
                    stopping = true;
                    cancel_step(client, &path).await;
                }
            }
            Err(err) => {
                failures += 1;
                if failures > 50 {
                    bail!("srun: lost the api: {err}");
                }
            }
        }
        if let Ok(seen) = drain(client, &path, after, &mut printer).await {
            after = seen;
        }
        // After the output: a task uploads all of its output before its end is reported.
        for line in std::mem::take(&mut ended_lines) {
            eprintln!("{line}");
        }
        tokio::select! {
            _ = tokio::time::sleep(POLL) => {}
            Some(signal) = user_signals.next() => {
                if own && !stopping {
                    forward_signal(client, job_id, step.step_id, signal).await;
                }
            }
            _ = &mut ctrl_c, if !stopping => {
                if !own {
                    printer.flush();
                    eprintln!("sattach: detached from StepId={job_id}.{}", step.step_id);
                    return Ok(0);
                }
                eprintln!("srun: interrupt: cancelling StepId={job_id}.{}", step.step_id);
                stopping = true;
                cancel_step(client, &path).await;
            }
        }
    };
    // Every task uploaded its output before reporting its end: read all of it once more
    // (chunks that committed out of order are printed now).
    drain(client, &path, -1, &mut printer).await?;
    printer.flush();
    if own {
        for line in task_exit_lines(&ended.tasks, &mut told, stopping) {
            eprintln!("{line}");
        }
    }
    for task in &ended.tasks {
        if let Some(message) = &task.message {
            eprintln!("srun: task {} on {}: {message}", task.task_id, task.node);
        }
    }
    if let Some(reason) = &ended.kill_reason {
        if ended.state != StepState::Completed && ended.kill_on_bad_exit {
            eprintln!("srun: step {job_id}.{} stopped: {reason}", ended.step_id);
        }
    }
    Ok(match ended.state {
        StepState::Completed => 0,
        _ => ended.exit_code.filter(|code| *code != 0).unwrap_or(1),
    })
}

/// The USR1 and USR2 srun receives, caught (not ending it).
struct UserSignals {
    usr1: Option<tokio::signal::unix::Signal>,
    usr2: Option<tokio::signal::unix::Signal>,
}

impl UserSignals {
    pub(crate) fn new() -> Self {
        use tokio::signal::unix::{signal, SignalKind};
        UserSignals {
            usr1: signal(SignalKind::user_defined1()).ok(),
            usr2: signal(SignalKind::user_defined2()).ok(),
        }
    }

    /// The next one's number (10 or 12); `None` when neither can come any more.
    pub(crate) async fn next(&mut self) -> Option<i32> {
        async fn recv(signal: &mut Option<tokio::signal::unix::Signal>) -> Option<()> {
            match signal {
                Some(signal) => signal.recv().await,
                None => None,
            }
        }
        tokio::select! {
            Some(()) = recv(&mut self.usr1) => Some(10),
            Some(()) = recv(&mut self.usr2) => Some(12),
            else => None,
        }
    }
}

/// Passes signal `signal` on to the tasks of step `step` of job `job_id`
/// (`POST /v1/jobs/{id}/signal`); a refusal is printed, not fatal.
async fn forward_signal(client: &Client, job_id: i64, step: u32, signal: i32) {
    let request = berth_core::signal::JobSignal {
        signal: berth_core::signal::SignalSpec::Number(i64::from(signal)),
        batch: false,
        full: false,
        step: Some(step),
        array_task: None,
    };
    let sent: Result<berth_core::signal::JobSignalQueued, _> = client
        .post_json(&format!("/v1/jobs/{job_id}/signal"), &request)
        .await;
    if let Err(e) = sent {
        eprintln!("srun: error: forwarding signal {signal} to StepId={job_id}.{step}: {e}");
    }
}

/// Asks the api to stop a step (its tasks get SIGTERM, then SIGKILL).
async fn cancel_step(client: &Client, path: &str) {
    let stopped: Result<Step, _> = client
        .post_json(&format!("{path}/cancel"), &serde_json::json!({}))
        .await;
    if let Err(e) = stopped {
        eprintln!("srun: error: cancelling the step: {e}");
    }
}
