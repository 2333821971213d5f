//! The node's CPUs as the worker sees them, and how the CPU ids the scheduler allocates
//! map onto real ones.
//!
//! The worker reports as its node's CPUs the logical CPUs it may run on (its affinity
//! mask, normally every online CPU), and their layout: for each, its core and socket
//! (from `/sys/devices/system/cpu/cpuN/topology`), so the scheduler knows which CPUs are
//! hardware threads of one core ([`berth_core::cores`]). The scheduler allocates CPU ids
//! `0 .. cpus`; id `i` is the `i`-th of the worker's CPUs in increasing order. A
//! simulated node (`--simulate-cpus N`) may declare more CPUs than the machine has: its id
//! `i` is the real CPU `real[i mod real.len()]`, so simulated CPUs share the real cores
//! round-robin. A node simulating `T` threads per core (`--simulate-threads-per-core T`)
//! puts ids `T·c .. T·c + T` on core `c`, all on socket 0, and runs every thread of core
//! `c` on the real CPU `real[c mod real.len()]`: the threads of a simulated core share one
//! real CPU, as hyperthreads share a core.

use std::collections::BTreeSet;
use std::path::Path;

/// The CPUs the worker may use, with their layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuTopology {
    /// The real logical CPU ids, increasing.
    pub cpus: Vec<u32>,
    /// Sockets (physical packages) among them.
    pub sockets: u32,
    /// Cores per socket.
    pub cores_per_socket: u32,
    /// Hardware threads per core.
    pub threads_per_core: u32,
    /// Per CPU of `cpus` (same order), its core: cores numbered from 0 over the whole
    /// machine in (socket, core id) order.
    pub core_of: Vec<u32>,
    /// Per CPU of `cpus` (same order), its socket, numbered from 0 in package id order.
    pub socket_of: Vec<u32>,
}

impl CpuTopology {
    /// This machine's: the worker's affinity mask (else every online CPU, else
    /// `available_parallelism`), laid out from `/sys/devices/system/cpu`.
    pub fn detect() -> CpuTopology {
        let mut cpus = affinity().unwrap_or_default();
        if cpus.is_empty() {
            cpus = std::fs::read_to_string("/sys/devices/system/cpu/online")
                .ok()
                .and_then(|text| parse_cpu_list(&text).ok())
                .unwrap_or_default();
        }
        if cpus.is_empty() {
            let n = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
            cpus = (0..n).collect();
        }
        layout(Path::new("/sys/devices/system/cpu"), cpus)
    }

    /// The real CPUs of allocated CPU ids `ids` (`real[i mod real.len()]`), increasing,
    /// each once.
    pub fn real_cpus(&self, ids: &[u32]) -> Vec<u32> {
        real_cpus(&self.cpus, ids)
    }
}

/// The layout a node reports of its CPU ids, and how they map onto real CPUs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReportedLayout {
    /// Per CPU id, its core ([`berth_core::wire::NodeRegister::cpu_cores`]); empty: none
    /// reported (every CPU a core of its own).
    pub cpu_cores: Vec<u32>,
    /// Per CPU id, its socket; empty with `cpu_cores`.
    pub cpu_sockets: Vec<u32>,
    /// How jobs' CPU ids map onto real CPUs.
    pub map: CpuMap,
}

/// How a node's CPU ids (`0 .. cpus`, as it reported them) map onto the machine's CPUs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CpuMap {
    /// The real CPUs, increasing; empty: jobs are not confined to CPUs.
    pub real: Vec<u32>,
    /// Consecutive ids per real CPU: id `i` runs on `real[(i / per_real) mod
    /// real.len()]` (1, or a simulated node's threads per core; 0 counts as 1).
    pub per_real: u32,
    /// Per id, its core as reported (empty: none).
    pub cores: Vec<u32>,
}

