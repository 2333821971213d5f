//! `--output`/`--error` filename patterns, as `sbatch` documents them ("filename
//! pattern" in `man sbatch`): `%j` job id, `%x` job name, `%A_%a` array master and task,
//! and so on, each number optionally zero-padded (`%4j` → `0042`).

/// The values a filename pattern may refer to.
#[derive(Debug, Clone, Default)]
pub struct PatternValues<'a> {
    /// `%j`: the job id (an array task's own id).
    pub job_id: i64,
    /// `%x`: the job name.
    pub job_name: &'a str,
    /// `%A`: the array's master job id (the job id when not an array).
    pub array_job_id: Option<i64>,
    /// `%a`: the array task index.
    pub array_task_id: Option<u32>,
    /// `%u`: the user name.
    pub user: &'a str,
    /// `%N`: the short host name of the node the file is opened on.
    pub node_name: &'a str,
    /// `%n`: the node's index within the job (0 for the batch node).
    pub node_index: u32,
    /// `%t`: the task id (0 for the batch script).
    pub task_id: u32,
}

/// What `%a` gives for a job that is not an array: Slurm's `NO_VAL` (`0xfffffffe`).
pub const NO_ARRAY_TASK_ID: u32 = 4_294_967_294;

/// The widest zero padding Slurm applies (`%20j` pads to 10).
pub const MAX_PAD_WIDTH: usize = 10;

/// Slurm's default `--output` (and `--error`) pattern for a job: `slurm-%j.out`.
pub fn default_output() -> &'static str {
    "slurm-%j.out"
}

/// Slurm's default `--output` pattern: `slurm-%A_%a.out` for an array job,
/// `slurm-%j.out` otherwise.
pub fn default_output_for(is_array: bool) -> &'static str {
    if is_array {
        "slurm-%A_%a.out"
    } else {
        default_output()
    }
}

/// Expands a filename pattern: `%j %J %x %A %a %b %u %N %n %t %%`, each with an optional
/// zero-padding width (`%4j` → `0042`, at most [`MAX_PAD_WIDTH`]; names are not padded).
///
/// * `%J` is the job id (for a batch script, the same as `%j`);
/// * `%A` is the array master id, or the job id when not an array;
/// * `%a` is the array task id, or [`NO_ARRAY_TASK_ID`] when not an array, as in Slurm;
/// * `%b` is the array task id modulo 10.
///
/// Unknown `%` sequences (and a trailing `%`) are kept as written. As in Slurm, a pattern
/// that contains a backslash is not expanded at all; its backslashes are removed
/// (`out\%j` → `out%j`).
pub fn expand(pattern: &str, values: &PatternValues<'_>) -> String {
    if pattern.contains('\\') {
        return pattern.replace('\\', "");
    }
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut rest = pattern;
    while let Some(pos) = rest.find('%') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        let width = after[..digits]
            .parse::<usize>()
            .unwrap_or(0)
            .min(MAX_PAD_WIDTH);
        let Some(letter) = after[digits..].chars().next() else {
            // A trailing `%` or `%4`: as written.
            out.push_str(&rest[pos..]);
            return out;
        };
        let number = |n: i64| format!("{n:0width$}");
        let task = values.array_task_id.unwrap_or(NO_ARRAY_TASK_ID);
        let expanded = match letter {
            '%' if digits == 0 => Some("%".to_string()),
            'j' | 'J' => Some(number(values.job_id)),
            'A' => Some(number(values.array_job_id.unwrap_or(values.job_id))),
            'a' => Some(number(i64::from(task))),
            'b' => Some(number(i64::from(task % 10))),
            'x' => Some(values.job_name.to_string()),
            'u' => Some(values.user.to_string()),
            'N' => Some(values.node_name.to_string()),
            'n' => Some(number(i64::from(values.node_index))),
            't' => Some(number(i64::from(values.task_id))),
            _ => None,
        };
        let consumed = 1 + digits + letter.len_utf8();
        match expanded {
            Some(text) => out.push_str(&text),
            None => out.push_str(&rest[pos..pos + consumed]),
        }
        rest = &rest[pos + consumed..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values() -> PatternValues<'static> {
        PatternValues {
            job_id: 42,
            job_name: "train",
            array_job_id: None,
            array_task_id: None,
            user: "alice",
            node_name: "gpu01",
            node_index: 1,
            task_id: 3,
        }
    }

    #[test]
    fn every_sequence() {
        let v = values();
        assert_eq!(expand("%x-%j.out", &v), "train-42.out");
        assert_eq!(expand("%J|%u|%N|%n|%t|%%", &v), "42|alice|gpu01|1|3|%");
        assert_eq!(expand("%4j", &v), "0042");
        assert_eq!(expand("%A_%a", &v), "42_4294967294");
        assert_eq!(expand("%b", &v), "4");
        assert_eq!(expand("%20j", &v), "0000000042");
        assert_eq!(expand("%3x", &v), "train");
    }

    #[test]
    fn array_task() {
        let v = PatternValues {
            job_id: 57,
            array_job_id: Some(50),
            array_task_id: Some(7),
            ..values()
        };
        assert_eq!(expand("sweep_%A_%a.out", &v), "sweep_50_7.out");
        assert_eq!(expand("%3a-%j", &v), "007-57");
        assert_eq!(expand("%b", &v), "7");
    }

    #[test]
    fn unknown_sequences_kept() {
        let v = values();
        assert_eq!(expand("%z %5q 100%", &v), "%z %5q 100%");
        assert_eq!(expand("a%4", &v), "a%4");
        assert_eq!(expand("%5%", &v), "%5%");
        assert_eq!(expand("é%jé", &v), "é42é");
        assert_eq!(expand("plain.log", &v), "plain.log");
    }

    #[test]
    fn backslash_disables_expansion() {
        assert_eq!(expand("out\\%j.log", &values()), "out%j.log");
    }

    #[test]
    fn defaults() {
        assert_eq!(default_output(), "slurm-%j.out");
        assert_eq!(default_output_for(false), "slurm-%j.out");
        assert_eq!(default_output_for(true), "slurm-%A_%a.out");
        let v = PatternValues {
            job_id: 9,
            array_job_id: Some(8),
            array_task_id: Some(1),
            ..values()
        };
        assert_eq!(expand(default_output_for(true), &v), "slurm-8_1.out");
    }
}
