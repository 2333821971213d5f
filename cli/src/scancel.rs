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
//! `-s/--signal=SIG` (a name, `USR1` or `SIGUSR1`, or a number) sends SIG instead and the
//! job goes on running (`POST /v1/jobs/{id}/signal`): to the tasks of every running step
//! of the job, not the batch shell; with `-b/--batch` to the batch shell alone; with
//! `-f/--full` to the batch shell, what it started and every step; to one step's tasks
//! for `5.0`. `-s KILL`, or `-b`/`-f` without `-s`, cancel as usual. Filters select the
//! running jobs to signal (pending ones too when `-t` names them, which Slurm refuses a
//! signal: `Job can not be altered now, try again later`).
//!
//! `-M/--clusters` (or `SLURM_CLUSTERS`) takes `all` or this cluster's name.
//!
//! Refused by name: `-c/--cron`, `--sibling`, `--wckey`.

use crate::client::{problem_message, Client, ClientError};
use crate::job_control::JobRef;
use berth_core::hostlist;
use berth_core::signal::{JobSignal, JobSignalQueued, SignalSpec};
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
    /// With `-s`: signal the batch shell, everything it started and every step (without
    /// `-s`, a cancellation, which stops them all anyway).
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
    /// Send this signal (a name, `USR1` or `SIGUSR1`, or a number) instead of cancelling:
    /// the job goes on running. `KILL` cancels.
    #[arg(short = 's', long = "signal", value_name = "SIGNAL")]
    pub signal: Option<String>,
    /// With `-s`: signal the batch shell alone, not its children nor the steps.
    #[arg(short = 'b', long = "batch")]
    pub batch: bool,
    /// Refused: cron jobs (`scrontab`), which Berth has not.
    #[arg(short = 'c', long = "cron")]
    pub cron: bool,
    /// `all` or this cluster's name (Berth is one cluster; another name is refused);
    /// `SLURM_CLUSTERS` when absent.
    #[arg(
        short = 'M',
        long = "clusters",
        visible_alias = "cluster",
        value_name = "CLUSTERS",
        allow_hyphen_values = true
    )]
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
        if self.cron {
            return r("-c/--cron", "there are no cron jobs (scrontab)");
        }
        if self.sibling.is_some() {
            return r("--sibling", "there is no federation");
        }
        if self.wckey.is_some() {
            return r("--wckey", "there are no workload characterization keys");
        }
        None
    }

    /// The signal `-s` names, when it is one other than KILL (then the job is signalled,
    /// not cancelled).
    ///
    /// # Errors
    /// Slurm's message for a name or number that is no signal.
    pub fn signal_number(&self) -> Result<Option<i32>, String> {
        let Some(text) = &self.signal else {
            return Ok(None);
        };
        match berth_core::signal::parse_signal(text) {
            Some(berth_core::signal::SIGKILL) => Ok(None),
            Some(number) => Ok(Some(number)),
            None => Err(format!(
                "scancel: error: Unknown job signal: {}",
                berth_core::text::escape(text)
            )),
        }
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
    crate::clusters::check(
        client,
        "scancel",
        args.clusters.as_deref(),
        Some("SLURM_CLUSTERS"),
    )
    .await?;
    let signal = args.signal_number().map_err(anyhow::Error::msg)?;
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
        status = status.max(match signal {
            Some(signal) => signal_step(client, args, word, signal).await?,
            None => cancel_step(client, args, word).await?,
        });
    }
    if !steps.is_empty() && words.is_empty() && !args.has_filters() {
        return Ok(status);
    }
    Ok(status.max(match signal {
        Some(signal) => signal_jobs(client, args, &words, signal).await?,
        None => cancel_jobs(client, args, &words).await?,
    }))
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

/// The jobs `words` and the filters name (ids AND filters), in order, each with its
/// record when the filters fetched it, confirmed one by one under `-i`; `None` when the
/// filters matched nothing (said under `-v` or `-u`). Filters look at `default_states`
/// unless `-t` names others.
async fn targets(
    client: &Client,
    args: &ScancelArgs,
    words: &[String],
    default_states: &str,
) -> anyhow::Result<Option<Vec<(String, Option<Job>)>>> {
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
            state: Some(states.clone().unwrap_or_else(|| default_states.to_string())),
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
        return Ok(None);
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
    Ok(Some(targets))
}

