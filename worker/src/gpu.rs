//! GPU backends: what devices a node offers ([`GpuBackend::inventory`], sent when the
//! worker registers) and how busy they are ([`GpuBackend::sample`], sent with every sync).
//!
//! A device is a whole GPU, a MIG instance of a GPU in MIG mode, or a shard (a share of a
//! GPU that several jobs use at once, Slurm's `shard` GRES); each has its own index on the
//! node, and MIG instances and shards name their physical GPU as `parent`.
//!
//! [`NvmlBackend`] reads real NVIDIA devices through NVML, and offers the MIG instances of
//! a GPU in MIG mode (listed by `nvidia-smi -L`, [`parse_nvidia_smi_list`]) instead of the
//! GPU. [`SimulatedBackend`] stands in for nodes without GPUs (development, tests, `berth
//! dev` on a laptop): a fixed set of devices of a known model, optionally split into MIG
//! instances or shards, with stable UUIDs and plausible metrics that follow which
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
    /// The node's devices (whole GPUs, MIG instances, shards), by index.
    fn inventory(&self) -> Vec<GpuInfo>;
    /// A sample of every device that answers; `busy` lists the device indices that
    /// running jobs hold (the simulated backend makes those look busy; NVML measures). A
    /// device of the inventory missing from the samples is lost.
    fn sample(&self, busy: &[u32]) -> Vec<GpuSample>;
    /// XID errors seen so far, as (device index, XID code): NVML's critical XID events
    /// (on a GPU in MIG mode, one per MIG instance offered), or the simulated backend's
    /// injected ones.
    fn xid_errors(&self) -> Vec<(u32, u32)> {
        Vec::new()
    }
    /// Each device's character device minor number, as (device index, minor):
    /// `/dev/nvidia{minor}` (major 195), what a job's device group denies. A MIG instance
    /// or shard has its parent GPU's. By default the minor is the (parent) GPU's index
    /// (the simulated backend); NVML reports each GPU's own.
    fn device_minors(&self) -> Vec<(u32, u32)> {
        self.inventory()
            .iter()
            .map(|gpu| (gpu.index, gpu.parent.unwrap_or(gpu.index)))
            .collect()
    }
    /// Whether the samples of device `index` measure its utilisation (so 0 % under a job
    /// means stuck). True by default; NVML cannot measure a MIG instance's.
    fn utilization_measured(&self, index: u32) -> bool {
        let _ = index;
        true
    }
}

/// Picks the backend for this machine: simulated GPUs when `simulate` is given (`"8"`,
/// `"8xH100"`, `"2xA100:mig=3g.40gb*2"`, see [`SimulatedBackend::parse`]), else NVML if
/// the library loads, else no GPU at all ([`NoGpus`]: a node with a broken driver must
/// not offer GPUs it does not have; `berth dev` asks for simulated ones itself).
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
            tracing::warn!(
                error = %err.chain(),
                "NVML is not available: this node offers no GPU (pass --simulate-gpus for \
                 simulated ones)"
            );
            Ok(Box::new(NoGpus))
        }
    }
}

/// Whether NVIDIA's management library loads on this machine (a GPU node with a working
/// driver).
pub fn nvml_available() -> bool {
    NvmlBackend::new().is_ok()
}

/// A node without GPUs: what a worker offers where NVML does not load and no simulated
/// GPUs were asked for. Its CPUs and memory are the machine's.
pub struct NoGpus;

impl GpuBackend for NoGpus {
    fn kind(&self) -> &'static str {
        "none"
    }

    fn inventory(&self) -> Vec<GpuInfo> {
        Vec::new()
    }

    fn sample(&self, _busy: &[u32]) -> Vec<GpuSample> {
        Vec::new()
    }
}

/// Any backend's whole GPUs offered as `shards` shards each (Slurm's `shard` GRES, as a
/// node's gres.conf `Name=shard Count=…` does): whole GPU `g` becomes devices
/// `g × shards … g × shards + shards − 1` of kind shard with parent `g` (its model, UUID,
/// memory and domain); the inner backend's MIG instances stay as they are, renumbered
/// after the shards. Samples, XID errors and minor numbers of a GPU are those of each of
/// its shards (power split among them).
pub struct ShardedBackend {
    inner: Box<dyn GpuBackend>,
    shards: u32,
    /// Inner index → the outer indices it becomes.
    map: Vec<(u32, Vec<u32>)>,
}

