//! A job's specification: every option `sbatch` accepts that Berth knows, as typed fields.
//!
//! The same struct is what `#SBATCH` lines and command-line options parse into
//! ([`crate::sbatch`]) and what a REST client may send directly as a structured spec.
//! Options that later parts of Berth implement (arrays, dependencies, signals …) are
//! stored and round-trip even where the scheduler does not act on them yet.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The most memory a job may ask for, MiB (1 PiB): beyond any node, and small enough
/// that memory × CPUs or GPUs on a node never overflows.
pub const MAX_MEMORY_MIB: u64 = 1 << 30;

/// The most node names `-w/--nodelist` or `-x/--exclude` may expand to.
pub const MAX_NODE_LIST: usize = 16_384;

/// `--open-mode`: whether output files are truncated or appended to when a job starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum OpenMode {
    /// Truncate the files (Slurm's default).
    Truncate,
    /// Append to the files (keeps earlier runs' output across requeues).
    Append,
}

/// A job's specification, field by field as `sbatch` names its options. Absent fields take
/// Slurm's defaults (one node, one task, the default partition's time limit).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct JobSpec {
    /// `-J/--job-name`.
    pub job_name: Option<String>,
    /// `-p/--partition`: one partition, or several separated by commas (`a,b`: the job
    /// starts in the first listed one where it can start; see [`JobSpec::partitions`]).
    pub partition: Option<String>,
    /// `-N/--nodes`: the minimum node count.
    pub nodes: Option<u32>,
    /// `-N/--nodes=min-max`: the maximum node count, when a range was given.
    pub nodes_max: Option<u32>,
    /// `-n/--ntasks`.
    pub ntasks: Option<u32>,
    /// `--ntasks-per-node`.
    pub ntasks_per_node: Option<u32>,
    /// `-c/--cpus-per-task`.
    pub cpus_per_task: Option<u32>,
    /// `--cpus-per-gpu`: CPUs for each GPU the job gets on a node.
    pub cpus_per_gpu: Option<u32>,
    /// `--mem`: memory per node in MiB (`0` means all of it, as in Slurm).
    pub mem_mib: Option<u64>,
    /// `--mem-per-cpu`, MiB.
    pub mem_per_cpu_mib: Option<u64>,
    /// `--mem-per-gpu`, MiB.
    pub mem_per_gpu_mib: Option<u64>,
    /// `--gres`, verbatim (`gpu:h100:4`); its GPU part also sets `gpus_per_node`/`gpu_type`.
    pub gres: Option<String>,
    /// The GPU type asked for by `--gres=gpu:TYPE:N` or `--gpus*=TYPE:N`.
    pub gpu_type: Option<String>,
    /// `-G/--gpus`: GPUs for the whole job.
    pub gpus: Option<u32>,
    /// `--gpus-per-node` (or the count of `--gres=gpu:N`, which is per node).
    pub gpus_per_node: Option<u32>,
    /// `--gpus-per-task`.
    pub gpus_per_task: Option<u32>,
    /// `-t/--time`, seconds. Absent: the partition's default. `Some(0)`: no limit
    /// (`--time=0`, `UNLIMITED`, `INFINITE`), which means the partition's maximum.
    pub time_limit: Option<u64>,
    /// `--time-min`, seconds.
    pub time_min: Option<u64>,
    /// `-o/--output`, a filename pattern (see [`crate::pattern`]).
    pub output: Option<String>,
    /// `-e/--error`, a filename pattern.
    pub error: Option<String>,
    /// `-D/--chdir`: the working directory of the batch script.
    pub chdir: Option<String>,
    /// `--exclusive`: no other job shares the nodes; with no GPU option, the job gets
    /// every GPU of each node.
    pub exclusive: bool,
    /// `-C/--constraint`: node features (`a100&nvlink`, `h100|a100`, `[ib1|ib2]`,
    /// `a100*2`; see [`crate::constraint`]).
    pub constraint: Option<String>,
    /// `-w/--nodelist`: nodes the job must be given (all of them), a host list
    /// (`node-[1-3],gpu7`).
    pub nodelist: Option<String>,
    /// `-x/--exclude`: nodes the job must not be given, a host list.
    pub exclude: Option<String>,
    /// `-A/--account`.
    pub account: Option<String>,
    /// `-q/--qos`.
    pub qos: Option<String>,
    /// `--comment`.
    pub comment: Option<String>,
    /// `--wckey`: stored and shown; Berth keeps no accounting by workload key (as Slurm
    /// with `TrackWCKey=no`, its default, ignores it).
    pub wckey: Option<String>,
    /// `--export` (`ALL`, `NONE`, or `[ALL,]NAME[=value],…`).
    pub export: Option<String>,
    /// `--open-mode`.
    pub open_mode: Option<OpenMode>,
    /// `-a/--array`, verbatim (`0-15:4%4`, `1,3,5`).
    pub array: Option<String>,
    /// `-d/--dependency`, verbatim (`afterok:12:13,singleton`).
    pub dependency: Option<String>,
    /// `--requeue` (true) or `--no-requeue` (false).
    pub requeue: Option<bool>,
    /// `--signal=[{R|B}:]SIG[@seconds]`, verbatim.
    pub signal: Option<String>,
    /// `-H/--hold`: submitted held.
    pub hold: bool,
    /// `-b/--begin`, verbatim (`now+1hour`, `2026-12-01T10:00`).
    pub begin: Option<String>,
    /// `--nice`: lowers priority by this amount (negative raises it, admins only).
    pub nice: Option<i32>,
    /// `--hint`.
    pub hint: Option<String>,
    /// `--reservation`.
    pub reservation: Option<String>,
    /// `--mail-type`.
    pub mail_type: Option<String>,
    /// `--mail-user`.
    pub mail_user: Option<String>,
    /// `--wait-all-nodes=0|1`.
    pub wait_all_nodes: Option<bool>,
    /// `-O/--overcommit`.
    pub overcommit: bool,
    /// `--wrap`: a command to run as the whole batch script.
    pub wrap: Option<String>,
    /// `--parsable`: the client prints only the job id.
    pub parsable: bool,
}

impl JobSpec {
    /// The partitions `-p` names, in order, without repeats (`a,b,a` → `a`, `b`); empty
    /// when none is named (the default partition). Blank items are dropped.
    pub fn partitions(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for p in self.partition.as_deref().unwrap_or_default().split(',') {
            let p = p.trim();
            if !p.is_empty() && !out.iter().any(|o| o == p) {
                out.push(p.to_string());
            }
        }
        out
    }
}