/// Cancels the jobs `words` and the filters name (ids AND filters).
async fn cancel_jobs(client: &Client, args: &ScancelArgs, words: &[String]) -> anyhow::Result<i32> {
    let Some(targets) = targets(client, args, words, "PENDING,RUNNING,SUSPENDED").await? else {
        return Ok(0);
    };
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

/// Slurm's wording of an api refusal of a signal: its job (or step) is unknown or not
/// the caller's, not running yet (Slurm's `ESLURM_TRANSITION_STATE_NO_UPDATE`), or over.
fn signal_error(status: u16, problem: &berth_core::wire::Problem) -> String {
    match (status, problem.code.as_str()) {
        (409, "job_not_running") => "Job can not be altered now, try again later".to_string(),
        (409, "job_ended" | "step_ended") => "Job/step already completing or completed".to_string(),
        (400, _) if problem.field.as_deref() == Some("signal") => {
            berth_core::text::escape(&problem_message(problem)).into_owned()
        }
        _ => kill_error(status, &berth_core::text::escape(&problem_message(problem))),
    }
}

/// `POST /v1/jobs/{id}/signal`: `Ok(Ok(()))` once queued, `Ok(Err(message))` when the
/// api refused (Slurm's wording).
async fn send_signal(
    client: &Client,
    id: i64,
    request: &JobSignal,
) -> Result<Result<(), String>, ClientError> {
    let answer: Result<JobSignalQueued, ClientError> = client
        .post_json(&format!("/v1/jobs/{id}/signal"), request)
        .await;
    match answer {
        Ok(_) => Ok(Ok(())),
        Err(ClientError::Problem { status, problem }) => Ok(Err(signal_error(status, &problem))),
        Err(e) => Err(e),
    }
}

/// `scancel -s SIG 5.0`: signals one step's tasks; 1 when refused, with Slurm's message.
async fn signal_step(
    client: &Client,
    args: &ScancelArgs,
    word: &str,
    signal: i32,
) -> anyhow::Result<i32> {
    let Some((job, step)) = parse_step_id(word) else {
        return Ok(1);
    };
    if args.verbose {
        eprintln!("scancel: Signal {signal} to step {word}");
    }
    let request = JobSignal {
        signal: SignalSpec::Number(i64::from(signal)),
        batch: false,
        full: false,
        step: Some(step),
        array_task: None,
    };
    match send_signal(client, job, &request).await? {
        Ok(()) => Ok(0),
        Err(message) => {
            eprintln!("scancel: error: Kill job error on job step id {word}: {message}");
            Ok(1)
        }
    }
}

/// `scancel -s SIG [-b|-f]`: signals the jobs `words` and the filters name (running ones
/// by default); 1 when any was refused, each with Slurm's message.
async fn signal_jobs(
    client: &Client,
    args: &ScancelArgs,
    words: &[String],
    signal: i32,
) -> anyhow::Result<i32> {
    let Some(targets) = targets(client, args, words, "RUNNING").await? else {
        return Ok(0);
    };
    let kind = if args.full {
        "full "
    } else if args.batch {
        "batch "
    } else {
        ""
    };
    let mut status = 0;
    for (name, _) in targets {
        let (id, task) = match name.split_once('_') {
            Some((id, task)) => (id.parse::<i64>(), task.parse::<u32>().ok()),
            None => (name.parse::<i64>(), None),
        };
        let Ok(id) = id else {
            eprintln!("scancel: error: Invalid job id {name}");
            status = 1;
            continue;
        };
        if args.verbose {
            eprintln!("scancel: Signal {signal} to {kind}job {name}");
        }
        let request = JobSignal {
            signal: SignalSpec::Number(i64::from(signal)),
            batch: args.batch,
            full: args.full,
            step: None,
            array_task: task,
        };
        if let Err(message) = send_signal(client, id, &request).await? {
            eprintln!("scancel: error: Kill job error on job id {name}: {message}");
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
