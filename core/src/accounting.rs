//! Job accounting as sacct shows it (`GET /v1/accounting/jobs`, `berth acct`): the wire
//! types (one [`AcctJob`] per job run, with its steps), and Slurm's formats for them —
//! TRES strings (`billing=8,cpu=8,gres/gpu=2,gres/gpu:h100=2,mem=64G,node=1`), elapsed
//! times (`[D-]HH:MM:SS`), exit codes (`code:signal`), job ids (`12`, `5_3`, `5_[4-9]`,
//! `12.batch`), state filters (`CD,F,CA,R,PD,TO,NF,OOM,PR,RQ`) and sacct's
//! `--starttime`/`--endtime` values.

use chrono::{DateTime, Duration, NaiveDate, NaiveDateTime, NaiveTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use utoipa::{IntoParams, ToSchema};

/// `GET /v1/accounting/jobs` filters. Lists are comma-separated; filters combine with AND.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct AcctJobQuery {
    /// Runs that were in the window from this time on (ended at or after it, or not ended):
    /// RFC 3339, or any form sacct's `-S` takes ([`parse_sacct_time`]: `2026-12-01`,
    /// `now-2days` …; UTC).
    pub start: Option<String>,
    /// Runs that were in the window until this time (started, or submitted when not
    /// started, at or before it); the same forms.
    pub end: Option<String>,
    /// Only these users.
    pub user: Option<String>,
    /// Only these accounts.
    pub account: Option<String>,
    /// Only these partitions.
    pub partition: Option<String>,
    /// Only runs in these states (long or short names: `COMPLETED`, `CD`, `REQUEUED`, `RQ` …).
    pub state: Option<String>,
    /// Only these QOS.
    pub qos: Option<String>,
    /// Only runs that held one of these nodes (names or a hostlist: `gpu[1-4]`).
    pub node: Option<String>,
    /// Only these jobs: `12` (a job, or every task of array 12), `5_3` (one array task).
    pub job: Option<String>,
    /// Every run of each job (sacct `-D`); default: the latest run only.
    pub duplicates: Option<bool>,
    /// Include each run's steps (`batch`, `0`, `1` …).
    pub steps: Option<bool>,
    /// Rows per page, 1 to 10000 (default 1000).
    pub limit: Option<u32>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

/// A page of job runs.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct AcctJobList {
    /// The runs, by job id then run.
    pub items: Vec<AcctJob>,
    /// Pass as `cursor` to get the next page; absent on the last page.
    pub next_cursor: Option<String>,
}

/// Trackable resources (Slurm's TRES) of a run, over all its nodes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Tres {
    /// Billing units: the CPUs (Slurm's default `TRESBillingWeights`).
    pub billing: u64,
    /// CPUs.
    pub cpu: u64,
    /// Memory, MiB (absent: a share of each node, not a fixed size).
    pub mem_mib: Option<u64>,
    /// GPUs (or GPU shards for `--gres=shard`).
    pub gpus: u64,
    /// GPUs by model (lower case, as Slurm's GRES types: `h100`).
    pub gpu_models: BTreeMap<String, u64>,
    /// Nodes.
    pub nodes: u32,
}

