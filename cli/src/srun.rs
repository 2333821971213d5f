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
    /// --ntasks-per-node.
    #[arg(long)]
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
        "cpu_bind" | "distribution" => "Affinity/Multi-core options",
        "gres" | "gpus" | "gpus_per_node" | "gpus_per_task" | "cpus_per_gpu" | "mem_per_gpu"
        | "gpu_bind" => "GPU scheduling options",
        "command" | "help" | "berth_wait_step" => return arg,
        _ if arg.is_positional() => return arg,
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
    /// --open-mode=append|truncate: how --output/--error files are opened (default
    /// truncate).
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
    /// --cpu-bind: accepted; tasks are confined to the job's CPUs on their node, not bound
    /// to CPUs of their own (as Slurm with `TaskPlugin=task/none`): anything but `none`
    /// and `verbose` prints a warning.
    #[arg(long)]
    pub cpu_bind: Option<String>,
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
    /// --het-group: refused (Berth has no heterogeneous jobs).
    #[arg(long)]
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

/// A shell word for `text`, single-quoted.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// What srun knows of its job when it expands a file pattern: `%j`, `%u`, `%x`, `%A`,
/// `%a` (from the job's environment); the per-task letters are left to the task's shell.
#[derive(Debug, Clone, Default)]
pub struct PatternJob {
    /// `SLURM_JOB_ID`.
    pub job_id: String,
    /// `SLURM_JOB_USER`.
    pub user: String,
    /// `SLURM_JOB_NAME`.
    pub name: String,
    /// `SLURM_ARRAY_JOB_ID`, when an array task.
    pub array_job_id: Option<String>,
    /// `SLURM_ARRAY_TASK_ID`, when an array task.
    pub array_task_id: Option<String>,
}

impl PatternJob {
    /// From srun's environment inside a job.
    pub fn from_env(env: &BTreeMap<String, String>, job_id: i64) -> Self {
        let get = |name: &str| env.get(name).cloned();
        PatternJob {
            job_id: job_id.to_string(),
            user: get("SLURM_JOB_USER").unwrap_or_default(),
            name: get("SLURM_JOB_NAME").unwrap_or_default(),
            array_job_id: get("SLURM_ARRAY_JOB_ID"),
            array_task_id: get("SLURM_ARRAY_TASK_ID"),
        }
    }
}

/// srun's file name pattern (`--output`, `--error`, `--input`) as one shell word that the
/// task's shell expands: `%j %u %x %A %a` now, `%s %J %t %n %N` from the task's
/// `SLURM_*` variables; a number after `%` pads with zeros (`%3t` → `007`); `%%` is `%`,
/// `\\` makes the rest literal.
///
/// # Errors
/// An unknown letter, or `%` at the end, naming `option`.
pub fn pattern_word(pattern: &str, job: &PatternJob, option: &str) -> anyhow::Result<String> {
    let mut word = String::new();
    let mut literal = String::new();
    let flush = |literal: &mut String, word: &mut String| {
        if !literal.is_empty() {
            word.push_str(&quote(literal));
            literal.clear();
        }
    };
    if let Some(rest) = pattern.strip_prefix("\\\\") {
        return Ok(quote(rest));
    }
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            literal.push(c);
            continue;
        }
        let mut width = String::new();
        while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
            width.push(*d);
            chars.next();
        }
        let Some(letter) = chars.next() else {
            bail!("{option}={pattern:?}: a % at the end (write %% for a percent sign)");
        };
        let width: usize = width.parse().unwrap_or(0).min(10);
        let padded = |value: &str| -> String {
            if width > 0 && value.bytes().all(|b| b.is_ascii_digit()) {
                format!("{value:0>width$}")
            } else {
                value.to_string()
            }
        };
        let variable = |name: &str| -> String {
            if width > 0 {
                format!("\"$(printf %0{width}d \"${name}\")\"")
            } else {
                format!("\"${name}\"")
            }
        };
        let known = |value: Option<&String>| value.map(|v| padded(v)).unwrap_or_default();
        match letter {
            '%' => literal.push('%'),
            'j' => literal.push_str(&padded(&job.job_id)),
            'u' => literal.push_str(&job.user),
            'x' => literal.push_str(&job.name),
            'A' => literal.push_str(&known(job.array_job_id.as_ref().or(Some(&job.job_id)))),
            'a' => literal.push_str(&known(job.array_task_id.as_ref())),
            's' | 't' | 'n' | 'N' | 'J' => {
                flush(&mut literal, &mut word);
                match letter {
                    's' => word.push_str(&variable("SLURM_STEP_ID")),
                    't' => word.push_str(&variable("SLURM_PROCID")),
                    'n' => word.push_str(&variable("SLURM_NODEID")),
                    'N' => word.push_str("\"$SLURMD_NODENAME\""),
                    _ => {
                        word.push_str(&quote(&format!("{}.", padded(&job.job_id))));
                        word.push_str(&variable("SLURM_STEP_ID"));
                    }
                }
            }
            other => bail!(
                "{option}={pattern:?}: %{other} is not one of srun's pattern letters \
                 (%j %J %s %t %n %N %u %x %A %a %%)"
            ),
        }
    }
    flush(&mut literal, &mut word);
    if word.is_empty() {
        bail!("{option}: an empty file name");
    }
    Ok(word)
}

