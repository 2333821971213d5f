//! CPU cores and their hardware threads (Slurm's `Sockets`, `CoresPerSocket`,
//! `ThreadsPerCore`), and how many CPUs a job is given on a node whose cores have several
//! threads.
//!
//! A worker reports, for each of its node's CPU ids (`0 .. cpus`), the core the CPU is on
//! (`cpu_cores`, cores numbered over the whole node) and its socket (`cpu_sockets`); see
//! [`crate::wire::NodeRegister`]. Empty lists mean "not reported": every CPU is then a core
//! of its own, as Slurm takes a node configured with `CPUs=` alone.
//!
//! Berth gives CPUs as Slurm's `select/cons_tres` does with its default
//! `SelectTypeParameters=CR_Core_Memory`: on a node whose cores have `T` threads, a job
//! holds whole cores, all `T` threads of each, so no other job ever runs on a sibling
//! thread of a job's core. A job uses up to `T` threads of each core it holds; one that
//! asks for one thread per core (`--hint=nomultithread`, also `compute_bound` and
//! `memory_bound`, which set Slurm's `threads_per_core` to 1) uses one, so it holds a core
//! for each CPU it asks for, and counts all their threads as its CPUs (Slurm's
//! `_set_task_dist` multiplies the CPUs of such a job by `ThreadsPerCore` "for
//! accounting"): `-n1 -c2 --hint=nomultithread` on a node of 2 threads per core holds 2
//! cores, 4 CPUs (`SLURM_CPUS_ON_NODE=4`), and runs on 2 of them, one per core.

use std::collections::{BTreeMap, BTreeSet};

/// The most CPUs a node may have (reported by its worker or configured, Slurm's `CPUs=`):
/// 65,535, as Slurm keeps a node's CPU count in 16 bits. The scheduler and the api list a
/// node's CPU ids, so a count past what any machine has is refused, not allocated.
pub const MAX_NODE_CPUS: u32 = 65_535;

/// How a node's usable CPU ids group into cores, as the scheduler places jobs on them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoreLayout {
    /// Hardware threads per core that CPUs are given by: `T` when every whole usable
    /// core has `T` usable threads, else 1 (each usable CPU is given as a core of its
    /// own: a layout not reported, not covering every CPU id, or uneven).
    pub threads_per_core: u32,
    /// The usable cores, each as its CPU ids (increasing), ordered by their lowest id.
    /// With `threads_per_core` 1, each usable id alone. A core with a thread at or above
    /// `usable` (kept for the system by `CoreSpecCount`) is not usable.
    pub cores: Vec<Vec<u32>>,
}

impl CoreLayout {
    /// The layout of a node whose CPU id `i` is on core `cpu_cores[i]`, over its usable
    /// ids `0 .. usable`. `cpu_cores` must list every CPU id of the node (at least
    /// `usable` entries); otherwise (empty included) each usable id is a core of its own.
    pub fn new(cpu_cores: &[u32], usable: u32) -> CoreLayout {
        let singles = || CoreLayout {
            threads_per_core: 1,
            cores: (0..usable).map(|i| vec![i]).collect(),
        };
        if (cpu_cores.len() as u64) < u64::from(usable) || usable == 0 {
            return singles();
        }
        let mut by_core: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for (id, core) in cpu_cores.iter().enumerate() {
            by_core.entry(*core).or_default().push(id as u32);
        }
        let mut cores: Vec<Vec<u32>> = by_core
            .into_values()
            .filter(|ids| ids.iter().all(|&i| i < usable))
            .collect();
        cores.sort_by_key(|ids| ids[0]);
        let threads = cores.first().map_or(1, |c| c.len() as u32);
        if threads <= 1 || cores.iter().any(|c| c.len() as u32 != threads) {
            return singles();
        }
        CoreLayout {
            threads_per_core: threads,
            cores,
        }
    }

    /// CPUs jobs may be given: the ids of the usable cores.
    pub fn usable_cpus(&self) -> u32 {
        self.cores.iter().map(|c| c.len() as u32).sum()
    }

    /// [`CoreLayout::new`]'s `threads_per_core` and [`CoreLayout::usable_cpus`], without
    /// listing the cores (what the scheduler's snapshot of every node needs).
    pub fn summary(cpu_cores: &[u32], usable: u32) -> (u32, u32) {
        if (cpu_cores.len() as u64) < u64::from(usable) || usable == 0 {
            return (1, usable);
        }
        // Per core: its threads, and whether all of them are usable.
        let mut by_core: BTreeMap<u32, (u32, bool)> = BTreeMap::new();
        for (id, core) in cpu_cores.iter().enumerate() {
            let entry = by_core.entry(*core).or_insert((0, true));
            entry.0 += 1;
            entry.1 &= (id as u64) < u64::from(usable);
        }
        let mut sizes = by_core
            .values()
            .filter(|(_, whole)| *whole)
            .map(|(n, _)| *n);
        let Some(threads) = sizes.next() else {
            return (1, usable);
        };
        let mut cores = 1u32;
        for n in sizes {
            if n != threads {
                return (1, usable);
            }
            cores += 1;
        }
        if threads <= 1 {
            return (1, usable);
        }
        (threads, cores * threads)
    }
}

