//! The Slurm output variables of a job's batch environment that the api works out from
//! the job's record (the worker sets the rest from what it holds on the node): see
//! [`berth_core::wire::API_SLURM_VARIABLES`]. Names and formats are those of sbatch's
//! "OUTPUT ENVIRONMENT VARIABLES" (Slurm's man page).

use berth_core::spec::JobSpec;
use berth_db::job::JobRow;
use std::collections::BTreeMap;

/// Slurm's compressed task counts per node: `2(x3),1` for 2, 2, 2, 1.
pub fn compress_counts(counts: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < counts.len() {
        let run = counts[i..].iter().take_while(|&&c| c == counts[i]).count();
        parts.push(if run > 1 {
            format!("{}(x{run})", counts[i])
        } else {
            counts[i].to_string()
        });
        i += run;
    }
    parts.join(",")
}

/// The variables for `job` (with its parsed `spec`) placed on `nodes` (node-index order).
pub fn slurm_variables(job: &JobRow, spec: &JobSpec, nodes: &[String]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut set = |name: &str, value: Option<String>| {
        if let Some(value) = value {
            out.insert(name.to_string(), value);
        }
    };
    set("SLURM_JOB_QOS", job.qos.clone());
    // The worker sets it from here (an older api's default: `berth`).
    set(
        "SLURM_CLUSTER_NAME",
        Some(crate::cluster_name::get().to_string()),
    );
    set("SLURM_JOB_RESERVATION", spec.reservation.clone());
    let typed = |n: u32| match &spec.gpu_type {
        Some(model) => format!("{model}:{n}"),
        None => n.to_string(),
    };
    set("SLURM_GPUS", spec.gpus.map(typed));
    // `--gpus-per-node` as given; a `--gres=gpu[:type]:N` job's N per node too (what
    // launchers read: `torchrun --nproc_per_node=$SLURM_GPUS_PER_NODE`).
    let per_node = spec.gpus_per_node.or_else(|| {
        (spec.gres.is_some() && job.gpus_per_node > 0).then_some(job.gpus_per_node as u32)
    });
    set("SLURM_GPUS_PER_NODE", per_node.map(typed));
    set(
        "SLURM_CPUS_PER_GPU",
        spec.cpus_per_gpu.map(|n| n.to_string()),
    );
    // `--mem=0` (all of the node's memory) sets none, as Slurm's launch sets it only from
    // a non-zero `pn_min_memory`.
    set(
        "SLURM_MEM_PER_NODE",
        spec.mem_mib.filter(|n| *n > 0).map(|n| n.to_string()),
    );
    set(
        "SLURM_MEM_PER_CPU",
        spec.mem_per_cpu_mib.map(|n| n.to_string()),
    );
    set(
        "SLURM_MEM_PER_GPU",
        spec.mem_per_gpu_mib.map(|n| n.to_string()),
    );
    if !nodes.is_empty() {
        let layout = berth_core::step::layout(
            &berth_core::step::StepCreate::default(),
            nodes,
            job.num_tasks.max(1) as u32,
            spec.ntasks_per_node,
        );
        if let Ok(layout) = layout {
            let mut counts = layout.tasks_per_node;
            // Nodes beyond the tasks (more nodes than tasks) hold none.
            counts.resize(nodes.len(), 0);
            set("SLURM_TASKS_PER_NODE", Some(compress_counts(&counts)));
        }
    }
    if let Some(start) = job.start_time {
        set("SLURM_JOB_START_TIME", Some(start.timestamp().to_string()));
        set(
            "SLURM_JOB_END_TIME",
            job.time_limit
                .map(|limit| (start.timestamp() + limit).to_string()),
        );
    }
    if job.array_task_id.is_some() {
        if let Some(array) = spec
            .array
            .as_deref()
            .and_then(|a| berth_core::array::parse_array(a).ok())
        {
            set(
                "SLURM_ARRAY_TASK_MIN",
                array.indices.min().map(|n| n.to_string()),
            );
            set(
                "SLURM_ARRAY_TASK_MAX",
                array.indices.max().map(|n| n.to_string()),
            );
            set(
                "SLURM_ARRAY_TASK_STEP",
                array.indices.step().map(|n| n.to_string()),
            );
        }
    }
    set("SLURM_EXPORT_ENV", spec.export.clone());
    set("SLURM_JOB_DEPENDENCY", spec.dependency.clone());
    // sbatch's `verify_hint` sets SLURM_HINT in its environment, which the job gets.
    set("SLURM_HINT", spec.hint.clone());
    // Slurm's slurmctld: `a` or `t` when sbatch was given --open-mode, so that the job's
    // steps open their files the same way (srun reads it as its --open-mode).
    set(
        "SLURM_OPEN_MODE",
        spec.open_mode.map(|mode| {
            match mode {
                berth_core::spec::OpenMode::Append => "a",
                berth_core::spec::OpenMode::Truncate => "t",
            }
            .to_string()
        }),
    );
    out
}

