//! The serde types of the slurmrestd `v0.0.44` subset Berth serves: only the fields Berth
//! fills or reads, with the names and shapes of the published document
//! (`v0.0.44_*` schemas of slurmrestd 25.11, see the module above). Absent fields are
//! left out of the JSON (every schema Berth answers with marks them optional).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Slurm's `uint32_no_val_struct`/`uint64_no_val_struct`/`uint16_no_val_struct`: a number
/// that may be unset (`set: false`) or infinite (`infinite: true`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct NoVal<T> {
    /// Whether `number` holds a value.
    pub set: bool,
    /// Whether the value is infinite (no limit).
    pub infinite: bool,
    /// The value (0 when unset or infinite).
    pub number: T,
}

impl<T: Default> NoVal<T> {
    /// A value.
    pub fn num(number: T) -> Self {
        NoVal {
            set: true,
            infinite: false,
            number,
        }
    }
    /// No value.
    pub fn unset() -> Self {
        NoVal {
            set: false,
            infinite: false,
            number: T::default(),
        }
    }
    /// Infinite (Slurm's `UNLIMITED`/`INFINITE`).
    pub fn infinite() -> Self {
        NoVal {
            set: false,
            infinite: true,
            number: T::default(),
        }
    }
    /// `Some(n)` as a value, `None` as unset.
    pub fn opt(number: Option<T>) -> Self {
        number.map_or_else(Self::unset, Self::num)
    }
    /// `Some(n)` as a value, `None` as infinite (a limit that may be absent).
    pub fn limit(number: Option<T>) -> Self {
        number.map_or_else(Self::infinite, Self::num)
    }
}

/// A `*_no_val_struct` in a request: slurmrestd takes the struct or a bare number.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum NoValIn {
    /// A bare number.
    Number(i64),
    /// `{set, infinite, number}`, each optional.
    Struct {
        /// Whether `number` holds a value (absent: it does when given).
        #[serde(default)]
        set: Option<bool>,
        /// Infinite.
        #[serde(default)]
        infinite: Option<bool>,
        /// The value.
        #[serde(default)]
        number: Option<i64>,
    },
}

/// What a [`NoValIn`] says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoValValue {
    /// Unset: leave as it is.
    Unset,
    /// Infinite.
    Infinite,
    /// A number.
    Number(i64),
}

impl NoValIn {
    /// The value it carries.
    pub fn value(&self) -> NoValValue {
        match self {
            NoValIn::Number(n) => NoValValue::Number(*n),
            NoValIn::Struct {
                set,
                infinite,
                number,
            } => {
                if *infinite == Some(true) {
                    NoValValue::Infinite
                } else if *set == Some(false) {
                    NoValValue::Unset
                } else {
                    match number {
                        Some(n) => NoValValue::Number(*n),
                        None => NoValValue::Unset,
                    }
                }
            }
        }
    }
}

/// `v0.0.44_openapi_meta`.
#[derive(Debug, Clone, Serialize)]
pub struct Meta {
    /// The plugin that answered.
    pub plugin: MetaPlugin,
    /// Who asked.
    pub client: MetaClient,
    /// CLI command (none).
    pub command: Vec<String>,
    /// The Slurm version this subset follows.
    pub slurm: MetaSlurm,
}

/// `meta.plugin`.
#[derive(Debug, Clone, Serialize)]
pub struct MetaPlugin {
    /// `openapi/slurmctld` or `openapi/slurmdbd`.
    #[serde(rename = "type")]
    pub plugin_type: String,
    /// The plugin's name.
    pub name: String,
    /// `data_parser/v0.0.44`.
    pub data_parser: String,
    /// Where accounting lives.
    pub accounting_storage: String,
}

/// `meta.client`.
#[derive(Debug, Clone, Serialize)]
pub struct MetaClient {
    /// The client's address.
    pub source: String,
    /// The authenticated user (empty when none).
    pub user: String,
    /// The group (Berth has none: empty).
    pub group: String,
}

/// `meta.slurm`.
#[derive(Debug, Clone, Serialize)]
pub struct MetaSlurm {
    /// `{major, micro, minor}` as strings.
    pub version: BTreeMap<&'static str, &'static str>,
    /// `25.11.7`.
    pub release: String,
    /// The cluster's name.
    pub cluster: String,
}

/// `v0.0.44_openapi_error`.
#[derive(Debug, Clone, Serialize)]
pub struct OpenapiError {
    /// What went wrong, in words (Berth's detail).
    pub description: String,
    /// Slurm's errno (`2017` ESLURM_INVALID_JOB_ID …).
    pub error_number: i32,
    /// `slurm_strerror()` of that number.
    pub error: String,
    /// Where: the field, parameter or operation.
    pub source: String,
}

/// `v0.0.44_openapi_warning`.
#[derive(Debug, Clone, Serialize)]
pub struct OpenapiWarning {
    /// What to know.
    pub description: String,
    /// Where.
    pub source: String,
}

/// A response: `meta`, `errors`, `warnings` and the operation's payload fields.
#[derive(Debug, Clone, Serialize)]
pub struct OpenapiResp<T: Serialize> {
    /// The payload (`jobs`, `nodes` …), flattened into the object.
    #[serde(flatten)]
    pub payload: T,
    /// Slurm meta values.
    pub meta: Meta,
    /// Errors (empty on success).
    pub errors: Vec<OpenapiError>,
    /// Warnings.
    pub warnings: Vec<OpenapiWarning>,
}

