//! Real NVIDIA devices through NVML: inventory (whole GPUs or a GPU's MIG instances as
//! `nvidia-smi -L` lists them), samples, XID events, NUMA nodes.

#[allow(unused_imports)]
use super::*;

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
    pub(crate) nvml: &'static Nvml,
    xids: std::sync::Arc<std::sync::Mutex<Vec<(u32, u32)>>>,
    /// The physical GPUs in MIG mode (not offered whole).
    mig_gpus: Vec<u32>,
    /// The MIG instances offered, by index.
    pub(crate) mig: Vec<MigInstance>,
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
pub(crate) fn numa_node(bus_id: &str) -> Option<u32> {
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
