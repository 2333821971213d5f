//! Whom a job runs as (`JobUser`), the client commands put on its `PATH`, and its
//! environment: the submission's, Slurm's variables, Berth's, and its umask.

#[allow(unused_imports)]
use super::*;

/// The account a job runs as, when the worker switches users.
#[derive(Debug, Clone)]
pub struct JobUser {
    /// The user name.
    pub name: String,
    /// Its uid.
    pub uid: nix::unistd::Uid,
    /// Its primary gid.
    pub gid: nix::unistd::Gid,
}

/// The account `user` runs as on this node: `None` when the worker does not switch
/// users.
///
/// # Errors
/// [`WorkerError::UserUnknown`] when it has no account here.
pub fn job_user(settings: &LaunchSettings, user: &str) -> Result<Option<JobUser>, WorkerError> {
    if !settings.run_as_user {
        return Ok(None);
    }
    match nix::unistd::User::from_name(user) {
        Ok(Some(account)) if account.uid.is_root() && !settings.allow_root_jobs => {
            Err(WorkerError::RootRefused {
                user: user.to_string(),
                node: settings.node_name.clone(),
            })
        }
        Ok(Some(account)) => Ok(Some(JobUser {
            name: account.name,
            uid: account.uid,
            gid: account.gid,
        })),
        _ => Err(WorkerError::UserUnknown {
            user: user.to_string(),
            node: settings.node_name.clone(),
        }),
    }
}

/// The job's checkpoint directory, `{checkpoint_root}/{job_id}`: see
/// [`crate::run_dir::checkpoint_dir`].
pub use crate::run_dir::checkpoint_dir;

/// The names the `berth` binary answers to inside a job.
pub const CLIENT_COMMANDS: &[&str] = &[
    "srun", "scontrol", "squeue", "scancel", "sbatch", "sinfo", "sstat", "sacct", "sprio",
    "sattach", "sbcast",
];

/// Makes (or finds) the node's directory of client commands, `{state_dir}/bin` (mode
/// 0755, root's): links named after [`CLIENT_COMMANDS`] to `settings.client_exe`, the same
/// for every job. `None` when there is no client executable.
///
/// # Errors
/// [`WorkerError::Io`] when the directory or a link cannot be made.
pub fn client_command_dir(settings: &LaunchSettings) -> Result<Option<PathBuf>, WorkerError> {
    let Some(exe) = &settings.client_exe else {
        return Ok(None);
    };
    let dir = settings.state_dir.join("bin");
    if !dir.is_dir() {
        crate::run_dir::ensure_dir(&dir, 0o755)?;
    }
    for name in CLIENT_COMMANDS {
        let link = dir.join(name);
        if std::fs::read_link(&link).ok().as_deref() == Some(exe.as_path()) {
            continue;
        }
        let _ = std::fs::remove_file(&link);
        if let Err(source) = std::os::unix::fs::symlink(exe, &link) {
            // Another launch may have made it meanwhile.
            if std::fs::read_link(&link).ok().as_deref() != Some(exe.as_path()) {
                return Err(WorkerError::Io {
                    action: "link a client command",
                    path: link,
                    source,
                });
            }
        }
    }
    Ok(Some(dir))
}

/// The umask a job's files get: its submission's `SLURM_UMASK` (octal, as `sbatch` sends
/// it: `0022`), else [`DEFAULT_UMASK`].
pub fn job_umask(environment: &BTreeMap<String, String>) -> u32 {
    environment
        .get("SLURM_UMASK")
        .and_then(|mask| u32::from_str_radix(mask.trim(), 8).ok())
        .filter(|mask| *mask <= 0o777)
        .unwrap_or(DEFAULT_UMASK)
}

/// What a job inherits besides its submission's environment: a job run as its own user
/// gets nothing of the worker's environment, only its account's `HOME`, `USER`,
/// `LOGNAME` and `SHELL` (its submission's win); a job run as the worker's user gets the
/// worker's environment, less its credentials ([`SECRET_VARIABLES`], the node token).
pub fn inherited_environment(
    settings: &LaunchSettings,
    user: Option<&JobUser>,
) -> Vec<(String, String)> {
    match user {
        Some(user) => {
            let account = nix::unistd::User::from_uid(user.uid).ok().flatten();
            let mut env = vec![
                ("USER".to_string(), user.name.clone()),
                ("LOGNAME".to_string(), user.name.clone()),
            ];
            if let Some(account) = account {
                env.push(("HOME".to_string(), account.dir.display().to_string()));
                env.push(("SHELL".to_string(), account.shell.display().to_string()));
            }
            env
        }
        None => std::env::vars()
            .filter(|(name, value)| {
                !SECRET_VARIABLES.contains(&name.as_str())
                    && settings.token.as_deref() != Some(value.as_str())
            })
            .collect(),
    }
}

