//! Control groups for batch jobs: a memory limit and a CPU quota per job run, and
//! whether the kernel's OOM killer struck inside it (the job then ends OUT_OF_MEMORY).
//!
//! cgroup v2 is used when `/sys/fs/cgroup/cgroup.controllers` offers `memory` (and `cpu`):
//! jobs go under `/sys/fs/cgroup/berth/{name}` (named after the worker's state directory
//! and the run, see [`crate::launch::cgroup_name`]) with `memory.max`, `cpu.max`, and
//! `memory.events`' `oom_kill` counter. On a v1 (or hybrid) host the `memory` and `cpu`
//! hierarchies are used the same way (`memory.limit_in_bytes`, `cpu.cfs_quota_us`,
//! `memory.oom_control`'s `oom_kill`). Without either, jobs run unconfined.
//!
//! Usage for accounting ([`JobCgroup::usage`], read when the batch shell has exited): CPU
//! time from v2's `cpu.stat` (`usage_usec`) or v1's `cpuacct.usage` (nanoseconds; the job
//! gets a group in the `cpuacct` hierarchy too), and the group's peak memory from v2's
//! `memory.peak` (Linux 5.19 on) or v1's `memory.max_usage_in_bytes`. Both cover every
//! process of the job on this node (the batch shell and the step tasks that joined it).
//!
//! GPU devices: a job may open only its own GPUs' character devices (`/dev/nvidiaN`,
//! major [`NVIDIA_MAJOR`], minor the GPU's minor number) where the host has the v1
//! `devices` hierarchy: the job's group there denies (`devices.deny`, `c 195:N rwm`) every
//! GPU of the node that the job holds no device of ([`denied_gpu_minors`]: a MIG instance
//! or shard opens its GPU's `/dev/nvidiaN`, so jobs sharing a GPU can open it alike; MIG
//! instances are not told apart by their `/dev/nvidia-caps` devices); the control
//! devices (`/dev/nvidiactl` 195:255, `/dev/nvidia-modeset` 195:254, `/dev/nvidia-uvm`,
//! other majors) stay allowed. Opening another job's GPU then fails with EPERM. On a
//! cgroup v2 host the same rule is a BPF device program attached to the job's group
//! ([`crate::bpf_device`]). Where neither works (no cgroups, or a kernel refusing the
//! program), GPU devices are not isolated: jobs see only their GPUs in
//! `CUDA_VISIBLE_DEVICES` but could open the others ([`Hierarchy::device_control`]).
//!
//! The shepherd's exec stage joins the job's groups before it does anything of the job
//! (so the batch shell and everything it starts are inside from the first instruction,
//! and the shepherd never is); see [`join`].

use std::path::{Path, PathBuf};

/// The CPU quota period, microseconds.
const PERIOD_US: u64 = 100_000;

/// The major number of NVIDIA's character devices (`/dev/nvidia0` is 195:0).
pub const NVIDIA_MAJOR: u32 = 195;

/// The minor numbers of the GPUs a job must not open: those of `node_devices` (the node's
/// devices as (device index, minor number) pairs; a MIG instance or shard has its parent
/// GPU's minor) that the job does not hold (`allowed`, its device indices on this node),
/// less those of the devices it holds: a job with one shard or MIG instance of GPU 0 may
/// open `/dev/nvidia0` even though the other shards of GPU 0 are not its. Sorted, each
/// once.
pub fn denied_gpu_minors(node_devices: &[(u32, u32)], allowed: &[u32]) -> Vec<u32> {
    let held: Vec<u32> = node_devices
        .iter()
        .filter(|(index, _)| allowed.contains(index))
        .map(|&(_, minor)| minor)
        .collect();
    let mut minors: Vec<u32> = node_devices
        .iter()
        .filter(|(index, minor)| !allowed.contains(index) && !held.contains(minor))
        .map(|&(_, minor)| minor)
        .collect();
    minors.sort_unstable();
    minors.dedup();
    minors
}

/// What a job may use on this node.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Limits {
    /// Memory, MiB.
    pub memory_mib: Option<u64>,
    /// CPUs (a quota of that many CPUs' time).
    pub cpus: Option<u32>,
    /// The real CPUs it may run on (a cpuset), increasing; empty: any.
    pub cpu_ids: Vec<u32>,
}

