//! `srun` inside an allocation: creates a job step (`POST /v1/jobs/{id}/steps`) of the job
//! named by `SLURM_JOB_ID`, prints its tasks' output as it arrives (stdout to stdout,
//! stderr to stderr; `-l` prefixes each line with the task id), and exits with the
//! highest task exit code (128 + signal for a task killed by a signal).
//!
//! Inside a job the worker puts this binary first on `PATH` under the name `srun`, with
//! `BERTH_URL` and the job's own token in `BERTH_TOKEN`.

use crate::client::{Client, ClientError};
use anyhow::{bail, Context};
use berth_core::step::{Step, StepCreate, StepOutput, StepOutputChunk, StepState};
use berth_core::wire::OutputStream;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::time::Duration;

/// How often a running step's output and state are read.
const POLL: Duration = Duration::from_millis(200);

/// `srun`'s options (the common ones; inside an allocation only).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SrunArgs {
    /// -n/--ntasks: tasks to run (default: the job's).
    #[arg(short = 'n', long)]
    pub ntasks: Option<u32>,
    /// --ntasks-per-node.
    #[arg(long)]
    pub ntasks_per_node: Option<u32>,
    /// -N/--nodes: use the first N nodes of the allocation.
    #[arg(short = 'N', long)]
    pub nodes: Option<u32>,
    /// -w/--nodelist: these nodes of the allocation (`node-[1-2]`).
    #[arg(short = 'w', long)]
    pub nodelist: Option<String>,
    /// --gpus-per-task: each task gets its own GPUs.
    #[arg(long)]
    pub gpus_per_task: Option<u32>,
    /// -c/--cpus-per-task.
    #[arg(short = 'c', long)]
    pub cpus_per_task: Option<u32>,
    /// -K/--kill-on-bad-exit[=0|1]: a failing task stops the others.
    #[arg(short = 'K', long, num_args = 0..=1, require_equals = true, default_missing_value = "1")]
    pub kill_on_bad_exit: Option<u8>,
    /// -l/--label: prefix each output line with its task id.
    #[arg(short = 'l', long)]
    pub label: bool,
    /// --overlap: share resources with other steps.
    #[arg(long)]
    pub overlap: bool,
    /// --gpu-bind=none|single:N|closest: which GPUs each task sees.
    #[arg(long)]
    pub gpu_bind: Option<String>,
    /// --export=ALL|NONE|[ALL,]NAME[=value],…: the tasks' environment (default ALL).
    #[arg(long)]
    pub export: Option<String>,
    /// --jobid: the job (default: $SLURM_JOB_ID).
    #[arg(long)]
    pub jobid: Option<i64>,
    /// -J/--job-name (accepted; steps take the job's name).
    #[arg(short = 'J', long)]
    pub job_name: Option<String>,
    /// The program and its arguments.
    #[arg(
        required = true,
        num_args = 1..,
        trailing_var_arg = true,
        value_name = "COMMAND"
    )]
    pub command: Vec<String>,
}

/// The environment `--export` passes on, from `current` (srun's own). `ALL` (the
/// default): everything; `NONE`: only `SLURM_*` and `BERTH_*`; a list: those plus the
/// named variables (`NAME` from `current`, `NAME=value` as given), everything when the
/// list starts with `ALL`.
///
/// # Errors
/// An empty variable name in the list.
pub fn export_environment(
    export: Option<&str>,
    current: impl IntoIterator<Item = (String, String)>,
) -> anyhow::Result<BTreeMap<String, String>> {
    let current: BTreeMap<String, String> = current.into_iter().collect();
    let spec = export.unwrap_or("ALL").trim();
    if spec.eq_ignore_ascii_case("ALL") {
        return Ok(current);
    }
    let mut env: BTreeMap<String, String> = current
        .iter()
        .filter(|(name, _)| name.starts_with("SLURM_") || name.starts_with("BERTH_"))
        .map(|(n, v)| (n.clone(), v.clone()))
        .collect();
    if spec.eq_ignore_ascii_case("NONE") {
        return Ok(env);
    }
    for item in spec.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        if item.eq_ignore_ascii_case("ALL") {
            env.extend(current.clone());
            continue;
        }
        match item.split_once('=') {
            Some((name, value)) if !name.is_empty() => {
                env.insert(name.to_string(), value.to_string());
            }
            Some(_) => bail!("--export: an empty variable name in {spec:?}"),
            None => {
                if let Some(value) = current.get(item) {
                    env.insert(item.to_string(), value.clone());
                }
            }
        }
    }
    Ok(env)
}

