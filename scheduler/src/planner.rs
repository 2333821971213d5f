//! The planner: a pure function from a snapshot of the cluster and the queue (with `now`
//! in it) to the jobs to start now, each on concrete nodes and GPU indices, reservations
//! (a planned start on concrete GPUs) for the highest blocked jobs, and a pending reason
//! with Slurm's name for every job it leaves waiting. No I/O, no clock.
//!
//! Passes:
//! 1. **priority**: every pending job gets Slurm's multifactor priority
//!    ([`berth_core::priority`]); the queue is ordered by it (ties: submit time, id), or
//!    by submit time alone under [`QueueOrder::Submit`];
//! 2. **eligibility**: held jobs (`JobHeldUser`/`JobHeldAdmin`), jobs whose `--begin` is
//!    ahead (`BeginTime`), whose dependencies wait (`Dependency`) or never can be met
//!    (`DependencyNeverSatisfied`), whose array is at its `%LIMIT`
//!    (`JobArrayTaskLimit`) or who ask more than their partition can ever give
//!    (`PartitionNodeLimit`, `ReqNodeNotAvail`) are passed over;
//! 3. **placement** on a timeline of every node's GPUs, CPUs and memory: running
//!    allocations hold theirs until start + time limit (at least until `now + 1`), jobs
//!    started in this pass likewise, reservations from their planned start to start +
//!    limit, and advance reservations ([`AdvanceReservation`]) over their windows against
//!    every job but their own. A job starts now when `nodes` distinct nodes can hold it
//!    over `[now, now + limit)` (its GPUs, its CPUs and memory per node beside what the
//!    overlapping intervals hold) without touching any of those intervals, choosing the
//!    nodes of lowest `Weight` first, then those with the fewest usable GPUs (best fit,
//!    ties by name), and the lowest free GPU indices of each; `-w` nodes are always among
//!    them and `-x` nodes never; a gang is placed whole or not at all. A job of an
//!    advance reservation runs only on its nodes and inside one of its windows (reason
//!    `Reservation` before it; `ReservationDeleted` when it is gone), anywhere and any
//!    time under `FLEX`; a blocked job with `--time-min` starts now with the longest
//!    shorter limit that fits;
//! 4. **backfill**: a job that cannot start now, among the first `backfill_depth` such
//!    jobs, gets a reservation at the earliest interval end where it fits. Because a
//!    later job may start now only where it touches no reservation, no backfilled job
//!    delays a reservation. A blocked job that would fit if it were not for a higher
//!    job's reservation waits with reason `Priority`, else `Resources`.
//!
//! 5. **preemption**: a blocked job (an array: its next task) whose QOS lists other QOS in its
//!    `preempt` list may preempt running jobs of those QOS (past their
//!    `preempt_exempt_time`; never of its own QOS, nor of a QOS that may preempt its own,
//!    so two QOS cannot preempt each other back and forth): the candidates are taken
//!    lowest QOS priority first, youngest first, until the job fits now, then any victim
//!    it fits without is dropped again, so the set is minimal. A job that would not fit
//!    even with every candidate gone preempts nothing. The GPUs it frees are held for the
//!    preemptor (a reservation from now), so no lower job takes them, and while victims
//!    of an earlier preemption for a job are still being stopped
//!    ([`PendingJob::preempting`]) that job preempts nothing more.
//!
//! **Limits**: before a job (an array: each task) is placed, the running jobs and the
//! starts of this pass are counted against its QOS's limits (`QOSMaxGRESPerUser`, ...)
//! and against the association limit `GrpTRES` of its account and of every ancestor
//! account ([`AccountLimits`]: all jobs charged to an account's subtree together;
//! `AssocGrpCpuLimit`, `AssocGrpGRES`, `AssocGrpNodeLimit`). A job a limit holds back
//! waits with that reason: it gets no reservation, preempts nothing and is not taken
//! for a shape that does not fit.
//!
//! Without backfill ([`PlannerConfig::backfill`] false, strict FIFO) nothing below the
//! first blocked job starts.

mod memory;

use berth_core::constraint::Constraint;
use berth_core::priority::{
    self, BillingWeights, PriorityFactors, PriorityInputs, PriorityWeights,
};
pub use berth_core::qos::PreemptMode;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// Hashes a job id with one multiply (Fibonacci hashing) and a shift: sets of job ids are
/// probed for every interval a preemption weighs, where SipHash was most of the time. Job
/// ids are the database's sequence numbers, not input a user chooses.
#[derive(Debug, Default, Clone, Copy)]
struct JobIdHasher(u64);

impl std::hash::Hasher for JobIdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        let h = (self.0 ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = h ^ (h >> 29);
    }

    fn write_i64(&mut self, n: i64) {
        self.write_u64(n as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A set of job ids.
type JobIds = HashSet<i64, std::hash::BuildHasherDefault<JobIdHasher>>;

/// A map by job id.
type JobIdMap<V> = HashMap<i64, V, std::hash::BuildHasherDefault<JobIdHasher>>;

/// "Never": the end of an interval with no time limit.
pub const FOREVER: i64 = i64::MAX;

/// How the queue is ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueOrder {
    /// Multifactor priority, then submit time (Slurm's `priority/multifactor`).
    Multifactor,
    /// Submit time only (`priority/basic`, FIFO).
    Submit,
}

/// The planner's knobs.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannerConfig {
    /// Priority weights.
    pub weights: PriorityWeights,
    /// `PriorityMaxAge`, seconds.
    pub max_age: i64,
    /// Queue order.
    pub order: QueueOrder,
    /// Backfill with reservations (`sched/backfill`); false is strict FIFO.
    pub backfill: bool,
    /// How many blocked jobs get a reservation (`bf_max_job_test`-like; default 100).
    pub backfill_depth: usize,
    /// `PriorityDecayHalfLife`: fairshare usage halves every this many seconds (default 7
    /// days; 0 = no decay). Used by the cycle that charges usage, not by [`plan`].
    pub half_life: i64,
    /// `TRESBillingWeights`: what a run is charged per CPU and GPU second (default a GPU
    /// weighs 32 CPUs). Used by the cycle that charges usage, not by [`plan`].
    pub billing: BillingWeights,
    /// Slurm's `SchedulerParameters=kill_invalid_depend`: cancel a pending job whose
    /// dependency can never be satisfied instead of leaving it pending with reason
    /// `DependencyNeverSatisfied` (default false). Applied by the cycle, not by [`plan`].
    pub kill_invalid_depend: bool,
    /// How a start chooses among the nodes that can hold it (after `Weight`).
    pub fit: NodeFit,
}

/// How a start chooses among the nodes that can hold it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NodeFit {
    /// The nodes with the fewest usable GPUs (Slurm's best fit): big nodes stay whole.
    #[default]
    Best,
    /// Fragmentation-aware (after Weng et al., ATC'23, in a simple form): the nodes where
    /// the start strands the fewest GPUs, then best fit. A node's free GPUs are stranded
    /// when its free CPUs or memory cannot feed them at the queue's mean CPUs and memory
    /// per GPU (over the pending GPU jobs of the pass). Every placement weighs every
    /// candidate node (no early stop), so passes are slower.
    Fragmentation,
}

impl Default for PlannerConfig {
    fn default() -> Self {
        PlannerConfig {
            weights: PriorityWeights::default(),
            max_age: priority::DEFAULT_MAX_AGE,
            order: QueueOrder::Multifactor,
            backfill: true,
            backfill_depth: 100,
            half_life: priority::DEFAULT_HALF_LIFE,
            billing: BillingWeights::default(),
            kill_invalid_depend: false,
            fit: NodeFit::Best,
        }
    }
}

/// A node as the planner sees it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NodeView {
    /// Database id.
    pub id: i64,
    /// Name.
    pub name: String,
    /// Accepting new work (state UP).
    pub available: bool,
    /// Every GPU: (index, model). At most 128 are used.
    pub gpus: Vec<(u32, String)>,
    /// Features for `--constraint`.
    pub features: Vec<String>,
    /// CPUs jobs may be given (its CPUs less `CoreSpecCount`); 0: not counted (a node
    /// that reported none, a trace without CPUs).
    pub cpus: u32,
    /// Memory jobs may be given, MiB (`RealMemory` less `MemSpecLimit`); 0: not counted.
    pub memory_mib: u64,
    /// Slurm's node `Weight`: lower weights are filled first, before best fit (default 1).
    pub weight: u32,
}

/// One node's share of a running job.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunningAlloc {
    /// The job.
    pub job_id: i64,
    /// The node id.
    pub node_id: i64,
    /// GPU indices held.
    pub gpus: Vec<u32>,
    /// CPUs held on the node.
    pub cpus: u32,
    /// Memory held on the node, MiB.
    pub mem_mib: u64,
    /// The node is held whole (`--exclusive`).
    pub exclusive: bool,
    /// When it will have ended at the latest: start + time limit, seconds since the
    /// epoch; `None` without a limit.
    pub end: Option<i64>,
}

/// Where a job's dependencies stand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DependencyState {
    /// None, or all met.
    #[default]
    Satisfied,
    /// Not yet.
    Waiting,
    /// Never will be (`DependencyNeverSatisfied`).
    Never,
}

/// The tasks of an array that have not started yet (the array's master row).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ArrayTasks {
    /// Indices that may start now (dependencies met), in order; a prefix of them is
    /// enough.
    pub ready: Vec<u32>,
    /// Tasks not started yet, `ready` included.
    pub remaining: u64,
    /// Tasks of the array running now.
    pub running: u32,
    /// `%LIMIT`.
    pub max_running: Option<u32>,
}

/// A pending job as the planner sees it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PendingJob {
    /// Job id.
    pub id: i64,
    /// Submitted, seconds since the epoch.
    pub submit_time: i64,
    /// Nodes of its partition (empty: every node).
    pub partition_nodes: Vec<String>,
    /// Its partition's priority tier.
    pub partition_tier: u32,
    /// Its QOS's priority.
    pub qos_priority: u32,
    /// Its association's fairshare factor, 0..=1.
    pub fairshare: f64,
    /// `--nice`.
    pub nice: i32,
    /// An administrator's priority adjustment.
    pub adjust: i64,
    /// Nodes wanted, all at once.
    pub nodes: u32,
    /// GPUs per node.
    pub gpus_per_node: u32,
    /// GPU model substring wanted (case-insensitive).
    pub gpu_type: Option<String>,
    /// `--gres=shard:N`: `gpus_per_node` counts GPU shards (only a node's shard devices
    /// are given); otherwise only GPUs and MIG instances are.
    pub shards: bool,
    /// `--constraint`: features, `&` (all) and `|` (any).
    pub constraint: Option<String>,
    /// `--exclusive`.
    pub exclusive: bool,
    /// Every GPU of each node.
    pub whole_node: bool,
    /// Time limit, seconds; `None` unlimited.
    pub time_limit: Option<i64>,
    /// Held: the reason (`JobHeldUser`, `JobHeldAdmin`).
    pub held: Option<String>,
    /// `--begin`, seconds since the epoch.
    pub begin: Option<i64>,
    /// Its dependencies.
    pub dependency: DependencyState,
    /// For an array: the tasks not started yet.
    pub array: Option<ArrayTasks>,
    /// Its user (for QOS limits).
    pub user: String,
    /// Its fairshare association's account (for QOS limits).
    pub account: String,
    /// Its QOS (`normal` when it named none).
    pub qos: String,
    /// CPUs it asks for in total.
    pub cpus: u32,
    /// CPUs it needs on each of its nodes (`-c` × tasks per node, `--cpus-per-gpu` ×
    /// GPUs per node, the partition's `DefCpuPerGPU`); at least 1.
    pub cpus_per_node: u32,
    /// Memory it needs on each of its nodes, MiB (`--mem`, `--mem-per-cpu` × CPUs,
    /// `--mem-per-gpu` × GPUs, the partition's defaults); `Some(0)` (`--mem=0`): all of
    /// each node's usable memory; `None`: a share of each node's memory in proportion to
    /// the CPUs it gets there.
    pub mem_per_node_mib: Option<u64>,
    /// `-w/--nodelist`: nodes it must be given (all of them).
    pub nodelist: Vec<String>,
    /// `-x/--exclude`: nodes it must not be given.
    pub exclude: Vec<String>,
    /// `--time-min`, seconds: backfill may start it with a shorter limit, down to this,
    /// where the full limit would not fit.
    pub time_min: Option<i64>,
    /// `--reservation`: it runs only inside this advance reservation.
    pub reservation: Option<String>,
    /// Its partition's `MaxTime`, seconds.
    pub partition_max_time: Option<i64>,
    /// Its partition's `MaxNodes`.
    pub partition_max_nodes: Option<u32>,
    /// Jobs it preempted are still being stopped: it waits for their GPUs and preempts
    /// nothing more.
    pub preempting: bool,
}

