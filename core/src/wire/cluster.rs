//! Nodes, their GPUs and partitions on the wire, their updates, drains and registration.

#[allow(unused_imports)]
use super::*;

/// What kind of device a node offers for GPU requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum GpuKind {
    /// A whole GPU.
    #[default]
    Gpu,
    /// A MIG instance of a GPU in MIG mode (`CUDA_VISIBLE_DEVICES` names its `MIG-…`
    /// UUID); requested as a GPU, its profile (`3g.40gb`) as the type:
    /// `--gres=gpu:3g.40gb:1`.
    Mig,
    /// A share of a GPU (Slurm's `shard` GRES: several jobs on one GPU), requested with
    /// `--gres=shard:N`; `CUDA_VISIBLE_DEVICES` names its GPU.
    Shard,
}

impl GpuKind {
    /// `gpu`, `mig` or `shard`.
    pub fn as_str(self) -> &'static str {
        match self {
            GpuKind::Gpu => "gpu",
            GpuKind::Mig => "mig",
            GpuKind::Shard => "shard",
        }
    }

    /// Parses [`GpuKind::as_str`]'s names.
    pub fn parse(s: &str) -> Option<GpuKind> {
        match s {
            "gpu" => Some(GpuKind::Gpu),
            "mig" => Some(GpuKind::Mig),
            "shard" => Some(GpuKind::Shard),
            _ => None,
        }
    }

    fn is_gpu(&self) -> bool {
        *self == GpuKind::Gpu
    }
}

/// A GPU (or a MIG instance or shard of one) as a node reports it: a device the
/// scheduler places jobs on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct GpuInfo {
    /// The device index on the node (what `CUDA_VISIBLE_DEVICES` names).
    pub index: u32,
    /// The device UUID (`GPU-…`).
    pub uuid: String,
    /// The model name (`NVIDIA H100 80GB HBM3`).
    pub model: String,
    /// Total memory, MiB.
    pub memory_mib: u64,
    /// Topology domain: GPUs of the node with the same number are close (the NUMA node of
    /// the GPU's PCI device under NVML; `--gpus 8xH100/2` domains when simulated). The
    /// scheduler gives a job GPUs of one domain when it can. Absent when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<u32>,
    /// Whole GPU (the default), MIG instance or shard.
    #[serde(default, skip_serializing_if = "GpuKind::is_gpu")]
    pub kind: GpuKind,
    /// For a MIG instance or a shard: the index of the physical GPU it is part of (whose
    /// `/dev/nvidiaN` the job may open).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<u32>,
}

/// A GPU in a node view, with its latest sample and holder.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Gpu {
    /// The device index.
    pub index: u32,
    /// The device UUID.
    pub uuid: String,
    /// The model name.
    pub model: String,
    /// Total memory, MiB.
    pub memory_mib: u64,
    /// Topology domain (see [`GpuInfo::domain`]), when the node reports one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<u32>,
    /// Whole GPU, MIG instance or shard.
    #[serde(default, skip_serializing_if = "GpuKind::is_gpu")]
    pub kind: GpuKind,
    /// The physical GPU of a MIG instance or shard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<u32>,
    /// A job holds it (whether or not the caller may see which).
    #[serde(default)]
    pub allocated: bool,
    /// The job holding it, when the caller may see that job (admins and operators see
    /// every job; a user their own and their coordinated accounts'). Another tenant's
    /// job is left out, as it is everywhere: an invisible job answers like an absent one.
    pub job_id: Option<i64>,
    /// Latest utilisation, percent (left out, like `job_id`, while a job the caller may
    /// not see holds it).
    pub utilization_pct: Option<u32>,
    /// Latest memory in use, MiB (left out like `utilization_pct`).
    pub memory_used_mib: Option<u64>,
}

