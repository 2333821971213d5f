//! The replay with an elastic node pool: a fixed part (always up, possibly no nodes) and
//! one pool of up to `max_nodes` nodes of one shape that are launched (they boot for
//! `boot` seconds, paid) and powered down again after `idle_timeout` idle seconds, under
//! one of two scaling policies, both through the production planner
//! ([`crate::planner::plan`]):
//!
//! * [`ScalePolicy::Berth`]: what the scheduler leader does ([`crate::cloud`]). Each pass
//!   offers the pool's slots through [`Cloud::adjust_snapshot`] (powered-down slots held
//!   until `now + boot`, booting ones until their launch + boot, both weighted after nodes
//!   in service) and takes the launches from [`Cloud::launch_intents`] (planned starts on
//!   powered-down slots due within the boot time, a gang's slots in one launch, within
//!   `launch_rate_per_minute`). So a node is launched only for a job that a new node
//!   starts sooner than any existing one would. A node idle for `idle_timeout` seconds is
//!   powered down unless the last plan's starts or reservations use it
//!   ([`Cloud::planned_nodes`]), as the reconciler does.
//! * [`ScalePolicy::Slurm`]: Slurm's power saving (`SuspendProgram`/`ResumeProgram`,
//!   `SuspendTime`). Powered-down and booting nodes are allocatable at once, with no
//!   hold: they are offered to the planner like nodes in service, only weighted after
//!   them (as a site gives its cloud nodes a higher `Weight`, so nodes that are up are
//!   filled first). A job that the plan starts now on powered-down nodes gets them at
//!   once: they are resumed (one launch per job) and the job holds its allocation while
//!   it waits for the boot (`CONFIGURING`), then runs for its duration. It is started even
//!   when a node in service would have freed sooner than the boot ends. Backfill
//!   reservations on powered-down nodes launch nothing (Slurm resumes nodes only for
//!   allocated jobs). A node idle for `SuspendTime` = `idle_timeout` seconds is suspended,
//!   whatever the queue's plans; `ResumeRate` is not limited.
//!
//! In both, a node is paid from its launch (booting included) to its power-down, which
//! is instant; a boot always takes exactly `boot` seconds and never fails; a job's wait is
//! from its submission to when it really runs (after the boot for a job that waited in
//! `CONFIGURING`). Time jumps from event to event: submissions, ends, boot completions,
//! idle timeouts, and (Berth) the moment a planned launch falls due.

use crate::cloud::{
    Cloud, CloudSettings, PoolPlanning, SlotView, POWERED_DOWN_WEIGHT, POWERING_UP_WEIGHT,
};
use crate::planner::{self, NodeView, Placement, RunningAlloc, Snapshot};
use crate::sim::{percentile, SimConfig, SimJob, SimNode, SimOutcome, RUNS_FOREVER};
use berth_core::priority;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::time::Instant;

/// The name of the simulated pool (its slots are `pool-1 … pool-<max_nodes>`).
pub const POOL: &str = "pool";

/// How the pool is scaled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ScalePolicy {
    /// Berth's: launches for planned starts a new node makes sooner (see the module).
    Berth,
    /// Slurm's power saving with a fixed `SuspendTime` (see the module).
    Slurm,
}

/// The elastic pool.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolConfig {
    /// The most nodes it may have.
    pub max_nodes: u32,
    /// GPUs per node.
    pub gpus_per_node: u32,
    /// The GPUs' model (also the nodes' feature). Empty: `GPU`.
    pub model: String,
    /// CPUs per node (0: not placed).
    pub cpus: u32,
    /// Memory per node, MiB (0: not placed).
    pub memory_mib: u64,
    /// Seconds from a launch until the node is in service (paid).
    pub boot: i64,
    /// Seconds a node stays idle before it is powered down (Slurm's `SuspendTime`).
    pub idle_timeout: i64,
    /// Berth's launch budget: the most nodes launched in any 60 s (the pool's
    /// `launch_rate_per_minute`, default 20).
    pub launch_rate_per_minute: u32,
    /// The price of one pool node for one hour (any currency).
    pub price_per_node_hour: f64,
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            max_nodes: 4,
            gpus_per_node: 8,
            model: String::new(),
            cpus: 0,
            memory_mib: 0,
            boot: 120,
            idle_timeout: 300,
            launch_rate_per_minute: 20,
            price_per_node_hour: 1.0,
        }
    }
}