/// A TRES limit set as the planner reads it (see [`berth_core::qos::TresLimits`]).
pub use berth_core::qos::TresLimits;

/// The limits of a QOS.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QosLimits {
    /// `MaxTRESPerUser`.
    pub max_tres_per_user: TresLimits,
    /// `MaxTRESPerAccount`.
    pub max_tres_per_account: TresLimits,
    /// `GrpTRES`.
    pub grp_tres: TresLimits,
    /// `MaxJobsPerUser`.
    pub max_jobs_per_user: Option<u32>,
    /// `MaxWall`, seconds.
    pub max_wall: Option<i64>,
}

impl QosLimits {
    /// Whether any limit counts what running jobs hold (all but `MaxWall`).
    fn counts(&self) -> bool {
        let none = TresLimits::default();
        self.max_jobs_per_user.is_some()
            || self.max_tres_per_user != none
            || self.max_tres_per_account != none
            || self.grp_tres != none
    }
}

/// An account's place in the tree and its association limit (Slurm's `GrpTRES` of the
/// account: what all running jobs charged to it and its sub-accounts may hold).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AccountLimits {
    /// The parent account; `None` for `root` (or an account whose parent is unknown).
    pub parent: Option<String>,
    /// `GrpTRES` (no key: no limit).
    pub grp_tres: TresLimits,
}

/// A QOS's preemption settings (Slurm's `Preempt`, `PreemptMode`, `GraceTime`,
/// `PreemptExemptTime`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QosPreemption {
    /// The QOS's priority (victims of a lower one go first).
    pub priority: u32,
    /// The QOS whose running jobs this QOS's jobs may preempt.
    pub preempt: Vec<String>,
    /// What happens to this QOS's jobs when they are preempted.
    pub mode: PreemptMode,
    /// Seconds between SIGTERM and the kill of a preempted job of this QOS.
    pub grace_time: i64,
    /// Seconds after its start during which a job of this QOS is not preempted.
    pub exempt_time: i64,
}

/// A running job as limits (and preemption) count it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunningJob {
    /// The job.
    pub job_id: i64,
    /// Its user.
    pub user: String,
    /// Its account.
    pub account: String,
    /// Its QOS.
    pub qos: String,
    /// CPUs.
    pub cpus: u32,
    /// GPUs over all its nodes.
    pub gpus: u32,
    /// Nodes.
    pub nodes: u32,
    /// When its current run started, seconds since the epoch.
    pub start: i64,
}

/// The planner's input.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// The time of the plan, seconds since the epoch.
    pub now: i64,
    /// Nodes.
    pub nodes: Vec<NodeView>,
    /// Live allocations.
    pub running: Vec<RunningAlloc>,
    /// Pending jobs, in any order.
    pub pending: Vec<PendingJob>,
    /// The highest partition priority tier of the cluster (normalizes the partition
    /// factor; the pending jobs' highest when larger).
    pub partition_tier_max: u32,
    /// The highest QOS priority of the cluster (normalizes the QOS factor; the pending
    /// jobs' highest when larger).
    pub qos_priority_max: u32,
    /// Limits by QOS name (a QOS missing here has none).
    pub qos_limits: HashMap<String, QosLimits>,
    /// Running jobs, as QOS limits count them.
    pub running_jobs: Vec<RunningJob>,
    /// Preemption settings by QOS name (a QOS missing here preempts nothing and is
    /// cancelled without grace when preempted).
    pub qos_preemption: HashMap<String, QosPreemption>,
    /// The account tree with each account's `GrpTRES`, by account name (an account
    /// missing here has no limit and no ancestors).
    pub accounts: HashMap<String, AccountLimits>,
    /// GPU topology of the nodes that report it: node id → (GPU index, domain). GPUs of
    /// one domain are close (one NUMA node or NVLink island); a job that fits in one
    /// domain gets its GPUs there (the domain with the fewest usable GPUs that holds
    /// them), else from as few domains as it can.
    pub gpu_domains: HashMap<i64, Vec<(u32, u32)>>,
    /// Devices that are GPU shards (Slurm's `shard` GRES): node id → their indices. Only
    /// jobs asking for shards get them, and those get nothing else.
    pub shards: HashMap<i64, Vec<u32>>,
    /// Advance reservations (Slurm's `scontrol create reservation`), one entry per
    /// window: a recurring one (`DAILY`, `WEEKLY`) appears once per upcoming occurrence.
    pub advance_reservations: Vec<AdvanceReservation>,
}

/// One window of an advance reservation: what it holds from `start` to `end`. Jobs that
/// name it (`--reservation`) run only on its nodes and inside its window (anywhere and
/// any time with `FLEX`); no other job overlaps what it holds there.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AdvanceReservation {
    /// Its name.
    pub name: String,
    /// Start, seconds since the epoch.
    pub start: i64,
    /// End, seconds since the epoch ([`FOREVER`]: none).
    pub end: i64,
    /// What it holds: per node, the GPU indices (`None`: the whole node).
    pub nodes: Vec<ReservedNode>,
    /// `FLEX`: its jobs may also start before it, end after it, and use nodes outside it.
    pub flex: bool,
    /// `MAINT`: a maintenance window (its pending jobs' reason names it).
    pub maint: bool,
}

/// A node an advance reservation holds.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReservedNode {
    /// The node id.
    pub node_id: i64,
    /// The GPU indices held (a GPU-count reservation); `None`: the whole node.
    pub gpus: Option<Vec<u32>>,
}

/// What the running jobs (and the starts of this pass) hold, per user, account and QOS,
/// and per account subtree for association limits.
#[derive(Debug, Default)]
struct Tally<'a> {
    /// account → itself and its ancestors that have a `GrpTRES`, nearest first.
    chains: HashMap<&'a str, Vec<(&'a str, &'a TresLimits)>>,
    /// account with a `GrpTRES` → (jobs, cpus, gpus, nodes) of its subtree.
    assoc: HashMap<&'a str, [u64; 4]>,
    /// The QOS with a limit that counts what running jobs hold: only theirs are tallied.
    counted: HashSet<&'a str>,
    /// (qos, user) → (jobs, cpus, gpus, nodes).
    user: HashMap<(&'a str, &'a str), [u64; 4]>,
    /// (qos, account) → (jobs, cpus, gpus, nodes).
    account: HashMap<(&'a str, &'a str), [u64; 4]>,
    /// qos → (jobs, cpus, gpus, nodes).
    group: HashMap<&'a str, [u64; 4]>,
}

impl<'a> Tally<'a> {
    /// An empty tally over the account tree of `accounts` (a cycle in the parents, which
    /// the database does not allow, ends the walk up) and the QOS limits `qos`.
    fn new(
        accounts: &'a HashMap<String, AccountLimits>,
        qos: &'a HashMap<String, QosLimits>,
    ) -> Self {
        let mut chains = HashMap::new();
        for name in accounts.keys() {
            let mut chain = Vec::new();
            let mut seen: HashSet<&str> = HashSet::new();
            let mut at = Some(name.as_str());
            while let Some(a) = at.filter(|a| seen.insert(*a)) {
                let Some((key, limits)) = accounts.get_key_value(a) else {
                    break;
                };
                if limits.grp_tres != TresLimits::default() {
                    chain.push((key.as_str(), &limits.grp_tres));
                }
                at = limits.parent.as_deref();
            }
            if !chain.is_empty() {
                chains.insert(name.as_str(), chain);
            }
        }
        Tally {
            chains,
            counted: qos
                .iter()
                .filter(|(_, l)| l.counts())
                .map(|(q, _)| q.as_str())
                .collect(),
            ..Tally::default()
        }
    }

    fn add(
        &mut self,
        qos: &'a str,
        user: &'a str,
        account: &'a str,
        cpus: u32,
        gpus: u32,
        nodes: u32,
    ) {
        let v = [1, u64::from(cpus), u64::from(gpus), u64::from(nodes)];
        if let Some(chain) = self.chains.get(account) {
            for (a, _) in chain {
                for (x, y) in self.assoc.entry(a).or_default().iter_mut().zip(v) {
                    *x += y;
                }
            }
        }
        if !self.counted.contains(qos) {
            return;
        }
        for slot in [
            self.user.entry((qos, user)).or_default(),
            self.account.entry((qos, account)).or_default(),
            self.group.entry(qos).or_default(),
        ] {
            for (a, b) in slot.iter_mut().zip(v) {
                *a += b;
            }
        }
    }

    /// The Slurm reason a start of `job` taking `gpus` GPUs in all would break a limit
    /// of its QOS or of its account's association with, if any.
    fn blocks(&self, job: &PendingJob, limits: &QosLimits, gpus: u64) -> Option<&'static str> {
        let chain = self.chains.get(job.account.as_str());
        if chain.is_none() && !limits.counts() {
            return None;
        }
        let need = [1u64, u64::from(job.cpus), gpus, u64::from(job.nodes)];
        let zero = [0u64; 4];
        let user = self
            .user
            .get(&(job.qos.as_str(), job.user.as_str()))
            .unwrap_or(&zero);
        let account = self
            .account
            .get(&(job.qos.as_str(), job.account.as_str()))
            .unwrap_or(&zero);
        let group = self.group.get(job.qos.as_str()).unwrap_or(&zero);
        let over = |have: &[u64; 4], i: usize, max: Option<u64>| {
            max.is_some_and(|m| have[i] + need[i] > m)
        };
        if limits
            .max_jobs_per_user
            .is_some_and(|m| user[0] + 1 > u64::from(m))
        {
            return Some("QOSMaxJobsPerUserLimit");
        }
        let checks: [(&[u64; 4], &TresLimits, [&'static str; 3]); 3] = [
            (
                user,
                &limits.max_tres_per_user,
                [
                    "QOSMaxCpuPerUserLimit",
                    "QOSMaxGRESPerUser",
                    "QOSMaxNodePerUserLimit",
                ],
            ),
            (
                account,
                &limits.max_tres_per_account,
                [
                    "QOSMaxCpuPerAccountLimit",
                    "QOSMaxGRESPerAccount",
                    "QOSMaxNodePerAccountLimit",
                ],
            ),
            (
                group,
                &limits.grp_tres,
                ["QOSGrpCpuLimit", "QOSGrpGRES", "QOSGrpNodeLimit"],
            ),
        ];
        for (have, tres, reasons) in checks {
            if over(have, 1, tres.cpu) {
                return Some(reasons[0]);
            }
            if over(have, 2, tres.gpu) {
                return Some(reasons[1]);
            }
            if over(have, 3, tres.node) {
                return Some(reasons[2]);
            }
        }
        for (a, tres) in chain.into_iter().flatten() {
            let have = self.assoc.get(a).unwrap_or(&zero);
            if over(have, 1, tres.cpu) {
                return Some("AssocGrpCpuLimit");
            }
            if over(have, 2, tres.gpu) {
                return Some("AssocGrpGRES");
            }
            if over(have, 3, tres.node) {
                return Some("AssocGrpNodeLimit");
            }
        }
        None
    }
}

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

/// The priority of every job in the snapshot (the inputs that depend on the whole queue
/// — cluster GPUs, highest tier and QOS priority — come from the snapshot).
pub fn priorities(snapshot: &Snapshot, config: &PlannerConfig) -> HashMap<i64, PriorityFactors> {
    snapshot
        .pending
        .iter()
        .map(|j| j.id)
        .zip(pending_priorities(snapshot, config))
        .collect()
}

/// [`priorities`], in the order of `snapshot.pending`.
fn pending_priorities<'s>(
    snapshot: &'s Snapshot,
    config: &'s PlannerConfig,
) -> impl Iterator<Item = PriorityFactors> + 's {
    let cluster_gpus: u32 = snapshot.nodes.iter().map(|n| n.gpus.len() as u32).sum();
    let (max_tier, max_qos) = snapshot.pending.iter().fold(
        (snapshot.partition_tier_max, snapshot.qos_priority_max),
        |(tier, qos), j| (tier.max(j.partition_tier), qos.max(j.qos_priority)),
    );
    // A whole-node job (`--exclusive` without a GPU count) is sized by the largest node
    // of its partition, computed once per partition node list.
    let mut largest: HashMap<&[String], u32> = HashMap::new();
    for j in snapshot.pending.iter().filter(|j| j.whole_node) {
        largest
            .entry(j.partition_nodes.as_slice())
            .or_insert_with(|| {
                snapshot
                    .nodes
                    .iter()
                    .filter(|n| j.partition_nodes.is_empty() || j.partition_nodes.contains(&n.name))
                    .map(|n| n.gpus.len() as u32)
                    .max()
                    .unwrap_or(0)
            });
    }
    let node_gpus = move |j: &PendingJob| -> u32 {
        if j.whole_node {
            largest
                .get(j.partition_nodes.as_slice())
                .copied()
                .unwrap_or(0)
        } else {
            j.gpus_per_node
        }
    };
    snapshot.pending.iter().map(move |j| {
        let eligible = j.begin.map_or(j.submit_time, |b| b.max(j.submit_time));
        let inputs = PriorityInputs {
            age_seconds: snapshot.now - eligible,
            max_age_seconds: config.max_age,
            fairshare: j.fairshare,
            job_gpus: j.nodes.saturating_mul(node_gpus(j)),
            cluster_gpus,
            partition_tier: j.partition_tier,
            max_partition_tier: max_tier,
            qos_priority: j.qos_priority,
            max_qos_priority: max_qos,
            nice: j.nice,
            adjust: j.adjust,
        };
        priority::priority(&config.weights, &inputs)
    })
}

