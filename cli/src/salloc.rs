//! `salloc` (an allocation and a command, by default a shell, run here while it lasts; the
//! command's `srun` steps run on the allocation's nodes) and `sattach` (a running step's
//! output, as it comes).
//!
//! Berth's salloc makes a job whose batch script only holds the allocation (see
//! [`crate::srun::holder_script`]), waits until it runs, then runs the command on this
//! machine with `SLURM_JOB_ID` and the allocation's variables set, so that `srun` in it
//! creates steps of that job. When the command exits the job is cancelled ("Relinquishing
//! job allocation"); when the job ends first (time limit, scancel) the command gets
//! SIGHUP, as Slurm's salloc does. While it runs salloc keeps the allocation alive
//! ([`crate::srun::KeepAlive`]): killed without relinquishing it, its job ends after the
//! cluster's inactive limit (Slurm's `InactiveLimit`).

use crate::client::{Client, ClientError};
use crate::srun::{
    allocation_environment, allocation_options, follow_step, holder_script, wait_for_allocation,
    AllocationArgs, KeepAlive, SrunArgs,
};
use anyhow::{bail, Context};
use berth_core::state::JobState;
use berth_core::step::{Step, StepState};
use std::time::Duration;

/// salloc's options (the allocation ones are srun's: [`AllocationArgs`]).
#[derive(Debug, Clone, Default, clap::Args)]
#[command(mut_args(crate::srun::slurm_heading))]
pub struct SallocArgs {
    /// The allocation options.
    #[command(flatten)]
    pub allocation: AllocationArgs,
    /// --no-shell: make the allocation, print its id and exit, leaving it to run until
    /// cancelled or out of time.
    #[arg(long)]
    pub no_shell: bool,
    /// -Q/--quiet: no messages.
    #[arg(short = 'Q', long)]
    pub quiet: bool,
    /// The command to run (default: $SHELL, else /bin/sh).
    #[arg(num_args = 0.., trailing_var_arg = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

impl SallocArgs {
    /// The same allocation as srun outside an allocation would make.
    fn as_srun(&self, command: &[String]) -> SrunArgs {
        SrunArgs {
            allocation: self.allocation.clone(),
            command: command.to_vec(),
            ..Default::default()
        }
    }
}

/// Runs salloc; returns the command's exit code (1 when it was killed by a signal).
///
/// # Errors
/// A refused allocation (the api's problem, naming the option), an allocation that ended
/// before it started, a command that cannot be started.
pub async fn run(client: &Client, args: &SallocArgs) -> anyhow::Result<i32> {
    let shell = std::env::var("SHELL")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "/bin/sh".to_string());
    let command = if args.command.is_empty() {
        vec![shell]
    } else {
        args.command.clone()
    };
    let mut srun_args = args.as_srun(&command);
    if args.command.is_empty() && args.allocation.job_name.is_none() {
        srun_args.allocation.job_name = Some("interactive".to_string());
    }
    let submit_dir = std::env::current_dir().context("reading the current directory")?;
    let job = berth_core::wire::JobCreate {
        script: Some(holder_script(None)),
        args: allocation_options(&srun_args),
        spec: None,
        submit_dir: Some(submit_dir.display().to_string()),
        environment: crate::submit::submit_environment(),
        script_name: None,
        script_args: Vec::new(),
    };
    let created = client
        .job_create(&job, None)
        .await
        .map_err(|e| anyhow::anyhow!("salloc: error: {e}"))?;
    let id = created.id;
    // While salloc runs, its allocation is kept alive; killed without a chance to
    // relinquish it (SIGKILL, a lost machine), the job ends after the cluster's inactive
    // limit. `--no-shell` leaves the job to run until cancelled or out of time.
    let _alive = (!args.no_shell).then(|| KeepAlive::start(client, id));
    let say = |text: String| {
        if !args.quiet {
            eprintln!("{text}");
        }
    };
    say(format!("salloc: Pending job allocation {id}"));
    let allocated = tokio::select! {
        job = wait_for_allocation(client, id, "salloc") => job,
        _ = tokio::signal::ctrl_c() => {
            let _ = client.job_cancel(id).await;
            bail!("salloc: Job allocation {id} has been revoked (interrupted)");
        }
    };
    let job = match allocated {
        Ok(job) => job,
        Err(e) => {
            let _ = client.job_cancel(id).await;
            return Err(e);
        }
    };
    let nodelist = job.nodelist.clone().unwrap_or_default();
    say(format!("salloc: Granted job allocation {id}"));
    say(format!("salloc: Nodes {nodelist} are ready for job"));
    if args.no_shell {
        return Ok(0);
    }
    let mut child = tokio::process::Command::new(&command[0]);
    child
        .args(&command[1..])
        .envs(allocation_environment(&job, &submit_dir))
        // The command's srun and squeue reach the same api with the same credentials.
        .env("BERTH_URL", client.base_url())
        .env("BERTH_TOKEN", client.token());
    let mut child = match child.spawn() {
        Ok(child) => child,
        Err(e) => {
            let _ = client.job_cancel(id).await;
            bail!("salloc: error: running {}: {e}", command[0]);
        }
    };
    // Ctrl-C belongs to the command (the terminal sends it to the command's process group);
    // salloc only watches the allocation and waits.
    let mut interrupts = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
    let status = loop {
        tokio::select! {
            status = child.wait() => break status?,
            _ = interrupts.recv() => {}
            _ = tokio::time::sleep(Duration::from_secs(2)) => {
                match client.job_get(id).await {
                    Ok(job) if job.state != JobState::Running => {
                        say(format!("salloc: Job allocation {id} has been revoked."));
                        if let Some(pid) = child.id() {
                            // SIGHUP, as a terminal that went away.
                            let _ = nix::sys::signal::kill(
                                nix::unistd::Pid::from_raw(pid as i32),
                                nix::sys::signal::Signal::SIGHUP,
                            );
                        }
                    }
                    _ => {}
                }
            }
        }
    };
    say(format!("salloc: Relinquishing job allocation {id}"));
    if let Err(e) = client.job_cancel(id).await {
        eprintln!("salloc: error: cancelling job {id}: {e}");
    }
    Ok(status.code().unwrap_or(1))
}