/// `v0.0.44_controller_ping`.
#[derive(Debug, Clone, Serialize)]
pub struct ControllerPing {
    /// The controller: the leading scheduler's identity.
    pub hostname: String,
    /// `UP` or `DOWN`.
    pub pinged: String,
    /// Whether it answered.
    pub responding: bool,
    /// Microseconds the check took.
    pub latency: i64,
    /// `primary`.
    pub mode: String,
    /// Whether it is the primary.
    pub primary: bool,
}

/// `v0.0.44_process_exit_code_verbose`.
#[derive(Debug, Clone, Serialize)]
pub struct ExitCode {
    /// `PENDING`, `SUCCESS`, `ERROR`, `SIGNALED`.
    pub status: Vec<&'static str>,
    /// The exit status.
    pub return_code: NoVal<i64>,
    /// The signal that ended it.
    pub signal: ExitSignal,
}

/// `process_exit_code_verbose.signal`.
#[derive(Debug, Clone, Serialize)]
pub struct ExitSignal {
    /// The number.
    pub id: NoVal<i64>,
    /// The name (`SIGKILL`), empty when none.
    pub name: String,
}

/// `v0.0.44_job_info` (the fields Berth fills).
#[derive(Debug, Clone, Default, Serialize)]
pub struct JobInfo {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub array_job_id: Option<NoVal<i64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub array_task_id: Option<NoVal<i64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub array_task_string: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch_flag: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch_host: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpus_per_task: Option<NoVal<i64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dependency: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub derived_exit_code: Option<ExitCode>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eligible_time: Option<NoVal<i64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_time: Option<NoVal<i64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub excluded_nodes: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<ExitCode>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub features: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_state: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nodes: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nice: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpus: Option<NoVal<i64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_count: Option<NoVal<i64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tasks: Option<NoVal<i64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tasks_per_node: Option<NoVal<i64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_per_cpu: Option<NoVal<i64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_per_node: Option<NoVal<i64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hold: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<NoVal<i64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qos: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub required_nodes: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requeue: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restart_cnt: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resv_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_time: Option<NoVal<i64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state_description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub standard_output: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub standard_error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stdout_expanded: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stderr_expanded: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub submit_time: Option<NoVal<i64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_limit: Option<NoVal<i64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_minimum: Option<NoVal<i64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tres_per_node: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tres_per_job: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tres_per_task: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tres_req_str: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tres_alloc_str: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_working_directory: Option<String>,
}

/// `v0.0.44_node` (the fields Berth fills).
#[derive(Debug, Clone, Serialize)]
pub struct NodeInfo {
    pub name: String,
    pub hostname: String,
    pub address: String,
    pub cluster_name: String,
    pub state: Vec<String>,
    pub reason: String,
    /// When the reason was set (Unix seconds; unset without one or before Berth kept it).
    pub reason_changed_at: NoVal<i64>,
    /// Who set the reason (`slurm` for Berth's own); empty when unknown.
    pub reason_set_by_user: String,
    pub cpus: i64,
    /// Sockets (the CPUs where the worker reported no layout).
    pub sockets: i64,
    /// Cores per socket.
    pub cores: i64,
    /// Hardware threads per core.
    pub threads: i64,
    pub boards: i64,
    pub effective_cpus: i64,
    pub alloc_cpus: i64,
    pub alloc_idle_cpus: i64,
    pub specialized_cores: i64,
    pub real_memory: i64,
    pub alloc_memory: i64,
    pub specialized_memory: i64,
    pub features: Vec<String>,
    pub active_features: Vec<String>,
    pub gres: String,
    pub gres_used: String,
    pub partitions: Vec<String>,
    pub weight: i64,
    pub tres: String,
    pub tres_used: String,
    pub last_busy: NoVal<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance_type: Option<String>,
}

/// `v0.0.44_reservation_info` (the fields Berth fills).
#[derive(Debug, Clone, Serialize)]
pub struct ReservationInfo {
    pub name: String,
    pub accounts: String,
    pub users: String,
    pub core_count: i64,
    pub node_count: i64,
    pub node_list: String,
    pub partition: String,
    pub start_time: NoVal<i64>,
    pub end_time: NoVal<i64>,
    pub flags: Vec<String>,
    pub tres: String,
}

/// `v0.0.44_tres`.
#[derive(Debug, Clone, Serialize)]
pub struct Tres {
    /// `cpu`, `mem`, `node`, `billing`, `gres`.
    #[serde(rename = "type")]
    pub tres_type: String,
    /// `gpu` for `gres`, else empty.
    pub name: String,
    /// Slurm's fixed ids: 1 cpu, 2 mem, 4 node, 5 billing; GRES get 1001 and up.
    pub id: i32,
    /// The count (MiB for `mem`).
    pub count: i64,
}

/// `v0.0.44_assoc_short`.
#[derive(Debug, Clone, Serialize)]
pub struct AssocShort {
    /// The account.
    pub account: String,
    /// The cluster.
    pub cluster: String,
    /// The partition (empty: any).
    pub partition: String,
    /// The user.
    pub user: String,
}

/// `v0.0.44_coord`.
#[derive(Debug, Clone, Serialize)]
pub struct Coord {
    /// The account coordinated (in an account's list: the coordinator's name).
    pub name: String,
    /// Set directly rather than inherited.
    pub direct: bool,
}