/// What the intervals overlapping a window hold of a node: the union of their GPU masks,
/// whether there is one at all, and the sums of their CPUs and memory (MiB). Summing
/// every interval that overlaps the window, whether or not they overlap each other, is
/// conservative, as the union of masks is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Held {
    busy: u128,
    any: bool,
    cpus: u64,
    mem: u64,
}

/// Folds into `held` the `intervals` that overlap `[t, end)` (reservations only with
/// `res`; none that `skip` names); `None` when one of them holds the node exclusively.
#[inline]
fn overlapping<'i>(
    intervals: impl IntoIterator<Item = &'i Interval>,
    held: Held,
    t: i64,
    end: i64,
    res: bool,
    skip: impl Fn(&Interval) -> bool,
) -> Option<Held> {
    let mut held = held;
    for iv in intervals {
        if (iv.reservation && !res) || skip(iv) {
            continue;
        }
        if iv.start < end && t < iv.end {
            if iv.exclusive {
                return None;
            }
            held.busy |= iv.mask;
            held.any = true;
            held.cpus += u64::from(iv.cpus);
            held.mem += iv.mem;
        }
    }
    Some(held)
}

#[derive(Debug, Clone, Copy)]
struct Interval {
    /// The job (an advance reservation's window: a negative id, see
    /// [`Timeline::advance`]).
    job: i64,
    start: i64,
    end: i64,
    mask: u128,
    /// CPUs held.
    cpus: u32,
    /// Memory held, MiB.
    mem: u64,
    exclusive: bool,
    reservation: bool,
}

/// A node's place in placement order: its `Weight` in the high half (lower weights are
/// filled first), then what the placement weighs (usable GPUs for best fit, or GPUs of
/// the wanted type for a reservation's fixed order).
type Key = u64;

fn key(weight: u32, count: u32) -> Key {
    (u64::from(weight) << 32) | u64::from(count)
}

/// What a job needs of node `node` (CPUs, memory MiB): `--exclusive` and whole-node jobs
/// take all of it; memory as [`memory::memory_on`] gives it (`--mem=0`: all of it; not
/// asked for: the node's memory in proportion to the CPUs). `None` when the node can
/// never give it (a count of 0 on the node is not counted).
fn need(job: &PendingJob, node: &NodeView) -> Option<(u32, u64)> {
    let cpus = job.cpus_per_node.max(1);
    if node.cpus > 0 && cpus > node.cpus {
        return None;
    }
    let mem = memory::memory_on(job, node, cpus);
    if node.memory_mib > 0 && mem > node.memory_mib {
        return None;
    }
    if job.exclusive || job.whole_node {
        return Some((node.cpus.max(cpus), node.memory_mib.max(mem)));
    }
    Some((cpus, mem))
}

/// Whether a `--constraint` is more than a property of each node (a count `a*2` or a
/// matching OR `[a|b]`): its placements are chosen by [`Constraint::choose`].
fn constraint_spans_nodes(constraint: Option<&str>) -> bool {
    constraint.is_some_and(|c| c.contains(['*', '[']))
}

fn lowest_bits(mask: u128, n: u32) -> u128 {
    let mut out = 0u128;
    let mut m = mask;
    for _ in 0..n {
        let bit = m & m.wrapping_neg();
        out |= bit;
        m &= !bit;
    }
    out
}

/// `n` of the `usable` GPUs of a node whose GPUs fall in topology `domains` (masks; empty
/// when unknown): within the one domain that holds them with the fewest usable GPUs to
/// spare (best fit, so bigger groups stay whole for bigger jobs), else from the domains
/// with the most usable GPUs first (as few domains as possible); lowest indices within a
/// domain. Without domains, the `n` lowest. `usable` must hold at least `n`.
fn pick_gpus(usable: u128, n: u32, domains: &[u128]) -> u128 {
    if domains.is_empty() {
        return lowest_bits(usable, n);
    }
    let best = domains
        .iter()
        .map(|d| usable & d)
        .filter(|free| free.count_ones() >= n)
        .min_by_key(|free| free.count_ones());
    if let Some(free) = best {
        return lowest_bits(free, n);
    }
    let mut order: Vec<u128> = domains.iter().map(|d| usable & d).collect();
    // Most usable first; ties keep domain order (stable sort).
    order.sort_by_key(|free| std::cmp::Reverse(free.count_ones()));
    let mut chosen = 0u128;
    let mut left = n;
    for free in order {
        let take = free.count_ones().min(left);
        chosen |= lowest_bits(free, take);
        left -= take;
        if left == 0 {
            break;
        }
    }
    // GPUs outside every listed domain (a partial report) come last.
    if left > 0 {
        chosen |= lowest_bits(usable & !chosen, left);
    }
    chosen
}

/// A candidate list's nodes by what they can give at `now`, kept as intervals are
/// added. Buckets are keyed by (weight, GPU count) ([`Key`]); within one, nodes are in
/// rank order.
#[derive(Debug, Default)]
struct NowIndex {
    /// Nodes without reservations and without an exclusive hold now, by weight and free
    /// GPUs of the wanted type: (rank, node, wanted GPUs).
    free: BTreeMap<Key, BTreeSet<(u32, usize, u128)>>,
    /// Nodes without reservations with nothing held now, by weight and GPUs of the
    /// wanted type.
    idle: BTreeMap<Key, BTreeSet<(u32, usize, u128)>>,
    /// Nodes with a reservation (or an interval starting later): weighed one by one.
    slow: Vec<(usize, u128)>,
}

/// An advance reservation as the timeline keeps it.
#[derive(Debug, Default)]
struct AdvanceWindows {
    /// Its windows' interval ids.
    ids: Vec<i64>,
    /// Its windows (start, end), in snapshot order.
    windows: Vec<(i64, i64)>,
    /// Its nodes (timeline index), sorted.
    nodes: Vec<usize>,
    /// `FLEX`.
    flex: bool,
}

struct Timeline<'a> {
    nodes: &'a [NodeView],
    intervals: Vec<Vec<Interval>>,
    ends: BTreeSet<i64>,
    /// Jobs whose intervals [`Timeline::fit`] passes over (candidate victims of a
    /// preemption being weighed).
    ignoring: JobIds,
    /// The snapshot's `now`.
    now: i64,
    /// Per node, what its intervals hold over `now` when it has no other kind (see
    /// `slow`): the union of their masks, whether there is one at all, whether one is
    /// exclusive. Kept as intervals are added, so a fit at `now` reads three words
    /// instead of every interval.
    now_busy: Vec<u128>,
    now_any: Vec<bool>,
    now_exclusive: Vec<bool>,
    /// Per node, the CPUs and memory (MiB) its `now_*` intervals hold.
    now_cpus: Vec<u64>,
    now_mem: Vec<u64>,
    /// Per node: the intervals the `now_*` summary does not describe (reservations,
    /// intervals starting after `now`), and the union of their masks.
    later: Vec<Vec<Interval>>,
    later_busy: Vec<u128>,
    /// Per node: it has an interval the `now_*` summary does not describe (a
    /// reservation, or one starting after `now`): fits on it at `now` also weigh its
    /// `later` intervals, and at other times scan all of them.
    slow: Vec<bool>,
    /// Per node: its position in (weight, name) order (ties by index), the tie-break of
    /// [`Timeline::place`].
    rank: Vec<u32>,
    /// Per advance reservation name: the ids of its windows' intervals (negative), its
    /// nodes, and whether it is `FLEX`.
    advance: HashMap<String, AdvanceWindows>,
    /// [`NodeFit::Fragmentation`]: the queue's mean CPUs and memory (MiB) per GPU.
    fragmentation: Option<(f64, f64)>,
    /// The pending jobs' `--constraint`s, parsed once (`None`: one that does not parse,
    /// which no node matches; the api refuses those at submission).
    constraints: HashMap<&'a str, Option<Constraint>>,
    /// Per candidate list of the pass (same numbering), its nodes by what they can give
    /// at `now`.
    indexes: Vec<NowIndex>,
    /// Per node: the indexes it is in, with its GPUs of each list's wanted type.
    indexed_in: Vec<Vec<(usize, u128)>>,
    /// Per node: its GPUs by topology domain (masks, in domain order); empty when it
    /// reports fewer than two domains.
    domains: Vec<Vec<u128>>,
    /// Per node: the mask of its devices that are GPU shards.
    shard_mask: Vec<u128>,
    /// The node of every interval added, in order (what [`FirstAble`] catches up on).
    changed: Vec<usize>,
    /// Tests only: every fit scans intervals, every placement sorts all fits, and every
    /// earliest start tries every interval end ([`Timeline::earliest_scan`]: the plain
    /// algorithms the fast ones must agree with).
    reference: bool,
}