/// The cgroup layout of this host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hierarchy {
    /// cgroup v2: the unified root (`/sys/fs/cgroup`).
    V2(PathBuf),
    /// cgroup v1: the `memory`, `cpu` and `devices` hierarchies' roots, when mounted.
    V1 {
        /// `/sys/fs/cgroup/memory`.
        memory: Option<PathBuf>,
        /// `/sys/fs/cgroup/cpu`.
        cpu: Option<PathBuf>,
        /// `/sys/fs/cgroup/devices`.
        devices: Option<PathBuf>,
        /// `/sys/fs/cgroup/cpuset`.
        cpuset: Option<PathBuf>,
        /// `/sys/fs/cgroup/cpuacct` (CPU time for accounting; often the same hierarchy as
        /// `cpu`).
        cpuacct: Option<PathBuf>,
    },
}

/// Finds the cgroup layout under `root` (`/sys/fs/cgroup`): v2 when its
/// `cgroup.controllers` lists `memory`, else the v1 `memory`/`cpu`/`devices` hierarchies
/// that are mounted; `None` when there is nothing to use.
pub fn detect(root: &Path) -> Option<Hierarchy> {
    let controllers = std::fs::read_to_string(root.join("cgroup.controllers")).unwrap_or_default();
    if controllers.split_whitespace().any(|c| c == "memory") {
        return Some(Hierarchy::V2(root.to_path_buf()));
    }
    let usable = |name: &str, probe: &str| {
        let dir = root.join(name);
        dir.join(probe).exists().then_some(dir)
    };
    let memory = usable("memory", "memory.limit_in_bytes");
    let cpu = usable("cpu", "cpu.cfs_quota_us");
    let devices = usable("devices", "devices.deny");
    let cpuset = usable("cpuset", "cpuset.cpus");
    let cpuacct = usable("cpuacct", "cpuacct.usage");
    (memory.is_some() || cpu.is_some() || devices.is_some() || cpuset.is_some()).then_some(
        Hierarchy::V1 {
            memory,
            cpu,
            devices,
            cpuset,
            cpuacct,
        },
    )
}

/// A job run's groups (one directory for v2, one per hierarchy for v1).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct JobCgroup {
    /// The directories whose `cgroup.procs` the job joins.
    pub dirs: Vec<PathBuf>,
    /// Where the OOM kill counter is: `memory.events` (v2) or `memory.oom_control` (v1).
    pub oom_file: Option<PathBuf>,
    /// Whether a cpuset confines the job to its CPUs ([`Limits::cpu_ids`]); when not,
    /// the shepherd sets the job's CPU affinity instead.
    #[serde(default)]
    pub cpuset: bool,
    /// The group's CPU time: `cpu.stat` (v2) or `cpuacct.usage` (v1).
    #[serde(default)]
    pub cpu_usage_file: Option<PathBuf>,
    /// The group's peak memory: `memory.peak` (v2) or `memory.max_usage_in_bytes` (v1).
    #[serde(default)]
    pub memory_peak_file: Option<PathBuf>,
}

/// What a job's group used on its node, as far as the kernel reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    /// CPU time (user and system), seconds.
    pub cpu_seconds: Option<f64>,
    /// Peak memory of the group (the sum over its processes at its highest), MiB, rounded
    /// up.
    pub memory_peak_mib: Option<u64>,
}

/// The CPU seconds in a v2 `cpu.stat` (`usage_usec`) or a v1 `cpuacct.usage`
/// (nanoseconds) text; `file_name` says which.
pub fn cpu_seconds(file_name: &str, text: &str) -> Option<f64> {
    if file_name == "cpu.stat" {
        text.lines()
            .find_map(|line| line.strip_prefix("usage_usec "))
            .and_then(|n| n.trim().parse::<u64>().ok())
            .map(|usec| usec as f64 / 1e6)
    } else {
        text.trim().parse::<u64>().ok().map(|ns| ns as f64 / 1e9)
    }
}

fn write(path: &Path, value: &str) -> std::io::Result<()> {
    std::fs::write(path, value).map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!("writing {value:?} to {}: {e}", path.display()),
        )
    })
}

/// How a host keeps jobs off the GPUs they do not hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceControl {
    /// The v1 `devices` hierarchy (`devices.deny`).
    V1Devices,
    /// cgroup v2: a BPF device program on each job's group ([`crate::bpf_device`]).
    V2Bpf,
    /// None: jobs could open every GPU device of the node.
    None,
}

