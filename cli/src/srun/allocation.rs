//! srun outside an allocation: a new job whose batch script holds the allocation, kept
//! alive while srun waits for it and runs the step in it.

#[allow(unused_imports)]
use super::*;

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
    push("comment", args.extra.comment.clone());
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
pub(crate) async fn hold_for_step(client: &Client, step: u32) -> anyhow::Result<i32> {
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
pub(crate) async fn run_in_new_job(client: &Client, args: &SrunArgs) -> anyhow::Result<i32> {
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
