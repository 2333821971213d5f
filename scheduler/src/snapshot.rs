//! The leader's in-memory snapshot, refreshed incrementally from the database.
//!
//! The first refresh of a term reads every row the planner needs: jobs not ended, nodes
//! and GPUs, live allocations, preemptions in flight, partitions, QOS, reservations, accounts, users'
//! default accounts and fairshare usage. Every later refresh reads only what changed since
//! the previous one (see [`berth_db::snapshot`]: rows stamped with the id of the
//! transaction that changed them, compared with the previous read's
//! `pg_current_snapshot()`), applies it to the rows it holds, and builds the planner's
//! [`Snapshot`] from them. Each refresh runs in one `REPEATABLE READ` transaction, so the
//! planner sees one consistent state of the database.
//!
//! Every refresh also checks that it runs on the same database server as the previous
//! one (system identifier, timeline, start time; [`berth_db::snapshot::ServerIdentity`])
//! and that transaction ids did not go back: after a failover, a promoted standby hands out
//! again ids its old primary had used for changes it never received, and rows stamped with
//! them would pass for already read. Either reads everything again, as does a refresh
//! after [`SnapshotCache::with_full_refresh`]'s interval (the backstop for any change the
//! tracking might miss).
//!
//! What is still computed each cycle: fairshare factors (usage decays with time), the
//! dependency state of pending jobs with a `--dependency` (their targets are read, being
//! possibly ended jobs the snapshot does not keep), and the priority inputs of each
//! pending job.

use crate::dependency::{self, Dependency, Target};
use crate::fairshare;
use crate::planner::{
    AccountLimits, AdvanceReservation, ArrayTasks, DependencyState, NodeView, PendingJob,
    PlannerConfig, PreemptMode, QosLimits, QosPreemption, ReservedNode, RunningAlloc, RunningJob,
    Snapshot, TresLimits,
};
use berth_core::array::IndexSet;
use berth_core::cores::{hint_threads_per_core, CoreLayout};
use berth_core::priority::ShareAccount;
use berth_db::account::{self, AccountRow};
use berth_db::partition::{self, PartitionRow};
use berth_db::qos::{self, QosRow};
use berth_db::reservation::{self, ReservationRow};
use berth_db::snapshot::{
    self as read, SchedAllocationRow, SchedGpuRow, SchedJobRow, SchedNodeRow, SchedPreemptionRow,
    ServerIdentity,
};
use berth_db::usage::{self, UsageRow};
use berth_db::{job, DbError, Pool};
use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// The pending reason of a requeued job whose previous run has not ended yet (its node
/// has not reported its processes gone, or it is being fenced).
pub const PREVIOUS_RUN_ENDING: &str = "PreviousRunEnding";

/// Shards are grouped by their GPU as topology domains numbered from here (apart from
/// the NUMA domains of the node's other devices).
const SHARD_DOMAIN: u32 = 1 << 20;

/// The most task indices of one array looked at per cycle.
const ARRAY_LOOKAHEAD: usize = 1024;

/// What the last refresh read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RefreshStats {
    /// It read everything (the first refresh, or one after a deletion).
    pub full: bool,
    /// Rows read from jobs, nodes, GPUs, allocations and preemptions.
    pub rows: usize,
    /// Small tables re-read whole (partitions, QOS, accounts, users, usage, reservations).
    pub tables: usize,
}

/// Why a refresh read everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FullRead {
    /// The cache's first refresh (a new term), or the first after an error.
    First,
    /// A row was deleted from a tracked table.
    Deleted,
    /// The database server is not the one of the previous refresh (a failover, a
    /// restore, a restart).
    ServerChanged,
    /// Transaction ids went back since the previous refresh.
    XidsWentBack,
    /// The periodic full read ([`SnapshotCache::with_full_refresh`]).
    Periodic,
}

/// The default interval of the periodic full read.
pub const FULL_REFRESH_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

/// A snapshot and what the commit needs besides the plan.
pub struct CycleInput {
    /// The planner's input.
    pub snapshot: Snapshot,
    /// Each pending job's fairshare association account (for the priority record).
    pub accounts: HashMap<i64, String>,
}