/// The CPUs a job holds on a node whose cores have `node_threads` threads (as
/// [`CoreLayout::threads_per_core`] gives them; 0 counts as 1) to use `cpus` CPUs there,
/// using at most `job_threads` threads of each core (Slurm's `--threads-per-core`;
/// [`hint_threads_per_core`]; `None`: all): whole cores, each giving the job
/// `min(job_threads, node_threads)` CPUs to use, so `ceil(cpus / that)` cores of
/// `node_threads` CPUs each. Saturates at `u32::MAX`.
pub fn cpus_held(cpus: u32, node_threads: u32, job_threads: Option<u32>) -> u32 {
    let node_threads = node_threads.max(1);
    let usable = job_threads.map_or(node_threads, |t| t.clamp(1, node_threads));
    cpus.div_ceil(usable).saturating_mul(node_threads)
}

/// The CPUs a job runs on among `held` (its CPU ids on a node whose CPU id `i` is on core
/// `cpu_cores[i]`): the lowest `job_threads` ids of each core it holds (every id with
/// `None`, or where an id has no core listed). Increasing.
pub fn cpus_used(held: &[u32], cpu_cores: &[u32], job_threads: Option<u32>) -> Vec<u32> {
    let mut held: Vec<u32> = held.to_vec();
    held.sort_unstable();
    held.dedup();
    let Some(limit) = job_threads else {
        return held;
    };
    let mut taken: BTreeMap<u32, u32> = BTreeMap::new();
    held.into_iter()
        .filter(|&id| match cpu_cores.get(id as usize) {
            Some(core) => {
                let n = taken.entry(*core).or_default();
                *n += 1;
                *n <= limit.max(1)
            }
            None => true,
        })
        .collect()
}

/// The most threads of each core a job uses, from its `--hint` (comma-separated, later
/// hints winning as in Slurm's `verify_hint`): `nomultithread`, `compute_bound` and
/// `memory_bound` set 1, `multithread` all (`None`); `None` without a hint.
pub fn hint_threads_per_core(hint: Option<&str>) -> Option<u32> {
    let mut threads = None;
    for h in hint.unwrap_or_default().split(',').map(str::trim) {
        match h.to_ascii_lowercase().as_str() {
            "nomultithread" | "compute_bound" | "memory_bound" => threads = Some(1),
            "multithread" => threads = None,
            _ => {}
        }
    }
    threads
}

/// A node's CPU layout as Slurm shows it (`scontrol show node`'s `Sockets=`,
/// `CoresPerSocket=`, `ThreadsPerCore=`; sinfo's `%z`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeShape {
    /// Sockets.
    pub sockets: u32,
    /// Cores per socket (the node's cores over its sockets, at least 1).
    pub cores_per_socket: u32,
    /// Hardware threads per core (the node's CPUs over its cores, at least 1).
    pub threads_per_core: u32,
}

impl NodeShape {
    /// The shape of a node of `cpus` CPU ids whose id `i` is on core `cpu_cores[i]` and
    /// socket `cpu_sockets[i]`. Without a layout for every id (lists of another length,
    /// empty ones included), what Slurm shows for a node configured with `CPUs=` alone:
    /// `cpus` sockets of one core of one thread.
    pub fn new(cpus: u32, cpu_cores: &[u32], cpu_sockets: &[u32]) -> NodeShape {
        let n = cpus as usize;
        if n == 0 || cpu_cores.len() != n || cpu_sockets.len() != n {
            return NodeShape {
                sockets: cpus.max(1),
                cores_per_socket: 1,
                threads_per_core: 1,
            };
        }
        let sockets = cpu_sockets.iter().collect::<BTreeSet<_>>().len() as u32;
        let cores = cpu_cores.iter().collect::<BTreeSet<_>>().len() as u32;
        NodeShape {
            sockets,
            cores_per_socket: (cores / sockets.max(1)).max(1),
            threads_per_core: (cpus / cores.max(1)).max(1),
        }
    }