/// A node, as `GET /v1/nodes` shows it.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Node {
    /// The node name (`node-1`).
    pub name: String,
    /// The state (IDLE/MIXED/ALLOCATED are derived from its allocations).
    pub state: NodeState,
    /// Why it is drained or down.
    pub reason: Option<String>,
    /// Who set the reason (Slurm's `REASON_UID`, sinfo's `%u`): the operator who drained
    /// the node, or `slurm` for the reasons Berth sets itself (`Not responding`, `Kill task
    /// failed`, a GPU fault …).
    #[serde(default)]
    pub reason_user: Option<String>,
    /// When the reason was set (sinfo's `%H`).
    #[serde(default)]
    pub reason_time: Option<DateTime<Utc>>,
    /// CPUs (Slurm's CPUTot): the configured value, else what the worker reported.
    pub cpus: u32,
    /// Memory (Slurm's RealMemory), MiB: the configured value, else what the worker
    /// reported.
    pub memory_mib: u64,
    /// Features for `--constraint` (Slurm's AvailableFeatures).
    pub features: Vec<String>,
    /// CPUs jobs may use (Slurm's CPUEfctv): `cpus` less `core_spec_count`.
    #[serde(default)]
    pub cpus_effective: u32,
    /// CPUs held by running jobs (Slurm's CPUAlloc).
    #[serde(default)]
    pub cpus_allocated: u32,
    /// Memory jobs may use, MiB: `memory_mib` less `mem_spec_limit_mib`.
    #[serde(default)]
    pub memory_effective_mib: u64,
    /// Memory held by running jobs, MiB (Slurm's AllocMem).
    #[serde(default)]
    pub memory_allocated_mib: u64,
    /// Slurm's Weight: nodes of lower weight are placed first (default 1).
    #[serde(default = "default_weight")]
    pub weight: u32,
    /// Slurm's CoreSpecCount: CPUs kept for the system.
    #[serde(default)]
    pub core_spec_count: u32,
    /// Slurm's MemSpecLimit, MiB: memory kept for the system.
    #[serde(default)]
    pub mem_spec_limit_mib: u64,
    /// Slurm's Sockets: the sockets its worker reported, else `cpus` (what Slurm shows
    /// for a node configured with CPUs alone).
    #[serde(default)]
    pub sockets: u32,
    /// Slurm's CoresPerSocket (1 when its worker reported no layout).
    #[serde(default)]
    pub cores_per_socket: u32,
    /// Slurm's ThreadsPerCore: hardware threads per core (1 when its worker reported no
    /// layout). Where it is above 1, jobs are given whole cores.
    #[serde(default)]
    pub threads_per_core: u32,
    /// Its GPUs by index.
    pub gpus: Vec<Gpu>,
    /// GPUs held by live allocations.
    pub gpus_allocated: u32,
    /// The last time the worker synced.
    pub last_heartbeat: Option<DateTime<Utc>>,
    /// Partitions it belongs to.
    pub partitions: Vec<String>,
    /// The cloud pool whose node slot it is (absent: a static node).
    #[serde(default)]
    pub pool: Option<String>,
    /// The provider's id of its instance, while it has one.
    #[serde(default)]
    pub instance_id: Option<String>,
    /// Its instance's type (`p5.48xlarge`).
    #[serde(default)]
    pub instance_type: Option<String>,
    /// How its instance is bought.
    #[serde(default)]
    pub market: Option<crate::pool::Market>,
    /// Its instance's availability zone.
    #[serde(default)]
    pub zone: Option<String>,
}

/// A list of nodes.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct NodeList {
    /// Nodes by name.
    pub items: Vec<Node>,
}

/// A partition, as `GET /v1/partitions` shows it.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Partition {
    /// The name.
    pub name: String,
    /// Whether jobs that name no partition land here.
    pub is_default: bool,
    /// The time limit given to jobs that set none, seconds (`None`: unlimited).
    pub default_time: Option<u64>,
    /// The largest time limit a job may ask, seconds (`None`: unlimited).
    pub max_time: Option<u64>,
    /// Member nodes; empty means every node.
    pub nodes: Vec<String>,
    /// Nodes currently in it.
    pub total_nodes: u32,
    /// GPUs currently in it.
    pub total_gpus: u32,
    /// `PriorityTier`: the partition factor of the multifactor priority.
    #[serde(default)]
    pub priority_tier: u32,
    /// `MaxNodes` per job (`None`: unlimited).
    #[serde(default)]
    pub max_nodes: Option<u32>,
    /// `AllowAccounts`; empty means every account.
    #[serde(default)]
    pub allowed_accounts: Vec<String>,
    /// `AllowQos`; empty means every QOS.
    #[serde(default)]
    pub allowed_qos: Vec<String>,
    /// `DefCpuPerGPU`: CPUs per GPU for jobs that ask GPUs but no CPUs (`None`: one per
    /// task).
    #[serde(default)]
    pub def_cpu_per_gpu: Option<u32>,
    /// `DefMemPerGPU`, MiB: memory per GPU for GPU jobs that ask no memory.
    #[serde(default)]
    pub def_mem_per_gpu: Option<u64>,
    /// `DefMemPerCPU`, MiB: memory per CPU for jobs that ask no memory.
    #[serde(default)]
    pub def_mem_per_cpu: Option<u64>,
    /// `MaxMemPerNode`, MiB: the most memory a job may have on one node.
    #[serde(default)]
    pub max_mem_per_node: Option<u64>,
}

