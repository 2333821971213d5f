//! The planner: a pure function from a snapshot of the cluster and the queue to the jobs
//! to start now, each on concrete nodes and GPU indices, and a pending reason for every
//! job it leaves waiting. No I/O, no clock.
//!
//! Passes, for each pending job in queue order (submit order for now; multifactor
//! priority and backfill reservations come later):
//! 1. candidate nodes: available, in the job's partition, with the GPU model asked for,
//!    not held exclusively, and, for `--exclusive`, holding no allocation at all;
//! 2. best fit: candidates that can hold the job's GPUs per node, fewest free GPUs first
//!    (ties by name), so partial-node work packs and whole nodes stay free;
//! 3. gang: a job asking N nodes starts only if N distinct candidates fit, all at once;
//! 4. devices: the lowest free GPU indices of each chosen node (every GPU for a
//!    whole-node exclusive job).

use std::collections::BTreeSet;

/// A node as the planner sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeView {
    /// Database id.
    pub id: i64,
    /// Name.
    pub name: String,
    /// Accepting new work (state UP).
    pub available: bool,
    /// Every GPU: (index, model).
    pub gpus: Vec<(u32, String)>,
    /// Free GPU indices.
    pub free: BTreeSet<u32>,
    /// Live allocations on the node.
    pub allocations: u32,
    /// A live `--exclusive` allocation holds the node.
    pub held_exclusive: bool,
}

/// A pending job as the planner sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingJob {
    /// Job id.
    pub id: i64,
    /// Nodes of its partition (empty: every node).
    pub partition_nodes: Vec<String>,
    /// Nodes wanted, all at once.
    pub nodes: u32,
    /// GPUs per node.
    pub gpus_per_node: u32,
    /// GPU model substring wanted (case-insensitive).
    pub gpu_type: Option<String>,
    /// `--exclusive`.
    pub exclusive: bool,
    /// Every GPU of each node.
    pub whole_node: bool,
}

/// The planner's input.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// Nodes.
    pub nodes: Vec<NodeView>,
    /// Pending jobs, in queue order.
    pub pending: Vec<PendingJob>,
}

/// One node's share of a start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// Node id.
    pub node_id: i64,
    /// GPU indices.
    pub gpus: Vec<u32>,
}

/// A job to start now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Start {
    /// Job id.
    pub job_id: i64,
    /// One placement per node, in node-index order (the first runs the batch script).
    pub placements: Vec<Placement>,
    /// `--exclusive`.
    pub exclusive: bool,
}

/// The planner's decisions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    /// Jobs to start.
    pub starts: Vec<Start>,
    /// Jobs left pending, with Slurm's reason name.
    pub pending: Vec<(i64, String)>,
}

fn matches_type(model: &str, wanted: &Option<String>) -> bool {
    match wanted {
        Some(t) => model.to_lowercase().contains(&t.to_lowercase()),
        None => true,
    }
}

/// GPUs of `node` the job may use now, or `None` when the node cannot take it.
fn fit(node: &NodeView, job: &PendingJob) -> Option<Vec<u32>> {
    if !node.available || node.held_exclusive {
        return None;
    }
    if !job.partition_nodes.is_empty() && !job.partition_nodes.contains(&node.name) {
        return None;
    }
    if job.exclusive && node.allocations > 0 {
        return None;
    }
    if job.whole_node {
        return Some(node.gpus.iter().map(|(i, _)| *i).collect());
    }
    let usable: Vec<u32> = node
        .gpus
        .iter()
        .filter(|(i, model)| node.free.contains(i) && matches_type(model, &job.gpu_type))
        .map(|(i, _)| *i)
        .collect();
    (usable.len() >= job.gpus_per_node as usize)
        .then(|| usable[..job.gpus_per_node as usize].to_vec())
}

