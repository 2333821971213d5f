//! Cloud node pools: what an admin declares (`PUT /v1/pools/{name}`, `[pools.NAME]` in the
//! server config) and what `GET /v1/pools` shows.
//!
//! A pool's nodes are ordinary nodes named `<pool>-<n>` (n from 1 to `max_nodes`), in
//! Slurm's cloud states: `POWERED_DOWN` (no instance; sinfo's `~`), `POWERING_UP` (an
//! instance was requested; `#`), then in service once its worker joins, `POWERING_DOWN`
//! (its instance is being terminated; `%`).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use utoipa::ToSchema;

/// The longest pool name.
pub const MAX_POOL_NAME: usize = 31;
/// The most nodes one pool may have.
pub const MAX_POOL_NODES: u32 = 10_000;

/// Which provider launches a pool's instances.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// `berth worker` processes with simulated GPUs on the scheduler's machine.
    Local,
    /// Amazon EC2 (`RunInstances`), or an endpoint that speaks its API.
    Ec2,
}

/// How instances are bought.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Market {
    /// On-demand.
    #[default]
    OnDemand,
    /// Spot: cheaper, may be reclaimed with two minutes' notice.
    Spot,
}

impl Market {
    /// `on_demand` or `spot`, as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Market::OnDemand => "on_demand",
            Market::Spot => "spot",
        }
    }
}

/// One instance type a pool may launch, in the pool's order of preference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InstanceTypeSpec {
    /// The provider's type name (`p5.48xlarge`, `sim-8xh100`).
    pub name: String,
    /// Its GPUs as `COUNTxMODEL` (`8xH100`); `""` or `"0"`: none.
    #[serde(default)]
    pub gpus: String,
    /// Memory of each GPU (`80G`; MiB without a suffix). Default 81920 MiB.
    #[serde(default)]
    pub gpu_memory: Option<String>,
    /// Logical CPUs.
    pub cpus: u32,
    /// Memory (`256G`; MiB without a suffix).
    pub memory: String,
    /// What one instance costs per hour, in the pool's currency (default 0).
    #[serde(default)]
    pub price_per_hour: f64,
}

/// An instance type with its sizes parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct InstanceShape {
    /// GPUs.
    pub gpu_count: u32,
    /// GPU model (`H100`).
    pub gpu_model: String,
    /// Memory per GPU, MiB.
    pub gpu_memory_mib: u64,
    /// CPUs.
    pub cpus: u32,
    /// Memory, MiB.
    pub memory_mib: u64,
}

impl InstanceTypeSpec {
    /// Its sizes.
    ///
    /// # Errors
    /// A message naming the field (`gpus`, `gpu_memory`, `memory`, `cpus`).
    pub fn shape(&self) -> Result<InstanceShape, String> {
        let (gpu_count, gpu_model) = match self.gpus.trim() {
            "" | "0" => (0, String::new()),
            g => {
                let (n, model) = g
                    .split_once(['x', 'X'])
                    .ok_or_else(|| format!("gpus: {g:?} is not COUNTxMODEL (8xH100)"))?;
                let n: u32 = n
                    .parse()
                    .ok()
                    .filter(|n| (1..=128).contains(n))
                    .ok_or_else(|| format!("gpus: {g:?}: the count must be 1 to 128"))?;
                if model.is_empty()
                    || !model
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
                {
                    return Err(format!(
                        "gpus: {g:?}: the model must be letters, digits or `_.-`"
                    ));
                }
                (n, model.to_string())
            }
        };
        let gpu_memory_mib = match &self.gpu_memory {
            None => 81_920,
            Some(m) => crate::sbatch::size_mib(m).map_err(|e| format!("gpu_memory: {e}"))?,
        };
        let memory_mib =
            crate::sbatch::size_mib(&self.memory).map_err(|e| format!("memory: {e}"))?;
        if memory_mib == 0 {
            return Err("memory: must be more than 0".into());
        }
        if self.cpus == 0 || self.cpus > 100_000 {
            return Err("cpus: must be 1 to 100000".into());
        }
        Ok(InstanceShape {
            gpu_count,
            gpu_model,
            gpu_memory_mib,
            cpus: self.cpus,
            memory_mib,
        })
    }
}

fn default_idle_timeout() -> u64 {
    600
}
fn default_boot_timeout() -> u64 {
    600
}
fn default_cooldown() -> u64 {
    180
}
fn default_launch_rate() -> u32 {
    20
}