/// `PUT /v1/partitions/{name}`: a partition's whole definition, as Slurm's `PartitionName=`
/// line in slurm.conf or `scontrol create partition` take it. Absent fields take their
/// defaults.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PartitionSpec {
    /// Jobs that name no partition land here (`Default=YES`); the previous default stops
    /// being one.
    #[serde(default)]
    pub is_default: bool,
    /// The time limit given to jobs that set none, seconds (`DefaultTime`; absent:
    /// unlimited).
    #[serde(default)]
    pub default_time: Option<u64>,
    /// The largest time limit a job may ask, seconds (`MaxTime`; absent: unlimited).
    #[serde(default)]
    pub max_time: Option<u64>,
    /// Member node names (`Nodes`); empty means every node. Names need not be registered
    /// yet (a node that joins later is a member).
    #[serde(default)]
    pub nodes: Vec<String>,
    /// `PriorityTier`, default 1.
    #[serde(default = "default_priority_tier")]
    pub priority_tier: u32,
    /// `MaxNodes` per job (absent: unlimited).
    #[serde(default)]
    pub max_nodes: Option<u32>,
    /// `AllowAccounts` (existing accounts); empty means every account.
    #[serde(default)]
    pub allowed_accounts: Vec<String>,
    /// `AllowQos` (existing QOS); empty means every QOS.
    #[serde(default)]
    pub allowed_qos: Vec<String>,
    /// `DefCpuPerGPU`: CPUs per GPU given to a job that asks GPUs but neither
    /// `-c/--cpus-per-task` nor `--cpus-per-gpu` (absent: one CPU per task).
    #[serde(default)]
    pub def_cpu_per_gpu: Option<u32>,
    /// `DefMemPerGPU`, MiB: memory per GPU given to a GPU job that asks no memory.
    #[serde(default)]
    pub def_mem_per_gpu: Option<u64>,
    /// `DefMemPerCPU`, MiB: memory per CPU given to a job that asks no memory (and no
    /// GPUs where `DefMemPerGPU` is set).
    #[serde(default)]
    pub def_mem_per_cpu: Option<u64>,
    /// `MaxMemPerNode`, MiB: a job asking more memory on a node is refused at submission;
    /// defaults are capped to it.
    #[serde(default)]
    pub max_mem_per_node: Option<u64>,
}

fn default_priority_tier() -> u32 {
    1
}

fn default_weight() -> u32 {
    1
}

/// Reads a field that may be absent (leave the value), `null` (clear it) or a value.
fn patch_field<'de, D, T>(de: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(de).map(Some)
}

/// `PATCH /v1/nodes/{name}`: what an operator configures for a node, as slurm.conf's node
/// line (and `scontrol update NodeName=…`) does. A field left out keeps its value; `null`
/// clears the configured value, so the worker's reported one applies again (Weight: 1;
/// the reserves: 0). Configured values survive the worker's re-registration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeUpdate {
    /// Slurm's CPUs: logical CPUs (sockets × cores × threads), 1 or more.
    #[serde(
        default,
        deserialize_with = "patch_field",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<u32>, nullable)]
    pub cpus: Option<Option<u32>>,
    /// Slurm's RealMemory, MiB, 1 or more.
    #[serde(
        default,
        deserialize_with = "patch_field",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<u64>, nullable)]
    pub memory_mib: Option<Option<u64>>,
    /// Slurm's Features (`h100`, `ib`): letters, digits, `_`, `.`, `-`; an empty list
    /// configures none.
    #[serde(
        default,
        deserialize_with = "patch_field",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<Vec<String>>, nullable)]
    pub features: Option<Option<Vec<String>>>,
    /// Slurm's Weight: nodes of lower weight are placed first.
    #[serde(
        default,
        deserialize_with = "patch_field",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<u32>, nullable)]
    pub weight: Option<Option<u32>>,
    /// Slurm's CoreSpecCount: CPUs kept for the system (fewer than the node's CPUs).
    #[serde(
        default,
        deserialize_with = "patch_field",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<u32>, nullable)]
    pub core_spec_count: Option<Option<u32>>,
    /// Slurm's MemSpecLimit, MiB: memory kept for the system (less than RealMemory).
    #[serde(
        default,
        deserialize_with = "patch_field",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<u64>, nullable)]
    pub mem_spec_limit_mib: Option<Option<u64>>,
}

/// `POST /v1/nodes/{name}/drain`: why the node is drained (scontrol's `Reason=`, required
/// as in Slurm).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeDrain {
    /// The reason shown by `berth nodes` and `sinfo -R` (1-256 characters).
    pub reason: String,
}

/// A list of partitions.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct PartitionList {
    /// Partitions by name.
    pub items: Vec<Partition>,
}

/// `POST /v1/nodes/register`: a worker announces its node and inventory. Registering
/// again (after a restart) updates the inventory.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeRegister {
    /// The node name, unique in the cluster.
    pub name: String,
    /// The host's name, for information.
    pub hostname: String,
    /// CPUs.
    pub cpus: u32,
    /// Memory, MiB.
    pub memory_mib: u64,
    /// Features for `--constraint`.
    #[serde(default)]
    pub features: Vec<String>,
    /// Slurm's Weight, when the worker declares one (operators' configured weight wins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<u32>,
    /// Per CPU id (`0 .. cpus`), its topology domain, numbered as GPU domains are
    /// ([`GpuInfo`]'s `domain`: the NUMA node); empty when unknown. The scheduler gives a
    /// job CPUs of its GPUs' domains first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_domains: Vec<u32>,
    /// Per CPU id (`0 .. cpus`), the core it is on (cores numbered over the whole node:
    /// the hardware threads of one core share a number); empty when unknown (every CPU
    /// a core of its own). On a node whose cores have several threads the scheduler
    /// gives jobs whole cores ([`crate::cores`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_cores: Vec<u32>,
    /// Per CPU id (`0 .. cpus`), its socket (physical package, numbered from 0); empty
    /// when unknown. Shown as Slurm's `Sockets=`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_sockets: Vec<u32>,
    /// GPUs.
    pub gpus: Vec<GpuInfo>,
}