impl CpuMap {
    /// The real CPUs a job holding CPU ids `ids` runs on, using at most
    /// `threads_per_core` ids of each of its cores (the lowest;
    /// [`berth_core::cores::cpus_used`]; `None`: all): increasing, each once; empty when
    /// no real CPUs are known.
    pub fn real_cpus(&self, ids: &[u32], threads_per_core: Option<u32>) -> Vec<u32> {
        let used = berth_core::cores::cpus_used(ids, &self.cores, threads_per_core);
        let per = self.per_real.max(1);
        let grouped: Vec<u32> = used.iter().map(|i| i / per).collect();
        real_cpus(&self.real, &grouped)
    }
}

/// The layout a node of `cpus` CPU ids reports, on a machine of `topology`: with
/// `simulated_threads` (`--simulate-threads-per-core T`), `T` consecutive ids per core on
/// one socket, each core on one real CPU in turn; else, for a real node (`simulated`
/// false, `cpus` the machine's), each id's core and socket as the machine has them; else
/// (simulated CPUs, no threads) none, ids wrapping onto the real CPUs.
///
/// # Errors
/// A message when `cpus` is not a multiple of `T`.
pub fn reported_layout(
    topology: &CpuTopology,
    cpus: u32,
    simulated: bool,
    simulated_threads: Option<u32>,
) -> Result<ReportedLayout, String> {
    let mut map = CpuMap {
        real: topology.cpus.clone(),
        per_real: 1,
        cores: Vec::new(),
    };
    if let Some(t) = simulated_threads {
        let t = t.max(1);
        if !cpus.is_multiple_of(t) {
            return Err(format!(
                "--simulate-threads-per-core {t}: the node's {cpus} CPUs are not whole cores \
                 of {t} threads (declare a multiple of {t} with --simulate-cpus)"
            ));
        }
        let cores: Vec<u32> = (0..cpus).map(|i| i / t).collect();
        map.per_real = t;
        map.cores = cores.clone();
        return Ok(ReportedLayout {
            cpu_cores: cores,
            cpu_sockets: vec![0; cpus as usize],
            map,
        });
    }
    if simulated || topology.core_of.len() != cpus as usize {
        return Ok(ReportedLayout {
            map,
            ..ReportedLayout::default()
        });
    }
    map.cores = topology.core_of.clone();
    Ok(ReportedLayout {
        cpu_cores: topology.core_of.clone(),
        cpu_sockets: topology.socket_of.clone(),
        map,
    })
}

/// Each CPU id's topology domain (numbered as GPU domains are), for a node of `cpus` CPU
/// ids. A simulated node (`simulated`) splits its GPUs' domains (`gpus`, simulated
/// `…/D`) evenly over its ids in order (id `i` in the `i × D / cpus`-th domain); a real
/// one gives each id the NUMA node of its real CPU (`real[i]`, from `sys_node`'s
/// `nodeN/cpulist`, normally `/sys/devices/system/node`). Empty when the GPUs report no
/// domains (simulated), or the NUMA layout cannot be read or does not cover every id.
pub fn cpu_domains(
    cpus: u32,
    simulated: bool,
    gpus: &[berth_core::wire::GpuInfo],
    real: &[u32],
    sys_node: &Path,
) -> Vec<u32> {
    if simulated {
        let domains: BTreeSet<u32> = gpus.iter().filter_map(|g| g.domain).collect();
        if domains.is_empty() || cpus == 0 {
            return Vec::new();
        }
        let domains: Vec<u32> = domains.into_iter().collect();
        let d = domains.len() as u64;
        return (0..u64::from(cpus))
            .map(|i| domains[(i * d / u64::from(cpus)) as usize])
            .collect();
    }
    let Ok(entries) = std::fs::read_dir(sys_node) else {
        return Vec::new();
    };
    let mut numa_of = std::collections::HashMap::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let Some(node) = name
            .strip_prefix("node")
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(list) = std::fs::read_to_string(entry.path().join("cpulist")) else {
            continue;
        };
        for cpu in parse_cpu_list(&list).unwrap_or_default() {
            numa_of.insert(cpu, node);
        }
    }
    let domains: Option<Vec<u32>> = real
        .iter()
        .take(cpus as usize)
        .map(|c| numa_of.get(c).copied())
        .collect();
    match domains {
        Some(d) if d.len() == cpus as usize => d,
        _ => Vec::new(),
    }
}