/// sattach's options.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SattachArgs {
    /// -l/--label: prefix each line with its task id.
    #[arg(short = 'l', long)]
    pub label: bool,
    /// --layout: print the step's task layout and exit.
    #[arg(long)]
    pub layout: bool,
    /// -Q/--quiet.
    #[arg(short = 'Q', long)]
    pub quiet: bool,
    /// -u/--pty: this terminal becomes task 0's, of a step started with `srun --pty`:
    /// what is typed goes to it, its screen comes here, until it ends.
    #[arg(short = 'u', long)]
    pub pty: bool,
    /// --input-filter: refused (standard input is not forwarded to tasks).
    #[arg(long)]
    pub input_filter: Option<u32>,
    /// --output-filter=TASK: only this task's stdout.
    #[arg(long)]
    pub output_filter: Option<u32>,
    /// --error-filter=TASK: only this task's stderr.
    #[arg(long)]
    pub error_filter: Option<u32>,
    /// JOB.STEP.
    #[arg(value_name = "JOBID.STEPID")]
    pub step: String,
}

/// Runs sattach: prints the step's output (from its start) until it ends; Ctrl-C detaches
/// and leaves the step running. With `--pty`, on a step started with `srun --pty`, this
/// terminal becomes task 0's (raw mode: keys, Ctrl-C included, go to the remote terminal)
/// until the step ends. Returns the step's exit code.
///
/// # Errors
/// A step id that is not `JOB.STEP`, an unknown step, refused options.
pub async fn sattach(client: &Client, args: &SattachArgs) -> anyhow::Result<i32> {
    let filtered =
        args.input_filter.is_some() || args.output_filter.is_some() || args.error_filter.is_some();
    if args.pty && filtered {
        bail!("sattach: error: --pty is not compatible with --input-filter, --output-filter or --error-filter");
    }
    if args.input_filter.is_some() {
        bail!("sattach: --input-filter: standard input is not forwarded to tasks here");
    }
    let (job, step) = crate::scancel::parse_step_id(&args.step).with_context(|| {
        format!(
            "sattach: error: {:?} is not a step id (JOBID.STEPID, as 5.0)",
            args.step
        )
    })?;
    let found: Result<Step, ClientError> = client
        .get_json(&format!("/v1/jobs/{job}/steps/{step}"))
        .await;
    let found = match found {
        Ok(step) => step,
        Err(ClientError::Problem { status: 404, .. }) => {
            bail!("sattach: error: Job step {job}.{step} does not exist")
        }
        Err(e) => return Err(e.into()),
    };
    if args.pty && !args.layout {
        if !found.pty {
            bail!(
                "sattach: error: --pty: step {job}.{step} was not started with --pty (srun --pty)"
            );
        }
        if found.state != StepState::Running {
            bail!("sattach: error: step {job}.{step} has ended");
        }
        if !crate::pty::stdin_is_terminal() {
            bail!("sattach: error: --pty: standard input is not a terminal");
        }
        return crate::pty::attach(client, job, &found).await;
    }
    if args.layout {
        println!("Job step layout:");
        println!(
            "\t{} tasks, {} nodes ({})",
            found.tasks.len(),
            found
                .tasks
                .iter()
                .map(|t| t.node.as_str())
                .collect::<std::collections::BTreeSet<_>>()
                .len(),
            found.nodelist
        );
        for task in &found.tasks {
            println!(
                "\tNode {} ({}), task {}",
                task.node_index, task.node, task.task_id
            );
        }
        return Ok(0);
    }
    let srun = SrunArgs {
        label: args.label,
        quiet: args.quiet,
        ..Default::default()
    };
    follow_step(
        client,
        &srun,
        job,
        &found,
        crate::srun::Follow::Attached {
            stdout_task: args.output_filter,
            stderr_task: args.error_filter,
        },
    )
    .await
}