/// Puts the node's client commands ([`client_command_dir`]) first on the job's `PATH`
/// (after which [`DEFAULT_JOB_PATH`] when the job has none).
pub(crate) fn put_commands_on_path(
    settings: &LaunchSettings,
    environment: &mut BTreeMap<String, String>,
) -> Result<(), WorkerError> {
    let Some(bin) = client_command_dir(settings)? else {
        return Ok(());
    };
    let bin = bin.display().to_string();
    let path = environment
        .get("PATH")
        .filter(|path| !path.is_empty())
        .cloned()
        .unwrap_or_else(|| DEFAULT_JOB_PATH.to_string());
    // `srun`'s environment already has it first.
    if path.split(':').next() != Some(bin.as_str()) {
        environment.insert("PATH".to_string(), format!("{bin}:{path}"));
    }
    Ok(())
}

/// The batch script's environment: `inherited` (the worker's own) without the worker's
/// credentials, overlaid with the submission environment, then Slurm's variables
/// (`SLURM_JOB_ID`, `SLURM_JOB_NODELIST` compressed, `CUDA_VISIBLE_DEVICES` …) and
/// Berth's (`BERTH_JOB_ID`, `BERTH_API`). The job's devices are named as [`HeldDevices`]
/// says: `CUDA_VISIBLE_DEVICES` and `GPU_DEVICE_ORDINAL` by GPU index, MIG UUID or a
/// shard's GPU index, `SLURM_JOB_GPUS` by physical GPU index, `SLURM_GPUS_ON_NODE` counts
/// GPUs and MIG instances, `SLURM_SHARDS_ON_NODE` shards. Variables that do not apply
/// (array ids for a job that is not an array task, GPU lists for a job without GPUs) are
/// removed even when inherited. `SLURM_TASK_PID` is set by the batch shell itself. The
/// variables of [`berth_core::wire::API_SLURM_VARIABLES`] come from the assignment.
pub fn job_environment(
    settings: &LaunchSettings,
    assignment: &Assignment,
    work_dir: &Path,
    inherited: impl IntoIterator<Item = (String, String)>,
) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = inherited
        .into_iter()
        .filter(|(name, value)| {
            !SECRET_VARIABLES.contains(&name.as_str())
                && settings.token.as_deref() != Some(value.as_str())
        })
        .collect();
    env.extend(
        assignment
            .environment
            .iter()
            // A job submitted from inside a step does not inherit that step's variables.
            .filter(|(name, _)| !name.starts_with("SLURM_STEP"))
            .map(|(name, value)| (name.clone(), value.clone())),
    );

    let mut set = |name: &str, value: Option<String>| match value {
        Some(value) => {
            env.insert(name.to_string(), value);
        }
        None => {
            env.remove(name);
        }
    };
    let job_id = assignment.job_id.to_string();
    let nodelist = if assignment.nodes.is_empty() {
        settings.node_name.clone()
    } else {
        hostlist::compress(&assignment.nodes)
    };
    let num_nodes = assignment.nodes.len().max(1).to_string();
    let ntasks = assignment.ntasks.to_string();
    let held = HeldDevices::new(&settings.devices, &assignment.gpus);
    let visible = held.visible_list();
    let submit_dir = assignment
        .submit_dir
        .clone()
        .unwrap_or_else(|| work_dir.display().to_string());
    let submit_host = assignment
        .environment
        .get("HOSTNAME")
        .cloned()
        .unwrap_or_else(crate::host_name);

    set("SLURM_JOB_ID", Some(job_id.clone()));
    set("SLURM_JOBID", Some(job_id.clone()));
    set("SLURM_JOB_NAME", Some(assignment.name.clone()));
    set("SLURM_JOB_USER", Some(assignment.user.clone()));
    set("SLURM_JOB_ACCOUNT", assignment.account.clone());
    set("SLURM_JOB_PARTITION", Some(assignment.partition.clone()));
    set("SLURM_JOB_NODELIST", Some(nodelist.clone()));
    set("SLURM_NODELIST", Some(nodelist));
    set("SLURM_JOB_NUM_NODES", Some(num_nodes.clone()));
    set("SLURM_NNODES", Some(num_nodes));
    set("SLURM_NTASKS", Some(ntasks.clone()));
    set("SLURM_NPROCS", Some(ntasks));
    set(
        "SLURM_NTASKS_PER_NODE",
        assignment.ntasks_per_node.map(|n| n.to_string()),
    );
    set(
        "SLURM_CPUS_PER_TASK",
        assignment.cpus_per_task.map(|n| n.to_string()),
    );
    // The CPUs allocated here (every node of a job gets as many; Slurm writes
    // `SLURM_JOB_CPUS_PER_NODE` as `N(xK)` for K nodes).
    let cpus_here = if assignment.cpu_ids.is_empty() {
        assignment.cpu_limit
    } else {
        Some(assignment.cpu_ids.len() as u32)
    };
    let node_count = assignment.nodes.len().max(1);
    set("SLURM_CPUS_ON_NODE", cpus_here.map(|n| n.to_string()));
    set(
        "SLURM_JOB_CPUS_PER_NODE",
        cpus_here.map(|n| {
            if node_count > 1 {
                format!("{n}(x{node_count})")
            } else {
                n.to_string()
            }
        }),
    );
    set("SLURM_GPUS_ON_NODE", Some(held.gpus.to_string()));
    set(
        "SLURM_SHARDS_ON_NODE",
        (held.shards > 0).then(|| held.shards.to_string()),
    );
    set("SLURM_JOB_GPUS", held.physical_list());
    set("CUDA_VISIBLE_DEVICES", visible.clone());
    set("GPU_DEVICE_ORDINAL", visible);
    set("SLURM_SUBMIT_DIR", Some(submit_dir));
    set("SLURM_SUBMIT_HOST", Some(submit_host));
    set("SLURMD_NODENAME", Some(settings.node_name.clone()));
    set("SLURM_NODEID", Some(assignment.node_index.to_string()));
    set("SLURM_PROCID", Some("0".to_string()));
    set("SLURM_LOCALID", Some("0".to_string()));
    set("SLURM_TASK_PID", None);
    set("SLURM_RESTART_COUNT", Some(assignment.run.to_string()));
    // The cluster's name as the api tells it (Berth's default before apis did).
    set(
        "SLURM_CLUSTER_NAME",
        Some(
            assignment
                .slurm_variables
                .get("SLURM_CLUSTER_NAME")
                .cloned()
                .unwrap_or_else(|| berth_core::cluster::DEFAULT_CLUSTER_NAME.to_string()),
        ),
    );
    set(
        "SLURM_ARRAY_JOB_ID",
        assignment.array_job_id.map(|id| id.to_string()),
    );
    set(
        "SLURM_ARRAY_TASK_ID",
        assignment.array_task_id.map(|id| id.to_string()),
    );
    set(
        "SLURM_ARRAY_TASK_COUNT",
        assignment.array_task_count.map(|n| n.to_string()),
    );
    // The assignment gives the array's size, not its index set: this assumes tasks
    // 0..count (kept consistent with this task's own index).
    set(
        "SLURM_ARRAY_TASK_MIN",
        assignment.array_task_count.map(|_| "0".to_string()),
    );
    set(
        "SLURM_ARRAY_TASK_MAX",
        assignment.array_task_count.map(|count| {
            count
                .saturating_sub(1)
                .max(assignment.array_task_id.unwrap_or(0))
                .to_string()
        }),
    );
    set(
        "SLURM_GPUS_PER_TASK",
        assignment.gpus_per_task.map(|n| n.to_string()),
    );
    set(
        berth_core::signal::SIGNAL_REASON_VARIABLE,
        Some(
            signal_reason_file(settings, assignment.job_id, assignment.run)
                .display()
                .to_string(),
        ),
    );
    set("BERTH_JOB_ID", Some(job_id));
    set("BERTH_API", Some(settings.api_url.clone()));
    // The client commands inside the job talk to the api with the job's own token.
    set("BERTH_URL", Some(settings.api_url.clone()));
    set("BERTH_TOKEN", assignment.job_token.clone());
    // The variables the api works out from the job's record; absent ones are not
    // inherited (the array's range stays the worker's estimate from an older api).
    for name in berth_core::wire::API_SLURM_VARIABLES {
        match assignment.slurm_variables.get(*name) {
            Some(value) => {
                env.insert(name.to_string(), value.clone());
            }
            None if name.starts_with("SLURM_ARRAY_TASK_M")
                && assignment.array_task_id.is_some() => {}
            None => {
                env.remove(*name);
            }
        }
    }
    env
}