/// The shell redirections `--output`, `--error`, `--input` and `--open-mode` ask for, to
/// run in front of `exec "$@"` in each task; empty when none is given.
///
/// # Errors
/// A bad pattern or open mode, or `--input` naming a task (srun's standard input is not
/// forwarded to tasks).
pub fn redirections(args: &SrunArgs, job: &PatternJob) -> anyhow::Result<String> {
    let append = match args
        .open_mode
        .as_deref()
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        None | Some("truncate" | "t") => false,
        Some("append" | "a") => true,
        Some(other) => bail!("--open-mode={other}: append or truncate"),
    };
    let op = if append { ">>" } else { ">" };
    // Only task N prints (`--output=N`): the others' stream goes nowhere.
    let only_task = |n: &str, stream: &str| {
        format!("if [ \"$SLURM_PROCID\" != {n} ]; then exec {stream}>/dev/null; fi; ")
    };
    let is_task = |v: &str| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit());
    let mut out = String::new();
    let mut stdout_redirected = false;
    if let Some(output) = &args.output {
        if output.eq_ignore_ascii_case("none") {
            out.push_str("exec >/dev/null; ");
            stdout_redirected = true;
        } else if is_task(output) {
            out.push_str(&only_task(output, ""));
        } else {
            out.push_str(&format!(
                "exec {op}{}; ",
                pattern_word(output, job, "--output")?
            ));
            stdout_redirected = true;
        }
    }
    match &args.error {
        Some(error) if error.eq_ignore_ascii_case("none") => out.push_str("exec 2>/dev/null; "),
        Some(error) if is_task(error) => out.push_str(&only_task(error, "2")),
        Some(error) => out.push_str(&format!(
            "exec 2{op}{}; ",
            pattern_word(error, job, "--error")?
        )),
        // Slurm: without --error, stderr goes where --output sends stdout.
        None if stdout_redirected => out.push_str("exec 2>&1; "),
        None => {}
    }
    match &args.input {
        None => {}
        Some(input) if input.eq_ignore_ascii_case("none") || input.eq_ignore_ascii_case("all") => {}
        Some(input) if is_task(input) => bail!(
            "--input={input}: srun's standard input is not forwarded to tasks here; give a \
             file pattern (--input=data-%t.txt) or none"
        ),
        Some(input) => out.push_str(&format!("exec <{}; ", pattern_word(input, job, "--input")?)),
    }
    Ok(out)
}

/// The ranks of one `--multi-prog` line: `*`, or `N`, `N-M` separated by commas.
fn multi_prog_ranks(text: &str) -> Result<Option<Vec<(u32, u32)>>, String> {
    if text == "*" {
        return Ok(None);
    }
    let mut ranges = Vec::new();
    for part in text.split(',') {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        let parse = |v: &str| {
            v.parse::<u32>()
                .map_err(|_| format!("{text:?} is not a task list (0, 1-3,5 or *)"))
        };
        let (lo, hi) = (parse(lo)?, parse(hi)?);
        if hi < lo {
            return Err(format!("{part:?}: the range ends before it starts"));
        }
        ranges.push((lo, hi));
    }
    Ok(Some(ranges))
}

/// The shell program that runs a `--multi-prog` configuration (Slurm's file of `RANKS
/// PROGRAM ARGS…` lines; `#` comments and blank lines skipped): each task finds its line
/// by `SLURM_PROCID` and execs its program, with `%t` the task id and `%o` its offset in
/// the line's ranks. The program text is read as shell words.
///
/// # Errors
/// A line without a program or with a bad rank list, or no line at all; naming the line.
pub fn multi_prog_script(config: &str) -> anyhow::Result<String> {
    let mut branches = Vec::new();
    for (number, line) in config.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (ranks, program) = line
            .split_once(char::is_whitespace)
            .map(|(r, p)| (r, p.trim()))
            .unwrap_or((line, ""));
        let where_ = format!("--multi-prog line {}", number + 1);
        if program.is_empty() {
            bail!("{where_}: {ranks:?} has no program");
        }
        let ranges = multi_prog_ranks(ranks).map_err(|e| anyhow::anyhow!("{where_}: {e}"))?;
        let program = program.replace("%t", "$t").replace("%o", "$o");
        match ranges {
            None => branches.push(format!("if true; then o=$t; exec {program}")),
            Some(ranges) => {
                let mut before = 0u64;
                for (lo, hi) in ranges {
                    branches.push(format!(
                        "if [ \"$t\" -ge {lo} ] && [ \"$t\" -le {hi} ]; then o=$((t - {lo} + {before})); exec {program}"
                    ));
                    before += u64::from(hi - lo) + 1;
                }
            }
        }
    }
    if branches.is_empty() {
        bail!("--multi-prog: the configuration names no program");
    }
    let mut script = String::from("t=$SLURM_PROCID\n");
    for (i, branch) in branches.iter().enumerate() {
        let branch = if i == 0 {
            branch.clone()
        } else {
            format!("el{branch}")
        };
        script.push_str(&branch);
        script.push('\n');
    }
    script.push_str("else echo \"srun: --multi-prog: no program for task $t\" >&2; exit 1\nfi\n");
    Ok(script)
}

