//! squeue's job ids, selections, formats and order: array tasks as `5_3` and an array's
//! pending tasks as `5_[4-9]` (`5_[4-9%2]` with a limit on how many run at once; one line
//! each with `-r`), `-j` lists (`5`, `5_3`), the `%` field letters Slurm documents for
//! `squeue -o` and the field names of `squeue -O` that Berth has values for, `-S` sort
//! keys, and `-s`'s job step lines.

use crate::format::{parse_percent_format, percent_table, SinfoPart};
use berth_core::duration::format_duration;
use berth_core::state::JobState;
use berth_core::step::{Step, StepState};
use berth_core::wire::QueueJob;
use chrono::{DateTime, SecondsFormat, Utc};
use std::cmp::Ordering;

/// squeue's `%i`: `5_3` for an array task, `5_[4-9]` for an array's pending tasks not
/// started yet (`5_[4-9%2]` when at most 2 may run at once), else the job id.
pub fn job_id_display(job: &QueueJob) -> String {
    match (
        job.array_job_id,
        job.array_task_id,
        &job.array_tasks_pending,
    ) {
        (Some(array), Some(task), _) => format!("{array}_{task}"),
        (Some(array), None, Some(pending)) if !pending.is_empty() => match job.array_max_running {
            Some(limit) => format!("{array}_[{pending}%{limit}]"),
            None => format!("{array}_[{pending}]"),
        },
        _ => job.id.to_string(),
    }
}

/// How long a job has run at `now`, seconds: nothing while pending, up to its end once
/// ended.
pub fn run_seconds(job: &QueueJob, now: DateTime<Utc>) -> u64 {
    match job.start_time {
        Some(start) if job.state != JobState::Pending => {
            (job.end_time.unwrap_or(now) - start).num_seconds().max(0) as u64
        }
        _ => 0,
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
pub fn expand_array_tasks(jobs: Vec<QueueJob>) -> Vec<QueueJob> {
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
            Some(tasks) => out.extend(tasks.into_iter().map(|t| pending_task(&job, t))),
            None => out.push(job),
        }
    }
    out
}