/// The step request for `args`, run from `work_dir` with the environment `current`.
///
/// # Errors
/// A bad `--export`.
pub fn step_request(
    args: &SrunArgs,
    work_dir: Option<String>,
    current: impl IntoIterator<Item = (String, String)>,
) -> anyhow::Result<StepCreate> {
    Ok(StepCreate {
        command: args.command.clone(),
        ntasks: args.ntasks,
        ntasks_per_node: args.ntasks_per_node,
        nodes: args.nodes,
        nodelist: args.nodelist.clone(),
        gpus_per_task: args.gpus_per_task,
        cpus_per_task: args.cpus_per_task,
        kill_on_bad_exit: args.kill_on_bad_exit.is_some_and(|v| v != 0),
        overlap: args.overlap,
        gpu_bind: args.gpu_bind.clone(),
        work_dir,
        environment: export_environment(args.export.as_deref(), current)?,
    })
}

/// Writes chunks to stdout/stderr, labelled by task when asked.
struct Printer {
    label: bool,
    width: usize,
    /// Incomplete last lines per (task, stream), when labelling.
    partial: HashMap<(u32, OutputStream), String>,
    printed: HashSet<i64>,
}

impl Printer {
    fn print(&mut self, chunk: &StepOutputChunk) {
        if !self.printed.insert(chunk.seq) {
            return;
        }
        let text = if self.label {
            let key = (chunk.task_id, chunk.stream);
            let mut pending = self.partial.remove(&key).unwrap_or_default();
            pending.push_str(&chunk.data);
            let mut out = String::new();
            let mut rest = pending.as_str();
            while let Some(end) = rest.find('\n') {
                out.push_str(&format!(
                    "{:>width$}: {}\n",
                    chunk.task_id,
                    &rest[..end],
                    width = self.width
                ));
                rest = &rest[end + 1..];
            }
            if !rest.is_empty() {
                self.partial.insert(key, rest.to_string());
            }
            out
        } else {
            chunk.data.clone()
        };
        write_stream(chunk.stream, &text);
    }

    fn flush(&mut self) {
        for ((task, stream), rest) in std::mem::take(&mut self.partial) {
            write_stream(
                stream,
                &format!("{task:>width$}: {rest}\n", width = self.width),
            );
        }
    }
}

fn write_stream(stream: OutputStream, text: &str) {
    if text.is_empty() {
        return;
    }
    match stream {
        OutputStream::Stdout => {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
        }
        OutputStream::Stderr => {
            let mut err = std::io::stderr().lock();
            let _ = err.write_all(text.as_bytes());
            let _ = err.flush();
        }
    }
}

/// Reads output chunks after `after` until none is left, printing each not printed yet.
/// Returns the highest sequence number seen.
async fn drain(
    client: &Client,
    path: &str,
    mut after: i64,
    printer: &mut Printer,
) -> anyhow::Result<i64> {
    loop {
        let page: StepOutput = client
            .get_output_json(&format!("{path}/output?after={after}"))
            .await
            .context("reading the step's output")?;
        let Some(last) = page.chunks.last().map(|c| c.seq) else {
            return Ok(after);
        };
        for chunk in &page.chunks {
            printer.print(chunk);
        }
        after = last;
    }
}