impl<'a> Timeline<'a> {
    fn new(snapshot: &'a Snapshot) -> Self {
        let index: HashMap<i64, usize> = snapshot
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.id, i))
            .collect();
        let mut t = Timeline {
            nodes: &snapshot.nodes,
            intervals: vec![Vec::new(); snapshot.nodes.len()],
            ends: BTreeSet::new(),
            ignoring: JobIds::default(),
            now: snapshot.now,
            now_busy: vec![0; snapshot.nodes.len()],
            now_any: vec![false; snapshot.nodes.len()],
            now_exclusive: vec![false; snapshot.nodes.len()],
            now_cpus: vec![0; snapshot.nodes.len()],
            now_mem: vec![0; snapshot.nodes.len()],
            advance: HashMap::new(),
            fragmentation: None,
            constraints: snapshot
                .pending
                .iter()
                .filter_map(|j| j.constraint.as_deref())
                .map(|c| (c, Constraint::parse(c).ok()))
                .collect(),
            later: vec![Vec::new(); snapshot.nodes.len()],
            later_busy: vec![0; snapshot.nodes.len()],
            slow: vec![false; snapshot.nodes.len()],
            rank: vec![0; snapshot.nodes.len()],
            reference: false,
            indexes: Vec::new(),
            indexed_in: vec![Vec::new(); snapshot.nodes.len()],
            domains: vec![Vec::new(); snapshot.nodes.len()],
            shard_mask: vec![0; snapshot.nodes.len()],
            changed: Vec::new(),
        };
        for (i, node) in snapshot.nodes.iter().enumerate() {
            if let Some(shards) = snapshot.shards.get(&node.id) {
                t.shard_mask[i] = node
                    .gpus
                    .iter()
                    .take(128)
                    .enumerate()
                    .filter(|(_, (g, _))| shards.contains(g))
                    .fold(0u128, |m, (p, _)| m | 1 << p);
            }
            let Some(of) = snapshot.gpu_domains.get(&node.id) else {
                continue;
            };
            let mut by_domain: BTreeMap<u32, u128> = BTreeMap::new();
            for (p, (g, _)) in node.gpus.iter().enumerate().take(128) {
                if let Some((_, d)) = of.iter().find(|(index, _)| index == g) {
                    *by_domain.entry(*d).or_default() |= 1 << p;
                }
            }
            if by_domain.len() > 1 {
                t.domains[i] = by_domain.into_values().collect();
            }
        }
        let mut by_name: Vec<usize> = (0..snapshot.nodes.len()).collect();
        by_name.sort_by(|a, b| {
            let (a, b) = (&snapshot.nodes[*a], &snapshot.nodes[*b]);
            (a.weight, &a.name).cmp(&(b.weight, &b.name))
        });
        for (r, i) in by_name.into_iter().enumerate() {
            t.rank[i] = r as u32;
        }
        let mut held_by_windows: Vec<(usize, Interval)> = Vec::new();
        for a in &snapshot.running {
            let Some(&i) = index.get(&a.node_id) else {
                continue;
            };
            let node = &snapshot.nodes[i];
            let mask = node
                .gpus
                .iter()
                .enumerate()
                .take(128)
                .filter(|(_, (g, _))| a.gpus.contains(g))
                .fold(0u128, |m, (p, _)| m | 1 << p);
            let end = a.end.unwrap_or(FOREVER).max(snapshot.now + 1);
            t.add(
                i,
                Interval {
                    job: a.job_id,
                    start: i64::MIN,
                    end,
                    mask,
                    cpus: a.cpus,
                    mem: a.mem_mib,
                    exclusive: a.exclusive,
                    reservation: false,
                },
            );
        }
        // Advance reservations: each window holds its nodes (whole, or the GPUs it lists)
        // against every job but its own, which skip its intervals (ids below zero).
        for (w, r) in snapshot.advance_reservations.iter().enumerate() {
            let id = -(w as i64) - 1;
            let entry = t.advance.entry(r.name.clone()).or_default();
            entry.ids.push(id);
            entry.flex |= r.flex;
            entry.windows.push((r.start, r.end));
            let mut held = Vec::new();
            for rn in &r.nodes {
                let Some(&i) = index.get(&rn.node_id) else {
                    continue;
                };
                held.push(i);
                let node = &snapshot.nodes[i];
                let (mask, exclusive) = match &rn.gpus {
                    None => (0, true),
                    Some(gpus) => (
                        node.gpus
                            .iter()
                            .enumerate()
                            .take(128)
                            .filter(|(_, (g, _))| gpus.contains(g))
                            .fold(0u128, |m, (p, _)| m | 1 << p),
                        false,
                    ),
                };
                if r.end > r.start {
                    held_by_windows.push((
                        i,
                        Interval {
                            job: id,
                            start: r.start,
                            end: r.end,
                            mask,
                            cpus: 0,
                            mem: 0,
                            exclusive,
                            reservation: false,
                        },
                    ));
                }
            }
            let entry = t.advance.get_mut(&r.name).expect("just added");
            entry.nodes.extend(held);
        }
        // Sorted once, not per window: one name may have a window per node (the cloud
        // module's boot holds), and sorting on each was quadratic in them.
        for entry in t.advance.values_mut() {
            entry.nodes.sort_unstable();
            entry.nodes.dedup();
        }
        for (i, iv) in held_by_windows {
            t.add(i, iv);
        }
        t
    }

    fn add(&mut self, node: usize, interval: Interval) {
        let Interval {
            start,
            end,
            mask,
            exclusive,
            reservation: res,
            ..
        } = interval;
        self.intervals[node].push(interval);
        self.changed.push(node);
        let was_slow = self.slow[node];
        let indexed = !self.indexed_in[node].is_empty();
        if indexed && !was_slow {
            self.index_update(node, false);
        }
        if res || start > self.now {
            self.slow[node] = true;
            self.later[node].push(interval);
            self.later_busy[node] |= mask;
        } else if end > self.now {
            // Begins at or before `now` and ends after it: it overlaps every window
            // `[now, e)` with `e > now`.
            self.now_busy[node] |= mask;
            self.now_any[node] = true;
            self.now_exclusive[node] |= exclusive;
            self.now_cpus[node] += u64::from(interval.cpus);
            self.now_mem[node] += interval.mem;
        }
        if indexed && !(was_slow && self.slow[node]) {
            self.index_update(node, true);
        }
        if end != FOREVER {
            self.ends.insert(end);
        }
    }

    /// Files node `i` in (`insert`) or out of every index it belongs to, by its state now.
    fn index_update(&mut self, i: usize, insert: bool) {
        let rank = self.rank[i];
        let weight = self.nodes[i].weight;
        for &(k, typed) in &self.indexed_in[i] {
            let index = &mut self.indexes[k];
            if self.slow[i] {
                if insert {
                    index.slow.push((i, typed));
                }
                continue;
            }
            let file = |buckets: &mut BTreeMap<Key, BTreeSet<(u32, usize, u128)>>, b: u32| {
                let k = key(weight, b);
                if insert {
                    buckets.entry(k).or_default().insert((rank, i, typed));
                } else if let Some(bucket) = buckets.get_mut(&k) {
                    bucket.remove(&(rank, i, typed));
                    if bucket.is_empty() {
                        buckets.remove(&k);
                    }
                }
            };
            if !self.now_exclusive[i] {
                file(&mut index.free, (typed & !self.now_busy[i]).count_ones());
            }
            if !self.now_any[i] {
                file(&mut index.idle, typed.count_ones());
            }
        }
    }

    /// Indexes a candidate list (the next number); see [`NowIndex`].
    fn index_list(&mut self, cands: &[(usize, u128)]) {
        let k = self.indexes.len();
        self.indexes.push(NowIndex::default());
        for &(i, typed) in cands {
            self.indexed_in[i].push((k, typed));
            let mine = std::mem::replace(&mut self.indexed_in[i], vec![(k, typed)]);
            self.index_update(i, true);
            self.indexed_in[i] = mine;
        }
    }

    /// [`Timeline::place`] at `now`, reservations counted, best fit first, on the indexed
    /// candidate list `index`: reads the nodes in (usable GPUs, name) order from the
    /// index and stops at the first that fit, then weighs the nodes with reservations,
    /// which the index leaves out.
    fn place_now(
        &self,
        index: usize,
        cands: &[(usize, u128)],
        job: &PendingJob,
    ) -> Option<Vec<(usize, u128)>> {
        let want = job.nodes as usize;
        let now = self.now;
        let end = now.saturating_add(job.time_limit.unwrap_or(FOREVER));
        if want == 0 || cands.len() < want {
            return None;
        }
        if end <= now || !self.ignoring.is_empty() || self.reference || self.special(job) {
            return self.place(cands, job, now, true, true);
        }
        let index = &self.indexes[index];
        // A node's key in [`Timeline::place`] is its usable GPU count: the bucket it is
        // filed under, since its intervals are all summarised in `now_*`.
        let buckets = if job.exclusive || job.whole_node {
            &index.idle
        } else {
            &index.free
        };
        let floor = if job.whole_node { 0 } else { job.gpus_per_node };
        let mut best: Vec<(Key, u32, usize, u128)> = Vec::with_capacity(want);
        'fill: for (k, bucket) in buckets {
            if (*k as u32) < floor {
                continue;
            }
            for &(rank, i, typed) in bucket {
                if let Some((usable, chosen)) = self.fit(i, typed, job, now, end, true) {
                    best.push((usable, rank, i, chosen));
                    if best.len() == want {
                        break 'fill;
                    }
                }
            }
        }
        // A node with reservations has at least the GPUs that neither the intervals over
        // `now` nor any later one hold: when even that key comes after the `want` best fits
        // found, it cannot be chosen, and is not weighed.
        let found = (best.len() == want).then(|| best.last().map(|b| (b.0, b.1)));
        for &(i, typed) in &index.slow {
            if let Some(Some(worst)) = found {
                let least = (typed & !(self.now_busy[i] | self.later_busy[i])).count_ones();
                let least = key(self.nodes[i].weight, least.max(floor));
                if (least, self.rank[i]) > worst {
                    continue;
                }
            }
            if let Some((usable, chosen)) = self.fit(i, typed, job, now, end, true) {
                best.push((usable, self.rank[i], i, chosen));
            }
        }
        if best.len() < want {
            return None;
        }
        best.sort_unstable();
        Some(
            best.into_iter()
                .take(want)
                .map(|(_, _, i, m)| (i, m))
                .collect(),
        )
    }

    /// Whether the job's placements need the plain path (fits weighed one by one, not
    /// through the indexes and caches): it names nodes it must get, or an advance
    /// reservation (whose intervals it passes over).
    fn special(&self, job: &PendingJob) -> bool {
        !job.nodelist.is_empty()
            || job.reservation.is_some()
            || self.fragmentation.is_some()
            || constraint_spans_nodes(job.constraint.as_deref())
    }

    /// Whether a job that names an advance reservation may start at `t` (inside one of its
    /// windows; any time under `FLEX`); true for other jobs. As in Slurm, a job may start
    /// late in a window with a limit that runs past its end (no other job is planned on
    /// the window's nodes over the rest of it, and what comes after is planned around
    /// the job).
    fn window_open(&self, job: &PendingJob, t: i64) -> bool {
        let Some(r) = job.reservation.as_ref() else {
            return true;
        };
        let Some(a) = self.advance.get(r) else {
            return false;
        };
        a.flex || a.windows.iter().any(|(s, e)| *s <= t && t < *e)
    }

    /// The earliest start of a job in a (not `FLEX`) advance reservation: the first of
    /// each window's start (or `now`) and the interval ends inside it at which it fits,
    /// with where.
    fn earliest_in_windows(
        &self,
        cands: &[(usize, u128)],
        job: &PendingJob,
    ) -> Option<(i64, Chosen)> {
        let a = self.advance.get(job.reservation.as_ref()?)?;
        let mut windows = a.windows.clone();
        windows.sort_unstable();
        windows
            .into_iter()
            .filter(|(_, e)| *e > self.now)
            .find_map(|(s, e)| {
                let first = s.max(self.now);
                std::iter::once(first)
                    .chain(self.ends.range(first + 1..e).copied())
                    .find_map(|t| self.place(cands, job, t, true, false).map(|c| (t, c)))
            })
    }

    /// Backfill under `--time-min`: the longest time limit, from the job's limit down to
    /// its `--time-min`, with which it starts now (trying the limits that end where an
    /// interval on a candidate node begins), with where; `None` when none does or the job
    /// has no `--time-min` below its limit.
    fn shortened(&self, cands: &[(usize, u128)], job: &PendingJob) -> Option<(i64, Chosen)> {
        let limit = job.time_limit?;
        let least = job.time_min?.max(1);
        if least >= limit {
            return None;
        }
        let now = self.now;
        let mut limits: Vec<i64> = cands
            .iter()
            .flat_map(|(i, _)| self.intervals[*i].iter())
            .map(|iv| iv.start.saturating_sub(now))
            .filter(|l| (least..limit).contains(l))
            .collect();
        limits.push(least);
        limits.sort_unstable_by(|a, b| b.cmp(a));
        limits.dedup();
        limits.into_iter().find_map(|l| {
            let shorter = PendingJob {
                time_limit: Some(l),
                ..job.clone()
            };
            if !self.window_open(&shorter, now) {
                return None;
            }
            self.place(cands, &shorter, now, true, true).map(|c| (l, c))
        })
    }

    /// A pending job's `--constraint`, parsed; `None` when it does not parse.
    fn constraint(&self, text: &str) -> Option<&Constraint> {
        self.constraints.get(text).and_then(Option::as_ref)
    }

    /// The interval ids of the advance reservation the job runs in (it passes over them).
    fn member_ids(&self, job: &PendingJob) -> &[i64] {
        job.reservation
            .as_ref()
            .and_then(|r| self.advance.get(r))
            .map_or(&[], |a| a.ids.as_slice())
    }

    /// Nodes that could ever hold the job, with the mask of GPUs of the wanted type.
    fn candidates(&self, job: &PendingJob) -> Vec<(usize, u128)> {
        let constraint = job.constraint.as_deref().map(|c| self.constraint(c));
        // A job in a reservation (not `FLEX`) runs on its nodes only.
        let inside: Option<&[usize]> = job
            .reservation
            .as_ref()
            .map(|r| match self.advance.get(r) {
                Some(a) if a.flex => None,
                Some(a) => Some(a.nodes.as_slice()),
                None => Some(&[][..]),
            })
            .unwrap_or(None);
        let mut out = self
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.available)
            .filter(|(i, _)| inside.is_none_or(|nodes| nodes.binary_search(i).is_ok()))
            .filter(|(_, n)| {
                job.partition_nodes.is_empty() || job.partition_nodes.contains(&n.name)
            })
            .filter(|(_, n)| !job.exclude.contains(&n.name))
            .filter(|(_, n)| {
                // `-w` naming every node of the job: those nodes only.
                job.nodelist.is_empty()
                    || job.nodelist.len() < job.nodes as usize
                    || job.nodelist.contains(&n.name)
            })
            .filter(|(_, n)| {
                constraint.is_none_or(|c| c.is_some_and(|c| c.node_may_match(&n.features)))
            })
            .filter_map(|(i, n)| {
                let all = n
                    .gpus
                    .iter()
                    .take(128)
                    .enumerate()
                    .fold(0u128, |m, (p, _)| m | 1 << p);
                let typed = n
                    .gpus
                    .iter()
                    .take(128)
                    .enumerate()
                    .filter(|(_, (_, model))| match &job.gpu_type {
                        Some(t) => model.to_lowercase().contains(&t.to_lowercase()),
                        None => true,
                    })
                    .fold(0u128, |m, (p, _)| m | 1 << p);
                let typed = if job.shards {
                    typed & self.shard_mask[i]
                } else {
                    typed & !self.shard_mask[i]
                };
                if job.whole_node {
                    Some((i, all))
                } else {
                    (typed.count_ones() >= job.gpus_per_node).then_some((i, typed))
                }
            })
            .collect::<Vec<_>>();
        // Name order, so that [`Timeline::place`] may stop at the first best fits.
        out.sort_by_key(|(i, _)| self.rank[*i]);
        out
    }

    /// The job's GPUs on node `i` over `[t, end)`: (usable GPU count, chosen mask).
    fn fit(
        &self,
        i: usize,
        typed: u128,
        job: &PendingJob,
        t: i64,
        end: i64,
        res: bool,
    ) -> Option<(Key, u128)> {
        let member = self.member_ids(job);
        if t == self.now
            && end > self.now
            && self.ignoring.is_empty()
            && member.is_empty()
            && !self.reference
        {
            // The intervals of the node that begin at or before `now` and overlap
            // `[now, end)` are exactly those summarised in `now_*`; the others are in
            // `later`.
            if self.now_exclusive[i] {
                return None;
            }
            let held = Held {
                busy: self.now_busy[i],
                any: self.now_any[i],
                cpus: self.now_cpus[i],
                mem: self.now_mem[i],
            };
            let held = overlapping(&self.later[i], held, t, end, res, |_| false)?;
            return self.fit_mask(i, typed, job, held);
        }
        let held = overlapping(&self.intervals[i], Held::default(), t, end, res, |iv| {
            (!self.ignoring.is_empty() && self.ignoring.contains(&iv.job))
                || (iv.job < 0 && member.contains(&iv.job))
        })?;
        self.fit_mask(i, typed, job, held)
    }

    /// The job's GPUs on node `i` (GPUs of the wanted type `typed`) where `held` is held
    /// (see [`pick_gpus`] for the choice among the node's topology domains): its key
    /// (weight, usable GPUs) and the mask chosen; `None` when its GPUs, CPUs or memory do
    /// not fit.
    fn fit_mask(&self, i: usize, typed: u128, job: &PendingJob, held: Held) -> Option<(Key, u128)> {
        let node = &self.nodes[i];
        if (job.exclusive || job.whole_node) && held.any {
            return None;
        }
        let (cpus, mem) = need(job, node)?;
        if node.cpus > 0 && held.cpus + u64::from(cpus) > u64::from(node.cpus) {
            return None;
        }
        if node.memory_mib > 0 && held.mem + mem > node.memory_mib {
            return None;
        }
        if job.whole_node {
            return Some((key(node.weight, typed.count_ones()), typed));
        }
        let usable = typed & !held.busy;
        if usable.count_ones() < job.gpus_per_node {
            return None;
        }
        let mut count = usable.count_ones();
        if let Some((cpus_per_gpu, mem_per_gpu)) = self.fragmentation {
            // GPUs left that the CPUs and memory left could not feed.
            let gpus_left = f64::from(usable.count_ones() - job.gpus_per_node);
            let mut fed = gpus_left;
            if node.cpus > 0 && cpus_per_gpu > 0.0 {
                let left = u64::from(node.cpus).saturating_sub(held.cpus + u64::from(cpus));
                fed = fed.min((left as f64 / cpus_per_gpu).floor());
            }
            if node.memory_mib > 0 && mem_per_gpu > 0.0 {
                let left = node.memory_mib.saturating_sub(held.mem + mem);
                fed = fed.min((left as f64 / mem_per_gpu).floor());
            }
            let stranded = (gpus_left - fed) as u32;
            count |= stranded << 8;
        }
        Some((
            key(node.weight, count),
            pick_gpus(usable, job.gpus_per_node, &self.domains[i]),
        ))
    }

    /// Chooses `job.nodes` nodes for the job over `[t, t + limit)`. Starts (`packed`)
    /// take the nodes with the fewest usable GPUs first; reservations take them in a
    /// fixed order (fewest GPUs of the wanted type, then name), so a job backfilled
    /// around a reservation cannot make the next pass choose other nodes for it.
    fn place(
        &self,
        cands: &[(usize, u128)],
        job: &PendingJob,
        t: i64,
        res: bool,
        packed: bool,
    ) -> Option<Vec<(usize, u128)>> {
        let want = job.nodes as usize;
        if want == 0 || cands.len() < want {
            return None;
        }
        let end = t.saturating_add(job.time_limit.unwrap_or(FOREVER));
        let order = |i: usize, typed: u128, usable: Key| {
            if packed {
                usable
            } else {
                key(self.nodes[i].weight, typed.count_ones())
            }
        };
        if constraint_spans_nodes(job.constraint.as_deref()) {
            let c = self.constraint(job.constraint.as_deref()?)?;
            let mut fits: Vec<(Key, u32, usize, u128)> = cands
                .iter()
                .filter_map(|(i, typed)| {
                    let (usable, chosen) = self.fit(*i, *typed, job, t, end, res)?;
                    Some((order(*i, *typed, usable), self.rank[*i], *i, chosen))
                })
                .collect();
            fits.sort_unstable();
            let features: Vec<&[String]> = fits
                .iter()
                .map(|f| self.nodes[f.2].features.as_slice())
                .collect();
            let required: Vec<bool> = fits
                .iter()
                .map(|f| job.nodelist.contains(&self.nodes[f.2].name))
                .collect();
            if required.iter().filter(|r| **r).count() != job.nodelist.len() {
                return None;
            }
            let chosen = c.choose(&features, &required, job.nodes as usize)?;
            return Some(chosen.into_iter().map(|k| (fits[k].2, fits[k].3)).collect());
        }
        // `-w` naming fewer nodes than the job wants: those first, the rest by the usual
        // order among the others.
        if !job.nodelist.is_empty() && job.nodelist.len() < want {
            let mut required = Vec::new();
            for (i, typed) in cands {
                if job.nodelist.contains(&self.nodes[*i].name) {
                    required.push((*i, self.fit(*i, *typed, job, t, end, res)?.1));
                }
            }
            if required.len() != job.nodelist.len() {
                return None;
            }
            let mut fits: Vec<(Key, u32, usize, u128)> = cands
                .iter()
                .filter(|(i, _)| !job.nodelist.contains(&self.nodes[*i].name))
                .filter_map(|(i, typed)| {
                    let (usable, chosen) = self.fit(*i, *typed, job, t, end, res)?;
                    Some((order(*i, *typed, usable), self.rank[*i], *i, chosen))
                })
                .collect();
            if fits.len() + required.len() < want {
                return None;
            }
            fits.sort_unstable();
            let rest = want - required.len();
            required.extend(fits.into_iter().take(rest).map(|(_, _, i, m)| (i, m)));
            return Some(required);
        }
        if self.reference {
            let mut fits: Vec<(Key, &str, usize, u128)> = cands
                .iter()
                .filter_map(|(i, typed)| {
                    self.fit(*i, *typed, job, t, end, res)
                        .map(|(usable, chosen)| {
                            (
                                order(*i, *typed, usable),
                                self.nodes[*i].name.as_str(),
                                *i,
                                chosen,
                            )
                        })
                })
                .collect();
            if fits.len() < want {
                return None;
            }
            // Stable: equal names stay in index order.
            fits.sort_by_key(|(_, _, i, _)| *i);
            fits.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
            return Some(
                fits.into_iter()
                    .take(want)
                    .map(|(_, _, i, m)| (i, m))
                    .collect(),
            );
        }
        // No node's key can be below this (with the node's weight): a fit has at least
        // `gpus_per_node` usable GPUs (of the wanted type), except for whole-node jobs.
        let floor = if job.whole_node { 0 } else { job.gpus_per_node };
        // The `want` best (key, rank) so far; `cands` are in rank order (weight, then
        // name), so once all of them have the lowest key a later node could have, no
        // later node can displace one.
        let mut best: std::collections::BinaryHeap<(Key, u32, usize, u128)> =
            std::collections::BinaryHeap::with_capacity(want + 1);
        for (i, typed) in cands {
            let Some((usable, chosen)) = self.fit(*i, *typed, job, t, end, res) else {
                continue;
            };
            let entry = (order(*i, *typed, usable), self.rank[*i], *i, chosen);
            if best.len() < want {
                best.push(entry);
            } else if best.peek().is_some_and(|worst| entry < *worst) {
                best.pop();
                best.push(entry);
            }
            let lowest = key(self.nodes[*i].weight, floor);
            if best.len() == want && best.peek().is_some_and(|worst| worst.0 <= lowest) {
                break;
            }
        }
        if best.len() < want {
            return None;
        }
        Some(
            best.into_sorted_vec()
                .into_iter()
                .map(|(_, _, i, m)| (i, m))
                .collect(),
        )
    }

    /// Whether the job fits now on `cands`, reservations aside (the `Priority`/`Resources`
    /// question): the first `nodes` nodes it fits on, or `None`.
    fn fits_now_ignoring_reservations(
        &self,
        cands: &[(usize, u128)],
        job: &PendingJob,
    ) -> Option<Vec<(usize, u128)>> {
        let want = job.nodes as usize;
        if want == 0 {
            return None;
        }
        if self.special(job) {
            return self.place(cands, job, self.now, false, true);
        }
        let end = self.now.saturating_add(job.time_limit.unwrap_or(FOREVER));
        let nodes: Vec<(usize, u128)> = cands
            .iter()
            .filter(|(i, typed)| self.fit(*i, *typed, job, self.now, end, false).is_some())
            .take(want)
            .copied()
            .collect();
        (nodes.len() == want).then_some(nodes)
    }

    /// The first of `now` and node `i`'s interval ends at which it can hold the job
    /// ([`FOREVER`]: never), for a node that is not `slow` and a time limit of at least a
    /// second. Every interval of such a node begins at or before `now`, so it overlaps a
    /// window `[t, t + limit)` (`t` at or after `now`) exactly while `t` is before its end,
    /// whatever the limit: the node's fit only improves, at its own interval ends.
    fn first_able(&self, i: usize, typed: u128, job: &PendingJob) -> i64 {
        let limit = job.time_limit.unwrap_or(FOREVER);
        let feasible = |t: i64| {
            self.fit(i, typed, job, t, t.saturating_add(limit), true)
                .is_some()
        };
        if feasible(self.now) {
            return self.now;
        }
        let mut after = self.now;
        loop {
            let next = self.intervals[i]
                .iter()
                .map(|iv| iv.end)
                .filter(|e| *e > after && *e != FOREVER)
                .min();
            let Some(t) = next else { return FOREVER };
            if feasible(t) {
                return t;
            }
            after = t;
        }
    }

    /// The times at which slow node `i` starts (+1) or stops (-1) being able to hold the
    /// job, among `now` and the interval ends after it, up to `bound`, pushed to `events`.
    /// An interval's overlap with `[t, t + limit)` changes only where `t` passes the
    /// interval's end or comes within `limit` of its start, so the node's fit is weighed
    /// at those times only.
    fn able_changes(
        &self,
        i: usize,
        typed: u128,
        job: &PendingJob,
        bound: i64,
        events: &mut Vec<(i64, i32)>,
    ) {
        let now = self.now;
        let limit = job.time_limit.unwrap_or(FOREVER);
        // The first time, of `now` and the interval ends after it, at or after `x`.
        let first_at = |x: i64| {
            if x <= now {
                Some(now)
            } else {
                self.ends.range(x..).next().copied()
            }
        };
        let mut points: Vec<i64> = vec![now];
        for iv in &self.intervals[i] {
            // The window reaches the interval from `t + limit > start` on.
            let reach = i128::from(iv.start) - i128::from(limit) + 1;
            let reach = reach.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
            points.extend(first_at(reach));
            points.extend(first_at(iv.end));
        }
        points.sort_unstable();
        points.dedup();
        let mut able = false;
        for t in points.into_iter().take_while(|t| *t <= bound) {
            let now_able = self
                .fit(i, typed, job, t, t.saturating_add(limit), true)
                .is_some();
            if now_able != able {
                events.push((t, if now_able { 1 } else { -1 }));
                able = now_able;
            }
        }
    }

    /// The job's earliest start on `cands` the plain way: the first of `now` and the
    /// interval ends after it at which [`Timeline::place`] (reservations counted, fixed
    /// node order) finds room, with that placement.
    fn earliest_scan(
        &self,
        cands: &[(usize, u128)],
        job: &PendingJob,
        now: i64,
    ) -> Option<(i64, Vec<(usize, u128)>)> {
        std::iter::once(now)
            .chain(self.ends.range(now + 1..).copied())
            .find_map(|t| self.place(cands, job, t, true, false).map(|p| (t, p)))
    }

    /// The placements of `chosen`, in host-name order (numbers compared as numbers, as
    /// Slurm sorts its node lists), so node index 0 (the batch node) is the first name of
    /// `SLURM_JOB_NODELIST`.
    fn placements(&self, chosen: &[(usize, u128)], job: &PendingJob) -> Vec<Placement> {
        let mut chosen = chosen.to_vec();
        chosen.sort_by_key(|(i, _)| host_sort_key(&self.nodes[*i].name));
        chosen
            .iter()
            .map(|(i, mask)| {
                let node = &self.nodes[*i];
                let (cpus, mem_mib) = need(job, node).unwrap_or_default();
                Placement {
                    cpus,
                    mem_mib,
                    node_id: node.id,
                    gpus: node
                        .gpus
                        .iter()
                        .take(128)
                        .enumerate()
                        .filter(|(p, _)| mask & (1 << p) != 0)
                        .map(|(_, (g, _))| *g)
                        .collect(),
                }
            })
            .collect()
    }

    fn hold(&mut self, chosen: &[(usize, u128)], job: &PendingJob, start: i64, res: bool) -> i64 {
        let end = start.saturating_add(job.time_limit.unwrap_or(FOREVER));
        for (i, mask) in chosen {
            let (cpus, mem) = need(job, &self.nodes[*i]).unwrap_or_default();
            self.add(
                *i,
                Interval {
                    job: job.id,
                    start,
                    end,
                    mask: *mask,
                    cpus,
                    mem,
                    exclusive: job.exclusive || job.whole_node,
                    reservation: res,
                },
            );
        }
        end
    }
}