/// Pending task `task` of `master` (an array master holding it) as a line of its own.
fn pending_task(master: &QueueJob, task: u32) -> QueueJob {
    let mut line = master.clone();
    line.array_task_id = Some(task);
    line.array_tasks_pending = None;
    line
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
pub fn job_matches(job: &QueueJob, ids: &[JobIdSpec]) -> bool {
    ids.iter().any(|id| match *id {
        JobIdSpec::Job(n) => job.id == n || job.array_job_id == Some(n),
        JobIdSpec::Task(a, t) => job.array_job_id == Some(a) && job.array_task_id == Some(t),
    })
}

/// squeue `-j`: the jobs of `jobs` that `ids` name, in their order; a pending task named
/// as `5_3` that its array's master still holds (`5_[3-9]`) comes out of it as a line of
/// its own, `5_3`, as Slurm prints it.
pub fn select_jobs(jobs: Vec<QueueJob>, ids: &[JobIdSpec]) -> Vec<QueueJob> {
    let mut out = Vec::new();
    for job in jobs {
        if job_matches(&job, ids) {
            out.push(job);
            continue;
        }
        let (Some(array), None, Some(pending)) = (
            job.array_job_id,
            job.array_task_id,
            job.array_tasks_pending.as_deref(),
        ) else {
            continue;
        };
        let named: Vec<u32> = ids
            .iter()
            .filter_map(|id| match *id {
                JobIdSpec::Task(a, t) if a == array => Some(t),
                _ => None,
            })
            .collect();
        if named.is_empty() {
            continue;
        }
        let tasks = task_indices(pending).unwrap_or_default();
        out.extend(
            tasks
                .into_iter()
                .filter(|t| named.contains(t))
                .map(|t| pending_task(&job, t)),
        );
    }
    out
}

/// The `squeue -o` letters Berth shows, with their headers (Slurm's).
const FIELDS: [(char, &str); 27] = [
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
    ('p', "PRIORITY"),
    ('Q', "PRIORITY"),
    ('y', "NICE"),
    ('Z', "WORK_DIR"),
];

/// Keys of `-O` fields that have no `-o` letter (private-use code points, so that no
/// `-o` letter can name them).
const NUM_TASKS: char = '\u{E000}';
const EXIT_CODE: char = '\u{E001}';
const RESTART_COUNT: char = '\u{E002}';

/// Headers of the `-O`-only fields.
const LONG_ONLY_HEADERS: [(char, &str); 3] = [
    (NUM_TASKS, "TASKS"),
    (EXIT_CODE, "EXIT_CODE"),
    (RESTART_COUNT, "RESTARTCNT"),
];

/// squeue `-O`'s field names Berth shows (matched without regard to case), with the
/// `-o` letter that prints the same value: `JobArrayID` is `%i` (`5_3`), `JobID` the raw
/// id `%A`, `Priority` the priority scaled to 0..1 (`%p`), `PriorityLong` the integer.
const LONG_FIELDS: [(&str, char); 30] = [
    ("JobID", 'A'),
    ("JobArrayID", 'i'),
    ("ArrayJobID", 'F'),
    ("ArrayTaskID", 'K'),
    ("Name", 'j'),
    ("UserName", 'u'),
    ("Account", 'a'),
    ("Partition", 'P'),
    ("QOS", 'q'),
    ("State", 'T'),
    ("StateCompact", 't'),
    ("TimeUsed", 'M'),
    ("TimeLimit", 'l'),
    ("TimeLeft", 'L'),
    ("NumNodes", 'D'),
    ("NumCPUs", 'C'),
    ("NumTasks", NUM_TASKS),
    ("NodeList", 'N'),
    ("ReasonList", 'R'),
    ("Reason", 'r'),
    ("StartTime", 'S'),
    ("SubmitTime", 'V'),
    ("EndTime", 'e'),
    ("Priority", 'p'),
    ("PriorityLong", 'Q'),
    ("Nice", 'y'),
    ("WorkDir", 'Z'),
    ("tres-per-node", 'b'),
    ("exit_code", EXIT_CODE),
    ("RestartCnt", RESTART_COUNT),
];

/// Every header, `-o` letters and `-O`-only fields.
fn headers() -> Vec<(char, &'static str)> {
    FIELDS
        .iter()
        .chain(LONG_ONLY_HEADERS.iter())
        .copied()
        .collect()
}

fn time(t: Option<DateTime<Utc>>) -> String {
    t.map_or("N/A".to_string(), |t| {
        t.to_rfc3339_opts(SecondsFormat::Secs, true)
            .trim_end_matches('Z')
            .to_string()
    })
}

/// The value of squeue field `kind` for `job` at `now`.
fn value(kind: char, job: &QueueJob, now: DateTime<Utc>) -> String {
    let limit = job.time_limit;
    match kind {
        'i' => job_id_display(job),
        'A' => job.id.to_string(),
        'F' => job.array_job_id.unwrap_or(job.id).to_string(),
        'K' => match (job.array_task_id, &job.array_tasks_pending) {
            (Some(t), _) => t.to_string(),
            (None, Some(p)) if job.array_job_id.is_some() => match job.array_max_running {
                Some(limit) => format!("{p}%{limit}"),
                None => p.clone(),
            },
            _ => "N/A".to_string(),
        },
        'j' => job.name.clone(),
        'u' => job.user.clone(),
        'a' => job.account.clone().unwrap_or_else(|| "(null)".to_string()),
        'P' => job.partition.clone(),
        'q' => job.qos.clone().unwrap_or_else(|| "normal".to_string()),
        'T' => job.state.as_str().to_string(),
        't' => job.state.compact().to_string(),
        'M' => format_duration(run_seconds(job, now)),
        'l' => limit.map_or("UNLIMITED".to_string(), format_duration),
        'L' => match limit {
            None => "UNLIMITED".to_string(),
            Some(l) => format_duration(l.saturating_sub(run_seconds(job, now))),
        },
        'D' => job.num_nodes.to_string(),
        'C' => job.num_cpus.to_string(),
        'b' if job.gpus_per_node > 0 => format!("gres/gpu:{}", job.gpus_per_node),
        'b' => "N/A".to_string(),
        'N' => job.nodelist.clone().unwrap_or_default(),
        // Slurm's `%R`: the reason of a job pending or ended by a failure of its own
        // (TIMEOUT, OUT_OF_MEMORY, DEADLINE, FAILED), else its nodes.
        'R' => match job.state {
            JobState::Pending
            | JobState::Timeout
            | JobState::OutOfMemory
            | JobState::Deadline
            | JobState::Failed => format!("({})", job.reason.as_deref().unwrap_or("None")),
            _ => job.nodelist.clone().unwrap_or_default(),
        },
        'r' => job.reason.clone().unwrap_or_else(|| "None".to_string()),
        'S' => time(job.start_time.or(job.expected_start)),
        'V' => time(Some(job.submit_time)),
        'e' => time(job.end_time),
        // Slurm's `%p`: the priority over 2^32 - 1, printed with 14 decimals.
        'p' => format!(
            "{:.14}",
            job.priority.unwrap_or(0) as f64 / f64::from(u32::MAX)
        ),
        'Q' => job.priority.map_or("0".to_string(), |p| p.to_string()),
        'y' => job.nice.to_string(),
        'Z' => job.work_dir.clone().unwrap_or_default(),
        NUM_TASKS => job.num_tasks.to_string(),
        EXIT_CODE => format!(
            "{}:{}",
            job.exit_code.unwrap_or(0),
            job.exit_signal.unwrap_or(0)
        ),
        RESTART_COUNT => job.restart_count.to_string(),
        _ => String::new(),
    }
}

/// A parsed output layout (`-o` or `-O`), printed by [`squeue_layout_table`].
#[derive(Debug)]
pub struct Layout(Vec<SinfoPart>);

/// Reads squeue's `-o FORMAT` (`%.18i %.9P %j`).
///
/// # Errors
/// A message naming a letter Berth has no value for, or a format cut short.
pub fn parse_format(format: &str) -> Result<Layout, String> {
    let known: Vec<char> = FIELDS.iter().map(|(k, _)| *k).collect();
    parse_percent_format(format, &known).map(Layout)
}

/// Reads squeue's `-O FIELDS`: comma-separated `name[:[.][size][suffix]]` items (Slurm's
/// `--Format`): each field is 20 columns wide unless `size` says otherwise, left-aligned
/// unless `.` asks for right alignment, followed by `suffix` (any text) when given; names
/// are matched without regard to case.
///
/// # Errors
/// A message naming a field Berth does not show (with the list of those it does), or a
/// size that is not a number.
pub fn parse_long_format(spec: &str) -> Result<Layout, String> {
    let mut parts = Vec::new();
    for item in spec.split(',').filter(|i| !i.is_empty()) {
        let (name, rest) = item.split_once(':').unwrap_or((item, ""));
        let kind = LONG_FIELDS
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name.trim()))
            .map(|(_, k)| *k)
            .ok_or_else(|| {
                let names: Vec<&str> = LONG_FIELDS.iter().map(|(n, _)| *n).collect();
                format!("-O {name:?}: not a field Berth shows ({})", names.join(","))
            })?;
        let right = rest.starts_with('.');
        let rest = rest.strip_prefix('.').unwrap_or(rest);
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let suffix = &rest[digits.len()..];
        let width = if digits.is_empty() {
            if right {
                return Err(format!(
                    "-O {item:?}: `.` (right alignment) needs a size, as in {name}:.10"
                ));
            }
            20
        } else {
            digits
                .parse::<usize>()
                .ok()
                .filter(|w| *w <= 1024)
                .ok_or_else(|| format!("-O {item:?}: the size is not a number up to 1024"))?
        };
        parts.push(SinfoPart::Field {
            kind,
            width: Some(width),
            right,
        });
        if !suffix.is_empty() {
            parts.push(SinfoPart::Literal(suffix.to_string()));
        }
    }
    if parts.is_empty() {
        return Err("-O: no field given".to_string());
    }
    Ok(Layout(parts))
}

