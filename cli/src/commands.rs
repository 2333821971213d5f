//! The client commands: each takes a [`Client`] and its options, prints what Slurm's
//! counterpart prints, and returns the process exit status.

use crate::client::Client;
use crate::format;
use crate::submit::{self, SubmitArgs};
use anyhow::Context;
use berth_core::wire::{Job, JobListQuery, OutputStream};
use std::io::Write;

/// `berth submit`: sends the job; prints `Submitted batch job <id>` (or the id alone with
/// `--parsable`); with `--wait`, streams its stdout until it ends, prints
/// `Job <id> <STATE>, exit code <n>` to stderr and returns the job's exit status.
pub async fn submit(client: &Client, args: &SubmitArgs) -> anyhow::Result<i32> {
    if !args.script_args.is_empty() {
        anyhow::bail!(
            "arguments after the script ({}) are not supported yet",
            args.script_args.join(" ")
        );
    }
    let script = submit::read_script(args)?;
    let submit_dir = std::env::current_dir().context("reading the current directory")?;
    let job = submit::build_job(args, script, &submit_dir);
    let created = client.job_create(&job, None).await?;
    if args.parsable {
        println!("{}", created.id);
    } else {
        println!("Submitted batch job {}", created.id);
    }
    std::io::stdout().flush()?;
    if !args.wait {
        return Ok(0);
    }
    let job = submit::follow_to_end(client, created.id).await?;
    let code = submit::wait_exit_code(&job);
    eprintln!("Job {} {}, exit code {}", job.id, job.state, code);
    Ok(code)
}

/// `berth queue` filters.
#[derive(Debug, Clone, Default)]
pub struct QueueOptions {
    /// Only this user's jobs.
    pub user: Option<String>,
    /// Only the caller's own jobs (`--me`).
    pub me: bool,
    /// `-j`: only these jobs (`5`, `5_3`, comma-separated).
    pub jobs: Option<String>,
    /// Only these states (comma-separated, long or compact names; `all`).
    pub state: Option<String>,
    /// Only this partition.
    pub partition: Option<String>,
    /// Only these accounts (comma-separated).
    pub account: Option<String>,
    /// Only these QOS (comma-separated).
    pub qos: Option<String>,
    /// Only jobs with this name.
    pub name: Option<String>,
    /// Every state, not only PENDING and RUNNING.
    pub all: bool,
    /// Leave the header out.
    pub noheader: bool,
    /// `-r`: an array's pending tasks one line each.
    pub array: bool,
    /// `-o`: squeue's `%` format.
    pub format: Option<String>,
    /// squeue `--start`: pending jobs with their expected start times.
    pub start: bool,
    /// `-w`: only jobs placed on any of these nodes (a host list).
    pub nodelist: Option<String>,
}

