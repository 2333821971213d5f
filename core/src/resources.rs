//! What a job asks of the cluster, derived from its [`JobSpec`] by Slurm's rules.

use crate::spec::JobSpec;
use serde::{Deserialize, Serialize};

/// The resources the scheduler must find for a job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceRequest {
    /// Nodes, all at once (a gang when more than one).
    pub nodes: u32,
    /// Tasks in the whole job.
    pub ntasks: u32,
    /// CPUs per task.
    pub cpus_per_task: u32,
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

fn div_ceil(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        a.div_ceil(b)
    }
}

impl JobSpec {
    /// Whether a GPU option is given (`--gpus*`, or a `gpu` entry of `--gres`).
    pub fn asks_gpus(&self) -> bool {
        self.gpus_per_node.is_some() || self.gpus_per_task.is_some() || self.gpus.is_some()
    }

    /// Whether `--gres` asks for GPU shards while a GPU option asks for GPUs: a job asks
    /// for one or the other (the shards would be ignored).
    pub fn asks_gpus_and_shards(&self) -> bool {
        self.asks_gpus() && self.gres.as_deref().and_then(gres_shards).is_some()
    }

    /// The resources this spec asks for.
    ///
    /// * nodes: `--nodes`, else `ceil(ntasks / ntasks-per-node)` when both are given,
    ///   else 1;
    /// * tasks: `--ntasks`, else `nodes × ntasks-per-node`, else one per node;
    /// * GPUs per node: `--gpus-per-node` (or `--gres=gpu:N`), else `--gpus-per-task`
    ///   × tasks per node, else `ceil(--gpus / nodes)`, else 0;
    /// * `--exclusive` with no GPU option takes every GPU of the node.
    pub fn resource_request(&self) -> ResourceRequest {
        let nodes = match (self.nodes, self.ntasks, self.ntasks_per_node) {
            (Some(n), _, _) => n.max(1),
            (None, Some(t), Some(per)) => div_ceil(t, per).max(1),
            _ => 1,
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
        ResourceRequest {
            nodes,
            ntasks,
            cpus_per_task: self.cpus_per_task.unwrap_or(1),
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
