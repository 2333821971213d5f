//! `--signal=[{R|B}:]SIG[@SECONDS]`: the warning signal a job gets before its time limit.
//! Without `B:` it goes to every task of every step; with `B:` to the batch shell only.
//! SECONDS defaults to 60, as in Slurm.

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
    let name = name.trim();
    let signal = match name.parse::<i32>() {
        Ok(n) if (1..=64).contains(&n) => n,
        Ok(_) => return None,
        Err(_) => {
            let upper = name.to_ascii_uppercase();
            let bare = upper.strip_prefix("SIG").unwrap_or(&upper);
            let index = crate::sbatch::SIGNALS.iter().position(|s| *s == bare)?;
            index as i32 + 1
        }
    };
    Some(WarningSignal {
        signal,
        seconds,
        batch_only,
    })
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
}