/// A job variable for a step task: set to the value, or removed (`None`) even when
/// srun's environment has it.
pub type StepVariable = (&'static str, Option<String>);

/// The job's own variables for a task of one of its steps on a node where the job holds
/// `cpus_here` CPUs (`nodes`: the job's nodes in node-index order), as the job's batch
/// shell has them (`SLURM_JOB_ID`, `SLURM_JOB_NAME`, `SLURM_JOB_USER`, account,
/// partition, node list and count, `SLURM_CPUS_ON_NODE`, `SLURM_JOB_CPUS_PER_NODE`,
/// submit directory and host, restart count, cluster name, array ids, and every one of
/// [`berth_core::wire::API_SLURM_VARIABLES`] from [`slurm_variables`]): they win over
/// srun's environment, which under salloc holds only what salloc set. The first list is
/// the job's facts; the second (`SLURM_NTASKS_PER_NODE`, `SLURM_GPUS_PER_TASK`) only
/// fills in what srun's environment lacks, since srun's own options may set them. The
/// worker sets the task's and step's own (`SLURM_PROCID`, `SLURM_STEP_*`,
/// `SLURM_NTASKS`, GPUs) over all of them.
pub fn step_job_variables(
    job: &JobRow,
    spec: &JobSpec,
    nodes: &[String],
    cpus_here: Option<u32>,
) -> (Vec<StepVariable>, Vec<StepVariable>) {
    let id = job.id.to_string();
    let nodelist = berth_core::hostlist::compress(nodes);
    let num_nodes = nodes.len().max(1);
    let submit_host = job
        .environment
        .get("HOSTNAME")
        .and_then(|h| h.as_str())
        .map(str::to_string);
    let mut facts: Vec<StepVariable> = vec![
        ("SLURM_JOB_ID", Some(id.clone())),
        ("SLURM_JOBID", Some(id)),
        ("SLURM_JOB_NAME", Some(job.name.clone())),
        ("SLURM_JOB_USER", Some(job.user_name.clone())),
        ("SLURM_JOB_ACCOUNT", job.account.clone()),
        ("SLURM_JOB_PARTITION", Some(job.partition.clone())),
        ("SLURM_JOB_NODELIST", Some(nodelist.clone())),
        ("SLURM_NODELIST", Some(nodelist)),
        ("SLURM_JOB_NUM_NODES", Some(num_nodes.to_string())),
        ("SLURM_NNODES", Some(num_nodes.to_string())),
        ("SLURM_CPUS_ON_NODE", cpus_here.map(|n| n.to_string())),
        (
            "SLURM_JOB_CPUS_PER_NODE",
            cpus_here.map(|n| {
                if num_nodes > 1 {
                    format!("{n}(x{num_nodes})")
                } else {
                    n.to_string()
                }
            }),
        ),
        ("SLURM_RESTART_COUNT", Some(job.restart_count.to_string())),
        (
            "SLURM_CLUSTER_NAME",
            Some(crate::cluster_name::get().to_string()),
        ),
        (
            "SLURM_ARRAY_JOB_ID",
            job.array_job_id.map(|n| n.to_string()),
        ),
        (
            "SLURM_ARRAY_TASK_ID",
            job.array_task_id.map(|n| n.to_string()),
        ),
        (
            "SLURM_ARRAY_TASK_COUNT",
            job.array_task_count.map(|n| n.to_string()),
        ),
    ];
    // Where the job's record does not say, srun's environment keeps its own.
    if let Some(dir) = &job.submit_dir {
        facts.push(("SLURM_SUBMIT_DIR", Some(dir.clone())));
    }
    if let Some(host) = submit_host {
        facts.push(("SLURM_SUBMIT_HOST", Some(host)));
    }
    let mut api = slurm_variables(job, spec, nodes);
    for name in berth_core::wire::API_SLURM_VARIABLES {
        facts.push((name, api.remove(*name)));
    }
    let defaults = vec![
        (
            "SLURM_NTASKS_PER_NODE",
            spec.ntasks_per_node.map(|n| n.to_string()),
        ),
        (
            "SLURM_GPUS_PER_TASK",
            spec.gpus_per_task.map(|n| n.to_string()),
        ),
    ];
    (facts, defaults)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_counts_compress_as_slurms() {
        assert_eq!(compress_counts(&[2, 2, 2, 1]), "2(x3),1");
        assert_eq!(compress_counts(&[4]), "4");
        assert_eq!(compress_counts(&[1, 2, 1]), "1,2,1");
        assert_eq!(compress_counts(&[]), "");
    }
}