/// The result of a replay with a pool.
#[derive(Debug, Clone)]
pub struct PoolReport {
    /// The policy.
    pub policy: ScalePolicy,
    /// Every job, by id.
    pub jobs: BTreeMap<i64, SimOutcome>,
    /// GPUs per pool node.
    pub pool_gpus_per_node: u32,
    /// GPUs of the fixed nodes.
    pub fixed_gpus: u32,
    /// Price of a pool node-hour.
    pub price_per_node_hour: f64,
    /// Pool node-seconds paid (booting or in service).
    pub pool_node_seconds: f64,
    /// GPU-seconds jobs ran on pool nodes.
    pub pool_gpu_seconds_used: f64,
    /// GPU-seconds jobs ran, on all nodes.
    pub gpu_seconds_used: f64,
    /// Launch calls.
    pub launches: u32,
    /// Nodes launched.
    pub launched_nodes: u32,
    /// The most pool nodes paid at once.
    pub peak_pool_nodes: u32,
    /// Planner time of each pass, microseconds (the plan alone).
    pub pass_micros: Vec<f64>,
    /// What [`Cloud::adjust_snapshot`] + [`Cloud::launch_intents`] took in each pass,
    /// microseconds (Berth only).
    pub cloud_micros: Vec<f64>,
}

/// Summary figures of a [`PoolReport`], as `berth sim` prints them. GPU-hours of the
/// pool and of the fixed nodes are apart: the fixed nodes are paid for the whole
/// makespan by either policy.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct PoolSummary {
    /// Jobs that ran to their end.
    pub jobs: usize,
    /// Jobs that never started.
    pub never_started: usize,
    /// Average wait (really running − submit), seconds.
    pub avg_wait: f64,
    /// 95th percentile wait, seconds.
    pub p95_wait: f64,
    /// Average completion time (end − submit), seconds.
    pub avg_jct: f64,
    /// Last end − first submit, seconds.
    pub makespan: f64,
    /// Launch calls.
    pub launches: u32,
    /// Nodes launched.
    pub launched_nodes: u32,
    /// The most pool nodes paid at once.
    pub peak_pool_nodes: u32,
    /// Pool GPU-hours paid (node-hours booting or in service × GPUs per node).
    pub pool_gpu_hours_paid: f64,
    /// GPU-hours jobs ran on pool nodes.
    pub pool_gpu_hours_used: f64,
    /// Paid − used on the pool, GPU-hours (booting, idle and `CONFIGURING` time).
    pub pool_idle_gpu_hours: f64,
    /// Pool node-hours paid × price.
    pub pool_cost: f64,
    /// The idle GPU-hours in money (idle node-hours × price).
    pub pool_idle_cost: f64,
    /// Fixed nodes' GPU-hours over the makespan (paid whatever the policy).
    pub fixed_gpu_hours_paid: f64,
    /// GPU-hours jobs ran, on all nodes (the same for both policies on one workload).
    pub gpu_hours_used: f64,
    /// Planner passes.
    pub passes: usize,
    /// Mean planner pass, microseconds.
    pub pass_mean_us: f64,
    /// Mean time of the cloud steps per pass, microseconds (Berth only; else 0).
    pub cloud_mean_us: f64,
}

