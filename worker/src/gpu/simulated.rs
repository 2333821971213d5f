//! The simulated backend: a fixed set of devices of a known model, optionally split into
//! MIG instances or shards, with stable UUIDs, plausible metrics and injected faults.

#[allow(unused_imports)]
use super::*;

/// A known GPU model: short name, full name as NVML reports it, memory (MiB), board
/// power (W).
const MODELS: &[(&str, &str, u64, f64)] = &[
    ("H100", "NVIDIA H100 80GB HBM3", 81559, 700.0),
    ("H200", "NVIDIA H200", 143771, 700.0),
    ("B200", "NVIDIA B200", 183359, 1000.0),
    ("A100", "NVIDIA A100-SXM4-80GB", 81920, 400.0),
    ("A100-40", "NVIDIA A100-SXM4-40GB", 40960, 400.0),
    ("L40S", "NVIDIA L40S", 46068, 350.0),
    ("L40", "NVIDIA L40", 46068, 300.0),
    ("L4", "NVIDIA L4", 23034, 72.0),
    ("A10", "NVIDIA A10", 23028, 150.0),
    ("V100", "Tesla V100-SXM2-32GB", 32768, 300.0),
    ("T4", "Tesla T4", 15360, 70.0),
];

/// Memory of a simulated GPU of an unknown model, MiB.
const UNKNOWN_MODEL_MEMORY_MIB: u64 = 24576;
/// Board power of a simulated GPU of an unknown model, watts.
const UNKNOWN_MODEL_POWER_W: f64 = 300.0;

/// Simulated GPUs: `count` devices of one model with UUIDs derived from the node name and
/// index (`GPU-sim-…`, stable across restarts), whose samples show the devices that jobs
/// hold as busy (70–100 % utilisation, most of the memory, high power and temperature)
/// and the others as idle. [`SimulatedBackend::parse`] can split each GPU into MIG
/// instances (`MIG-sim-…` UUIDs) or shards; samples are then per instance or shard, each
/// with its share of the GPU's power.
///
/// Faults can be injected for tests through a file ([`SimulatedBackend::with_fault_file`]),
/// one per line, by device index: `xid INDEX CODE` (an XID error), `lost INDEX` (the
/// device stops answering: no samples), `stuck INDEX` (0 % utilisation even when busy).
#[derive(Debug, Clone)]
pub struct SimulatedBackend {
    pub(crate) gpus: Vec<GpuInfo>,
    /// Board power of one device, watts (a GPU's, divided among its instances or shards).
    pub(crate) power_w: f64,
    fault_file: Option<std::path::PathBuf>,
}

/// Faults read from a simulated backend's fault file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct InjectedFaults {
    pub(crate) xid: Vec<(u32, u32)>,
    pub(crate) lost: Vec<u32>,
    pub(crate) stuck: Vec<u32>,
}

fn parse_faults(text: &str) -> InjectedFaults {
    let mut faults = InjectedFaults::default();
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let number = |i: usize| words.get(i).and_then(|w| w.parse::<u32>().ok());
        match (words.first().copied(), number(1)) {
            (Some("xid"), Some(index)) => faults.xid.push((index, number(2).unwrap_or(0))),
            (Some("lost"), Some(index)) => faults.lost.push(index),
            (Some("stuck"), Some(index)) => faults.stuck.push(index),
            _ => {}
        }
    }
    faults
}

impl SimulatedBackend {
    /// `count` GPUs of `model`: a short name (`H100`, `A100`, `L4` …, case-insensitive)
    /// or a full name (`NVIDIA H100 80GB HBM3`); other names are accepted as given, with
    /// 24576 MiB.
    pub fn new(count: u32, model: &str, node_name: &str) -> Self {
        let known = MODELS.iter().find(|(short, full, _, _)| {
            short.eq_ignore_ascii_case(model) || full.eq_ignore_ascii_case(model)
        });
        let (model_name, memory_mib, power_w) = match known {
            Some((_, full, memory, power)) => (full.to_string(), *memory, *power),
            None => (
                model.to_string(),
                UNKNOWN_MODEL_MEMORY_MIB,
                UNKNOWN_MODEL_POWER_W,
            ),
        };
        let gpus = (0..count)
            .map(|index| GpuInfo {
                index,
                uuid: simulated_uuid("GPU", node_name, index),
                model: model_name.clone(),
                memory_mib,
                domain: None,
                kind: GpuKind::Gpu,
                parent: None,
            })
            .collect();
        SimulatedBackend {
            gpus,
            power_w,
            fault_file: None,
        }
    }