/// `jobs` in `layout`, with the header line unless `header` is false. Lines end in a
/// newline, trailing spaces trimmed.
pub fn squeue_layout_table(
    layout: &Layout,
    jobs: &[QueueJob],
    now: DateTime<Utc>,
    header: bool,
) -> String {
    percent_table(
        &layout.0,
        &headers(),
        jobs,
        |k, job| value(k, job, now),
        header,
    )
}

/// `jobs` in squeue's `-o FORMAT` (`%.18i %.9P %j`), with the header line unless
/// `header` is false. Lines end in a newline, trailing spaces trimmed.
///
/// # Errors
/// A message naming a letter Berth has no value for, or a format cut short.
pub fn squeue_formatted(
    format: &str,
    jobs: &[QueueJob],
    now: DateTime<Utc>,
    header: bool,
) -> Result<String, String> {
    Ok(squeue_layout_table(
        &parse_format(format)?,
        jobs,
        now,
        header,
    ))
}

/// One `-S` key: a field letter, descending when written with `-`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SortKey {
    /// The `-o` letter of the field.
    pub field: char,
    /// `-x`: largest first.
    pub descending: bool,
}

/// The fields of `GET /v1/queue` (beside `id` and `state`) that squeue's default table
/// ([`crate::format::squeue_table`]) prints and its default order ([`DEFAULT_SORT`]) and
/// `-r`, `-w` read: the id's array parts, partition, name, user, the run time's start and
/// end, nodes, node list or reason, priority.
pub const DEFAULT_FIELDS: &str = "name,user,partition,reason,start_time,end_time,num_nodes,\
     nodelist,priority,array_job_id,array_task_id,array_tasks_pending,array_max_running";