impl PoolReport {
    /// The summary figures.
    pub fn summary(&self) -> PoolSummary {
        let done: Vec<&SimOutcome> = self.jobs.values().filter(|j| j.end.is_some()).collect();
        let mut wait: Vec<f64> = done
            .iter()
            .map(|j| (j.start.unwrap_or(j.submit) - j.submit) as f64)
            .collect();
        wait.sort_by(f64::total_cmp);
        let mean = |v: &[f64]| {
            if v.is_empty() {
                0.0
            } else {
                v.iter().sum::<f64>() / v.len() as f64
            }
        };
        let jct: Vec<f64> = done
            .iter()
            .map(|j| (j.end.unwrap_or(0) - j.submit) as f64)
            .collect();
        let first = self.jobs.values().map(|j| j.submit).min().unwrap_or(0);
        let last = done.iter().filter_map(|j| j.end).max().unwrap_or(first);
        let makespan = (last - first) as f64;
        let gpn = f64::from(self.pool_gpus_per_node.max(1));
        let paid = self.pool_node_seconds * gpn / 3600.0;
        let used = self.pool_gpu_seconds_used / 3600.0;
        let idle = (paid - used).max(0.0);
        PoolSummary {
            jobs: done.len(),
            never_started: self.jobs.values().filter(|j| j.start.is_none()).count(),
            avg_wait: mean(&wait),
            p95_wait: percentile(&wait, 0.95),
            avg_jct: mean(&jct),
            makespan,
            launches: self.launches,
            launched_nodes: self.launched_nodes,
            peak_pool_nodes: self.peak_pool_nodes,
            pool_gpu_hours_paid: paid,
            pool_gpu_hours_used: used,
            pool_idle_gpu_hours: idle,
            pool_cost: self.pool_node_seconds / 3600.0 * self.price_per_node_hour,
            pool_idle_cost: idle / gpn * self.price_per_node_hour,
            fixed_gpu_hours_paid: f64::from(self.fixed_gpus) * makespan / 3600.0,
            gpu_hours_used: self.gpu_seconds_used / 3600.0,
            passes: self.pass_micros.len(),
            pass_mean_us: mean(&self.pass_micros),
            cloud_mean_us: mean(&self.cloud_micros),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum SlotState {
    Down,
    /// Launched at.
    Booting(i64),
    /// In service since.
    Up(i64),
}

#[derive(Debug, Clone)]
struct Slot {
    state: SlotState,
    /// When its current instance was launched (paid from then).
    launched_at: i64,
    /// When its last job ended.
    last_release: i64,
}

struct Run {
    job: usize,
    /// When it really runs (after the boot for a job `CONFIGURING`).
    run_start: i64,
    end: i64,
    placements: Vec<Placement>,
    exclusive: bool,
}

fn model_of(model: &str) -> String {
    if model.is_empty() {
        "GPU".to_string()
    } else {
        model.to_string()
    }
}

/// Launches the powered-down ones of `nodes` (slot indices) together at `now`.
fn launch(
    slots: &mut [Slot],
    nodes: &[usize],
    now: i64,
    report: &mut PoolReport,
    recent: &mut VecDeque<(i64, u32)>,
) {
    let mut n = 0;
    for k in nodes {
        if let Some(s) = slots.get_mut(*k).filter(|s| s.state == SlotState::Down) {
            s.state = SlotState::Booting(now);
            s.launched_at = now;
            n += 1;
        }
    }
    if n > 0 {
        report.launches += 1;
        report.launched_nodes += n;
        recent.push_back((now, n));
    }
}

/// Replays `jobs` on `fixed` nodes plus the elastic `pool`, scaled by `policy`. Jobs that
/// can never start are reported with no start.
pub fn simulate_pool(
    fixed: &[SimNode],
    pool: &PoolConfig,
    jobs: &[SimJob],
    config: &SimConfig,
    policy: ScalePolicy,
) -> PoolReport {
    let mut views: Vec<NodeView> = fixed
        .iter()
        .enumerate()
        .map(|(i, n)| NodeView {
            id: i as i64 + 1,
            name: n.name.clone(),
            available: true,
            gpus: (0..n.gpus).map(|g| (g, model_of(&n.model))).collect(),
            features: vec![model_of(&n.model)],
            cpus: n.cpus,
            memory_mib: n.memory_mib,
            threads_per_core: 1,
            weight: 1,
        })
        .collect();
    let first_slot_id = fixed.len() as i64 + 1;
    for s in 1..=pool.max_nodes {
        views.push(NodeView {
            id: first_slot_id + i64::from(s) - 1,
            name: berth_core::pool::slot_name(POOL, s),
            available: false,
            gpus: (0..pool.gpus_per_node)
                .map(|g| (g, model_of(&pool.model)))
                .collect(),
            features: vec![model_of(&pool.model)],
            cpus: pool.cpus,
            memory_mib: pool.memory_mib,
            threads_per_core: 1,
            weight: 1,
        });
    }
    let slot_of = |node_id: i64| -> Option<usize> {
        (node_id >= first_slot_id && node_id < first_slot_id + i64::from(pool.max_nodes))
            .then(|| (node_id - first_slot_id) as usize)
    };
    let mut slots: Vec<Slot> = (0..pool.max_nodes)
        .map(|_| Slot {
            state: SlotState::Down,
            launched_at: 0,
            last_release: i64::MIN,
        })
        .collect();
    let cloud = Cloud::new(CloudSettings::default());
    let mut report = PoolReport {
        policy,
        jobs: BTreeMap::new(),
        pool_gpus_per_node: pool.gpus_per_node,
        fixed_gpus: fixed.iter().map(|n| n.gpus).sum(),
        price_per_node_hour: pool.price_per_node_hour,
        pool_node_seconds: 0.0,
        pool_gpu_seconds_used: 0.0,
        gpu_seconds_used: 0.0,
        launches: 0,
        launched_nodes: 0,
        peak_pool_nodes: 0,
        pass_micros: Vec::new(),
        cloud_micros: Vec::new(),
    };
    for j in jobs {
        report.jobs.insert(
            j.id,
            SimOutcome {
                id: j.id,
                submit: j.submit,
                ..Default::default()
            },
        );
    }
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|i| (jobs[*i].submit, jobs[*i].id));
    let Some(&first) = order.first() else {
        return report;
    };
    let mut next_submit = 0usize;
    let mut pending: Vec<usize> = Vec::new();
    let mut running: Vec<Run> = Vec::new();
    let mut usage: HashMap<(String, String), f64> = HashMap::new();
    let mut usage_at = i64::MIN;
    // Nodes launched in the last minute: (time, count).
    let mut recent: VecDeque<(i64, u32)> = VecDeque::new();
    let mut now = jobs[first].submit;
    loop {
        if usage_at != i64::MIN {
            for v in usage.values_mut() {
                *v = priority::decay(*v, now - usage_at, config.half_life);
            }
        }
        usage_at = now;
        // 1. Runs that ended by now.
        running.retain(|r| {
            if r.end > now {
                return true;
            }
            let j = &jobs[r.job];
            let out = report.jobs.get_mut(&j.id).expect("job");
            out.end = Some(r.end);
            let elapsed = (r.end - r.run_start).max(0);
            let gpus = u64::from(j.nodes) * u64::from(j.gpus_per_node);
            let amount = priority::charge(
                elapsed,
                priority::billing(&config.billing, u64::from(j.cpus), gpus),
                1.0,
            );
            *usage
                .entry((j.account.clone(), j.user.clone()))
                .or_default() += amount;
            report.gpu_seconds_used += gpus as f64 * elapsed as f64;
            for p in &r.placements {
                if let Some(s) = slot_of(p.node_id) {
                    report.pool_gpu_seconds_used += p.gpus.len() as f64 * elapsed as f64;
                    slots[s].last_release = slots[s].last_release.max(r.end);
                }
            }
            false
        });
        // 2. Boots that completed.
        for s in &mut slots {
            if let SlotState::Booting(at) = s.state {
                if at + pool.boot <= now {
                    s.state = SlotState::Up(at + pool.boot);
                }
            }
        }
        // 3. Submissions.
        while next_submit < order.len() && jobs[order[next_submit]].submit <= now {
            pending.push(order[next_submit]);
            next_submit += 1;
        }
        while recent.front().is_some_and(|(t, _)| *t + 60 <= now) {
            recent.pop_front();
        }
        // 4. The planning pass.
        let mut planned: HashSet<i64> = HashSet::new();
        let mut due_at: Option<i64> = None;
        if !pending.is_empty() {
            let usage_rows: Vec<(String, String, f64)> = usage
                .iter()
                .map(|((a, u), v)| (a.clone(), u.clone(), *v))
                .collect();
            let assocs: Vec<(String, String)> = pending
                .iter()
                .map(|i| (jobs[*i].account.clone(), jobs[*i].user.clone()))
                .collect();
            let fairshare: HashMap<(String, String), f64> =
                priority::fairshare_table(&config.accounts, &usage_rows, &assocs)
                    .into_iter()
                    .map(|r| ((r.account, r.user), r.fairshare))
                    .collect();
            let mut nodes = views.clone();
            let mut slot_views = Vec::with_capacity(slots.len());
            for (i, s) in slots.iter().enumerate() {
                let node = &mut nodes[fixed.len() + i];
                let state = match s.state {
                    SlotState::Up(_) => {
                        node.available = true;
                        "UP"
                    }
                    SlotState::Booting(_) => {
                        if policy == ScalePolicy::Slurm {
                            node.available = true;
                            node.weight += POWERING_UP_WEIGHT;
                        }
                        "POWERING_UP"
                    }
                    SlotState::Down => {
                        if policy == ScalePolicy::Slurm {
                            node.available = true;
                            node.weight += POWERED_DOWN_WEIGHT;
                        }
                        "POWERED_DOWN"
                    }
                };
                slot_views.push(SlotView {
                    id: node.id,
                    name: node.name.clone(),
                    pool: POOL.to_string(),
                    state: state.to_string(),
                    launched_at: matches!(s.state, SlotState::Booting(_)).then_some(s.launched_at),
                });
            }
            let mut snapshot = Snapshot {
                now,
                nodes,
                running: running
                    .iter()
                    .flat_map(|r| {
                        let limit_end = jobs[r.job].time_limit.map(|l| r.run_start + l);
                        r.placements.iter().map(move |p| RunningAlloc {
                            job_id: jobs[r.job].id,
                            node_id: p.node_id,
                            gpus: p.gpus.clone(),
                            cpus: p.cpus,
                            mem_mib: p.mem_mib,
                            exclusive: r.exclusive,
                            end: limit_end,
                        })
                    })
                    .collect(),
                pending: pending
                    .iter()
                    .map(|i| {
                        let j = &jobs[*i];
                        let share = fairshare
                            .get(&(j.account.clone(), j.user.clone()))
                            .copied()
                            .unwrap_or(1.0);
                        j.pending_view(share)
                    })
                    .collect(),
                ..Default::default()
            };
            let mut cloud_us = 0.0;
            if policy == ScalePolicy::Berth {
                let launched: u32 = recent.iter().map(|(_, n)| n).sum();
                cloud.set_pool_planning(
                    POOL,
                    PoolPlanning {
                        offerable: true,
                        expected_boot: pool.boot,
                        instance_type: "sim".into(),
                        market: None,
                        launch_budget: pool.launch_rate_per_minute.saturating_sub(launched),
                        max_nodes: pool.max_nodes,
                    },
                );
                let t = Instant::now();
                cloud.adjust_snapshot(&mut snapshot, &slot_views);
                cloud_us += t.elapsed().as_secs_f64() * 1e6;
            }
            let t = Instant::now();
            let mut plan = planner::plan(&snapshot, &config.planner);
            report.pass_micros.push(t.elapsed().as_secs_f64() * 1e6);
            let mut launches: Vec<Vec<usize>> = Vec::new();
            if policy == ScalePolicy::Berth {
                let t = Instant::now();
                let intents = cloud.launch_intents(&mut plan, now, &slot_views);
                cloud_us += t.elapsed().as_secs_f64() * 1e6;
                report.cloud_micros.push(cloud_us);
                planned = cloud.planned_nodes();
                for intent in intents {
                    launches.push(
                        intent
                            .nodes
                            .iter()
                            .filter_map(|n| {
                                n.strip_prefix("pool-")
                                    .and_then(|k| k.parse::<usize>().ok())
                                    .map(|k| k - 1)
                            })
                            .collect(),
                    );
                }
                // When the next planned launch falls due (a new pass then, as the
                // scheduler's cycle runs every few seconds).
                due_at = plan
                    .reservations
                    .iter()
                    .filter(|r| {
                        r.placements.iter().any(|p| {
                            slot_of(p.node_id).is_some_and(|s| slots[s].state == SlotState::Down)
                        })
                    })
                    .map(|r| r.start - pool.boot - 2)
                    .filter(|t| *t > now)
                    .min();
            }
            let index: HashMap<i64, usize> = pending.iter().map(|i| (jobs[*i].id, *i)).collect();
            for w in &plan.pending {
                let out = report.jobs.get_mut(&w.job_id).expect("job");
                out.last_reason = Some(w.reason.clone());
                if out.first_expected_start.is_none() {
                    out.first_expected_start = w.expected_start;
                }
            }
            for s in plan.starts {
                let i = index[&s.job_id];
                let j = &jobs[i];
                // Slurm: the powered-down nodes of the start are resumed for it at once.
                let down: Vec<usize> = s
                    .placements
                    .iter()
                    .filter_map(|p| slot_of(p.node_id))
                    .filter(|k| slots[*k].state == SlotState::Down)
                    .collect();
                if !down.is_empty() {
                    debug_assert_eq!(policy, ScalePolicy::Slurm, "Berth holds unlaunched slots");
                    launch(&mut slots, &down, now, &mut report, &mut recent);
                }
                // It runs once all its nodes are in service.
                let run_start = s
                    .placements
                    .iter()
                    .filter_map(|p| slot_of(p.node_id))
                    .filter_map(|k| match slots[k].state {
                        SlotState::Booting(at) => Some(at + pool.boot),
                        _ => None,
                    })
                    .max()
                    .unwrap_or(now)
                    .max(now);
                let run_for = j.time_limit.map_or(j.duration, |l| j.duration.min(l));
                let out = report.jobs.get_mut(&j.id).expect("job");
                out.start = Some(run_start);
                out.placements = s.placements.clone();
                running.push(Run {
                    job: i,
                    run_start,
                    end: if run_for == RUNS_FOREVER {
                        RUNS_FOREVER
                    } else {
                        run_start.saturating_add(run_for.max(0))
                    },
                    placements: s.placements,
                    exclusive: s.exclusive,
                });
                pending.retain(|p| *p != i);
            }
            for nodes in launches {
                launch(&mut slots, &nodes, now, &mut report, &mut recent);
            }
        }
        // 5. Idle nodes are powered down.
        let busy: HashSet<i64> = running
            .iter()
            .flat_map(|r| r.placements.iter().map(|p| p.node_id))
            .collect();
        let mut next_idle: Option<i64> = None;
        for (k, s) in slots.iter_mut().enumerate() {
            let SlotState::Up(since) = s.state else {
                continue;
            };
            let id = first_slot_id + k as i64;
            if busy.contains(&id) {
                continue;
            }
            let deadline = since.max(s.last_release) + pool.idle_timeout;
            if deadline <= now {
                if policy == ScalePolicy::Berth && planned.contains(&id) {
                    continue;
                }
                report.pool_node_seconds += (now - s.launched_at) as f64;
                s.state = SlotState::Down;
            } else {
                next_idle = Some(next_idle.map_or(deadline, |t: i64| t.min(deadline)));
            }
        }
        let paid_now = slots.iter().filter(|s| s.state != SlotState::Down).count() as u32;
        report.peak_pool_nodes = report.peak_pool_nodes.max(paid_now);
        // 6. The next event.
        let next_end = running
            .iter()
            .map(|r| r.end)
            .filter(|e| *e != RUNS_FOREVER && *e > now)
            .min();
        let next_boot = slots
            .iter()
            .filter_map(|s| match s.state {
                SlotState::Booting(at) => Some(at + pool.boot),
                _ => None,
            })
            .min();
        let next_budget = (!pending.is_empty())
            .then(|| recent.front().map(|(t, _)| t + 60))
            .flatten();
        let next_sub = order.get(next_submit).map(|i| jobs[*i].submit);
        let next = [
            next_end,
            next_sub,
            next_boot,
            next_idle,
            due_at,
            next_budget,
        ]
        .into_iter()
        .flatten()
        .filter(|t| *t > now)
        .min();
        match next {
            Some(t) => now = t,
            None => break,
        }
    }
    // Nodes still paid at the end (jobs that never end keep theirs).
    for s in &slots {
        if s.state != SlotState::Down {
            report.pool_node_seconds += (now - s.launched_at) as f64;
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner::PlannerConfig;

    fn job(id: i64, submit: i64, nodes: u32, gpus: u32, duration: i64) -> SimJob {
        SimJob {
            id,
            submit,
            nodes,
            gpus_per_node: gpus,
            cpus: nodes,
            cpus_per_node: 1,
            duration,
            time_limit: Some(duration),
            user: "u".into(),
            account: "a".into(),
            ..Default::default()
        }
    }

    fn pool(max_nodes: u32) -> PoolConfig {
        PoolConfig {
            max_nodes,
            gpus_per_node: 8,
            boot: 60,
            idle_timeout: 300,
            price_per_node_hour: 10.0,
            ..Default::default()
        }
    }

    fn fixed(n: u32) -> Vec<SimNode> {
        crate::sim::uniform_cluster(n, 8)
    }

    fn both(fixed: &[SimNode], pool: &PoolConfig, jobs: &[SimJob]) -> (PoolReport, PoolReport) {
        let config = SimConfig {
            planner: PlannerConfig::default(),
            ..Default::default()
        };
        (
            simulate_pool(fixed, pool, jobs, &config, ScalePolicy::Berth),
            simulate_pool(fixed, pool, jobs, &config, ScalePolicy::Slurm),
        )
    }

    /// A job arrives while the one fixed node frees in 10 s and a boot takes 60 s: Berth
    /// waits for the node (no launch, 10 s wait); Slurm resumes a pool node for it at
    /// once, so the job waits the whole boot and the pool is paid for the boot and the
    /// idle timeout.
    #[test]
    fn berth_waits_for_a_node_that_frees_before_a_boot_would_end() {
        let jobs = [job(1, 0, 1, 8, 100), job(2, 90, 1, 8, 100)];
        let (berth, slurm) = both(&fixed(1), &pool(4), &jobs);
        let (b, s) = (berth.summary(), slurm.summary());
        assert_eq!((b.launches, b.launched_nodes), (0, 0), "{b:?}");
        assert_eq!(berth.jobs[&2].start, Some(100));
        assert_eq!(b.pool_gpu_hours_paid, 0.0);
        assert_eq!((s.launches, s.launched_nodes), (1, 1), "{s:?}");
        assert_eq!(slurm.jobs[&2].start, Some(150), "90 + the 60 s boot");
        // Slurm pays boot + run + idle timeout: (60 + 100 + 300) s × 8 GPUs.
        assert!(
            (s.pool_gpu_hours_paid - 460.0 * 8.0 / 3600.0).abs() < 1e-9,
            "{s:?}"
        );
        assert!((s.pool_cost - 460.0 / 3600.0 * 10.0).abs() < 1e-9);
        assert!(s.pool_idle_cost > b.pool_idle_cost);
        assert!(s.avg_wait > b.avg_wait);
        assert_eq!(b.gpu_hours_used, s.gpu_hours_used);
    }

    /// When the fixed node is busy for an hour, both launch a node for the job; it starts
    /// after the boot either way.
    #[test]
    fn both_launch_when_no_node_frees_soon() {
        let jobs = [job(1, 0, 1, 8, 3600), job(2, 10, 1, 8, 100)];
        let (berth, slurm) = both(&fixed(1), &pool(4), &jobs);
        for r in [&berth, &slurm] {
            let s = r.summary();
            assert_eq!(
                (s.launches, s.launched_nodes),
                (1, 1),
                "{:?} {s:?}",
                r.policy
            );
            assert_eq!(r.jobs[&2].start, Some(70), "{:?}", r.policy);
            assert_eq!(r.jobs[&2].end, Some(170));
            // Paid: the boot, the run and the idle timeout.
            assert!((s.pool_gpu_hours_paid - 460.0 * 8.0 / 3600.0).abs() < 1e-9);
            assert!((s.pool_gpu_hours_used - 100.0 * 8.0 / 3600.0).abs() < 1e-9);
        }
    }

    /// A 2-node gang on an empty pool: both nodes in one launch, the gang starts on both
    /// at once after the boot.
    #[test]
    fn a_gang_is_launched_whole() {
        let jobs = [job(1, 0, 2, 8, 600)];
        let (berth, slurm) = both(&[], &pool(4), &jobs);
        for r in [&berth, &slurm] {
            let s = r.summary();
            assert_eq!(
                (s.launches, s.launched_nodes),
                (1, 2),
                "{:?} {s:?}",
                r.policy
            );
            let out = &r.jobs[&1];
            assert_eq!(out.start, Some(60));
            assert_eq!(out.placements.len(), 2);
            assert_eq!(s.peak_pool_nodes, 2);
        }
    }

    /// Idle nodes are powered down `idle_timeout` seconds after their last job, so paid
    /// time stops there; a later job launches again.
    #[test]
    fn idle_nodes_are_powered_down_and_paid_time_stops() {
        let jobs = [job(1, 0, 1, 8, 100), job(2, 5000, 1, 8, 100)];
        let (berth, slurm) = both(&[], &pool(2), &jobs);
        for r in [&berth, &slurm] {
            let s = r.summary();
            assert_eq!(s.launches, 2, "{:?} {s:?}", r.policy);
            // Twice (60 s boot + 100 s run + 300 s idle), not the 5,000 s between.
            assert!((r.pool_node_seconds - 920.0).abs() < 1e-9, "{:?}", r.policy);
            assert_eq!(r.jobs[&2].start, Some(5060));
        }
    }

    /// On a mixed workload no job is lost and both policies run the same GPU-hours; the
    /// pool never exceeds its size.
    #[test]
    fn no_job_is_lost_and_used_hours_match() {
        let mut jobs = Vec::new();
        for i in 0..40 {
            let nodes = if i % 7 == 0 { 2 } else { 1 };
            let gpus = [1, 2, 4, 8][i as usize % 4];
            jobs.push(job(i, i * 37 % 900, nodes, gpus, 60 + (i * 53) % 700));
        }
        let (berth, slurm) = both(&fixed(1), &pool(3), &jobs);
        let (b, s) = (berth.summary(), slurm.summary());
        assert_eq!((b.jobs, b.never_started), (40, 0), "{b:?}");
        assert_eq!((s.jobs, s.never_started), (40, 0), "{s:?}");
        assert!((b.gpu_hours_used - s.gpu_hours_used).abs() < 1e-9);
        let expected: f64 = jobs
            .iter()
            .map(|j| f64::from(j.nodes * j.gpus_per_node) * j.duration as f64)
            .sum::<f64>()
            / 3600.0;
        assert!((b.gpu_hours_used - expected).abs() < 1e-9);
        assert!(b.peak_pool_nodes <= 3 && s.peak_pool_nodes <= 3);
        assert!(b.pool_gpu_hours_paid >= b.pool_gpu_hours_used);
        assert!(s.pool_gpu_hours_paid >= s.pool_gpu_hours_used);
    }

    /// Berth's launch budget: at most `launch_rate_per_minute` nodes in any 60 s.
    #[test]
    fn launches_keep_to_the_rate() {
        let jobs: Vec<SimJob> = (0..4).map(|i| job(i, 0, 1, 8, 600)).collect();
        let p = PoolConfig {
            launch_rate_per_minute: 2,
            ..pool(4)
        };
        let config = SimConfig::default();
        let r = simulate_pool(&[], &p, &jobs, &config, ScalePolicy::Berth);
        let s = r.summary();
        assert_eq!((s.jobs, s.launched_nodes), (4, 4), "{s:?}");
        let mut starts: Vec<i64> = r.jobs.values().filter_map(|j| j.start).collect();
        starts.sort();
        assert_eq!(starts, [60, 60, 120, 120]);
    }
}