/// CPUs a simulated node declares per whole GPU when `--simulate-cpus` is not given.
pub const SIMULATED_CPUS_PER_GPU: u32 = 12;
/// Memory a simulated node declares per whole GPU, MiB (128 GiB), when
/// `--simulate-memory` is not given.
pub const SIMULATED_MEMORY_MIB_PER_GPU: u64 = 128 * 1024;
/// The fewest CPUs a simulated node declares by default (a node with few or no GPUs).
pub const SIMULATED_MIN_CPUS: u32 = 16;
/// The least memory a simulated node declares by default, MiB (64 GiB).
pub const SIMULATED_MIN_MEMORY_MIB: u64 = 64 * 1024;

/// The CPUs and memory (MiB) a node of simulated `devices` declares by default: 12 CPUs
/// and 128 GiB per whole GPU (MIG instances and shards count as their GPU), at least 16
/// CPUs and 64 GiB.
pub fn simulated_resources(devices: &[berth_core::wire::GpuInfo]) -> (u32, u64) {
    let gpus: BTreeSet<u32> = devices
        .iter()
        .map(|d| d.parent.unwrap_or(d.index))
        .collect();
    let n = gpus.len() as u32;
    (
        (n * SIMULATED_CPUS_PER_GPU).max(SIMULATED_MIN_CPUS),
        (u64::from(n) * SIMULATED_MEMORY_MIB_PER_GPU).max(SIMULATED_MIN_MEMORY_MIB),
    )
}

/// The real CPUs of allocated ids `ids` on a node whose real CPUs are `real`: id `i` is
/// `real[i mod real.len()]`. Increasing, each once; empty when `real` is.
pub fn real_cpus(real: &[u32], ids: &[u32]) -> Vec<u32> {
    if real.is_empty() {
        return Vec::new();
    }
    let set: BTreeSet<u32> = ids.iter().map(|&i| real[i as usize % real.len()]).collect();
    set.into_iter().collect()
}

/// The worker's own CPU affinity mask.
fn affinity() -> Option<Vec<u32>> {
    let set = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).ok()?;
    Some(
        (0..nix::sched::CpuSet::count())
            .filter(|&i| set.is_set(i).unwrap_or(false))
            .map(|i| i as u32)
            .collect(),
    )
}

/// The layout of `cpus` from `sys` (`/sys/devices/system/cpu`): sockets are the distinct
/// `physical_package_id`s, cores the distinct (package, `core_id`) pairs; where the files
/// are missing each CPU counts as its own core on one socket.
pub fn layout(sys: &Path, cpus: Vec<u32>) -> CpuTopology {
    let read = |cpu: u32, file: &str| -> Option<i64> {
        std::fs::read_to_string(sys.join(format!("cpu{cpu}/topology/{file}")))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    let mut sockets = BTreeSet::new();
    let mut cores = BTreeSet::new();
    let mut places = Vec::with_capacity(cpus.len());
    for &cpu in &cpus {
        let package = read(cpu, "physical_package_id").unwrap_or(0);
        let core = read(cpu, "core_id").unwrap_or(i64::from(cpu));
        sockets.insert(package);
        cores.insert((package, core));
        places.push((package, core));
    }
    let n = cpus.len().max(1) as u32;
    let sockets_n = (sockets.len() as u32).max(1);
    let cores_n = (cores.len() as u32).max(1);
    let socket_index: std::collections::BTreeMap<i64, u32> = sockets
        .iter()
        .enumerate()
        .map(|(i, p)| (*p, i as u32))
        .collect();
    let core_index: std::collections::BTreeMap<(i64, i64), u32> = cores
        .iter()
        .enumerate()
        .map(|(i, c)| (*c, i as u32))
        .collect();
    CpuTopology {
        cpus,
        sockets: sockets_n,
        cores_per_socket: (cores_n / sockets_n).max(1),
        threads_per_core: (n / cores_n).max(1),
        core_of: places.iter().map(|p| core_index[p]).collect(),
        socket_of: places.iter().map(|(s, _)| socket_index[s]).collect(),
    }
}

/// Parses a Linux CPU list (`0-3,8,10-11`) into ids, increasing, each once.
///
/// # Errors
/// A message naming the bad part.
pub fn parse_cpu_list(text: &str) -> Result<Vec<u32>, String> {
    let mut set = BTreeSet::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let bad = || format!("not a CPU list part: {part:?}");
        match part.split_once('-') {
            Some((a, b)) => {
                let a: u32 = a.parse().map_err(|_| bad())?;
                let b: u32 = b.parse().map_err(|_| bad())?;
                if a > b || b - a > 1 << 20 {
                    return Err(bad());
                }
                set.extend(a..=b);
            }
            None => {
                set.insert(part.parse::<u32>().map_err(|_| bad())?);
            }
        }
    }
    Ok(set.into_iter().collect())
}

