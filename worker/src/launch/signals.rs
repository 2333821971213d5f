//! Signals to a run's processes, and the signal reason file that tells the job why it
//! was signalled.

#[allow(unused_imports)]
use super::*;

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