/// A pool, as declared: `PUT /v1/pools/{name}` takes it, `[pools.NAME]` in the server
/// config holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PoolSpec {
    /// Which provider launches its instances.
    pub provider: ProviderKind,
    /// Instance types in order of preference (at least one): a capacity error on one sets
    /// it aside for `capacity_cooldown` and the next is tried.
    pub instance_types: Vec<InstanceTypeSpec>,
    /// The machine image (EC2: an AMI id). Required for `ec2`.
    #[serde(default)]
    pub image: Option<String>,
    /// Subnets to launch in, in order of preference (EC2 subnet ids).
    #[serde(default)]
    pub subnets: Vec<String>,
    /// Availability zones to launch in, in order of preference, when no subnets are given.
    #[serde(default)]
    pub zones: Vec<String>,
    /// Tags put on every instance (besides Berth's own `berth:*` tags).
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
    /// Features its nodes have (for `--constraint`).
    #[serde(default)]
    pub features: Vec<String>,
    /// Partitions its nodes join.
    #[serde(default)]
    pub partitions: Vec<String>,
    /// Nodes kept running even when idle (default 0).
    #[serde(default)]
    pub min_nodes: u32,
    /// The most nodes it may have (its node slots `<pool>-1` … `<pool>-<max_nodes>`).
    pub max_nodes: u32,
    /// On-demand or spot.
    #[serde(default)]
    pub market: Market,
    /// Seconds a node may stay idle before it is terminated (Slurm's `SuspendTime`;
    /// default 600).
    #[serde(default = "default_idle_timeout")]
    pub idle_timeout: u64,
    /// Seconds an instance has to join before it is terminated and its job requeued
    /// (Slurm's `ResumeTimeout`; default 600).
    #[serde(default = "default_boot_timeout")]
    pub boot_timeout: u64,
    /// Seconds a launch is expected to take to join, counted in planned start times
    /// (default: a quarter of `boot_timeout`; the local provider: its `boot_delay` + 5).
    #[serde(default)]
    pub expected_boot: Option<u64>,
    /// Seconds an (instance type, zone) is set aside after a capacity error (default 180).
    #[serde(default = "default_cooldown")]
    pub capacity_cooldown: u64,
    /// The most instances launched per minute (default 20).
    #[serde(default = "default_launch_rate")]
    pub launch_rate_per_minute: u32,
    /// EC2 settings.
    #[serde(default)]
    pub ec2: Option<Ec2Options>,
    /// Local provider settings.
    #[serde(default)]
    pub local: Option<LocalOptions>,
}

/// EC2 settings of a pool.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Ec2Options {
    /// The region (default: the SDK's chain: `AWS_REGION`, profile).
    #[serde(default)]
    pub region: Option<String>,
    /// The EC2 endpoint (default: the SDK's; `AWS_ENDPOINT_URL_EC2` also works).
    #[serde(default)]
    pub endpoint_url: Option<String>,
    /// Security group ids.
    #[serde(default)]
    pub security_group_ids: Vec<String>,
    /// An instance profile name (for the worker's own AWS access, if any).
    #[serde(default)]
    pub iam_instance_profile: Option<String>,
    /// An SSH key pair name.
    #[serde(default)]
    pub key_name: Option<String>,
    /// The path of `berth` on the image (default `/usr/local/bin/berth`).
    #[serde(default)]
    pub berth_path: Option<String>,
}

/// Local provider settings of a pool.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LocalOptions {
    /// Seconds a worker waits before it starts, as an instance boots (default 0).
    #[serde(default)]
    pub boot_delay: u64,
    /// Instance types (`type`, or `type/zone`) that fail with `InsufficientInstanceCapacity`,
    /// to exercise fallback. The provider also reads `inject.toml` in its state directory
    /// at every launch for the same list, changeable while it runs.
    #[serde(default)]
    pub capacity_errors: Vec<String>,
}

