//! Signals for a job's processes.
//!
//! * `--signal=[{R|B}:]SIG[@SECONDS]`: the warning signal a job gets before its time
//!   limit. Without `B:` it goes to every task of every step; with `B:` to the batch shell
//!   only. SECONDS defaults to 60, as in Slurm.
//! * `scancel --signal=SIG [-b|-f] JOB[.STEP]`: a signal sent now to a running job's
//!   processes ([`JobSignal`], `POST /v1/jobs/{id}/signal`), handed to the job's nodes in
//!   their sync answer ([`SignalDelivery`]) and acknowledged by the workers once sent.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Seconds before the time limit when `--signal` gives none.
pub const DEFAULT_WARNING_SECONDS: u64 = 60;

/// What the batch shell's environment names as the file that says why a warning signal
/// came: `time_limit` before a time-limit warning and before the SIGTERM at the limit,
/// `preempted` before the SIGTERM of a QOS preemption, `cancelled` before that of any other
/// stop (one word and a newline).
pub const SIGNAL_REASON_VARIABLE: &str = "BERTH_SIGNAL_REASON_FILE";

/// A parsed `--signal`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct WarningSignal {
    /// The signal number (Linux numbering: `USR1` is 10).
    pub signal: i32,
    /// Seconds before the time limit.
    pub seconds: u64,
    /// `B:`: the batch shell only (else every task of every step).
    pub batch_only: bool,
}

/// Parses `--signal`'s value (`B:USR1@20`, `SIGTERM`, `10@120`); `None` when it is not
/// one (submission refuses those already).
pub fn parse_warning_signal(value: &str) -> Option<WarningSignal> {
    let (flags, rest) = match value.split_once(':') {
        Some((flags, rest)) => (flags, rest),
        None => ("", value),
    };
    let batch_only = flags.chars().any(|c| c.eq_ignore_ascii_case(&'b'));
    let (name, seconds) = match rest.split_once('@') {
        Some((name, seconds)) => (name, seconds.trim().parse().ok()?),
        None => (rest, DEFAULT_WARNING_SECONDS),
    };
    let signal = parse_signal(name)?;
    Some(WarningSignal {
        signal,
        seconds,
        batch_only,
    })
}

/// The highest signal number Linux delivers (`SIGRTMAX`).
pub const MAX_SIGNAL: i32 = 64;

/// The highest signal number workers send: Linux's standard signals, 1 (`HUP`) to 31
/// (`SYS`); the real-time ones above are refused by `POST /v1/jobs/{id}/signal`.
pub const MAX_SENT_SIGNAL: i32 = 31;

/// `SIGKILL`: the signal `scancel` sends when given none (a cancellation).
pub const SIGKILL: i32 = 9;

/// Parses a signal as Slurm's commands take one (`scancel --signal`, sbatch's
/// `--signal`): a name from Linux's numbering with or without `SIG`, in any case (`USR1`,
/// `SIGUSR1`, `usr1`), or a number 1 to [`MAX_SIGNAL`] (`10`). `None` for anything else.
pub fn parse_signal(text: &str) -> Option<i32> {
    let text = text.trim();
    match text.parse::<i32>() {
        Ok(n) if (1..=MAX_SIGNAL).contains(&n) => Some(n),
        Ok(_) => None,
        Err(_) => {
            let upper = text.to_ascii_uppercase();
            let bare = upper.strip_prefix("SIG").unwrap_or(&upper);
            let index = crate::sbatch::SIGNALS.iter().position(|s| *s == bare)?;
            Some(index as i32 + 1)
        }
    }
}

/// Signal `number`'s name without `SIG` (`USR1` for 10), for 1 to 31; `None` for the
/// real-time signals above and numbers that are not signals.
pub fn signal_name(number: i32) -> Option<&'static str> {
    usize::try_from(number)
        .ok()
        .and_then(|n| n.checked_sub(1))
        .and_then(|i| crate::sbatch::SIGNALS.get(i).copied())
}