/// Nodes (timeline index) and GPU masks chosen for a job.
type Chosen = Vec<(usize, u128)>;

/// Everything [`Timeline::candidates`] reads of a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct CandidateKey<'a> {
    partition_nodes: &'a [String],
    constraint: Option<&'a str>,
    gpu_type: Option<&'a str>,
    shards: bool,
    whole_node: bool,
    gpus_per_node: u32,
    /// Nodes wanted, where `-w` names nodes (0 otherwise).
    nodes: u32,
    nodelist: &'a [String],
    exclude: &'a [String],
    reservation: Option<&'a str>,
}

/// Everything a placement at `now` reads of a job besides its candidate nodes and its
/// time limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Shape<'a> {
    candidates: CandidateKey<'a>,
    exclusive: bool,
    nodes: u32,
    cpus_per_node: u32,
    mem_per_node_mib: Option<u64>,
}

impl<'a> Shape<'a> {
    fn of(job: &'a PendingJob) -> Self {
        Shape {
            candidates: CandidateKey {
                partition_nodes: &job.partition_nodes,
                constraint: job.constraint.as_deref(),
                gpu_type: job.gpu_type.as_deref(),
                shards: job.shards,
                whole_node: job.whole_node,
                gpus_per_node: job.gpus_per_node,
                nodes: if job.nodelist.is_empty() {
                    0
                } else {
                    job.nodes
                },
                nodelist: &job.nodelist,
                exclude: &job.exclude,
                reservation: job.reservation.as_deref(),
            },
            exclusive: job.exclusive,
            nodes: job.nodes,
            cpus_per_node: job.cpus_per_node,
            mem_per_node_mib: job.mem_per_node_mib,
        }
    }
}