    /// Reads injected faults from `path` at every sample (see the type's docs); a missing
    /// file means no faults.
    pub fn with_fault_file(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.fault_file = Some(path.into());
        self
    }

    fn faults(&self) -> InjectedFaults {
        self.fault_file
            .as_ref()
            .and_then(|path| std::fs::read_to_string(path).ok())
            .map(|text| parse_faults(&text))
            .unwrap_or_default()
    }

    /// Parses a `--simulate-gpus` spec, `N[xMODEL][:mig=PROFILE*K|:shards=S][/D]`:
    ///
    /// * `N` (N H100s) or `NxMODEL` (`8xH100`, `4xA100`, `2xL4`): N physical GPUs (at most
    ///   1024);
    /// * `:mig=PROFILE*K`: each GPU split into K MIG instances of PROFILE (K from 1 to 7;
    ///   PROFILE as `nvidia-smi` names it, `3g.40gb`, `1g.10gb+me`): `2xA100:mig=3g.40gb*2`
    ///   is 4 devices, indices 0–3, kind [`GpuKind::Mig`], GPU `index / K` as parent, model
    ///   `NVIDIA A100-SXM4-80GB MIG 3g.40gb`, memory from the profile (40 × 1024 MiB) and
    ///   `MIG-sim-…` UUIDs;
    /// * `:shards=S`: each GPU offered as S shards (Slurm's `shard` GRES, S from 1 to 128):
    ///   `2xH100:shards=4` is 8 devices, kind [`GpuKind::Shard`], GPU `index / S` as
    ///   parent, with that GPU's model, memory and UUID;
    /// * `/D`, last: the physical GPUs in D topology domains of consecutive indices
    ///   (`8xH100/2`: GPUs 0–3 in domain 0, 4–7 in domain 1, as the two NUMA nodes of an
    ///   HGX board); MIG instances and shards are in their GPU's domain
    ///   (`8xH100:shards=2/2`).
    ///
    /// `mig` and `shards` exclude each other. Devices are numbered GPU by GPU: the
    /// instances or shards of GPU 0 first.
    ///
    /// # Errors
    /// [`WorkerError::InvalidGpuSpec`], naming the spec, when the count is missing or not a
    /// number up to 1024, the model is empty, an option is unknown, repeated or malformed
    /// (a profile without its memory, `3g.40gb`; K or S out of range), both `mig` and
    /// `shards` are given, or D is not a divisor of the GPU count.
    pub fn parse(spec: &str, node_name: &str) -> Result<Self, WorkerError> {
        let invalid = |reason: &str| WorkerError::InvalidGpuSpec {
            spec: spec.to_string(),
            reason: reason.to_string(),
        };
        let (text, domains) = match spec.trim().split_once('/') {
            Some((gpus, domains)) => {
                let domains: u32 = domains.trim().parse().map_err(|_| {
                    invalid(
                        "expected a domain count after `/`, which comes last, as in `8xH100/2` \
                         or `8xH100:shards=2/2`",
                    )
                })?;
                (gpus.trim(), Some(domains))
            }
            None => (spec.trim(), None),
        };
        let mut parts = text.split(':');
        let gpus = parts.next().unwrap_or_default().trim();
        let digits = gpus.len() - gpus.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 {
            return Err(invalid("expected a GPU count, as in `8` or `8xH100`"));
        }
        let count: u32 = gpus[..digits]
            .parse()
            .ok()
            .filter(|count| *count <= 1024)
            .ok_or_else(|| invalid("the GPU count must be at most 1024"))?;
        let rest = &gpus[digits..];
        let model = if rest.is_empty() {
            "H100"
        } else if let Some(model) = rest.strip_prefix(['x', 'X']) {
            let model = model.trim();
            if model.is_empty() {
                return Err(invalid("expected a model after `x`, as in `8xH100`"));
            }
            model
        } else {
            return Err(invalid("expected `N` or `NxMODEL`, as in `8xH100`"));
        };
        let mut split: Option<DeviceSplit> = None;
        for option in parts {
            let parsed = match option.trim().split_once('=') {
                Some(("mig", value)) => {
                    let (profile, per_gpu) = value.trim().rsplit_once('*').ok_or_else(|| {
                        invalid("expected `mig=PROFILE*K`, as in `2xA100:mig=3g.40gb*2`")
                    })?;
                    let profile = profile.trim();
                    let memory_mib = mig_profile_memory_mib(profile).ok_or_else(|| {
                        invalid("expected a MIG profile such as `3g.40gb` or `1g.10gb` before `*`")
                    })?;
                    let per_gpu = per_gpu
                        .trim()
                        .parse()
                        .ok()
                        .filter(|k| (1..=MAX_MIG_PER_GPU).contains(k))
                        .ok_or_else(|| {
                            invalid("the MIG instances per GPU (after `*`) must be 1 to 7")
                        })?;
                    DeviceSplit::Mig {
                        profile: profile.to_string(),
                        memory_mib,
                        per_gpu,
                    }
                }
                Some(("shards", value)) => DeviceSplit::Shards(
                    value
                        .trim()
                        .parse()
                        .ok()
                        .filter(|s| (1..=MAX_SHARDS_PER_GPU).contains(s))
                        .ok_or_else(|| {
                            invalid("the shards per GPU (`shards=S`) must be 1 to 128")
                        })?,
                ),
                _ => {
                    return Err(invalid(
                        "expected `:mig=PROFILE*K` or `:shards=S` after the GPUs, as in \
                         `2xA100:mig=3g.40gb*2` or `8xH100:shards=2`",
                    ))
                }
            };
            if split.is_some() {
                return Err(invalid(
                    "give one of `:mig=PROFILE*K` and `:shards=S`, once (a GPU is split one way)",
                ));
            }
            split = Some(parsed);
        }
        if let Some(domains) = domains {
            if domains == 0 || !count.is_multiple_of(domains) {
                return Err(invalid(
                    "the domain count after `/` must divide the GPU count (`8xH100/2`)",
                ));
            }
        }
        let mut backend = SimulatedBackend::new(count, model, node_name);
        if let Some(domains) = domains {
            let per = count / domains;
            for g in &mut backend.gpus {
                g.domain = Some(g.index / per);
            }
        }
        match split {
            None => {}
            Some(DeviceSplit::Mig {
                profile,
                memory_mib,
                per_gpu,
            }) => {
                backend.gpus = backend
                    .gpus
                    .iter()
                    .flat_map(|gpu| (0..per_gpu).map(move |k| (gpu, k)))
                    .map(|(gpu, k)| {
                        let index = gpu.index * per_gpu + k;
                        GpuInfo {
                            index,
                            uuid: simulated_uuid("MIG", &format!("{node_name}/mig"), index),
                            model: format!("{} MIG {profile}", gpu.model),
                            memory_mib,
                            domain: gpu.domain,
                            kind: GpuKind::Mig,
                            parent: Some(gpu.index),
                        }
                    })
                    .collect();
                backend.power_w /= f64::from(per_gpu);
            }
            Some(DeviceSplit::Shards(per_gpu)) => {
                backend.gpus = backend
                    .gpus
                    .iter()
                    .flat_map(|gpu| {
                        (0..per_gpu).map(move |s| GpuInfo {
                            index: gpu.index * per_gpu + s,
                            kind: GpuKind::Shard,
                            parent: Some(gpu.index),
                            ..gpu.clone()
                        })
                    })
                    .collect();
                backend.power_w /= f64::from(per_gpu);
            }
        }
        if backend.gpus.len() > MAX_DEVICES {
            return Err(invalid(&format!(
                "{} devices: a node offers at most {MAX_DEVICES} (GPUs, MIG instances and shards)",
                backend.gpus.len()
            )));
        }
        Ok(backend)
    }
}

