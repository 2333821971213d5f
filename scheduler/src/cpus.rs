//! Concrete CPUs for a placement. The planner places CPUs and memory as amounts per node
//! ([`crate::planner::Placement`]); the commit, under the node's row lock, re-checks that
//! the node still has them free and picks which logical CPUs (ids `0 .. cpus` as the
//! node reported them, less the CPUs kept for the system, which are the highest ids, as
//! Slurm's `CoreSpecCount` keeps the last cores). Where the node's cores have several
//! hardware threads, it picks whole cores ([`berth_core::cores`]).

use berth_core::cores::CoreLayout;
use std::collections::BTreeSet;

/// What a node can still give, as read under its row lock.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NodeHoldings {
    /// CPUs jobs may be given (ids `0 .. cpus`); 0: not counted (no CPU ids are placed).
    pub cpus: u32,
    /// Memory jobs may be given, MiB; 0: not counted.
    pub memory_mib: u64,
    /// CPU ids held by live allocations.
    pub held_cpu_ids: BTreeSet<u32>,
    /// Memory held by live allocations, MiB.
    pub held_mem_mib: u64,
    /// Per CPU id, the core it is on, as the node reported it (empty: each CPU a core of
    /// its own); see [`CoreLayout::new`].
    pub cpu_cores: Vec<u32>,
}

/// Why a placement no longer fits its node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Misfit {
    /// Fewer free CPUs than placed.
    Cpus {
        /// CPUs placed.
        wanted: u32,
        /// CPUs free.
        free: u32,
    },
    /// Less free memory than placed, MiB.
    Memory {
        /// Memory placed, MiB.
        wanted: u64,
        /// Memory free, MiB.
        free: u64,
    },
}

