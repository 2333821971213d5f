//! The client commands: each takes a [`Client`] and its options, prints what Slurm's
//! counterpart prints, and returns the process exit status.

use crate::client::Client;
use crate::format;
use crate::submit::{self, SubmitArgs};
use anyhow::Context;
use berth_core::wire::{JobListQuery, JobWillRun, OutputStream, QueueJob};
use std::io::Write;

/// `berth submit` (`sbatch`): reads the script, checks the options here as `sbatch` does
/// (an error names the option and, for a `#SBATCH` line, the line: `sbatch: error: …`,
/// status 1), then:
/// * with `--test-only`, asks the api when and where the job would start and prints
///   Slurm's `sbatch: Job N to start at TIME using N processors on nodes LIST in
///   partition P` (standard error, as Slurm does); nothing is submitted;
/// * otherwise sends the job and prints `Submitted batch job <id>` (or the id alone with
///   `--parsable`). With `-W/--wait` it returns when the job ends, with the job's exit
///   status: as `sbatch`, printing nothing more (Slurm's `--wait`); as `berth submit`,
///   streaming the job's stdout meanwhile and ending with `Job <id> <STATE>, exit code
///   <n>` on standard error.
///
/// A refusal from the api prints as `sbatch: error: Batch job submission failed: …`. The
/// submission carries an `Idempotency-Key` of its own, so that while the api answers 503
/// (a database switch, a full queue) or cannot be reached it is sent again, for a minute
/// ([`crate::client::RETRY_FOR`]), with Slurm's `sbatch: error: Slurm temporarily unable
/// to accept job, sleeping and retrying.` before each wait; it makes one job however many
/// times it is sent.
pub async fn submit(client: &Client, args: &SubmitArgs) -> anyhow::Result<i32> {
    // sbatch's input environment variables (`SBATCH_JOB_NAME` …) come before the command
    // line's options, so that those win over them and they over `#SBATCH` lines.
    let with_env;
    let args = if args.as_sbatch {
        let mut all = args.clone();
        all.sbatch_args = crate::sbatch_env::env_args(|var| std::env::var(var).ok());
        all.sbatch_args.extend(args.sbatch_args.iter().cloned());
        with_env = all;
        &with_env
    } else {
        args
    };
    let script = submit::read_script(args)?;
    // `#SBATCH --test-only`, `--wait`, `--parsable` count as on the command line.
    let parsed = match berth_core::sbatch::parse_batch(
        script.as_deref().unwrap_or_default(),
        &args.sbatch_args,
    ) {
        Ok(parsed) => parsed,
        Err(e) => {
            let text = match e.line {
                Some(line) => format!("line {line}: {}: {}", e.option, e.message),
                None => format!("{}: {}", e.option, e.message),
            };
            eprintln!(
                "sbatch: error: {}",
                berth_core::text::escape_keep_lines(&text)
            );
            return Ok(1);
        }
    };
    // `-M/--clusters` (also from SBATCH_CLUSTERS or SLURM_CLUSTERS, above): this
    // cluster's name, said with the job's id as Slurm's sbatch says it.
    let cluster =
        crate::clusters::check(client, "sbatch", parsed.client.clusters.as_deref(), None).await?;
    let submit_dir = std::env::current_dir().context("reading the current directory")?;
    let job = submit::build_job(args, script, &submit_dir);
    let refused = |e: &crate::client::ClientError| {
        eprintln!(
            "sbatch: error: Batch job submission failed: {}",
            berth_core::text::escape_keep_lines(&e.to_string())
        );
    };
    if args.test_only || parsed.client.test_only {
        let answer: JobWillRun = match client.post_json("/v1/jobs/will-run", &job).await {
            Ok(answer) => answer,
            Err(e) => {
                refused(&e);
                return Ok(1);
            }
        };
        eprintln!("{}", submit::will_run_line(&answer));
        return Ok(0);
    }
    let key = submission_key();
    let retrying = client
        .clone()
        .with_retry_notice(std::sync::Arc::new(|why: &str, wait: std::time::Duration| {
            eprintln!(
                "sbatch: error: Slurm temporarily unable to accept job, sleeping and retrying. ({why}; next try in {:.1} s)",
                wait.as_secs_f64()
            );
        }));
    let created = match retrying.job_create(&job, Some(&key)).await {
        Ok(created) => created,
        Err(e) => {
            refused(&e);
            return Ok(1);
        }
    };
    let on_cluster = |separator: &str| {
        cluster
            .as_deref()
            .map(|name| format!("{separator}{name}"))
            .unwrap_or_default()
    };
    if args.parsable || parsed.spec.parsable {
        println!("{}{}", created.id, on_cluster(";"));
    } else {
        println!(
            "Submitted batch job {}{}",
            created.id,
            on_cluster(" on cluster ")
        );
    }
    std::io::stdout().flush()?;
    if !(args.wait || parsed.client.wait) {
        return Ok(0);
    }
    if args.as_sbatch {
        let job = client
            .job_wait(created.id, std::time::Duration::from_millis(500))
            .await?;
        return Ok(submit::wait_exit_code(&job));
    }
    let job = submit::follow_to_end(client, created.id).await?;
    let code = submit::wait_exit_code(&job);
    eprintln!("Job {} {}, exit code {}", job.id, job.state, code);
    Ok(code)
}