impl ShardedBackend {
    /// Wraps `inner`, each whole GPU as `shards` shards (1..=128).
    ///
    /// # Errors
    /// [`WorkerError::InvalidGpuSpec`] when `shards` is 0 or over 128.
    pub fn new(inner: Box<dyn GpuBackend>, shards: u32) -> Result<Self, WorkerError> {
        if !(1..=128).contains(&shards) {
            return Err(WorkerError::InvalidGpuSpec {
                spec: format!("--gpu-shards {shards}"),
                reason: "shards per GPU must be 1 to 128".into(),
            });
        }
        let inventory = inner.inventory();
        let wholes = inventory
            .iter()
            .filter(|g| g.kind == GpuKind::Gpu)
            .map(|g| g.index + 1)
            .max()
            .unwrap_or(0);
        let mut next_other = wholes * shards;
        let mut map = Vec::new();
        for g in &inventory {
            let outer: Vec<u32> = if g.kind == GpuKind::Gpu {
                (g.index * shards..(g.index + 1) * shards).collect()
            } else {
                next_other += 1;
                vec![next_other - 1]
            };
            map.push((g.index, outer));
        }
        let devices: usize = map.iter().map(|(_, o)| o.len()).sum();
        if devices > MAX_DEVICES {
            return Err(WorkerError::InvalidGpuSpec {
                spec: format!("--gpu-shards {shards}"),
                reason: format!(
                    "{devices} devices: a node offers at most {MAX_DEVICES} (GPUs, MIG instances and shards)"
                ),
            });
        }
        Ok(ShardedBackend { inner, shards, map })
    }

    fn outer(&self, inner: u32) -> &[u32] {
        self.map
            .iter()
            .find(|(i, _)| *i == inner)
            .map(|(_, o)| o.as_slice())
            .unwrap_or_default()
    }

    fn inner_of(&self, outer: u32) -> Option<u32> {
        self.map
            .iter()
            .find(|(_, o)| o.contains(&outer))
            .map(|(i, _)| *i)
    }
}

impl GpuBackend for ShardedBackend {
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    fn inventory(&self) -> Vec<GpuInfo> {
        let mut out = Vec::new();
        for g in self.inner.inventory() {
            for &index in self.outer(g.index) {
                let mut d = g.clone();
                d.index = index;
                if g.kind == GpuKind::Gpu {
                    d.kind = GpuKind::Shard;
                    d.parent = Some(g.index);
                }
                out.push(d);
            }
        }
        out
    }

    fn sample(&self, busy: &[u32]) -> Vec<GpuSample> {
        let mut inner_busy: Vec<u32> = busy.iter().filter_map(|b| self.inner_of(*b)).collect();
        inner_busy.sort_unstable();
        inner_busy.dedup();
        let mut out = Vec::new();
        for s in self.inner.sample(&inner_busy) {
            let outer = self.outer(s.index);
            for &index in outer {
                let mut d = s.clone();
                d.index = index;
                d.power_w = s.power_w / outer.len().max(1) as f64;
                out.push(d);
            }
        }
        out
    }

    fn xid_errors(&self) -> Vec<(u32, u32)> {
        self.inner
            .xid_errors()
            .into_iter()
            .flat_map(|(i, code)| self.outer(i).iter().map(move |o| (*o, code)))
            .collect()
    }

    fn device_minors(&self) -> Vec<(u32, u32)> {
        self.inner
            .device_minors()
            .into_iter()
            .flat_map(|(i, minor)| self.outer(i).iter().map(move |o| (*o, minor)))
            .collect()
    }

    fn utilization_measured(&self, index: u32) -> bool {
        self.inner_of(index)
            .is_none_or(|i| self.inner.utilization_measured(i))
    }
}

impl std::fmt::Debug for ShardedBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardedBackend")
            .field("inner", &self.inner.kind())
            .field("shards", &self.shards)
            .finish()
    }
}

