//! A discrete-event replay of a workload through the same planner that runs in
//! production: time jumps to the next event (a submission or an end), the planner runs at
//! each, and a started job runs for its trace duration (cut at its time limit). Used by
//! the scenario tests and by `berth sim`.
//!
//! Fairshare in the replay: when a run ends, its association is charged
//! `elapsed × billing × 1` (see [`berth_core::priority`]); usage decays with the
//! configured half-life between events.

use crate::planner::{
    self, NodeView, PendingJob, Placement, PlannerConfig, RunningAlloc, Snapshot,
};
use berth_core::priority::{self, BillingWeights, ShareAccount};
use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

/// A node of the simulated cluster.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SimNode {
    /// Name.
    pub name: String,
    /// GPUs.
    pub gpus: u32,
    /// The GPUs' model; also the node's one feature, so a job's `constraint` can name
    /// models (`V100M16|V100M32`). Empty: `GPU`.
    pub model: String,
    /// CPUs (0: not placed).
    pub cpus: u32,
    /// Memory, MiB (0: not placed).
    pub memory_mib: u64,
}

/// `count` nodes `n1..` of `gpus` GPUs each (`15x4`).
pub fn uniform_cluster(count: u32, gpus: u32) -> Vec<SimNode> {
    (1..=count)
        .map(|i| SimNode {
            name: format!("n{i}"),
            gpus,
            model: "GPU".into(),
            ..SimNode::default()
        })
        .collect()
}

/// A [`SimJob::duration`] for a job that never ends once started (a trace that only
/// records arrivals, such as Alibaba's `multigpu50`).
pub const RUNS_FOREVER: i64 = i64::MAX;

/// A job of the workload.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SimJob {
    /// Id (unique).
    pub id: i64,
    /// Submitted, seconds.
    pub submit: i64,
    /// Nodes.
    pub nodes: u32,
    /// GPUs per node.
    pub gpus_per_node: u32,
    /// CPUs in total (for billing).
    pub cpus: u32,
    /// CPUs on each of its nodes (placed where nodes count CPUs; 0 counts as 1).
    pub cpus_per_node: u32,
    /// Memory on each of its nodes, MiB (`None`: in proportion to its CPUs).
    pub mem_per_node_mib: Option<u64>,
    /// How long it really runs, seconds ([`RUNS_FOREVER`]: it never ends).
    pub duration: i64,
    /// Time limit, seconds (`None`: unlimited).
    pub time_limit: Option<i64>,
    /// User.
    pub user: String,
    /// Account.
    pub account: String,
    /// QOS priority.
    pub qos_priority: u32,
    /// `--nice`.
    pub nice: i32,
    /// `--exclusive`.
    pub exclusive: bool,
    /// `--constraint` over node features (each node's one feature is its GPU model).
    pub constraint: Option<String>,
}

impl SimJob {
    /// The planner's view of this job while it waits, with its association's fairshare
    /// factor.
    pub(crate) fn pending_view(&self, fairshare: f64) -> PendingJob {
        PendingJob {
            id: self.id,
            submit_time: self.submit,
            partition_tier: 1,
            qos_priority: self.qos_priority,
            fairshare,
            nice: self.nice,
            nodes: self.nodes,
            gpus_per_node: self.gpus_per_node,
            exclusive: self.exclusive,
            time_limit: self.time_limit,
            constraint: self.constraint.clone(),
            cpus: self.cpus,
            cpus_per_node: self.cpus_per_node.max(1),
            mem_per_node_mib: self.mem_per_node_mib,
            ..Default::default()
        }
    }
}

/// The replay's knobs.
#[derive(Debug, Clone, PartialEq)]
pub struct SimConfig {
    /// The planner's.
    pub planner: PlannerConfig,
    /// Billing weights for fairshare usage.
    pub billing: BillingWeights,
    /// Usage half-life, seconds.
    pub half_life: i64,
    /// The account tree (empty: every account under `root` with one share).
    pub accounts: Vec<ShareAccount>,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            planner: PlannerConfig::default(),
            billing: BillingWeights::default(),
            half_life: priority::DEFAULT_HALF_LIFE,
            accounts: Vec::new(),
        }
    }
}

/// What happened to one job.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SimOutcome {
    /// The job.
    pub id: i64,
    /// Submitted.
    pub submit: i64,
    /// Started, if it did.
    pub start: Option<i64>,
    /// Ended, if it did.
    pub end: Option<i64>,
    /// Where it ran.
    pub placements: Vec<Placement>,
    /// The last pending reason it had.
    pub last_reason: Option<String>,
    /// The first expected start the planner gave it, if any.
    pub first_expected_start: Option<i64>,
}

/// A usage charge: (time, account, user, amount).
pub type Charge = (i64, String, String, f64);

