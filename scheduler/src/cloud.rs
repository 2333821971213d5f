//! The cloud module of the scheduler leader: node pools that follow the queue.
//!
//! **Planning.** A pool's node slots (`<pool>-<n>`, see [`berth_core::pool`]) are nodes
//! the planner plans on ([`Cloud::adjust_snapshot`]): a POWERED_DOWN slot is offered with
//! the shape of the pool's preferred instance type (the first not set aside by a
//! capacity error) and held (not ready) until `now + expected boot`; a POWERING_UP one
//! until its launch time + expected boot. Slots weigh more than any node in service
//! (POWERING_UP less than POWERED_DOWN), so at equal start times existing nodes win. So
//! the launch decision is part of the plan: a job's planned start lands on a powered-down
//! slot only when no existing node would start it as early, and its expected start
//! counts the boot. [`Cloud::launch_intents`] turns the planned starts that need
//! powered-down slots (and whose start is due within the boot time) into launches: the
//! nodes one start needs are launched together, all or nothing.
//!
//! **Reconciling** ([`Cloud::run`], a task of the leader, every second and when a cycle
//! wrote launches; every write checks the leader's term; no row lock is held across a
//! provider call):
//! * launches written (`cloud_launches` state `requested`) are sent to the provider with
//!   one one-time bootstrap token per node, bound to its name and expiring with
//!   `boot_timeout`; the launch id is the idempotency token, so a launch a deposed leader
//!   left half-way is sent again by the next one and neither lost nor doubled. A capacity
//!   error sets the (type, zone) aside for `capacity_cooldown` and the next one is tried;
//!   when all fail the slots return to POWERED_DOWN, the pool backs off (30 s doubling to
//!   10 min) and the job's reason says why (`CloudCapacity: …`) until a launch in the pool
//!   is tried again;
//! * a slot that has not joined by `boot_timeout` is terminated and returns to
//!   POWERED_DOWN; its job stays queued (it was never started) and the event is counted on
//!   it (`cloud_boot_timeout` job event);
//! * a node idle past `idle_timeout` that no planned start needs is terminated, never
//!   below `min_nodes`; a reclaimed (spot) node is terminated once its jobs are requeued;
//! * operators' power requests (`POWER_UP`, `POWER_DOWN`, `POWER_DOWN_FORCE`) are carried
//!   out; `min_nodes` are kept running;
//! * the provider's instances are compared with the database: an instance tagged with the
//!   cluster that no node knows is terminated after a grace period (an orphan), and a
//!   node whose instance is gone is DOWN at once with its jobs requeued, then POWERED_DOWN.

use crate::LEASE_ROLE;
use berth_cloud::{Instance, LaunchError, LaunchRequest, NodeBoot, Provider};
use berth_core::pool::{InstanceShape, Market, PoolSpec, ProviderKind};
use berth_db::cloud_scaling::{self as scaling, ScalingNodeRow};
use berth_db::{cloud as cloud_db, job, lease, node_credential, notify, DbError, Pool};
use chrono::{DateTime, Utc};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Weight added to a POWERING_UP slot in the plan (existing nodes are placed first).
pub const POWERING_UP_WEIGHT: u32 = 1 << 24;
/// Weight added to a POWERED_DOWN slot in the plan.
pub const POWERED_DOWN_WEIGHT: u32 = 2 << 24;
/// The name of the planner holds that keep slots from being planned before they are
/// ready (no job can name it: reservation names are letters, digits and `_.-`).
pub const BOOT_HOLD: &str = "\u{1}boot";

/// The cloud module's settings (`[cloud]` in the server config).
#[derive(Debug, Clone)]
pub struct CloudSettings {
    /// The `berth:cluster` tag of this cluster's instances (default `berth`).
    pub cluster: String,
    /// The api URL instances' workers join (default `http://127.0.0.1:8750`).
    pub api_url: String,
    /// Where the local provider keeps its instances (default
    /// `/var/lib/berth/local-cloud`).
    pub local_state_dir: PathBuf,
    /// The `berth` binary local instances run (default: this process's).
    pub berth_binary: PathBuf,
    /// Extra arguments for local instances' `berth worker`.
    pub local_worker_args: Vec<String>,
    /// How often the reconciler runs (default 1 s).
    pub interval: Duration,
    /// How often instances are compared with the provider's (default 10 s).
    pub describe_interval: Duration,
    /// How old an unknown instance must be before it is terminated as an orphan
    /// (default 120 s).
    pub orphan_grace: Duration,
}

impl Default for CloudSettings {
    fn default() -> Self {
        CloudSettings {
            cluster: "berth".into(),
            api_url: "http://127.0.0.1:8750".into(),
            local_state_dir: PathBuf::from("/var/lib/berth/local-cloud"),
            berth_binary: std::env::current_exe().unwrap_or_else(|_| PathBuf::from("berth")),
            local_worker_args: Vec::new(),
            interval: Duration::from_secs(1),
            describe_interval: Duration::from_secs(10),
            orphan_grace: Duration::from_secs(120),
        }
    }
}

/// What the planner needs of one pool.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PoolPlanning {
    /// Its slots may be launched now (not backing off, some type not set aside).
    pub offerable: bool,
    /// Seconds a launch takes to join, expected.
    pub expected_boot: i64,
    /// The preferred instance type now.
    pub instance_type: String,
    /// Its market.
    pub market: Option<Market>,
    /// Instances it may still launch this minute.
    pub launch_budget: u32,
    /// Its `max_nodes`: slots above it (left after the pool shrank) are never offered.
    pub max_nodes: u32,
}

/// A pool node as the cycle sees it (from the snapshot cache).
#[derive(Debug, Clone)]
pub struct SlotView {
    /// Node id.
    pub id: i64,
    /// Node name.
    pub name: String,
    /// Its pool.
    pub pool: String,
    /// Its state.
    pub state: String,
    /// When its instance was requested, seconds since the epoch.
    pub launched_at: Option<i64>,
}

/// A launch the cycle decided.
#[derive(Debug, Clone, PartialEq)]
pub struct LaunchIntent {
    /// The pool.
    pub pool: String,
    /// Its slots, launched together.
    pub nodes: Vec<String>,
    /// The instance type.
    pub instance_type: String,
    /// The market.
    pub market: Market,
    /// The job whose planned start needs them.
    pub job_id: Option<i64>,
}

/// A pool's provider and the spec it was made for.
type ProviderEntry = (serde_json::Value, Arc<dyn Provider>);