/// Real NVIDIA GPUs, read through NVML (`libnvidia-ml.so`). A background thread waits
/// for critical XID events on every device and keeps them for [`GpuBackend::xid_errors`].
///
/// A GPU whose MIG mode is enabled is not offered itself: its MIG instances are, as
/// `nvidia-smi -L` lists them when the backend is made (NVML's MIG calls are not in the
/// wrapper), with indices after the physical GPUs' (count, count + 1, … in GPU order).
/// Changing the MIG layout takes a worker restart. Without `nvidia-smi` (or when it fails)
/// such a GPU offers nothing.
#[derive(Debug)]
pub struct NvmlBackend {
    /// NVML lives as long as the process (the event thread borrows it).
    nvml: &'static Nvml,
    xids: std::sync::Arc<std::sync::Mutex<Vec<(u32, u32)>>>,
    /// The physical GPUs in MIG mode (not offered whole).
    mig_gpus: Vec<u32>,
    /// The MIG instances offered, by index.
    mig: Vec<MigInstance>,
}

/// A MIG instance an [`NvmlBackend`] offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigInstance {
    /// Its device index on the node (after the physical GPUs').
    pub index: u32,
    /// The physical GPU's NVML index.
    pub parent: u32,
    /// `MIG-…`, what `CUDA_VISIBLE_DEVICES` names.
    pub uuid: String,
    /// The profile (`3g.40gb`).
    pub profile: String,
    /// The GPU's name as `nvidia-smi` gives it (`NVIDIA A100-SXM4-80GB`).
    pub gpu_name: String,
}

/// A GPU as `nvidia-smi -L` lists it, with its MIG devices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedGpu {
    /// `GPU 0:` (NVML's index).
    pub index: u32,
    /// `NVIDIA A100-SXM4-80GB`.
    pub name: String,
    /// `GPU-…`.
    pub uuid: String,
    /// Its MIG devices, in the listed order.
    pub mig: Vec<ListedMig>,
}

/// A MIG device as `nvidia-smi -L` lists it under its GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedMig {
    /// The profile (`3g.40gb`, `1g.10gb+me`, `1c.3g.40gb`).
    pub profile: String,
    /// `Device N:`, its number on the GPU.
    pub device: u32,
    /// `MIG-…` (`MIG-GPU-…/gi/ci` from drivers before R470).
    pub uuid: String,
}

/// Parses `nvidia-smi -L`: `GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-…)` lines, each
/// followed by its MIG devices, indented: `  MIG 3g.40gb     Device  0: (UUID: MIG-…)`.
/// Other lines (and MIG lines before any GPU) are skipped.
pub fn parse_nvidia_smi_list(text: &str) -> Vec<ListedGpu> {
    fn uuid_of(text: &str) -> Option<(&str, String)> {
        let at = text.rfind("(UUID:")?;
        let uuid = text[at + "(UUID:".len()..]
            .trim()
            .trim_end_matches(')')
            .trim();
        (!uuid.is_empty()).then(|| (text[..at].trim(), uuid.to_string()))
    }
    let mut gpus: Vec<ListedGpu> = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("GPU ") {
            let Some((index, rest)) = rest.split_once(':') else {
                continue;
            };
            let (Ok(index), Some((name, uuid))) = (index.trim().parse(), uuid_of(rest)) else {
                continue;
            };
            gpus.push(ListedGpu {
                index,
                name: name.to_string(),
                uuid,
                mig: Vec::new(),
            });
        } else if let Some(rest) = line.strip_prefix("MIG ") {
            let Some((head, uuid)) = uuid_of(rest) else {
                continue;
            };
            let mut words = head.split_whitespace();
            let (Some(profile), Some("Device"), Some(device)) =
                (words.next(), words.next(), words.next())
            else {
                continue;
            };
            let Ok(device) = device.trim_end_matches(':').parse() else {
                continue;
            };
            if let Some(gpu) = gpus.last_mut() {
                gpu.mig.push(ListedMig {
                    profile: profile.to_string(),
                    device,
                    uuid,
                });
            }
        }
    }
    gpus
}

