//! Memory a job is given on a node, MiB, as Slurm's `select/cons_tres` gives it:
//!
//! * `--mem=N` (or `--mem-per-cpu`/`--mem-per-gpu` × what it holds there, or the
//!   partition's defaults): that amount;
//! * `--mem=0`: all of the node's usable memory (`RealMemory` less `MemSpecLimit`), as
//!   Slurm's `_job_test` allocates `avail_mem` to a job whose `pn_min_memory` is 0, so
//!   such a job shares no node whose memory another job holds any of, and no job that
//!   asks memory shares its node while it runs;
//! * nothing asked: a share of the node's memory in proportion to the CPUs it gets there
//!   (Berth's default where a partition sets no `DefMemPerCPU`).
//!
//! A node that does not count its memory (0) gives 0 (no memory is held there).

use super::{NodeView, PendingJob};

/// What `job` is given of `node`'s memory, MiB, with `cpus` CPUs there.
pub(super) fn memory_on(job: &PendingJob, node: &NodeView, cpus: u32) -> u64 {
    match job.mem_per_node_mib {
        Some(0) => node.memory_mib,
        Some(m) => m,
        None if node.cpus > 0 => (u64::from(cpus) * node.memory_mib).div_ceil(u64::from(node.cpus)),
        None => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::super::{plan, NodeView, PendingJob, PlannerConfig, RunningAlloc, Snapshot};

    fn node(id: i64, cpus: u32, memory_mib: u64) -> NodeView {
        NodeView {
            id,
            name: format!("n{id}"),
            available: true,
            cpus,
            memory_mib,
            ..NodeView::default()
        }
    }

    fn job(id: i64, cpus: u32, mem: Option<u64>) -> PendingJob {
        PendingJob {
            id,
            nodes: 1,
            cpus_per_node: cpus,
            mem_per_node_mib: mem,
            partition_tier: 1,
            fairshare: 1.0,
            time_limit: Some(3600),
            ..Default::default()
        }
    }

    fn started(snap: &Snapshot) -> Vec<(i64, i64, u64)> {
        plan(snap, &PlannerConfig::default())
            .starts
            .iter()
            .flat_map(|s| {
                s.placements
                    .iter()
                    .map(move |p| (s.job_id, p.node_id, p.mem_mib))
            })
            .collect()
    }

    /// `--mem=0` on a 1-CPU job: all 8 GiB of the node, not an eighth; a second `--mem=0`
    /// job and a `--mem` job wait for it (on a node with CPUs to spare) while a second
    /// node takes one of them.
    #[test]
    fn mem_zero_takes_the_whole_usable_memory_and_shares_it_with_no_one() {
        let one = Snapshot {
            now: 100,
            nodes: vec![node(1, 8, 8192)],
            pending: vec![job(1, 1, Some(0)), job(2, 1, Some(0)), job(3, 1, Some(512))],
            ..Default::default()
        };
        assert_eq!(started(&one), vec![(1, 1, 8192)]);
        let p = plan(&one, &PlannerConfig::default());
        assert_eq!(p.waiting(2).unwrap().reason, "Resources");
        assert_eq!(p.waiting(3).unwrap().reason, "Resources");

        let two = Snapshot {
            nodes: vec![node(1, 8, 8192), node(2, 8, 4096)],
            ..one
        };
        let mut placed = started(&two);
        placed.sort_unstable();
        assert_eq!(placed.len(), 2, "{placed:?}");
        assert_eq!(placed[0].0, 1);
        // Each --mem=0 job holds its own node's whole memory.
        for (_, node_id, mem) in &placed {
            assert_eq!(*mem, if *node_id == 1 { 8192 } else { 4096 });
        }
    }

    /// A node where a running job holds any memory cannot take a `--mem=0` job, however
    /// many CPUs and MiB are left (Slurm: "can't allocate all node memory").
    #[test]
    fn mem_zero_waits_for_a_node_with_no_memory_held() {
        let snap = Snapshot {
            now: 100,
            nodes: vec![node(1, 8, 8192)],
            running: vec![RunningAlloc {
                job_id: 9,
                node_id: 1,
                cpus: 1,
                mem_mib: 1,
                end: Some(1000),
                ..RunningAlloc::default()
            }],
            pending: vec![job(1, 1, Some(0))],
            ..Default::default()
        };
        let p = plan(&snap, &PlannerConfig::default());
        assert!(p.starts.is_empty(), "{:?}", p.starts);
        assert_eq!(p.waiting(1).unwrap().reason, "Resources");
        // It is planned for when the running job ends.
        let r = p.reservations.iter().find(|r| r.job_id == 1).unwrap();
        assert_eq!(r.start, 1000);
    }

    /// Memory not asked for stays the share in proportion to CPUs.
    #[test]
    fn no_memory_asked_is_a_share_in_proportion_to_cpus() {
        let snap = Snapshot {
            now: 100,
            nodes: vec![node(1, 8, 8192)],
            pending: vec![job(1, 2, None)],
            ..Default::default()
        };
        assert_eq!(started(&snap), vec![(1, 1, 2048)]);
    }
}