/// A pool's booting slots, and its powered-down ones with their slot numbers.
type PoolSlots<'a> = (Vec<&'a SlotView>, Vec<(u32, &'a SlotView)>);

/// A pool's spec, its JSON, its back-off and its failures in a row.
type PoolEntry = (PoolSpec, serde_json::Value, Option<DateTime<Utc>>, i32);

#[derive(Debug, Default)]
struct Shared {
    pools: HashMap<String, PoolPlanning>,
    /// Job id → (reason, pool): why a launch for the job failed (`CloudCapacity: …`,
    /// `CloudLaunchFailed: …`, `CloudBootTimeout: …`), shown as its pending reason until a
    /// launch in that pool is tried again (not only while the pool backs off: its
    /// instance types stay set aside longer) or the job stops waiting.
    job_reasons: HashMap<i64, (String, String)>,
    /// Nodes the last plan's starts and reservations use.
    planned_nodes: HashSet<i64>,
    /// Nodes advance reservations hold now or later.
    reserved_nodes: HashSet<i64>,
}

/// The cloud module: shared by the leader's cycles and its reconciler task.
#[derive(Debug)]
pub struct Cloud {
    settings: CloudSettings,
    shared: Mutex<Shared>,
    wake: tokio::sync::Notify,
    providers: tokio::sync::Mutex<HashMap<String, ProviderEntry>>,
    /// Pool → (spec, type) its powered-down slots were last shaped with.
    shaped: tokio::sync::Mutex<HashMap<String, (serde_json::Value, String)>>,
}

/// Makes the provider of a pool.
///
/// # Errors
/// A message when the provider cannot be set up.
pub async fn make_provider(
    pool: &str,
    spec: &PoolSpec,
    settings: &CloudSettings,
) -> Result<Arc<dyn Provider>, String> {
    tracing::info!(pool, provider = ?spec.provider, "setting up the pool's provider");
    Ok(match spec.provider {
        ProviderKind::Local => Arc::new(berth_cloud::LocalProvider::new(
            settings.local_state_dir.clone(),
            settings.berth_binary.clone(),
            spec.local.clone().unwrap_or_default(),
            settings.local_worker_args.clone(),
        )),
        ProviderKind::Ec2 => Arc::new(
            berth_cloud::ec2::Ec2Provider::new(
                &spec.ec2.clone().unwrap_or_default(),
                "/usr/local/bin/berth",
            )
            .await,
        ),
    })
}

/// The (type, zone) candidates of a launch, in preference order: types from the planned
/// one on, each at least as large as it; zones (subnets when given, else zones, else the
/// provider's choice) not set aside.
fn candidates(
    spec: &PoolSpec,
    planned: &str,
    cooled: &HashSet<(String, String)>,
) -> Vec<(usize, Option<String>, Option<String>)> {
    let planned_shape = spec
        .instance_types
        .iter()
        .find(|t| t.name == planned)
        .and_then(|t| t.shape().ok());
    let places: Vec<(Option<String>, Option<String>)> = if !spec.subnets.is_empty() {
        spec.subnets
            .iter()
            .map(|s| (None, Some(s.clone())))
            .collect()
    } else if !spec.zones.is_empty() {
        spec.zones.iter().map(|z| (Some(z.clone()), None)).collect()
    } else {
        vec![(None, None)]
    };
    let start = spec
        .instance_types
        .iter()
        .position(|t| t.name == planned)
        .unwrap_or(0);
    let mut out = Vec::new();
    for (i, t) in spec.instance_types.iter().enumerate().skip(start) {
        let Ok(shape) = t.shape() else { continue };
        if let Some(p) = &planned_shape {
            if shape.gpu_count < p.gpu_count
                || shape.cpus < p.cpus
                || shape.memory_mib < p.memory_mib
            {
                continue;
            }
        }
        for (zone, subnet) in &places {
            let key = zone.clone().or(subnet.clone()).unwrap_or_default();
            if cooled.contains(&(t.name.clone(), key))
                || cooled.contains(&(t.name.clone(), String::new()))
            {
                continue;
            }
            out.push((i, zone.clone(), subnet.clone()));
        }
    }
    out
}

/// The preferred type of a pool: the first with a place not set aside.
fn preferred_type(spec: &PoolSpec, cooled: &HashSet<(String, String)>) -> Option<String> {
    spec.instance_types
        .iter()
        .find(|t| {
            candidates(spec, &t.name, cooled)
                .iter()
                .any(|(i, _, _)| spec.instance_types[*i].name == t.name)
        })
        .map(|t| t.name.clone())
}

/// Back-off after `failures` launch failures in a row: 30 s doubling, at most 10 min.
pub fn backoff(failures: i32) -> Duration {
    let n = failures.clamp(1, 6) as u32;
    Duration::from_secs((30u64 << (n - 1)).min(600))
}

impl Cloud {
    /// A cloud module with `settings`.
    pub fn new(settings: CloudSettings) -> Arc<Cloud> {
        Arc::new(Cloud {
            settings,
            shared: Mutex::new(Shared::default()),
            wake: tokio::sync::Notify::new(),
            providers: tokio::sync::Mutex::new(HashMap::new()),
            shaped: tokio::sync::Mutex::new(HashMap::new()),
        })
    }

    /// Its settings.
    pub fn settings(&self) -> &CloudSettings {
        &self.settings
    }

    /// Sets what the planner knows of pool `pool` (the reconciler does this each pass from
    /// the pools' specs, back-offs and launch counts; the simulator sets it directly).
    pub fn set_pool_planning(&self, pool: &str, planning: PoolPlanning) {
        self.shared().pools.insert(pool.to_string(), planning);
    }

    /// The nodes the last plan's starts and reservations use (by id), as recorded by
    /// [`Cloud::launch_intents`]: idle scale-down spares them.
    pub fn planned_nodes(&self) -> HashSet<i64> {
        self.shared().planned_nodes.clone()
    }

    fn shared(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Offers the pools' slots to the planner: makes the offerable ones available with
    /// their weight raised, and holds each until it can be ready. Of a pool's powered-down
    /// slots only as many are offered as it may launch now (its launch budget, or the
    /// most nodes one pending job asks for when that is more), lowest numbers first; the
    /// others, like the slots of a pool that cannot launch, are left out of the plan (so
    /// a pool of thousands of slots costs the planner what it can launch, not its size).
    /// Also records the nodes advance reservations hold (never scaled down).
    pub fn adjust_snapshot(&self, snapshot: &mut crate::planner::Snapshot, slots: &[SlotView]) {
        let mut shared = self.shared();
        shared.reserved_nodes = snapshot
            .advance_reservations
            .iter()
            .filter(|r| r.end > snapshot.now)
            .flat_map(|r| r.nodes.iter().map(|n| n.node_id))
            .collect();
        let now = snapshot.now;
        let widest = snapshot.pending.iter().map(|j| j.nodes).max().unwrap_or(0);
        // Per pool: its booting slots, and its powered-down ones by slot number.
        let mut per_pool: HashMap<&str, PoolSlots<'_>> = HashMap::new();
        for slot in slots {
            match slot.state.as_str() {
                "POWERING_UP" => per_pool.entry(&slot.pool).or_default().0.push(slot),
                "POWERED_DOWN" => {
                    let i = cloud_db::slot_index(&slot.pool, &slot.name).unwrap_or(u32::MAX);
                    per_pool.entry(&slot.pool).or_default().1.push((i, slot));
                }
                _ => {}
            }
        }
        if per_pool.is_empty() {
            return;
        }
        // Node id → (ready at, added weight) of the slots offered; every other slot
        // without an instance leaves the plan.
        let mut offered: HashMap<i64, (i64, u32)> = HashMap::new();
        let mut left_out: HashSet<i64> = HashSet::new();
        for (pool, (booting, mut down)) in per_pool {
            let p = shared.pools.get(pool);
            for slot in booting {
                match p {
                    Some(p) => {
                        let expected = slot.launched_at.unwrap_or(now) + p.expected_boot;
                        let ready = expected.max(now + p.expected_boot.clamp(1, 10));
                        offered.insert(slot.id, (ready, POWERING_UP_WEIGHT));
                    }
                    None => {
                        left_out.insert(slot.id);
                    }
                }
            }
            let cap = match p {
                Some(p) if p.offerable => p.launch_budget.max(widest) as usize,
                _ => 0,
            };
            down.sort_unstable_by_key(|(i, _)| *i);
            for (n, (i, slot)) in down.into_iter().enumerate() {
                match p {
                    Some(p) if n < cap && i <= p.max_nodes => {
                        offered
                            .insert(slot.id, (now + p.expected_boot.max(1), POWERED_DOWN_WEIGHT));
                    }
                    // The excess of a pool that launches: out of the plan.
                    Some(p) if p.offerable => {
                        left_out.insert(slot.id);
                    }
                    // A pool that cannot launch now (backing off, every type set aside)
                    // keeps its slots in the plan, unavailable: its jobs wait for it
                    // (`ReqNodeNotAvail`, or the cloud's reason) rather than looking as
                    // if no partition could ever hold them.
                    _ => {}
                }
            }
        }
        if !left_out.is_empty() {
            snapshot.nodes.retain(|n| !left_out.contains(&n.id));
        }
        // One hold per ready time (a window per slot made the planner's work grow with
        // the slots held).
        let mut holds: std::collections::BTreeMap<i64, Vec<crate::planner::ReservedNode>> =
            Default::default();
        for node in &mut snapshot.nodes {
            let Some((ready, weight)) = offered.get(&node.id) else {
                continue;
            };
            node.available = true;
            node.weight = node.weight.saturating_add(*weight);
            holds
                .entry(*ready)
                .or_default()
                .push(crate::planner::ReservedNode {
                    node_id: node.id,
                    gpus: None,
                });
        }
        for (ready, nodes) in holds {
            snapshot
                .advance_reservations
                .push(crate::planner::AdvanceReservation {
                    name: BOOT_HOLD.to_string(),
                    start: now,
                    end: ready,
                    nodes,
                    flex: false,
                    maint: false,
                });
        }
    }

    /// The launches a plan needs: for each planned start (in priority order) on
    /// powered-down slots that is due within the pool's boot time, those slots of each
    /// pool, together, within the pool's launch budget. Records the nodes the plan uses
    /// (they are not scaled down) and replaces the reasons of jobs a failed launch left.
    pub fn launch_intents(
        &self,
        plan: &mut crate::planner::Plan,
        now: i64,
        slots: &[SlotView],
    ) -> Vec<LaunchIntent> {
        let mut shared = self.shared();
        shared.planned_nodes = plan
            .starts
            .iter()
            .flat_map(|s| s.placements.iter().map(|p| p.node_id))
            .chain(
                plan.reservations
                    .iter()
                    .flat_map(|r| r.placements.iter().map(|p| p.node_id)),
            )
            .collect();
        // The powered-down slots the plan's reservations use.
        let wanted: HashSet<i64> = plan
            .reservations
            .iter()
            .flat_map(|r| r.placements.iter().map(|p| p.node_id))
            .collect();
        let by_id: HashMap<i64, &SlotView> = slots
            .iter()
            .filter(|s| s.state == "POWERED_DOWN" && wanted.contains(&s.id))
            .map(|s| (s.id, s))
            .collect();
        let mut budget: HashMap<String, u32> = shared
            .pools
            .iter()
            .map(|(k, p)| (k.clone(), p.launch_budget))
            .collect();
        let mut out = Vec::new();
        for r in &plan.reservations {
            let mut per_pool: std::collections::BTreeMap<&str, Vec<String>> = Default::default();
            for p in &r.placements {
                if let Some(slot) = by_id.get(&p.node_id) {
                    if slot.state == "POWERED_DOWN" {
                        per_pool
                            .entry(slot.pool.as_str())
                            .or_default()
                            .push(slot.name.clone());
                    }
                }
            }
            for (pool, nodes) in per_pool {
                let Some(planning) = shared.pools.get(pool) else {
                    continue;
                };
                if !planning.offerable || r.start - planning.expected_boot > now + 2 {
                    continue;
                }
                let left = budget.entry(pool.to_string()).or_default();
                if (nodes.len() as u32) > *left {
                    continue;
                }
                *left -= nodes.len() as u32;
                out.push(LaunchIntent {
                    pool: pool.to_string(),
                    nodes,
                    instance_type: planning.instance_type.clone(),
                    market: planning.market.unwrap_or_default(),
                    job_id: Some(r.job_id),
                });
            }
        }
        for (pool, left) in budget {
            if let Some(p) = shared.pools.get_mut(&pool) {
                p.launch_budget = left;
            }
        }
        let waiting: HashSet<i64> = plan.pending.iter().map(|w| w.job_id).collect();
        shared.job_reasons.retain(|job, _| waiting.contains(job));
        for w in &mut plan.pending {
            if matches!(
                w.reason.as_str(),
                "Resources" | "Priority" | "ReqNodeNotAvail"
            ) {
                if let Some((reason, _)) = shared.job_reasons.get(&w.job_id) {
                    w.reason = reason.clone();
                }
            }
        }
        out
    }

    /// Writes launches under `term` (each all or nothing) and wakes the reconciler.
    /// Returns false when the term is stale.
    ///
    /// # Errors
    /// [`DbError`] from the driver.
    pub async fn write_launches(
        &self,
        db: &Pool,
        term: i64,
        intents: &[LaunchIntent],
    ) -> Result<bool, DbError> {
        if intents.is_empty() {
            return Ok(true);
        }
        let mut tx = berth_db::begin(db).await?;
        if !lease::lease_check_in_tx(&mut tx, LEASE_ROLE, term).await? {
            return Ok(false);
        }
        for i in intents {
            let mut sp = sqlx::Acquire::begin(&mut *tx).await?;
            let id = uuid::Uuid::new_v4();
            if scaling::launch_create_in_tx(
                &mut sp,
                id,
                &i.pool,
                &i.nodes,
                &i.instance_type,
                i.market.as_str(),
                i.job_id,
                term,
            )
            .await?
            {
                sp.commit().await?;
                tracing::info!(pool = %i.pool, nodes = ?i.nodes, job.id = ?i.job_id, launch = %id, "launch planned");
            } else {
                sp.rollback().await?;
            }
        }
        tx.commit().await?;
        self.wake.notify_one();
        Ok(true)
    }

    /// The reconciler: runs passes under `term` until the task is dropped (the leader
    /// steps down) or a pass finds the term stale.
    pub async fn run(self: Arc<Self>, db: Pool, term: i64) {
        let mut last_describe: Option<Instant> = None;
        let mut down_since: HashMap<i64, Instant> = HashMap::new();
        loop {
            let describe =
                last_describe.is_none_or(|t| t.elapsed() >= self.settings.describe_interval);
            if describe {
                last_describe = Some(Instant::now());
            }
            match self.pass(&db, term, describe, &mut down_since).await {
                Ok(true) => {}
                Ok(false) => {
                    tracing::warn!(term, "cloud reconciler: term is stale; stopping");
                    return;
                }
                Err(e) => tracing::warn!(term, error = %e, "cloud reconcile failed; retrying"),
            }
            tokio::select! {
                _ = tokio::time::sleep(self.settings.interval) => {}
                _ = self.wake.notified() => {}
            }
        }
    }

    async fn provider(
        &self,
        name: &str,
        spec: &PoolSpec,
        raw: &serde_json::Value,
    ) -> Result<Arc<dyn Provider>, String> {
        let mut providers = self.providers.lock().await;
        if let Some((s, p)) = providers.get(name) {
            if s == raw {
                return Ok(p.clone());
            }
        }
        let p = make_provider(name, spec, &self.settings).await?;
        providers.insert(name.to_string(), (raw.clone(), p.clone()));
        Ok(p)
    }

    async fn check(
        &self,
        db: &Pool,
        term: i64,
    ) -> Result<Option<sqlx::Transaction<'static, sqlx::Postgres>>, DbError> {
        let mut tx = berth_db::begin(db).await?;
        if !lease::lease_check_in_tx(&mut tx, LEASE_ROLE, term).await? {
            return Ok(None);
        }
        Ok(Some(tx))
    }

    /// One pass; false when the term is stale.
    async fn pass(
        &self,
        db: &Pool,
        term: i64,
        describe: bool,
        down_since: &mut HashMap<i64, Instant>,
    ) -> Result<bool, DbError> {
        let now = Utc::now();
        let pools = scaling::scaling_pool_list(db).await?;
        let specs: HashMap<String, PoolEntry> = pools
            .into_iter()
            .filter_map(
                |p| match serde_json::from_value::<PoolSpec>(p.spec.clone()) {
                    Ok(s) => Some((p.name, (s, p.spec, p.backoff_until, p.consecutive_failures))),
                    Err(e) => {
                        tracing::warn!(pool = %p.name, error = %e, "pool spec unreadable; skipped");
                        None
                    }
                },
            )
            .collect();
        let cooldowns = scaling::cooldown_list(db, now).await?;
        let mut cooled: HashMap<&str, HashSet<(String, String)>> = HashMap::new();
        for c in &cooldowns {
            cooled
                .entry(c.pool.as_str())
                .or_default()
                .insert((c.instance_type.clone(), c.zone.clone()));
        }
        let empty = HashSet::new();
        // 1. What the planner may offer.
        let mut planning = HashMap::new();
        for (name, (spec, raw, backoff_until, _)) in &specs {
            let cooled = cooled.get(name.as_str()).unwrap_or(&empty);
            let preferred = preferred_type(spec, cooled);
            let recent =
                scaling::launch_recent_count(db, name, now - chrono::Duration::seconds(60)).await?;
            let budget = (i64::from(spec.launch_rate_per_minute) - recent).max(0) as u32;
            planning.insert(
                name.clone(),
                PoolPlanning {
                    offerable: preferred.is_some() && backoff_until.is_none_or(|b| b <= now),
                    expected_boot: spec.expected_boot_seconds() as i64,
                    instance_type: preferred.clone().unwrap_or_default(),
                    market: Some(spec.market),
                    launch_budget: budget,
                    max_nodes: spec.max_nodes,
                },
            );
            // Powered-down slots take the preferred type's shape.
            if let Some(t) = &preferred {
                let mut shaped = self.shaped.lock().await;
                if shaped.get(name) != Some(&(raw.clone(), t.clone())) {
                    if let Some(shape) = spec
                        .instance_types
                        .iter()
                        .find(|x| &x.name == t)
                        .and_then(|x| x.shape().ok())
                    {
                        let Some(mut tx) = self.check(db, term).await? else {
                            return Ok(false);
                        };
                        for n in 1..=spec.max_nodes {
                            let slot = berth_core::pool::slot_name(name, n);
                            let _ = cloud_db::slot_shape_set_in_tx(
                                &mut tx,
                                name,
                                &slot,
                                &shape,
                                &spec.features,
                            )
                            .await?;
                        }
                        notify::notify(&mut *tx, notify::JOBS_CHANNEL, "pool").await?;
                        tx.commit().await?;
                        shaped.insert(name.clone(), (raw.clone(), t.clone()));
                    }
                }
            }
        }
        self.shared().pools = planning.clone();

        let nodes = scaling::scaling_node_list(db).await?;
        // 2. Operators' requests and min_nodes.
        let mut intents = Vec::new();
        for (name, (spec, ..)) in &specs {
            let Some(p) = planning.get(name) else {
                continue;
            };
            let mine: Vec<&ScalingNodeRow> = nodes.iter().filter(|n| &n.pool == name).collect();
            let active = mine.iter().filter(|n| n.state != "POWERED_DOWN").count() as u32;
            let mut up: Vec<String> = mine
                .iter()
                .filter(|n| {
                    n.state == "POWERED_DOWN"
                        && n.power_request.as_deref() == Some("up")
                        && cloud_db::slot_index(name, &n.name).is_some_and(|i| i <= spec.max_nodes)
                })
                .map(|n| n.name.clone())
                .collect();
            let missing = spec.min_nodes.saturating_sub(active + up.len() as u32);
            up.extend(
                mine.iter()
                    .filter(|n| {
                        n.state == "POWERED_DOWN"
                            && n.power_request.is_none()
                            && cloud_db::slot_index(name, &n.name)
                                .is_some_and(|i| i <= spec.max_nodes)
                    })
                    .take(missing as usize)
                    .map(|n| n.name.clone()),
            );
            if !up.is_empty() && p.offerable {
                intents.push(LaunchIntent {
                    pool: name.clone(),
                    nodes: up,
                    instance_type: p.instance_type.clone(),
                    market: spec.market,
                    job_id: None,
                });
            }
        }
        if !self.write_launches(db, term, &intents).await? {
            return Ok(false);
        }

        // 3. Launches to send.
        for launch in scaling::launch_open_list(db).await? {
            let Some((spec, raw, backoff_until, failures)) = specs.get(&launch.pool) else {
                continue;
            };
            if backoff_until.is_some_and(|b| b > now) {
                // Written by a cycle that had not yet seen the pool back off: not sent;
                // its slots return to POWERED_DOWN (no further failure is counted).
                let Some(mut tx) = self.check(db, term).await? else {
                    return Ok(false);
                };
                scaling::launch_failed_in_tx(&mut tx, launch.id, "the pool is backing off").await?;
                notify::notify(&mut *tx, notify::JOBS_CHANNEL, "pool").await?;
                tx.commit().await?;
                continue;
            }
            if !self
                .send_launch(
                    db,
                    term,
                    &launch,
                    spec,
                    raw,
                    *failures,
                    cooled.get(launch.pool.as_str()).unwrap_or(&empty),
                )
                .await?
            {
                return Ok(false);
            }
        }

        // 4. Boot timeouts, power-downs, idle nodes, gone instances.
        let nodes = scaling::scaling_node_list(db).await?;
        let planned: HashSet<i64> = {
            let shared = self.shared();
            shared
                .planned_nodes
                .union(&shared.reserved_nodes)
                .copied()
                .collect()
        };
        let mut active: HashMap<&str, u32> = HashMap::new();
        for n in &nodes {
            if n.state != "POWERED_DOWN" {
                *active.entry(n.pool.as_str()).or_default() += 1;
            }
        }
        for n in &nodes {
            let Some((spec, raw, ..)) = specs.get(&n.pool) else {
                continue;
            };
            let timeout = chrono::Duration::seconds(spec.boot_timeout as i64);
            let above_max =
                cloud_db::slot_index(&n.pool, &n.name).is_none_or(|i| i > spec.max_nodes);
            let action: Option<(&str, String, bool)> = match n.state.as_str() {
                "UP" | "DRAINING" | "DRAINED" | "DOWN" if above_max && !n.busy => Some((
                    "terminate",
                    format!("above max_nodes ({})", spec.max_nodes),
                    false,
                )),
                "POWERING_UP" if n.launched_at.is_some_and(|t| t + timeout < now) => Some((
                    "boot_timeout",
                    format!("did not join within boot_timeout ({} s)", spec.boot_timeout),
                    true,
                )),
                "POWERING_DOWN" => Some((
                    "terminate",
                    n.reason.clone().unwrap_or_else(|| "powering down".into()),
                    true,
                )),
                "UP" | "DRAINING" | "DRAINED"
                    if n.power_request.as_deref() == Some("down_force") =>
                {
                    Some(("power_down", "POWER_DOWN_FORCE requested".into(), true))
                }
                "UP" | "DRAINING" | "DRAINED" | "DOWN"
                    if n.power_request.as_deref() == Some("down") && !n.busy =>
                {
                    Some(("power_down", "POWER_DOWN requested".into(), false))
                }
                "DRAINING" | "DRAINED"
                    if !n.busy
                        && n.reason
                            .as_deref()
                            .is_some_and(|r| r.starts_with("reclaimed")) =>
                {
                    Some(("terminate", n.reason.clone().unwrap_or_default(), false))
                }
                "UP" if !n.busy && n.power_request.is_none() && !planned.contains(&n.id) => {
                    let since = n
                        .power_changed_at
                        .into_iter()
                        .chain(n.last_release)
                        .max()
                        .unwrap_or(now);
                    let pool_active = active.get(n.pool.as_str()).copied().unwrap_or(0);
                    (since + chrono::Duration::seconds(spec.idle_timeout as i64) < now
                        && pool_active > spec.min_nodes)
                        .then(|| {
                            (
                                "terminate",
                                format!("idle for {} s (idle_timeout)", spec.idle_timeout),
                                false,
                            )
                        })
                }
                "DOWN" if n.instance_id.is_none() => {
                    let since = down_since.entry(n.id).or_insert_with(Instant::now);
                    (since.elapsed() >= Duration::from_secs(10))
                        .then(|| ("powered_down", "instance gone".to_string(), false))
                }
                _ => None,
            };
            if n.state != "DOWN" {
                down_since.remove(&n.id);
            }
            let Some((kind, reason, force)) = action else {
                continue;
            };
            if kind == "terminate" && n.state == "UP" {
                if let Some(c) = active.get_mut(n.pool.as_str()) {
                    *c = c.saturating_sub(1);
                }
            }
            if n.state == "UP" && n.power_request.as_deref() == Some("down") {
                let Some(mut tx) = self.check(db, term).await? else {
                    return Ok(false);
                };
                berth_db::node::node_admin_drain_in_tx(&mut tx, &n.name, "POWER_DOWN requested")
                    .await?;
                tx.commit().await?;
            }
            if !self
                .power_down(db, term, n, spec, raw, kind, &reason, force)
                .await?
            {
                return Ok(false);
            }
        }
        // Operators' POWER_DOWN of a busy node, and busy nodes left above a lowered
        // max_nodes: drain them so they take no new work.
        for n in nodes.iter().filter(|n| n.state == "UP" && n.busy) {
            let above_max = specs.get(&n.pool).is_some_and(|(spec, ..)| {
                cloud_db::slot_index(&n.pool, &n.name).is_none_or(|i| i > spec.max_nodes)
            });
            let reason = if n.power_request.as_deref() == Some("down") {
                "POWER_DOWN requested".to_string()
            } else if above_max {
                "above max_nodes: terminated once its jobs end".to_string()
            } else {
                continue;
            };
            let Some(mut tx) = self.check(db, term).await? else {
                return Ok(false);
            };
            berth_db::node::node_admin_drain_in_tx(&mut tx, &n.name, &reason).await?;
            tx.commit().await?;
        }

        // 5. Compare with the provider (what this pass changed included).
        let nodes = scaling::scaling_node_list(db).await?;
        if describe {
            for (name, (spec, raw, ..)) in &specs {
                if !self.compare(db, term, name, spec, raw, &nodes).await? {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    #[allow(clippy::too_many_arguments)]
    async fn send_launch(
        &self,
        db: &Pool,
        term: i64,
        launch: &scaling::LaunchRow,
        spec: &PoolSpec,
        raw: &serde_json::Value,
        failures: i32,
        cooled: &HashSet<(String, String)>,
    ) -> Result<bool, DbError> {
        let provider = match self.provider(&launch.pool, spec, raw).await {
            Ok(p) => p,
            Err(e) => {
                return self
                    .launch_failed(db, term, launch, failures, &format!("provider: {e}"), None)
                    .await
            }
        };
        // One-time tokens bound to each node, expiring with the boot timeout.
        let expires = launch.created_at + chrono::Duration::seconds(spec.boot_timeout as i64);
        let boots: Vec<NodeBoot> = launch
            .node_names
            .iter()
            .map(|n| NodeBoot {
                name: n.clone(),
                bootstrap_token: node_credential::secret_with_prefix("berth_boot_"),
            })
            .collect();
        {
            let Some(mut tx) = self.check(db, term).await? else {
                return Ok(false);
            };
            for b in &boots {
                node_credential::bootstrap_token_insert_for_node(
                    &mut *tx,
                    &node_credential::secret_hash(&b.bootstrap_token),
                    &b.name,
                    expires,
                )
                .await?;
            }
            tx.commit().await?;
        }
        // A launch in this pool is tried again: the reasons of earlier failures stop
        // standing for its jobs (a failure now writes its own).
        self.shared()
            .job_reasons
            .retain(|_, (_, pool)| *pool != launch.pool);
        let mut last_capacity: Option<String> = None;
        for (i, zone, subnet) in candidates(spec, &launch.instance_type, cooled) {
            let itype = &spec.instance_types[i];
            let Ok(shape) = itype.shape() else { continue };
            let req = LaunchRequest {
                client_token: launch.id.to_string(),
                cluster: self.settings.cluster.clone(),
                pool: launch.pool.clone(),
                instance_type: itype.name.clone(),
                shape: shape.clone(),
                zone: zone.clone(),
                subnet: subnet.clone(),
                market: spec.market,
                image: spec.image.clone(),
                nodes: boots.clone(),
                api_url: self.settings.api_url.clone(),
                features: spec.features.clone(),
                tags: spec.tags.clone(),
            };
            let place = zone.clone().or(subnet.clone()).unwrap_or_default();
            match provider.launch(&req).await {
                Ok(instances) => {
                    return self
                        .launched(db, term, launch, spec, &itype.name, &shape, &instances)
                        .await;
                }
                Err(LaunchError::Capacity { code, message }) => {
                    let what = format!(
                        "{} {} {code}",
                        itype.name,
                        if place.is_empty() { "-" } else { &place }
                    );
                    tracing::warn!(pool = %launch.pool, %what, %message, "capacity error; trying the next type or zone");
                    let Some(mut tx) = self.check(db, term).await? else {
                        return Ok(false);
                    };
                    scaling::cooldown_set(
                        &mut *tx,
                        &launch.pool,
                        &itype.name,
                        &place,
                        Utc::now() + chrono::Duration::seconds(spec.capacity_cooldown as i64),
                        &format!("{code}: {message}"),
                    )
                    .await?;
                    scaling::pool_error_note(&mut *tx, &launch.pool, &format!("{what}: {message}"))
                        .await?;
                    cloud_db::cloud_event_insert_in_tx(
                        &mut tx,
                        &launch.pool,
                        "capacity_error",
                        None,
                        None,
                        launch.job_id,
                        &format!("{what}: {message}"),
                    )
                    .await?;
                    tx.commit().await?;
                    last_capacity = Some(what);
                }
                Err(e) => {
                    return self
                        .launch_failed(db, term, launch, failures, &e.to_string(), None)
                        .await;
                }
            }
        }
        let error = match &last_capacity {
            Some(what) => format!("no capacity: {what}"),
            None => "every instance type and zone is set aside after capacity errors".into(),
        };
        let reason = format!(
            "CloudCapacity: {}",
            last_capacity.unwrap_or_else(|| "all instance types set aside".into())
        );
        self.launch_failed(db, term, launch, failures, &error, Some(reason))
            .await
    }

    #[allow(clippy::too_many_arguments)]
    async fn launched(
        &self,
        db: &Pool,
        term: i64,
        launch: &scaling::LaunchRow,
        spec: &PoolSpec,
        itype: &str,
        shape: &InstanceShape,
        instances: &[Instance],
    ) -> Result<bool, DbError> {
        let mut rows = Vec::new();
        for inst in instances {
            if let Some(node) = launch.node_names.get(inst.launch_index as usize) {
                rows.push((
                    node.clone(),
                    inst.id.clone(),
                    inst.instance_type.clone(),
                    inst.zone.clone(),
                ));
            }
        }
        let Some(mut tx) = self.check(db, term).await? else {
            return Ok(false);
        };
        scaling::launch_done_in_tx(&mut tx, launch.id, &rows).await?;
        if itype != launch.instance_type {
            for n in &launch.node_names {
                cloud_db::slot_shape_set_in_tx(&mut tx, &launch.pool, n, shape, &spec.features)
                    .await?;
            }
        }
        scaling::pool_success(&mut *tx, &launch.pool).await?;
        for (node, id, t, zone) in &rows {
            let reason = format!(
                "launched {t}{} ({}){}",
                zone.as_deref()
                    .map(|z| format!(" in {z}"))
                    .unwrap_or_default(),
                spec.market.as_str(),
                if launch.job_id.is_some() {
                    " for a planned start"
                } else {
                    ""
                }
            );
            cloud_db::cloud_event_insert_in_tx(
                &mut tx,
                &launch.pool,
                "launch",
                Some(node),
                Some(id),
                launch.job_id,
                &reason,
            )
            .await?;
        }
        notify::notify(&mut *tx, notify::JOBS_CHANNEL, "pool").await?;
        tx.commit().await?;
        tracing::info!(pool = %launch.pool, launch = %launch.id, instances = rows.len(), "instances launched");
        Ok(true)
    }

    async fn launch_failed(
        &self,
        db: &Pool,
        term: i64,
        launch: &scaling::LaunchRow,
        failures: i32,
        error: &str,
        job_reason: Option<String>,
    ) -> Result<bool, DbError> {
        let Some(mut tx) = self.check(db, term).await? else {
            return Ok(false);
        };
        scaling::launch_failed_in_tx(&mut tx, launch.id, error).await?;
        let wait = backoff(failures + 1);
        if let Some(p) = self.shared().pools.get_mut(&launch.pool) {
            p.offerable = false;
        }
        scaling::pool_failure(
            &mut *tx,
            &launch.pool,
            error,
            Utc::now() + chrono::Duration::from_std(wait).unwrap_or_default(),
        )
        .await?;
        cloud_db::cloud_event_insert_in_tx(
            &mut tx,
            &launch.pool,
            "launch_failed",
            None,
            None,
            launch.job_id,
            &format!("{error}; pool backs off {} s", wait.as_secs()),
        )
        .await?;
        notify::notify(&mut *tx, notify::JOBS_CHANNEL, "pool").await?;
        tx.commit().await?;
        tracing::warn!(pool = %launch.pool, launch = %launch.id, %error, "launch failed");
        if let Some(job) = launch.job_id {
            let reason = job_reason.unwrap_or_else(|| format!("CloudLaunchFailed: {error}"));
            let reason: String = reason.chars().take(200).collect();
            self.shared()
                .job_reasons
                .insert(job, (reason, launch.pool.clone()));
        }
        Ok(true)
    }

    /// Terminates node `n`'s instance and returns its slot to POWERED_DOWN (requeueing
    /// what runs there when `force`).
    #[allow(clippy::too_many_arguments)]
    async fn power_down(
        &self,
        db: &Pool,
        term: i64,
        n: &ScalingNodeRow,
        spec: &PoolSpec,
        raw: &serde_json::Value,
        kind: &str,
        reason: &str,
        force: bool,
    ) -> Result<bool, DbError> {
        if kind != "powered_down" && n.state != "POWERING_DOWN" {
            let Some(mut tx) = self.check(db, term).await? else {
                return Ok(false);
            };
            if force {
                crate::reconcile::fail_node_runs_in_tx(&mut tx, n.id, &n.name).await?;
            }
            if !scaling::node_power_down_begin_in_tx(&mut tx, n.id, reason, force).await? {
                return Ok(true);
            }
            tx.commit().await?;
        }
        if let Some(id) = &n.instance_id {
            let provider = match self.provider(&n.pool, spec, raw).await {
                Ok(p) => p,
                Err(e) => {
                    tracing::warn!(pool = %n.pool, error = %e, "no provider to terminate with");
                    return Ok(true);
                }
            };
            if let Err(e) = provider.terminate(std::slice::from_ref(id)).await {
                tracing::warn!(node.name = %n.name, instance = %id, error = %e, "terminate failed; retrying");
                return Ok(true);
            }
        }
        let Some(mut tx) = self.check(db, term).await? else {
            return Ok(false);
        };
        scaling::node_powered_down_in_tx(&mut tx, n.id, None).await?;
        let event_kind = match kind {
            "powered_down" => "terminate",
            k => k,
        };
        cloud_db::cloud_event_insert_in_tx(
            &mut tx,
            &n.pool,
            event_kind,
            Some(&n.name),
            n.instance_id.as_deref(),
            None,
            reason,
        )
        .await?;
        if kind == "boot_timeout" {
            // An image that never boots must not be relaunched at the launch rate: the
            // pool backs off as after a failed launch.
            let failures = scaling::pool_consecutive_failures(&mut *tx, &n.pool).await?;
            let wait = backoff(failures + 1);
            if let Some(p) = self.shared().pools.get_mut(&n.pool) {
                p.offerable = false;
            }
            scaling::pool_failure(
                &mut *tx,
                &n.pool,
                &format!("{}: {reason}", n.name),
                Utc::now() + chrono::Duration::from_std(wait).unwrap_or_default(),
            )
            .await?;
            if let Some(launch) = n.launch_id {
                let job = scaling::cloud_launch_job(&mut *tx, launch).await?;
                if let Some(job) = job {
                    self.shared().job_reasons.insert(
                        job,
                        (
                            format!("CloudBootTimeout: {} {reason}", n.name),
                            n.pool.clone(),
                        ),
                    );
                    let run = job::job_restart_count(&mut *tx, job).await?;
                    job::job_event_insert(
                        &mut *tx,
                        job,
                        "cloud_boot_timeout",
                        run,
                        Some(&n.name),
                        serde_json::json!({"reason": reason, "instance_id": n.instance_id}),
                    )
                    .await?;
                }
            }
        }
        // The slot takes the pool's preferred shape again.
        let preferred = self
            .shared()
            .pools
            .get(&n.pool)
            .map(|p| p.instance_type.clone());
        if let Some(t) = preferred {
            if let Some(shape) = spec
                .instance_types
                .iter()
                .find(|x| x.name == t)
                .and_then(|x| x.shape().ok())
            {
                cloud_db::slot_shape_set_in_tx(&mut tx, &n.pool, &n.name, &shape, &spec.features)
                    .await?;
            }
        }
        notify::notify(&mut *tx, notify::JOBS_CHANNEL, "pool").await?;
        tx.commit().await?;
        tracing::info!(pool = %n.pool, node.name = %n.name, kind, reason, "node powered down");
        Ok(true)
    }

    /// Compares a pool's instances with its nodes.
    async fn compare(
        &self,
        db: &Pool,
        term: i64,
        name: &str,
        spec: &PoolSpec,
        raw: &serde_json::Value,
        nodes: &[ScalingNodeRow],
    ) -> Result<bool, DbError> {
        let provider = match self.provider(name, spec, raw).await {
            Ok(p) => p,
            Err(_) => return Ok(true),
        };
        let instances = match provider.describe(&self.settings.cluster, name).await {
            Ok(i) => i,
            Err(e) => {
                tracing::warn!(pool = name, error = %e, "describe failed");
                return Ok(true);
            }
        };
        let now = Utc::now();
        let known: HashSet<&str> = nodes
            .iter()
            .filter_map(|n| n.instance_id.as_deref())
            .collect();
        let open: HashSet<String> = scaling::launch_open_list(db)
            .await?
            .into_iter()
            .map(|l| l.id.to_string())
            .collect();
        let grace = chrono::Duration::from_std(self.settings.orphan_grace).unwrap_or_default();
        let mut orphans = Vec::new();
        for i in &instances {
            if i.state.is_gone() || known.contains(i.id.as_str()) {
                continue;
            }
            if i.launch_id.as_ref().is_some_and(|l| open.contains(l)) {
                continue;
            }
            if i.launched_at.is_none_or(|t| t + grace < now) {
                orphans.push(i.id.clone());
            }
        }
        if !orphans.is_empty() {
            if let Err(e) = provider.terminate(&orphans).await {
                tracing::warn!(pool = name, error = %e, "terminating orphans failed");
            } else {
                let Some(mut tx) = self.check(db, term).await? else {
                    return Ok(false);
                };
                for id in &orphans {
                    cloud_db::cloud_event_insert_in_tx(
                        &mut tx,
                        name,
                        "orphan_terminated",
                        None,
                        Some(id),
                        None,
                        "an instance tagged with this cluster that no node knows",
                    )
                    .await?;
                }
                tx.commit().await?;
            }
        }
        let live: HashMap<&str, &Instance> = instances
            .iter()
            .filter(|i| !i.state.is_gone())
            .map(|i| (i.id.as_str(), i))
            .collect();
        for n in nodes.iter().filter(|n| n.pool == name) {
            let Some(id) = &n.instance_id else { continue };
            if !matches!(
                n.state.as_str(),
                "UP" | "DRAINING" | "DRAINED" | "POWERING_UP"
            ) {
                continue;
            }
            if live.contains_key(id.as_str()) {
                continue;
            }
            if n.power_changed_at
                .is_some_and(|t| t + chrono::Duration::seconds(20) > now)
                && n.state == "POWERING_UP"
            {
                continue;
            }
            let reason = format!("instance {id} gone");
            let Some(mut tx) = self.check(db, term).await? else {
                return Ok(false);
            };
            let jobs = crate::reconcile::fail_node_runs_in_tx(&mut tx, n.id, &n.name)
                .await?
                .into_iter()
                .map(|(job, _)| job)
                .collect::<Vec<_>>();
            scaling::node_instance_gone_in_tx(&mut tx, n.id, &reason).await?;
            cloud_db::cloud_event_insert_in_tx(
                &mut tx,
                name,
                "instance_gone",
                Some(&n.name),
                Some(id),
                jobs.first().copied(),
                &format!("{reason}; {} job(s) requeued", jobs.len()),
            )
            .await?;
            notify::notify(&mut *tx, notify::JOBS_CHANNEL, "node").await?;
            tx.commit().await?;
            tracing::warn!(pool = name, node.name = %n.name, instance = %id, jobs = jobs.len(), "instance gone: node DOWN");
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(types: &[(&str, &str)], zones: &[&str]) -> PoolSpec {
        let types: Vec<serde_json::Value> = types
            .iter()
            .map(|(n, g)| serde_json::json!({"name": n, "gpus": g, "cpus": 32, "memory": "256G"}))
            .collect();
        serde_json::from_value(serde_json::json!({
            "provider": "local", "max_nodes": 4, "instance_types": types, "zones": zones
        }))
        .unwrap()
    }

    #[test]
    fn a_capacity_error_moves_to_the_next_zone_then_type() {
        let s = spec(
            &[("big", "8xH100"), ("bigger", "8xH200"), ("small", "4xH100")],
            &["a", "b"],
        );
        let mut cooled = HashSet::new();
        let c = candidates(&s, "big", &cooled);
        let names: Vec<(&str, Option<&str>)> = c
            .iter()
            .map(|(i, z, _)| (s.instance_types[*i].name.as_str(), z.as_deref()))
            .collect();
        // The smaller type never stands in for the planned one.
        assert_eq!(
            names,
            [
                ("big", Some("a")),
                ("big", Some("b")),
                ("bigger", Some("a")),
                ("bigger", Some("b"))
            ]
        );
        cooled.insert(("big".to_string(), "a".to_string()));
        cooled.insert(("big".to_string(), "b".to_string()));
        assert_eq!(preferred_type(&s, &cooled).as_deref(), Some("bigger"));
        let c = candidates(&s, "big", &cooled);
        assert_eq!(s.instance_types[c[0].0].name, "bigger");
    }

    use crate::planner::{self, NodeView, PendingJob, PlannerConfig, RunningAlloc, Snapshot};

    /// A cluster of one busy 8-GPU node (its job ends at `busy_until`) and pool `burst`'s
    /// four powered-down 8-GPU slots (expected boot 5 s), with `pending` queued.
    fn cluster(busy_until: i64, pending: Vec<PendingJob>) -> (Arc<Cloud>, Snapshot, Vec<SlotView>) {
        let now = 1_000_000;
        let gpus: Vec<(u32, String)> = (0..8).map(|i| (i, "H100".to_string())).collect();
        let node = |id: i64, name: &str, available: bool| NodeView {
            id,
            name: name.into(),
            available,
            gpus: gpus.clone(),
            cpus: 32,
            memory_mib: 262_144,
            weight: 1,
            ..Default::default()
        };
        let mut nodes = vec![node(1, "static-1", true)];
        let mut slots = Vec::new();
        for i in 1..=4 {
            nodes.push(node(10 + i, &format!("burst-{i}"), false));
            slots.push(SlotView {
                id: 10 + i,
                name: format!("burst-{i}"),
                pool: "burst".into(),
                state: "POWERED_DOWN".into(),
                launched_at: None,
            });
        }
        let snapshot = Snapshot {
            now,
            nodes,
            running: vec![RunningAlloc {
                job_id: 1,
                node_id: 1,
                gpus: (0..8).collect(),
                cpus: 8,
                mem_mib: 1024,
                exclusive: false,
                end: Some(now + busy_until),
            }],
            pending,
            ..Default::default()
        };
        let cloud = Cloud::new(CloudSettings::default());
        cloud.shared().pools.insert(
            "burst".into(),
            PoolPlanning {
                offerable: true,
                expected_boot: 5,
                instance_type: "sim-8xh100".into(),
                market: Some(Market::OnDemand),
                launch_budget: 20,
                max_nodes: 4,
            },
        );
        (cloud, snapshot, slots)
    }

    fn job(id: i64, nodes: u32) -> PendingJob {
        PendingJob {
            id,
            submit_time: 999_000,
            nodes,
            gpus_per_node: 8,
            cpus: nodes,
            cpus_per_node: 1,
            time_limit: Some(600),
            user: "u".into(),
            account: "a".into(),
            qos: "normal".into(),
            ..Default::default()
        }
    }

    fn intents(busy_until: i64, pending: Vec<PendingJob>) -> (Vec<LaunchIntent>, planner::Plan) {
        let (cloud, mut snapshot, slots) = cluster(busy_until, pending);
        cloud.adjust_snapshot(&mut snapshot, &slots);
        let mut plan = planner::plan(&snapshot, &PlannerConfig::default());
        let intents = cloud.launch_intents(&mut plan, snapshot.now, &slots);
        (intents, plan)
    }

    #[test]
    fn a_job_is_launched_for_only_when_a_new_node_starts_it_sooner() {
        // The busy node frees in an hour: a slot is launched, the job starts after the boot.
        let (launches, plan) = intents(3600, vec![job(2, 1)]);
        assert_eq!(launches.len(), 1);
        assert_eq!(launches[0].nodes, ["burst-1"]);
        assert_eq!(launches[0].job_id, Some(2));
        assert_eq!(plan.waiting(2).unwrap().expected_start, Some(1_000_005));
        assert!(
            plan.starts.is_empty(),
            "nothing starts on a node still booting"
        );
        // It frees in 3 s, before a new node could boot: no launch, the job waits for it.
        let (launches, plan) = intents(3, vec![job(2, 1)]);
        assert!(launches.is_empty(), "{launches:?}");
        assert_eq!(plan.waiting(2).unwrap().expected_start, Some(1_000_003));
    }

    #[test]
    fn a_gang_is_launched_whole_in_one_launch() {
        let (launches, _) = intents(3600, vec![job(2, 2), job(3, 1)]);
        assert_eq!(launches.len(), 2, "{launches:?}");
        assert_eq!(launches[0].nodes, ["burst-1", "burst-2"]);
        assert_eq!(launches[0].job_id, Some(2));
        assert_eq!(launches[1].nodes, ["burst-3"]);
    }

    #[test]
    fn a_pool_that_cannot_launch_offers_nothing() {
        let (cloud, mut snapshot, slots) = cluster(3600, vec![job(2, 1)]);
        cloud.shared().pools.get_mut("burst").unwrap().offerable = false;
        cloud.adjust_snapshot(&mut snapshot, &slots);
        let mut plan = planner::plan(&snapshot, &PlannerConfig::default());
        assert!(cloud
            .launch_intents(&mut plan, snapshot.now, &slots)
            .is_empty());
        assert_eq!(plan.waiting(2).unwrap().expected_start, Some(1_003_600));
    }

    #[test]
    fn backoff_doubles_to_ten_minutes() {
        assert_eq!(backoff(1), Duration::from_secs(30));
        assert_eq!(backoff(2), Duration::from_secs(60));
        assert_eq!(backoff(5), Duration::from_secs(480));
        assert_eq!(backoff(9), Duration::from_secs(600));
    }
}