/// What one pass has learnt about placements at `now`, so that the many jobs of one
/// shape that cannot start are not each fitted against every node (as Slurm's backfill
/// skips a job identical to one that did not fit).
///
/// Sound because within a pass the timeline only gains intervals (starts, reservations
/// and the holds of preemptions; a preemption's victims keep theirs), so every node's
/// fit at `now` only gets worse, and because a longer time limit only overlaps more: a
/// shape that did not fit with a window ending at `e` does not fit with any window
/// ending at or after `e`, for the rest of the pass. Placements weighing a preemption
/// (with intervals ignored) never go through here.
#[derive(Debug, Default)]
struct NowCache {
    /// Per shape (its number in the pass): the earliest window end with which it did not
    /// fit now, reservations counted.
    no_fit: Vec<Option<i64>>,
    /// The same with reservations ignored.
    no_fit_ignoring: Vec<Option<i64>>,
    /// Per shape: nodes on which it last fitted now, reservations ignored: when they all
    /// still fit, it still does.
    fit_ignoring: Vec<Option<Chosen>>,
}

/// Lowers a shape's "did not fit with a window ending at `end`".
fn note_no_fit(slots: &mut Vec<Option<i64>>, shape: usize, end: i64) {
    if slots.len() <= shape {
        slots.resize(shape + 1, None);
    }
    let e = slots[shape].get_or_insert(end);
    *e = (*e).min(end);
}

impl NowCache {
    /// [`Timeline::place`] now, reservations counted, best fit first, for a job of the
    /// shape numbered `shape` (every job of it has the candidate list `list`).
    fn place(
        &mut self,
        timeline: &Timeline<'_>,
        list: usize,
        shape: usize,
        cands: &[(usize, u128)],
        job: &PendingJob,
    ) -> Option<Chosen> {
        let end = timeline
            .now
            .saturating_add(job.time_limit.unwrap_or(FOREVER));
        if timeline.reference {
            return timeline.place(cands, job, timeline.now, true, true);
        }
        if self
            .no_fit
            .get(shape)
            .copied()
            .flatten()
            .is_some_and(|e| end >= e)
        {
            return None;
        }
        let placed = timeline.place_now(list, cands, job);
        if placed.is_none() {
            note_no_fit(&mut self.no_fit, shape, end);
        }
        placed
    }

    /// Whether the job (of the shape numbered `shape`) would fit now if it were not for
    /// reservations.
    fn fits_ignoring_reservations(
        &mut self,
        timeline: &Timeline<'_>,
        shape: usize,
        cands: &[(usize, u128)],
        job: &PendingJob,
    ) -> bool {
        let now = timeline.now;
        let end = now.saturating_add(job.time_limit.unwrap_or(FOREVER));
        if timeline.reference {
            return timeline.place(cands, job, now, false, true).is_some();
        }
        if self
            .no_fit_ignoring
            .get(shape)
            .copied()
            .flatten()
            .is_some_and(|e| end >= e)
        {
            return false;
        }
        if let Some(Some(nodes)) = self.fit_ignoring.get(shape) {
            if nodes
                .iter()
                .all(|(i, typed)| timeline.fit(*i, *typed, job, now, end, false).is_some())
            {
                return true;
            }
        }
        match timeline.fits_now_ignoring_reservations(cands, job) {
            Some(nodes) => {
                if self.fit_ignoring.len() <= shape {
                    self.fit_ignoring.resize(shape + 1, None);
                }
                self.fit_ignoring[shape] = Some(nodes);
                true
            }
            None => {
                note_no_fit(&mut self.no_fit_ignoring, shape, end);
                false
            }
        }
    }
}

/// The earliest starts of a pass's reservations, kept per candidate list and fit (what
/// [`Timeline::fit_mask`] reads of a job: exclusive, whole node, GPUs per node) across
/// the pass: each node's first able time ([`Timeline::first_able`]) for the nodes that are
/// not `slow`, brought up to date for the nodes that gained an interval since, so that a
/// reservation weighs the few `slow` nodes one by one and reads the others' times instead
/// of sweeping every node's intervals.
#[derive(Debug, Default)]
struct FirstAble {
    /// (candidate list, exclusive, whole node, GPUs per node, CPUs per node, memory per
    /// node) → its first able times.
    lists: HashMap<FitKey, FirstAbleTimes>,
}

/// What a fit reads of a job besides its candidate list: (list, exclusive, whole node, GPUs
/// per node, CPUs per node, memory per node).
type FitKey = (usize, bool, bool, u32, u32, Option<u64>);

/// One candidate list's first able times for one fit.
#[derive(Debug)]
struct FirstAbleTimes {
    /// How much of [`Timeline::changed`] they have caught up on.
    synced: usize,
    /// Per node: its first able time; [`FOREVER`] for never, for a `slow` node and for a
    /// node not in the list.
    first: Vec<i64>,
}