/// The result of a replay.
#[derive(Debug, Clone, Default)]
pub struct SimReport {
    /// Every job, by id.
    pub jobs: BTreeMap<i64, SimOutcome>,
    /// Usage charged, in time order.
    pub charges: Vec<Charge>,
    /// Planner time of each pass, microseconds.
    pub pass_micros: Vec<f64>,
    /// GPU-seconds used.
    pub gpu_seconds: f64,
    /// GPUs in the cluster.
    pub cluster_gpus: u32,
    /// The first pass in which a job had to wait for resources (reason `Resources`):
    /// (time, GPUs allocated once that pass's starts, backfilled ones included, ran).
    pub first_blocked: Option<(i64, u32)>,
}

/// Summary statistics, as `berth sim` prints them.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct SimSummary {
    /// Jobs that ran to their end.
    pub jobs: usize,
    /// Jobs that started (ended or not).
    pub started: usize,
    /// Jobs that never started.
    pub never_started: usize,
    /// Average job completion time (end − submit), seconds.
    pub avg_jct: f64,
    /// 95th percentile JCT, seconds.
    pub p95_jct: f64,
    /// Average wait (start − submit), seconds.
    pub avg_wait: f64,
    /// 95th percentile wait, seconds.
    pub p95_wait: f64,
    /// Last end − first submit, seconds.
    pub makespan: f64,
    /// GPU-seconds used / (GPUs × makespan).
    pub gpu_utilization: f64,
    /// Planner passes.
    pub passes: usize,
    /// Mean planner pass, microseconds.
    pub pass_mean_us: f64,
    /// 99th percentile planner pass, microseconds.
    pub pass_p99_us: f64,
    /// Longest planner pass, microseconds.
    pub pass_max_us: f64,
    /// When a job first had to wait for resources, seconds (`None`: none ever did).
    pub first_blocked_at: Option<f64>,
    /// The share of the cluster's GPUs allocated at that point, 0–1 (Alibaba's
    /// fragmentation metric: GPUs allocated when the first task fails to fit).
    pub alloc_share_at_first_block: Option<f64>,
}

pub(crate) fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

impl SimReport {
    /// The summary statistics.
    pub fn summary(&self) -> SimSummary {
        let done: Vec<&SimOutcome> = self.jobs.values().filter(|j| j.end.is_some()).collect();
        let mut jct: Vec<f64> = done
            .iter()
            .map(|j| (j.end.unwrap_or(0) - j.submit) as f64)
            .collect();
        let mut wait: Vec<f64> = done
            .iter()
            .map(|j| (j.start.unwrap_or(0) - j.submit) as f64)
            .collect();
        jct.sort_by(f64::total_cmp);
        wait.sort_by(f64::total_cmp);
        let first = self.jobs.values().map(|j| j.submit).min().unwrap_or(0);
        let last = done.iter().filter_map(|j| j.end).max().unwrap_or(first);
        let makespan = (last - first) as f64;
        let mut passes = self.pass_micros.clone();
        passes.sort_by(f64::total_cmp);
        let mean = |v: &[f64]| {
            if v.is_empty() {
                0.0
            } else {
                v.iter().sum::<f64>() / v.len() as f64
            }
        };
        SimSummary {
            jobs: done.len(),
            started: self.jobs.values().filter(|j| j.start.is_some()).count(),
            never_started: self.jobs.values().filter(|j| j.start.is_none()).count(),
            avg_jct: mean(&jct),
            p95_jct: percentile(&jct, 0.95),
            avg_wait: mean(&wait),
            p95_wait: percentile(&wait, 0.95),
            makespan,
            gpu_utilization: if makespan > 0.0 {
                self.gpu_seconds / (f64::from(self.cluster_gpus) * makespan)
            } else {
                0.0
            },
            passes: passes.len(),
            pass_mean_us: mean(&passes),
            pass_p99_us: percentile(&passes, 0.99),
            pass_max_us: passes.last().copied().unwrap_or(0.0),
            first_blocked_at: self.first_blocked.map(|(t, _)| t as f64),
            alloc_share_at_first_block: self.first_blocked.map(|(_, g)| {
                if self.cluster_gpus == 0 {
                    0.0
                } else {
                    f64::from(g) / f64::from(self.cluster_gpus)
                }
            }),
        }
    }
}

fn model_of(node: &SimNode) -> String {
    if node.model.is_empty() {
        "GPU".to_string()
    } else {
        node.model.clone()
    }
}

struct Run {
    job: usize,
    end: i64,
    placements: Vec<Placement>,
    exclusive: bool,
}