/// A new `Idempotency-Key` for one submission: `sbatch-` and 128 random bits in hex.
pub fn submission_key() -> String {
    format!("sbatch-{:032x}", rand::random::<u128>())
}

/// `berth queue` filters.
#[derive(Debug, Clone, Default)]
pub struct QueueOptions {
    /// `--json` (`Some(false)`) or `--yaml` (`Some(true)`): Slurm's document instead of a
    /// table.
    pub document: Option<bool>,
    /// `-M/--clusters` named this cluster (this name): a `CLUSTER: NAME` line above the
    /// table, as Slurm's squeue prints for each cluster of `-M`.
    pub cluster: Option<String>,
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
    /// `-O`: squeue's field names (`JobID,Name:30,State:.10`).
    pub long_format: Option<String>,
    /// `-S`: sort keys (`-t,u`); squeue's `P,t,-p` (`S` with `--start`) when absent.
    pub sort: Option<String>,
    /// `-s`: the running jobs' steps instead of the jobs; `Some(Some(list))` only those
    /// steps (`5.0,6`).
    pub steps: Option<Option<String>>,
    /// `-i`: print again every this many seconds, until interrupted.
    pub iterate: Option<u64>,
    /// `-l` or `-v` was given: the date line before the table, as squeue prints it.
    pub dated: bool,
    /// squeue `--start`: pending jobs with their expected start times.
    pub start: bool,
    /// `-w`: only jobs placed on any of these nodes (a host list).
    pub nodelist: Option<String>,
}

/// How `berth queue` prints, read from its options before anything is asked of the api.
enum QueueOutput {
    /// `-o`/`-O`/`-l`.
    Layout(crate::squeue::Layout),
    /// `--start`'s table.
    Start,
    /// squeue's default table.
    Default,
}

