//! `scancel` (`berth cancel`): cancels the jobs named by id (`5`, an array task `5_3`, a
//! range of tasks `5_[1-3]`) and/or by Slurm's filters (`-u`, `-t`, `-n`, `-p`, `-A`,
//! `-q`, `-w`, `-R`, `--me`), ids AND filters when both are given, as Slurm does.
//!
//! Messages and exit status follow Slurm's: silent on success; for each job that could
//! not be cancelled `scancel: error: Kill job error on job id 9999: Invalid job id
//! specified` and status 1. A job you may not touch (another user's) is invisible to you
//! in Berth, so the api answers it as an invalid id; filters list only the jobs you may
//! see, so `scancel -u root` as an ordinary user cancels nothing and says why.
//!
//! A step id (`5.0`) cancels that job step alone (`POST /v1/jobs/{id}/steps/{step}/cancel`).
//!
//! Refused by name: `-s/--signal` and `-b/--batch` (Berth's workers deliver only
//! cancellation, SIGTERM then SIGKILL, not an arbitrary signal that leaves the job
//! running), `-c/--cron`, `-M/--clusters`, `--sibling`, `--wckey`.

use crate::client::{problem_message, Client, ClientError};
use crate::job_control::JobRef;
use berth_core::hostlist;
use berth_core::state::JobState;
use berth_core::wire::{Job, JobListQuery};
use std::io::{BufRead, Write};

/// scancel's options (Slurm's names).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ScancelArgs {
    /// Jobs: `5`, an array task `5_3`, tasks `5_[1-3]`; with filters, only those of
    /// these that also match every filter.
    #[arg(value_name = "JOB_ID")]
    pub ids: Vec<String>,
    /// Only jobs of this user.
    #[arg(short = 'u', long = "user")]
    pub user: Option<String>,
    /// Only your own jobs.
    #[arg(long)]
    pub me: bool,
    /// Only jobs in this state: PENDING, RUNNING or SUSPENDED (PD, R, S).
    #[arg(short = 't', long = "state")]
    pub state: Option<String>,
    /// Only jobs with this name.
    #[arg(short = 'n', long = "name", visible_alias = "jobname")]
    pub name: Option<String>,
    /// Only jobs of this partition.
    #[arg(short = 'p', long = "partition")]
    pub partition: Option<String>,
    /// Only jobs charged to this account.
    #[arg(short = 'A', long = "account")]
    pub account: Option<String>,
    /// Only jobs of this QOS.
    #[arg(short = 'q', long = "qos")]
    pub qos: Option<String>,
    /// Only jobs running on any of these nodes (a host list: `node-[1-4]`).
    #[arg(short = 'w', long = "nodelist")]
    pub nodelist: Option<String>,
    /// Only jobs that use this reservation.
    #[arg(short = 'R', long = "reservation")]
    pub reservation: Option<String>,
    /// Ask before each job: `Cancel job_id=5 name=x partition=p [y/n]?`.
    #[arg(short = 'i', long = "interactive")]
    pub interactive: bool,
    /// Signal every step and the batch shell: what a cancellation does in Berth anyway.
    #[arg(short = 'f', long = "full")]
    pub full: bool,
    /// Do not stage out burst buffer data: Berth has none, so nothing changes.
    #[arg(long)]
    pub hurry: bool,
    /// Send the request through the controller: Berth's requests always go to the api.
    #[arg(long)]
    pub ctld: bool,
    /// Print what is done (`scancel: Terminating job 5`).
    #[arg(short = 'v', long = "verbose")]
    pub verbose: bool,
    /// No error for jobs that already ended.
    #[arg(short = 'Q', long = "quiet")]
    pub quiet: bool,
    /// Refused: a signal that leaves the job running (Berth's workers deliver only
    /// cancellation).
    #[arg(short = 's', long = "signal", value_name = "SIGNAL")]
    pub signal: Option<String>,
    /// Refused: signal only the batch shell.
    #[arg(short = 'b', long = "batch")]
    pub batch: bool,
    /// Refused: cron jobs (`scrontab`), which Berth has not.
    #[arg(short = 'c', long = "cron")]
    pub cron: bool,
    /// Refused: other clusters.
    #[arg(short = 'M', long = "clusters", value_name = "CLUSTERS")]
    pub clusters: Option<String>,
    /// Refused: federation siblings.
    #[arg(long, value_name = "CLUSTER")]
    pub sibling: Option<String>,
    /// Refused: workload characterization keys.
    #[arg(long, value_name = "WCKEY")]
    pub wckey: Option<String>,
}

/// The message for a Slurm option Berth refuses: `scancel: --signal is not supported by
/// Berth: <why>`.
pub fn refusal(command: &str, option: &str, why: &str) -> String {
    format!("{command}: {option} is not supported by Berth: {why}")
}

