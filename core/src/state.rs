//! Job and node states, with Slurm's names (`squeue`'s long and compact forms).
//!
//! A job moves PENDING → RUNNING → one terminal state; PENDING may also go straight to
//! CANCELLED. Terminal states never change again (a requeue, in a later issue, makes a
//! new run of the same job id and is the one exception, going back to PENDING).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use utoipa::ToSchema;

/// A job's state, as Slurm names it (`JOB_STATE` in `squeue -l`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum JobState {
    /// Queued, waiting for resources or a condition (see the pending reason).
    Pending,
    /// Allocated and started on its nodes.
    Running,
    /// Suspended by an administrator.
    Suspended,
    /// Finished, its processes still being cleaned up.
    Completing,
    /// Ended with exit code 0.
    Completed,
    /// Ended with a non-zero exit code or a launch failure.
    Failed,
    /// Killed at its time limit.
    Timeout,
    /// Cancelled by a user or an administrator.
    Cancelled,
    /// Ended because a node it ran on failed.
    NodeFail,
    /// Ended by preemption.
    Preempted,
    /// Killed by the out-of-memory handler.
    OutOfMemory,
    /// Its nodes failed to boot.
    BootFail,
    /// Ended at its deadline.
    Deadline,
}

impl JobState {
    /// Every state, in declaration order.
    pub const ALL: [JobState; 13] = [
        JobState::Pending,
        JobState::Running,
        JobState::Suspended,
        JobState::Completing,
        JobState::Completed,
        JobState::Failed,
        JobState::Timeout,
        JobState::Cancelled,
        JobState::NodeFail,
        JobState::Preempted,
        JobState::OutOfMemory,
        JobState::BootFail,
        JobState::Deadline,
    ];

    /// Slurm's long name, as stored in the database (`NODE_FAIL`).
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Pending => "PENDING",
            JobState::Running => "RUNNING",
            JobState::Suspended => "SUSPENDED",
            JobState::Completing => "COMPLETING",
            JobState::Completed => "COMPLETED",
            JobState::Failed => "FAILED",
            JobState::Timeout => "TIMEOUT",
            JobState::Cancelled => "CANCELLED",
            JobState::NodeFail => "NODE_FAIL",
            JobState::Preempted => "PREEMPTED",
            JobState::OutOfMemory => "OUT_OF_MEMORY",
            JobState::BootFail => "BOOT_FAIL",
            JobState::Deadline => "DEADLINE",
        }
    }

    /// Slurm's compact code, as `squeue` prints in its ST column (`PD`, `R`, `CD` …).
    pub fn compact(self) -> &'static str {
        match self {
            JobState::Pending => "PD",
            JobState::Running => "R",
            JobState::Suspended => "S",
            JobState::Completing => "CG",
            JobState::Completed => "CD",
            JobState::Failed => "F",
            JobState::Timeout => "TO",
            JobState::Cancelled => "CA",
            JobState::NodeFail => "NF",
            JobState::Preempted => "PR",
            JobState::OutOfMemory => "OOM",
            JobState::BootFail => "BF",
            JobState::Deadline => "DL",
        }
    }

    /// True for states a job never leaves (short of a requeue).
    pub fn is_terminal(self) -> bool {
        !matches!(
            self,
            JobState::Pending | JobState::Running | JobState::Suspended | JobState::Completing
        )
    }
}

impl fmt::Display for JobState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error of parsing an unknown state name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown state {0:?}")]
pub struct UnknownState(pub String);

impl FromStr for JobState {
    type Err = UnknownState;

    /// Accepts the long name (`RUNNING`, `node_fail`) or the compact code (`R`, `PD`),
    /// case-insensitively.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let up = s.trim().to_ascii_uppercase();
        JobState::ALL
            .into_iter()
            .find(|st| st.as_str() == up || st.compact() == up)
            .ok_or_else(|| UnknownState(s.to_string()))
    }
}

/// A node's state, as `sinfo` names it. IDLE, MIXED and ALLOCATED are derived from its
/// allocations; the others are set by an operator or by failure detection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum NodeState {
    /// Registered and reporting, nothing allocated.
    Idle,
    /// Some of its GPUs are allocated.
    Mixed,
    /// All of its GPUs (or the whole node) are allocated.
    Allocated,
    /// Running jobs finish; no new job is placed.
    Draining,
    /// Drained: no jobs, no new ones.
    Drained,
    /// Not reporting, or failed.
    Down,
    /// A cloud node that is not running.
    PoweredDown,
    /// A cloud node being started.
    PoweringUp,
    /// A cloud node being stopped.
    PoweringDown,
}

