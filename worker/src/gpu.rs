//! GPU backends: what GPUs a node has ([`GpuBackend::inventory`], sent when the worker
//! registers) and how busy they are ([`GpuBackend::sample`], sent with every sync).
//!
//! [`NvmlBackend`] reads real NVIDIA devices through NVML. [`SimulatedBackend`] stands in
//! for nodes without GPUs (development, tests, `berth dev` on a laptop): a fixed set of
//! devices of a known model with stable UUIDs and plausible metrics that follow which
//! devices jobs hold. [`detect_backend`] picks one.

use crate::WorkerError;
use berth_core::wire::{GpuInfo, GpuKind, GpuSample};
use nvml_wrapper::enum_wrappers::device::TemperatureSensor;
use nvml_wrapper::Nvml;
use rand::Rng;

/// A source of GPU inventory and metrics for one node.
pub trait GpuBackend: Send + Sync {
    /// `"nvml"` or `"simulated"`, for logs.
    fn kind(&self) -> &'static str;
    /// The node's GPUs, by index.
    fn inventory(&self) -> Vec<GpuInfo>;
    /// A sample of every GPU that answers; `busy` lists the indices that running jobs
    /// hold (the simulated backend makes those look busy; NVML measures). A GPU of the
    /// inventory missing from the samples is lost.
    fn sample(&self, busy: &[u32]) -> Vec<GpuSample>;
    /// XID errors seen so far, as (GPU index, XID code): NVML's critical XID events, or
    /// the simulated backend's injected ones.
    fn xid_errors(&self) -> Vec<(u32, u32)> {
        Vec::new()
    }
    /// Each GPU's character device minor number, as (GPU index, minor): `/dev/nvidia{minor}`
    /// (major 195), what a job's device group denies. By default the minor is the index
    /// (the simulated backend); NVML reports each device's own.
    fn device_minors(&self) -> Vec<(u32, u32)> {
        self.inventory()
            .iter()
            .map(|gpu| (gpu.index, gpu.index))
            .collect()
    }
}

/// Picks the backend for this machine: simulated GPUs when `simulate` is given (`"8"`,
/// `"8xH100"`, `"4xA100"`), else NVML if the library loads, else 8 simulated H100s.
/// Simulated UUIDs are derived from this machine's host name; the worker itself uses
/// [`detect_backend_for_node`] with its node name, so several simulated workers on one
/// machine get distinct UUIDs.
///
/// # Errors
/// [`WorkerError::InvalidGpuSpec`] when `simulate` cannot be parsed.
pub fn detect_backend(simulate: Option<&str>) -> Result<Box<dyn GpuBackend>, WorkerError> {
    detect_backend_for_node(simulate, &crate::host_name())
}

/// Like [`detect_backend`], deriving simulated GPU UUIDs from `node_name`.
///
/// # Errors
/// [`WorkerError::InvalidGpuSpec`] when `simulate` cannot be parsed.
pub fn detect_backend_for_node(
    simulate: Option<&str>,
    node_name: &str,
) -> Result<Box<dyn GpuBackend>, WorkerError> {
    if let Some(spec) = simulate {
        return Ok(Box::new(SimulatedBackend::parse(spec, node_name)?));
    }
    match NvmlBackend::new() {
        Ok(backend) => Ok(Box::new(backend)),
        Err(err) => {
            tracing::info!(
                error = %err.chain(),
                "NVML is not available; simulating 8 H100 GPUs"
            );
            Ok(Box::new(SimulatedBackend::new(8, "H100", node_name)))
        }
    }
}

/// Real NVIDIA GPUs, read through NVML (`libnvidia-ml.so`). A background thread waits
/// for critical XID events on every device and keeps them for [`GpuBackend::xid_errors`].
#[derive(Debug)]
pub struct NvmlBackend {
    /// NVML lives as long as the process (the event thread borrows it).
    nvml: &'static Nvml,
    xids: std::sync::Arc<std::sync::Mutex<Vec<(u32, u32)>>>,
}

