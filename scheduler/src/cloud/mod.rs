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

mod instances;
mod launch;
mod reconcile;
#[cfg(test)]
mod tests;

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
}
