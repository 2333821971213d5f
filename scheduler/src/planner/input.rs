//! The planner's input: the snapshot of nodes, running allocations, pending jobs,
//! limits and advance reservations, and the planner's knobs.

use super::*;

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
    /// Hardware threads per core ([`berth_core::cores::CoreLayout`]): above 1, jobs are
    /// given whole cores, `cpus` counting only whole usable cores' CPUs; 0 or 1: each
    /// CPU is a core of its own.
    pub threads_per_core: u32,
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
    /// GPUs per node, the partition's `DefCpuPerGPU`); at least 1. On a node of several
    /// threads per core it holds whole cores for them
    /// ([`berth_core::cores::cpus_held`]).
    pub cpus_per_node: u32,
    /// The most hardware threads of each core it uses (Slurm's `threads_per_core`:
    /// `--hint=nomultithread` 1, [`berth_core::cores::hint_threads_per_core`]); `None`:
    /// all.
    pub threads_per_core: Option<u32>,
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
    pub(super) fn counts(&self) -> bool {
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