/// Waits for critical XID events on every device of `nvml` and records them as (index,
/// code); stops when NVML cannot deliver events.
fn watch_xids(nvml: &'static Nvml, xids: std::sync::Arc<std::sync::Mutex<Vec<(u32, u32)>>>) {
    use nvml_wrapper::bitmasks::event::EventTypes;
    use nvml_wrapper::enums::event::XidError;
    use nvml_wrapper::error::NvmlError;
    // One event set per device: a device that refuses events does not stop the others.
    let mut sets = Vec::new();
    for index in 0..nvml.device_count().unwrap_or(0) {
        let (Ok(device), Ok(set)) = (nvml.device_by_index(index), nvml.create_event_set()) else {
            continue;
        };
        match device.register_events(EventTypes::CRITICAL_XID_ERROR, set) {
            Ok(set) => sets.push(set),
            Err(err) => {
                tracing::info!(gpu.index = index, error = %err.error, "XID events not available for this GPU")
            }
        }
    }
    if sets.is_empty() {
        return;
    }
    loop {
        for set in &sets {
            match set.wait(200) {
                Ok(event) => {
                    let index = event.device.index().unwrap_or(u32::MAX);
                    let code = match event.event_data {
                        Some(XidError::Value(code)) => code as u32,
                        _ => 0,
                    };
                    tracing::warn!(gpu.index = index, xid = code, "NVML reported an XID error");
                    if let Ok(mut xids) = xids.lock() {
                        xids.push((index, code));
                    }
                }
                Err(NvmlError::Timeout) => {}
                Err(err) => {
                    tracing::warn!(error = %err, "NVML stopped delivering events; XID errors are no longer watched");
                    return;
                }
            }
        }
    }
}

impl NvmlBackend {
    /// Loads and initialises NVML.
    ///
    /// # Errors
    /// [`WorkerError::Nvml`] when the library is missing, the driver is not loaded or
    /// NVML may not talk to it; callers fall back to simulated GPUs.
    pub fn new() -> Result<Self, WorkerError> {
        let nvml = Nvml::init().map_err(|source| WorkerError::Nvml {
            action: "initialise",
            source,
        })?;
        let nvml: &'static Nvml = Box::leak(Box::new(nvml));
        let xids = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let watched = xids.clone();
        let _ = std::thread::Builder::new()
            .name("nvml-xid".into())
            .spawn(move || watch_xids(nvml, watched));
        Ok(NvmlBackend { nvml, xids })
    }

    /// Each GPU's MIG mode: `Some(true)` when MIG is enabled now, `Some(false)` when
    /// disabled, `None` when the device does not support MIG. (Listing the MIG devices
    /// themselves needs NVML calls the wrapper does not offer yet; `nvidia-smi -L` shows
    /// them.)
    pub fn mig_modes(&self) -> Vec<(u32, Option<bool>)> {
        (0..self.device_count())
            .map(|index| {
                let mode = self
                    .nvml
                    .device_by_index(index)
                    .and_then(|device| device.mig_mode())
                    .ok()
                    .map(|mode| mode.current == 1);
                (index, mode)
            })
            .collect()
    }

    /// The NVIDIA driver's version, when NVML reports it.
    pub fn driver_version(&self) -> Option<String> {
        self.nvml.sys_driver_version().ok()
    }

    fn device_count(&self) -> u32 {
        self.nvml.device_count().unwrap_or_else(|err| {
            tracing::warn!(error = %err, "NVML could not count devices");
            0
        })
    }
}

impl GpuBackend for NvmlBackend {
    fn kind(&self) -> &'static str {
        "nvml"
    }

    fn xid_errors(&self) -> Vec<(u32, u32)> {
        self.xids
            .lock()
            .map(|xids| xids.clone())
            .unwrap_or_default()
    }

    fn device_minors(&self) -> Vec<(u32, u32)> {
        (0..self.device_count())
            .map(|index| {
                let minor = self
                    .nvml
                    .device_by_index(index)
                    .and_then(|device| device.minor_number());
                match minor {
                    Ok(minor) => (index, minor),
                    Err(err) => {
                        tracing::warn!(gpu.index = index, error = %err, "NVML has no minor number; assuming the index");
                        (index, index)
                    }
                }
            })
            .collect()
    }

    fn inventory(&self) -> Vec<GpuInfo> {
        let mut gpus = Vec::new();
        for index in 0..self.device_count() {
            let device = match self.nvml.device_by_index(index) {
                Ok(device) => device,
                Err(err) => {
                    tracing::warn!(gpu.index = index, error = %err, "NVML could not open device");
                    continue;
                }
            };
            gpus.push(GpuInfo {
                index,
                uuid: device
                    .uuid()
                    .unwrap_or_else(|_| format!("GPU-unknown-{index}")),
                model: device.name().unwrap_or_else(|_| "unknown".to_string()),
                memory_mib: device
                    .memory_info()
                    .map(|memory| memory.total / (1024 * 1024))
                    .unwrap_or(0),
                domain: device
                    .pci_info()
                    .ok()
                    .and_then(|pci| numa_node(&pci.bus_id)),
                kind: GpuKind::Gpu,
                parent: None,
            });
        }
        gpus
    }

    fn sample(&self, _busy: &[u32]) -> Vec<GpuSample> {
        let mut samples = Vec::new();
        for index in 0..self.device_count() {
            let Ok(device) = self.nvml.device_by_index(index) else {
                continue;
            };
            samples.push(GpuSample {
                index,
                utilization_pct: device.utilization_rates().map(|u| u.gpu).unwrap_or(0),
                memory_used_mib: device
                    .memory_info()
                    .map(|memory| memory.used / (1024 * 1024))
                    .unwrap_or(0),
                power_w: device
                    .power_usage()
                    .map(|milliwatts| f64::from(milliwatts) / 1000.0)
                    .unwrap_or(0.0),
                temperature_c: device.temperature(TemperatureSensor::Gpu).unwrap_or(0),
            });
        }
        samples
    }
}

