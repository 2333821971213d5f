//! sbatch's INPUT ENVIRONMENT VARIABLES (Slurm's `src/sbatch/opt.c` table): `SBATCH_*`
//! variables set options the way the command line would, above `#SBATCH` lines in the
//! script and below the command line itself (Slurm's order: command line, environment,
//! script).

/// Each variable sbatch reads, and the long option it sets (Slurm's table, options
/// Berth's sbatch knows; an option Berth refuses is refused from the environment too,
/// naming the option).
pub const SBATCH_ENV_OPTIONS: &[(&str, &str)] = &[
    ("SBATCH_ACCOUNT", "account"),
    ("SBATCH_ARRAY_INX", "array"),
    ("SBATCH_ACCTG_FREQ", "acctg-freq"),
    ("SBATCH_BATCH", "batch"),
    ("SBATCH_BURST_BUFFER", "bb"),
    ("SBATCH_CLUSTER_CONSTRAINT", "cluster-constraint"),
    ("SBATCH_CLUSTERS", "clusters"),
    ("SLURM_CLUSTERS", "clusters"),
    ("SBATCH_CONTAINER", "container"),
    ("SBATCH_CONTAINER_ID", "container-id"),
    ("SBATCH_CONSTRAINT", "constraint"),
    ("SBATCH_CORE_SPEC", "core-spec"),
    ("SBATCH_CPU_FREQ_REQ", "cpu-freq"),
    ("SBATCH_CPUS_PER_GPU", "cpus-per-gpu"),
    ("SBATCH_DELAY_BOOT", "delay-boot"),
    ("SBATCH_DISTRIBUTION", "distribution"),
    ("SBATCH_EXCLUSIVE", "exclusive"),
    ("SBATCH_EXPORT", "export"),
    ("SBATCH_GET_USER_ENV", "get-user-env"),
    ("SBATCH_GRES", "gres"),
    ("SBATCH_GRES_FLAGS", "gres-flags"),
    ("SBATCH_GPUS", "gpus"),
    ("SBATCH_GPU_BIND", "gpu-bind"),
    ("SBATCH_GPU_FREQ", "gpu-freq"),
    ("SBATCH_GPUS_PER_NODE", "gpus-per-node"),
    ("SBATCH_GPUS_PER_SOCKET", "gpus-per-socket"),
    ("SBATCH_GPUS_PER_TASK", "gpus-per-task"),
    ("SLURM_HINT", "hint"),
    ("SBATCH_HINT", "hint"),
    ("SBATCH_JOB_NAME", "job-name"),
    ("SBATCH_MEM_BIND", "mem-bind"),
    ("SBATCH_MEM_PER_CPU", "mem-per-cpu"),
    ("SBATCH_MEM_PER_GPU", "mem-per-gpu"),
    ("SBATCH_MEM_PER_NODE", "mem"),
    ("SBATCH_NETWORK", "network"),
    ("SBATCH_NO_KILL", "no-kill"),
    ("SBATCH_NO_REQUEUE", "no-requeue"),
    ("SBATCH_OPEN_MODE", "open-mode"),
    ("SBATCH_OVERCOMMIT", "overcommit"),
    ("SBATCH_PARTITION", "partition"),
    ("SBATCH_PROFILE", "profile"),
    ("SBATCH_QOS", "qos"),
    ("SBATCH_REQ_SWITCH", "switches"),
    ("SBATCH_REQUEUE", "requeue"),
    ("SBATCH_RESERVATION", "reservation"),
    ("SBATCH_SIGNAL", "signal"),
    ("SBATCH_SPREAD_JOB", "spread-job"),
    ("SBATCH_THREAD_SPEC", "thread-spec"),
    ("SBATCH_THREADS_PER_CORE", "threads-per-core"),
    ("SBATCH_TIMELIMIT", "time"),
    ("SBATCH_TRES_BIND", "tres-bind"),
    ("SBATCH_TRES_PER_TASK", "tres-per-task"),
    ("SBATCH_USE_MIN_NODES", "use-min-nodes"),
    ("SBATCH_WAIT", "wait"),
    ("SBATCH_WAIT_ALL_NODES", "wait-all-nodes"),
    ("SBATCH_WCKEY", "wckey"),
    ("SBATCH_ERROR", "error"),
    ("SBATCH_INPUT", "input"),
    ("SBATCH_OUTPUT", "output"),
];

/// The options the environment sets (`env` looks a variable up; unset and empty ones
/// set nothing), as command-line words in the table's order: `--name=value` for an
/// option that takes a value, `--name` for a flag (whatever the variable's value, as
/// Slurm takes `SBATCH_WAIT=1`), `--name[=value]` for an optional value. Options Berth's
/// sbatch does not know are left out.
pub fn env_args(env: impl Fn(&str) -> Option<String>) -> Vec<String> {
    use berth_core::sbatch::{long_option, Arity};
    let mut out = Vec::new();
    for (var, long) in SBATCH_ENV_OPTIONS {
        let Some(value) = env(var).filter(|v| !v.is_empty()) else {
            continue;
        };
        let Ok(option) = long_option(long) else {
            continue;
        };
        out.push(match option.arity {
            Arity::Flag => format!("--{}", option.long),
            _ => format!("--{}={value}", option.long),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_become_options_in_slurms_order() {
        let env = |k: &str| match k {
            "SBATCH_JOB_NAME" => Some("from-env".to_string()),
            "SBATCH_WAIT" => Some("1".to_string()),
            "SBATCH_TIMELIMIT" => Some("10".to_string()),
            "SBATCH_PARTITION" => Some(String::new()),
            _ => None,
        };
        assert_eq!(
            env_args(env),
            ["--job-name=from-env", "--time=10", "--wait"]
        );
        // Every option of the table is one Berth's sbatch parser knows by that name.
        for (_, long) in SBATCH_ENV_OPTIONS {
            let known = berth_core::sbatch::long_option(long);
            assert!(known.is_ok_and(|o| o.long == *long), "--{long}");
        }
    }
}
