//! Slurm's reasons for ended jobs, as slurmctld sets them when a job ends
//! (`job_state_reason.c`'s names; `_job_complete` and `_job_fail` in `job_mgr.c`): what
//! squeue's `%r`/`%R`, scontrol's `Reason=`, sacct's `Reason`, the REST job views and
//! slurmrestd's `state_reason` show once a job has ended, so that tools checking a
//! reason against Slurm's list find one of its names.
//!
//! Berth stores a job's reason as text (a pending reason such as `Priority`, or for an
//! ended job what ended it: `launch failed on node-1: …`, `preempted by job 7`,
//! `NodeDown`, `InactiveLimit`); the Slurm name is worked out from the end state, the
//! exit status and that text, and the text, when it says more than the name, is Slurm's
//! *state description* (`state_desc`, which squeue's `%R` and scontrol's `Reason=` print
//! instead of the name).

use crate::state::JobState;

/// The prefix of the stored reason of a run whose launch failed
/// (`launch failed on NODE: WHY`).
pub const LAUNCH_FAILED_PREFIX: &str = "launch failed";

/// Slurm's reason for a job whose allocation's client (salloc, srun) stopped answering
/// for longer than `InactiveLimit`; stored as it is.
pub const INACTIVE_LIMIT: &str = "InactiveLimit";

/// Slurm's reason for a job that ended in `state` with `exit_code`/`exit_signal`
/// (Berth's stored reason `stored`); `None` for a job that has not ended (its stored
/// reason stands: `Priority`, `Resources`, …).
///
/// | end | reason |
/// |---|---|
/// | COMPLETED, PREEMPTED | `None` |
/// | CANCELLED | the reason it was cancelled for when that is one of Slurm's names (`DependencyNeverSatisfied`, `InactiveLimit`: Slurm keeps the reason), else `None` |
/// | FAILED, launch failed | `JobLaunchFailure` |
/// | FAILED, exit code ≠ 0 | `NonZeroExitCode` |
/// | FAILED, killed by a signal | `RaisedSignal` |
/// | FAILED otherwise (a hung run Berth gave up on) | `SystemFailure` |
/// | TIMEOUT | `TimeLimit` (`InactiveLimit` as above) |
/// | NODE_FAIL | `NodeDown` |
/// | OUT_OF_MEMORY | `OutOfMemory` |
/// | BOOT_FAIL | `JobLaunchFailure` |
/// | DEADLINE | `DeadLine` |
pub fn ended_job_reason(
    state: JobState,
    exit_code: Option<i32>,
    exit_signal: Option<i32>,
    stored: Option<&str>,
) -> Option<&str> {
    let inactive = stored == Some(INACTIVE_LIMIT);
    Some(match state {
        JobState::Pending | JobState::Running | JobState::Suspended | JobState::Completing => {
            return None
        }
        JobState::Completed | JobState::Preempted => "None",
        JobState::Timeout if inactive => INACTIVE_LIMIT,
        JobState::Cancelled => stored.filter(|s| is_reason_name(s)).unwrap_or("None"),
        JobState::Timeout => "TimeLimit",
        JobState::Failed if stored.is_some_and(|s| s.starts_with(LAUNCH_FAILED_PREFIX)) => {
            "JobLaunchFailure"
        }
        JobState::Failed if exit_code.is_some_and(|c| c != 0) => "NonZeroExitCode",
        JobState::Failed if exit_signal.is_some() => "RaisedSignal",
        JobState::Failed => "SystemFailure",
        JobState::NodeFail => "NodeDown",
        JobState::OutOfMemory => "OutOfMemory",
        JobState::BootFail => "JobLaunchFailure",
        JobState::Deadline => "DeadLine",
    })
}

/// Whether `text` reads as one of Slurm's reason names (a word of ASCII letters and
/// digits, such as `DependencyNeverSatisfied`) rather than Berth's description of what
/// happened (`preempted by job 7`).
fn is_reason_name(text: &str) -> bool {
    text.starts_with(|c: char| c.is_ascii_uppercase())
        && text.chars().all(|c| c.is_ascii_alphanumeric())
}