/// The NUMA node of the PCI device `bus_id` (NVML's `00000000:17:00.0`), from sysfs
/// (`/sys/bus/pci/devices/0000:17:00.0/numa_node`); `None` when the machine has one node
/// (the file says -1) or it cannot be read.
fn numa_node(bus_id: &str) -> Option<u32> {
    let bus_id = bus_id.trim_end_matches('\0').to_ascii_lowercase();
    // sysfs names the PCI domain with 4 hex digits, NVML with 8.
    let short = match bus_id.split_once(':') {
        Some((domain, rest)) if domain.len() > 4 => {
            format!("{}:{rest}", &domain[domain.len() - 4..])
        }
        _ => bus_id,
    };
    std::fs::read_to_string(format!("/sys/bus/pci/devices/{short}/numa_node"))
        .ok()?
        .trim()
        .parse::<i64>()
        .ok()
        .and_then(|n| u32::try_from(n).ok())
}

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
/// and the others as idle.
///
/// Faults can be injected for tests through a file ([`SimulatedBackend::with_fault_file`]),
/// one per line: `xid INDEX CODE` (an XID error), `lost INDEX` (the GPU stops answering:
/// no samples), `stuck INDEX` (0 % utilisation even when busy).
#[derive(Debug, Clone)]
pub struct SimulatedBackend {
    gpus: Vec<GpuInfo>,
    power_w: f64,
    fault_file: Option<std::path::PathBuf>,
}

/// Faults read from a simulated backend's fault file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct InjectedFaults {
    xid: Vec<(u32, u32)>,
    lost: Vec<u32>,
    stuck: Vec<u32>,
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
                uuid: simulated_uuid(node_name, index),
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

    /// Parses `"N"` (N H100s) or `"NxMODEL"` (`"8xH100"`, `"4xA100"`, `"2xL4"`), with an
    /// optional `/D`: the GPUs in D topology domains of consecutive indices (`8xH100/2`:
    /// GPUs 0–3 in domain 0, 4–7 in domain 1, as the two NUMA nodes of an HGX board).
    ///
    /// # Errors
    /// [`WorkerError::InvalidGpuSpec`] when the count is missing or not a number up to
    /// 1024, the model is empty, or D is not a divisor of the count.
    pub fn parse(spec: &str, node_name: &str) -> Result<Self, WorkerError> {
        let invalid = |reason: &str| WorkerError::InvalidGpuSpec {
            spec: spec.to_string(),
            reason: reason.to_string(),
        };
        let (text, domains) = match spec.trim().split_once('/') {
            Some((gpus, domains)) => {
                let domains: u32 = domains
                    .trim()
                    .parse()
                    .map_err(|_| invalid("expected a domain count after `/`, as in `8xH100/2`"))?;
                (gpus.trim(), Some(domains))
            }
            None => (spec.trim(), None),
        };
        let digits = text.len() - text.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 {
            return Err(invalid("expected a GPU count, as in `8` or `8xH100`"));
        }
        let count: u32 = text[..digits]
            .parse()
            .ok()
            .filter(|count| *count <= 1024)
            .ok_or_else(|| invalid("the GPU count must be at most 1024"))?;
        let rest = &text[digits..];
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
        let mut backend = SimulatedBackend::new(count, model, node_name);
        if let Some(domains) = domains {
            if domains == 0 || !count.is_multiple_of(domains) {
                return Err(invalid(
                    "the domain count after `/` must divide the GPU count (`8xH100/2`)",
                ));
            }
            let per = count / domains;
            for g in &mut backend.gpus {
                g.domain = Some(g.index / per);
            }
        }
        Ok(backend)
    }
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

fn round_watts(watts: f64) -> f64 {
    (watts * 10.0).round() / 10.0
}