impl ScancelArgs {
    /// The first option given that Berth refuses, as a message naming it.
    pub fn refused(&self) -> Option<String> {
        let r = |o: &str, why: &str| Some(refusal("scancel", o, why));
        if self.signal.is_some() {
            return r(
                "-s/--signal",
                "workers deliver only cancellation (SIGTERM, then SIGKILL after the \
                 kill wait); a job's own time-limit warning is sbatch --signal",
            );
        }
        if self.batch {
            return r(
                "-b/--batch",
                "workers deliver only cancellation of the whole job",
            );
        }
        if self.cron {
            return r("-c/--cron", "there are no cron jobs (scrontab)");
        }
        if self.clusters.is_some() {
            return r("-M/--clusters", "one api serves one cluster");
        }
        if self.sibling.is_some() {
            return r("--sibling", "there is no federation");
        }
        if self.wckey.is_some() {
            return r("--wckey", "there are no workload characterization keys");
        }
        None
    }

    fn has_filters(&self) -> bool {
        self.user.is_some()
            || self.me
            || self.state.is_some()
            || self.name.is_some()
            || self.partition.is_some()
            || self.account.is_some()
            || self.qos.is_some()
            || self.nodelist.is_some()
            || self.reservation.is_some()
    }
}

/// One id of scancel's command line, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CancelId {
    /// `5` (a job, or every task of array 5) or `5_3` (one task).
    One(JobRef),
    /// `5_[1-3,7]`: these tasks of array 5.
    Tasks(i64, Vec<u32>),
}

/// Reads one of scancel's job ids: `5`, `5_3`, `5_[1-3,7]`.
///
/// # Errors
/// A message naming the id that is not one (step ids, `5.0`, are [`parse_step_id`]'s).
pub fn parse_cancel_id(word: &str) -> Result<CancelId, String> {
    let bad = || format!("scancel: error: Invalid job id {word}");
    if let Some((job, tasks)) = word.split_once("_[") {
        let tasks = tasks.strip_suffix(']').ok_or_else(bad)?;
        let tasks = tasks.split('%').next().unwrap_or(tasks);
        let indices = crate::squeue::task_indices(tasks).ok_or_else(bad)?;
        return Ok(CancelId::Tasks(job.parse().map_err(|_| bad())?, indices));
    }
    word.parse::<JobRef>().map(CancelId::One).map_err(|_| bad())
}

/// Whether `job` is one that `ids` name.
fn named(job: &Job, ids: &[CancelId]) -> bool {
    ids.iter().any(|id| match id {
        CancelId::One(JobRef { id, task: None }) => job.id == *id || job.array_job_id == Some(*id),
        CancelId::One(JobRef { id, task: Some(t) }) => {
            job.array_job_id == Some(*id) && job.array_task_id == Some(*t)
        }
        CancelId::Tasks(id, tasks) => {
            job.array_job_id == Some(*id) && job.array_task_id.is_some_and(|t| tasks.contains(&t))
        }
    })
}

/// scancel `-t`: the states a job may be cancelled in, as the api's state list.
///
/// # Errors
/// Slurm's message for any other state.
pub fn cancel_states(list: &str) -> Result<String, String> {
    let mut out = Vec::new();
    for s in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match s.parse::<JobState>() {
            Ok(st @ (JobState::Pending | JobState::Running | JobState::Suspended)) => {
                out.push(st.as_str())
            }
            _ => return Err(format!("scancel: error: Invalid job state specified: {s}")),
        }
    }
    if out.is_empty() {
        return Err(
            "scancel: error: -t/--state needs a state (PENDING, RUNNING, SUSPENDED)".into(),
        );
    }
    Ok(out.join(","))
}

/// What one cancellation names, as the api's batch route takes it: `5`, `5_3`; an
/// array's pending tasks one by one when a state filter leaves its running ones alone.
fn batch_names(job: &Job, whole_arrays: bool) -> Vec<String> {
    match (
        job.array_job_id,
        job.array_task_id,
        &job.array_tasks_pending,
    ) {
        (Some(a), Some(t), _) => vec![format!("{a}_{t}")],
        (Some(a), None, Some(pending)) if !whole_arrays => crate::squeue::task_indices(pending)
            .unwrap_or_default()
            .into_iter()
            .map(|t| format!("{a}_{t}"))
            .collect(),
        _ => vec![job.id.to_string()],
    }
}

/// Slurm's wording of an api refusal of one cancellation.
fn kill_error(status: u16, detail: &str) -> String {
    match status {
        404 | 400 => "Invalid job id specified".to_string(),
        403 => "Access/permission denied".to_string(),
        _ => detail.to_string(),
    }
}