/// A job's reason as every view shows it: Slurm's name for an ended job
/// ([`ended_job_reason`]), else the stored one (taken as it is: a listing of pending
/// jobs copies no reason).
pub fn shown_reason(
    state: JobState,
    exit_code: Option<i32>,
    exit_signal: Option<i32>,
    stored: Option<String>,
) -> Option<String> {
    let ended =
        ended_job_reason(state, exit_code, exit_signal, stored.as_deref()).map(str::to_string);
    ended.or(stored)
}

/// Slurm's state description of an ended job: the stored reason when it says more than
/// the reason's name (`launch failed on node-1: no such user`, `preempted by job 7`);
/// `None` otherwise, and for a job that has not ended.
pub fn state_description(
    state: JobState,
    exit_code: Option<i32>,
    exit_signal: Option<i32>,
    stored: Option<&str>,
) -> Option<String> {
    let name = ended_job_reason(state, exit_code, exit_signal, stored)?;
    stored
        .filter(|s| !s.is_empty() && *s != name)
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (end state, exit code, signal, stored reason, Slurm's reason).
    type Case<'a> = (JobState, Option<i32>, Option<i32>, Option<&'a str>, &'a str);

    #[test]
    fn each_end_has_slurms_reason() {
        use JobState::*;
        let cases: &[Case] = &[
            (Completed, Some(0), None, None, "None"),
            (Failed, Some(3), None, None, "NonZeroExitCode"),
            (Failed, None, Some(9), None, "RaisedSignal"),
            (
                Failed,
                None,
                None,
                Some("launch failed on n1: x"),
                "JobLaunchFailure",
            ),
            (Failed, None, None, Some("the run hung"), "SystemFailure"),
            (Timeout, None, Some(15), None, "TimeLimit"),
            (
                Timeout,
                None,
                Some(15),
                Some("InactiveLimit"),
                "InactiveLimit",
            ),
            (Cancelled, None, None, None, "None"),
            (
                Cancelled,
                None,
                None,
                Some("DependencyNeverSatisfied"),
                "DependencyNeverSatisfied",
            ),
            (Cancelled, None, None, Some("preempted by job 7"), "None"),
            (
                Cancelled,
                None,
                None,
                Some("InactiveLimit"),
                "InactiveLimit",
            ),
            (NodeFail, None, None, Some("NodeDown"), "NodeDown"),
            (OutOfMemory, Some(0), None, None, "OutOfMemory"),
            (Preempted, None, None, Some("preempted by job 7"), "None"),
            (BootFail, None, None, None, "JobLaunchFailure"),
            (Deadline, None, None, None, "DeadLine"),
        ];
        for (state, code, signal, stored, want) in cases {
            assert_eq!(
                shown_reason(*state, *code, *signal, stored.map(str::to_string)).as_deref(),
                Some(*want),
                "{state:?} {code:?} {signal:?} {stored:?}"
            );
        }
        // A job that has not ended keeps its stored reason (or none).
        assert_eq!(
            shown_reason(Pending, None, None, Some("Priority".into())).as_deref(),
            Some("Priority")
        );
        assert_eq!(shown_reason(Running, None, None, None), None);
    }

    #[test]
    fn the_stored_text_is_the_description_when_it_says_more() {
        use JobState::*;
        let launch = Some("launch failed on n1: no such user");
        assert_eq!(
            state_description(Failed, None, None, launch).as_deref(),
            launch
        );
        assert_eq!(
            state_description(Preempted, None, None, Some("preempted by job 7")).as_deref(),
            Some("preempted by job 7")
        );
        assert_eq!(
            state_description(NodeFail, None, None, Some("NodeDown")),
            None
        );
        assert_eq!(state_description(Completed, Some(0), None, None), None);
        assert_eq!(
            state_description(Pending, None, None, Some("Priority")),
            None
        );
    }
}