/// The rows the leader holds between cycles (see the module docs).
#[derive(Debug)]
pub struct SnapshotCache {
    /// The previous read's `pg_current_snapshot()`; `None` before the first.
    since: Option<String>,
    /// The server of the previous read.
    server: Option<ServerIdentity>,
    /// When the last full read ran (the refresh's `now`).
    full_at: Option<DateTime<Utc>>,
    /// How often to read everything whatever happened.
    full_every: std::time::Duration,
    /// Jobs PENDING (held too), RUNNING, SUSPENDED, COMPLETING, by id.
    jobs: BTreeMap<i64, SchedJobRow>,
    nodes: HashMap<i64, SchedNodeRow>,
    gpus: HashMap<(i64, i32), SchedGpuRow>,
    /// Live allocations, by id.
    allocations: BTreeMap<i64, SchedAllocationRow>,
    /// Preemptions not done, by (victim, run).
    preemptions: HashMap<(i64, i32), SchedPreemptionRow>,
    partitions: Vec<PartitionRow>,
    qos: Vec<QosRow>,
    accounts: Vec<AccountRow>,
    /// user → default account.
    default_accounts: HashMap<String, String>,
    usage: Vec<UsageRow>,
    reservations: Vec<ReservationRow>,
    /// What the last refresh read.
    pub last: RefreshStats,
    /// Why the last refresh read everything (`None` when it read only changes).
    pub last_full: Option<FullRead>,
}

impl Default for SnapshotCache {
    fn default() -> Self {
        SnapshotCache::with_full_refresh(FULL_REFRESH_EVERY)
    }
}

/// The `xmax` of a snapshot in PostgreSQL's text form (`xmin:xmax:xip,…`).
fn xmax(snapshot: &str) -> Option<u64> {
    snapshot.split(':').nth(1)?.parse().ok()
}

/// Whether a refresh must read everything rather than the changes since `since`, and why
/// (see the module docs): `server` and `snapshot` are this refresh's, `now` its time.
pub fn full_read_needed(
    since: Option<&str>,
    previous: Option<&ServerIdentity>,
    full_at: Option<DateTime<Utc>>,
    full_every: std::time::Duration,
    server: &ServerIdentity,
    snapshot: &str,
    now: DateTime<Utc>,
) -> Option<FullRead> {
    let (Some(since), Some(previous), Some(full_at)) = (since, previous, full_at) else {
        return Some(FullRead::First);
    };
    if previous != server {
        return Some(FullRead::ServerChanged);
    }
    match (xmax(since), xmax(snapshot)) {
        (Some(before), Some(now)) if now >= before => {}
        _ => return Some(FullRead::XidsWentBack),
    }
    let every = chrono::Duration::from_std(full_every).unwrap_or(chrono::Duration::MAX);
    if now - full_at >= every {
        return Some(FullRead::Periodic);
    }
    None
}

/// A job state the cache keeps.
fn kept(state: &str) -> bool {
    matches!(state, "PENDING" | "RUNNING" | "SUSPENDED" | "COMPLETING")
}

fn running_state(state: &str) -> bool {
    matches!(state, "RUNNING" | "SUSPENDED" | "COMPLETING")
}

fn epoch(t: DateTime<Utc>) -> i64 {
    t.timestamp()
}

impl SnapshotCache {
    /// An empty cache: its first refresh reads everything; it reads everything again at
    /// least every [`FULL_REFRESH_EVERY`].
    pub fn new() -> Self {
        SnapshotCache::default()
    }

    /// An empty cache that reads everything again at least every `full_every` (besides
    /// its first refresh, after a deletion, and whenever the server changed).
    pub fn with_full_refresh(full_every: std::time::Duration) -> Self {
        SnapshotCache {
            since: None,
            server: None,
            full_at: None,
            full_every,
            jobs: BTreeMap::new(),
            nodes: HashMap::new(),
            gpus: HashMap::new(),
            allocations: BTreeMap::new(),
            preemptions: HashMap::new(),
            partitions: Vec::new(),
            qos: Vec::new(),
            accounts: Vec::new(),
            default_accounts: HashMap::new(),
            usage: Vec::new(),
            reservations: Vec::new(),
            last: RefreshStats::default(),
            last_full: None,
        }
    }

    /// Brings the cache up to date with the database (everything on the first call, the
    /// changes since the previous call afterwards) and builds the planner's snapshot as of
    /// `now`. After an error the next call reads everything again.
    ///
    /// # Errors
    /// [`DbError`] from the driver.
    pub async fn refresh(
        &mut self,
        pool: &Pool,
        now: DateTime<Utc>,
        config: &PlannerConfig,
    ) -> Result<CycleInput, DbError> {
        // Taken out: after an error the next refresh reads everything.
        let since = self.since.take();
        let previous = self.server.take();
        let (mut tx, snapshot) = read::read_begin(pool).await?;
        let server = read::read_server_identity(&mut tx).await?;
        let mut full = full_read_needed(
            since.as_deref(),
            previous.as_ref(),
            self.full_at,
            self.full_every,
            &server,
            &snapshot,
            now,
        );
        match full {
            Some(FullRead::ServerChanged) => tracing::warn!(
                previous = ?previous,
                now = ?server,
                "the database server changed (a failover?): reading everything again"
            ),
            Some(FullRead::XidsWentBack) => tracing::warn!(
                previous = ?since,
                now = %snapshot,
                "transaction ids went back (a failover?): reading everything again"
            ),
            _ => {}
        }
        let tables = match (&since, full) {
            (Some(since), None) => read::read_changed_tables(&mut tx, since).await?,
            _ => Vec::new(),
        };
        if tables.iter().any(|t| t == "deleted") {
            full = Some(FullRead::Deleted);
        }
        match (since, full) {
            (Some(since), None) => self.read_changes(&mut tx, &since, &tables).await?,
            _ => {
                self.read_all(&mut tx).await?;
                self.full_at = Some(now);
            }
        }
        let deps = Dependencies::load(&mut tx, self).await?;
        tx.commit().await?;
        if matches!(full, Some(FullRead::ServerChanged | FullRead::XidsWentBack)) {
            // A promoted standby that lost the last commits hands out job ids the lost
            // primary gave to jobs that ran: move the sequence past every id a worker
            // said it remembers (the api also does as each worker syncs).
            if let Some(value) =
                berth_db::node_report::job_id_sequence_raise_past_nodes(pool).await?
            {
                tracing::warn!(
                    sequence = value,
                    "the job id sequence moved past the job ids the workers remember"
                );
            }
        }
        self.since = Some(snapshot);
        self.server = Some(server);
        self.last_full = full;
        Ok(self.build(now, config, &deps))
    }

