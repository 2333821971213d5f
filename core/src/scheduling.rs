//! Wire types of the scheduling controls: `berth update job` (scontrol update's role).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `PATCH /v1/jobs/{id}`: changes to a pending job (and the pending tasks of its array);
/// of a running job only `time_limit` may change. Absent fields are left as they are.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct JobUpdate {
    /// `--nice`: lowers the priority by this much; a negative value (raising it) needs
    /// the admin or operator role.
    pub nice: Option<i32>,
    /// An administrator's priority adjustment, added to the multifactor priority (admin
    /// or operator only).
    pub priority_adjust: Option<i64>,
    /// The time limit, Slurm's `--time` format (`30`, `1:00:00`, `2-0`); raising it needs
    /// the admin or operator role. The only change a running job takes (counted from its
    /// start; its nodes enforce it from their next sync).
    pub time_limit: Option<String>,
    /// `--begin` (`now+1hour`, `2026-12-01T10:00` …).
    pub begin: Option<String>,
}