/// Writes ids as a Linux CPU list (`0-3,8,10-11`); `ids` increasing.
pub fn format_cpu_list(ids: &[u32]) -> String {
    let mut out = Vec::new();
    let mut i = 0;
    while i < ids.len() {
        let start = ids[i];
        let mut end = start;
        while i + 1 < ids.len() && ids[i + 1] == end + 1 {
            i += 1;
            end = ids[i];
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    out.join(",")
}

#[cfg(test)]
mod tests {

    #[test]
    fn cpu_domains_split_simulated_gpu_domains_and_read_numa_nodes() {
        let gpu = |domain: Option<u32>| berth_core::wire::GpuInfo {
            domain,
            ..serde_json::from_value(serde_json::json!({
                "index": 0, "uuid": "GPU-x", "model": "H100", "memory_mib": 1
            }))
            .unwrap()
        };
        let none = Path::new("/nonexistent");
        // Simulated, two GPU domains over 8 CPU ids: 0-3 and 4-7.
        let two = [gpu(Some(0)), gpu(Some(1))];
        assert_eq!(
            cpu_domains(8, true, &two, &[0, 1], none),
            [0, 0, 0, 0, 1, 1, 1, 1]
        );
        assert_eq!(cpu_domains(3, true, &two, &[0], none), [0, 0, 1]);
        // No GPU domains: none.
        assert!(cpu_domains(8, true, &[gpu(None)], &[0], none).is_empty());
        // Real: the NUMA node of each CPU id's real CPU.
        let dir = std::env::temp_dir().join(format!("berth-numa-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (node, list) in [(0, "0-1,4"), (1, "2-3,5")] {
            let d = dir.join(format!("node{node}"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("cpulist"), format!("{list}\n")).unwrap();
        }
        std::fs::create_dir_all(dir.join("power")).unwrap();
        assert_eq!(
            cpu_domains(4, false, &[], &[0, 2, 4, 5], &dir),
            [0, 1, 0, 1]
        );
        // A CPU outside every node: unknown.
        assert!(cpu_domains(2, false, &[], &[0, 9], &dir).is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    use super::*;

    #[test]
    fn cpu_lists_round_trip() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11\n").unwrap(),
            vec![0, 1, 2, 3, 8, 10, 11]
        );
        assert_eq!(format_cpu_list(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(format_cpu_list(&[]), "");
        assert_eq!(parse_cpu_list("").unwrap(), Vec::<u32>::new());
        assert!(parse_cpu_list("3-1").is_err());
        assert!(parse_cpu_list("a").is_err());
    }

    #[test]
    fn simulated_threads_share_a_real_cpu_per_core() {
        let machine = CpuTopology {
            cpus: vec![0, 1],
            sockets: 1,
            cores_per_socket: 2,
            threads_per_core: 1,
            core_of: vec![0, 1],
            socket_of: vec![0, 0],
        };
        // 4 CPU ids, 2 threads per core: cores {0,1} and {2,3}, on real CPUs 0 and 1.
        let sim = reported_layout(&machine, 4, true, Some(2)).unwrap();
        assert_eq!(sim.cpu_cores, vec![0, 0, 1, 1]);
        assert_eq!(sim.cpu_sockets, vec![0, 0, 0, 0]);
        // Both threads of core 0: one real CPU; one thread of each core: two.
        assert_eq!(sim.map.real_cpus(&[0, 1], None), vec![0]);
        assert_eq!(sim.map.real_cpus(&[0, 1, 2, 3], Some(1)), vec![0, 1]);
        assert_eq!(sim.map.real_cpus(&[0, 1, 2, 3], None), vec![0, 1]);
        // A CPU count that is not whole cores is refused, naming the option.
        let err = reported_layout(&machine, 5, true, Some(2)).unwrap_err();
        assert!(err.contains("--simulate-threads-per-core 2"), "{err}");
        // Simulated CPUs without threads report no layout and wrap id by id.
        let flat = reported_layout(&machine, 4, true, None).unwrap();
        assert!(flat.cpu_cores.is_empty() && flat.cpu_sockets.is_empty());
        assert_eq!(flat.map.real_cpus(&[2, 3], Some(1)), vec![0, 1]);
    }

    #[test]
    fn simulated_ids_wrap_onto_the_real_cpus() {
        // A 96-CPU simulated node on a 2-core machine: ids 0, 2, 4 are CPU 0; 1, 95 CPU 1.
        assert_eq!(real_cpus(&[0, 1], &[0, 2, 4]), vec![0]);
        assert_eq!(real_cpus(&[0, 1], &[1, 95]), vec![1]);
        assert_eq!(real_cpus(&[0, 1], &[4, 5]), vec![0, 1]);
        // The worker's CPUs need not start at 0.
        assert_eq!(real_cpus(&[2, 3, 6], &[0, 2, 4]), vec![2, 3, 6]);
        assert_eq!(real_cpus(&[], &[0]), Vec::<u32>::new());
    }

    #[test]
    fn layout_counts_sockets_cores_and_threads() {
        let dir = std::env::temp_dir().join(format!("berth-topology-{}", std::process::id()));
        // 2 sockets × 2 cores × 2 threads: CPUs 0-3 on package 0, 4-7 on package 1;
        // CPU n and n+2 are siblings.
        for cpu in 0..8u32 {
            let t = dir.join(format!("cpu{cpu}/topology"));
            std::fs::create_dir_all(&t).unwrap();
            std::fs::write(t.join("physical_package_id"), format!("{}\n", cpu / 4)).unwrap();
            std::fs::write(t.join("core_id"), format!("{}\n", cpu % 2)).unwrap();
        }
        let topo = layout(&dir, (0..8).collect());
        assert_eq!(
            (topo.sockets, topo.cores_per_socket, topo.threads_per_core),
            (2, 2, 2)
        );
        // Each CPU's core over the machine and its socket: CPU 2 shares CPU 0's core.
        assert_eq!(topo.core_of, vec![0, 1, 0, 1, 2, 3, 2, 3]);
        assert_eq!(topo.socket_of, vec![0, 0, 0, 0, 1, 1, 1, 1]);
        // A real node reports them as they are, and runs id i on CPU i.
        let real = reported_layout(&topo, 8, false, None).unwrap();
        assert_eq!(real.cpu_cores, topo.core_of);
        assert_eq!(real.cpu_sockets, topo.socket_of);
        // One thread per core of ids 0-3 (cores 0 and 1): CPUs 0 and 1.
        assert_eq!(real.map.real_cpus(&[0, 1, 2, 3], Some(1)), vec![0, 1]);
        assert_eq!(real.map.real_cpus(&[0, 2], None), vec![0, 2]);
        // Without the files: one socket, every CPU its own core.
        let flat = layout(&dir.join("missing"), vec![0, 1, 2]);
        assert_eq!(
            (flat.sockets, flat.cores_per_socket, flat.threads_per_core),
            (1, 3, 1)
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