    /// Reads everything once, as a first refresh does, adds `extra` (a job that is not
    /// stored, for a will-run test: [`crate::will_run`]) to the jobs, and builds the
    /// planner's snapshot as of `now`.
    ///
    /// # Errors
    /// [`DbError`] from the driver.
    pub async fn read_with(
        pool: &Pool,
        now: DateTime<Utc>,
        config: &PlannerConfig,
        extra: SchedJobRow,
    ) -> Result<CycleInput, DbError> {
        let mut cache = SnapshotCache::new();
        let (mut tx, _) = read::read_begin(pool).await?;
        cache.read_all(&mut tx).await?;
        cache.jobs.insert(extra.id, extra);
        let deps = Dependencies::load(&mut tx, &cache).await?;
        tx.commit().await?;
        Ok(cache.build(now, config, &deps))
    }

    async fn read_all(&mut self, conn: &mut PgConnection) -> Result<(), DbError> {
        self.jobs = read::read_jobs_all(conn)
            .await?
            .into_iter()
            .map(|j| (j.id, j))
            .collect();
        self.nodes = read::read_nodes_changed(conn, read::SINCE_EVER)
            .await?
            .into_iter()
            .map(|n| (n.id, n))
            .collect();
        self.gpus = read::read_gpus_changed(conn, read::SINCE_EVER)
            .await?
            .into_iter()
            .map(|g| ((g.node_id, g.index), g))
            .collect();
        self.allocations = read::read_allocations_all(conn)
            .await?
            .into_iter()
            .map(|a| (a.id, a))
            .collect();
        self.preemptions = read::read_preemptions_all(conn)
            .await?
            .into_iter()
            .map(|p| ((p.job_id, p.run), p))
            .collect();
        let rows = self.jobs.len()
            + self.nodes.len()
            + self.gpus.len()
            + self.allocations.len()
            + self.preemptions.len();
        let tables = [
            "partitions",
            "qos",
            "accounts",
            "users",
            "usage",
            "reservations",
        ];
        for t in tables {
            self.read_table(conn, t).await?;
        }
        self.last = RefreshStats {
            full: true,
            rows,
            tables: tables.len(),
        };
        Ok(())
    }

    async fn read_table(&mut self, conn: &mut PgConnection, table: &str) -> Result<(), DbError> {
        match table {
            "partitions" => self.partitions = partition::partition_list(&mut *conn).await?,
            "qos" => self.qos = qos::qos_list(&mut *conn).await?,
            "accounts" => self.accounts = account::account_list(&mut *conn, None).await?,
            "users" => {
                self.default_accounts = usage::usage_default_accounts(&mut *conn)
                    .await?
                    .into_iter()
                    .collect()
            }
            "usage" => self.usage = usage::usage_list(&mut *conn).await?,
            "reservations" => self.reservations = reservation::reservation_list(&mut *conn).await?,
            _ => {}
        }
        Ok(())
    }

