//! squeue's job ids, selections and `-o` formats: array tasks as `5_3` and an array's
//! pending tasks as `5_[4-9]` (one line each with `-r`), `-j` lists (`5`, `5_3`), and the
//! `%` field letters Slurm documents for `squeue -o` that Berth has values for.

use crate::format::{job_run_seconds, parse_percent_format, percent_table};
use berth_core::duration::format_duration;
use berth_core::state::JobState;
use berth_core::wire::Job;
use chrono::{DateTime, SecondsFormat, Utc};

/// squeue's `%i`: `5_3` for an array task, `5_[4-9]` for an array's pending tasks not
/// started yet, else the job id.
pub fn job_id_display(job: &Job) -> String {
    match (
        job.array_job_id,
        job.array_task_id,
        &job.array_tasks_pending,
    ) {
        (Some(array), Some(task), _) => format!("{array}_{task}"),
        (Some(array), None, Some(pending)) if !pending.is_empty() => format!("{array}_[{pending}]"),
        _ => job.id.to_string(),
    }
}

/// The indices of a pending-task range as Berth writes it (`4-9`, `1,3,5-7`, `0-15:4`);
/// `None` when it does not read as one.
pub(crate) fn task_indices(pending: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for part in pending.split(',') {
        let (range, step) = match part.split_once(':') {
            Some((r, s)) => (r, s.parse::<u32>().ok().filter(|s| *s > 0)?),
            None => (part, 1),
        };
        let (lo, hi) = match range.split_once('-') {
            Some((a, b)) => (a.parse::<u32>().ok()?, b.parse::<u32>().ok()?),
            None => {
                let v = range.parse::<u32>().ok()?;
                (v, v)
            }
        };
        if hi < lo || hi - lo > 1_000_000 {
            return None;
        }
        out.extend((lo..=hi).step_by(step as usize));
    }
    Some(out)
}

/// squeue `-r`: an array's pending tasks one line each (`5_4`, `5_5` …) instead of the
/// master's `5_[4-9]` line.
pub fn expand_array_tasks(jobs: Vec<Job>) -> Vec<Job> {
    let mut out = Vec::with_capacity(jobs.len());
    for job in jobs {
        let tasks = match (
            &job.array_job_id,
            job.array_task_id,
            &job.array_tasks_pending,
        ) {
            (Some(_), None, Some(pending)) => task_indices(pending),
            _ => None,
        };
        match tasks {
            Some(tasks) => out.extend(tasks.into_iter().map(|t| {
                let mut task = job.clone();
                task.array_task_id = Some(t);
                task.array_tasks_pending = None;
                task
            })),
            None => out.push(job),
        }
    }
    out
}

/// One item of squeue's `-j` list: a job (or a whole array) or one array task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobIdSpec {
    /// `5`: job 5, or every task of array 5.
    Job(i64),
    /// `5_3`: task 3 of array 5.
    Task(i64, u32),
}

/// Reads squeue's `-j 5,7_2`.
///
/// # Errors
/// A message naming the item that is not a job id.
pub fn parse_job_ids(list: &str) -> Result<Vec<JobIdSpec>, String> {
    list.split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|item| {
            let item = item.trim();
            let bad = || format!("-j {item:?}: not a job id (`5`, or `5_3` for an array task)");
            match item.split_once('_') {
                Some((a, t)) => Ok(JobIdSpec::Task(
                    a.parse().map_err(|_| bad())?,
                    t.parse().map_err(|_| bad())?,
                )),
                None => Ok(JobIdSpec::Job(item.parse().map_err(|_| bad())?)),
            }
        })
        .collect()
}

/// Whether `job` is one `ids` names.
pub fn job_matches(job: &Job, ids: &[JobIdSpec]) -> bool {
    ids.iter().any(|id| match *id {
        JobIdSpec::Job(n) => job.id == n || job.array_job_id == Some(n),
        JobIdSpec::Task(a, t) => job.array_job_id == Some(a) && job.array_task_id == Some(t),
    })
}

/// The `squeue -o` letters Berth shows, with their headers (Slurm's).
const FIELDS: [(char, &str); 26] = [
    ('i', "JOBID"),
    ('A', "JOBID"),
    ('F', "ARRAY_JOB_ID"),
    ('K', "ARRAY_TASK_ID"),
    ('j', "NAME"),
    ('u', "USER"),
    ('a', "ACCOUNT"),
    ('P', "PARTITION"),
    ('q', "QOS"),
    ('T', "STATE"),
    ('t', "ST"),
    ('M', "TIME"),
    ('l', "TIME_LIMIT"),
    ('L', "TIME_LEFT"),
    ('D', "NODES"),
    ('C', "CPUS"),
    ('b', "TRES_PER_NODE"),
    ('N', "NODELIST"),
    ('R', "NODELIST(REASON)"),
    ('r', "REASON"),
    ('S', "START_TIME"),
    ('V', "SUBMIT_TIME"),
    ('e', "END_TIME"),
    ('Q', "PRIORITY"),
    ('y', "NICE"),
    ('Z', "WORK_DIR"),
];

fn time(t: Option<DateTime<Utc>>) -> String {
    t.map_or("N/A".to_string(), |t| {
        t.to_rfc3339_opts(SecondsFormat::Secs, true)
            .trim_end_matches('Z')
            .to_string()
    })
}