impl Hierarchy {
    /// Whether jobs' groups keep them off other jobs' GPU devices here.
    pub fn device_control(&self) -> DeviceControl {
        match self {
            Hierarchy::V1 {
                devices: Some(_), ..
            } => DeviceControl::V1Devices,
            Hierarchy::V2(_) => DeviceControl::V2Bpf,
            Hierarchy::V1 { devices: None, .. } => DeviceControl::None,
        }
    }

    /// Whether a job with `limits` that must not open `denied_gpus` needs groups here.
    pub fn needed(&self, limits: &Limits, denied_gpus: &[u32]) -> bool {
        *limits != Limits::default()
            || (!denied_gpus.is_empty() && self.device_control() != DeviceControl::None)
    }

    /// Makes the groups `berth/{name}` with `limits`, denying the GPU devices with minor
    /// numbers `denied_gpus` (major [`NVIDIA_MAJOR`]) where [`Hierarchy::device_control`]
    /// allows.
    ///
    /// # Errors
    /// The kernel's refusal (no permission, a controller that cannot be enabled).
    pub fn create(
        &self,
        name: &str,
        limits: &Limits,
        denied_gpus: &[u32],
    ) -> std::io::Result<JobCgroup> {
        match self {
            Hierarchy::V2(root) => {
                let base = root.join("berth");
                std::fs::create_dir_all(&base)?;
                // Delegate the controllers to berth/ and its children (the root is exempt
                // from the no-internal-processes rule; berth/ holds no processes).
                let _ = write(&root.join("cgroup.subtree_control"), "+memory +cpu");
                let _ = write(&base.join("cgroup.subtree_control"), "+memory +cpu");
                if !limits.cpu_ids.is_empty() {
                    // Not every host delegates cpuset; the shepherd falls back to the
                    // job's CPU affinity then.
                    let _ = write(&root.join("cgroup.subtree_control"), "+cpuset");
                    let _ = write(&base.join("cgroup.subtree_control"), "+cpuset");
                }
                let dir = base.join(name);
                std::fs::create_dir_all(&dir)?;
                let mut cpuset = false;
                if !limits.cpu_ids.is_empty() && dir.join("cpuset.cpus").exists() {
                    write(
                        &dir.join("cpuset.cpus"),
                        &crate::topology::format_cpu_list(&limits.cpu_ids),
                    )?;
                    cpuset = true;
                }
                if let Some(mib) = limits.memory_mib {
                    write(&dir.join("memory.max"), &(mib * 1024 * 1024).to_string())?;
                    let _ = write(&dir.join("memory.swap.max"), "0");
                }
                if let Some(cpus) = limits.cpus {
                    write(
                        &dir.join("cpu.max"),
                        &format!("{} {PERIOD_US}", u64::from(cpus) * PERIOD_US),
                    )?;
                }
                if !denied_gpus.is_empty() {
                    // A kernel refusing the program leaves the job without device
                    // isolation rather than failing it.
                    if let Err(e) = crate::bpf_device::deny_gpus(&dir, denied_gpus) {
                        tracing::warn!(group = %dir.display(), error = %e, "GPU devices not isolated");
                    }
                }
                let peak = dir.join("memory.peak");
                Ok(JobCgroup {
                    oom_file: Some(dir.join("memory.events")),
                    cpu_usage_file: Some(dir.join("cpu.stat")),
                    memory_peak_file: peak.exists().then_some(peak),
                    dirs: vec![dir],
                    cpuset,
                })
            }
            Hierarchy::V1 {
                memory,
                cpu,
                devices,
                cpuset,
                cpuacct,
            } => {
                let mut group = JobCgroup {
                    dirs: Vec::new(),
                    oom_file: None,
                    cpuset: false,
                    cpu_usage_file: None,
                    memory_peak_file: None,
                };
                if let (Some(root), false) = (cpuset, limits.cpu_ids.is_empty()) {
                    // A v1 cpuset takes no task until its cpus and mems are set: berth/
                    // inherits its parent's, the job's group its CPUs and berth/'s mems.
                    let base = root.join("berth");
                    std::fs::create_dir_all(&base)?;
                    for file in ["cpuset.cpus", "cpuset.mems"] {
                        let own = std::fs::read_to_string(base.join(file)).unwrap_or_default();
                        if own.trim().is_empty() {
                            let parent = std::fs::read_to_string(root.join(file))?;
                            write(&base.join(file), parent.trim())?;
                        }
                    }
                    let dir = base.join(name);
                    std::fs::create_dir_all(&dir)?;
                    let mems = std::fs::read_to_string(base.join("cpuset.mems"))?;
                    write(&dir.join("cpuset.mems"), mems.trim())?;
                    write(
                        &dir.join("cpuset.cpus"),
                        &crate::topology::format_cpu_list(&limits.cpu_ids),
                    )?;
                    group.cpuset = true;
                    group.dirs.push(dir);
                }
                if let Some(root) = memory {
                    let dir = root.join("berth").join(name);
                    std::fs::create_dir_all(&dir)?;
                    if let Some(mib) = limits.memory_mib {
                        write(
                            &dir.join("memory.limit_in_bytes"),
                            &(mib * 1024 * 1024).to_string(),
                        )?;
                    }
                    group.oom_file = Some(dir.join("memory.oom_control"));
                    group.memory_peak_file = Some(dir.join("memory.max_usage_in_bytes"));
                    group.dirs.push(dir);
                }
                if let (Some(root), Some(cpus)) = (cpu, limits.cpus) {
                    let dir = root.join("berth").join(name);
                    std::fs::create_dir_all(&dir)?;
                    write(&dir.join("cpu.cfs_period_us"), &PERIOD_US.to_string())?;
                    write(
                        &dir.join("cpu.cfs_quota_us"),
                        &(u64::from(cpus) * PERIOD_US).to_string(),
                    )?;
                    group.dirs.push(dir);
                }
                if let Some(root) = cpuacct {
                    // CPU time for accounting (where `cpu` and `cpuacct` share a
                    // hierarchy, the two paths name the same group: joining it twice is
                    // harmless).
                    let dir = root.join("berth").join(name);
                    std::fs::create_dir_all(&dir)?;
                    group.cpu_usage_file = Some(dir.join("cpuacct.usage"));
                    group.dirs.push(dir);
                }
                if let (Some(root), false) = (devices, denied_gpus.is_empty()) {
                    let dir = root.join("berth").join(name);
                    std::fs::create_dir_all(&dir)?;
                    for minor in denied_gpus {
                        write(
                            &dir.join("devices.deny"),
                            &format!("c {NVIDIA_MAJOR}:{minor} rwm"),
                        )?;
                    }
                    group.dirs.push(dir);
                }
                Ok(group)
            }
        }
    }
}

