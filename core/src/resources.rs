//! What a job asks of the cluster, derived from its [`JobSpec`] by Slurm's rules: nodes,
//! tasks, GPUs, and the CPUs and memory each of its nodes must give it (with the
//! partition's `DefCpuPerGPU`, `DefMemPerGPU`, `DefMemPerCPU` and `MaxMemPerNode`).

use crate::spec::JobSpec;

/// A partition's defaults and caps for CPUs and memory (slurm.conf's names); all `None`
/// where the partition sets none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PartitionDefaults {
    /// `DefCpuPerGPU`: CPUs per GPU for a job asking GPUs but neither `-c` nor
    /// `--cpus-per-gpu`.
    pub def_cpu_per_gpu: Option<u32>,
    /// `DefMemPerGPU`, MiB: memory per GPU for a job asking GPUs and no memory option.
    pub def_mem_per_gpu: Option<u64>,
    /// `DefMemPerCPU`, MiB: memory per CPU for a job with no memory option (and no GPUs
    /// where `DefMemPerGPU` is set).
    pub def_mem_per_cpu: Option<u64>,
    /// `MaxMemPerNode`, MiB: the most memory a job may have on one node.
    pub max_mem_per_node: Option<u64>,
}

/// A job whose CPUs or memory per node its partition refuses (`MaxMemPerNode`): the
/// option that set the amount and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{option}: {message}")]
pub struct ResourceError {
    /// The option that asked for it (`--mem`, `--mem-per-cpu`, `--mem-per-gpu`).
    pub option: &'static str,
    /// Why it is refused.
    pub message: String,
}

/// The resources the scheduler must find for a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceRequest {
    /// Nodes, all at once (a gang when more than one).
    pub nodes: u32,
    /// Tasks in the whole job.
    pub ntasks: u32,
    /// CPUs per task.
    pub cpus_per_task: u32,
    /// Tasks on each node: `--ntasks-per-node`, else `ceil(ntasks / nodes)`.
    pub tasks_per_node: u32,
    /// CPUs on each node, at least 1: the larger of `-c` × tasks per node and
    /// `--cpus-per-gpu` (or the partition's `DefCpuPerGPU` without `-c`) × GPUs per node.
    pub cpus_per_node: u32,
    /// The option that decided `cpus_per_node`, for messages: `--cpus-per-task`,
    /// `--cpus-per-gpu`, `DefCpuPerGPU` or `--ntasks-per-node` (one CPU per task).
    pub cpus_option: &'static str,
    /// Memory on each node, MiB: `--mem`, `--mem-per-cpu` × CPUs per node,
    /// `--mem-per-gpu` × GPUs per node, else the partition's `DefMemPerGPU` (when GPUs
    /// are asked) or `DefMemPerCPU`; `Some(0)` for `--mem=0`: all of each node's usable
    /// memory (Slurm's "all of the memory on each node"; the planner gives the node's
    /// `RealMemory` less `MemSpecLimit`, and shares it with no other job); `None` when
    /// none applies: the planner gives a share in proportion to CPUs.
    pub mem_per_node_mib: Option<u64>,
    /// The option that decided `mem_per_node_mib`, for messages.
    pub mem_option: Option<&'static str>,
    /// GPUs on each node (0 when `whole_node` decides).
    pub gpus_per_node: u32,
    /// Required GPU model substring (`h100`), when asked for.
    pub gpu_type: Option<String>,
    /// `--exclusive`: the nodes are not shared.
    pub exclusive: bool,
    /// `--exclusive` with no GPU option: the job takes every GPU of each node.
    pub whole_node: bool,
    /// `--gres=shard:N`: `gpus_per_node` counts GPU shares (Slurm's `shard` GRES), not
    /// GPUs.
    pub shards: bool,
}

/// The shards per node a `--gres` list asks for (`shard:2`, `gres/shard:2`, `shard` for
/// one); `None` without a shard entry.
pub fn gres_shards(gres: &str) -> Option<u32> {
    gres.split(',').find_map(|item| {
        let item = item.strip_prefix("gres/").unwrap_or(item);
        let mut parts = item.split(':');
        if parts.next() != Some("shard") {
            return None;
        }
        // `shard`, `shard:N`, `shard:TYPE`, `shard:TYPE:N`, as `--gres` items go.
        match parts.next_back() {
            Some(n) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => n.parse().ok(),
            _ => Some(1),
        }
    })
}

