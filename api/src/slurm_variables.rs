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
    set("SLURM_MEM_PER_NODE", spec.mem_mib.map(|n| n.to_string()));
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
    out
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