/// A signal as the api takes one: a number (`10`) or a name (`"USR1"`, `"SIGUSR1"`,
/// `"10"`), read as Slurm's commands read one (Linux numbering).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum SignalSpec {
    /// A signal number (Linux numbering: `USR1` is 10).
    Number(i64),
    /// A signal name (`USR1`, `SIGUSR1`, any case) or number as text.
    Name(String),
}

impl SignalSpec {
    /// The signal number (1 to [`MAX_SIGNAL`]); `None` when it names no signal.
    pub fn number(&self) -> Option<i32> {
        match self {
            SignalSpec::Number(n) => i32::try_from(*n)
                .ok()
                .filter(|n| (1..=MAX_SIGNAL).contains(n)),
            SignalSpec::Name(name) => parse_signal(name),
        }
    }
}

/// Which of a running job's processes a signal goes to (Slurm's `scancel` flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SignalTarget {
    /// The tasks of every running step (each task's process group), not the batch shell:
    /// `scancel --signal` alone.
    Steps,
    /// The batch shell alone (its process, not its children nor the steps): `scancel -b`.
    Batch,
    /// The batch shell with everything it started (its process group) and the tasks of
    /// every running step: `scancel -f`.
    Full,
    /// The tasks of one step: `scancel --signal JOB.STEP`.
    Step,
}

impl SignalTarget {
    /// The stored word (`steps`, `batch`, `full`, `step`).
    pub fn as_str(self) -> &'static str {
        match self {
            SignalTarget::Steps => "steps",
            SignalTarget::Batch => "batch",
            SignalTarget::Full => "full",
            SignalTarget::Step => "step",
        }
    }

    /// Reads a stored word; `None` for any other.
    pub fn from_stored(word: &str) -> Option<Self> {
        Some(match word {
            "steps" => SignalTarget::Steps,
            "batch" => SignalTarget::Batch,
            "full" => SignalTarget::Full,
            "step" => SignalTarget::Step,
            _ => return None,
        })
    }

    /// Whether the batch shell gets the signal.
    pub fn reaches_batch(self) -> bool {
        matches!(self, SignalTarget::Batch | SignalTarget::Full)
    }
}

/// `POST /v1/jobs/{id}/signal`: a signal for a running job's processes (`scancel
/// --signal=SIG [-b|-f] JOB[.STEP]`). The job goes on running: a handler in it decides
/// what the signal means.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct JobSignal {
    /// The signal: a name (`USR1`, `SIGUSR1`) or a number, 1 to 31 (the real-time
    /// signals, 32 to 64, are refused: workers send the standard ones).
    pub signal: SignalSpec,
    /// The batch shell alone (`scancel -b`), not the steps.
    #[serde(default)]
    pub batch: bool,
    /// The batch shell, what it started, and every step (`scancel -f`); wins over `batch`.
    #[serde(default)]
    pub full: bool,
    /// One step's tasks (`scancel --signal JOB.STEP`); not with `batch` or `full`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
    /// With the id of a job array: only this task of it (`12_3`). Without, an array's id
    /// signals every running task of the array.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array_task: Option<u32>,
}

impl JobSignal {
    /// Which processes the signal goes to: `full` over `batch`, a step over the default
    /// (every step).
    pub fn target(&self) -> SignalTarget {
        match (self.full, self.batch, self.step) {
            (true, _, _) => SignalTarget::Full,
            (false, true, _) => SignalTarget::Batch,
            (false, false, Some(_)) => SignalTarget::Step,
            (false, false, None) => SignalTarget::Steps,
        }
    }
}

/// One job run a signal was queued for, and the nodes it goes to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SignalledRun {
    /// The job (an array task's own id).
    pub job_id: i64,
    /// The run (the job's restart count).
    pub run: u32,
    /// The nodes whose workers deliver it (those running the batch shell or the tasks
    /// aimed at); empty when none runs any (a step not started anywhere yet).
    pub nodes: Vec<String>,
}