impl PoolSpec {
    /// Checks the spec; the error names the field.
    ///
    /// # Errors
    /// `(field, message)`.
    pub fn validate(&self) -> Result<(), (String, String)> {
        let bad = |f: &str, m: String| Err((f.to_string(), m));
        if self.instance_types.is_empty() {
            return bad("instance_types", "at least one instance type".into());
        }
        let mut seen = std::collections::BTreeSet::new();
        for (i, t) in self.instance_types.iter().enumerate() {
            if t.name.is_empty()
                || t.name.len() > 64
                || !t
                    .name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
            {
                return bad(
                    &format!("instance_types[{i}].name"),
                    "1 to 64 letters, digits or `_.-`".into(),
                );
            }
            if !seen.insert(t.name.as_str()) {
                return bad(&format!("instance_types[{i}].name"), "named twice".into());
            }
            if !(t.price_per_hour.is_finite() && t.price_per_hour >= 0.0) {
                return bad(
                    &format!("instance_types[{i}].price_per_hour"),
                    "a number ≥ 0".into(),
                );
            }
            if let Err(e) = t.shape() {
                let (field, msg) = e.split_once(": ").unwrap_or(("gpus", &e));
                return bad(&format!("instance_types[{i}].{field}"), msg.to_string());
            }
        }
        if self.max_nodes == 0 || self.max_nodes > MAX_POOL_NODES {
            return bad("max_nodes", format!("must be 1 to {MAX_POOL_NODES}"));
        }
        if self.min_nodes > self.max_nodes {
            return bad("min_nodes", "must not exceed max_nodes".into());
        }
        for (field, v) in [
            ("idle_timeout", self.idle_timeout),
            ("boot_timeout", self.boot_timeout),
            ("capacity_cooldown", self.capacity_cooldown),
        ] {
            if v == 0 || v > 30 * 86_400 {
                return bad(field, "seconds, 1 to 2592000".into());
            }
        }
        if let Some(e) = self.expected_boot {
            if e > self.boot_timeout {
                return bad("expected_boot", "must not exceed boot_timeout".into());
            }
        }
        if self.launch_rate_per_minute == 0 {
            return bad("launch_rate_per_minute", "must be at least 1".into());
        }
        for (k, v) in &self.tags {
            if k.is_empty() || k.len() > 128 || v.len() > 256 || k.starts_with("berth:") {
                return bad(
                    "tags",
                    format!("{k:?}: keys 1 to 128 characters, not `berth:…`; values ≤ 256"),
                );
            }
        }
        for f in &self.features {
            if f.is_empty()
                || !f
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
            {
                return bad("features", format!("{f:?}: letters, digits or `_.-`"));
            }
        }
        match self.provider {
            ProviderKind::Ec2 => {
                if self.image.as_deref().unwrap_or("").is_empty() {
                    return bad("image", "an AMI id is required for provider ec2".into());
                }
                if self.local.is_some() {
                    return bad("local", "only for provider local".into());
                }
            }
            ProviderKind::Local => {
                if self.ec2.is_some() {
                    return bad("ec2", "only for provider ec2".into());
                }
                if self
                    .local
                    .as_ref()
                    .is_some_and(|l| l.boot_delay > 30 * 86_400)
                {
                    return bad("local.boot_delay", "seconds, 0 to 2592000".into());
                }
            }
        }
        Ok(())
    }

    /// Seconds a launch is expected to take before its node is in service.
    pub fn expected_boot_seconds(&self) -> u64 {
        self.expected_boot
            .unwrap_or(match (&self.provider, &self.local) {
                (ProviderKind::Local, l) => l
                    .as_ref()
                    .map_or(0, |l| l.boot_delay)
                    .saturating_add(5)
                    .min(self.boot_timeout),
                (ProviderKind::Ec2, _) => self.boot_timeout / 4,
            })
    }
}

/// Whether `name` is a valid pool name: a lowercase letter, then up to 30 lowercase
/// letters, digits or `-` (it prefixes node names and instance tags).
pub fn valid_pool_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase())
        && name.len() <= MAX_POOL_NAME
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// The name of a pool's node slot `n` (1-based): `<pool>-<n>`.
pub fn slot_name(pool: &str, n: u32) -> String {
    format!("{pool}-{n}")
}

/// A pool as `GET /v1/pools` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Pool {
    /// Its name.
    pub name: String,
    /// What was declared.
    pub spec: PoolSpec,
    /// Its nodes by state name (`POWERED_DOWN`, `POWERING_UP`, `IDLE`, `MIXED`, …).
    pub nodes_by_state: BTreeMap<String, u32>,
    /// Nodes with an instance (every state but `POWERED_DOWN`).
    pub nodes_active: u32,
    /// Launch requests sent to the provider and not yet answered.
    pub launches_in_flight: u32,
    /// The last launch error, if any.
    pub last_error: Option<String>,
    /// When it happened.
    pub last_error_at: Option<chrono::DateTime<chrono::Utc>>,
    /// Launches are held back until then after repeated failures.
    pub backoff_until: Option<chrono::DateTime<chrono::Utc>>,
    /// (instance type, zone) set aside after capacity errors.
    pub cooldowns: Vec<PoolCooldown>,
    /// What its running instances cost per hour (sum of their types' prices).
    pub hourly_spend: f64,
    /// Its nodes.
    pub nodes: Vec<PoolNode>,
    /// Its most recent events, newest first (at most 50).
    pub events: Vec<CloudEvent>,
}

/// An (instance type, zone) set aside.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PoolCooldown {
    /// The instance type.
    pub instance_type: String,
    /// The zone (`""`: any).
    pub zone: String,
    /// Set aside until then.
    pub until: chrono::DateTime<chrono::Utc>,
    /// The provider's error.
    pub error: String,
}