    /// Slurm's `S:C:T` (sinfo's `%z`).
    pub fn sct(&self) -> String {
        format!(
            "{}:{}:{}",
            self.sockets, self.cores_per_socket, self.threads_per_core
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cores_group_ids_and_uneven_layouts_count_each_cpu_alone() {
        // 2 cores × 2 threads, siblings 0/2 and 1/3 (Linux's numbering).
        let l = CoreLayout::new(&[0, 1, 0, 1], 4);
        assert_eq!(l.threads_per_core, 2);
        assert_eq!(l.cores, vec![vec![0, 2], vec![1, 3]]);
        assert_eq!(l.usable_cpus(), 4);
        // A core with a thread kept for the system (CoreSpecCount 1) is not usable.
        let l = CoreLayout::new(&[0, 0, 1, 1, 2, 2], 5);
        assert_eq!((l.threads_per_core, l.usable_cpus()), (2, 4));
        assert_eq!(l.cores, vec![vec![0, 1], vec![2, 3]]);
        // Not reported, too short, or uneven: each usable CPU alone.
        for cores in [&[][..], &[0, 0][..], &[0, 0, 1, 2][..]] {
            let l = CoreLayout::new(cores, 4);
            assert_eq!(l.threads_per_core, 1, "{cores:?}");
            assert_eq!(l.usable_cpus(), 4, "{cores:?}");
            assert_eq!(l.cores[3], vec![3]);
        }
        // The summary says what the layout does.
        let cases: [(&[u32], u32); 7] = [
            (&[0, 1, 0, 1], 4),
            (&[0, 0, 1, 1, 2, 2], 5),
            (&[0, 0, 1, 1, 2, 2], 1),
            (&[], 4),
            (&[0, 0, 1, 2], 4),
            (&[0, 0, 0, 1, 1, 1], 6),
            (&[0, 0], 0),
        ];
        for (cores, usable) in cases {
            let l = CoreLayout::new(cores, usable);
            assert_eq!(
                CoreLayout::summary(cores, usable),
                (l.threads_per_core, l.usable_cpus()),
                "{cores:?} {usable}"
            );
        }
    }

    #[test]
    fn held_cpus_are_whole_cores() {
        // One thread per core: a core per CPU asked, all its threads held.
        assert_eq!(cpus_held(2, 2, Some(1)), 4);
        assert_eq!(cpus_held(3, 4, Some(1)), 12);
        assert_eq!(cpus_held(3, 4, Some(2)), 8);
        // Every thread used: enough whole cores.
        assert_eq!(cpus_held(2, 2, None), 2);
        assert_eq!(cpus_held(1, 2, None), 2);
        assert_eq!(cpus_held(3, 2, None), 4);
        // A job's threads per core above the node's counts as the node's.
        assert_eq!(cpus_held(3, 2, Some(4)), 4);
        // One thread per core on a node of one: nothing changes.
        assert_eq!(cpus_held(3, 1, Some(1)), 3);
        assert_eq!(cpus_held(3, 0, None), 3);
    }

    #[test]
    fn a_job_of_one_thread_per_core_runs_on_the_first_of_each() {
        let cores = [0, 0, 1, 1, 2, 2];
        assert_eq!(cpus_used(&[0, 1, 2, 3], &cores, Some(1)), vec![0, 2]);
        assert_eq!(cpus_used(&[3, 2, 1, 0], &cores, None), vec![0, 1, 2, 3]);
        assert_eq!(cpus_used(&[0, 1, 4, 5], &cores, Some(2)), vec![0, 1, 4, 5]);
        // Ids the layout does not cover are kept.
        assert_eq!(cpus_used(&[0, 1, 9], &cores, Some(1)), vec![0, 9]);
    }

    #[test]
    fn hints_set_threads_per_core_as_slurm_does() {
        assert_eq!(hint_threads_per_core(None), None);
        assert_eq!(hint_threads_per_core(Some("nomultithread")), Some(1));
        assert_eq!(hint_threads_per_core(Some("compute_bound")), Some(1));
        assert_eq!(hint_threads_per_core(Some("memory_bound")), Some(1));
        assert_eq!(hint_threads_per_core(Some("multithread")), None);
        assert_eq!(
            hint_threads_per_core(Some("nomultithread,multithread")),
            None
        );
        assert_eq!(
            hint_threads_per_core(Some("multithread,nomultithread")),
            Some(1)
        );
    }

    #[test]
    fn shapes_count_sockets_cores_and_threads() {
        let s = NodeShape::new(8, &[0, 1, 2, 3, 0, 1, 2, 3], &[0, 0, 1, 1, 0, 0, 1, 1]);
        assert_eq!(
            (s.sockets, s.cores_per_socket, s.threads_per_core),
            (2, 2, 2)
        );
        assert_eq!(s.sct(), "2:2:2");
        let flat = NodeShape::new(4, &[], &[]);
        assert_eq!(flat.sct(), "4:1:1");
    }
}