/// The MIG instances a node offers: for each GPU in MIG mode (`in_mig_mode`, as (NVML
/// index, UUID when NVML gives it), in index order), the MIG devices `listing` (`nvidia-smi
/// -L`, parsed; `Err` with why it could not be read) shows under it (found by UUID, else by
/// index), numbered from `count` (the physical GPU count) on. A GPU that the listing lacks,
/// or every GPU when there is no listing, offers nothing (logged).
pub fn mig_instances(
    count: u32,
    in_mig_mode: &[(u32, Option<String>)],
    listing: Result<&[ListedGpu], &str>,
) -> Vec<MigInstance> {
    let mut instances = Vec::new();
    for (index, uuid) in in_mig_mode {
        let listed = match listing {
            Ok(gpus) => gpus
                .iter()
                .find(|gpu| uuid.as_deref() == Some(gpu.uuid.as_str()))
                .or_else(|| gpus.iter().find(|gpu| gpu.index == *index)),
            Err(why) => {
                tracing::warn!(gpu.index = index, error = why, "GPU in MIG mode but nvidia-smi cannot list its MIG instances; offering nothing of it");
                continue;
            }
        };
        let Some(listed) = listed else {
            tracing::warn!(
                gpu.index = index,
                "GPU in MIG mode but nvidia-smi does not list it; offering nothing of it"
            );
            continue;
        };
        if listed.mig.is_empty() {
            tracing::warn!(
                gpu.index = index,
                "GPU in MIG mode without MIG instances; offering nothing of it"
            );
        }
        for mig in &listed.mig {
            instances.push(MigInstance {
                index: count + instances.len() as u32,
                parent: *index,
                uuid: mig.uuid.clone(),
                profile: mig.profile.clone(),
                gpu_name: listed.name.clone(),
            });
        }
    }
    instances
}