/// Asks `Cancel job_id=5 name=x partition=p [y/n]? ` on stderr; true on `y`/`yes`.
fn confirm(name: &str, job: Option<&Job>) -> bool {
    match job {
        Some(j) => eprint!(
            "Cancel job_id={name} name={} partition={} [y/n]? ",
            j.name, j.partition
        ),
        None => eprint!("Cancel job_id={name} [y/n]? "),
    }
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).is_err() {
        return false;
    }
    matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

/// `scancel ARGS`: the exit status (0, or 1 when any job could not be cancelled or the
/// command line is wrong).
///
/// # Errors
/// An option Berth refuses, named; no job named; the api unreachable.
pub async fn run(client: &Client, args: &ScancelArgs) -> anyhow::Result<i32> {
    if let Some(message) = args.refused() {
        anyhow::bail!(message);
    }
    if args.verbose && args.quiet {
        anyhow::bail!("scancel: error: -Q/--quiet and -v/--verbose cannot be used together");
    }
    let (steps, words): (Vec<String>, Vec<String>) = args
        .ids
        .iter()
        .flat_map(|w| {
            w.split(',')
                .filter(|s| !s.is_empty())
                .map(|s| s.trim().to_string())
        })
        .partition(|w| parse_step_id(w).is_some());
    let mut status = 0;
    for word in &steps {
        status = status.max(cancel_step(client, args, word).await?);
    }
    if !steps.is_empty() && words.is_empty() && !args.has_filters() {
        return Ok(status);
    }
    Ok(status.max(cancel_jobs(client, args, &words).await?))
}

/// `JOB.STEP` (`5.0`): a job step's id.
pub fn parse_step_id(word: &str) -> Option<(i64, u32)> {
    let (job, step) = word.split_once('.')?;
    Some((job.parse().ok()?, step.parse().ok()?))
}

/// Cancels one job step (`POST /v1/jobs/{id}/steps/{step}/cancel`); 1 when refused or
/// already ended, with Slurm's message.
async fn cancel_step(client: &Client, args: &ScancelArgs, word: &str) -> anyhow::Result<i32> {
    let Some((job, step)) = parse_step_id(word) else {
        return Ok(1);
    };
    if args.verbose {
        eprintln!("scancel: Terminating step {word}");
    }
    let answer: Result<berth_core::step::Step, ClientError> = client
        .post_json(
            &format!("/v1/jobs/{job}/steps/{step}/cancel"),
            &serde_json::json!({}),
        )
        .await;
    match answer {
        Ok(s)
            if s.state == berth_core::step::StepState::Running
                || s.state == berth_core::step::StepState::Cancelled =>
        {
            Ok(0)
        }
        Ok(_) if args.quiet => Ok(0),
        Ok(_) => {
            eprintln!(
                "scancel: error: Kill job error on job step id {word}: Job/step already \
                 completing or completed"
            );
            Ok(1)
        }
        Err(ClientError::Problem { status, problem }) => {
            let detail = berth_core::text::escape(&problem_message(&problem)).into_owned();
            eprintln!(
                "scancel: error: Kill job error on job step id {word}: {}",
                kill_error(status, &detail)
            );
            Ok(1)
        }
        Err(e) => Err(e.into()),
    }
}