/// Replays `jobs` on `nodes`. Jobs that can never start are reported with no start.
pub fn simulate(nodes: &[SimNode], jobs: &[SimJob], config: &SimConfig) -> SimReport {
    let views: Vec<NodeView> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| NodeView {
            id: i as i64 + 1,
            name: n.name.clone(),
            available: true,
            gpus: (0..n.gpus).map(|g| (g, model_of(n))).collect(),
            features: vec![model_of(n)],
            cpus: n.cpus,
            memory_mib: n.memory_mib,
            threads_per_core: 1,
            weight: 1,
        })
        .collect();
    let mut report = SimReport {
        cluster_gpus: nodes.iter().map(|n| n.gpus).sum(),
        ..Default::default()
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
    let mut next_submit = 0usize;
    let mut pending: Vec<usize> = Vec::new();
    let mut running: Vec<Run> = Vec::new();
    let mut usage: HashMap<(String, String), f64> = HashMap::new();
    let mut usage_at = i64::MIN;
    let Some(&first) = order.first() else {
        return report;
    };
    let mut now = jobs[first].submit;
    loop {
        // Usage decays to now; runs that ended by now are charged.
        if usage_at != i64::MIN {
            for v in usage.values_mut() {
                *v = priority::decay(*v, now - usage_at, config.half_life);
            }
        }
        usage_at = now;
        running.retain(|r| {
            if r.end > now {
                return true;
            }
            let j = &jobs[r.job];
            let out = report.jobs.get_mut(&j.id).expect("job");
            out.end = Some(r.end);
            let elapsed = r.end - out.start.unwrap_or(r.end);
            let gpus = u64::from(j.nodes) * u64::from(j.gpus_per_node);
            let amount = priority::charge(
                elapsed,
                priority::billing(&config.billing, u64::from(j.cpus), gpus),
                1.0,
            );
            *usage
                .entry((j.account.clone(), j.user.clone()))
                .or_default() += amount;
            report
                .charges
                .push((r.end, j.account.clone(), j.user.clone(), amount));
            report.gpu_seconds += gpus as f64 * elapsed as f64;
            false
        });
        while next_submit < order.len() && jobs[order[next_submit]].submit <= now {
            pending.push(order[next_submit]);
            next_submit += 1;
        }
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
            let snapshot = Snapshot {
                now,
                nodes: views.clone(),
                running: running
                    .iter()
                    .flat_map(|r| {
                        let limit_end = jobs[r.job]
                            .time_limit
                            .map(|l| report.jobs[&jobs[r.job].id].start.unwrap_or(now) + l);
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
            let started_at = Instant::now();
            let plan = planner::plan(&snapshot, &config.planner);
            report
                .pass_micros
                .push(started_at.elapsed().as_secs_f64() * 1e6);
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
                let run_for = j.time_limit.map_or(j.duration, |l| j.duration.min(l));
                let out = report.jobs.get_mut(&j.id).expect("job");
                out.start = Some(now);
                out.placements = s.placements.clone();
                running.push(Run {
                    job: i,
                    end: now.saturating_add(run_for.max(0)),
                    placements: s.placements,
                    exclusive: s.exclusive,
                });
                pending.retain(|p| *p != i);
            }
            if report.first_blocked.is_none()
                && plan.pending.iter().any(|w| w.reason == "Resources")
            {
                let allocated: usize = running
                    .iter()
                    .flat_map(|r| r.placements.iter())
                    .map(|p| p.gpus.len())
                    .sum();
                report.first_blocked = Some((now, allocated as u32));
            }
        }
        let next_end = running
            .iter()
            .map(|r| r.end)
            .filter(|e| *e != RUNS_FOREVER)
            .min();
        let next_sub = order.get(next_submit).map(|i| jobs[*i].submit);
        now = match (next_end, next_sub) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (None, None) => break,
        };
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner::QueueOrder;

    /// The Tiresias 60-job regression input replays completely and deterministically;
    /// backfill never makes the contended 3×4 cluster finish later than strict FIFO.
    #[test]
    fn tiresias_trace_replays_deterministically() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/traces/tiresias/60_job.csv"
        );
        let Ok(text) = std::fs::read_to_string(path) else {
            return; // the shared traces are not part of the repository
        };
        let jobs = crate::trace::parse_tiresias(&text, 4).unwrap();
        assert_eq!(jobs.len(), 60);
        let run = |order, backfill| {
            let config = SimConfig {
                planner: PlannerConfig {
                    order,
                    backfill,
                    ..Default::default()
                },
                ..Default::default()
            };
            simulate(&uniform_cluster(3, 4), &jobs, &config).summary()
        };
        let fifo = run(QueueOrder::Submit, false);
        let backfill = run(QueueOrder::Submit, true);
        assert_eq!(fifo.jobs, 60);
        assert_eq!(backfill.jobs, 60);
        assert!(
            backfill.avg_wait <= fifo.avg_wait,
            "{backfill:?} vs {fifo:?}"
        );
        let again = run(QueueOrder::Submit, true);
        assert_eq!(
            (again.avg_jct, again.makespan),
            (backfill.avg_jct, backfill.makespan)
        );
    }
}