/// Runs `nvidia-smi -L`; `Err` says why it gave no listing.
fn nvidia_smi_list() -> Result<String, String> {
    let output = std::process::Command::new("nvidia-smi")
        .arg("-L")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|err| format!("running nvidia-smi -L: {err}"))?;
    if !output.status.success() {
        return Err(format!(
            "nvidia-smi -L failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
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
        let mut backend = NvmlBackend {
            nvml,
            xids,
            mig_gpus: Vec::new(),
            mig: Vec::new(),
        };
        let in_mig_mode: Vec<(u32, Option<String>)> = backend
            .mig_modes()
            .into_iter()
            .filter(|(_, mode)| *mode == Some(true))
            .map(|(index, _)| {
                let uuid = nvml
                    .device_by_index(index)
                    .and_then(|device| device.uuid())
                    .ok();
                (index, uuid)
            })
            .collect();
        if !in_mig_mode.is_empty() {
            let listing = nvidia_smi_list().map(|text| parse_nvidia_smi_list(&text));
            backend.mig = mig_instances(
                backend.device_count(),
                &in_mig_mode,
                match &listing {
                    Ok(gpus) => Ok(gpus),
                    Err(why) => Err(why),
                },
            );
            backend.mig_gpus = in_mig_mode.into_iter().map(|(index, _)| index).collect();
        }
        Ok(backend)
    }

    /// The physical GPUs offered whole (those not in MIG mode).
    fn whole_gpus(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.device_count()).filter(|index| !self.mig_gpus.contains(index))
    }

    /// The MIG instances offered (empty without GPUs in MIG mode).
    pub fn mig_instances(&self) -> &[MigInstance] {
        &self.mig
    }

    /// Each GPU's MIG mode: `Some(true)` when MIG is enabled now, `Some(false)` when
    /// disabled, `None` when the device does not support MIG. (Listing the MIG devices
    /// themselves needs NVML calls the wrapper does not offer yet; the backend reads
    /// `nvidia-smi -L`.)
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
        let xids = self
            .xids
            .lock()
            .map(|xids| xids.clone())
            .unwrap_or_default();
        // An XID on a GPU in MIG mode concerns each of its instances.
        xids.into_iter()
            .flat_map(|(index, code)| {
                let instances: Vec<(u32, u32)> = self
                    .mig
                    .iter()
                    .filter(|mig| mig.parent == index)
                    .map(|mig| (mig.index, code))
                    .collect();
                if instances.is_empty() {
                    vec![(index, code)]
                } else {
                    instances
                }
            })
            .collect()
    }

    fn device_minors(&self) -> Vec<(u32, u32)> {
        let minor = |index: u32| {
            let minor = self
                .nvml
                .device_by_index(index)
                .and_then(|device| device.minor_number());
            match minor {
                Ok(minor) => minor,
                Err(err) => {
                    tracing::warn!(gpu.index = index, error = %err, "NVML has no minor number; assuming the index");
                    index
                }
            }
        };
        self.whole_gpus()
            .map(|index| (index, minor(index)))
            .chain(self.mig.iter().map(|mig| (mig.index, minor(mig.parent))))
            .collect()
    }

    fn utilization_measured(&self, index: u32) -> bool {
        !self.mig.iter().any(|mig| mig.index == index)
    }

    fn inventory(&self) -> Vec<GpuInfo> {
        let mut gpus = Vec::new();
        for index in self.whole_gpus() {
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
        for mig in &self.mig {
            let device = self.nvml.device_by_index(mig.parent).ok();
            let gpu_name = device
                .as_ref()
                .and_then(|device| device.name().ok())
                .unwrap_or_else(|| mig.gpu_name.clone());
            gpus.push(GpuInfo {
                index: mig.index,
                uuid: mig.uuid.clone(),
                model: format!("{gpu_name} MIG {}", mig.profile),
                memory_mib: mig_profile_memory_mib(&mig.profile).unwrap_or(0),
                domain: device
                    .as_ref()
                    .and_then(|device| device.pci_info().ok())
                    .and_then(|pci| numa_node(&pci.bus_id)),
                kind: GpuKind::Mig,
                parent: Some(mig.parent),
            });
        }
        gpus
    }

    /// Whole GPUs as NVML measures them. A MIG instance's utilisation and memory in use
    /// are not measured (0; [`GpuBackend::utilization_measured`] says so): it gets its GPU's
    /// temperature and an equal share of its GPU's power; none when its GPU does not answer.
    fn sample(&self, _busy: &[u32]) -> Vec<GpuSample> {
        let mut samples = Vec::new();
        for index in self.whole_gpus() {
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
        for &parent in &self.mig_gpus {
            let instances: Vec<&MigInstance> =
                self.mig.iter().filter(|mig| mig.parent == parent).collect();
            if instances.is_empty() {
                continue;
            }
            let Ok(device) = self.nvml.device_by_index(parent) else {
                continue;
            };
            let power_w = device
                .power_usage()
                .map(|milliwatts| f64::from(milliwatts) / 1000.0 / instances.len() as f64)
                .unwrap_or(0.0);
            let temperature_c = device.temperature(TemperatureSensor::Gpu).unwrap_or(0);
            samples.extend(instances.iter().map(|mig| GpuSample {
                index: mig.index,
                utilization_pct: 0,
                memory_used_mib: 0,
                power_w: round_watts(power_w),
                temperature_c,
            }));
        }
        samples.sort_by_key(|sample| sample.index);
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
/// and the others as idle. [`SimulatedBackend::parse`] can split each GPU into MIG
/// instances (`MIG-sim-…` UUIDs) or shards; samples are then per instance or shard, each
/// with its share of the GPU's power.
///
/// Faults can be injected for tests through a file ([`SimulatedBackend::with_fault_file`]),
/// one per line, by device index: `xid INDEX CODE` (an XID error), `lost INDEX` (the
/// device stops answering: no samples), `stuck INDEX` (0 % utilisation even when busy).
#[derive(Debug, Clone)]
pub struct SimulatedBackend {
    gpus: Vec<GpuInfo>,
    /// Board power of one device, watts (a GPU's, divided among its instances or shards).
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

fn round_watts(watts: f64) -> f64 {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_nvml_and_without_simulated_gpus_a_node_offers_none() {
        if nvml_available() {
            // A GPU machine: NVML decides.
            return;
        }
        let backend = detect_backend_for_node(None, "n").unwrap();
        assert_eq!(backend.kind(), "none");
        assert!(backend.inventory().is_empty());
        assert!(backend.sample(&[]).is_empty());
        let simulated = detect_backend_for_node(Some("2xA100"), "n").unwrap();
        assert_eq!(simulated.inventory().len(), 2);
    }

    #[test]
    fn sharded_backend_splits_whole_gpus_and_maps_samples_errors_and_minors() {
        let dir = std::env::temp_dir().join(format!("berth-shards-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let faults = dir.join("faults");
        std::fs::write(&faults, "xid 1 79\n").unwrap();
        let inner = SimulatedBackend::parse("2xH100/2", "n")
            .unwrap()
            .with_fault_file(&faults);
        let b = ShardedBackend::new(Box::new(inner), 3).unwrap();
        let inv = b.inventory();
        let shape: Vec<(u32, GpuKind, Option<u32>, Option<u32>)> = inv
            .iter()
            .map(|g| (g.index, g.kind, g.parent, g.domain))
            .collect();
        assert_eq!(
            shape,
            (0..6)
                .map(|i| (i, GpuKind::Shard, Some(i / 3), Some(i / 3)))
                .collect::<Vec<_>>()
        );
        assert_eq!(inv[4].uuid, inv[3].uuid, "shards carry their GPU's UUID");
        // A job on shard 4 makes GPU 1 busy: its three shards sample busy, GPU 0's idle.
        let samples = b.sample(&[4]);
        assert_eq!(samples.len(), 6);
        assert!(samples[3..].iter().all(|s| s.utilization_pct >= 70));
        assert!(samples[..3].iter().all(|s| s.utilization_pct < 70));
        assert_eq!(b.xid_errors(), vec![(3, 79), (4, 79), (5, 79)]);
        assert_eq!(
            b.device_minors(),
            vec![(0, 0), (1, 0), (2, 0), (3, 1), (4, 1), (5, 1)]
        );
        // MIG instances are not sharded.
        let mig = ShardedBackend::new(
            Box::new(SimulatedBackend::parse("1xA100:mig=3g.40gb*2", "n").unwrap()),
            4,
        )
        .unwrap();
        assert!(mig.inventory().iter().all(|g| g.kind == GpuKind::Mig));
        assert_eq!(mig.inventory().len(), 2);
        assert!(ShardedBackend::new(Box::new(SimulatedBackend::new(1, "H100", "n")), 0).is_err());
        std::fs::remove_dir_all(&dir).ok();
    }

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
    fn mig_specs_split_each_gpu_into_instances() {
        let backend = SimulatedBackend::parse("2xA100:mig=3g.40gb*2", "node-1").unwrap();
        let devices = backend.inventory();
        assert_eq!(
            devices
                .iter()
                .map(|d| (d.index, d.kind, d.parent))
                .collect::<Vec<_>>(),
            vec![
                (0, GpuKind::Mig, Some(0)),
                (1, GpuKind::Mig, Some(0)),
                (2, GpuKind::Mig, Some(1)),
                (3, GpuKind::Mig, Some(1)),
            ]
        );
        assert!(devices
            .iter()
            .all(|d| d.model == "NVIDIA A100-SXM4-80GB MIG 3g.40gb" && d.memory_mib == 40 * 1024));
        assert!(devices.iter().all(|d| d.uuid.starts_with("MIG-sim-")));
        let mut uuids: Vec<&str> = devices.iter().map(|d| d.uuid.as_str()).collect();
        uuids.sort_unstable();
        uuids.dedup();
        assert_eq!(uuids.len(), 4);
        // Stable per node and index, distinct between nodes.
        let again = SimulatedBackend::parse("2xA100:mig=3g.40gb*2", "node-1").unwrap();
        assert_eq!(again.inventory(), devices);
        let other = SimulatedBackend::parse("2xA100:mig=3g.40gb*2", "node-2").unwrap();
        assert_ne!(other.inventory()[0].uuid, devices[0].uuid);
        // Isolation goes by the parent GPU's device.
        assert_eq!(
            backend.device_minors(),
            vec![(0, 0), (1, 0), (2, 1), (3, 1)]
        );
        // Domains by parent GPU.
        let domains: Vec<Option<u32>> = SimulatedBackend::parse("4xH100:mig=1g.10gb*7/2", "n")
            .unwrap()
            .inventory()
            .iter()
            .map(|d| d.domain)
            .collect();
        assert_eq!(domains.len(), 28);
        assert_eq!(domains[13], Some(0));
        assert_eq!(domains[14], Some(1));
    }

    #[test]
    fn shard_specs_offer_each_gpu_several_times() {
        let gpus = SimulatedBackend::parse("8xH100", "node-1")
            .unwrap()
            .inventory();
        let backend = SimulatedBackend::parse("8xH100:shards=2/2", "node-1").unwrap();
        let shards = backend.inventory();
        assert_eq!(shards.len(), 16);
        for shard in &shards {
            let parent = shard.index / 2;
            assert_eq!(shard.kind, GpuKind::Shard);
            assert_eq!(shard.parent, Some(parent));
            assert_eq!(shard.uuid, gpus[parent as usize].uuid);
            assert_eq!(shard.model, "NVIDIA H100 80GB HBM3");
            assert_eq!(shard.memory_mib, 81559);
            assert_eq!(shard.domain, Some(parent / 4));
        }
        assert_eq!(backend.device_minors()[5], (5, 2));
        // A plain spec's GPUs are whole, with no parent.
        assert!(gpus
            .iter()
            .all(|g| g.kind == GpuKind::Gpu && g.parent.is_none()));
    }

    #[test]
    fn mig_profiles_give_their_memory() {
        assert_eq!(mig_profile_memory_mib("3g.40gb"), Some(40 * 1024));
        assert_eq!(mig_profile_memory_mib("1g.10gb+me"), Some(10 * 1024));
        assert_eq!(mig_profile_memory_mib("1c.3g.40gb"), Some(40 * 1024));
        assert_eq!(mig_profile_memory_mib("7g.80gb"), Some(80 * 1024));
        for bad in [
            "3g", "40gb", "3g.gb", "3g.0gb", "g.40gb", "3x.40gb", "3g.40", "",
        ] {
            assert_eq!(mig_profile_memory_mib(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn bad_mig_and_shard_specs_are_refused_by_name() {
        for bad in [
            "2xA100:mig=3g.40gb",
            "2xA100:mig=3g*2",
            "2xA100:mig=3g.40gb*0",
            "2xA100:mig=3g.40gb*8",
            "2xA100:mig=*2",
            "2xA100:mig=3g.40gb*2:shards=2",
            "2xA100:shards=2:shards=2",
            "2xA100:shards=0",
            "2xA100:shards=x",
            "2xA100:shards=129",
            "2xA100:fraction=2",
            "2xA100:",
            "8xH100/2:shards=2",
            "8xH100:shards=2/3",
            // More than 128 devices on a node.
            "8xH100:shards=32",
            "129xH100",
        ] {
            let err = SimulatedBackend::parse(bad, "n").unwrap_err();
            assert!(
                matches!(err, WorkerError::InvalidGpuSpec { .. }),
                "{bad:?} should be refused"
            );
            let message = err.to_string();
            assert!(message.contains(bad), "{message}");
        }
    }

    #[test]
    fn shard_and_mig_samples_and_faults_go_by_device_index() {
        let dir = std::env::temp_dir().join(format!("berth-gpu-shards-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("faults");
        std::fs::write(&file, "lost 3\nxid 2 79\n").unwrap();
        let backend = SimulatedBackend::parse("2xH100:shards=2", "n")
            .unwrap()
            .with_fault_file(&file);
        let samples = backend.sample(&[1]);
        assert_eq!(
            samples.iter().map(|s| s.index).collect::<Vec<_>>(),
            vec![0, 1, 2]
        );
        assert_eq!(samples[0].utilization_pct, 0);
        assert!(samples[1].utilization_pct >= 70);
        // Each shard draws a share of its GPU's 700 W.
        assert!(
            samples[1].power_w <= 350.0 * 0.95 + 0.1,
            "{}",
            samples[1].power_w
        );
        assert_eq!(backend.xid_errors(), vec![(2, 79)]);
        let mig = SimulatedBackend::parse("1xA100:mig=3g.40gb*2", "n").unwrap();
        let samples = mig.sample(&[0]);
        assert_eq!(samples.len(), 2);
        assert!(samples[0].memory_used_mib <= 40 * 1024);
        assert!(mig.utilization_measured(0));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// `nvidia-smi -L` on a machine with GPU 0 in MIG mode (two 3g.40gb instances) and
    /// GPU 1 whole.
    const SMI_ONE_MIG_ONE_WHOLE: &str = "\
GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77)
  MIG 3g.40gb     Device  0: (UUID: MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f)
  MIG 3g.40gb     Device  1: (UUID: MIG-cba663e8-9bed-5b7c-8ca2-f2c5aa3e0b1f)
GPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-0e2a7d3c-1b4f-4f6a-9c5e-2d8b7a6f1e03)
";

    #[test]
    fn parses_nvidia_smi_listings() {
        let gpus = parse_nvidia_smi_list(SMI_ONE_MIG_ONE_WHOLE);
        assert_eq!(gpus.len(), 2);
        assert_eq!(gpus[0].index, 0);
        assert_eq!(gpus[0].name, "NVIDIA A100-SXM4-80GB");
        assert_eq!(gpus[0].uuid, "GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77");
        assert_eq!(
            gpus[0].mig,
            vec![
                ListedMig {
                    profile: "3g.40gb".into(),
                    device: 0,
                    uuid: "MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f".into(),
                },
                ListedMig {
                    profile: "3g.40gb".into(),
                    device: 1,
                    uuid: "MIG-cba663e8-9bed-5b7c-8ca2-f2c5aa3e0b1f".into(),
                },
            ]
        );
        assert_eq!(gpus[1].index, 1);
        assert_eq!(gpus[1].uuid, "GPU-0e2a7d3c-1b4f-4f6a-9c5e-2d8b7a6f1e03");
        assert!(gpus[1].mig.is_empty());

        // Drivers before R470 name MIG devices `MIG-GPU-…/gi/ci`; blank lines and a MIG
        // line before any GPU are skipped.
        let old = "  MIG 1g.5gb Device 0: (UUID: MIG-orphan)\n\n\
GPU 0: A100-SXM4-40GB (UUID: GPU-aaaa)\n  MIG 1g.5gb Device 0: (UUID: MIG-GPU-aaaa/7/0)\n\
  MIG 1g.5gb+me Device 1: (UUID: MIG-GPU-aaaa/8/0)\n";
        let gpus = parse_nvidia_smi_list(old);
        assert_eq!(gpus.len(), 1);
        assert_eq!(gpus[0].mig.len(), 2);
        assert_eq!(gpus[0].mig[0].uuid, "MIG-GPU-aaaa/7/0");
        assert_eq!(gpus[0].mig[1].profile, "1g.5gb+me");
        assert_eq!(gpus[0].mig[1].device, 1);
        assert!(parse_nvidia_smi_list("").is_empty());
        assert!(parse_nvidia_smi_list("No devices found.\n").is_empty());
    }

    #[test]
    fn mig_instances_follow_the_physical_gpus() {
        let listing = parse_nvidia_smi_list(SMI_ONE_MIG_ONE_WHOLE);
        let uuid = Some("GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77".to_string());
        let instances = mig_instances(2, &[(0, uuid)], Ok(&listing));
        assert_eq!(
            instances,
            vec![
                MigInstance {
                    index: 2,
                    parent: 0,
                    uuid: "MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f".into(),
                    profile: "3g.40gb".into(),
                    gpu_name: "NVIDIA A100-SXM4-80GB".into(),
                },
                MigInstance {
                    index: 3,
                    parent: 0,
                    uuid: "MIG-cba663e8-9bed-5b7c-8ca2-f2c5aa3e0b1f".into(),
                    profile: "3g.40gb".into(),
                    gpu_name: "NVIDIA A100-SXM4-80GB".into(),
                },
            ]
        );
        // Found by UUID even where the listing numbers GPUs differently; by index when
        // NVML gave no UUID.
        let renumbered: Vec<ListedGpu> = listing
            .iter()
            .cloned()
            .map(|mut gpu| {
                gpu.index = 1 - gpu.index;
                gpu
            })
            .collect();
        let uuid = Some("GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77".to_string());
        assert_eq!(mig_instances(2, &[(0, uuid)], Ok(&renumbered))[0].parent, 0);
        assert_eq!(mig_instances(2, &[(0, None)], Ok(&listing)).len(), 2);
        // GPU 1 has no instances; a GPU not listed or no listing at all offers nothing.
        assert!(mig_instances(2, &[(1, None)], Ok(&listing)).is_empty());
        assert!(mig_instances(2, &[(5, None)], Ok(&listing)).is_empty());
        assert!(mig_instances(2, &[(0, None)], Err("nvidia-smi: not found")).is_empty());
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