    async fn read_changes(
        &mut self,
        conn: &mut PgConnection,
        since: &str,
        tables: &[String],
    ) -> Result<(), DbError> {
        let jobs = read::read_jobs_changed(conn, since).await?;
        let nodes = read::read_nodes_changed(conn, since).await?;
        let gpus = read::read_gpus_changed(conn, since).await?;
        let allocations = read::read_allocations_changed(conn, since).await?;
        let preemptions = read::read_preemptions_changed(conn, since).await?;
        self.last = RefreshStats {
            full: false,
            rows: jobs.len() + nodes.len() + gpus.len() + allocations.len() + preemptions.len(),
            tables: tables.len(),
        };
        for t in tables {
            self.read_table(conn, t).await?;
        }
        let mut time_limits: HashMap<i64, Option<i64>> = HashMap::new();
        for j in jobs {
            time_limits.insert(j.id, j.time_limit);
            if kept(&j.state) {
                self.jobs.insert(j.id, j);
            } else {
                self.jobs.remove(&j.id);
            }
        }
        for n in nodes {
            self.nodes.insert(n.id, n);
        }
        for g in gpus {
            self.gpus.insert((g.node_id, g.index), g);
        }
        for a in allocations {
            if a.released {
                self.allocations.remove(&a.id);
            } else {
                self.allocations.insert(a.id, a);
            }
        }
        // A job's time limit may change while it runs (`scontrol update TimeLimit`).
        if !time_limits.is_empty() {
            for a in self.allocations.values_mut() {
                if let Some(limit) = time_limits.get(&a.job_id) {
                    a.time_limit = *limit;
                }
            }
        }
        for p in preemptions {
            if p.done {
                self.preemptions.remove(&(p.job_id, p.run));
            } else {
                self.preemptions.insert((p.job_id, p.run), p);
            }
        }
        Ok(())
    }

    /// The cloud pools' node slots as of the last refresh.
    pub fn slots(&self) -> Vec<crate::cloud::SlotView> {
        self.nodes
            .values()
            .filter_map(|n| {
                Some(crate::cloud::SlotView {
                    id: n.id,
                    name: n.name.clone(),
                    pool: n.pool.clone()?,
                    state: n.state.clone(),
                    launched_at: n.launched_at.map(epoch),
                })
            })
            .collect()
    }

    /// The account a job is charged to: its own, else its user's default, else `root`.
    fn account_of<'a>(&'a self, job: &'a SchedJobRow) -> &'a str {
        job.account
            .as_deref()
            .or_else(|| {
                self.default_accounts
                    .get(&job.user_name)
                    .map(String::as_str)
            })
            .unwrap_or("root")
    }

