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

mod nvml;
mod simulated;
#[cfg(test)]
mod tests;

pub use nvml::*;
pub use simulated::*;

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
