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
use std::time::{Duration, Instant};

mod allocation;
mod exits;
mod follow;
mod options;
mod request;
#[cfg(test)]
mod tests;

pub use allocation::*;
pub use exits::*;
pub use follow::*;
pub use options::*;
pub use request::*;

/// How often a running step's output and state are read.
const POLL: Duration = Duration::from_millis(200);

/// The allocation options `srun` (outside an allocation) and `salloc` share, with
/// Slurm's names and letters: they make the job. The help here is salloc's; srun words
/// those that shape a step or only apply outside an allocation its own way
/// ([`srun_help`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args)]
pub struct AllocationArgs {
    /// -N/--nodes.
    #[arg(short = 'N', long)]
    pub nodes: Option<u32>,
    /// -n/--ntasks.
    #[arg(short = 'n', long)]
    pub ntasks: Option<u32>,
    /// --ntasks-per-node (or Slurm's older --tasks-per-node).
    #[arg(long, alias = "tasks-per-node")]
    pub ntasks_per_node: Option<u32>,
    /// -c/--cpus-per-task.
    #[arg(short = 'c', long)]
    pub cpus_per_task: Option<u32>,
    /// --gpus-per-task.
    #[arg(long)]
    pub gpus_per_task: Option<u32>,
    /// -t/--time: the allocation's time limit.
    #[arg(short = 't', long)]
    pub time: Option<String>,
    /// -J/--job-name (default: the command's name, `interactive` for a shell).
    #[arg(short = 'J', long)]
    pub job_name: Option<String>,
    /// -p/--partition.
    #[arg(short = 'p', long)]
    pub partition: Option<String>,
    /// -A/--account.
    #[arg(short = 'A', long)]
    pub account: Option<String>,
    /// -q/--qos.
    #[arg(short = 'q', long)]
    pub qos: Option<String>,
    /// --gres (`gpu[:type]:N`).
    #[arg(long)]
    pub gres: Option<String>,
    /// -G/--gpus.
    #[arg(short = 'G', long)]
    pub gpus: Option<String>,
    /// --gpus-per-node.
    #[arg(long)]
    pub gpus_per_node: Option<String>,
    /// --cpus-per-gpu.
    #[arg(long)]
    pub cpus_per_gpu: Option<u32>,
    /// --mem: MiB per node, or with K/M/G/T.
    #[arg(long)]
    pub mem: Option<String>,
    /// --mem-per-cpu.
    #[arg(long)]
    pub mem_per_cpu: Option<String>,
    /// --mem-per-gpu.
    #[arg(long)]
    pub mem_per_gpu: Option<String>,
    /// -C/--constraint.
    #[arg(short = 'C', long)]
    pub constraint: Option<String>,
    /// -w/--nodelist.
    #[arg(short = 'w', long)]
    pub nodelist: Option<String>,
    /// -x/--exclude.
    #[arg(short = 'x', long)]
    pub exclude: Option<String>,
    /// --reservation.
    #[arg(long)]
    pub reservation: Option<String>,
    /// --exclusive: whole nodes.
    #[arg(long)]
    pub exclusive: bool,
}

/// The heading Slurm's `srun --help` and `salloc --help` list an option under (Parallel
/// run options, Constraint options, Consumable resources related options,
/// Affinity/Multi-core options, GPU scheduling options), by clap id; the options without
/// one (the command, help) keep clap's.
pub fn slurm_heading(arg: clap::Arg) -> clap::Arg {
    let heading = match arg.get_id().as_str() {
        "constraint" | "nodelist" | "exclude" | "reservation" | "mem" => "Constraint options",
        "exclusive" | "mem_per_cpu" | "overlap" => "Consumable resources related options",
        "cpu_bind" | "mem_bind" | "accel_bind" | "distribution" => "Affinity/Multi-core options",
        "gres" | "gpus" | "gpus_per_node" | "gpus_per_task" | "cpus_per_gpu" | "mem_per_gpu"
        | "gpu_bind" => "GPU scheduling options",
        "command" | "help" | "berth_wait_step" => return arg,
        _ if arg.is_positional() => return arg,
        id if id.starts_with("container") || id.starts_with("no-container") => "Container options",
        _ => "Parallel run options",
    };
    arg.help_heading(heading)
}