    fn build(&self, now: DateTime<Utc>, config: &PlannerConfig, deps: &Dependencies) -> CycleInput {
        // Fairshare: associations are users' default accounts, jobs not ended, usage rows.
        let mut associations: HashSet<(&str, &str)> = self
            .default_accounts
            .iter()
            .map(|(u, a)| (a.as_str(), u.as_str()))
            .collect();
        associations.extend(
            self.jobs
                .values()
                .map(|j| (self.account_of(j), j.user_name.as_str())),
        );
        associations.extend(
            self.usage
                .iter()
                .map(|u| (u.account.as_str(), u.user_name.as_str())),
        );
        let mut associations: Vec<(String, String)> = associations
            .into_iter()
            .map(|(a, u)| (a.to_string(), u.to_string()))
            .collect();
        associations.sort_unstable();
        let tree: Vec<ShareAccount> = self
            .accounts
            .iter()
            .map(|a| ShareAccount {
                name: a.name.clone(),
                parent: a.parent.clone(),
                shares: a.shares.max(0) as u32,
            })
            .collect();
        let share = fairshare::compute(&tree, &self.usage, &associations, now, config.half_life);

        // Allocations whose run a preemption is stopping end at its kill time at the
        // latest; their preemptors wait for them.
        let live_runs: HashSet<(i64, i32)> = self
            .allocations
            .values()
            .map(|a| (a.job_id, a.run))
            .collect();
        let in_flight: Vec<&SchedPreemptionRow> = self
            .preemptions
            .values()
            .filter(|p| live_runs.contains(&(p.job_id, p.run)))
            .collect();
        let kill_at: HashMap<(i64, i32), i64> = in_flight
            .iter()
            .map(|p| ((p.job_id, p.run), epoch(p.kill_at)))
            .collect();
        let preemptors: HashSet<i64> = in_flight.iter().map(|p| p.preemptor).collect();

        let partition_by_name: HashMap<&str, &PartitionRow> = self
            .partitions
            .iter()
            .map(|p| (p.name.as_str(), p))
            .collect();
        let qos_priority: HashMap<&str, u32> = self
            .qos
            .iter()
            .map(|q| (q.name.as_str(), q.priority.max(0) as u32))
            .collect();

        // Nodes by name, each with its present GPUs by index.
        let mut gpus_by_node: HashMap<i64, Vec<(u32, String)>> = HashMap::new();
        let mut gpu_domains: HashMap<i64, Vec<(u32, u32)>> = HashMap::new();
        let mut shards: HashMap<i64, Vec<u32>> = HashMap::new();
        for g in self.gpus.values().filter(|g| g.present) {
            if g.kind == "shard" {
                shards.entry(g.node_id).or_default().push(g.index as u32);
            }
            // A shard's domain is its GPU, so that a job's shards come from one GPU and
            // small shard jobs fill a GPU before taking the next (best fit among GPUs).
            let domain = match (g.kind.as_str(), g.parent) {
                ("shard", Some(parent)) => Some(SHARD_DOMAIN | parent.max(0) as u32),
                _ => g.domain.map(|d| d.max(0) as u32),
            };
            gpus_by_node
                .entry(g.node_id)
                .or_default()
                .push((g.index as u32, g.model.clone()));
            if let Some(d) = domain {
                gpu_domains
                    .entry(g.node_id)
                    .or_default()
                    .push((g.index as u32, d));
            }
        }
        for d in gpu_domains.values_mut() {
            d.sort_unstable();
        }
        for s in shards.values_mut() {
            s.sort_unstable();
        }
        let mut nodes: Vec<NodeView> = self
            .nodes
            .values()
            .map(|n| {
                let mut gpus = gpus_by_node.remove(&n.id).unwrap_or_default();
                gpus.sort_by_key(|g| g.0);
                // Where cores have several threads, jobs get whole usable cores.
                let usable = n.usable_cpus.max(0) as u32;
                let (threads_per_core, cpus) = if n.cpu_cores.is_empty() {
                    (1, usable)
                } else {
                    let cores: Vec<u32> = n.cpu_cores.iter().map(|c| (*c).max(0) as u32).collect();
                    CoreLayout::summary(&cores, usable)
                };
                NodeView {
                    id: n.id,
                    name: n.name.clone(),
                    available: n.state == "UP",
                    gpus,
                    features: n.features.clone(),
                    cpus,
                    memory_mib: n.usable_memory_mib.max(0) as u64,
                    threads_per_core,
                    weight: n.weight.max(0) as u32,
                }
            })
            .collect();
        nodes.sort_by(|a, b| a.name.cmp(&b.name));

        let running = self
            .allocations
            .values()
            .map(|a| RunningAlloc {
                job_id: a.job_id,
                node_id: a.node_id,
                gpus: a.gpu_indices.iter().map(|g| *g as u32).collect(),
                cpus: a.cpu_ids.len() as u32,
                mem_mib: a.mem_mib.max(0) as u64,
                exclusive: a.exclusive,
                end: match (
                    a.time_limit.map(|l| epoch(a.created_at).saturating_add(l)),
                    kill_at.get(&(a.job_id, a.run)),
                ) {
                    (Some(end), Some(kill)) => Some(end.min(*kill)),
                    (end, kill) => kill.copied().or(end),
                },
            })
            .collect();

        // GPUs and CPUs each job's current run holds, and running tasks per array.
        let mut gpus_held: HashMap<(i64, i32), u32> = HashMap::new();
        let mut cpus_held: HashMap<(i64, i32), u32> = HashMap::new();
        for a in self.allocations.values() {
            *gpus_held.entry((a.job_id, a.run)).or_default() += a.gpu_indices.len() as u32;
            *cpus_held.entry((a.job_id, a.run)).or_default() += a.cpu_ids.len() as u32;
        }
        let mut array_running: HashMap<i64, u32> = HashMap::new();
        for j in self.jobs.values().filter(|j| running_state(&j.state)) {
            if let Some(master) = j.array_job_id {
                *array_running.entry(master).or_default() += 1;
            }
        }

        // A requeued job whose previous run still holds an allocation (its node has not
        // reported the processes gone) waits for that run to end: a job never runs twice
        // at once.
        let previous_run_live: HashSet<i64> = self.allocations.values().map(|a| a.job_id).collect();
        let mut accounts = HashMap::new();
        let pending = self
            .jobs
            .values()
            .filter(|j| j.state == "PENDING" && !j.hold)
            .map(|j| {
                let (array, dependency) = match j.array_pending.as_deref() {
                    Some(pending) => {
                        let running = array_running.get(&j.id).copied().unwrap_or(0);
                        let (tasks, dependency) = array_tasks(j, pending, running, deps);
                        (Some(tasks), dependency)
                    }
                    None => (None, deps.state(j, j.array_task_id.map(|t| t as u32))),
                };
                let partition = partition_by_name.get(j.partition.as_str());
                let account = self.account_of(j).to_string();
                let fairshare = share.factor(&account, &j.user_name);
                accounts.insert(j.id, account.clone());
                PendingJob {
                    id: j.id,
                    submit_time: epoch(j.submit_time),
                    partition_nodes: listed_partition_nodes(j, &partition_by_name)
                        .unwrap_or_else(|| partition.map(|p| p.nodes.clone()).unwrap_or_default()),
                    partition_tier: partition.map_or(1, |p| p.priority_tier.max(0) as u32),
                    qos_priority: qos_priority
                        .get(j.qos.as_deref().unwrap_or("normal"))
                        .copied()
                        .unwrap_or(0),
                    fairshare,
                    nice: j.nice,
                    adjust: j.priority_adjust,
                    nodes: j.num_nodes as u32,
                    gpus_per_node: j.gpus_per_node as u32,
                    gpu_type: j.gpu_type.clone(),
                    shards: j.gres == "shard",
                    constraint: j.constraint.clone(),
                    exclusive: j.exclusive,
                    whole_node: j.whole_node,
                    time_limit: j.time_limit,
                    held: previous_run_live
                        .contains(&j.id)
                        .then(|| PREVIOUS_RUN_ENDING.to_string()),
                    begin: j.begin_time.map(epoch),
                    dependency,
                    array,
                    user: j.user_name.clone(),
                    account,
                    qos: j.qos.clone().unwrap_or_else(|| "normal".to_string()),
                    cpus: job_cpus(j),
                    partition_max_time: partition.and_then(|p| p.max_time),
                    partition_max_nodes: partition
                        .and_then(|p| p.max_nodes)
                        .map(|n| n.max(0) as u32),
                    preempting: preemptors.contains(&j.id),
                    cpus_per_node: j.cpus_per_node.max(1) as u32,
                    threads_per_core: hint_threads_per_core(j.hint.as_deref()),
                    mem_per_node_mib: j.mem_per_node_mib.map(|m| m.max(0) as u64),
                    nodelist: j.nodelist.clone(),
                    exclude: j.exclude.clone(),
                    time_min: j.time_min,
                    reservation: j.reservation.clone(),
                }
            })
            .collect();
        let running_jobs = self
            .jobs
            .values()
            .filter(|j| running_state(&j.state))
            .map(|r| RunningJob {
                account: self.account_of(r).to_string(),
                job_id: r.id,
                user: r.user_name.clone(),
                qos: r.qos.clone().unwrap_or_else(|| "normal".to_string()),
                // The CPUs its run holds; what it asked for when not placed by CPU.
                cpus: cpus_held
                    .get(&(r.id, r.restart_count))
                    .copied()
                    .filter(|c| *c > 0)
                    .unwrap_or_else(|| job_cpus(r)),
                gpus: gpus_held
                    .get(&(r.id, r.restart_count))
                    .copied()
                    .unwrap_or(0),
                nodes: r.num_nodes.max(0) as u32,
                start: r.start_time.map_or(0, epoch),
            })
            .collect();
        let tres = |v: &serde_json::Value| -> TresLimits {
            serde_json::from_value(v.clone()).unwrap_or_default()
        };
        let qos_limits = self
            .qos
            .iter()
            .map(|q| {
                (
                    q.name.clone(),
                    QosLimits {
                        max_tres_per_user: tres(&q.max_tres_per_user),
                        max_tres_per_account: tres(&q.max_tres_per_account),
                        grp_tres: tres(&q.grp_tres),
                        max_jobs_per_user: q.max_jobs_per_user.map(|m| m.max(0) as u32),
                        max_wall: q.max_wall,
                    },
                )
            })
            .collect();
        let account_limits = self
            .accounts
            .iter()
            .map(|a| {
                (
                    a.name.clone(),
                    AccountLimits {
                        parent: a.parent.clone(),
                        grp_tres: tres(&a.grp_tres),
                    },
                )
            })
            .collect();
        let qos_preemption = self
            .qos
            .iter()
            .map(|q| {
                (
                    q.name.clone(),
                    QosPreemption {
                        priority: q.priority.max(0) as u32,
                        preempt: q.preempt.clone(),
                        mode: if q.preempt_mode == "REQUEUE" {
                            PreemptMode::Requeue
                        } else {
                            PreemptMode::Cancel
                        },
                        grace_time: q.grace_time,
                        exempt_time: q.preempt_exempt_time,
                    },
                )
            })
            .collect();
        CycleInput {
            snapshot: Snapshot {
                now: epoch(now),
                nodes,
                running,
                pending,
                partition_tier_max: self
                    .partitions
                    .iter()
                    .map(|p| p.priority_tier.max(0) as u32)
                    .max()
                    .unwrap_or(1),
                qos_priority_max: qos_priority.values().copied().max().unwrap_or(0),
                qos_limits,
                running_jobs,
                qos_preemption,
                accounts: account_limits,
                gpu_domains,
                shards,
                advance_reservations: advance_reservations(&self.reservations, epoch(now)),
            },
            accounts,
        }
    }
}