/// One job run as sacct shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AcctJob {
    /// The job's id (`JobIDRaw`).
    pub job_id: i64,
    /// The job id as sacct prints it (`JobID`): `12`, `5_3` (array task), `5_[4-9]`
    /// (array tasks not started).
    pub job_id_display: String,
    /// The run (the restart count when it ran; 0 for the first).
    pub run: u32,
    /// Job name.
    pub name: String,
    /// User.
    pub user: String,
    /// Account.
    pub account: String,
    /// Partition.
    pub partition: String,
    /// QOS.
    pub qos: String,
    /// The run's state: Slurm's long name (`COMPLETED`, `RUNNING` …), or for a run a requeue
    /// ended `REQUEUED`, `NODE_FAIL` or `PREEMPTED`.
    pub state: String,
    /// Pending or end reason.
    pub reason: Option<String>,
    /// What ended a requeued run (`node_fail on n1`, `preempted by job 7`,
    /// `requeued by alice`).
    pub requeue_reason: Option<String>,
    /// Exit code of the batch script.
    pub exit_code: Option<i32>,
    /// Signal that ended it.
    pub exit_signal: Option<i32>,
    /// Submitted.
    pub submit_time: DateTime<Utc>,
    /// Eligible to start (submit, or `--begin` when later).
    pub eligible_time: DateTime<Utc>,
    /// Started.
    pub start_time: Option<DateTime<Utc>>,
    /// Ended.
    pub end_time: Option<DateTime<Utc>>,
    /// Seconds from start to end (to now while it runs).
    pub elapsed: u64,
    /// Time limit, seconds; absent: unlimited.
    pub time_limit: Option<u64>,
    /// What the job asked for.
    pub req_tres: Tres,
    /// What the run held.
    pub alloc_tres: Tres,
    /// The nodes it held, as a Slurm hostlist (`gpu[1-2]`); `None assigned` when none.
    pub nodelist: String,
    /// Restarts before this run (Berth's; Slurm's `SLURM_RESTART_COUNT`).
    pub restarts: u32,
    /// GPU-seconds held (GPUs × seconds, summed over nodes).
    pub gpu_seconds: f64,
    /// Average GPU utilisation over its samples, %.
    pub gpu_util_avg: Option<f64>,
    /// Peak GPU memory used, MiB.
    pub gpu_mem_peak_mib: Option<u64>,
    /// GPU energy, joules.
    pub energy_j: Option<f64>,
    /// CPU time used, seconds (user + system, from the job's cgroup on its batch node;
    /// `None` where the cgroup does not report it).
    pub cpu_time_s: Option<f64>,
    /// Peak memory of the job's cgroup on its batch node, MiB (`None` where the cgroup
    /// does not report it).
    pub max_rss_mib: Option<u64>,
    /// Cloud cost on pool nodes, in the pools' currency: price per hour × hours held ×
    /// the run's share of the node (GPUs held / node GPUs, else CPUs, else all).
    pub cost: Option<f64>,
    /// Its steps (only when asked for): `batch`, then `0`, `1` ….
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<AcctStep>,
}

/// One step of a job run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AcctStep {
    /// `batch` (the batch script) or the step id (`0`, `1` …).
    pub step: String,
    /// The step's name (`batch`, or its program).
    pub name: String,
    /// State (Slurm's long name).
    pub state: String,
    /// Exit code.
    pub exit_code: Option<i32>,
    /// Signal that ended it.
    pub exit_signal: Option<i32>,
    /// Started.
    pub start_time: Option<DateTime<Utc>>,
    /// Ended.
    pub end_time: Option<DateTime<Utc>>,
    /// Seconds from start to end (to now while it runs).
    pub elapsed: u64,
    /// Tasks.
    pub ntasks: u32,
    /// Nodes it ran on, as a hostlist.
    pub nodelist: String,
    /// What it held (CPUs are the run's; GPUs those its tasks saw).
    pub alloc_tres: Tres,
}

/// Slurm's memory size in a TRES string: `64G` when a whole number of GiB, else `4000M`.
pub fn mem_string(mib: u64) -> String {
    if mib > 0 && mib.is_multiple_of(1024) {
        format!("{}G", mib / 1024)
    } else {
        format!("{mib}M")
    }
}

/// The GRES type of a GPU model, as Slurm's `AutoDetect=nvml` names it from NVML's device
/// name: lower case, blanks as underscores (`NVIDIA H100 80GB HBM3` →
/// `nvidia_h100_80gb_hbm3`), so that it stays one token in a TRES string.
pub fn gres_type(model: &str) -> String {
    model
        .split_whitespace()
        .collect::<Vec<_>>()
        .join("_")
        .to_lowercase()
}