/// The CPU ids a placement of `cpus` CPUs and `mem_mib` MiB gets on a node with
/// `holdings`, ascending; `exclusive` (`--exclusive`) takes every CPU of the node, which
/// must all be free. CPUs are taken by whole cores of the node's layout
/// ([`CoreLayout`]; each CPU alone where cores have one thread or no layout is known):
/// only cores none of whose threads is held, enough of them for `cpus` (the planner asks
/// for whole cores' worth). Free cores whose first CPU is in `near` (the CPUs of the NUMA
/// domain of the job's GPUs, where the node reports CPU topology; empty otherwise) come
/// first, then the others, each lowest id first (packed, so that whole cores and sockets
/// stay free for larger jobs). A node whose CPUs are not counted gives no ids and refuses
/// none; likewise its memory.
///
/// # Errors
/// [`Misfit`] when the node has too few CPUs or too little memory free now.
pub fn pick_cpus(
    holdings: &NodeHoldings,
    cpus: u32,
    mem_mib: u64,
    exclusive: bool,
    near: &BTreeSet<u32>,
) -> Result<Vec<u32>, Misfit> {
    if holdings.memory_mib > 0 && mem_mib > 0 {
        let free = holdings.memory_mib.saturating_sub(holdings.held_mem_mib);
        if mem_mib > free {
            return Err(Misfit::Memory {
                wanted: mem_mib,
                free,
            });
        }
    }
    if holdings.cpus == 0 {
        return Ok(Vec::new());
    }
    let layout = CoreLayout::new(&holdings.cpu_cores, holdings.cpus);
    let wanted = if exclusive {
        cpus.max(layout.usable_cpus())
    } else {
        cpus
    };
    let free: Vec<&Vec<u32>> = layout
        .cores
        .iter()
        .filter(|core| core.iter().all(|c| !holdings.held_cpu_ids.contains(c)))
        .collect();
    let free_cpus: usize = free.iter().map(|core| core.len()).sum();
    if (free_cpus as u64) < u64::from(wanted) {
        return Err(Misfit::Cpus {
            wanted,
            free: free_cpus as u32,
        });
    }
    let (close, far): (Vec<&Vec<u32>>, Vec<&Vec<u32>>) =
        free.into_iter().partition(|core| near.contains(&core[0]));
    let mut picked: Vec<u32> = Vec::with_capacity(wanted as usize);
    for core in close.into_iter().chain(far) {
        if picked.len() >= wanted as usize {
            break;
        }
        picked.extend_from_slice(core);
    }
    picked.sort_unstable();
    Ok(picked)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(cpus: u32, memory_mib: u64, held: &[u32], held_mem_mib: u64) -> NodeHoldings {
        NodeHoldings {
            cpus,
            memory_mib,
            held_cpu_ids: held.iter().copied().collect(),
            held_mem_mib,
            cpu_cores: Vec::new(),
        }
    }

    /// A node of `cores` cores of two threads, siblings `2c` and `2c + 1`.
    fn threaded(cores: u32, held: &[u32]) -> NodeHoldings {
        NodeHoldings {
            cpu_cores: (0..cores * 2).map(|i| i / 2).collect(),
            ..node(cores * 2, 0, held, 0)
        }
    }

    #[test]
    fn cores_of_several_threads_are_taken_whole() {
        let none = BTreeSet::new();
        // Two cores' worth: the lowest free whole cores.
        assert_eq!(
            pick_cpus(&threaded(4, &[]), 4, 0, false, &none),
            Ok(vec![0, 1, 2, 3])
        );
        // A core with one thread held is not free, though its sibling is.
        assert_eq!(
            pick_cpus(&threaded(4, &[1]), 4, 0, false, &none),
            Ok(vec![2, 3, 4, 5])
        );
        // Free threads, but too few whole cores: refused, counting whole cores' CPUs.
        assert_eq!(
            pick_cpus(&threaded(2, &[0, 3]), 2, 0, false, &none),
            Err(Misfit::Cpus { wanted: 2, free: 0 })
        );
        // Cores near the GPUs first.
        let near: BTreeSet<u32> = (4..8).collect();
        assert_eq!(
            pick_cpus(&threaded(4, &[]), 2, 0, false, &near),
            Ok(vec![4, 5])
        );
        // Exclusive: every whole core.
        assert_eq!(
            pick_cpus(&threaded(2, &[]), 1, 0, true, &none),
            Ok(vec![0, 1, 2, 3])
        );
    }

    #[test]
    fn lowest_free_ids_are_packed() {
        let none = BTreeSet::new();
        assert_eq!(
            pick_cpus(&node(8, 0, &[], 0), 3, 0, false, &none),
            Ok(vec![0, 1, 2])
        );
        assert_eq!(
            pick_cpus(&node(8, 0, &[0, 2, 3], 0), 3, 0, false, &none),
            Ok(vec![1, 4, 5])
        );
    }

    #[test]
    fn cpus_near_the_gpus_come_first() {
        let near: BTreeSet<u32> = (4..8).collect();
        assert_eq!(
            pick_cpus(&node(8, 0, &[4], 0), 2, 0, false, &near),
            Ok(vec![5, 6])
        );
        // Too few near: the rest from the other domain, lowest first.
        assert_eq!(
            pick_cpus(&node(8, 0, &[4, 5, 6], 0), 3, 0, false, &near),
            Ok(vec![0, 1, 7])
        );
    }

    #[test]
    fn a_placement_that_no_longer_fits_is_refused() {
        let none = BTreeSet::new();
        assert_eq!(
            pick_cpus(&node(2, 0, &[1], 0), 2, 0, false, &none),
            Err(Misfit::Cpus { wanted: 2, free: 1 })
        );
        assert_eq!(
            pick_cpus(&node(2, 1000, &[], 600), 1, 500, false, &none),
            Err(Misfit::Memory {
                wanted: 500,
                free: 400
            })
        );
        assert_eq!(
            pick_cpus(&node(2, 1000, &[], 600), 1, 400, false, &none),
            Ok(vec![0])
        );
        // Held ids beyond the node's CPUs now (its CPUs were lowered) do not count as free.
        assert_eq!(
            pick_cpus(&node(2, 0, &[3], 0), 2, 0, false, &none),
            Ok(vec![0, 1])
        );
    }

    #[test]
    fn exclusive_takes_every_cpu() {
        let none = BTreeSet::new();
        assert_eq!(
            pick_cpus(&node(4, 0, &[], 0), 1, 0, true, &none),
            Ok(vec![0, 1, 2, 3])
        );
        assert_eq!(
            pick_cpus(&node(4, 0, &[3], 0), 1, 0, true, &none),
            Err(Misfit::Cpus { wanted: 4, free: 3 })
        );
    }

    #[test]
    fn uncounted_resources_are_not_checked() {
        let none = BTreeSet::new();
        assert_eq!(
            pick_cpus(&node(0, 0, &[], 0), 4, 1 << 20, false, &none),
            Ok(vec![])
        );
        assert_eq!(
            pick_cpus(&node(4, 1000, &[], 0), 0, 0, false, &none),
            Ok(vec![])
        );
    }
}