impl NodeState {
    /// An available node's state from what it holds, as Slurm counts it: IDLE with no
    /// live allocation (`busy`), else ALLOCATED when every usable CPU is allocated
    /// (`cpus_full`) and MIXED when some are not, whatever its GPUs. A node whose CPUs
    /// are not known (`cpus_known` false) is ALLOCATED when it has GPUs and every one is
    /// allocated (`gpus_allocated` of `gpus`).
    pub fn from_holdings(
        busy: bool,
        cpus_known: bool,
        cpus_full: bool,
        gpus: u64,
        gpus_allocated: u64,
    ) -> NodeState {
        if gpus_allocated == 0 && !busy {
            NodeState::Idle
        } else if cpus_full {
            NodeState::Allocated
        } else if cpus_known {
            NodeState::Mixed
        } else if gpus_allocated > 0 && gpus_allocated >= gpus {
            NodeState::Allocated
        } else {
            NodeState::Mixed
        }
    }

    /// Every state, in declaration order.
    pub const ALL: [NodeState; 9] = [
        NodeState::Idle,
        NodeState::Mixed,
        NodeState::Allocated,
        NodeState::Draining,
        NodeState::Drained,
        NodeState::Down,
        NodeState::PoweredDown,
        NodeState::PoweringUp,
        NodeState::PoweringDown,
    ];

    /// `sinfo`'s long name, as stored in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeState::Idle => "IDLE",
            NodeState::Mixed => "MIXED",
            NodeState::Allocated => "ALLOCATED",
            NodeState::Draining => "DRAINING",
            NodeState::Drained => "DRAINED",
            NodeState::Down => "DOWN",
            NodeState::PoweredDown => "POWERED_DOWN",
            NodeState::PoweringUp => "POWERING_UP",
            NodeState::PoweringDown => "POWERING_DOWN",
        }
    }

    /// `sinfo`'s short form (`idle`, `mix`, `alloc`, `drng`, `drain`, `down` …).
    pub fn short(self) -> &'static str {
        match self {
            NodeState::Idle => "idle",
            NodeState::Mixed => "mix",
            NodeState::Allocated => "alloc",
            NodeState::Draining => "drng",
            NodeState::Drained => "drain",
            NodeState::Down => "down",
            NodeState::PoweredDown => "idle~",
            NodeState::PoweringUp => "idle#",
            NodeState::PoweringDown => "idle%",
        }
    }
}

impl fmt::Display for NodeState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for NodeState {
    type Err = UnknownState;

    /// Accepts the long name, case-insensitively.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let up = s.trim().to_ascii_uppercase();
        NodeState::ALL
            .into_iter()
            .find(|st| st.as_str() == up)
            .ok_or_else(|| UnknownState(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_is_allocated_by_its_cpus_as_in_slurm() {
        use NodeState::*;
        // (busy, cpus known, cpus full, gpus, gpus allocated)
        for (args, want) in [
            ((false, true, false, 4, 0), Idle),
            ((true, true, false, 4, 4), Mixed),
            ((true, true, false, 0, 0), Mixed),
            ((true, true, true, 4, 1), Allocated),
            ((true, false, false, 4, 4), Allocated),
            ((true, false, false, 4, 2), Mixed),
        ] {
            let (busy, known, full, gpus, held) = args;
            assert_eq!(
                NodeState::from_holdings(busy, known, full, gpus, held),
                want,
                "{args:?}"
            );
        }
    }

    #[test]
    fn job_states_round_trip_through_their_names_and_codes() {
        for st in JobState::ALL {
            assert_eq!(st.as_str().parse::<JobState>().unwrap(), st);
            assert_eq!(st.compact().parse::<JobState>().unwrap(), st);
            let json = serde_json::to_string(&st).unwrap();
            assert_eq!(json, format!("\"{}\"", st.as_str()));
        }
        assert!("RUNNIN".parse::<JobState>().is_err());
        assert!(JobState::Timeout.is_terminal());
        assert!(!JobState::Pending.is_terminal());
    }

    #[test]
    fn node_states_round_trip() {
        for st in NodeState::ALL {
            assert_eq!(st.as_str().parse::<NodeState>().unwrap(), st);
        }
    }
}
