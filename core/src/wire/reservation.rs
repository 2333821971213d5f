//! Reservations on the wire.

#[allow(unused_imports)]
use super::*;

/// `POST /v1/reservations`: an advance reservation, as Slurm's `scontrol create
/// reservation` takes it. Exactly one of `nodes`, `node_cnt` or `gpus` says what it holds;
/// at least one of `users` or `accounts` says who may use it; `end_time` or `duration`
/// says when it ends.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReservationCreate {
    /// `ReservationName`: 1-64 letters, digits, `_`, `.` or `-`, not starting with `-`.
    pub name: String,
    /// `StartTime`: `now`, `now+N[minutes|hours|days…]`, `YYYY-MM-DDTHH:MM[:SS]` (UTC) or
    /// RFC 3339; absent: now.
    #[serde(default)]
    pub start_time: Option<String>,
    /// `EndTime`, in the forms of `start_time`.
    #[serde(default)]
    pub end_time: Option<String>,
    /// `Duration`, Slurm's time format: `minutes`, `hours:minutes:seconds`,
    /// `days-hours[:minutes[:seconds]]`.
    #[serde(default)]
    pub duration: Option<String>,
    /// `Nodes`: a host list (`node-[1-2]`) or `ALL`.
    #[serde(default)]
    pub nodes: Option<String>,
    /// `NodeCnt`: this many whole nodes, picked at creation (idle ones first).
    #[serde(default)]
    pub node_cnt: Option<u32>,
    /// `TRES=gres/gpu:N`: this many GPUs, picked at creation (on as few nodes as they fit).
    #[serde(default)]
    pub gpus: Option<u32>,
    /// `PartitionName`: `node_cnt`, `gpus` and `ALL` pick from this partition's nodes.
    #[serde(default)]
    pub partition: Option<String>,
    /// `Users`: user names whose jobs may use it.
    #[serde(default)]
    pub users: Vec<String>,
    /// `Accounts`: accounts whose jobs may use it.
    #[serde(default)]
    pub accounts: Vec<String>,
    /// `Flags`.
    #[serde(default)]
    pub flags: Vec<crate::reservation::ReservationFlag>,
}

/// `PATCH /v1/reservations/{name}` (`scontrol update ReservationName=…`): the fields given
/// replace the reservation's; the rest stay. A new `start_time` without `end_time` or
/// `duration` keeps the duration; new `nodes`, `node_cnt` or `gpus` pick the held
/// resources again.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReservationUpdate {
    /// `StartTime`, as in [`ReservationCreate::start_time`].
    #[serde(default)]
    pub start_time: Option<String>,
    /// `EndTime`.
    #[serde(default)]
    pub end_time: Option<String>,
    /// `Duration`.
    #[serde(default)]
    pub duration: Option<String>,
    /// `Nodes`.
    #[serde(default)]
    pub nodes: Option<String>,
    /// `NodeCnt`.
    #[serde(default)]
    pub node_cnt: Option<u32>,
    /// `TRES=gres/gpu:N`.
    #[serde(default)]
    pub gpus: Option<u32>,
    /// `PartitionName`.
    #[serde(default)]
    pub partition: Option<String>,
    /// `Users`.
    #[serde(default)]
    pub users: Option<Vec<String>>,
    /// `Accounts`.
    #[serde(default)]
    pub accounts: Option<Vec<String>>,
    /// `Flags`.
    #[serde(default)]
    pub flags: Option<Vec<crate::reservation::ReservationFlag>>,
}

/// A node an advance reservation holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ReservationNode {
    /// The node name.
    pub name: String,
    /// The GPU indices held there (a GPU-count reservation); absent: the whole node.
    #[serde(default)]
    pub gpus: Option<Vec<u32>>,
}

/// An advance reservation, as `GET /v1/reservations/{name}` shows it. For `DAILY` and
/// `WEEKLY` ones, `start_time` and `end_time` are the current or next window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Reservation {
    /// `ReservationName`.
    pub name: String,
    /// The (current or next) window's start.
    pub start_time: DateTime<Utc>,
    /// The (current or next) window's end.
    pub end_time: DateTime<Utc>,
    /// Seconds.
    pub duration: u64,
    /// What it holds, node by node (by name).
    pub nodes: Vec<ReservationNode>,
    /// The nodes as a compressed host list (`node-[1-2]`).
    pub node_list: String,
    /// Nodes held (wholly or in part).
    pub node_cnt: u32,
    /// CPUs of the wholly held nodes.
    pub cpus: u32,
    /// GPUs held (all of a wholly held node's).
    pub gpus: u32,
    /// Slurm's `TRES=` (`cpu=8,gres/gpu=8`).
    pub tres: String,
    /// `PartitionName`.
    #[serde(default)]
    pub partition: Option<String>,
    /// `Users`.
    pub users: Vec<String>,
    /// `Accounts`.
    pub accounts: Vec<String>,
    /// `Flags`.
    pub flags: Vec<crate::reservation::ReservationFlag>,
    /// `ACTIVE` inside the window, else `INACTIVE`.
    pub state: String,
    /// Who created it.
    pub created_by: String,
}

/// `GET /v1/reservations`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ReservationList {
    /// The reservations the caller may see, by start time.
    pub items: Vec<Reservation>,
}