/// A TRES string as sacct's `AllocTRES`/`ReqTRES` print it, names in Slurm's
/// (alphabetical) order: `billing=8,cpu=8,gres/gpu=2,gres/gpu:h100=2,mem=64G,node=1`. Zero
/// GPUs and unknown memory are left out; GPU models are written as [`gres_type`] names.
pub fn tres_string(t: &Tres) -> String {
    let mut parts = vec![format!("billing={}", t.billing), format!("cpu={}", t.cpu)];
    if t.gpus > 0 {
        parts.push(format!("gres/gpu={}", t.gpus));
        let mut types = BTreeMap::<String, u64>::new();
        for (model, n) in &t.gpu_models {
            if !model.trim().is_empty() && *n > 0 {
                *types.entry(gres_type(model)).or_default() += *n;
            }
        }
        for (ty, n) in types {
            parts.push(format!("gres/gpu:{ty}={n}"));
        }
    }
    if let Some(mem) = t.mem_mib.filter(|m| *m > 0) {
        parts.push(format!("mem={}", mem_string(mem)));
    }
    parts.push(format!("node={}", t.nodes));
    parts.join(",")
}

/// sacct's elapsed time: `HH:MM:SS`, `D-HH:MM:SS` from a day on.
pub fn elapsed_string(seconds: u64) -> String {
    let days = seconds / 86_400;
    let (h, m, s) = (
        (seconds % 86_400) / 3600,
        (seconds % 3600) / 60,
        seconds % 60,
    );
    if days > 0 {
        format!("{days}-{h:02}:{m:02}:{s:02}")
    } else {
        format!("{h:02}:{m:02}:{s:02}")
    }
}

/// sacct's `ExitCode`: `code:signal` (`0:0`, `1:0`, `0:9`). As Slurm prints a wait
/// status (`WIFSIGNALED`: `0:WTERMSIG`, else `WEXITSTATUS:0`), a process killed by a
/// signal shows `0:signal` whatever exit code is kept beside it (a step's 128 + signal
/// prints `0:15`, not `143:15`).
pub fn exit_code_string(code: Option<i32>, signal: Option<i32>) -> String {
    match signal.filter(|s| *s > 0) {
        Some(signal) => format!("0:{signal}"),
        None => format!("{}:0", code.unwrap_or(0)),
    }
}

/// The wait status Slurm keeps for a process that exited with `code` or was killed by
/// `signal` (`code << 8`, or the signal number): what Slurm compares to find a job's
/// highest step exit code (`DerivedExitCode`).
pub fn wait_status(code: Option<i32>, signal: Option<i32>) -> i32 {
    match signal.filter(|s| *s > 0) {
        Some(signal) => signal & 0x7f,
        None => (code.unwrap_or(0) & 0xff) << 8,
    }
}

/// sacct's `DerivedExitCode` of a job whose steps ended as `steps` (exit code, signal):
/// the step with the highest wait status ([`wait_status`]), as [`exit_code_string`]
/// prints it; `0:0` without steps.
pub fn derived_exit_code_string(
    steps: impl IntoIterator<Item = (Option<i32>, Option<i32>)>,
) -> String {
    steps
        .into_iter()
        .max_by_key(|(code, signal)| wait_status(*code, *signal))
        .map(|(code, signal)| exit_code_string(code, signal))
        .unwrap_or_else(|| "0:0".to_string())
}

/// The job id sacct prints: `5_3` for an array task, `5_[4-9]` for an array's tasks not
/// started yet, else the id.
pub fn job_id_display(
    job_id: i64,
    array_job_id: Option<i64>,
    array_task_id: Option<i32>,
    array_pending: Option<&str>,
) -> String {
    match (array_task_id, array_pending) {
        (Some(task), _) => format!("{}_{task}", array_job_id.unwrap_or(job_id)),
        (None, Some(pending)) if !pending.is_empty() => {
            format!("{}_[{pending}]", array_job_id.unwrap_or(job_id))
        }
        _ => job_id.to_string(),
    }
}