fn expand_list(list: Option<&str>) -> Vec<String> {
    let mut names = list
        .and_then(|l| crate::hostlist::expand(l).ok())
        .unwrap_or_default();
    names.sort_unstable();
    names.dedup();
    names
}

fn div_ceil(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        a.div_ceil(b)
    }
}

impl JobSpec {
    /// The node names `-w/--nodelist` gives, expanded (empty without one, or for a list
    /// that does not parse, which [`crate::sbatch::check_spec`] refuses).
    pub fn nodelist_names(&self) -> Vec<String> {
        expand_list(self.nodelist.as_deref())
    }

    /// The node names `-x/--exclude` gives, expanded (as [`Self::nodelist_names`]).
    pub fn exclude_names(&self) -> Vec<String> {
        expand_list(self.exclude.as_deref())
    }

    /// Whether a GPU option is given (`--gpus*`, or a `gpu` entry of `--gres`).
    pub fn asks_gpus(&self) -> bool {
        self.gpus_per_node.is_some() || self.gpus_per_task.is_some() || self.gpus.is_some()
    }

    /// Whether `--gres` asks for GPU shards while a GPU option asks for GPUs: a job asks
    /// for one or the other (the shards would be ignored).
    pub fn asks_gpus_and_shards(&self) -> bool {
        self.asks_gpus() && self.gres.as_deref().and_then(gres_shards).is_some()
    }

    /// The resources this spec asks for, without partition defaults
    /// ([`Self::resource_request_in`] with [`PartitionDefaults::default`]).
    pub fn resource_request(&self) -> ResourceRequest {
        self.request_with(&PartitionDefaults::default())
    }

    /// The resources this spec asks for in a partition with `defaults`.
    ///
    /// * nodes: `--nodes`, else `ceil(ntasks / ntasks-per-node)` when both are given,
    ///   else 1; without `--nodes`, at least the number of nodes `-w/--nodelist` names;
    /// * tasks: `--ntasks`, else `nodes × ntasks-per-node`, else one per node;
    /// * GPUs per node: `--gpus-per-node` (or `--gres=gpu:N`), else `--gpus-per-task`
    ///   × tasks per node, else `ceil(--gpus / nodes)`, else 0;
    /// * `--exclusive` with no GPU option takes every GPU of the node;
    /// * CPUs and memory per node: see [`ResourceRequest::cpus_per_node`] and
    ///   [`ResourceRequest::mem_per_node_mib`]. A memory option over `MaxMemPerNode` is
    ///   refused; a partition default over it is capped to it (as Slurm's defaults never
    ///   make a job impossible).
    ///
    /// # Errors
    /// [`ResourceError`] naming `--mem`, `--mem-per-cpu` or `--mem-per-gpu` when the
    /// memory per node it gives exceeds `MaxMemPerNode`.
    pub fn resource_request_in(
        &self,
        defaults: &PartitionDefaults,
    ) -> Result<ResourceRequest, ResourceError> {
        // `--mem=0` is Slurm's "all of the node's memory" (see [`ResourceRequest`]); a zero
        // per CPU or per GPU asks for nothing a job can run in.
        for (option, value) in [
            ("--mem-per-cpu", self.mem_per_cpu_mib),
            ("--mem-per-gpu", self.mem_per_gpu_mib),
        ] {
            if value == Some(0) {
                return Err(ResourceError {
                    option,
                    message: "must be at least 1 MiB".to_string(),
                });
            }
        }
        // As in Slurm, one way of asking for memory.
        let asked: Vec<&str> = [
            ("--mem", self.mem_mib.is_some()),
            ("--mem-per-cpu", self.mem_per_cpu_mib.is_some()),
            ("--mem-per-gpu", self.mem_per_gpu_mib.is_some()),
        ]
        .into_iter()
        .filter_map(|(o, given)| given.then_some(o))
        .collect();
        if asked.len() > 1 {
            return Err(ResourceError {
                option: asked[1],
                message: format!("{} are mutually exclusive", asked.join(", ")),
            });
        }
        let r = self.request_with(defaults);
        // Defaults are capped already; an amount an option asked for over the cap is
        // refused.
        if let (Some(option), Some(m), Some(max)) =
            (r.mem_option, r.mem_per_node_mib, defaults.max_mem_per_node)
        {
            if option.starts_with("--") && m > max {
                return Err(ResourceError {
                    option,
                    message: format!(
                        "{m} MiB per node is more than the partition allows (MaxMemPerNode={max} MiB)"
                    ),
                });
            }
        }
        Ok(r)
    }