/// Checks the options srun refuses or only warns about (`--mpi`, `--het-group`, `--pty`,
/// `--cpu-bind`, `--distribution`'s levels), printing warnings; `Ok(Some(text))` for
/// `--mpi=list`, which answers and runs nothing.
///
/// # Errors
/// A refused option, naming it and why.
pub fn check_options(args: &SrunArgs, mpi_default: Option<&str>) -> anyhow::Result<Option<String>> {
    let mpi = args
        .mpi
        .as_deref()
        .or(mpi_default)
        .map(str::to_ascii_lowercase);
    match mpi.as_deref() {
        None | Some("none") => {}
        Some("list") => return Ok(Some("MPI plugin types are...\n\tnone\n".to_string())),
        Some(plugin)
            if plugin == "pmi2" || plugin.starts_with("pmix") || plugin == "cray_shasta" =>
        {
            bail!(
                "--mpi={plugin}: Berth runs no PMI server (Slurm's {plugin} plugin), so ranks \
                 cannot wire up through it: use --mpi=none and let the MPI library bootstrap \
                 itself (mpirun inside the allocation, torchrun, or NCCL with MASTER_ADDR)"
            )
        }
        Some(other) => {
            bail!("--mpi={other}: not an MPI plugin type (srun --mpi=list lists them)")
        }
    }
    if let Some(group) = &args.het_group {
        bail!(
            "--het-group={group}: Berth has no heterogeneous jobs (one set of resources per job)"
        );
    }
    if args.pty {
        let named = [
            ("--output", args.output.is_some()),
            ("--error", args.error.is_some()),
            ("--input", args.input.is_some()),
            ("--multi-prog", args.multi_prog),
        ];
        if let Some((name, _)) = named.iter().find(|(_, given)| *given) {
            bail!(
                "--pty: task 0's input and output are the terminal; {name} cannot be given with it"
            );
        }
    }
    if let Some(bind) = &args.cpu_bind {
        let quiet = bind.split(',').all(|w| {
            matches!(
                w.to_ascii_lowercase().as_str(),
                "none" | "no" | "verbose" | "v" | "quiet" | "q"
            )
        });
        if !quiet && !args.quiet {
            eprintln!(
                "srun: warning: --cpu-bind={bind}: tasks are not bound to CPUs of their own \
                 here (task/none); each may use all of the job's CPUs on its node"
            );
        }
    }
    if let Some(distribution) = &args.distribution {
        berth_core::step::parse_distribution(distribution)
            .map_err(|e| anyhow::anyhow!("{}={distribution}: {}", e.field, e.message))?;
    }
    Ok(None)
}

/// The step request for `args`, run from `work_dir` with the environment `current`.
/// `--output/--error/--input` and `--multi-prog` wrap the command in a `/bin/sh -c`
/// program that each task runs as the job's user; `multi_prog` is the configuration
/// file's text when `--multi-prog` is given.
///
/// # Errors
/// A bad `--export`, file pattern, or `--multi-prog` configuration.
pub fn step_request(
    args: &SrunArgs,
    work_dir: Option<String>,
    current: impl IntoIterator<Item = (String, String)>,
    job: &PatternJob,
    multi_prog: Option<&str>,
) -> anyhow::Result<StepCreate> {
    let redirect = redirections(args, job)?;
    let command = match multi_prog {
        Some(config) => {
            let script = multi_prog_script(config)?;
            vec![
                "/bin/sh".to_string(),
                "-c".to_string(),
                format!("{redirect}{script}"),
                "srun".to_string(),
            ]
        }
        None if redirect.is_empty() => args.command.clone(),
        None => {
            let mut command = vec![
                "/bin/sh".to_string(),
                "-c".to_string(),
                format!("{redirect}exec \"$@\""),
                "srun".to_string(),
            ];
            command.extend(args.command.iter().cloned());
            command
        }
    };
    Ok(StepCreate {
        command,
        ntasks: args.allocation.ntasks,
        ntasks_per_node: args.allocation.ntasks_per_node,
        nodes: args.allocation.nodes,
        nodelist: args.allocation.nodelist.clone(),
        gpus_per_task: args.allocation.gpus_per_task,
        cpus_per_task: args.allocation.cpus_per_task,
        kill_on_bad_exit: args.kill_on_bad_exit.is_some_and(|v| v != 0),
        overlap: args.overlap,
        gpu_bind: args.gpu_bind.clone(),
        work_dir,
        environment: export_environment(args.export.as_deref(), current)?,
        distribution: args.distribution.clone(),
        pty: args.pty,
    })
}