/// How many upcoming windows of a recurring reservation the planner sees.
const RESERVATION_WINDOWS: usize = 2;

/// The planner's view of the stored reservations at `now`: one entry per window whose end
/// is after `now` (a `DAILY`/`WEEKLY` one: its current or next [`RESERVATION_WINDOWS`]
/// occurrences; an ended one-off: none).
fn advance_reservations(rows: &[ReservationRow], now: i64) -> Vec<AdvanceReservation> {
    use berth_core::reservation::{period, windows, ReservationFlag};
    let mut out = Vec::new();
    for r in rows {
        let flags: Vec<ReservationFlag> = r
            .flags
            .iter()
            .filter_map(|f| ReservationFlag::parse(f))
            .collect();
        let nodes: Vec<ReservedNode> = r
            .nodes
            .iter()
            .map(|n| ReservedNode {
                node_id: n.node_id,
                gpus: n
                    .gpus
                    .as_ref()
                    .map(|g| g.iter().map(|i| (*i).max(0) as u32).collect()),
            })
            .collect();
        let (start, end) = (epoch(r.start_time), epoch(r.end_time));
        for (start, end) in windows(start, end, period(&flags), now, RESERVATION_WINDOWS) {
            out.push(AdvanceReservation {
                name: r.name.clone(),
                start,
                end,
                nodes: nodes.clone(),
                flex: flags.contains(&ReservationFlag::Flex),
                maint: flags.contains(&ReservationFlag::Maint),
            });
        }
    }
    out
}

