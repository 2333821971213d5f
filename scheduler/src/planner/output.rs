//! The planner's decisions: starts, reservations, preemptions and pending reasons.

use super::*;

/// One node's share of a start or reservation.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Placement {
    /// Node id.
    pub node_id: i64,
    /// GPU indices.
    pub gpus: Vec<u32>,
    /// CPUs (a count; the commit picks the cores).
    pub cpus: u32,
    /// Memory, MiB.
    pub mem_mib: u64,
}

/// A job to start now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Start {
    /// Job id (an array's master id for an array task).
    pub job_id: i64,
    /// The array task to start, for an array.
    pub array_task_id: Option<u32>,
    /// One placement per node, in node-index order (the first runs the batch script).
    pub placements: Vec<Placement>,
    /// `--exclusive`.
    pub exclusive: bool,
    /// Its priority.
    pub priority: i64,
    /// A shorter time limit it starts with (seconds, at least its `--time-min`), when
    /// backfill could start it only so; `None`: its own limit.
    pub time_limit: Option<i64>,
}

/// A planned start of a blocked job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reservation {
    /// Job id.
    pub job_id: i64,
    /// Planned start, seconds since the epoch.
    pub start: i64,
    /// Planned end (start + limit), or [`FOREVER`].
    pub end: i64,
    /// Where.
    pub placements: Vec<Placement>,
}

/// A job left pending.
#[derive(Debug, Clone, PartialEq)]
pub struct Waiting {
    /// Job id.
    pub job_id: i64,
    /// Slurm's reason name.
    pub reason: String,
    /// Its reservation's start, when it has one.
    pub expected_start: Option<i64>,
    /// Its priority.
    pub priority: i64,
}

/// A running job to stop so that a higher one can start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preemption {
    /// The running job.
    pub victim: i64,
    /// The pending job it makes room for.
    pub preemptor: i64,
    /// What happens to the victim (its QOS's `PreemptMode`).
    pub mode: PreemptMode,
    /// Seconds from its SIGTERM to its kill (its QOS's `GraceTime`).
    pub grace_time: i64,
}

/// The planner's decisions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    /// Running jobs to preempt, grouped by preemptor in priority order.
    pub preemptions: Vec<Preemption>,
    /// Jobs to start, in priority order.
    pub starts: Vec<Start>,
    /// Jobs left pending, in priority order.
    pub pending: Vec<Waiting>,
    /// Reservations, in priority order.
    pub reservations: Vec<Reservation>,
}

impl Plan {
    /// The pending entry of a job.
    pub fn waiting(&self, job_id: i64) -> Option<&Waiting> {
        self.pending.iter().find(|w| w.job_id == job_id)
    }
}