impl FirstAble {
    /// The job's earliest start on the candidate list `list` (`cands`): the first of `now`
    /// and the interval ends after it at which [`Timeline::place`] (reservations counted,
    /// fixed node order) finds room, with that placement; the same as
    /// [`Timeline::earliest_scan`].
    fn earliest(
        &mut self,
        timeline: &Timeline<'_>,
        list: usize,
        cands: &[(usize, u128)],
        job: &PendingJob,
    ) -> Option<(i64, Chosen)> {
        let now = timeline.now;
        let want = job.nodes as usize;
        let limit = job.time_limit.unwrap_or(FOREVER);
        if timeline.reference
            || now == FOREVER
            || limit < 1
            || want == 0
            || cands.len() < want
            || !timeline.ignoring.is_empty()
            || timeline.special(job)
        {
            return timeline.earliest_scan(cands, job, now);
        }
        let typed_in = |i: usize| {
            timeline.indexed_in[i]
                .iter()
                .find(|(k, _)| *k == list)
                .map(|(_, typed)| *typed)
        };
        let FirstAbleTimes { synced, first } = self
            .lists
            .entry((
                list,
                job.exclusive,
                job.whole_node,
                job.gpus_per_node,
                job.cpus_per_node,
                job.mem_per_node_mib,
            ))
            .or_insert_with(|| {
                let mut first = vec![FOREVER; timeline.nodes.len()];
                for &(i, typed) in cands {
                    if !timeline.slow[i] {
                        first[i] = timeline.first_able(i, typed, job);
                    }
                }
                FirstAbleTimes {
                    synced: timeline.changed.len(),
                    first,
                }
            });
        for &i in &timeline.changed[*synced..] {
            if let Some(typed) = typed_in(i) {
                first[i] = if timeline.slow[i] {
                    FOREVER
                } else {
                    timeline.first_able(i, typed, job)
                };
            }
        }
        *synced = timeline.changed.len();
        // By the `want`-th first able time of the nodes that are not slow, `want` nodes can
        // hold the job (those never stop being able), so the start is no later.
        let mut soonest: std::collections::BinaryHeap<i64> =
            std::collections::BinaryHeap::with_capacity(want + 1);
        for &f in first.iter().filter(|f| **f != FOREVER) {
            if soonest.len() < want {
                soonest.push(f);
            } else if soonest.peek().is_some_and(|worst| f < *worst) {
                soonest.pop();
                soonest.push(f);
            }
        }
        let bound = if soonest.len() == want {
            soonest.peek().copied().unwrap_or(FOREVER)
        } else {
            FOREVER
        };
        // (time, +1 a node becomes able, -1 it stops being able)
        let mut events: Vec<(i64, i32)> = first
            .iter()
            .filter(|f| **f != FOREVER && **f <= bound)
            .map(|f| (*f, 1))
            .collect();
        let slow = &timeline.indexes[list].slow;
        for &(i, typed) in slow {
            timeline.able_changes(i, typed, job, bound, &mut events);
        }
        events.sort_unstable();
        let mut able = 0i64;
        let mut k = 0;
        while k < events.len() {
            let t = events[k].0;
            while k < events.len() && events[k].0 == t {
                able += i64::from(events[k].1);
                k += 1;
            }
            if able < want as i64 {
                continue;
            }
            // The nodes able at `t` in [`Timeline::place`]'s fixed order: fewest GPUs of
            // the wanted type, then name.
            let end = t.saturating_add(limit);
            let mut fits: Vec<(Key, u32, usize, u128)> = Vec::new();
            let able_at = first
                .iter()
                .enumerate()
                .filter(|(_, f)| **f <= t)
                .filter_map(|(i, _)| Some((i, typed_in(i)?)))
                .chain(slow.iter().copied());
            for (i, typed) in able_at {
                if let Some((_, chosen)) = timeline.fit(i, typed, job, t, end, true) {
                    let weight = timeline.nodes[i].weight;
                    fits.push((key(weight, typed.count_ones()), timeline.rank[i], i, chosen));
                }
            }
            debug_assert!(fits.len() >= want, "earliest: no room at {t} after all");
            if fits.len() < want {
                return timeline.earliest_scan(cands, job, now);
            }
            fits.sort_unstable();
            return Some((
                t,
                fits.into_iter()
                    .take(want)
                    .map(|(_, _, i, m)| (i, m))
                    .collect(),
            ));
        }
        None
    }
}

/// The running jobs `job` may preempt to start now, and where it would then run; `None`
/// when its QOS preempts nothing, or not even every candidate would make room. The plain
/// way (tests): every step a full placement; [`Preemptions::weigh`] decides the same.
fn preemption_for(
    snapshot: &Snapshot,
    timeline: &mut Timeline<'_>,
    cands: &[(usize, u128)],
    job: &PendingJob,
    taken: &JobIds,
) -> Option<(Vec<Preemption>, Chosen)> {
    let mine = snapshot.qos_preemption.get(&job.qos)?;
    if mine.preempt.is_empty() {
        return None;
    }
    let none = QosPreemption::default();
    let setting = |qos: &str| snapshot.qos_preemption.get(qos).unwrap_or(&none);
    let mut candidates: Vec<&RunningJob> = snapshot
        .running_jobs
        .iter()
        .filter(|r| {
            r.qos != job.qos
                && mine.preempt.contains(&r.qos)
                && !setting(&r.qos).preempt.contains(&job.qos)
                && !taken.contains(&r.job_id)
                && snapshot.now >= r.start.saturating_add(setting(&r.qos).exempt_time)
        })
        .collect();
    if candidates.is_empty() {
        return None;
    }
    candidates.sort_by_key(|r| (setting(&r.qos).priority, -r.start, -r.job_id));
    let now = snapshot.now;
    let mut chosen: Vec<i64> = Vec::new();
    let mut fits = false;
    for r in &candidates {
        chosen.push(r.job_id);
        timeline.ignoring.insert(r.job_id);
        if timeline.place(cands, job, now, true, true).is_some() {
            fits = true;
            break;
        }
    }
    if !fits {
        timeline.ignoring.clear();
        return None;
    }
    // Keep only the victims it cannot fit without, the most valuable looked at first.
    for id in chosen.clone().into_iter().rev() {
        timeline.ignoring.remove(&id);
        if timeline.place(cands, job, now, true, true).is_some() {
            chosen.retain(|c| *c != id);
        } else {
            timeline.ignoring.insert(id);
        }
    }
    let placement = timeline.place(cands, job, now, true, true);
    timeline.ignoring.clear();
    let placement = placement?;
    let victims = chosen
        .into_iter()
        .map(|victim| {
            let qos = candidates
                .iter()
                .find(|r| r.job_id == victim)
                .map_or("", |r| r.qos.as_str());
            Preemption {
                victim,
                preemptor: job.id,
                mode: setting(qos).mode,
                grace_time: setting(qos).grace_time,
            }
        })
        .collect();
    Some((victims, placement))
}

/// What a pass keeps to weigh preemptions quickly: [`preemption_for`] with each preempting
/// QOS's candidate victims listed and ordered once, the nodes of each running job, the
/// shapes that found no room, and a count of the candidate nodes the job fits on that is
/// brought up to date for a victim's nodes only, instead of a placement over every node
/// at each step.
///
/// A failure is remembered like [`NowCache`]'s: within a pass the candidates only shrink
/// (victims taken) and the timeline only gains intervals, so a job of a shape and QOS that
/// found no room with a window ending at `e` finds none with a window ending at or after
/// `e`.
#[derive(Debug, Default)]
struct Preemptions<'a> {
    /// Preempting QOS → (how many victims were taken when it was last filtered, its
    /// candidates in the order they are tried; those taken since are passed over).
    candidates: HashMap<&'a str, (usize, Vec<&'a RunningJob>)>,
    /// Running job → its nodes (timeline index); built at the first weighing.
    nodes_of: Option<JobIdMap<Vec<usize>>>,
    /// (shape number, QOS) → the earliest window end with which it found no room.
    no_room: HashMap<(usize, &'a str), i64>,
}

impl<'a> Preemptions<'a> {
    /// [`preemption_for`] for a job of the shape numbered `shape` (candidate nodes
    /// `cands`).
    fn weigh(
        &mut self,
        snapshot: &'a Snapshot,
        timeline: &mut Timeline<'_>,
        shape: usize,
        cands: &[(usize, u128)],
        job: &'a PendingJob,
        taken: &JobIds,
    ) -> Option<(Vec<Preemption>, Chosen)> {
        let mine = snapshot.qos_preemption.get(&job.qos)?;
        if mine.preempt.is_empty() {
            return None;
        }
        let now = snapshot.now;
        let end = now.saturating_add(job.time_limit.unwrap_or(FOREVER));
        let room_key = (shape, job.qos.as_str());
        if self.no_room.get(&room_key).is_some_and(|e| end >= *e) {
            return None;
        }
        let none = QosPreemption::default();
        let setting = |qos: &str| snapshot.qos_preemption.get(qos).unwrap_or(&none);
        let (filtered, candidates) = self.candidates.entry(job.qos.as_str()).or_insert_with(|| {
            let mut candidates: Vec<&RunningJob> = snapshot
                .running_jobs
                .iter()
                .filter(|r| {
                    r.qos != job.qos
                        && mine.preempt.contains(&r.qos)
                        && !setting(&r.qos).preempt.contains(&job.qos)
                        && now >= r.start.saturating_add(setting(&r.qos).exempt_time)
                })
                .collect();
            candidates.sort_by_key(|r| (setting(&r.qos).priority, -r.start, -r.job_id));
            (0, candidates)
        });
        if taken.len() >= *filtered + 64 {
            candidates.retain(|r| !taken.contains(&r.job_id));
            *filtered = taken.len();
        }
        let nodes_of = self.nodes_of.get_or_insert_with(|| {
            let index: HashMap<i64, usize> = snapshot
                .nodes
                .iter()
                .enumerate()
                .map(|(i, n)| (n.id, i))
                .collect();
            let mut nodes_of: JobIdMap<Vec<usize>> = JobIdMap::default();
            for a in &snapshot.running {
                if let Some(&i) = index.get(&a.node_id) {
                    nodes_of.entry(a.job_id).or_default().push(i);
                }
            }
            nodes_of
        });
        // The job's fit on each candidate node now (reservations counted) with the victims
        // so far ignored, and on how many it fits: it fits when `want` of them do.
        let want = job.nodes as usize;
        let mut typed_of: Vec<Option<u128>> = vec![None; timeline.nodes.len()];
        let mut fitting: Vec<Option<(Key, u128)>> = vec![None; timeline.nodes.len()];
        let mut count = 0usize;
        for &(i, typed) in cands {
            typed_of[i] = Some(typed);
            fitting[i] = timeline.fit(i, typed, job, now, end, true);
            count += usize::from(fitting[i].is_some());
        }
        // Weighs the victim's nodes again after it was ignored or counted again (`back`):
        // a victim counted again makes no node fit that did not, so one on no fitting node
        // changes nothing.
        let mut refit = |timeline: &Timeline<'_>, victim: i64, back: bool| {
            let nodes = nodes_of.get(&victim).map_or(&[][..], Vec::as_slice);
            if back && nodes.iter().all(|i| fitting[*i].is_none()) {
                return count >= want;
            }
            for &i in nodes {
                let Some(typed) = typed_of[i] else { continue };
                let fit = timeline.fit(i, typed, job, now, end, true);
                count = count + usize::from(fit.is_some()) - usize::from(fitting[i].is_some());
                fitting[i] = fit;
            }
            count >= want
        };
        let mut chosen: Vec<&RunningJob> = Vec::new();
        let mut fits = false;
        for r in candidates.iter() {
            if taken.contains(&r.job_id) {
                continue;
            }
            chosen.push(r);
            timeline.ignoring.insert(r.job_id);
            if refit(timeline, r.job_id, false) {
                fits = true;
                break;
            }
        }
        if !fits {
            timeline.ignoring.clear();
            let e = self.no_room.entry(room_key).or_insert(end);
            *e = (*e).min(end);
            return None;
        }
        // Keep only the victims it cannot fit without, the most valuable looked at first.
        let mut kept = vec![true; chosen.len()];
        for (k, r) in chosen.iter().enumerate().rev() {
            timeline.ignoring.remove(&r.job_id);
            if refit(timeline, r.job_id, true) {
                kept[k] = false;
            } else {
                timeline.ignoring.insert(r.job_id);
                refit(timeline, r.job_id, false);
            }
        }
        timeline.ignoring.clear();
        // [`Timeline::place`]'s choice (best fit first, then name) among the fits.
        let mut best: Vec<(Key, u32, usize, u128)> = cands
            .iter()
            .filter_map(|&(i, _)| {
                let (usable, mask) = fitting[i]?;
                Some((usable, timeline.rank[i], i, mask))
            })
            .collect();
        best.sort_unstable();
        let placement: Chosen = best
            .into_iter()
            .take(want)
            .map(|(_, _, i, mask)| (i, mask))
            .collect();
        debug_assert_eq!(placement.len(), want);
        let victims = chosen
            .iter()
            .zip(kept)
            .filter(|(_, kept)| *kept)
            .map(|(r, _)| Preemption {
                victim: r.job_id,
                preemptor: job.id,
                mode: setting(&r.qos).mode,
                grace_time: setting(&r.qos).grace_time,
            })
            .collect();
        Some((victims, placement))
    }
}

/// Plans the next starts. Deterministic: the same snapshot gives the same plan.
pub fn plan(snapshot: &Snapshot, config: &PlannerConfig) -> Plan {
    plan_with(snapshot, config, false)
}