/// The answer to `POST /v1/jobs/{id}/signal`: the signal is queued for the job's nodes,
/// whose workers send it within a sync (milliseconds when they are connected).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct JobSignalQueued {
    /// The signal number (Linux numbering: `USR1` is 10).
    pub signal: i32,
    /// Which processes get it.
    pub target: SignalTarget,
    /// The step, for [`SignalTarget::Step`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
    /// The runs signalled: one, or every running task of an array.
    pub jobs: Vec<SignalledRun>,
}

/// A signal a node must send now (node sync answer): to the processes of one job run
/// that its worker started, as `target` says. The worker acknowledges it by its `id` in
/// its next sync ([`crate::wire::SyncRequest::signals_delivered`]), so that it is sent
/// once; one for a run or step the node does not run any more is acknowledged unsent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SignalDelivery {
    /// The delivery's id (one per signal and node).
    pub id: i64,
    /// The job.
    pub job_id: i64,
    /// The run.
    pub run: u32,
    /// The signal number, 1 to 64.
    pub signal: i32,
    /// Which processes of the run get it.
    pub target: SignalTarget,
    /// The step, for [`SignalTarget::Step`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
    /// The job's incarnation ([`crate::wire::Incarnation`]): a run of another job that had
    /// the same id does not get it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = Uuid)]
    pub incarnation: Option<crate::wire::Incarnation>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_slurm_forms() {
        assert_eq!(
            parse_warning_signal("B:USR1@20"),
            Some(WarningSignal {
                signal: 10,
                seconds: 20,
                batch_only: true
            })
        );
        assert_eq!(
            parse_warning_signal("SIGTERM"),
            Some(WarningSignal {
                signal: 15,
                seconds: 60,
                batch_only: false
            })
        );
        assert_eq!(parse_warning_signal("R:12@5").unwrap().signal, 12);
        assert!(!parse_warning_signal("R:12@5").unwrap().batch_only);
        assert_eq!(parse_warning_signal("NOPE"), None);
    }

    #[test]
    fn signals_by_name_or_number() {
        assert_eq!(parse_signal("USR1"), Some(10));
        assert_eq!(parse_signal("sigusr2"), Some(12));
        assert_eq!(parse_signal("SIGKILL"), Some(SIGKILL));
        assert_eq!(parse_signal("64"), Some(64));
        assert_eq!(parse_signal("0"), None);
        assert_eq!(parse_signal("65"), None);
        assert_eq!(parse_signal("USR3"), None);
        assert_eq!(signal_name(10), Some("USR1"));
        assert_eq!(signal_name(34), None);
        assert_eq!(SignalSpec::Number(15).number(), Some(15));
        assert_eq!(SignalSpec::Number(99).number(), None);
        assert_eq!(SignalSpec::Name("SIGHUP".into()).number(), Some(1));
    }

    #[test]
    fn a_signal_request_names_its_target() {
        let req: JobSignal = serde_json::from_str(r#"{"signal":"USR1"}"#).unwrap();
        assert_eq!(req.target(), SignalTarget::Steps);
        let req: JobSignal = serde_json::from_str(r#"{"signal":10,"batch":true}"#).unwrap();
        assert_eq!(
            (req.target(), req.signal.number()),
            (SignalTarget::Batch, Some(10))
        );
        let req: JobSignal =
            serde_json::from_str(r#"{"signal":"TERM","batch":true,"full":true}"#).unwrap();
        assert_eq!(req.target(), SignalTarget::Full);
        let req: JobSignal = serde_json::from_str(r#"{"signal":"HUP","step":0}"#).unwrap();
        assert_eq!(req.target(), SignalTarget::Step);
        assert!(serde_json::from_str::<JobSignal>(r#"{"signal":"HUP","pid":1}"#).is_err());
        for t in [
            SignalTarget::Steps,
            SignalTarget::Batch,
            SignalTarget::Full,
            SignalTarget::Step,
        ] {
            assert_eq!(SignalTarget::from_stored(t.as_str()), Some(t));
        }
    }
}