/// The CPUs a job holds in all (for limits): its CPUs per node on each of its nodes.
fn job_cpus(j: &SchedJobRow) -> u32 {
    (j.cpus_per_node.max(1) as u32).saturating_mul(j.num_nodes.max(1) as u32)
}

/// For a job that listed several partitions (`-p a,b`): the union of their nodes, empty
/// when one of them has every node; `None` for a job that listed one.
fn listed_partition_nodes(
    j: &SchedJobRow,
    partitions: &HashMap<&str, &PartitionRow>,
) -> Option<Vec<String>> {
    if j.partitions.is_empty() {
        return None;
    }
    let listed: Vec<&PartitionRow> = j
        .partitions
        .iter()
        .filter_map(|p| partitions.get(p.as_str()).copied())
        .collect();
    if listed.is_empty() {
        return None;
    }
    if listed.iter().any(|p| p.nodes.is_empty()) {
        return Some(Vec::new());
    }
    let mut nodes: Vec<String> = listed
        .iter()
        .flat_map(|p| p.nodes.iter().cloned())
        .collect();
    nodes.sort_unstable();
    nodes.dedup();
    Some(nodes)
}

/// The tasks of array master `j` not started yet (`pending`, its range list) with
/// `running` tasks running: the first indices (up to its `%LIMIT` room, at most
/// [`ARRAY_LOOKAHEAD`]) whose dependencies are met, and the array's dependency state:
/// satisfied when one may start, never when none ever can, else waiting.
fn array_tasks(
    j: &SchedJobRow,
    pending: &str,
    running: u32,
    deps: &Dependencies,
) -> (ArrayTasks, DependencyState) {
    let set = IndexSet::parse(pending).unwrap_or_default();
    let room = j
        .array_max_running
        .map_or(ARRAY_LOOKAHEAD, |m| {
            (m as u32).saturating_sub(running) as usize
        })
        .min(ARRAY_LOOKAHEAD);
    let mut ready = Vec::new();
    let mut all_never = true;
    for i in set.iter().take(ARRAY_LOOKAHEAD) {
        if ready.len() >= room.max(1) {
            all_never = false;
            break;
        }
        match deps.state(j, Some(i)) {
            DependencyState::Satisfied => {
                ready.push(i);
                all_never = false;
            }
            DependencyState::Waiting => all_never = false,
            DependencyState::Never => {}
        }
    }
    let dependency = if !ready.is_empty() {
        DependencyState::Satisfied
    } else if all_never {
        DependencyState::Never
    } else {
        DependencyState::Waiting
    };
    let tasks = ArrayTasks {
        ready,
        remaining: set.count(),
        running,
        max_running: j.array_max_running.map(|m| m as u32),
    };
    (tasks, dependency)
}

/// Dependency state of every pending job with a `--dependency` (array masters: per task
/// index), from the jobs they name.
struct Dependencies {
    parsed: HashMap<i64, Dependency>,
    targets: Vec<Target>,
    singleton_blocked: HashSet<i64>,
}