/// srun's help for the [`AllocationArgs`] that shape a step inside an allocation or only
/// apply outside one (the others read as salloc's); without a final period, as clap's
/// derive writes a one-line doc comment.
pub fn srun_help(arg: clap::Arg) -> clap::Arg {
    let help = match arg.get_id().as_str() {
        "nodes" => "-N/--nodes: use the first N nodes of the allocation",
        "ntasks" => "-n/--ntasks: tasks to run (default: the job's)",
        "nodelist" => "-w/--nodelist: these nodes of the allocation (`node-[1-2]`)",
        "gpus_per_task" => "--gpus-per-task: each task gets its own GPUs",
        "time" => {
            "-t/--time: the step's time limit (Slurm's formats: minutes, MM:SS, HH:MM:SS, \
             D-HH…); srun stops the step when it runs out. Outside an allocation, the job's"
        }
        "exclusive" => {
            "--exclusive: the step's GPUs are its own (the default for steps without \
             --overlap). Outside an allocation, also the job's whole nodes"
        }
        "job_name" => "-J/--job-name: outside an allocation, the job's name (steps take the job's)",
        "partition" => "-p/--partition (outside an allocation; inside, the job's)",
        "account" => "-A/--account (outside an allocation)",
        "qos" => "-q/--qos (outside an allocation)",
        "gres" => "--gres (outside an allocation): `gpu[:type]:N`",
        "gpus" => "-G/--gpus (outside an allocation)",
        "gpus_per_node" => "--gpus-per-node (outside an allocation)",
        "cpus_per_gpu" => "--cpus-per-gpu (outside an allocation)",
        "mem" => "--mem (outside an allocation): MiB per node, or with K/M/G/T",
        "mem_per_cpu" => "--mem-per-cpu (outside an allocation)",
        "mem_per_gpu" => "--mem-per-gpu (outside an allocation)",
        "constraint" => "-C/--constraint (outside an allocation)",
        "exclude" => "-x/--exclude (outside an allocation)",
        "reservation" => "--reservation (outside an allocation)",
        _ => return slurm_heading(arg),
    };
    slurm_heading(arg.help(help))
}

/// `srun`'s options. Inside an allocation (`SLURM_JOB_ID`, or `--jobid`) they shape a
/// step; outside one, the allocation options ([`AllocationArgs`]: `-N -n -c -t -p -A -q
/// --gres --gpus* --mem* -C -w -x -J --reservation --exclusive`) make a job first and the
/// step runs in it.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(mut_args(srun_help))]
pub struct SrunArgs {
    /// The allocation options (inside an allocation, `-n -N -w -c --gpus-per-task -t
    /// --ntasks-per-node --exclusive` shape the step).
    #[command(flatten)]
    pub allocation: AllocationArgs,
    /// -K/--kill-on-bad-exit[=0|1]: a failing task stops the others.
    #[arg(short = 'K', long, num_args = 0..=1, require_equals = true, default_missing_value = "1")]
    pub kill_on_bad_exit: Option<u8>,
    /// -W/--wait=SECONDS: once the first task has ended, stop the others after this many
    /// seconds (0: wait for them however long they run; the default).
    #[arg(short = 'W', long, value_name = "SECONDS")]
    pub wait: Option<u64>,
    /// -l/--label: prefix each output line with its task id.
    #[arg(short = 'l', long)]
    pub label: bool,
    /// -u/--unbuffered: output is printed as it arrives (what srun does anyway here; with
    /// -l only whole lines are labelled).
    #[arg(short = 'u', long)]
    pub unbuffered: bool,
    /// -o/--output: each task's stdout to a file on its node instead of srun's stdout:
    /// a pattern (`%j` job, `%s` step, `%J` job.step, `%t` task, `%n` node index, `%N`
    /// node name, `%u` user, `%x` job name, `%A`/`%a` array job and task, `%%`; `%3t`
    /// pads with zeros), `none`, or a task id (only that task's output is printed).
    #[arg(short = 'o', long)]
    pub output: Option<String>,
    /// -e/--error: each task's stderr, as --output (default: where --output sends stdout).
    #[arg(short = 'e', long)]
    pub error: Option<String>,
    /// -i/--input: each task's stdin: `none` (the default here: srun's own standard input
    /// is not forwarded) or a file pattern as --output's, opened on the task's node.
    #[arg(short = 'i', long)]
    pub input: Option<String>,
    /// --open-mode=append|truncate: how --output/--error files are opened (default: the
    /// job's --open-mode, from SLURM_OPEN_MODE, else truncate).
    #[arg(long)]
    pub open_mode: Option<String>,
    /// --overlap: share resources with other steps.
    #[arg(long, conflicts_with = "exclusive")]
    pub overlap: bool,
    /// --gpu-bind=none|single:N|closest: which GPUs each task sees.
    #[arg(long)]
    pub gpu_bind: Option<String>,
    /// -m/--distribution=block|cyclic|plane=N[:block|cyclic|fcyclic][,Pack|NoPack]: how
    /// task ids go round the nodes.
    #[arg(short = 'm', long)]
    pub distribution: Option<String>,
    /// --cpu-bind (or Slurm's other spelling --cpu_bind): accepted; tasks are confined
    /// to the job's CPUs on their node, not bound to CPUs of their own (as Slurm with
    /// `TaskPlugin=task/none`): anything but `none` and `verbose` prints a warning.
    #[arg(long, alias = "cpu_bind")]
    pub cpu_bind: Option<String>,
    /// `--comment`, `--accel-bind`, `--mem-bind`, `--network` and the refused
    /// `--container*` options.
    #[command(flatten)]
    pub extra: StepExtraArgs,
    /// --mpi=none (the default; `list` lists the plugins). PMI-2 and PMIx are refused:
    /// Berth runs no PMI server.
    #[arg(long)]
    pub mpi: Option<String>,
    /// --multi-prog: the command is a configuration file of `RANKS PROGRAM ARGS…` lines
    /// (`0 python server.py`, `1-3,5 python worker.py %t %o`, `* true`); `%t` is the
    /// task id, `%o` its offset within its line's ranks.
    #[arg(long)]
    pub multi_prog: bool,
    /// --export=ALL|NONE|[ALL,]NAME[=value],…: the tasks' environment (default ALL).
    #[arg(long)]
    pub export: Option<String>,
    /// -D/--chdir: the tasks' working directory (default: srun's).
    #[arg(short = 'D', long)]
    pub chdir: Option<String>,
    /// --jobid: the job (default: $SLURM_JOB_ID).
    #[arg(long)]
    pub jobid: Option<i64>,
    /// --het-group (or its old name --pack-group): `0`, the only component of a job here,
    /// runs the step as without it; any other component is refused (Berth has no
    /// heterogeneous jobs).
    #[arg(long, alias = "pack-group")]
    pub het_group: Option<String>,
    /// --pty: task 0 runs in a pseudo-terminal on its node, which this terminal becomes
    /// until it ends (`srun --pty bash`); the other tasks' output is dropped. Without a
    /// terminal on stdin it is disregarded, as Slurm's srun does.
    #[arg(long)]
    pub pty: bool,
    /// -v/--verbose: say more on stderr.
    #[arg(short = 'v', long, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// -Q/--quiet: say less on stderr.
    #[arg(short = 'Q', long)]
    pub quiet: bool,
    /// Inside a job srun made: hold the allocation until this step ends (the job's batch
    /// script).
    #[arg(long, hide = true)]
    pub berth_wait_step: Option<u32>,
    /// The program and its arguments.
    #[arg(
        required_unless_present = "berth_wait_step",
        num_args = 1..,
        trailing_var_arg = true,
        value_name = "COMMAND"
    )]
    pub command: Vec<String>,
}