/// squeue's default order, `P,t,-p`: by partition, then state (pending first), then
/// priority, highest first.
pub const DEFAULT_SORT: &str = "P,t,-p";

/// Reads squeue's `-S` list (`-t,u`, `+P,-p`, `i`): field letters of `-o`, each
/// preceded by `+` (ascending, the default) or `-` (descending).
///
/// # Errors
/// A message naming a letter Berth cannot sort by.
pub fn parse_sort(spec: &str) -> Result<Vec<SortKey>, String> {
    let mut keys = Vec::new();
    let mut descending = false;
    for c in spec.chars() {
        match c {
            ',' | ' ' => {}
            '+' => descending = false,
            '-' => descending = true,
            c if FIELDS.iter().any(|(k, _)| *k == c) => {
                keys.push(SortKey {
                    field: c,
                    descending,
                });
                descending = false;
            }
            c => {
                let letters: String = FIELDS.iter().map(|(k, _)| *k).collect();
                return Err(format!(
                    "-S {spec:?}: {c:?} is not a field Berth sorts by (one of {letters})"
                ));
            }
        }
    }
    Ok(keys)
}

/// Where a state falls in Slurm's order of job states (pending first, then running …).
fn state_rank(state: JobState) -> usize {
    JobState::ALL
        .iter()
        .position(|s| *s == state)
        .unwrap_or(usize::MAX)
}