/// `berth queue`: squeue's default table (or `-o`/`-O`'s format, `--start`'s, `-s`'s
/// steps), in squeue's order (`-S`), every page; with `-i N`, again every N seconds
/// (each time after a date line and before a blank line, as squeue prints) until
/// interrupted.
pub async fn queue(client: &Client, options: &QueueOptions) -> anyhow::Result<i32> {
    let ids = options
        .jobs
        .as_deref()
        .map(crate::squeue::parse_job_ids)
        .transpose()
        .map_err(anyhow::Error::msg)?;
    let output = match (&options.long_format, &options.format) {
        (Some(fields), _) => QueueOutput::Layout(
            crate::squeue::parse_long_format(fields).map_err(anyhow::Error::msg)?,
        ),
        (None, Some(format)) => {
            QueueOutput::Layout(crate::squeue::parse_format(format).map_err(anyhow::Error::msg)?)
        }
        (None, None) if options.start => QueueOutput::Start,
        (None, None) => QueueOutput::Default,
    };
    let default_sort = if options.start {
        "S"
    } else {
        crate::squeue::DEFAULT_SORT
    };
    let sort = crate::squeue::parse_sort(options.sort.as_deref().unwrap_or(default_sort))
        .map_err(anyhow::Error::msg)?;
    // squeue's default table in its default order needs only some fields of each job.
    let fields = (matches!(output, QueueOutput::Default) && options.sort.is_none())
        .then_some(crate::squeue::DEFAULT_FIELDS);
    let steps = match &options.steps {
        None => None,
        Some(list) => {
            if options.format.is_some() || options.long_format.is_some() {
                anyhow::bail!(
                    "squeue: -o/-O with -s/--steps: step formats are not supported (Berth prints -s's default columns)"
                );
            }
            Some(
                list.as_deref()
                    .map(crate::squeue::parse_step_ids)
                    .transpose()
                    .map_err(anyhow::Error::msg)?,
            )
        }
    };
    let wanted_nodes = options
        .nodelist
        .as_deref()
        .map(|list| {
            berth_core::hostlist::expand(list)
                .map_err(|e| anyhow::anyhow!("squeue: -w/--nodelist {list:?}: {e}"))
        })
        .transpose()?;
    let user = if options.me {
        let who: serde_json::Value = client.get_json("/v1/whoami").await?;
        who["user"].as_str().map(str::to_string)
    } else {
        options.user.clone()
    };
    if let Some(yaml) = options.document {
        return queue_document(client, options, &ids, user, yaml).await;
    }
    loop {
        let dated = options.iterate.is_some() || options.dated;
        let mut text = String::new();
        if dated && !options.noheader {
            text.push_str(
                &chrono::Local::now()
                    .format("%a %b %e %H:%M:%S %Y\n")
                    .to_string(),
            );
        }
        if let Some(name) = options.cluster.as_deref().filter(|_| !options.noheader) {
            text.push_str(&format!("CLUSTER: {name}\n"));
        }
        let code = match &steps {
            Some(steps) => {
                let jobs = queue_jobs(client, options, &ids, user.clone(), true).await?;
                let Some(jobs) = jobs else {
                    eprintln!("slurm_load_jobs error: Invalid job id specified");
                    return Ok(1);
                };
                let mut with_steps = Vec::new();
                for job in jobs {
                    if let Some(list) = steps {
                        if !list.iter().any(|(j, _)| *j == job.id) {
                            continue;
                        }
                    }
                    let page: berth_core::step::StepList = client
                        .get_json(&format!("/v1/jobs/{}/steps", job.id))
                        .await?;
                    let items = page
                        .items
                        .into_iter()
                        .filter(|s| {
                            steps.as_ref().is_none_or(|list| {
                                list.iter().any(|(j, st)| {
                                    *j == job.id && st.is_none_or(|st| st == s.step_id)
                                })
                            })
                        })
                        .collect();
                    with_steps.push((job, items));
                }
                text.push_str(&crate::squeue::steps_table(
                    &with_steps,
                    chrono::Utc::now(),
                    !options.noheader,
                ));
                0
            }
            None => {
                match queue_jobs_with(client, options, &ids, user.clone(), false, fields).await? {
                    None => {
                        eprintln!("slurm_load_jobs error: Invalid job id specified");
                        1
                    }
                    Some(mut jobs) => {
                        if let Some(wanted) = &wanted_nodes {
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
                        crate::squeue::sort_jobs(&mut jobs, &sort, now);
                        let table = match &output {
                            QueueOutput::Layout(layout) => crate::squeue::squeue_layout_table(
                                layout,
                                &jobs,
                                now,
                                !options.noheader,
                            ),
                            QueueOutput::Start => crate::queue_start::start_table(&jobs),
                            QueueOutput::Default => format::squeue_table(&jobs, now),
                        };
                        let table = match (&output, options.noheader) {
                            (QueueOutput::Layout(_), _) | (_, false) => table.as_str(),
                            (_, true) => table.split_once('\n').map(|(_, rest)| rest).unwrap_or(""),
                        };
                        text.push_str(table);
                        if options.iterate.is_none() {
                            // The process ends once this is printed: freeing 10,000 jobs a
                            // string at a time only delays it (3 ms of squeue's 60).
                            std::mem::forget(jobs);
                        }
                        0
                    }
                }
            }
        };
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes())?;
        out.flush()?;
        drop(out);
        match options.iterate {
            Some(seconds) => {
                println!();
                tokio::time::sleep(std::time::Duration::from_secs(seconds)).await;
            }
            None => return Ok(code),
        }
    }
}

/// The jobs `berth queue` lists: every page of `GET /v1/queue` for its filters, or the
/// jobs `-j` names (each read by its id; `None` when it names none that passes the other
/// filters, as squeue's "Invalid job id specified"). `running`: only running jobs (`-s`).
/// The job list query of squeue's filters (`running`: `-s`'s running jobs only; `named`:
/// `-j` was given, so every state unless `-t`).
fn queue_query(
    options: &QueueOptions,
    named: bool,
    user: Option<String>,
    running: bool,
) -> JobListQuery {
    let state = match (&options.state, options.all) {
        _ if running => Some("RUNNING".to_string()),
        (Some(s), _) if s.eq_ignore_ascii_case("all") => None,
        (Some(s), _) => Some(s.clone()),
        (None, true) => None,
        (None, false) if named => None,
        (None, false) if options.start => Some("PENDING".to_string()),
        (None, false) => Some("PENDING,RUNNING".to_string()),
    };
    JobListQuery {
        state,
        user,
        partition: options.partition.clone(),
        account: options.account.clone(),
        qos: options.qos.clone(),
        name: options.name.clone(),
        ..Default::default()
    }
}