/// A UUID-shaped, stable identifier for simulated GPU `index` of `node_name`:
/// `GPU-sim-xxxxxxxx-xxxx-xxxx-xxxxxxxxxxxx` from two FNV-1a hashes.
fn simulated_uuid(node_name: &str, index: u32) -> String {
    let a = fnv1a(format!("{node_name}/{index}").as_bytes());
    let b = fnv1a(format!("{index}/{node_name}/berth").as_bytes());
    format!(
        "GPU-sim-{:08x}-{:04x}-{:04x}-{:012x}",
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topology_domains_split_consecutive_indices() {
        let gpus = SimulatedBackend::parse("8xH100/2", "n")
            .unwrap()
            .inventory();
        let domains: Vec<Option<u32>> = gpus.iter().map(|g| g.domain).collect();
        assert_eq!(domains, [0, 0, 0, 0, 1, 1, 1, 1].map(Some).to_vec());
        assert!(SimulatedBackend::parse("8xH100", "n")
            .unwrap()
            .inventory()
            .iter()
            .all(|g| g.domain.is_none()));
        for bad in ["8xH100/3", "8xH100/0", "8xH100/x"] {
            let err = SimulatedBackend::parse(bad, "n").unwrap_err().to_string();
            assert!(err.contains(bad), "{err}");
        }
    }

    #[test]
    fn nvml_bus_ids_map_to_sysfs_names() {
        // No such device here: the lookup is None rather than an error.
        assert_eq!(numa_node("00000000:FF:1F.7"), None);
    }

    #[test]
    fn parses_count_and_model() {
        let backend = SimulatedBackend::parse("4xA100", "node-1").unwrap();
        let gpus = backend.inventory();
        assert_eq!(gpus.len(), 4);
        assert_eq!(gpus[3].index, 3);
        assert!(gpus.iter().all(|gpu| gpu.model == "NVIDIA A100-SXM4-80GB"));
        assert!(gpus.iter().all(|gpu| gpu.memory_mib == 81920));
        assert!(gpus.iter().all(|gpu| gpu.uuid.starts_with("GPU-sim-")));

        let plain = SimulatedBackend::parse("8", "node-1").unwrap().inventory();
        assert_eq!(plain.len(), 8);
        assert_eq!(plain[0].model, "NVIDIA H100 80GB HBM3");
        assert_eq!(plain[0].memory_mib, 81559);

        let l4 = SimulatedBackend::parse("2xl4", "n").unwrap().inventory();
        assert_eq!(l4[0].model, "NVIDIA L4");

        let odd = SimulatedBackend::parse("2xMI300X", "n")
            .unwrap()
            .inventory();
        assert_eq!(odd[1].model, "MI300X");
        assert_eq!(odd[1].memory_mib, 24576);
    }

    #[test]
    fn rejects_bad_specs() {
        for spec in ["", "x", "H100", "8x", "8y", "99999xH100", "-1"] {
            let err = SimulatedBackend::parse(spec, "n").err();
            assert!(
                matches!(err, Some(WorkerError::InvalidGpuSpec { .. })),
                "{spec:?} should be refused"
            );
        }
    }

    #[test]
    fn uuids_are_stable_and_distinct() {
        let a = SimulatedBackend::parse("8", "node-1").unwrap().inventory();
        let again = SimulatedBackend::parse("8", "node-1").unwrap().inventory();
        let b = SimulatedBackend::parse("8", "node-2").unwrap().inventory();
        assert_eq!(a, again);
        let mut uuids: Vec<&str> = a.iter().chain(&b).map(|gpu| gpu.uuid.as_str()).collect();
        uuids.sort_unstable();
        uuids.dedup();
        assert_eq!(uuids.len(), 16);
    }

    #[test]
    fn injected_faults_show_in_samples() {
        let dir = std::env::temp_dir().join(format!("berth-gpu-faults-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("faults");
        std::fs::write(&file, "xid 3 79\nlost 2\nstuck 1\nnonsense\n").unwrap();
        let backend = SimulatedBackend::new(4, "H100", "n").with_fault_file(&file);
        assert_eq!(backend.xid_errors(), vec![(3, 79)]);
        let samples = backend.sample(&[1, 3]);
        assert_eq!(
            samples.iter().map(|s| s.index).collect::<Vec<_>>(),
            vec![0, 1, 3]
        );
        assert_eq!(samples[1].utilization_pct, 0, "stuck while busy");
        assert!(samples[2].utilization_pct >= 70);
    }

    #[test]
    fn busy_gpus_look_busy() {
        let backend = SimulatedBackend::parse("4xH100", "node-1").unwrap();
        let samples = backend.sample(&[1, 2]);
        assert_eq!(samples.len(), 4);
        for sample in &samples {
            if sample.index == 1 || sample.index == 2 {
                assert!((70..=100).contains(&sample.utilization_pct));
                assert!(sample.memory_used_mib > 40_000);
                assert!(sample.power_w > 300.0);
            } else {
                assert_eq!(sample.utilization_pct, 0);
                assert!(sample.power_w < 100.0);
            }
        }
    }
}