/// Compares two jobs on one field: numbers and times as such, states in Slurm's order;
/// `None` for the fields compared as their text ([`sort_text`]).
fn compare(field: char, a: &QueueJob, b: &QueueJob, now: DateTime<Utc>) -> Option<Ordering> {
    Some(match field {
        'A' => a.id.cmp(&b.id),
        'i' | 'F' => (a.array_job_id.unwrap_or(a.id), a.array_task_id, a.id).cmp(&(
            b.array_job_id.unwrap_or(b.id),
            b.array_task_id,
            b.id,
        )),
        'K' => a.array_task_id.cmp(&b.array_task_id),
        'T' | 't' => state_rank(a.state).cmp(&state_rank(b.state)),
        'M' => run_seconds(a, now).cmp(&run_seconds(b, now)),
        'l' => a
            .time_limit
            .unwrap_or(u64::MAX)
            .cmp(&b.time_limit.unwrap_or(u64::MAX)),
        'L' => {
            let left = |j: &QueueJob| {
                j.time_limit
                    .map_or(u64::MAX, |l| l.saturating_sub(run_seconds(j, now)))
            };
            left(a).cmp(&left(b))
        }
        'D' => a.num_nodes.cmp(&b.num_nodes),
        'C' => a.num_cpus.cmp(&b.num_cpus),
        'b' => a.gpus_per_node.cmp(&b.gpus_per_node),
        'S' => a
            .start_time
            .or(a.expected_start)
            .cmp(&b.start_time.or(b.expected_start)),
        'V' => a.submit_time.cmp(&b.submit_time),
        'e' => a.end_time.cmp(&b.end_time),
        'p' | 'Q' => a.priority.unwrap_or(0).cmp(&b.priority.unwrap_or(0)),
        'y' => a.nice.cmp(&b.nice),
        _ => return None,
    })
}

/// The text a job is sorted by on `field` where [`compare`] has no order of its own:
/// the name, user or partition, or the field as squeue prints it.
fn sort_text(field: char, job: &QueueJob, now: DateTime<Utc>) -> std::borrow::Cow<'_, str> {
    match field {
        'j' => job.name.as_str().into(),
        'u' => job.user.as_str().into(),
        'P' => job.partition.as_str().into(),
        other => value(other, job, now).into(),
    }
}

/// Each job's place among the distinct texts of `field` (equal texts, equal places):
/// each distinct text is looked up once and only those are sorted (a queue has a few
/// partitions, users or names for thousands of jobs).
fn text_ranks(field: char, jobs: &[QueueJob], now: DateTime<Utc>) -> Vec<i64> {
    let texts: Vec<std::borrow::Cow<'_, str>> =
        jobs.iter().map(|j| sort_text(field, j, now)).collect();
    let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let first_seen: Vec<usize> = texts
        .iter()
        .map(|t| {
            let next = seen.len();
            *seen.entry(t.as_ref()).or_insert(next)
        })
        .collect();
    let mut distinct: Vec<(&str, usize)> = seen.into_iter().collect();
    distinct.sort_unstable();
    let mut place = vec![0; distinct.len()];
    for (rank, (_, seen)) in distinct.iter().enumerate() {
        place[*seen] = i64::try_from(rank).unwrap_or(i64::MAX);
    }
    first_seen.into_iter().map(|s| place[s]).collect()
}

/// Each job's value on `field` as a number that orders as [`compare`] does (texts by
/// their [`text_ranks`]), where one is cheap to have; `None` for the fields [`compare`]
/// orders pair by pair.
fn key_ranks(field: char, jobs: &[QueueJob], now: DateTime<Utc>) -> Option<Vec<i64>> {
    let first = jobs.first()?;
    if compare(field, first, first, now).is_none() {
        return Some(text_ranks(field, jobs, now));
    }
    let value: fn(&QueueJob) -> i64 = match field {
        'A' => |j| j.id,
        'T' | 't' => |j| i64::try_from(state_rank(j.state)).unwrap_or(i64::MAX),
        'p' | 'Q' => |j| j.priority.unwrap_or(0),
        'y' => |j| i64::from(j.nice),
        _ => return None,
    };
    Some(jobs.iter().map(value).collect())
}