/// The states a run may be in, long name then sacct's short name.
pub const ACCT_STATES: [(&str, &str); 15] = [
    ("PENDING", "PD"),
    ("RUNNING", "R"),
    ("SUSPENDED", "S"),
    ("COMPLETING", "CG"),
    ("COMPLETED", "CD"),
    ("FAILED", "F"),
    ("TIMEOUT", "TO"),
    ("CANCELLED", "CA"),
    ("NODE_FAIL", "NF"),
    ("PREEMPTED", "PR"),
    ("OUT_OF_MEMORY", "OOM"),
    ("BOOT_FAIL", "BF"),
    ("DEADLINE", "DL"),
    ("REQUEUED", "RQ"),
    ("RESIZING", "RS"),
];

/// Parses sacct's `-s/--state` list (comma-separated long or short names, any case:
/// `CD,F`, `completed,timeout`) into long names.
///
/// # Errors
/// A message naming the unknown state and listing the known ones.
pub fn parse_states(list: &str) -> Result<Vec<String>, String> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            let up = s.to_ascii_uppercase();
            ACCT_STATES
                .iter()
                .find(|(long, short)| {
                    *long == up || *short == up || (up == "CANCELED" && *long == "CANCELLED")
                })
                .map(|(long, _)| (*long).to_string())
                .ok_or_else(|| {
                    format!(
                        "unknown state {s:?} (known: {})",
                        ACCT_STATES
                            .iter()
                            .map(|(l, s)| format!("{s}/{l}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                })
        })
        .collect()
}

/// Job ids named by sacct's `-j`: plain ids, and (array id, task index) pairs.
pub type JobIds = (Vec<i64>, Vec<(i64, i32)>);

/// Job ids as sacct's `-j` takes them: `12` (a job, or every task of array 12) and `5_3`
/// (task 3 of array 5), comma-separated. Returns the plain ids and the (array, task)
/// pairs.
///
/// # Errors
/// A message naming the bad id.
pub fn parse_job_ids(list: &str) -> Result<JobIds, String> {
    let mut ids = Vec::new();
    let mut tasks = Vec::new();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let bad = || format!("not a job id: {item:?} (expected 12 or 12_3)");
        // `12.batch`, `12.0`: the job's steps are the job's.
        let item_no_step = item.split('.').next().unwrap_or(item);
        match item_no_step.split_once('_') {
            Some((job, task)) => {
                let job: i64 = job.parse().ok().filter(|v| *v > 0).ok_or_else(bad)?;
                let task: i32 = task.parse().ok().filter(|v| *v >= 0).ok_or_else(bad)?;
                tasks.push((job, task));
            }
            None => ids.push(
                item_no_step
                    .parse()
                    .ok()
                    .filter(|v| *v > 0)
                    .ok_or_else(bad)?,
            ),
        }
    }
    if ids.is_empty() && tasks.is_empty() {
        return Err("no job id given".to_string());
    }
    Ok((ids, tasks))
}

/// Parses a sacct `-S/--starttime` or `-E/--endtime` value relative to `now` (UTC, as
/// Berth reads times without a zone): `YYYY-MM-DD[THH:MM[:SS]]`, `MM/DD[/YY]`,
/// `MMDD[YY]`, `MM.DD[.YY]` (each with `-HH:MM[:SS]`), `HH:MM[:SS]` (today), `now`,
/// `now[+|-]N[seconds|minutes|hours|days|weeks]`, `today`, `midnight`, `noon`,
/// `teatime`, `tomorrow`, or an RFC 3339 time.
///
/// # Errors
/// A message naming the value and the accepted forms.
pub fn parse_sacct_time(value: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    let bad = || {
        format!(
            "not a time: {value:?} (expected YYYY-MM-DD[THH:MM[:SS]], MM/DD[/YY][-HH:MM[:SS]], \
             MMDD[YY], HH:MM[:SS], now[+|-]N[units], today, midnight, noon or teatime)"
        )
    };
    let v = value.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(v) {
        return Ok(t.with_timezone(&Utc));
    }
    let lower = v.to_ascii_lowercase();
    let today = now.date_naive();
    let at = |d: NaiveDate, h: u32| d.and_hms_opt(h, 0, 0).map(|t| t.and_utc()).ok_or_else(bad);
    match lower.as_str() {
        "now" => return Ok(now),
        "today" | "midnight" => return at(today, 0),
        "noon" => return at(today, 12),
        "teatime" => return at(today, 16),
        "tomorrow" => return at(today + Duration::days(1), 0),
        _ => {}
    }
    if let Some(rest) = lower.strip_prefix("now") {
        let (sign, rest) = match rest.chars().next() {
            Some('+') => (1, &rest[1..]),
            Some('-') => (-1, &rest[1..]),
            _ => return Err(bad()),
        };
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let n: i64 = digits.parse().map_err(|_| bad())?;
        let unit = crate::begin::unit_seconds(&rest[digits.len()..]).ok_or_else(bad)?;
        let secs = n
            .checked_mul(unit)
            .filter(|s| *s <= 100 * 365 * 86_400)
            .ok_or_else(bad)?;
        return Ok(now + Duration::seconds(sign * secs));
    }
    // A time of day alone: today.
    if let Some(t) = parse_clock(v) {
        return Ok(today.and_time(t).and_utc());
    }
    // A date, with an optional time after `T` (ISO) or `-` (Slurm's MM/DD-HH:MM).
    let (date, time) = if let Some((d, t)) = v.split_once('T') {
        (d, Some(t))
    } else if v.contains('/') || v.contains('.') || !v.contains('-') {
        match v.split_once('-') {
            Some((d, t)) => (d, Some(t)),
            None => (v, None),
        }
    } else {
        (v, None)
    };
    let date = parse_date(date, today).ok_or_else(bad)?;
    let time = match time {
        Some(t) => parse_clock(t).ok_or_else(bad)?,
        None => NaiveTime::MIN,
    };
    Ok(NaiveDateTime::new(date, time).and_utc())
}

fn parse_clock(t: &str) -> Option<NaiveTime> {
    NaiveTime::parse_from_str(t, "%H:%M:%S")
        .or_else(|_| NaiveTime::parse_from_str(t, "%H:%M"))
        .ok()
}

fn parse_date(d: &str, today: NaiveDate) -> Option<NaiveDate> {
    use chrono::Datelike;
    if let Ok(date) = NaiveDate::parse_from_str(d, "%Y-%m-%d") {
        return Some(date);
    }
    let year = |y: Option<&str>| -> Option<i32> {
        match y {
            None => Some(today.year()),
            Some(y) if y.len() == 2 => y.parse::<i32>().ok().map(|y| 2000 + y),
            Some(y) if y.len() == 4 => y.parse().ok(),
            Some(_) => None,
        }
    };
    let parts: Vec<&str> = if d.contains('/') {
        d.split('/').collect()
    } else if d.contains('.') {
        d.split('.').collect()
    } else if d.len() == 4 || d.len() == 6 {
        if !d.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let mut p = vec![&d[0..2], &d[2..4]];
        if d.len() == 6 {
            p.push(&d[4..6]);
        }
        p
    } else {
        return None;
    };
    if !(2..=3).contains(&parts.len()) {
        return None;
    }
    let month: u32 = parts[0].parse().ok()?;
    let day: u32 = parts[1].parse().ok()?;
    NaiveDate::from_ymd_opt(year(parts.get(2).copied())?, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 1, 15, 30, 0).unwrap()
    }

    #[test]
    fn gres_types_are_nvml_names_as_one_token() {
        assert_eq!(gres_type("NVIDIA H100 80GB HBM3"), "nvidia_h100_80gb_hbm3");
        assert_eq!(
            gres_type(" NVIDIA  A100-SXM4-40GB "),
            "nvidia_a100-sxm4-40gb"
        );
        assert_eq!(gres_type("h100"), "h100");
        let t = Tres {
            billing: 1,
            cpu: 1,
            mem_mib: None,
            gpus: 1,
            gpu_models: [("NVIDIA H100 80GB HBM3".to_string(), 1)].into(),
            nodes: 1,
        };
        assert_eq!(
            tres_string(&t),
            "billing=1,cpu=1,gres/gpu=1,gres/gpu:nvidia_h100_80gb_hbm3=1,node=1"
        );
    }

    #[test]
    fn tres_in_slurm_order() {
        let t = Tres {
            billing: 8,
            cpu: 8,
            mem_mib: Some(65536),
            gpus: 2,
            gpu_models: [("h100".to_string(), 2)].into(),
            nodes: 1,
        };
        assert_eq!(
            tres_string(&t),
            "billing=8,cpu=8,gres/gpu=2,gres/gpu:h100=2,mem=64G,node=1"
        );
        let t = Tres {
            billing: 1,
            cpu: 1,
            mem_mib: Some(4000),
            nodes: 1,
            ..Tres::default()
        };
        assert_eq!(tres_string(&t), "billing=1,cpu=1,mem=4000M,node=1");
    }

    #[test]
    fn elapsed_and_exit_codes() {
        assert_eq!(elapsed_string(5), "00:00:05");
        assert_eq!(elapsed_string(3661), "01:01:01");
        assert_eq!(elapsed_string(90_061), "1-01:01:01");
        assert_eq!(exit_code_string(Some(0), None), "0:0");
        assert_eq!(exit_code_string(None, Some(9)), "0:9");
        assert_eq!(exit_code_string(Some(3), Some(0)), "3:0");
        // A step killed by SIGTERM: Slurm's sacct prints the signal alone.
        assert_eq!(exit_code_string(Some(143), Some(15)), "0:15");
        // DerivedExitCode: the highest wait status (an exit code 1 outranks signal 15).
        assert_eq!(
            derived_exit_code_string([(Some(143), Some(15)), (Some(0), None)]),
            "0:15"
        );
        assert_eq!(
            derived_exit_code_string([(Some(143), Some(15)), (Some(1), None)]),
            "1:0"
        );
        assert_eq!(derived_exit_code_string([]), "0:0");
    }

    #[test]
    fn job_ids_as_sacct_prints_them() {
        assert_eq!(job_id_display(12, None, None, None), "12");
        assert_eq!(job_id_display(14, Some(5), Some(3), None), "5_3");
        assert_eq!(job_id_display(5, Some(5), None, Some("4-9")), "5_[4-9]");
        assert_eq!(
            parse_job_ids("12, 5_3,7.batch").unwrap(),
            (vec![12, 7], vec![(5, 3)])
        );
        assert!(parse_job_ids("x").unwrap_err().contains("\"x\""));
        assert!(parse_job_ids("5_-1").is_err());
    }

    #[test]
    fn states_long_and_short() {
        assert_eq!(
            parse_states("CD,f,RQ,node_fail").unwrap(),
            vec!["COMPLETED", "FAILED", "REQUEUED", "NODE_FAIL"]
        );
        assert!(parse_states("XX")
            .unwrap_err()
            .contains("unknown state \"XX\""));
    }

    #[test]
    fn sacct_times() {
        let n = now();
        let t = |v: &str| parse_sacct_time(v, n).unwrap();
        assert_eq!(
            t("2026-11-03"),
            Utc.with_ymd_and_hms(2026, 11, 3, 0, 0, 0).unwrap()
        );
        assert_eq!(
            t("2026-11-03T10:20"),
            Utc.with_ymd_and_hms(2026, 11, 3, 10, 20, 0).unwrap()
        );
        assert_eq!(
            t("11/03-10:20:30"),
            Utc.with_ymd_and_hms(2026, 11, 3, 10, 20, 30).unwrap()
        );
        assert_eq!(
            t("110325"),
            Utc.with_ymd_and_hms(2025, 11, 3, 0, 0, 0).unwrap()
        );
        assert_eq!(
            t("08:00"),
            Utc.with_ymd_and_hms(2026, 12, 1, 8, 0, 0).unwrap()
        );
        assert_eq!(
            t("midnight"),
            Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap()
        );
        assert_eq!(
            t("now-2hours"),
            Utc.with_ymd_and_hms(2026, 12, 1, 13, 30, 0).unwrap()
        );
        assert_eq!(t("now"), n);
        assert!(parse_sacct_time("yesterdayish", n).is_err());
        assert!(parse_sacct_time("13/45", n).is_err());
    }
}