/// `squeue --json`/`--yaml`: Slurm's document (data parser v0.0.44, as `GET
/// /slurm/v0.0.44/jobs`) of the jobs the filters select.
async fn queue_document(
    client: &Client,
    options: &QueueOptions,
    ids: &Option<Vec<crate::squeue::JobIdSpec>>,
    user: Option<String>,
    yaml: bool,
) -> anyhow::Result<i32> {
    let selected: std::collections::HashSet<i64> =
        match queue_jobs(client, options, ids, user.clone(), false).await? {
            Some(jobs) => jobs.iter().map(|j| j.id).collect(),
            None => {
                eprintln!("slurm_load_jobs error: Invalid job id specified");
                return Ok(1);
            }
        };
    let mut jobs = client
        .job_list_all(&queue_query(options, ids.is_some(), user, false))
        .await?;
    jobs.retain(|j| selected.contains(&j.id));
    let who: serde_json::Value = client.get_json("/v1/whoami").await?;
    crate::clusters::name(client).await?;
    let document =
        berth_api::slurmrestd::squeue_document(&jobs, who["user"].as_str().unwrap_or(""));
    format::print_document(&document, yaml)?;
    Ok(0)
}

async fn queue_jobs(
    client: &Client,
    options: &QueueOptions,
    ids: &Option<Vec<crate::squeue::JobIdSpec>>,
    user: Option<String>,
    running: bool,
) -> anyhow::Result<Option<Vec<QueueJob>>> {
    queue_jobs_with(client, options, ids, user, running, None).await
}

/// [`queue_jobs`], with only `fields` of each job (as `GET /v1/queue` takes them) when no
/// job is named (`-j` reads each named job whole, to check it against the filters).
async fn queue_jobs_with(
    client: &Client,
    options: &QueueOptions,
    ids: &Option<Vec<crate::squeue::JobIdSpec>>,
    user: Option<String>,
    running: bool,
    fields: Option<&str>,
) -> anyhow::Result<Option<Vec<QueueJob>>> {
    let query = queue_query(options, ids.is_some(), user, running);
    let Some(ids) = ids else {
        return Ok(Some(client.queue_list_all(&query, fields).await?));
    };
    // Each named job read by its id (an array's tasks by a list), not the whole queue.
    let mut found = Vec::new();
    for id in ids {
        let (crate::squeue::JobIdSpec::Job(n) | crate::squeue::JobIdSpec::Task(n, _)) = *id;
        match client.job_get(n).await {
            Ok(job) => found.push(QueueJob::from(&job)),
            Err(e) if e.status() == Some(404) => {}
            Err(e) => return Err(e.into()),
        }
    }
    if found.iter().any(|j| j.array_job_id.is_some()) {
        found = client.queue_list_all(&query, None).await?;
    }
    found = crate::squeue::select_jobs(found, ids);
    found.retain(|j| job_passes(j, &query));
    Ok((!found.is_empty()).then_some(found))
}

/// Whether a job read by its id also passes the list's other filters (state, user,
/// partition, account, QOS, name), as the list would have applied them.
fn job_passes(job: &QueueJob, q: &JobListQuery) -> bool {
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

/// `berth logs`: the job's output so far, or with `follow` streamed until it ends. A job
/// whose launch failed has no output: its reason (`launch failed on node-1: …`) goes to
/// standard error and the status is 1; a job not started yet says so.
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
    drop(out);
    // A job whose batch script never started has no output: say why.
    let job = client.job_get(id).await?;
    let launch = berth_core::reason::LAUNCH_FAILED_PREFIX;
    if let Some(description) = job
        .state_description
        .as_deref()
        .filter(|d| d.starts_with(launch))
    {
        eprintln!(
            "berth logs: job {id} {}: {}",
            job.state,
            berth_core::text::escape_keep_lines(description)
        );
        return Ok(1);
    }
    if let Some(reason) = job.reason.as_deref().filter(|_| job.start_time.is_none()) {
        if job.state == berth_core::state::JobState::Pending {
            eprintln!(
                "berth logs: job {id} has not started yet (PENDING, reason: {})",
                berth_core::text::escape_keep_lines(reason)
            );
        }
    }
    Ok(0)
}