/// Sorts `jobs` by `keys` (the first key first; jobs equal on every key keep their
/// order). Each job's value on a key is worked out once where it can be ([`key_ranks`])
/// and the jobs' places are sorted, not the jobs themselves: sorting 10,000 jobs by
/// squeue's default keys compared partition names some 140,000 times and moved whole
/// jobs as often, a fifth of squeue's time.
pub fn sort_jobs(jobs: &mut [QueueJob], keys: &[SortKey], now: DateTime<Utc>) {
    let ranks: Vec<Option<Vec<i64>>> = keys.iter().map(|k| key_ranks(k.field, jobs, now)).collect();
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by(|&a, &b| {
        keys.iter()
            .zip(&ranks)
            .map(|(k, ranks)| {
                let o = match ranks {
                    Some(ranks) => ranks[a].cmp(&ranks[b]),
                    None => compare(k.field, &jobs[a], &jobs[b], now).unwrap_or(Ordering::Equal),
                };
                if k.descending {
                    o.reverse()
                } else {
                    o
                }
            })
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    });
    // In place, one cycle of the permutation at a time (place `k` takes the job at
    // `order[k]`; a place done is marked `order[k] == k`): no second list of jobs.
    for start in 0..order.len() {
        let mut k = start;
        loop {
            let from = order[k];
            order[k] = k;
            if from == start {
                break;
            }
            jobs.swap(k, from);
            k = from;
        }
    }
}

/// The header of [`steps_table`], squeue `-s`'s default format
/// (`%.15i %.8j %.9P %.8u %.9M %N`).
pub const STEPS_HEADER: &str = "         STEPID     NAME PARTITION     USER      TIME NODELIST";