/// The value of squeue field `kind` for `job` at `now`.
fn value(kind: char, job: &Job, now: DateTime<Utc>) -> String {
    let limit = job.time_limit;
    match kind {
        'i' => job_id_display(job),
        'A' => job.id.to_string(),
        'F' => job.array_job_id.unwrap_or(job.id).to_string(),
        'K' => match (job.array_task_id, &job.array_tasks_pending) {
            (Some(t), _) => t.to_string(),
            (None, Some(p)) if job.array_job_id.is_some() => p.clone(),
            _ => "N/A".to_string(),
        },
        'j' => job.name.clone(),
        'u' => job.user.clone(),
        'a' => job.account.clone().unwrap_or_else(|| "(null)".to_string()),
        'P' => job.partition.clone(),
        'q' => job.qos.clone().unwrap_or_else(|| "normal".to_string()),
        'T' => job.state.as_str().to_string(),
        't' => job.state.compact().to_string(),
        'M' => format_duration(job_run_seconds(job, now)),
        'l' => limit.map_or("UNLIMITED".to_string(), format_duration),
        'L' => match limit {
            None => "UNLIMITED".to_string(),
            Some(l) => format_duration(l.saturating_sub(job_run_seconds(job, now))),
        },
        'D' => job.num_nodes.to_string(),
        'C' => job.num_cpus.to_string(),
        'b' if job.gpus_per_node > 0 => format!("gres/gpu:{}", job.gpus_per_node),
        'b' => "N/A".to_string(),
        'N' => job.nodelist.clone().unwrap_or_default(),
        'R' => match (&job.nodelist, job.state) {
            (Some(nodes), state) if state != JobState::Pending && !nodes.is_empty() => {
                nodes.clone()
            }
            _ => format!("({})", job.reason.as_deref().unwrap_or("None")),
        },
        'r' => job.reason.clone().unwrap_or_else(|| "None".to_string()),
        'S' => time(job.start_time.or(job.expected_start)),
        'V' => time(Some(job.submit_time)),
        'e' => time(job.end_time),
        'Q' => job.priority.map_or("0".to_string(), |p| p.to_string()),
        'y' => job.nice.to_string(),
        'Z' => job.work_dir.clone().unwrap_or_default(),
        _ => String::new(),
    }
}

/// `jobs` in squeue's `-o FORMAT` (`%.18i %.9P %j`), with the header line unless
/// `header` is false. Lines end in a newline, trailing spaces trimmed.
///
/// # Errors
/// A message naming a letter Berth has no value for, or a format cut short.
pub fn squeue_formatted(
    format: &str,
    jobs: &[Job],
    now: DateTime<Utc>,
    header: bool,
) -> Result<String, String> {
    let known: Vec<char> = FIELDS.iter().map(|(k, _)| *k).collect();
    let parts = parse_percent_format(format, &known)?;
    Ok(percent_table(
        &parts,
        &FIELDS,
        jobs,
        |k, job| value(k, job, now),
        header,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_core::spec::JobSpec;

    fn job(id: i64) -> Job {
        serde_json::from_value(serde_json::json!({
            "id": id, "name": "train", "user": "vera", "account": "ml", "partition": "gpu",
            "qos": "normal", "state": "PENDING", "reason": "Priority", "num_nodes": 1,
            "num_tasks": 1, "gpus_per_node": 2, "time_limit": 3600, "restart_count": 0,
            "submit_time": "2026-12-01T10:00:00Z", "allocations": [], "exit_code": null,
            "spec": serde_json::to_value(JobSpec::default()).unwrap(),
            "environment": {}, "output_truncated": false, "nice": 0,
        }))
        .unwrap()
    }

    #[test]
    fn array_tasks_and_pending_ranges_print_as_slurm_does() {
        let plain = job(7);
        assert_eq!(job_id_display(&plain), "7");
        let mut task = job(12);
        task.array_job_id = Some(10);
        task.array_task_id = Some(2);
        assert_eq!(job_id_display(&task), "10_2");
        let mut master = job(10);
        master.array_job_id = Some(10);
        master.array_tasks_pending = Some("3-5,8".into());
        assert_eq!(job_id_display(&master), "10_[3-5,8]");
        let expanded = expand_array_tasks(vec![plain, master, task]);
        let ids: Vec<String> = expanded.iter().map(job_id_display).collect();
        assert_eq!(ids, ["7", "10_3", "10_4", "10_5", "10_8", "10_2"]);
    }

    #[test]
    fn job_id_lists_select_jobs_arrays_and_tasks() {
        let ids = parse_job_ids("7,10_2").unwrap();
        assert_eq!(ids, [JobIdSpec::Job(7), JobIdSpec::Task(10, 2)]);
        let mut task = job(12);
        task.array_job_id = Some(10);
        task.array_task_id = Some(2);
        assert!(job_matches(&job(7), &ids));
        assert!(job_matches(&task, &ids));
        assert!(!job_matches(&job(8), &ids));
        // `10` names the whole array.
        assert!(job_matches(&task, &parse_job_ids("10").unwrap()));
        let err = parse_job_ids("7,x").unwrap_err();
        assert!(
            err.contains("\"x\"") && err.contains("not a job id"),
            "{err}"
        );
    }

    #[test]
    fn formats_take_slurms_letters_widths_and_alignment() {
        let now = "2026-12-01T11:00:00Z".parse().unwrap();
        let text = squeue_formatted("%.6i|%6j|%u|%t|%b|%l|%R", &[job(7)], now, true).unwrap();
        assert_eq!(
            text,
            " JOBID|NAME  |USER|ST|TRES_PER_NODE|TIME_LIMIT|NODELIST(REASON)\n     7|train |vera|PD|gres/gpu:2|1:00:00|(Priority)\n"
        );
        assert_eq!(
            squeue_formatted("%i", &[job(7)], now, false).unwrap(),
            "7\n"
        );
        let err = squeue_formatted("%i %W", &[], now, true).unwrap_err();
        assert!(err.contains("%W is not a field"), "{err}");
    }
}