    /// [`Self::resource_request_in`] without refusing memory over `MaxMemPerNode`.
    fn request_with(&self, defaults: &PartitionDefaults) -> ResourceRequest {
        let nodes = match (self.nodes, self.ntasks, self.ntasks_per_node) {
            (Some(n), _, _) => n.max(1),
            (None, Some(t), Some(per)) => div_ceil(t, per).max(1),
            _ => 1,
        };
        // Without -N, a job gets at least every node -w names (as in Slurm).
        let nodes = match (self.nodes, self.nodelist_names().len()) {
            (None, listed) => nodes.max(listed.min(u32::MAX as usize) as u32),
            (Some(_), _) => nodes,
        };
        let ntasks = match (self.ntasks, self.ntasks_per_node) {
            (Some(t), _) => t.max(1),
            (None, Some(per)) => nodes.saturating_mul(per.max(1)),
            (None, None) => nodes,
        };
        let tasks_per_node = self
            .ntasks_per_node
            .unwrap_or_else(|| div_ceil(ntasks, nodes));
        let gpus_per_node = if let Some(g) = self.gpus_per_node {
            g
        } else if let Some(g) = self.gpus_per_task {
            g.saturating_mul(tasks_per_node)
        } else if let Some(g) = self.gpus {
            div_ceil(g, nodes)
        } else {
            0
        };
        let asked_gpus = self.asks_gpus();
        let shards = if asked_gpus {
            None
        } else {
            self.gres.as_deref().and_then(gres_shards)
        };
        // Real GPUs on each node (shards are shares of one, and ask no CPUs of their own).
        let gpus_here = if shards.is_some() { 0 } else { gpus_per_node };
        let cpus_per_task = self.cpus_per_task.unwrap_or(1);
        let by_tasks = cpus_per_task.saturating_mul(tasks_per_node.max(1));
        let (per_gpu, per_gpu_option) = match (self.cpus_per_gpu, self.cpus_per_task) {
            (Some(c), _) => (Some(c), "--cpus-per-gpu"),
            (None, None) => (defaults.def_cpu_per_gpu, "DefCpuPerGPU"),
            (None, Some(_)) => (None, ""),
        };
        let by_gpus = per_gpu.map_or(0, |c| c.saturating_mul(gpus_here));
        let (cpus_per_node, cpus_option) = if by_gpus > by_tasks {
            (by_gpus, per_gpu_option)
        } else if self.cpus_per_task.is_some() {
            (by_tasks, "--cpus-per-task")
        } else {
            (by_tasks, "--ntasks-per-node")
        };
        let cpus_per_node = cpus_per_node.max(1);
        let u64c = u64::from(cpus_per_node);
        let u64g = u64::from(gpus_here);
        let explicit = match (self.mem_mib, self.mem_per_cpu_mib, self.mem_per_gpu_mib) {
            (Some(m), _, _) => Some((Some(m), "--mem")),
            (None, Some(m), _) => Some((Some(m.saturating_mul(u64c)), "--mem-per-cpu")),
            (None, None, Some(m)) if gpus_here > 0 => {
                Some((Some(m.saturating_mul(u64g)), "--mem-per-gpu"))
            }
            _ => None,
        };
        let (mem_per_node_mib, mem_option) = match explicit {
            Some((mem, option)) => (mem, Some(option)),
            None => {
                let default = match (defaults.def_mem_per_gpu, defaults.def_mem_per_cpu) {
                    (Some(m), _) if gpus_here > 0 => Some((m.saturating_mul(u64g), "DefMemPerGPU")),
                    (_, Some(m)) => Some((m.saturating_mul(u64c), "DefMemPerCPU")),
                    _ => None,
                };
                match default {
                    Some((m, option)) => (
                        Some(defaults.max_mem_per_node.map_or(m, |max| m.min(max))),
                        Some(option),
                    ),
                    None => (None, None),
                }
            }
        };
        ResourceRequest {
            nodes,
            ntasks,
            cpus_per_task,
            tasks_per_node,
            cpus_per_node,
            cpus_option,
            mem_per_node_mib,
            mem_option,
            gpus_per_node: shards.unwrap_or(gpus_per_node),
            gpu_type: if shards.is_some() {
                None
            } else {
                self.gpu_type.clone()
            },
            exclusive: self.exclusive,
            whole_node: self.exclusive && !asked_gpus && shards.is_none(),
            shards: shards.is_some(),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn shard_requests_count_shares_not_gpus() {
        assert_eq!(super::gres_shards("shard:2"), Some(2));
        assert_eq!(super::gres_shards("gres/shard:3"), Some(3));
        assert_eq!(super::gres_shards("shard"), Some(1));
        assert_eq!(super::gres_shards("gpu:2"), None);
        let spec = crate::spec::JobSpec {
            gres: Some("shard:2".into()),
            ..Default::default()
        };
        let r = spec.resource_request();
        assert_eq!((r.gpus_per_node, r.shards, r.whole_node), (2, true, false));
        let gpus = crate::spec::JobSpec {
            gres: Some("gpu:1".into()),
            gpus_per_node: Some(1),
            ..Default::default()
        };
        assert!(!gpus.resource_request().shards);
    }

    use super::*;

    #[test]
    fn gres_is_per_node() {
        let spec = JobSpec {
            nodes: Some(2),
            gpus_per_node: Some(4),
            ..Default::default()
        };
        let r = spec.resource_request();
        assert_eq!((r.nodes, r.gpus_per_node, r.ntasks), (2, 4, 2));
    }

    #[test]
    fn gpus_per_task_multiplies_by_tasks_on_the_node() {
        let spec = JobSpec {
            nodes: Some(1),
            ntasks: Some(8),
            gpus_per_task: Some(1),
            ..Default::default()
        };
        assert_eq!(spec.resource_request().gpus_per_node, 8);
    }

    #[test]
    fn total_gpus_spread_over_nodes() {
        let spec = JobSpec {
            nodes: Some(2),
            gpus: Some(6),
            ..Default::default()
        };
        assert_eq!(spec.resource_request().gpus_per_node, 3);
    }

    #[test]
    fn exclusive_without_gpus_takes_the_whole_node() {
        let spec = JobSpec {
            exclusive: true,
            ..Default::default()
        };
        let r = spec.resource_request();
        assert!(r.whole_node);
        assert_eq!(r.gpus_per_node, 0);
        let spec = JobSpec {
            exclusive: true,
            gpus_per_node: Some(2),
            ..Default::default()
        };
        assert!(!spec.resource_request().whole_node);
    }

    fn cpus_mem(spec: &JobSpec, d: &PartitionDefaults) -> (u32, Option<u64>) {
        let r = spec.resource_request_in(d).unwrap();
        (r.cpus_per_node, r.mem_per_node_mib)
    }

    #[test]
    fn cpus_per_node_by_slurms_rules() {
        let none = PartitionDefaults::default();
        // One task, one CPU.
        assert_eq!(cpus_mem(&JobSpec::default(), &none), (1, None));
        // -c × tasks per node.
        let spec = JobSpec {
            nodes: Some(2),
            ntasks: Some(8),
            cpus_per_task: Some(3),
            ..Default::default()
        };
        let r = spec.resource_request();
        assert_eq!((r.tasks_per_node, r.cpus_per_node), (4, 12));
        assert_eq!(r.cpus_option, "--cpus-per-task");
        let spec = JobSpec {
            ntasks_per_node: Some(4),
            ..Default::default()
        };
        assert_eq!(spec.resource_request().cpus_per_node, 4);
        // --cpus-per-gpu × GPUs per node.
        let spec = JobSpec {
            gpus_per_node: Some(2),
            cpus_per_gpu: Some(6),
            ..Default::default()
        };
        let r = spec.resource_request();
        assert_eq!((r.cpus_per_node, r.cpus_option), (12, "--cpus-per-gpu"));
        // DefCpuPerGPU applies without -c, not with it.
        let d = PartitionDefaults {
            def_cpu_per_gpu: Some(4),
            ..Default::default()
        };
        let gpus = JobSpec {
            gpus: Some(3),
            ..Default::default()
        };
        assert_eq!(cpus_mem(&gpus, &d).0, 12);
        let with_c = JobSpec {
            cpus_per_task: Some(2),
            ..gpus.clone()
        };
        assert_eq!(cpus_mem(&with_c, &d).0, 2);
        // Shards ask no CPUs per shard.
        let shards = JobSpec {
            gres: Some("shard:4".into()),
            ..Default::default()
        };
        assert_eq!(cpus_mem(&shards, &d).0, 1);
    }

    #[test]
    fn memory_per_node_by_slurms_rules() {
        let none = PartitionDefaults::default();
        let mem = |spec: JobSpec, d: &PartitionDefaults| cpus_mem(&spec, d).1;
        assert_eq!(
            mem(
                JobSpec {
                    mem_mib: Some(1000),
                    nodes: Some(2),
                    ..Default::default()
                },
                &none
            ),
            Some(1000)
        );
        // --mem=0: all of each node's memory (0 tells the planner), over the defaults.
        let defaults = PartitionDefaults {
            def_mem_per_cpu: Some(100),
            ..Default::default()
        };
        assert_eq!(
            mem(
                JobSpec {
                    mem_mib: Some(0),
                    ..Default::default()
                },
                &defaults
            ),
            Some(0)
        );
        assert_eq!(
            mem(
                JobSpec {
                    cpus_per_task: Some(4),
                    mem_per_cpu_mib: Some(100),
                    ..Default::default()
                },
                &none
            ),
            Some(400)
        );
        assert_eq!(
            mem(
                JobSpec {
                    gpus_per_node: Some(2),
                    mem_per_gpu_mib: Some(500),
                    ..Default::default()
                },
                &none
            ),
            Some(1000)
        );
        let d = PartitionDefaults {
            def_mem_per_gpu: Some(1000),
            def_mem_per_cpu: Some(10),
            max_mem_per_node: Some(1500),
            ..Default::default()
        };
        // DefMemPerGPU for GPU jobs (capped by MaxMemPerNode), DefMemPerCPU otherwise.
        let two_gpus = JobSpec {
            gpus_per_node: Some(2),
            ..Default::default()
        };
        assert_eq!(mem(two_gpus.clone(), &d), Some(1500));
        let one_gpu = JobSpec {
            gpus_per_node: Some(1),
            ..Default::default()
        };
        assert_eq!(mem(one_gpu, &d), Some(1000));
        let cpus = JobSpec {
            cpus_per_task: Some(8),
            ..Default::default()
        };
        assert_eq!(mem(cpus, &d), Some(80));
        // An explicit amount over MaxMemPerNode is refused, naming the option.
        let e = JobSpec {
            mem_per_gpu_mib: Some(800),
            ..two_gpus
        }
        .resource_request_in(&d)
        .unwrap_err();
        assert_eq!(e.option, "--mem-per-gpu");
        assert_eq!(
            e.message,
            "1600 MiB per node is more than the partition allows (MaxMemPerNode=1500 MiB)"
        );
    }

    #[test]
    fn memory_is_asked_one_way_and_never_zero_per_cpu_or_gpu() {
        let d = PartitionDefaults::default();
        let both = JobSpec {
            mem_mib: Some(1024),
            mem_per_cpu_mib: Some(1024),
            ..Default::default()
        };
        let e = both.resource_request_in(&d).unwrap_err();
        assert_eq!(e.option, "--mem-per-cpu");
        assert!(e.message.contains("mutually exclusive"), "{}", e.message);
        let zero = JobSpec {
            mem_per_cpu_mib: Some(0),
            ..Default::default()
        };
        assert_eq!(
            zero.resource_request_in(&d).unwrap_err().option,
            "--mem-per-cpu"
        );
        let zero = JobSpec {
            mem_per_gpu_mib: Some(0),
            ..Default::default()
        };
        assert_eq!(
            zero.resource_request_in(&d).unwrap_err().option,
            "--mem-per-gpu"
        );
    }

    #[test]
    fn a_nodelist_without_nodes_sets_the_node_count() {
        let spec = JobSpec {
            nodelist: Some("node-[1-3],node-2".into()),
            ..Default::default()
        };
        let r = spec.resource_request();
        assert_eq!((r.nodes, r.ntasks), (3, 3));
        assert_eq!(spec.nodelist_names(), ["node-1", "node-2", "node-3"]);
        let spec = JobSpec {
            nodes: Some(1),
            ..spec
        };
        assert_eq!(spec.resource_request().nodes, 1);
    }

    #[test]
    fn nodes_from_tasks() {
        let spec = JobSpec {
            ntasks: Some(8),
            ntasks_per_node: Some(4),
            ..Default::default()
        };
        assert_eq!(spec.resource_request().nodes, 2);
    }
}