/// squeue `-s`: one line per running step of `jobs` (each job with its steps): `5.0`
/// (or `5_3.0` for an array task), the step's name (its program's file name), the job's
/// partition and user, how long the step has run at `now`, and its nodes. `header`: the
/// header line first.
pub fn steps_table(jobs: &[(QueueJob, Vec<Step>)], now: DateTime<Utc>, header: bool) -> String {
    let right = |v: &str, w: usize| crate::format::field(v, w, true);
    let mut out = String::new();
    if header {
        out.push_str(STEPS_HEADER);
        out.push('\n');
    }
    for (job, steps) in jobs {
        for step in steps.iter().filter(|s| s.state == StepState::Running) {
            let name = step
                .command
                .first()
                .map(|c| c.rsplit('/').next().unwrap_or(c).to_string())
                .unwrap_or_default();
            let id = match (job.array_job_id, job.array_task_id) {
                (Some(a), Some(t)) => format!("{a}_{t}.{}", step.step_id),
                _ => format!("{}.{}", job.id, step.step_id),
            };
            let ran = (step.end_time.unwrap_or(now) - step.created_at)
                .num_seconds()
                .max(0) as u64;
            let line = format!(
                "{} {} {} {} {} {}",
                right(&id, 15),
                right(&name, 8),
                right(&job.partition, 9),
                right(&job.user, 8),
                right(&format_duration(ran), 9),
                step.nodelist
            );
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
    out
}

/// Reads squeue `-s`'s optional step list (`5.0,6.1`, or `5` for every step of job 5):
/// (job, step) pairs, `None` for every step.
///
/// # Errors
/// A message naming the item that is not a step id.
pub fn parse_step_ids(list: &str) -> Result<Vec<(i64, Option<u32>)>, String> {
    list.split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|item| {
            let item = item.trim();
            let bad = || format!("-s {item:?}: not a step id (`5.0`, or `5` for every step)");
            match item.split_once('.') {
                Some((j, s)) => Ok((
                    j.parse().map_err(|_| bad())?,
                    Some(s.parse().map_err(|_| bad())?),
                )),
                None => Ok((item.parse().map_err(|_| bad())?, None)),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_core::spec::JobSpec;
    use berth_core::wire::Job;

    fn job(id: i64) -> QueueJob {
        let job: Job = serde_json::from_value(serde_json::json!({
            "id": id, "name": "train", "user": "vera", "account": "ml", "partition": "gpu",
            "qos": "normal", "state": "PENDING", "reason": "Priority", "num_nodes": 1,
            "num_tasks": 1, "gpus_per_node": 2, "time_limit": 3600, "restart_count": 0,
            "submit_time": "2026-12-01T10:00:00Z", "allocations": [], "exit_code": null,
            "spec": serde_json::to_value(JobSpec::default()).unwrap(),
            "environment": {}, "output_truncated": false, "nice": 0,
        }))
        .unwrap();
        QueueJob::from(&job)
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
        // A task its master still holds: `10_4` is a line of its own, `10` the master's.
        let mut master = job(10);
        master.array_job_id = Some(10);
        master.array_tasks_pending = Some("3-5".into());
        let shown = |list: &str| -> Vec<String> {
            let jobs = vec![job(7), master.clone(), task.clone()];
            select_jobs(jobs, &parse_job_ids(list).unwrap())
                .iter()
                .map(job_id_display)
                .collect()
        };
        assert_eq!(shown("10_4"), ["10_4"]);
        assert_eq!(shown("10_5,7,10_2,10_3"), ["7", "10_3", "10_5", "10_2"]);
        assert_eq!(shown("10"), ["10_[3-5]", "10_2"]);
        assert!(shown("10_6").is_empty());
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

    #[test]
    fn array_limits_print_inside_the_brackets() {
        let mut master = job(10);
        master.array_job_id = Some(10);
        master.array_tasks_pending = Some("4-9".into());
        master.array_max_running = Some(2);
        assert_eq!(job_id_display(&master), "10_[4-9%2]");
        let now = "2026-12-01T11:00:00Z".parse().unwrap();
        assert_eq!(
            squeue_formatted("%K", &[master], now, false).unwrap(),
            "4-9%2\n"
        );
    }

    #[test]
    fn long_formats_take_names_sizes_alignment_and_suffixes() {
        let now = "2026-12-01T11:00:00Z".parse().unwrap();
        let layout = parse_long_format("jobid:5,Name:.8|,STATE,tres-per-node:14").unwrap();
        let text = squeue_layout_table(&layout, &[job(7)], now, true);
        assert_eq!(
            text,
            format!(
                "JOBID    NAME|{:<20}TRES_PER_NODE\n7       train|{:<20}gres/gpu:2\n",
                "STATE", "PENDING"
            )
        );
        // Right alignment needs a size, as in Slurm.
        let err = parse_long_format("Name:.").unwrap_err();
        assert!(err.contains("needs a size"), "{err}");
        let err = parse_long_format("JobID,Command").unwrap_err();
        assert!(
            err.contains("\"Command\"") && err.contains("not a field Berth shows"),
            "{err}"
        );
        let err = parse_long_format("Name:99999").unwrap_err();
        assert!(err.contains("not a number up to 1024"), "{err}");
    }

    #[test]
    fn sorting_many_jobs_agrees_with_comparing_each_pair() {
        let now = "2026-12-01T11:00:00Z".parse().unwrap();
        let states = [JobState::Pending, JobState::Running, JobState::Suspended];
        let jobs: Vec<QueueJob> = (0..500)
            .map(|i| {
                let mut j = job(i);
                j.partition = ["gpu", "cpu", "a100", "gpu-long"][(i * 7 % 4) as usize].into();
                j.name = format!("n{}", i * 13 % 17);
                j.user = format!("u{}", i * 5 % 11);
                j.state = states[(i % 3) as usize];
                j.reason = Some(format!("r{}", i % 5));
                j.priority = Some(i * 7919 % 97);
                j
            })
            .collect();
        let ids = |jobs: &[QueueJob]| jobs.iter().map(|j| j.id).collect::<Vec<_>>();
        for spec in [
            DEFAULT_SORT,
            "-j,u",
            "u,-p,i",
            "r,-i",
            "-P,j,-u,t",
            "-A",
            "y,-T,Q",
        ] {
            let keys = parse_sort(spec).unwrap();
            let mut expected = jobs.clone();
            expected.sort_by(|a, b| {
                keys.iter()
                    .map(|k| {
                        let o = compare(k.field, a, b, now).unwrap_or_else(|| {
                            sort_text(k.field, a, now).cmp(&sort_text(k.field, b, now))
                        });
                        if k.descending {
                            o.reverse()
                        } else {
                            o
                        }
                    })
                    .find(|o| o.is_ne())
                    .unwrap_or(Ordering::Equal)
            });
            let mut sorted = jobs.clone();
            sort_jobs(&mut sorted, &keys, now);
            assert_eq!(ids(&sorted), ids(&expected), "{spec}");
            assert_ne!(ids(&sorted), ids(&jobs), "{spec}");
        }
    }

    #[test]
    fn sorting_follows_slurms_keys_and_default() {
        let now = "2026-12-01T11:00:00Z".parse().unwrap();
        let mut low = job(1);
        low.priority = Some(10);
        let mut high = job(2);
        high.priority = Some(500);
        let mut running = job(3);
        running.state = JobState::Running;
        running.priority = None;
        let mut other = job(4);
        other.partition = "cpu".into();
        let mut jobs = vec![running, low, high, other];
        sort_jobs(&mut jobs, &parse_sort(DEFAULT_SORT).unwrap(), now);
        let ids: Vec<i64> = jobs.iter().map(|j| j.id).collect();
        // Partition cpu first; then in gpu pending before running, higher priority first.
        assert_eq!(ids, [4, 2, 1, 3]);
        sort_jobs(&mut jobs, &parse_sort("-i").unwrap(), now);
        let ids: Vec<i64> = jobs.iter().map(|j| j.id).collect();
        assert_eq!(ids, [4, 3, 2, 1]);
        assert_eq!(
            parse_sort("-t,+u").unwrap(),
            [
                SortKey {
                    field: 't',
                    descending: true
                },
                SortKey {
                    field: 'u',
                    descending: false
                }
            ]
        );
        let err = parse_sort("t,W").unwrap_err();
        assert!(err.contains("'W'") && err.contains("not a field"), "{err}");
    }

    #[test]
    fn steps_print_with_their_job_and_run_time() {
        let now: DateTime<Utc> = "2026-12-01T11:00:00Z".parse().unwrap();
        let mut running = job(7);
        running.state = JobState::Running;
        let step = |id: u32, state: StepState| Step {
            job_id: 7,
            run: 0,
            step_id: id,
            state,
            command: vec!["/usr/bin/python3".into(), "train.py".into()],
            nodelist: "node-[1-2]".into(),
            kill_on_bad_exit: false,
            pty: false,
            kill_reason: None,
            exit_code: None,
            created_at: "2026-12-01T10:58:55Z".parse().unwrap(),
            end_time: None,
            tasks: vec![],
        };
        let text = steps_table(
            &[(
                running,
                vec![step(0, StepState::Completed), step(1, StepState::Running)],
            )],
            now,
            true,
        );
        assert_eq!(
            text,
            format!("{STEPS_HEADER}\n            7.1  python3       gpu     vera      1:05 node-[1-2]\n")
        );
        assert_eq!(parse_step_ids("5.0,6").unwrap(), [(5, Some(0)), (6, None)]);
        assert!(parse_step_ids("5.x").unwrap_err().contains("\"5.x\""));
    }
}