/// Creates the step, waiting as Slurm's srun does while the GPUs it needs are in use by
/// other steps (the api's 409 `step_resources_busy`): one message on stderr, then a retry
/// every second.
pub async fn create_step(
    client: &Client,
    job_id: i64,
    request: &StepCreate,
) -> anyhow::Result<Step> {
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

/// The job srun runs in: `--jobid`, else `SLURM_JOB_ID`; `None` outside an allocation.
fn allocation(args: &SrunArgs) -> Option<i64> {
    args.jobid.or_else(|| {
        std::env::var("SLURM_JOB_ID")
            .ok()
            .and_then(|v| v.trim().parse().ok())
    })
}

/// `-t/--time` in seconds (`None`: no limit).
fn time_limit(args: &SrunArgs) -> anyhow::Result<Option<u64>> {
    match &args.allocation.time {
        None => Ok(None),
        Some(value) => berth_core::duration::parse_duration(value)
            .map(|limit| limit.filter(|&s| s > 0))
            .map_err(|e| anyhow::anyhow!("--time={value}: {}", e.reason)),
    }
}

/// Runs `srun`: inside an allocation it creates a step, follows its output and returns
/// its exit code; outside one it first makes a job of the allocation options (see
/// [`SrunArgs`]) and runs the step in it.
///
/// # Errors
/// A refused option (naming it), a refused step or job (the api's problem, naming the
/// option), or an api that stops answering.
pub async fn run(client: &Client, args: &SrunArgs) -> anyhow::Result<i32> {
    if let Some(step) = args.berth_wait_step {
        return hold_for_step(client, step).await;
    }
    let mpi_default = std::env::var("SLURM_MPI_TYPE").ok();
    if let Some(answer) = check_options(args, mpi_default.as_deref())? {
        print!("{answer}");
        return Ok(0);
    }
    let limit = time_limit(args)?;
    let mut args = args.clone();
    // As Slurm's srun: without --open-mode, the job's own (sbatch --open-mode, which the
    // batch environment carries as SLURM_OPEN_MODE), so a requeued job's steps append too.
    if args.open_mode.is_none() {
        args.open_mode = std::env::var("SLURM_OPEN_MODE")
            .ok()
            .filter(|m| !m.is_empty());
    }
    if args.pty && !crate::pty::stdin_is_terminal() {
        eprintln!("srun: error: Not using a pseudo-terminal, disregarding --pty option");
        args.pty = false;
    }
    match allocation(&args) {
        Some(job_id) => run_step(client, &args, job_id, limit).await,
        None => run_in_new_job(client, &args).await,
    }
}

/// Follows a step srun created: through this terminal for `--pty`, else as
/// [`follow_step`].
async fn follow_own(
    client: &Client,
    args: &SrunArgs,
    job_id: i64,
    step: &Step,
    limit: Option<u64>,
) -> anyhow::Result<i32> {
    if args.pty {
        crate::pty::attach(client, job_id, step).await
    } else {
        follow_step(client, args, job_id, step, Follow::Own { limit }).await
    }
}

/// The variables of the allocation `job` that salloc's command and the tasks of a step
/// that srun made a job for get (Slurm's salloc and srun set them; inside a batch job the
/// worker does): `SLURM_JOB_ID`, `SLURM_JOB_NAME`, `SLURM_JOB_USER`, the node list and
/// counts, partition, account, QOS, cluster name, `SLURM_SUBMIT_DIR` and
/// `SLURM_SUBMIT_HOST` (this machine). The api adds the rest of the job's variables to
/// each step task.
pub fn allocation_environment(
    job: &berth_core::wire::Job,
    submit_dir: &std::path::Path,
) -> Vec<(String, String)> {
    let id = job.id.to_string();
    let nodelist = job.nodelist.clone().unwrap_or_default();
    let mut env = vec![
        ("SLURM_JOB_ID", id.clone()),
        ("SLURM_JOBID", id),
        ("SLURM_JOB_NAME", job.name.clone()),
        ("SLURM_JOB_USER", job.user.clone()),
        ("SLURM_JOB_NODELIST", nodelist.clone()),
        ("SLURM_NODELIST", nodelist),
        ("SLURM_JOB_NUM_NODES", job.num_nodes.to_string()),
        ("SLURM_NNODES", job.num_nodes.to_string()),
        ("SLURM_NTASKS", job.num_tasks.to_string()),
        ("SLURM_NPROCS", job.num_tasks.to_string()),
        ("SLURM_JOB_PARTITION", job.partition.clone()),
        (
            "SLURM_CLUSTER_NAME",
            std::env::var("SLURM_CLUSTER_NAME")
                .unwrap_or_else(|_| berth_api::cluster_name::get().to_string()),
        ),
        ("SLURM_SUBMIT_DIR", submit_dir.display().to_string()),
        ("SLURM_SUBMIT_HOST", crate::server::host_name()),
    ];
    if let Some(account) = &job.account {
        env.push(("SLURM_JOB_ACCOUNT", account.clone()));
    }
    if let Some(qos) = &job.qos {
        env.push(("SLURM_JOB_QOS", qos.clone()));
    }
    env.into_iter().map(|(n, v)| (n.to_string(), v)).collect()
}

/// The step request srun sends for `args` from this process (its directory, environment
/// with `allocation` over it, and job).
fn request_here(
    args: &SrunArgs,
    job_id: i64,
    allocation: &[(String, String)],
) -> anyhow::Result<StepCreate> {
    let mut env: BTreeMap<String, String> = std::env::vars().collect();
    env.extend(allocation.iter().cloned());
    // srun's credential stays here (outside a batch job it is its user's own token); the
    // tasks get a token of the job's run from their node.
    env.remove("BERTH_TOKEN");
    let here = std::env::current_dir().ok();
    let work_dir = match (&args.chdir, &here) {
        (Some(dir), Some(here)) => Some(here.join(dir).display().to_string()),
        (Some(dir), None) => Some(dir.clone()),
        (None, here) => here.as_ref().map(|d| d.display().to_string()),
    };
    let multi_prog = if args.multi_prog {
        let path = &args.command[0];
        Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("--multi-prog: reading {path}"))?,
        )
    } else {
        None
    };
    step_request(
        args,
        work_dir,
        env.clone(),
        &PatternJob::from_env(&env, job_id),
        multi_prog.as_deref(),
    )
}

/// Creates the step in job `job_id`, follows it to its end, returns srun's exit code.
async fn run_step(
    client: &Client,
    args: &SrunArgs,
    job_id: i64,
    limit: Option<u64>,
) -> anyhow::Result<i32> {
    let request = request_here(args, job_id, &[])?;
    let step = create_step(client, job_id, &request).await?;
    follow_own(client, args, job_id, &step, limit).await
}