/// The most devices (GPUs, MIG instances, shards) a node offers: what the scheduler
/// places on (and the api accepts at registration).
pub const MAX_DEVICES: usize = 128;

/// How a simulated spec splits each GPU.
enum DeviceSplit {
    /// `:mig=PROFILE*K`.
    Mig {
        profile: String,
        memory_mib: u64,
        per_gpu: u32,
    },
    /// `:shards=S`.
    Shards(u32),
}

/// The most MIG instances one GPU holds (A100, H100: seven 1g slices).
const MAX_MIG_PER_GPU: u32 = 7;
/// The most shards a simulated GPU is offered as.
const MAX_SHARDS_PER_GPU: u32 = 128;

/// The memory of a MIG instance of `profile`, MiB, from the profile's name as
/// `nvidia-smi` gives it: `3g.40gb` → 40 × 1024, `1g.10gb+me` → 10 × 1024,
/// `1c.3g.40gb` (a compute instance) → 40 × 1024. `None` when the name does not end in
/// `.<N>gb` (before an optional `+…`) with N > 0, or another part is not `<N>g`/`<N>c`.
pub fn mig_profile_memory_mib(profile: &str) -> Option<u64> {
    let base = profile.split('+').next()?;
    let (slices, memory) = base.rsplit_once('.')?;
    let slices_ok = slices.split('.').all(|part| {
        part.strip_suffix(['g', 'c'])
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    });
    let gib: u64 = memory
        .strip_suffix("gb")
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))?
        .parse()
        .ok()?;
    (slices_ok && gib > 0).then(|| gib * 1024)
}