impl Hierarchy {
    /// The directories job groups are made in: `berth/` under each hierarchy's root.
    fn bases(&self) -> Vec<PathBuf> {
        match self {
            Hierarchy::V2(root) => vec![root.join("berth")],
            Hierarchy::V1 {
                memory,
                cpu,
                devices,
                cpuset,
                cpuacct,
            } => [memory, cpu, devices, cpuset, cpuacct]
                .into_iter()
                .flatten()
                .map(|root| root.join("berth"))
                .collect(),
        }
    }

    /// Removes every job group whose name starts with `prefix` (a worker's, see
    /// [`crate::launch::cgroup_prefix`]), trying for up to 5 s while killed processes go.
    pub async fn remove_groups(&self, prefix: &str) {
        for _ in 0..50 {
            let mut left = false;
            for base in self.bases() {
                for entry in std::fs::read_dir(&base).into_iter().flatten().flatten() {
                    if entry.file_name().to_string_lossy().starts_with(prefix)
                        && std::fs::remove_dir(entry.path()).is_err()
                    {
                        left = true;
                    }
                }
            }
            if !left {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        tracing::warn!(prefix, "job cgroups still in use; left in place");
    }
}

/// The `oom_kill` count in a `memory.events` (v2) or `memory.oom_control` (v1) text.
pub fn oom_kills(text: &str) -> u64 {
    text.lines()
        .find_map(|line| line.strip_prefix("oom_kill "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

impl JobCgroup {
    /// Whether the OOM killer killed a process of the job.
    pub fn oom_killed(&self) -> bool {
        self.oom_file
            .as_ref()
            .and_then(|file| std::fs::read_to_string(file).ok())
            .is_some_and(|text| oom_kills(&text) > 0)
    }

    /// What the group used so far ([`Usage`]); a figure the kernel does not report here is
    /// `None`.
    pub fn usage(&self) -> Usage {
        let read = |file: &Option<PathBuf>| {
            file.as_ref().and_then(|path| {
                let text = std::fs::read_to_string(path).ok()?;
                let name = path.file_name()?.to_string_lossy().into_owned();
                Some((name, text))
            })
        };
        Usage {
            cpu_seconds: read(&self.cpu_usage_file)
                .and_then(|(name, text)| cpu_seconds(&name, &text)),
            memory_peak_mib: read(&self.memory_peak_file)
                .and_then(|(_, text)| text.trim().parse::<u64>().ok())
                .map(|bytes| bytes.div_ceil(1024 * 1024)),
        }
    }

    /// Removes the groups (once their processes are gone); failures are ignored.
    pub fn remove(&self) {
        for dir in &self.dirs {
            let _ = std::fs::remove_dir(dir);
        }
    }

    /// Removes the groups once empty, trying for up to 5 s while killed processes go;
    /// groups that other processes of the job still use are left to them.
    pub async fn remove_when_empty(&self) {
        for _ in 0..50 {
            self.remove();
            if self.dirs.iter().all(|dir| !dir.exists()) {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }
}

/// Puts the calling process into `dirs` (each a job's group, see
/// [`crate::launch::cgroup_name`]): the shepherd's exec stage calls it before it does
/// anything of the job, so the batch shell and everything it starts are inside from their
/// first instruction while the shepherd itself never is. An OOM kill in a group too small
/// for the job (`--mem=1M`) can then strike only the exec stage, never the shepherd that
/// must report it.
///
/// # Errors
/// Joining a group failed (the job is not started); the message names the file.
pub fn join(dirs: &[PathBuf]) -> std::io::Result<()> {
    for dir in dirs {
        write(&dir.join("cgroup.procs"), "0")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_oom_kill_counters() {
        assert_eq!(oom_kills("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n"), 1);
        assert_eq!(
            oom_kills("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n"),
            2
        );
        assert_eq!(oom_kills("oom_kill_disable 0\nunder_oom 0\n"), 0);
    }

    #[test]
    fn denies_the_gpus_a_job_does_not_hold() {
        let node: Vec<(u32, u32)> = (0..8).map(|i| (i, i)).collect();
        assert_eq!(denied_gpu_minors(&node, &[2]), vec![0, 1, 3, 4, 5, 6, 7]);
        assert_eq!(
            denied_gpu_minors(&node, &[0, 1, 2, 3, 4, 5, 6, 7]),
            Vec::<u32>::new()
        );
        assert_eq!(denied_gpu_minors(&node, &[]), (0..8).collect::<Vec<_>>());
        // Minor numbers need not follow indices (NVML reports each device's).
        let node = [(0, 4), (1, 5), (2, 0), (3, 1)];
        assert_eq!(denied_gpu_minors(&node, &[0, 3]), vec![0, 5]);
        // An index the node does not have denies nothing more.
        assert_eq!(denied_gpu_minors(&node, &[9]), vec![0, 1, 4, 5]);
    }

    #[test]
    fn a_shard_or_mig_instance_opens_its_whole_gpu_device() {
        // 2 GPUs offered as 2 shards each: shards 0, 1 on GPU 0 (minor 0), 2, 3 on GPU 1.
        let shards = [(0, 0), (1, 0), (2, 1), (3, 1)];
        assert_eq!(denied_gpu_minors(&shards, &[1]), vec![1]);
        assert_eq!(denied_gpu_minors(&shards, &[0, 1]), vec![1]);
        assert_eq!(denied_gpu_minors(&shards, &[1, 2]), Vec::<u32>::new());
        assert_eq!(denied_gpu_minors(&shards, &[]), vec![0, 1]);
        // NVML: GPU 1 whole (minor 3), GPU 0 (minor 2) in MIG mode, its instances 2 and 3.
        let mig = [(1, 3), (2, 2), (3, 2)];
        assert_eq!(denied_gpu_minors(&mig, &[3]), vec![3]);
        assert_eq!(denied_gpu_minors(&mig, &[1]), vec![2]);
        assert_eq!(denied_gpu_minors(&mig, &[1, 2]), Vec::<u32>::new());
    }

    #[test]
    fn a_v1_devices_group_denies_the_other_gpus() {
        let dir = std::env::temp_dir().join(format!("berth-devices-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("devices")).unwrap();
        std::fs::write(dir.join("devices/devices.deny"), "").unwrap();
        let hierarchy = detect(&dir).unwrap();
        assert_eq!(hierarchy.device_control(), DeviceControl::V1Devices);
        assert!(hierarchy.needed(&Limits::default(), &[1]));
        assert!(!hierarchy.needed(&Limits::default(), &[]));
        let group = hierarchy
            .create("job_3.0", &Limits::default(), &[1, 7])
            .unwrap();
        let job = dir.join("devices/berth/job_3.0");
        assert_eq!(group.dirs, vec![job.clone()]);
        // A plain file keeps the last write; the kernel's takes each rule.
        assert_eq!(
            std::fs::read_to_string(job.join("devices.deny")).unwrap(),
            "c 195:7 rwm"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn detects_v2_and_v1_layouts() {
        let dir = std::env::temp_dir().join(format!("berth-cgroup-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("memory")).unwrap();
        assert_eq!(detect(&dir), None);
        std::fs::write(dir.join("memory/memory.limit_in_bytes"), "").unwrap();
        assert_eq!(
            detect(&dir),
            Some(Hierarchy::V1 {
                memory: Some(dir.join("memory")),
                cpu: None,
                devices: None,
                cpuset: None,
                cpuacct: None,
            })
        );
        std::fs::write(
            dir.join("cgroup.controllers"),
            "cpuset cpu io memory pids\n",
        )
        .unwrap();
        assert_eq!(detect(&dir), Some(Hierarchy::V2(dir.clone())));
        // A v2 job group gets memory.max and cpu.max.
        let group = Hierarchy::V2(dir.clone())
            .create(
                "job_1.0",
                &Limits {
                    memory_mib: Some(512),
                    cpus: Some(2),
                    cpu_ids: Vec::new(),
                },
                &[],
            )
            .unwrap();
        let job = dir.join("berth/job_1.0");
        assert_eq!(group.dirs, vec![job.clone()]);
        // Its usage: cpu.stat's usage_usec; no memory.peak on this (fake) kernel.
        std::fs::write(
            job.join("cpu.stat"),
            "usage_usec 2500000\nuser_usec 2000000\n",
        )
        .unwrap();
        assert_eq!(
            group.usage(),
            Usage {
                cpu_seconds: Some(2.5),
                memory_peak_mib: None
            }
        );
        assert_eq!(
            std::fs::read_to_string(job.join("memory.max")).unwrap(),
            "536870912"
        );
        assert_eq!(
            std::fs::read_to_string(job.join("cpu.max")).unwrap(),
            "200000 100000"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_v1_cpuset_group_takes_its_parents_mems_and_the_jobs_cpus() {
        let dir = std::env::temp_dir().join(format!("berth-cpuset-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("cpuset")).unwrap();
        std::fs::write(dir.join("cpuset/cpuset.cpus"), "0-7\n").unwrap();
        std::fs::write(dir.join("cpuset/cpuset.mems"), "0-1\n").unwrap();
        let hierarchy = detect(&dir).unwrap();
        let limits = Limits {
            cpu_ids: vec![1, 2, 3, 6],
            ..Limits::default()
        };
        assert!(hierarchy.needed(&limits, &[]));
        let group = hierarchy.create("job_4.0", &limits, &[]).unwrap();
        let job = dir.join("cpuset/berth/job_4.0");
        assert_eq!(group.dirs, vec![job.clone()]);
        assert!(group.cpuset);
        let read = |p: PathBuf| std::fs::read_to_string(p).unwrap();
        assert_eq!(read(dir.join("cpuset/berth/cpuset.cpus")), "0-7");
        assert_eq!(read(dir.join("cpuset/berth/cpuset.mems")), "0-1");
        assert_eq!(read(job.join("cpuset.cpus")), "1-3,6");
        assert_eq!(read(job.join("cpuset.mems")), "0-1");
        // Without CPU ids no cpuset group is made.
        let plain = hierarchy
            .create("job_5.0", &Limits::default(), &[])
            .unwrap();
        assert!(plain.dirs.is_empty() && !plain.cpuset);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// On a host with the v1 cpuset hierarchy (this one's CI), a process that joins a
    /// job's group runs only on its CPUs.
    #[test]
    fn a_real_cpuset_confines_a_process() {
        let Some(
            hierarchy @ Hierarchy::V1 {
                cpuset: Some(_), ..
            },
        ) = detect(Path::new("/sys/fs/cgroup"))
        else {
            eprintln!("no v1 cpuset hierarchy here; skipped");
            return;
        };
        if !nix::unistd::geteuid().is_root() {
            eprintln!("not root; skipped");
            return;
        }
        let name = format!("berth-unit-cpuset-{}", std::process::id());
        let limits = Limits {
            cpu_ids: vec![0],
            ..Limits::default()
        };
        let group = hierarchy.create(&name, &limits, &[]).unwrap();
        let procs = group.dirs[0].join("cgroup.procs");
        let mut child = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(format!(
                "echo $$ > {}; grep Cpus_allowed_list /proc/self/status",
                procs.display()
            ))
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = String::new();
        std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut out).unwrap();
        child.wait().unwrap();
        group.remove();
        assert_eq!(out.trim(), "Cpus_allowed_list:\t0", "{out}");
    }

    #[test]
    fn v1_usage_comes_from_cpuacct_and_the_memory_groups_peak() {
        let dir = std::env::temp_dir().join(format!("berth-cpuacct-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("memory")).unwrap();
        std::fs::create_dir_all(dir.join("cpuacct")).unwrap();
        std::fs::write(dir.join("memory/memory.limit_in_bytes"), "").unwrap();
        std::fs::write(dir.join("cpuacct/cpuacct.usage"), "0\n").unwrap();
        let hierarchy = detect(&dir).unwrap();
        let limits = Limits {
            memory_mib: Some(64),
            ..Limits::default()
        };
        let group = hierarchy.create("job_6.0", &limits, &[]).unwrap();
        assert_eq!(
            group.dirs,
            vec![
                dir.join("memory/berth/job_6.0"),
                dir.join("cpuacct/berth/job_6.0")
            ]
        );
        assert_eq!(group.usage(), Usage::default());
        std::fs::write(
            dir.join("cpuacct/berth/job_6.0/cpuacct.usage"),
            "1500000000\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("memory/berth/job_6.0/memory.max_usage_in_bytes"),
            format!("{}\n", 3 * 1024 * 1024 + 1),
        )
        .unwrap();
        assert_eq!(
            group.usage(),
            Usage {
                cpu_seconds: Some(1.5),
                memory_peak_mib: Some(4)
            }
        );
        assert_eq!(cpu_seconds("cpu.stat", "user_usec 1\n"), None);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// On a host with cgroups (this one's CI: v1), a process in a job's group shows up in
    /// its usage: the CPU it burnt and the memory it touched.
    #[test]
    fn a_real_group_reports_cpu_time_and_peak_memory() {
        let Some(hierarchy) = detect(Path::new("/sys/fs/cgroup")) else {
            eprintln!("no cgroups here; skipped");
            return;
        };
        if !nix::unistd::geteuid().is_root() {
            eprintln!("not root; skipped");
            return;
        }
        let name = format!("berth-unit-usage-{}", std::process::id());
        let limits = Limits {
            memory_mib: Some(512),
            ..Limits::default()
        };
        let group = hierarchy.create(&name, &limits, &[]).unwrap();
        let joins: Vec<String> = group
            .dirs
            .iter()
            .map(|d| format!("echo $$ > {};", d.join("cgroup.procs").display()))
            .collect();
        // About a second of CPU, and 64 MiB held at once.
        let status = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(format!(
                "{} python3 -c 'b = bytearray(64 << 20); [x * x for x in range(6_000_000)]'",
                joins.join(" ")
            ))
            .status()
            .unwrap();
        let usage = group.usage();
        group.remove();
        eprintln!("usage read: {usage:?}");
        assert!(status.success());
        if let Some(cpu) = usage.cpu_seconds {
            assert!(cpu > 0.2 && cpu < 60.0, "{usage:?}");
        }
        if let Some(peak) = usage.memory_peak_mib {
            assert!((64..512).contains(&peak), "{usage:?}");
        }
        assert!(
            usage.cpu_seconds.is_some() || usage.memory_peak_mib.is_some(),
            "{usage:?} from {group:?}"
        );
    }
}
