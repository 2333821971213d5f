//! QOS (Slurm's quality of service) and the fairshare/priority views: the wire types of
//! `GET|PUT /v1/qos/{name}`, `GET /v1/fairshare` (sshare) and `GET /v1/jobs/{id}/priority`
//! (sprio).

use crate::priority::{FairshareRow, PriorityFactors};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A TRES limit set (Slurm's `gres/gpu=8,cpu=64,node=2`); an absent key is no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct TresLimits {
    /// CPUs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<u64>,
    /// GPUs (`gres/gpu`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu: Option<u64>,
    /// Nodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<u64>,
}

impl TresLimits {
    /// Parses Slurm's TRES list: `gres/gpu=8,cpu=64,node=2` (`gpu=` is accepted for
    /// `gres/gpu=`; an empty string is no limit).
    ///
    /// # Errors
    /// A message naming the unknown TRES or the bad count.
    pub fn parse(s: &str) -> Result<TresLimits, String> {
        let mut out = TresLimits::default();
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (key, value) = item
                .split_once('=')
                .ok_or_else(|| format!("`{item}` is not TRES=COUNT"))?;
            let n: u64 = value
                .trim()
                .parse()
                .map_err(|_| format!("`{value}` is not a count"))?;
            match key.trim().to_ascii_lowercase().as_str() {
                "cpu" => out.cpu = Some(n),
                "gres/gpu" | "gpu" => out.gpu = Some(n),
                "node" => out.node = Some(n),
                other => return Err(format!("unknown TRES `{other}` (cpu, gres/gpu, node)")),
            }
        }
        Ok(out)
    }
}

impl std::fmt::Display for TresLimits {
    /// Slurm's form: `cpu=64,gres/gpu=8,node=2`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = [
            ("cpu", self.cpu),
            ("gres/gpu", self.gpu),
            ("node", self.node),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| format!("{k}={v}")))
        .collect();
        f.write_str(&parts.join(","))
    }
}

/// What happens to a job when it is preempted (Slurm's `PreemptMode`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum PreemptMode {
    /// The job ends PREEMPTED.
    #[default]
    Cancel,
    /// The job goes back to PENDING and runs again (restart count + 1).
    Requeue,
}

impl PreemptMode {
    /// `CANCEL` or `REQUEUE`.
    pub fn as_str(self) -> &'static str {
        match self {
            PreemptMode::Cancel => "CANCEL",
            PreemptMode::Requeue => "REQUEUE",
        }
    }
}

/// `PUT /v1/qos/{name}`: a QOS's whole definition (absent fields take their defaults).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct QosSpec {
    /// Free text.
    pub description: String,
    /// `Priority`: the QOS factor of the multifactor priority (≥ 0).
    pub priority: u32,
    /// `UsageFactor`: multiplies the usage its jobs are charged (≥ 0; default 1).
    pub usage_factor: f64,
    /// `MaxTRESPerUser`: what one user's running jobs of this QOS may hold together.
    pub max_tres_per_user: TresLimits,
    /// `MaxTRESPerAccount`: what one account's running jobs of this QOS may hold.
    pub max_tres_per_account: TresLimits,
    /// `GrpTRES`: what all running jobs of this QOS may hold together.
    pub grp_tres: TresLimits,
    /// `MaxJobsPerUser`: running jobs per user.
    pub max_jobs_per_user: Option<u32>,
    /// `MaxSubmitJobsPerUser`: jobs not ended (pending or running) per user; more are
    /// refused at submission.
    pub max_submit_jobs_per_user: Option<u32>,
    /// `MaxWall`: the longest time limit, seconds.
    pub max_wall: Option<u64>,
    /// `Preempt`: the QOS whose running jobs this QOS's jobs may preempt.
    pub preempt: Vec<String>,
    /// `PreemptMode` of this QOS's jobs when they are preempted.
    pub preempt_mode: PreemptMode,
    /// `GraceTime`: seconds between SIGTERM and the kill of a preempted job of this QOS.
    pub grace_time: u64,
    /// `PreemptExemptTime`: seconds after its start during which a job of this QOS is not
    /// preempted.
    pub preempt_exempt_time: u64,
}

impl Default for QosSpec {
    fn default() -> Self {
        QosSpec {
            description: String::new(),
            priority: 0,
            usage_factor: 1.0,
            max_tres_per_user: TresLimits::default(),
            max_tres_per_account: TresLimits::default(),
            grp_tres: TresLimits::default(),
            max_jobs_per_user: None,
            max_submit_jobs_per_user: None,
            max_wall: None,
            preempt: Vec::new(),
            preempt_mode: PreemptMode::Cancel,
            grace_time: 0,
            preempt_exempt_time: 0,
        }
    }
}

/// A QOS as the api shows it: its name and its definition, as `PUT /v1/qos/{name}`
/// takes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Qos {
    /// Name.
    pub name: String,
    /// Its definition.
    pub spec: QosSpec,
}

/// `GET /v1/fairshare`: every association's fairshare (sshare).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct FairshareList {
    /// By account, then user. Raw usage is as the scheduler last decayed it (at most a
    /// minute or so ago); normalized usage and the factor do not depend on that.
    pub associations: Vec<FairshareRow>,
}

/// `GET /v1/jobs/{id}/priority`: a pending job's priority factors (sprio), as the
/// scheduler computed them last.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct JobPriority {
    /// The job.
    pub job_id: i64,
    /// Its user.
    pub user: String,
    /// Its account (the user's default account when the job named none).
    pub account: Option<String>,
    /// Its partition.
    pub partition: String,
    /// Its QOS.
    pub qos: Option<String>,
    /// Each factor (0..=1, before weighting), nice, adjustment and the total.
    pub factors: PriorityFactors,
    /// Each factor times its weight, as sprio prints them.
    pub weighted: PriorityFactors,
    /// When the scheduler computed it (RFC 3339).
    pub computed_at: String,
}

/// What the scheduler records of a pending job's priority each time it changes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PriorityRecord {
    /// The factors and the total.
    pub factors: PriorityFactors,
    /// The weights they were computed with.
    pub weights: crate::priority::PriorityWeights,
    /// The association's account the fairshare factor is of.
    pub account: String,
}

impl PriorityRecord {
    /// Each factor times its weight (nice and adjustment as they are).
    pub fn weighted(&self) -> PriorityFactors {
        let (f, w) = (&self.factors, &self.weights);
        PriorityFactors {
            age: f.age * w.age,
            fairshare: f.fairshare * w.fairshare,
            job_size: f.job_size * w.job_size,
            partition: f.partition * w.partition,
            qos: f.qos * w.qos,
            ..*f
        }
    }
}