impl GpuBackend for SimulatedBackend {
    fn kind(&self) -> &'static str {
        "simulated"
    }

    fn inventory(&self) -> Vec<GpuInfo> {
        self.gpus.clone()
    }

    fn xid_errors(&self) -> Vec<(u32, u32)> {
        self.faults().xid
    }

    fn sample(&self, busy: &[u32]) -> Vec<GpuSample> {
        let mut rng = rand::rng();
        let faults = self.faults();
        self.gpus
            .iter()
            .filter(|gpu| !faults.lost.contains(&gpu.index))
            .map(|gpu| {
                if busy.contains(&gpu.index) && faults.stuck.contains(&gpu.index) {
                    GpuSample {
                        index: gpu.index,
                        utilization_pct: 0,
                        memory_used_mib: gpu.memory_mib / 2,
                        power_w: round_watts(self.power_w * 0.2),
                        temperature_c: 40,
                    }
                } else if busy.contains(&gpu.index) {
                    let memory_share = rng.random_range(0.6..0.95);
                    GpuSample {
                        index: gpu.index,
                        utilization_pct: rng.random_range(70..=100),
                        memory_used_mib: (gpu.memory_mib as f64 * memory_share) as u64,
                        power_w: round_watts(self.power_w * rng.random_range(0.55..0.95)),
                        temperature_c: rng.random_range(55..=80),
                    }
                } else {
                    GpuSample {
                        index: gpu.index,
                        utilization_pct: 0,
                        memory_used_mib: rng.random_range(0..=4),
                        power_w: round_watts(self.power_w * rng.random_range(0.08..0.12)),
                        temperature_c: rng.random_range(28..=38),
                    }
                }
            })
            .collect()
    }
}

pub(crate) fn round_watts(watts: f64) -> f64 {
    (watts * 10.0).round() / 10.0
}

/// A UUID-shaped, stable identifier for simulated device `index` of `node_name`:
/// `{prefix}-sim-xxxxxxxx-xxxx-xxxx-xxxxxxxxxxxx` (`GPU-sim-…`, `MIG-sim-…`) from two
/// FNV-1a hashes.
fn simulated_uuid(prefix: &str, node_name: &str, index: u32) -> String {
    let a = fnv1a(format!("{node_name}/{index}").as_bytes());
    let b = fnv1a(format!("{index}/{node_name}/berth").as_bytes());
    format!(
        "{prefix}-sim-{:08x}-{:04x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xffff,
        b & 0xffff_ffff_ffff
    )
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}