/// One of a pool's nodes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PoolNode {
    /// The node name.
    pub name: String,
    /// Its state, as `GET /v1/nodes` names it.
    pub state: crate::state::NodeState,
    /// The instance id, when it has one.
    pub instance_id: Option<String>,
    /// The instance type.
    pub instance_type: Option<String>,
    /// `on_demand` or `spot`.
    pub market: Option<Market>,
    /// The zone.
    pub zone: Option<String>,
    /// Seconds since its instance was requested.
    pub age_seconds: Option<u64>,
    /// Why it is in its state.
    pub reason: Option<String>,
}

/// A list of pools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PoolList {
    /// Pools by name.
    pub items: Vec<Pool>,
}

/// Something that happened to a pool's instances.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CloudEvent {
    /// When.
    pub at: chrono::DateTime<chrono::Utc>,
    /// `launch`, `launch_failed`, `capacity_error`, `joined`, `boot_timeout`, `reclaim`,
    /// `terminate`, `orphan_terminated`, `instance_gone`, `power_up`, `power_down`.
    pub kind: String,
    /// The node, when one.
    pub node: Option<String>,
    /// The instance, when one.
    pub instance_id: Option<String>,
    /// The job it was for or affected, when one.
    pub job_id: Option<i64>,
    /// What happened, in words.
    pub reason: String,
}

/// `POST /v1/nodes/{name}/power`: Slurm's `scontrol update NodeName=… State=POWER_UP |
/// POWER_DOWN | POWER_DOWN_FORCE` for a pool node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PowerAction {
    /// Launch its instance now (`POWER_UP`).
    Up,
    /// Terminate its instance once its jobs end (`POWER_DOWN`).
    Down,
    /// Requeue its jobs and terminate its instance now (`POWER_DOWN_FORCE`).
    DownForce,
}

impl PowerAction {
    /// `up`, `down` or `down_force`, as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            PowerAction::Up => "up",
            PowerAction::Down => "down",
            PowerAction::DownForce => "down_force",
        }
    }
}

/// The body of `POST /v1/nodes/{name}/power`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NodePower {
    /// What to do.
    pub action: PowerAction,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> PoolSpec {
        toml_like(
            r#"{"provider":"local","max_nodes":4,"instance_types":[
                {"name":"sim-8xh100","gpus":"8xH100","cpus":32,"memory":"256G"}]}"#,
        )
    }

    fn toml_like(json: &str) -> PoolSpec {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn defaults_are_slurms() {
        let s = spec();
        assert_eq!(s.idle_timeout, 600);
        assert_eq!(s.boot_timeout, 600);
        assert_eq!(s.capacity_cooldown, 180);
        assert_eq!(s.min_nodes, 0);
        assert_eq!(s.market, Market::OnDemand);
        assert_eq!(s.expected_boot_seconds(), 5);
        assert!(s.validate().is_ok());
        let shape = s.instance_types[0].shape().unwrap();
        assert_eq!(
            (
                shape.gpu_count,
                shape.gpu_model.as_str(),
                shape.cpus,
                shape.memory_mib
            ),
            (8, "H100", 32, 262_144)
        );
    }

    #[test]
    fn bad_fields_are_named() {
        let mut s = spec();
        s.instance_types[0].gpus = "eightxH100".into();
        assert_eq!(s.validate().unwrap_err().0, "instance_types[0].gpus");
        let mut s = spec();
        s.min_nodes = 5;
        assert_eq!(s.validate().unwrap_err().0, "min_nodes");
        let mut s = spec();
        s.provider = ProviderKind::Ec2;
        assert_eq!(s.validate().unwrap_err().0, "image");
        let mut s = spec();
        s.instance_types[0].memory = "lots".into();
        assert_eq!(s.validate().unwrap_err().0, "instance_types[0].memory");
        let mut s = spec();
        s.tags.insert("berth:pool".into(), "x".into());
        assert_eq!(s.validate().unwrap_err().0, "tags");
        let mut s = spec();
        s.local = Some(LocalOptions {
            boot_delay: u64::MAX,
            ..Default::default()
        });
        assert_eq!(s.validate().unwrap_err().0, "local.boot_delay");
        assert_eq!(s.expected_boot_seconds(), s.boot_timeout);
    }

    #[test]
    fn pool_names_prefix_node_names() {
        assert!(valid_pool_name("burst"));
        assert!(valid_pool_name("a100-spot"));
        assert!(!valid_pool_name("Burst"));
        assert!(!valid_pool_name("1burst"));
        assert!(!valid_pool_name("b_u"));
        assert!(!valid_pool_name(&"a".repeat(32)));
        assert_eq!(slot_name("burst", 3), "burst-3");
    }
}