/// Cancels the jobs `words` and the filters name (ids AND filters).
async fn cancel_jobs(client: &Client, args: &ScancelArgs, words: &[String]) -> anyhow::Result<i32> {
    let ids = words
        .iter()
        .map(|w| parse_cancel_id(w))
        .collect::<Result<Vec<_>, _>>()
        .map_err(anyhow::Error::msg)?;
    if ids.is_empty() && !args.has_filters() {
        anyhow::bail!("scancel: error: No job identification provided");
    }
    let states = args
        .state
        .as_deref()
        .map(cancel_states)
        .transpose()
        .map_err(anyhow::Error::msg)?;
    // (name, the job when known): what to cancel, in order.
    let mut targets: Vec<(String, Option<Job>)> = Vec::new();
    let mut nothing_matched = None;
    if args.has_filters() {
        let me = if args.me || args.user.is_some() {
            let who: serde_json::Value = client.get_json("/v1/whoami").await?;
            who["user"].as_str().map(str::to_string)
        } else {
            None
        };
        let user = if args.me {
            me.clone()
        } else {
            args.user.clone()
        };
        let query = JobListQuery {
            state: Some(
                states
                    .clone()
                    .unwrap_or_else(|| "PENDING,RUNNING,SUSPENDED".to_string()),
            ),
            user: user.clone(),
            partition: args.partition.clone(),
            account: args.account.clone(),
            qos: args.qos.clone(),
            name: args.name.clone(),
            limit: Some(1000),
            ..Default::default()
        };
        let on_nodes = match &args.nodelist {
            Some(list) => Some(
                hostlist::expand(list)
                    .map_err(|e| anyhow::anyhow!("scancel: error: -w/--nodelist {list:?}: {e}"))?,
            ),
            None => None,
        };
        let jobs = client.job_list_all(&query).await?;
        let whole_arrays = states.is_none();
        for job in jobs {
            if !ids.is_empty() && !named(&job, &ids) {
                continue;
            }
            if let Some(nodes) = &on_nodes {
                let placed = job
                    .nodelist
                    .as_deref()
                    .and_then(|l| hostlist::expand(l).ok())
                    .unwrap_or_default();
                if !placed.iter().any(|n| nodes.contains(n)) {
                    continue;
                }
            }
            if let Some(r) = &args.reservation {
                if job.spec.reservation.as_deref() != Some(r.as_str()) {
                    continue;
                }
            }
            for name in batch_names(&job, whole_arrays) {
                targets.push((name, Some(job.clone())));
            }
        }
        if targets.is_empty() {
            nothing_matched = Some(match (&user, &me) {
                (Some(u), Some(me)) if u != me => format!(
                    "scancel: no active job of user {u} that you may cancel matches: in Berth \
                     you may cancel only your own jobs and those of accounts you coordinate"
                ),
                _ => "scancel: No active jobs match ALL job filters".to_string(),
            });
        }
    } else {
        for id in &ids {
            match id {
                CancelId::One(r) => targets.push((r.to_string(), None)),
                CancelId::Tasks(a, tasks) => {
                    targets.extend(tasks.iter().map(|t| (format!("{a}_{t}"), None)))
                }
            }
        }
    }
    if let Some(message) = nothing_matched {
        if args.verbose || args.user.is_some() {
            eprintln!("{message}");
        }
        return Ok(0);
    }
    if args.interactive {
        let mut kept = Vec::new();
        for (name, job) in targets {
            let job = match job {
                Some(j) => Some(j),
                None => {
                    let id = name.split('_').next().unwrap_or(&name);
                    match id.parse() {
                        Ok(id) => client.job_get(id).await.ok(),
                        Err(_) => None,
                    }
                }
            };
            if confirm(&name, job.as_ref()) {
                kept.push((name, job));
            }
        }
        targets = kept;
    }
    let names: Vec<String> = targets.into_iter().map(|(n, _)| n).collect();
    let mut status = 0;
    for chunk in names.chunks(1000) {
        if args.verbose {
            for name in chunk {
                eprintln!("scancel: Terminating job {name}");
            }
        }
        let result = client.job_batch("cancel", chunk).await?;
        for item in &result.items {
            if item.status == 200 {
                let ended = item
                    .result
                    .as_ref()
                    .is_some_and(|j| j.state.is_terminal() && j.state != JobState::Cancelled);
                if ended && !args.quiet {
                    eprintln!(
                        "scancel: error: Kill job error on job id {}: Job/step already \
                         completing or completed",
                        item.job
                    );
                    status = 1;
                }
                continue;
            }
            let detail = item
                .problem
                .as_ref()
                .map(problem_message)
                .unwrap_or_else(|| format!("the api answered HTTP {}", item.status));
            let detail = berth_core::text::escape(&detail).into_owned();
            eprintln!(
                "scancel: error: Kill job error on job id {}: {}",
                item.job,
                kill_error(item.status, &detail)
            );
            status = 1;
        }
    }
    Ok(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_tasks_ranges_and_steps() {
        assert_eq!(parse_cancel_id("5"), Ok(CancelId::One(JobRef::from(5))));
        assert_eq!(
            parse_cancel_id("5_3"),
            Ok(CancelId::One(JobRef {
                id: 5,
                task: Some(3)
            }))
        );
        assert_eq!(
            parse_cancel_id("5_[1-3,7]"),
            Ok(CancelId::Tasks(5, vec![1, 2, 3, 7]))
        );
        assert_eq!(
            parse_cancel_id("5_[4-9%2]"),
            Ok(CancelId::Tasks(5, vec![4, 5, 6, 7, 8, 9]))
        );
        assert_eq!(parse_step_id("5.0"), Some((5, 0)));
        assert_eq!(parse_step_id("5_3"), None);
        assert!(parse_cancel_id("5.x").is_err());
        assert_eq!(
            parse_cancel_id("x5").unwrap_err(),
            "scancel: error: Invalid job id x5"
        );
    }

    #[test]
    fn states_are_those_a_job_can_be_cancelled_in() {
        assert_eq!(cancel_states("PD,r").unwrap(), "PENDING,RUNNING");
        assert_eq!(
            cancel_states("COMPLETED").unwrap_err(),
            "scancel: error: Invalid job state specified: COMPLETED"
        );
    }
}