/// Creates the step, waiting as Slurm's srun does while the GPUs it needs are in use by
/// other steps (the api's 409 `step_resources_busy`): one message on stderr, then a retry
/// every second.
async fn create_step(client: &Client, job_id: i64, request: &StepCreate) -> anyhow::Result<Step> {
    let mut told = false;
    loop {
        match client
            .post_json(&format!("/v1/jobs/{job_id}/steps"), request)
            .await
        {
            Ok(step) => {
                if told {
                    eprintln!("srun: Step created for job {job_id}");
                }
                return Ok(step);
            }
            Err(ClientError::Problem {
                status: 409,
                problem,
            }) if problem.code == "step_resources_busy" => {
                if !told {
                    eprintln!(
                        "srun: Job {job_id} step creation temporarily disabled, retrying (Requested nodes are busy)"
                    );
                    told = true;
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            Err(e) => bail!("srun: {e}"),
        }
    }
}

/// Runs `srun`: creates the step, follows its output, returns its exit code.
///
/// # Errors
/// Outside an allocation (no `SLURM_JOB_ID`), a refused step (the api's problem, naming
/// the option), or an api that stops answering.
pub async fn run(client: &Client, args: &SrunArgs) -> anyhow::Result<i32> {
    let job_id = match args.jobid {
        Some(id) => id,
        None => std::env::var("SLURM_JOB_ID")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .context(
                "srun: no allocation (SLURM_JOB_ID is not set): run it inside a batch job, \
                 or give --jobid",
            )?,
    };
    let work_dir = std::env::current_dir()
        .ok()
        .map(|dir| dir.display().to_string());
    let request = step_request(args, work_dir, std::env::vars())?;
    let step = create_step(client, job_id, &request).await?;
    let path = format!("/v1/jobs/{job_id}/steps/{}", step.step_id);
    let mut printer = Printer {
        label: args.label,
        width: (step.tasks.len().max(1) - 1).to_string().len(),
        partial: HashMap::new(),
        printed: HashSet::new(),
    };
    let mut after = -1;
    let mut failures = 0;
    let ended = loop {
        let state: Result<Step, _> = client.get_json(&path).await;
        match state {
            Ok(step) if step.state != StepState::Running => break step,
            Ok(_) => failures = 0,
            Err(err) => {
                failures += 1;
                if failures > 50 {
                    bail!("srun: lost the api: {err}");
                }
            }
        }
        if let Ok(seen) = drain(client, &path, after, &mut printer).await {
            after = seen;
        }
        tokio::time::sleep(POLL).await;
    };
    // Every task uploaded its output before reporting its end: read all of it once more
    // (chunks that committed out of order are printed now).
    drain(client, &path, -1, &mut printer).await?;
    printer.flush();
    for task in &ended.tasks {
        if let Some(message) = &task.message {
            eprintln!("srun: task {} on {}: {message}", task.task_id, task.node);
        }
    }
    if let Some(reason) = &ended.kill_reason {
        if ended.state != StepState::Completed && ended.kill_on_bad_exit {
            eprintln!("srun: step {job_id}.{} stopped: {reason}", ended.step_id);
        }
    }
    Ok(match ended.state {
        StepState::Completed => 0,
        _ => ended.exit_code.filter(|code| *code != 0).unwrap_or(1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(clap::Parser)]
    struct Srun {
        #[command(flatten)]
        args: SrunArgs,
    }

    fn parse(argv: &[&str]) -> SrunArgs {
        <Srun as clap::Parser>::try_parse_from(argv).unwrap().args
    }

    #[test]
    fn options_glued_to_their_values_and_the_programs_own_flags() {
        let a = parse(&["srun", "-n1", "-l", "python", "-u", "train.py", "--lr", "3"]);
        assert_eq!(a.ntasks, Some(1));
        assert!(a.label);
        assert_eq!(a.command, ["python", "-u", "train.py", "--lr", "3"]);
        let a = parse(&["srun", "-N2", "--gpus-per-task=1", "--", "bash", "-c", "x"]);
        assert_eq!((a.nodes, a.gpus_per_task), (Some(2), Some(1)));
        assert_eq!(a.command, ["bash", "-c", "x"]);
    }

    fn env() -> Vec<(String, String)> {
        [
            ("SLURM_JOB_ID", "4"),
            ("BERTH_TOKEN", "t"),
            ("HOME", "/home/a"),
            ("MASTER_ADDR", "node-1"),
        ]
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
    }

    #[test]
    fn export_passes_what_it_names() {
        let all = export_environment(None, env()).unwrap();
        assert_eq!(all.len(), 4);
        let none = export_environment(Some("NONE"), env()).unwrap();
        assert_eq!(
            none.keys().collect::<Vec<_>>(),
            ["BERTH_TOKEN", "SLURM_JOB_ID"]
        );
        let list = export_environment(Some("MASTER_ADDR,EXTRA=1"), env()).unwrap();
        assert_eq!(list["MASTER_ADDR"], "node-1");
        assert_eq!(list["EXTRA"], "1");
        assert!(!list.contains_key("HOME"));
        let all_plus = export_environment(Some("ALL,EXTRA=2"), env()).unwrap();
        assert_eq!(all_plus["HOME"], "/home/a");
        assert_eq!(all_plus["EXTRA"], "2");
        assert!(export_environment(Some("=x"), env()).is_err());
    }

    #[test]
    fn labels_whole_lines_by_task() {
        let mut printer = Printer {
            label: true,
            width: 1,
            partial: HashMap::new(),
            printed: HashSet::new(),
        };
        let chunk = |seq, task_id, data: &str| StepOutputChunk {
            seq,
            task_id,
            stream: OutputStream::Stdout,
            data: data.into(),
        };
        printer.print(&chunk(1, 0, "a\nb"));
        assert_eq!(printer.partial[&(0, OutputStream::Stdout)], "b");
        printer.print(&chunk(2, 0, "c\n"));
        assert!(printer.partial.is_empty());
        // A chunk seen twice prints once.
        printer.print(&chunk(1, 0, "a\nb"));
        assert!(printer.partial.is_empty());
    }
}