impl Dependencies {
    /// Parses the pending jobs' dependencies, reads the jobs they name (which may have
    /// ended) and finds the `singleton` jobs that must wait for an earlier job of the same
    /// user and name.
    async fn load(conn: &mut PgConnection, cache: &SnapshotCache) -> Result<Self, DbError> {
        let pending = cache
            .jobs
            .values()
            .filter(|j| j.state == "PENDING" && !j.hold);
        let parsed: HashMap<i64, Dependency> = pending
            .filter_map(|j| {
                let d = j.dependency.as_deref()?;
                match dependency::parse(d) {
                    Ok(d) => Some((j.id, d)),
                    Err(e) => {
                        tracing::warn!(job.id = j.id, error = %e, "unreadable dependency ignored");
                        None
                    }
                }
            })
            .collect();
        let ids: Vec<i64> = parsed
            .values()
            .flat_map(Dependency::job_ids)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let targets = if ids.is_empty() {
            Vec::new()
        } else {
            job::job_dependency_targets(&mut *conn, &ids)
                .await?
                .into_iter()
                .map(|t| Target {
                    id: t.id,
                    array_job_id: t.array_job_id,
                    array_task_id: t.array_task_id.map(|x| x as u32),
                    has_pending_tasks: t.array_pending.is_some(),
                    state: t.state,
                })
                .collect()
        };
        // `singleton`: an earlier job not ended, of the same user and name (not the job's
        // own array master), blocks it.
        let singles: Vec<&SchedJobRow> = parsed
            .iter()
            .filter(|(_, d)| d.singleton())
            .filter_map(|(id, _)| cache.jobs.get(id))
            .collect();
        let mut singleton_blocked = HashSet::new();
        if !singles.is_empty() {
            let mut active: HashMap<(&str, &str), Vec<i64>> = HashMap::new();
            for j in cache.jobs.values() {
                active
                    .entry((j.user_name.as_str(), j.name.as_str()))
                    .or_default()
                    .push(j.id);
            }
            for j in singles {
                let earlier = active
                    .get(&(j.user_name.as_str(), j.name.as_str()))
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                if earlier
                    .iter()
                    .any(|id| *id < j.id && j.array_job_id != Some(*id))
                {
                    singleton_blocked.insert(j.id);
                }
            }
        }
        Ok(Dependencies {
            parsed,
            targets,
            singleton_blocked,
        })
    }

    fn state(&self, job: &SchedJobRow, task: Option<u32>) -> DependencyState {
        match self.parsed.get(&job.id) {
            Some(d) => dependency::evaluate(
                d,
                task,
                &self.targets,
                self.singleton_blocked.contains(&job.id),
            ),
            None => DependencyState::Satisfied,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{full_read_needed, FullRead};
    use berth_db::snapshot::ServerIdentity;
    use chrono::{TimeZone, Utc};
    use std::time::Duration;

    fn server(timeline: i64) -> ServerIdentity {
        ServerIdentity {
            system_identifier: 7_714_221_803_726_182_534,
            timeline,
            started: Utc.with_ymd_and_hms(2026, 12, 1, 6, 0, 0).unwrap(),
        }
    }

    #[test]
    fn a_changed_server_or_xids_going_back_force_a_full_read() {
        let t0 = Utc.with_ymd_and_hms(2026, 12, 1, 7, 0, 0).unwrap();
        let t1 = t0 + chrono::Duration::seconds(2);
        let every = Duration::from_secs(60);
        let need = |since: Option<&str>,
                    before: Option<&ServerIdentity>,
                    now: &ServerIdentity,
                    snap: &str| {
            full_read_needed(since, before, Some(t0), every, now, snap, t1)
        };
        let s = server(1);
        // Same server, xids moving on: the changes suffice.
        assert_eq!(need(Some("100:105:"), Some(&s), &s, "103:110:104"), None);
        assert_eq!(need(Some("100:105:"), Some(&s), &s, "105:105:"), None);
        // No previous read.
        assert_eq!(need(None, None, &s, "1:2:"), Some(FullRead::First));
        // A promoted standby: a new timeline, even with ids ahead of the old ones.
        assert_eq!(
            need(Some("100:105:"), Some(&s), &server(2), "200:210:"),
            Some(FullRead::ServerChanged)
        );
        // Another cluster, or the same one restarted.
        let other = ServerIdentity {
            system_identifier: 1,
            ..server(1)
        };
        assert_eq!(
            need(Some("100:105:"), Some(&s), &other, "200:210:"),
            Some(FullRead::ServerChanged)
        );
        let restarted = ServerIdentity {
            started: t0,
            ..server(1)
        };
        assert_eq!(
            need(Some("100:105:"), Some(&s), &restarted, "200:210:"),
            Some(FullRead::ServerChanged)
        );
        // Ids that went back on what looks like the same server.
        assert_eq!(
            need(Some("100:105:"), Some(&s), &s, "90:95:"),
            Some(FullRead::XidsWentBack)
        );
        assert_eq!(
            need(Some("garbage"), Some(&s), &s, "90:95:"),
            Some(FullRead::XidsWentBack)
        );
    }

    #[test]
    fn everything_is_read_again_after_the_interval() {
        let t0 = Utc.with_ymd_and_hms(2026, 12, 1, 7, 0, 0).unwrap();
        let s = server(1);
        let at = |secs: i64| {
            full_read_needed(
                Some("100:105:"),
                Some(&s),
                Some(t0),
                Duration::from_secs(60),
                &s,
                "100:105:",
                t0 + chrono::Duration::seconds(secs),
            )
        };
        assert_eq!(at(59), None);
        assert_eq!(at(60), Some(FullRead::Periodic));
        // A `now` before the last full read (callers' clocks differ) is not late.
        assert_eq!(at(-5), None);
    }
}
