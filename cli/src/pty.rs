//! `srun --pty`: task 0 of the step runs in a pseudo-terminal on its node, and this
//! terminal becomes it while the step runs (Slurm's `srun --pty bash`).
//!
//! srun puts its own terminal in raw mode (every key, Ctrl-C and Ctrl-Z included, goes to
//! the remote terminal, whose line discipline echoes and signals there), sends what is
//! typed and the window's size (at the start and on every `SIGWINCH`) to
//! `POST /v1/jobs/{id}/steps/{step}/input`, and prints task 0's output as it arrives (as
//! it is: the terminal's own control sequences; other tasks' output is dropped, as Slurm
//! sends it to /dev/null). The terminal is restored when the step ends; srun exits with
//! the task's exit code.

use crate::client::Client;
use base64::Engine as _;
use berth_core::step::{Step, StepInput, StepOutput, StepState};
use nix::sys::termios::{cfmakeraw, tcgetattr, tcsetattr, SetArg, Termios};
use std::io::{IsTerminal, Read, Write};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// The output poll while output is flowing…
const BUSY_POLL: Duration = Duration::from_millis(15);
/// … and once nothing came for [`IDLE_AFTER`].
const IDLE_POLL: Duration = Duration::from_millis(100);
const IDLE_AFTER: Duration = Duration::from_secs(2);
/// How often the step's state is read (its end).
const STATE_POLL: Duration = Duration::from_millis(500);
/// The most bytes sent in one input request.
const INPUT_BATCH: usize = 32 * 1024;

/// Whether srun's stdin is a terminal: `--pty` needs one (else Slurm's srun disregards
/// the option, and so does this one).
pub fn stdin_is_terminal() -> bool {
    std::io::stdin().is_terminal()
}

/// This terminal in raw mode while the value lives; its settings as they were after.
struct RawMode {
    saved: Termios,
}

impl RawMode {
    fn enter() -> anyhow::Result<RawMode> {
        let stdin = std::io::stdin();
        let saved = tcgetattr(&stdin)
            .map_err(|e| anyhow::anyhow!("srun: error: reading the terminal's settings: {e}"))?;
        let mut raw = saved.clone();
        cfmakeraw(&mut raw);
        tcsetattr(&stdin, SetArg::TCSANOW, &raw)
            .map_err(|e| anyhow::anyhow!("srun: error: setting the terminal to raw mode: {e}"))?;
        Ok(RawMode { saved })
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        let _ = tcsetattr(std::io::stdin(), SetArg::TCSAFLUSH, &self.saved);
    }
}

/// This terminal's size: (rows, columns).
fn window_size() -> Option<(u16, u16)> {
    rustix::termios::tcgetwinsize(std::io::stdin())
        .ok()
        .filter(|w| w.ws_row > 0 && w.ws_col > 0)
        .map(|w| (w.ws_row, w.ws_col))
}

/// Sends keystrokes (batched while they arrive faster than the api answers) and window
/// sizes, in order, until the task's terminal takes no more (409) or srun ends.
async fn send_input(client: Client, path: String, mut keys: mpsc::UnboundedReceiver<Vec<u8>>) {
    use tokio::signal::unix::{signal, SignalKind};
    let Ok(mut resized) = signal(SignalKind::window_change()) else {
        return;
    };
    let url = format!("{path}/input");
    let post = |input: StepInput| {
        let client = client.clone();
        let url = url.clone();
        async move {
            let body = serde_json::to_value(&input).unwrap_or_default();
            client
                .call_empty(reqwest::Method::POST, &url, Some(&body))
                .await
        }
    };
    let size = |size: Option<(u16, u16)>| StepInput {
        data: None,
        rows: size.map(|s| s.0),
        cols: size.map(|s| s.1),
    };
    if let Some(first) = window_size() {
        let _ = post(size(Some(first))).await;
    }
    loop {
        let input = tokio::select! {
            key = keys.recv() => {
                let Some(mut data) = key else { return };
                while data.len() < INPUT_BATCH {
                    match keys.try_recv() {
                        Ok(more) => data.extend(more),
                        Err(_) => break,
                    }
                }
                StepInput {
                    data: Some(base64::engine::general_purpose::STANDARD.encode(&data)),
                    ..StepInput::default()
                }
            }
            Some(()) = resized.recv() => match window_size() {
                Some(now) => size(Some(now)),
                None => continue,
            },
        };
        if let Err(err) = post(input).await {
            if err.status() == Some(409) {
                // The task has ended: the terminal is gone.
                return;
            }
        }
    }
}

/// Runs the created `--pty` step `step` of job `job_id` on this terminal until it ends;
/// returns srun's exit code (the task's).
///
/// # Errors
/// The terminal cannot be put in raw mode, or the api cannot be reached for the step's
/// output.
pub async fn attach(client: &Client, job_id: i64, step: &Step) -> anyhow::Result<i32> {
    let path = format!("/v1/jobs/{job_id}/steps/{}", step.step_id);
    let raw = RawMode::enter()?;
    let (keys_tx, keys) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut buf = [0u8; 4096];
        loop {
            match stdin.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if keys_tx.send(buf[..n].to_vec()).is_err() {
                        return;
                    }
                }
            }
        }
    });
    let sender = tokio::spawn(send_input(client.clone(), path.clone(), keys));
    let result = relay_output(client, &path).await;
    sender.abort();
    drop(raw);
    let ended = result?;
    Ok(match ended.state {
        StepState::Completed => 0,
        _ => ended.exit_code.filter(|code| *code != 0).unwrap_or(1),
    })
}

/// Prints task 0's output until the step has ended and all of it is printed; returns the
/// ended step.
async fn relay_output(client: &Client, path: &str) -> anyhow::Result<Step> {
    let mut after = -1;
    let mut last_output = Instant::now();
    let mut state_read: Option<Instant> = None;
    let mut ended: Option<Step> = None;
    let mut failures = 0;
    loop {
        let page: Result<StepOutput, _> = client
            .get_output_json(&format!("{path}/output?after={after}"))
            .await;
        let page = match page {
            Ok(page) => {
                failures = 0;
                page
            }
            Err(err) => {
                failures += 1;
                if failures > 50 {
                    anyhow::bail!("srun: lost the api: {err}");
                }
                tokio::time::sleep(IDLE_POLL).await;
                continue;
            }
        };
        if !page.chunks.is_empty() {
            let mut out = std::io::stdout().lock();
            for chunk in &page.chunks {
                if chunk.task_id == 0 {
                    let _ = out.write_all(chunk.data.as_bytes());
                }
                after = chunk.seq;
            }
            let _ = out.flush();
            last_output = Instant::now();
            continue;
        }
        // Every task uploads all its output before its end is recorded: once the step
        // has ended, one more empty page means everything is printed.
        if let Some(step) = ended {
            return Ok(step);
        }
        if state_read.is_none_or(|at| at.elapsed() >= STATE_POLL) {
            state_read = Some(Instant::now());
            if let Ok(step) = client.get_json::<Step>(path).await {
                if step.state != StepState::Running {
                    ended = Some(step);
                    continue;
                }
            }
        }
        let poll = if last_output.elapsed() < IDLE_AFTER {
            BUSY_POLL
        } else {
            IDLE_POLL
        };
        tokio::time::sleep(poll).await;
    }
}