/// Could the job ever run on this cluster, if everything were free?
fn ever_fits(nodes: &[NodeView], job: &PendingJob) -> bool {
    let empty = |n: &NodeView| NodeView {
        free: n.gpus.iter().map(|(i, _)| *i).collect(),
        allocations: 0,
        held_exclusive: false,
        ..n.clone()
    };
    nodes
        .iter()
        .map(empty)
        .filter(|n| fit(n, job).is_some())
        .count()
        >= job.nodes as usize
}

/// Plans the next starts. Deterministic: the same snapshot gives the same plan.
pub fn plan(snapshot: &Snapshot) -> Plan {
    let mut nodes = snapshot.nodes.clone();
    let mut out = Plan::default();
    for job in &snapshot.pending {
        let mut candidates: Vec<(usize, Vec<u32>)> = nodes
            .iter()
            .enumerate()
            .filter_map(|(i, n)| fit(n, job).map(|g| (i, g)))
            .collect();
        if candidates.len() < job.nodes as usize || job.nodes == 0 {
            let reason = if ever_fits(&nodes, job) {
                "Resources"
            } else {
                "ReqNodeNotAvail"
            };
            out.pending.push((job.id, reason.to_string()));
            continue;
        }
        candidates.sort_by(|(a, _), (b, _)| {
            let (na, nb) = (&nodes[*a], &nodes[*b]);
            (na.free.len(), &na.name).cmp(&(nb.free.len(), &nb.name))
        });
        candidates.truncate(job.nodes as usize);
        let mut placements = Vec::with_capacity(candidates.len());
        for (i, gpus) in candidates {
            let node = &mut nodes[i];
            for g in &gpus {
                node.free.remove(g);
            }
            node.allocations += 1;
            node.held_exclusive |= job.exclusive;
            placements.push(Placement {
                node_id: node.id,
                gpus,
            });
        }
        out.starts.push(Start {
            job_id: job.id,
            placements,
            exclusive: job.exclusive,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn node(id: i64, gpus: u32) -> NodeView {
        NodeView {
            id,
            name: format!("n{id}"),
            available: true,
            gpus: (0..gpus)
                .map(|i| (i, "NVIDIA H100 80GB HBM3".to_string()))
                .collect(),
            free: (0..gpus).collect(),
            allocations: 0,
            held_exclusive: false,
        }
    }

    fn job(id: i64, nodes: u32, gpus: u32) -> PendingJob {
        PendingJob {
            id,
            partition_nodes: vec![],
            nodes,
            gpus_per_node: gpus,
            gpu_type: None,
            exclusive: false,
            whole_node: false,
        }
    }

    /// S1: small jobs pack onto one node, so a whole-node job still fits.
    #[test]
    fn small_jobs_pack_best_fit_and_leave_whole_nodes_free() {
        let nodes: Vec<NodeView> = (1..=4).map(|i| node(i, 4)).collect();
        let mut snap = Snapshot {
            nodes,
            pending: (1..=4).map(|i| job(i, 1, 1)).collect(),
        };
        snap.pending.push(job(5, 1, 4));
        let p = plan(&snap);
        assert_eq!(p.starts.len(), 5);
        let first_nodes: BTreeSet<i64> = p.starts[..4]
            .iter()
            .map(|s| s.placements[0].node_id)
            .collect();
        assert_eq!(first_nodes.len(), 1, "the four 1-GPU jobs share one node");
        let gpus: BTreeSet<u32> = p.starts[..4]
            .iter()
            .map(|s| s.placements[0].gpus[0])
            .collect();
        assert_eq!(gpus, (0..4).collect());
        assert_ne!(
            p.starts[4].placements[0].node_id,
            p.starts[0].placements[0].node_id
        );
    }

    /// S3: two 4-node gangs on 4 nodes: one starts whole, the other holds nothing.
    #[test]
    fn gangs_are_all_or_nothing() {
        let snap = Snapshot {
            nodes: (1..=4).map(|i| node(i, 8)).collect(),
            pending: vec![job(1, 4, 8), job(2, 4, 8)],
        };
        let p = plan(&snap);
        assert_eq!(p.starts.len(), 1);
        assert_eq!(p.starts[0].placements.len(), 4);
        assert_eq!(p.pending, vec![(2, "Resources".to_string())]);
    }

    /// S8: a 2-node gang with one busy node holds nothing and leaves the idle node usable.
    #[test]
    fn unplaceable_gang_holds_nothing() {
        let mut busy = node(1, 4);
        busy.free.clear();
        busy.allocations = 1;
        let snap = Snapshot {
            nodes: vec![busy, node(2, 4)],
            pending: vec![job(1, 2, 4), job(2, 1, 4)],
        };
        let p = plan(&snap);
        assert_eq!(p.pending, vec![(1, "Resources".to_string())]);
        assert_eq!(p.starts.len(), 1);
        assert_eq!(p.starts[0].job_id, 2);
        assert_eq!(p.starts[0].placements[0].node_id, 2);
    }

    #[test]
    fn exclusive_without_gpus_takes_every_gpu_and_the_node() {
        let mut j = job(1, 1, 0);
        j.exclusive = true;
        j.whole_node = true;
        let snap = Snapshot {
            nodes: vec![node(1, 8)],
            pending: vec![j, job(2, 1, 1)],
        };
        let p = plan(&snap);
        assert_eq!(p.starts.len(), 1);
        assert_eq!(p.starts[0].placements[0].gpus, (0..8).collect::<Vec<_>>());
        assert_eq!(p.pending, vec![(2, "Resources".to_string())]);
    }

    #[test]
    fn gpu_type_and_impossible_requests() {
        let mut a100 = node(2, 4);
        a100.gpus = (0..4)
            .map(|i| (i, "NVIDIA A100-SXM4-80GB".to_string()))
            .collect();
        let mut want_a100 = job(1, 1, 2);
        want_a100.gpu_type = Some("a100".into());
        let snap = Snapshot {
            nodes: vec![node(1, 4), a100],
            pending: vec![want_a100, job(2, 1, 16)],
        };
        let p = plan(&snap);
        assert_eq!(p.starts[0].placements[0].node_id, 2);
        assert_eq!(p.pending, vec![(2, "ReqNodeNotAvail".to_string())]);
    }

    proptest! {
        /// Never more GPUs than exist, never one GPU to two jobs, gangs whole or not at all.
        #[test]
        fn invariants(node_gpus in proptest::collection::vec(1u32..9, 1..6),
                      jobs in proptest::collection::vec((1u32..4, 0u32..9, any::<bool>()), 0..20)) {
            let nodes: Vec<NodeView> = node_gpus.iter().enumerate().map(|(i, g)| node(i as i64 + 1, *g)).collect();
            let pending: Vec<PendingJob> = jobs.iter().enumerate().map(|(i, (n, g, ex))| {
                let mut j = job(i as i64 + 1, *n, *g);
                j.exclusive = *ex;
                j
            }).collect();
            let p = plan(&Snapshot { nodes: nodes.clone(), pending: pending.clone() });
            let mut held: BTreeSet<(i64, u32)> = BTreeSet::new();
            for s in &p.starts {
                let j = pending.iter().find(|j| j.id == s.job_id).unwrap();
                prop_assert_eq!(s.placements.len(), j.nodes as usize);
                let distinct: BTreeSet<i64> = s.placements.iter().map(|pl| pl.node_id).collect();
                prop_assert_eq!(distinct.len(), s.placements.len());
                for pl in &s.placements {
                    prop_assert_eq!(pl.gpus.len(), j.gpus_per_node as usize);
                    let n = nodes.iter().find(|n| n.id == pl.node_id).unwrap();
                    for g in &pl.gpus {
                        prop_assert!(n.gpus.iter().any(|(i, _)| i == g));
                        prop_assert!(held.insert((pl.node_id, *g)), "GPU given twice");
                    }
                }
            }
            prop_assert_eq!(p.starts.len() + p.pending.len(), pending.len());
        }
    }
}