/// [`plan`]; `reference` (tests) takes the plain, slow path everywhere: no caches, every
/// fit from the intervals, every placement by a full sort, every earliest start by trying
/// each time in turn.
fn plan_with(snapshot: &Snapshot, config: &PlannerConfig, reference: bool) -> Plan {
    let now = snapshot.now;
    // The queue: each job's sort key (its place in `pending` last, so that the unstable
    // sort keeps equal jobs in that order) with its priority, then the jobs.
    let mut keys: Vec<(i64, i64, i64, usize, i64)> = snapshot
        .pending
        .iter()
        .zip(pending_priorities(snapshot, config))
        .enumerate()
        .map(|(k, (j, f))| {
            let p = f.priority;
            match config.order {
                QueueOrder::Multifactor => (p.saturating_neg(), j.submit_time, j.id, k, p),
                QueueOrder::Submit => (0, j.submit_time, j.id, k, p),
            }
        })
        .collect();
    keys.sort_unstable();
    let order = keys
        .into_iter()
        .map(|(_, _, _, k, p)| (p, &snapshot.pending[k]));
    let mut timeline = Timeline::new(snapshot);
    timeline.reference = reference;
    if config.fit == NodeFit::Fragmentation {
        let (mut gpus, mut cpus, mut mem) = (0f64, 0f64, 0f64);
        for j in snapshot.pending.iter().filter(|j| j.gpus_per_node > 0) {
            gpus += f64::from(j.gpus_per_node);
            cpus += f64::from(j.cpus_per_node.max(1));
            mem += j.mem_per_node_mib.unwrap_or(0) as f64;
        }
        timeline.fragmentation = Some(if gpus > 0.0 {
            (cpus / gpus, mem / gpus)
        } else {
            (0.0, 0.0)
        });
    }
    let mut tally = Tally::new(&snapshot.accounts, &snapshot.qos_limits);
    for r in &snapshot.running_jobs {
        tally.add(&r.qos, &r.user, &r.account, r.cpus, r.gpus, r.nodes);
    }
    let no_limits = QosLimits::default();
    let mut out = Plan::default();
    out.pending.reserve(snapshot.pending.len());
    let mut reserved = 0usize;
    let mut fifo_blocked = false;
    let mut victims_taken = JobIds::default();
    let mut preemptions = Preemptions::default();
    // Each job shape seen → its number, with how many nodes its partition names (of the
    // snapshot's) and its candidate list once it has one; the shape is hashed once per
    // job, the rest looked up by number.
    let mut shapes: HashMap<Shape<'_>, usize> = HashMap::new();
    let mut shape_seen: Vec<(usize, Option<usize>)> = Vec::new();
    // Partition node list → how many nodes it names (for a new shape).
    let mut members_of: HashMap<&[String], usize> = HashMap::new();
    // What decides a job's candidate nodes → its list in `cand_lists` (for a new shape).
    let mut cand_index: HashMap<CandidateKey<'_>, usize> = HashMap::new();
    let mut cand_lists: Vec<Vec<(usize, u128)>> = Vec::new();
    // Per candidate list: its largest node's GPUs of the wanted type (what a whole-node
    // job's limits are checked against).
    let mut largest: Vec<u32> = Vec::new();
    let mut now_cache = NowCache::default();
    let mut first_able = FirstAble::default();
    for (priority, job) in order {
        macro_rules! wait {
            ($reason:expr, $expected:expr) => {
                out.pending.push(Waiting {
                    job_id: job.id,
                    reason: $reason.to_string(),
                    expected_start: $expected,
                    priority,
                })
            };
        }
        if let Some(held) = &job.held {
            wait!(held, None);
            continue;
        }
        if let Some(begin) = job.begin.filter(|b| *b > now) {
            wait!("BeginTime", Some(begin));
            continue;
        }
        match job.dependency {
            DependencyState::Satisfied => {}
            DependencyState::Waiting => {
                wait!("Dependency", None);
                continue;
            }
            DependencyState::Never => {
                wait!("DependencyNeverSatisfied", None);
                continue;
            }
        }
        if job
            .reservation
            .as_ref()
            .is_some_and(|r| !timeline.advance.contains_key(r))
        {
            wait!("ReservationDeleted", None);
            continue;
        }
        let limits = snapshot.qos_limits.get(&job.qos).unwrap_or(&no_limits);
        if job
            .partition_max_time
            .is_some_and(|m| job.time_limit.is_none_or(|t| t > m))
        {
            wait!("PartitionTimeLimit", None);
            continue;
        }
        if job.partition_max_nodes.is_some_and(|m| job.nodes > m) {
            wait!("PartitionNodeLimit", None);
            continue;
        }
        if limits
            .max_wall
            .is_some_and(|m| job.time_limit.is_none_or(|t| t > m))
        {
            wait!("QOSMaxWallDurationPerJobLimit", None);
            continue;
        }
        let shape_key = Shape::of(job);
        let shape = *shapes.entry(shape_key).or_insert_with(|| {
            let members = *members_of
                .entry(job.partition_nodes.as_slice())
                .or_insert_with(|| {
                    snapshot
                        .nodes
                        .iter()
                        .filter(|n| {
                            job.partition_nodes.is_empty() || job.partition_nodes.contains(&n.name)
                        })
                        .count()
                });
            shape_seen.push((members, None));
            shape_seen.len() - 1
        });
        let (members, seen_list) = shape_seen[shape];
        if job.nodes as usize > members {
            wait!("PartitionNodeLimit", None);
            continue;
        }
        let list = match seen_list.filter(|_| !reference) {
            Some(list) => list,
            None => {
                let next = cand_lists.len();
                let list = if reference {
                    next
                } else {
                    *cand_index.entry(shape_key.candidates).or_insert(next)
                };
                if list == next {
                    let cands = timeline.candidates(job);
                    if !reference {
                        timeline.index_list(&cands);
                    }
                    largest.push(cands.iter().map(|(_, m)| m.count_ones()).max().unwrap_or(0));
                    cand_lists.push(cands);
                }
                shape_seen[shape].1 = Some(list);
                list
            }
        };
        let cands = &cand_lists[list];
        if cands.len() < job.nodes as usize || job.nodes == 0 {
            wait!("ReqNodeNotAvail", None);
            continue;
        }
        if fifo_blocked {
            wait!("Priority", None);
            continue;
        }
        // Array tasks: start as many ready tasks as fit, within the throttle.
        let (tasks, room): (&[u32], u64) = match &job.array {
            Some(a) => (
                &a.ready,
                a.max_running
                    .map_or(u64::MAX, |m| u64::from(m.saturating_sub(a.running))),
            ),
            None => (&[0], 1),
        };
        if room == 0 {
            wait!("JobArrayTaskLimit", None);
            continue;
        }
        let mut started = 0u64;
        let mut blocked = false;
        let mut limited = None;
        // A whole-node job takes every GPU of the nodes it gets: its limits are checked
        // against the largest candidate nodes (it cannot take more), and charged with the
        // GPUs it is given.
        let gpus_needed = if job.whole_node {
            u64::from(job.nodes) * u64::from(largest[list])
        } else {
            u64::from(job.nodes.saturating_mul(job.gpus_per_node))
        };
        for &task in tasks.iter().take(room.min(tasks.len() as u64) as usize) {
            let task = job.array.as_ref().map(|_| task);
            if let Some(reason) = tally.blocks(job, limits, gpus_needed) {
                limited = Some(reason);
                break;
            }
            let placed = if timeline.window_open(job, now) {
                now_cache.place(&timeline, list, shape, cands, job)
            } else {
                None
            };
            match placed {
                Some(chosen) => {
                    timeline.hold(&chosen, job, now, false);
                    let placements = timeline.placements(&chosen, job);
                    let placed: usize = placements.iter().map(|p| p.gpus.len()).sum();
                    tally.add(
                        &job.qos,
                        &job.user,
                        &job.account,
                        job.cpus,
                        placed as u32,
                        job.nodes,
                    );
                    out.starts.push(Start {
                        job_id: job.id,
                        array_task_id: task,
                        placements,
                        exclusive: job.exclusive || job.whole_node,
                        priority,
                        time_limit: None,
                    });
                    started += 1;
                }
                None => {
                    blocked = true;
                    break;
                }
            }
        }
        if let Some(a) = &job.array {
            if started >= a.remaining {
                continue;
            }
        }
        if let Some(reason) = limited {
            wait!(reason, None);
            continue;
        }
        if job.array.is_some() {
            if !blocked {
                if started >= room {
                    wait!("JobArrayTaskLimit", None);
                } else {
                    wait!("Dependency", None);
                }
                continue;
            }
        } else if started == 1 {
            continue;
        }
        // Blocked: with a `--time-min`, start it now with a shorter limit where one fits
        // (never over a reservation, so no higher job is delayed).
        if job.array.is_none() && config.backfill && !fifo_blocked {
            if let Some((limit, chosen)) = timeline.shortened(cands, job) {
                let shorter = PendingJob {
                    time_limit: Some(limit),
                    ..job.clone()
                };
                timeline.hold(&chosen, &shorter, now, false);
                let placements = timeline.placements(&chosen, job);
                let placed: usize = placements.iter().map(|p| p.gpus.len()).sum();
                tally.add(
                    &job.qos,
                    &job.user,
                    &job.account,
                    job.cpus,
                    placed as u32,
                    job.nodes,
                );
                out.starts.push(Start {
                    job_id: job.id,
                    array_task_id: None,
                    placements,
                    exclusive: job.exclusive || job.whole_node,
                    priority,
                    time_limit: Some(limit),
                });
                continue;
            }
        }
        // Blocked: preempt for it when its QOS may, holding what the victims free (for an
        // array, what its next task needs). Jobs of an advance reservation preempt
        // nothing.
        if !job.preempting && job.reservation.is_none() {
            let weighed = if reference || timeline.special(job) {
                preemption_for(snapshot, &mut timeline, cands, job, &victims_taken)
            } else {
                preemptions.weigh(snapshot, &mut timeline, shape, cands, job, &victims_taken)
            };
            if let Some((victims, chosen)) = weighed {
                let grace = victims.iter().map(|v| v.grace_time).max().unwrap_or(0);
                let end = timeline.hold(&chosen, job, now, true);
                out.reservations.push(Reservation {
                    job_id: job.id,
                    start: now + grace,
                    end,
                    placements: timeline.placements(&chosen, job),
                });
                victims_taken.extend(victims.iter().map(|v| v.victim));
                out.preemptions.extend(victims);
                wait!("Resources", Some(now + grace));
                continue;
            }
        }
        // Blocked: reserve its earliest start, within the backfill depth.
        if !config.backfill {
            fifo_blocked = true;
            wait!("Resources", None);
            continue;
        }
        let closed = !timeline.window_open(job, now);
        let reason = if closed {
            "Reservation"
        } else if now_cache.fits_ignoring_reservations(&timeline, shape, cands, job) {
            "Priority"
        } else {
            "Resources"
        };
        let flex = job
            .reservation
            .as_ref()
            .and_then(|r| timeline.advance.get(r))
            .is_none_or(|a| a.flex);
        let mut expected = None;
        if reserved < config.backfill_depth || job.preempting {
            let earliest = if flex {
                first_able.earliest(&timeline, list, cands, job)
            } else {
                timeline.earliest_in_windows(cands, job)
            };
            if let Some((t, chosen)) = earliest {
                let end = timeline.hold(&chosen, job, t, true);
                out.reservations.push(Reservation {
                    job_id: job.id,
                    start: t,
                    end,
                    placements: timeline.placements(&chosen, job),
                });
                reserved += 1;
                expected = Some(t);
            }
        }
        wait!(reason, expected);
    }
    out
}

/// Sort key of a host name: its text before the trailing digits, then their value
/// (`node-2` before `node-10`).
fn host_sort_key(name: &str) -> (String, u64, String) {
    let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (head, tail) = name.split_at(name.len() - digits);
    (
        head.to_string(),
        tail.parse().unwrap_or(0),
        name.to_string(),
    )
}

#[cfg(test)]
mod tests;
