//! GPU usage per job (`GET /v1/jobs/{id}/stats`, `berth stat`, like `sstat`) and GPU
//! faults a worker reports (which drain its node).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// One GPU's usage by a job run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct GpuStats {
    /// The node.
    pub node: String,
    /// The device index.
    pub index: u32,
    /// Samples taken while the job held it.
    pub samples: u64,
    /// Average utilisation over those samples, percent.
    pub avg_utilization_pct: f64,
    /// Highest memory in use, MiB.
    pub peak_memory_mib: u64,
    /// Energy used, joules (power integrated between samples).
    pub energy_joules: f64,
    /// Latest utilisation, percent.
    pub utilization_pct: Option<u32>,
    /// Latest memory in use, MiB.
    pub memory_used_mib: Option<u64>,
    /// Latest power draw, watts.
    pub power_w: Option<f64>,
    /// Latest temperature, °C.
    pub temperature_c: Option<u32>,
    /// When the latest sample was taken.
    pub last_sampled_at: DateTime<Utc>,
}

/// A job run's GPU usage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct JobStats {
    /// The job.
    pub job_id: i64,
    /// The run (restart count) these figures are for.
    pub run: u32,
    /// Average utilisation over every sample of every GPU, percent (`None` before the
    /// first sample).
    pub avg_utilization_pct: Option<f64>,
    /// The highest memory in use on any one GPU, MiB.
    pub peak_memory_mib: u64,
    /// Energy used by all its GPUs, joules.
    pub energy_joules: f64,
    /// Per GPU, by node then index.
    pub gpus: Vec<GpuStats>,
}

/// One point of a GPU's time series: the samples of one time bucket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct GpuSeriesPoint {
    /// The bucket's start (RFC 3339, UTC).
    pub time: DateTime<Utc>,
    /// Mean utilisation in the bucket, percent.
    pub utilization_pct: f64,
    /// Highest memory in use in the bucket, MiB.
    pub memory_used_mib: u64,
    /// Mean power draw in the bucket, watts (`None` when the GPU reports none).
    pub power_w: Option<f64>,
}

/// One GPU's time series within a job run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct GpuSeries {
    /// The node.
    pub node: String,
    /// The device index.
    pub index: u32,
    /// The points, oldest first.
    pub points: Vec<GpuSeriesPoint>,
}

/// A job run's per-GPU utilisation, memory and power over time
/// (`GET /v1/jobs/{id}/gpu-samples`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct JobGpuSamples {
    /// The job.
    pub job_id: i64,
    /// The run (restart count) these series are for.
    pub run: u32,
    /// The width of each point's bucket, seconds (at least the sampling interval, 10 s;
    /// wider when the run is long, so that a series has at most `points` points).
    pub step_seconds: u64,
    /// Per GPU the run held, by node then index; empty before the first sample.
    pub gpus: Vec<GpuSeries>,
}

/// What is wrong with a GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum GpuFaultKind {
    /// An NVIDIA XID error (code in `xid`).
    Xid,
    /// The GPU no longer answers (fell off the bus).
    Lost,
    /// It stayed at 0 % utilisation under a running job for the configured time.
    Stuck,
}

/// A GPU fault seen by a worker (in a sync request). Its node is drained with a reason
/// naming it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
pub struct GpuFault {
    /// The device index.
    pub index: u32,
    /// What is wrong.
    pub kind: GpuFaultKind,
    /// The XID code, for `xid`.
    #[serde(default)]
    pub xid: Option<u32>,
}

impl GpuFault {
    /// The drain reason (`gpu 3: XID 79`, `gpu 2: lost`, `gpu 1: stuck at 0% under a job`).
    pub fn reason(&self) -> String {
        match self.kind {
            GpuFaultKind::Xid => format!("gpu {}: XID {}", self.index, self.xid.unwrap_or(0)),
            GpuFaultKind::Lost => format!("gpu {}: lost", self.index),
            GpuFaultKind::Stuck => format!("gpu {}: stuck at 0% under a job", self.index),
        }
    }
}
