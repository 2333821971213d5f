//! From srun's options to a step request: the exported environment, filename patterns
//! (`%j`, `%t`, ...), redirections, `--multi-prog` configurations and the checks that
//! refuse what Berth cannot do.

#[allow(unused_imports)]
use super::*;

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
    // Slurm reads the first letter only (`a…`, `t…`, either case).
    let append = match args.open_mode.as_deref() {
        None => false,
        Some(mode) => match mode.chars().next().map(|c| c.to_ascii_lowercase()) {
            Some('t') => false,
            Some('a') => true,
            _ => bail!("--open-mode={mode}: append or truncate"),
        },
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
/// `--cpu-bind`, `--mem-bind`, `--accel-bind`, `--container*`, `--distribution`'s
/// levels), printing warnings; `Ok(Some(text))` for
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
        check_het_group(group)?;
    }
    check_extra_options(args)?;
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
        if !binds_nothing(bind) && !args.quiet {
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
        gpu_bind: effective_gpu_bind(args),
        work_dir,
        environment: {
            let mut env = export_environment(args.export.as_deref(), current)?;
            // Slurm's srun sets SLURM_NETWORK for its tasks from --network.
            if let Some(network) = &args.extra.network {
                env.insert("SLURM_NETWORK".to_string(), network.clone());
            }
            env
        },
        distribution: args.distribution.clone(),
        pty: args.pty,
    })
}

/// Checks `--het-group` (`0`, `[0]`, `0-0`, `0,0`: Slurm's list of component indices) for
/// a job that has one component: `0` is that component; the step runs as without it.
///
/// # Errors
/// A value that is not a list of indices (Slurm's "Invalid --het-group value"), or one
/// naming a component above 0.
pub fn check_het_group(group: &str) -> anyhow::Result<()> {
    let invalid = || anyhow::anyhow!("Invalid --het-group value: {group}");
    let inner = group
        .strip_prefix('[')
        .and_then(|g| g.strip_suffix(']'))
        .unwrap_or(group);
    let mut highest = None;
    for part in inner.split(',') {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        let lo: u32 = lo.trim().parse().map_err(|_| invalid())?;
        let hi: u32 = hi.trim().parse().map_err(|_| invalid())?;
        if hi < lo {
            return Err(invalid());
        }
        highest = highest.max(Some(hi));
    }
    match highest {
        Some(0) => Ok(()),
        Some(n) => bail!(
            "--het-group={group}: Attempt to run a job step with het group value of {n}, but \
             the job allocation has maximum value of 0 (Berth has no heterogeneous jobs: one \
             component per job)"
        ),
        None => Err(invalid()),
    }
}