/// Writes chunks to stdout/stderr, labelled by task when asked.
struct Printer {
    label: bool,
    /// Only this task's stdout (sattach `--output-filter`).
    stdout_task: Option<u32>,
    /// Only this task's stderr (sattach `--error-filter`).
    stderr_task: Option<u32>,
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
        let only = match chunk.stream {
            OutputStream::Stdout => self.stdout_task,
            OutputStream::Stderr => self.stderr_task,
        };
        if only.is_some_and(|task| task != chunk.task_id) {
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
        ("SLURM_CLUSTER_NAME", "berth".to_string()),
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

/// How a step is followed.
#[derive(Debug, Clone, Copy)]
pub enum Follow {
    /// srun's own step: `--wait` and the time limit (seconds) stop it, so does Ctrl-C.
    Own {
        /// `-t/--time`, seconds.
        limit: Option<u64>,
    },
    /// sattach: Ctrl-C detaches and leaves the step running; only these tasks' streams
    /// when given.
    Attached {
        /// `--output-filter`.
        stdout_task: Option<u32>,
        /// `--error-filter`.
        stderr_task: Option<u32>,
    },
}

/// Follows a created step: prints its output, stops it when `--wait` or `--time` runs out
/// or on Ctrl-C (srun's own step), returns the exit code srun ends with (sattach: the
/// step's; 0 when detached).
pub async fn follow_step(
    client: &Client,
    args: &SrunArgs,
    job_id: i64,
    step: &Step,
    follow: Follow,
) -> anyhow::Result<i32> {
    let (limit, own, stdout_task, stderr_task) = match follow {
        Follow::Own { limit } => (limit, true, None, None),
        Follow::Attached {
            stdout_task,
            stderr_task,
        } => (None, false, stdout_task, stderr_task),
    };
    let path = format!("/v1/jobs/{job_id}/steps/{}", step.step_id);
    let mut printer = Printer {
        label: args.label,
        stdout_task,
        stderr_task,
        width: (step.tasks.len().max(1) - 1).to_string().len(),
        partial: HashMap::new(),
        printed: HashSet::new(),
    };
    let started = Instant::now();
    let mut first_end: Option<Instant> = None;
    let mut stopping = false;
    let mut after = -1;
    let mut failures = 0;
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    // As Slurm's srun, it passes on to its tasks the USR1 and USR2 it gets (a batch
    // shell's `kill -USR1 %1`, `scancel -f`), which would otherwise end it.
    let mut user_signals = UserSignals::new();
    let ended = loop {
        let state: Result<Step, _> = client.get_json(&path).await;
        match state {
            Ok(step) if step.state != StepState::Running => break step,
            Ok(step) => {
                failures = 0;
                if first_end.is_none() && step.tasks.iter().any(|t| t.ended_at.is_some()) {
                    first_end = Some(Instant::now());
                }
                let wait = args.wait.filter(|&w| w > 0 && own);
                let stop = match (limit, wait, first_end) {
                    (Some(limit), _, _) if started.elapsed().as_secs() >= limit => Some(format!(
                        "srun: error: *** STEP {job_id}.{} CANCELLED AT {} DUE TO TIME LIMIT ***",
                        step.step_id,
                        chrono::Local::now().format("%Y-%m-%dT%H:%M:%S")
                    )),
                    (_, Some(wait), Some(first)) if first.elapsed().as_secs() >= wait => {
                        Some(format!(
                            "srun: error: First task exited {wait}s ago\n\
                             srun: Terminating StepId={job_id}.{}",
                            step.step_id
                        ))
                    }
                    _ => None,
                };
                if let (Some(message), false) = (stop, stopping) {
                    eprintln!("{message}");
                    stopping = true;
                    cancel_step(client, &path).await;
                }
            }
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
        tokio::select! {
            _ = tokio::time::sleep(POLL) => {}
            Some(signal) = user_signals.next() => {
                if own && !stopping {
                    forward_signal(client, job_id, step.step_id, signal).await;
                }
            }
            _ = &mut ctrl_c, if !stopping => {
                if !own {
                    printer.flush();
                    eprintln!("sattach: detached from StepId={job_id}.{}", step.step_id);
                    return Ok(0);
                }
                eprintln!("srun: interrupt: cancelling StepId={job_id}.{}", step.step_id);
                stopping = true;
                cancel_step(client, &path).await;
            }
        }
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

/// The USR1 and USR2 srun receives, caught (not ending it).
struct UserSignals {
    usr1: Option<tokio::signal::unix::Signal>,
    usr2: Option<tokio::signal::unix::Signal>,
}

impl UserSignals {
    fn new() -> Self {
        use tokio::signal::unix::{signal, SignalKind};
        UserSignals {
            usr1: signal(SignalKind::user_defined1()).ok(),
            usr2: signal(SignalKind::user_defined2()).ok(),
        }
    }

    /// The next one's number (10 or 12); `None` when neither can come any more.
    async fn next(&mut self) -> Option<i32> {
        async fn recv(signal: &mut Option<tokio::signal::unix::Signal>) -> Option<()> {
            match signal {
                Some(signal) => signal.recv().await,
                None => None,
            }
        }
        tokio::select! {
            Some(()) = recv(&mut self.usr1) => Some(10),
            Some(()) = recv(&mut self.usr2) => Some(12),
            else => None,
        }
    }
}

/// Passes signal `signal` on to the tasks of step `step` of job `job_id`
/// (`POST /v1/jobs/{id}/signal`); a refusal is printed, not fatal.
async fn forward_signal(client: &Client, job_id: i64, step: u32, signal: i32) {
    let request = berth_core::signal::JobSignal {
        signal: berth_core::signal::SignalSpec::Number(i64::from(signal)),
        batch: false,
        full: false,
        step: Some(step),
        array_task: None,
    };
    let sent: Result<berth_core::signal::JobSignalQueued, _> = client
        .post_json(&format!("/v1/jobs/{job_id}/signal"), &request)
        .await;
    if let Err(e) = sent {
        eprintln!("srun: error: forwarding signal {signal} to StepId={job_id}.{step}: {e}");
    }
}

/// Asks the api to stop a step (its tasks get SIGTERM, then SIGKILL).
async fn cancel_step(client: &Client, path: &str) {
    let stopped: Result<Step, _> = client
        .post_json(&format!("{path}/cancel"), &serde_json::json!({}))
        .await;
    if let Err(e) = stopped {
        eprintln!("srun: error: cancelling the step: {e}");
    }
}

/// The `sbatch` options of srun's allocation options (outside an allocation).
pub fn allocation_options(args: &SrunArgs) -> Vec<String> {
    let a = &args.allocation;
    let mut out = Vec::new();
    let mut push = |name: &str, value: Option<String>| {
        if let Some(value) = value {
            out.push(format!("--{name}={value}"));
        }
    };
    push("nodes", a.nodes.map(|n| n.to_string()));
    push("ntasks", a.ntasks.map(|n| n.to_string()));
    push("ntasks-per-node", a.ntasks_per_node.map(|n| n.to_string()));
    push("cpus-per-task", a.cpus_per_task.map(|n| n.to_string()));
    push("gpus-per-task", a.gpus_per_task.map(|n| n.to_string()));
    push("time", a.time.clone());
    let name = a.job_name.clone().or_else(|| {
        args.command.first().map(|c| {
            std::path::Path::new(c)
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_else(|| c.clone())
        })
    });
    push("job-name", name);
    push("partition", a.partition.clone());
    push("account", a.account.clone());
    push("qos", a.qos.clone());
    push("gres", a.gres.clone());
    push("gpus", a.gpus.clone());
    push("gpus-per-node", a.gpus_per_node.clone());
    push("cpus-per-gpu", a.cpus_per_gpu.map(|n| n.to_string()));
    push("mem", a.mem.clone());
    push("mem-per-cpu", a.mem_per_cpu.clone());
    push("mem-per-gpu", a.mem_per_gpu.clone());
    push("constraint", a.constraint.clone());
    push("nodelist", a.nodelist.clone());
    push("exclude", a.exclude.clone());
    push("reservation", a.reservation.clone());
    push("chdir", args.chdir.clone());
    if a.exclusive {
        out.push("--exclusive".to_string());
    }
    // The job's own output is only the holder's: nothing to keep.
    out.push("--output=/dev/null".to_string());
    out
}

/// The batch script of a job srun (or salloc) makes: it holds the allocation until step
/// `step` of the job has ended and exits with its exit code (`None`: until cancelled or
/// out of time, as salloc's).
pub fn holder_script(step: Option<u32>) -> String {
    match step {
        Some(step) => format!("#!/bin/sh\nexec srun --berth-wait-step={step}\n"),
        None => "#!/bin/sh\nwhile :; do sleep 3600; done\n".to_string(),
    }
}

/// How long a holder waits for its step to be created before giving the allocation back.
const HOLDER_PATIENCE: Duration = Duration::from_secs(300);

/// Inside a holder job: waits until step `step` of `SLURM_JOB_ID` has ended and returns
/// its exit code (0 when COMPLETED); gives up after [`HOLDER_PATIENCE`] without it.
async fn hold_for_step(client: &Client, step: u32) -> anyhow::Result<i32> {
    let job_id = allocation(&SrunArgs::default())
        .context("srun --berth-wait-step runs inside a job (SLURM_JOB_ID)")?;
    let path = format!("/v1/jobs/{job_id}/steps/{step}");
    let since = Instant::now();
    loop {
        match client.get_json::<Step>(&path).await {
            Ok(s) if s.state == StepState::Completed => return Ok(0),
            Ok(s) if s.state != StepState::Running => {
                return Ok(s.exit_code.filter(|c| *c != 0).unwrap_or(1))
            }
            Ok(_) => {}
            Err(ClientError::Problem { status: 404, .. }) if since.elapsed() > HOLDER_PATIENCE => {
                bail!("no step {step} was started in job {job_id}: giving the allocation back")
            }
            Err(_) => {}
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// The longest time between two keep-alives of an allocation's client.
const KEEPALIVE_EVERY: Duration = Duration::from_secs(30);

/// The keep-alives of an allocation this process made (salloc's, srun's outside an
/// allocation): while it lives, a task tells the api every quarter of the cluster's
/// inactive limit (Slurm's `InactiveLimit`; at most every 30 s, at least every second)
/// that the client is still there, so the job outlives it by at most that limit when it
/// is killed without a chance to cancel the job (SIGKILL, a lost machine). Dropping it
/// stops them.
pub struct KeepAlive(tokio::task::JoinHandle<()>);

impl KeepAlive {
    /// Starts keeping job `id` alive (the first keep-alive goes at once). It stops by
    /// itself once the api says the job has ended (409), is unknown or not this user's.
    pub fn start(client: &Client, id: i64) -> KeepAlive {
        let client = client.clone();
        KeepAlive(tokio::spawn(async move {
            let path = format!("/v1/jobs/{id}/keepalive");
            let mut every = KEEPALIVE_EVERY;
            loop {
                let sent: Result<berth_core::wire::JobKeepalive, ClientError> =
                    client.post_json(&path, &serde_json::json!({})).await;
                let wait = match sent {
                    Ok(answer) => {
                        if answer.inactive_limit > 0 {
                            every = Duration::from_secs(answer.inactive_limit / 4)
                                .clamp(Duration::from_secs(1), KEEPALIVE_EVERY);
                        }
                        every
                    }
                    Err(ClientError::Problem {
                        status: 403 | 404 | 409,
                        ..
                    }) => return,
                    // The api is unreachable for now: try again soon.
                    Err(_) => every.min(Duration::from_secs(2)),
                };
                tokio::time::sleep(wait).await;
            }
        }))
    }
}

impl Drop for KeepAlive {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Waits until job `id` runs, saying so as Slurm's srun and salloc do (`prefix`: `srun`
/// or `salloc`); returns the job, or an error when it ended first.
pub async fn wait_for_allocation(
    client: &Client,
    id: i64,
    prefix: &str,
) -> anyhow::Result<berth_core::wire::Job> {
    let mut told = false;
    loop {
        let job = client.job_get(id).await?;
        match job.state {
            berth_core::state::JobState::Running => {
                eprintln!("{prefix}: job {id} has been allocated resources");
                return Ok(job);
            }
            berth_core::state::JobState::Pending => {
                if !told {
                    eprintln!("{prefix}: job {id} queued and waiting for resources");
                    told = true;
                }
            }
            state => bail!(
                "{prefix}: job {id} ended ({state}) before it was allocated resources{}",
                job.reason
                    .as_deref()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default()
            ),
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// srun outside an allocation: submits a job of the allocation options whose batch
/// script holds it until step 0 ends, creates step 0 in it once it runs, follows it, and
/// returns its exit code. Ctrl-C while it waits cancels the job.
async fn run_in_new_job(client: &Client, args: &SrunArgs) -> anyhow::Result<i32> {
    let limit = time_limit(args)?;
    let submit_dir = std::env::current_dir().context("reading the current directory")?;
    // A bad file pattern, --export or --multi-prog file is refused before any job is made
    // (not after waiting for its resources).
    request_here(args, 0, &[])?;
    let job = berth_core::wire::JobCreate {
        script: Some(holder_script(Some(0))),
        args: allocation_options(args),
        spec: None,
        submit_dir: Some(submit_dir.display().to_string()),
        environment: crate::submit::submit_environment(),
        script_name: None,
        script_args: Vec::new(),
    };
    let created = client
        .job_create(&job, None)
        .await
        .map_err(|e| anyhow::anyhow!("srun: error: {e}"))?;
    let id = created.id;
    // Until srun ends, its job is kept alive; once it is gone, the job ends after the
    // cluster's inactive limit (the step's tasks with it).
    let _alive = KeepAlive::start(client, id);
    let allocated = tokio::select! {
        job = wait_for_allocation(client, id, "srun") => job,
        _ = tokio::signal::ctrl_c() => {
            let _ = client.job_cancel(id).await;
            bail!("srun: Job allocation {id} has been revoked (interrupted)");
        }
    };
    let allocated = match allocated {
        Ok(job) => job,
        Err(e) => {
            let _ = client.job_cancel(id).await;
            return Err(e);
        }
    };
    let request = match request_here(args, id, &allocation_environment(&allocated, &submit_dir)) {
        Ok(request) => request,
        Err(e) => {
            let _ = client.job_cancel(id).await;
            return Err(e);
        }
    };
    let step = match create_step(client, id, &request).await {
        Ok(step) => step,
        Err(e) => {
            let _ = client.job_cancel(id).await;
            return Err(e);
        }
    };
    follow_own(client, args, id, &step, limit).await
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
        assert_eq!(a.allocation.ntasks, Some(1));
        assert!(a.label);
        assert_eq!(a.command, ["python", "-u", "train.py", "--lr", "3"]);
        let a = parse(&["srun", "-N2", "--gpus-per-task=1", "--", "bash", "-c", "x"]);
        assert_eq!(
            (a.allocation.nodes, a.allocation.gpus_per_task),
            (Some(2), Some(1))
        );
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

    /// Runs `command` (a step's) as a task would, with the task's variables.
    fn run_as_task(command: &[String], procid: u32) -> (String, String) {
        let out = std::process::Command::new(&command[0])
            .args(&command[1..])
            .env("SLURM_PROCID", procid.to_string())
            .env("SLURM_STEP_ID", "3")
            .env("SLURM_NODEID", "1")
            .env("SLURMD_NODENAME", "node-2")
            .current_dir(std::env::temp_dir())
            .output()
            .unwrap();
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    fn job() -> PatternJob {
        PatternJob {
            job_id: "42".into(),
            user: "ann".into(),
            name: "it's".into(),
            array_job_id: None,
            array_task_id: None,
        }
    }

    #[test]
    fn file_patterns_expand_in_each_tasks_shell() {
        let word = pattern_word(
            "/tmp/%x-%u-%j.%s-%3t-%n-%N-%J-%A-%%.log",
            &job(),
            "--output",
        )
        .unwrap();
        let out = std::process::Command::new("/bin/sh")
            .args(["-c", &format!("printf '%s' {word}")])
            .env("SLURM_PROCID", "7")
            .env("SLURM_STEP_ID", "3")
            .env("SLURM_NODEID", "1")
            .env("SLURMD_NODENAME", "node-2")
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "/tmp/it's-ann-42.3-007-1-node-2-42.3-42-%.log"
        );
        assert!(pattern_word("x-%q", &job(), "--output")
            .unwrap_err()
            .to_string()
            .contains("--output=\"x-%q\": %q is not one of srun's"));
        assert!(pattern_word("x-%", &job(), "--error").is_err());
    }

    #[test]
    fn output_none_and_one_tasks_output() {
        let args = |output: &str| SrunArgs {
            output: Some(output.into()),
            command: vec!["sh".into(), "-c".into(), "echo out-$SLURM_PROCID".into()],
            ..Default::default()
        };
        let request = step_request(&args("1"), None, Vec::new(), &job(), None).unwrap();
        assert_eq!(run_as_task(&request.command, 0).0, "");
        assert_eq!(run_as_task(&request.command, 1).0, "out-1\n");
        let request = step_request(&args("none"), None, Vec::new(), &job(), None).unwrap();
        assert_eq!(run_as_task(&request.command, 1).0, "");
        let plain = step_request(
            &SrunArgs {
                command: vec!["true".into()],
                ..Default::default()
            },
            None,
            Vec::new(),
            &job(),
            None,
        )
        .unwrap();
        assert_eq!(plain.command, ["true"], "no wrapper without redirections");
        let bad = SrunArgs {
            input: Some("2".into()),
            command: vec!["true".into()],
            ..Default::default()
        };
        assert!(step_request(&bad, None, Vec::new(), &job(), None).is_err());
    }

    #[test]
    fn multi_prog_runs_each_tasks_line() {
        let config = "# comment\n\n0 echo leader %t\n1-2,5 echo worker %t %o\n* echo rest %t\n";
        let request = step_request(
            &SrunArgs {
                multi_prog: true,
                command: vec!["mp.conf".into()],
                ..Default::default()
            },
            None,
            Vec::new(),
            &job(),
            Some(config),
        )
        .unwrap();
        let run = |t| run_as_task(&request.command, t).0;
        assert_eq!(run(0), "leader 0\n");
        assert_eq!(run(2), "worker 2 1\n");
        assert_eq!(run(5), "worker 5 2\n");
        assert_eq!(run(9), "rest 9\n");
        let only = multi_prog_script("0 true\n").unwrap();
        let out = std::process::Command::new("/bin/sh")
            .args(["-c", &only, "srun"])
            .env("SLURM_PROCID", "1")
            .output()
            .unwrap();
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stderr).contains("no program for task 1"));
        for bad in ["0\n", "x-1 true\n", "3-1 true\n", "# only comments\n"] {
            assert!(multi_prog_script(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn refused_and_warned_options() {
        let with = |f: fn(&mut SrunArgs)| {
            let mut a = SrunArgs {
                command: vec!["true".into()],
                ..Default::default()
            };
            f(&mut a);
            a
        };
        let e = check_options(&with(|a| a.mpi = Some("pmix_v4".into())), None).unwrap_err();
        assert!(e
            .to_string()
            .starts_with("--mpi=pmix_v4: Berth runs no PMI server"));
        assert!(
            check_options(&with(|_| {}), Some("pmi2")).is_err(),
            "SLURM_MPI_TYPE"
        );
        assert!(check_options(&with(|a| a.mpi = Some("openmpi".into())), None).is_err());
        assert_eq!(
            check_options(&with(|a| a.mpi = Some("list".into())), None).unwrap(),
            Some("MPI plugin types are...\n\tnone\n".to_string())
        );
        assert!(check_options(&with(|a| a.het_group = Some("0".into())), None).is_err());
        assert!(check_options(&with(|a| a.pty = true), None).is_ok());
        assert!(check_options(
            &with(|a| {
                a.pty = true;
                a.output = Some("out.txt".into());
            }),
            None
        )
        .is_err());
        assert!(check_options(&with(|a| a.cpu_bind = Some("cores".into())), None).is_ok());
        assert!(check_options(&with(|a| a.distribution = Some("cyclic".into())), None).is_ok());
        assert!(check_options(&with(|a| a.distribution = Some("spiral".into())), None).is_err());
        let a = parse(&[
            "srun",
            "--wait=60",
            "-n",
            "2",
            "-u",
            "-m",
            "plane=2",
            "hostname",
        ]);
        assert_eq!((a.wait, a.unbuffered), (Some(60), true));
        assert_eq!(a.distribution.as_deref(), Some("plane=2"));
        assert_eq!(a.command, ["hostname"]);
    }

    #[test]
    fn allocation_options_make_the_job() {
        let a = parse(&[
            "srun",
            "-N2",
            "--gpus-per-node=1",
            "-p",
            "gpu",
            "-t",
            "5",
            "python",
            "train.py",
        ]);
        let options = allocation_options(&a);
        for expected in [
            "--nodes=2",
            "--gpus-per-node=1",
            "--partition=gpu",
            "--time=5",
            "--job-name=python",
        ] {
            assert!(
                options.contains(&expected.to_string()),
                "{expected}: {options:?}"
            );
        }
        let job = berth_core::sbatch::parse_batch(&holder_script(Some(0)), &options).unwrap();
        assert_eq!(job.spec.nodes, Some(2));
    }

    /// srun and salloc read the allocation options alike (one declaration), each with
    /// its own help, and they make the same job options.
    #[test]
    fn srun_and_salloc_share_the_allocation_options() {
        #[derive(clap::Parser)]
        struct Salloc {
            #[command(flatten)]
            args: crate::salloc::SallocArgs,
        }
        let words = [
            "-N2",
            "-n",
            "4",
            "--ntasks-per-node=2",
            "-c3",
            "--gpus-per-task=1",
            "-t",
            "5",
            "-J",
            "x",
            "-p",
            "gpu",
            "-A",
            "ml",
            "-q",
            "high",
            "--gres=gpu:1",
            "-G",
            "2",
            "--gpus-per-node=1",
            "--cpus-per-gpu=4",
            "--mem=1G",
            "--mem-per-cpu=512",
            "--mem-per-gpu=2G",
            "-C",
            "h100",
            "-w",
            "node-1",
            "-x",
            "node-2",
            "--reservation=r",
            "--exclusive",
        ];
        let line = |first: &'static str| {
            let mut line = vec![first];
            line.extend(words);
            line.push("true");
            line
        };
        let srun = parse(&line("srun"));
        let salloc = <Salloc as clap::Parser>::try_parse_from(line("salloc"))
            .unwrap()
            .args;
        assert_eq!(srun.allocation, salloc.allocation);
        assert_eq!(salloc.command, ["true"]);
        let options = allocation_options(&srun);
        for expected in [
            "--nodes=2",
            "--ntasks=4",
            "--ntasks-per-node=2",
            "--cpus-per-task=3",
            "--gpus-per-task=1",
            "--time=5",
            "--job-name=x",
            "--partition=gpu",
            "--account=ml",
            "--qos=high",
            "--gres=gpu:1",
            "--gpus=2",
            "--gpus-per-node=1",
            "--cpus-per-gpu=4",
            "--mem=1G",
            "--mem-per-cpu=512",
            "--mem-per-gpu=2G",
            "--constraint=h100",
            "--nodelist=node-1",
            "--exclude=node-2",
            "--reservation=r",
            "--exclusive",
        ] {
            assert!(
                options.contains(&expected.to_string()),
                "{expected}: {options:?}"
            );
        }
        // Each command's own help for the same option.
        let help = |cmd: clap::Command, id: &str| {
            cmd.get_arguments()
                .find(|a| a.get_id().as_str() == id)
                .and_then(|a| a.get_help())
                .map(|h| h.to_string())
                .unwrap()
        };
        let srun_cmd = <Srun as clap::CommandFactory>::command();
        let salloc_cmd = <Salloc as clap::CommandFactory>::command();
        assert_eq!(
            help(srun_cmd.clone(), "nodes"),
            "-N/--nodes: use the first N nodes of the allocation"
        );
        assert_eq!(help(salloc_cmd.clone(), "nodes"), "-N/--nodes");
        assert_eq!(
            help(srun_cmd.clone(), "account"),
            "-A/--account (outside an allocation)"
        );
        assert_eq!(
            help(salloc_cmd, "time"),
            "-t/--time: the allocation's time limit"
        );
        assert_eq!(help(srun_cmd, "ntasks_per_node"), "--ntasks-per-node");
        // A step is either --overlap or --exclusive.
        assert!(<Srun as clap::Parser>::try_parse_from([
            "srun",
            "--overlap",
            "--exclusive",
            "true"
        ])
        .is_err());
    }

    #[test]
    fn labels_whole_lines_by_task() {
        let mut printer = Printer {
            label: true,
            stdout_task: None,
            stderr_task: None,
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