/// `berth queue`: squeue's default table (or `-o`'s format, `--start`'s), every page.
pub async fn queue(client: &Client, options: &QueueOptions) -> anyhow::Result<i32> {
    let ids = options
        .jobs
        .as_deref()
        .map(crate::squeue::parse_job_ids)
        .transpose()
        .map_err(anyhow::Error::msg)?;
    let state = match (&options.state, options.all) {
        (Some(s), _) if s.eq_ignore_ascii_case("all") => None,
        (Some(s), _) => Some(s.clone()),
        (None, true) => None,
        (None, false) if ids.is_some() => None,
        (None, false) if options.start => Some("PENDING".to_string()),
        (None, false) => Some("PENDING,RUNNING".to_string()),
    };
    let user = if options.me {
        let who: serde_json::Value = client.get_json("/v1/whoami").await?;
        who["user"].as_str().map(str::to_string)
    } else {
        options.user.clone()
    };
    let query = JobListQuery {
        state,
        user,
        partition: options.partition.clone(),
        account: options.account.clone(),
        qos: options.qos.clone(),
        name: options.name.clone(),
        limit: Some(1000),
        ..Default::default()
    };
    let mut jobs = match &ids {
        // Each named job read by its id (an array's tasks by a list), not the whole queue.
        Some(ids) => {
            let mut found = Vec::new();
            for id in ids {
                let (crate::squeue::JobIdSpec::Job(n) | crate::squeue::JobIdSpec::Task(n, _)) = *id;
                match client.job_get(n).await {
                    Ok(job) => found.push(job),
                    Err(e) if e.status() == Some(404) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            if found.iter().any(|j| j.array_job_id.is_some()) {
                found = client.job_list_all(&query).await?;
            }
            found.retain(|j| crate::squeue::job_matches(j, ids) && job_passes(j, &query));
            if found.is_empty() {
                eprintln!("slurm_load_jobs error: Invalid job id specified");
                return Ok(1);
            }
            found
        }
        None => client.job_list_all(&query).await?,
    };
    if let Some(list) = &options.nodelist {
        let wanted = berth_core::hostlist::expand(list)
            .map_err(|e| anyhow::anyhow!("squeue: -w/--nodelist {list:?}: {e}"))?;
        jobs.retain(|j| {
            j.nodelist
                .as_deref()
                .and_then(|l| berth_core::hostlist::expand(l).ok())
                .is_some_and(|placed| placed.iter().any(|n| wanted.contains(n)))
        });
    }
    if options.array {
        jobs = crate::squeue::expand_array_tasks(jobs);
    }
    let now = chrono::Utc::now();
    let table = if let Some(format) = &options.format {
        crate::squeue::squeue_formatted(format, &jobs, now, !options.noheader)
            .map_err(anyhow::Error::msg)?
    } else if options.start {
        crate::queue_start::start_table(&jobs)
    } else {
        format::squeue_table(&jobs, now)
    };
    let text = if options.noheader && options.format.is_none() {
        table.split_once('\n').map(|(_, rest)| rest).unwrap_or("")
    } else {
        table.as_str()
    };
    print!("{text}");
    Ok(0)
}

/// Whether a job read by its id also passes the list's other filters (state, user,
/// partition, account, QOS, name), as the list would have applied them.
fn job_passes(job: &Job, q: &JobListQuery) -> bool {
    let listed = |list: &Option<String>, values: &[&str]| {
        list.as_deref().is_none_or(|l| {
            l.split(',')
                .any(|v| values.iter().any(|x| v.trim().eq_ignore_ascii_case(x)))
        })
    };
    listed(&q.state, &[job.state.as_str(), job.state.compact()])
        && q.user.as_deref().is_none_or(|u| u == job.user)
        && q.partition
            .as_deref()
            .is_none_or(|p| job.partition.split(',').any(|x| x == p))
        && listed(&q.account, &[job.account.as_deref().unwrap_or("")])
        && listed(&q.qos, &[job.qos.as_deref().unwrap_or("")])
        && q.name.as_deref().is_none_or(|n| n == job.name)
}

/// `berth show job <id>`: scontrol's `Key=Value` lines, or the raw JSON.
pub async fn show_job(client: &Client, id: i64, json: bool) -> anyhow::Result<i32> {
    if json {
        let value = client.job_get_json(id).await?;
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        let job = client.job_get(id).await?;
        print!("{}", format::scontrol_job(&job, chrono::Utc::now()));
    }
    Ok(0)
}

/// `berth logs`: the job's output so far, or with `follow` streamed until it ends.
pub async fn logs(client: &Client, id: i64, stderr: bool, follow: bool) -> anyhow::Result<i32> {
    let stream = if stderr {
        OutputStream::Stderr
    } else {
        OutputStream::Stdout
    };
    let mut printer = crate::format::OutputPrinter::stdout();
    if follow {
        client
            .job_output_follow(id, stream, |bytes| {
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(&printer.chunk(bytes));
                let _ = out.flush();
            })
            .await?;
    } else {
        let text = client.job_output(id, stream).await?;
        let mut out = std::io::stdout().lock();
        out.write_all(&printer.chunk(text.as_bytes()))?;
    }
    let mut out = std::io::stdout().lock();
    out.write_all(&printer.finish())?;
    out.flush()?;
    Ok(0)
}
