//! Scale benchmark (run on demand, never in tests): one full planning pass of the
//! production planner (`berth_scheduler::planner::plan`, default policy: multifactor
//! priority + backfill) over a synthetic cluster, timed, with the process's peak resident
//! memory (`VmHWM` from /proc/self/status).
//!
//! ```sh
//! cargo run --release -p berth-scheduler --example scale_pass            # 10000 100000 20000
//! cargo run --release -p berth-scheduler --example scale_pass -- 1000 10000 2000
//! cargo run --release -p berth-scheduler --example scale_pass -- 10000 100000 20000 10
//! cargo run --release -p berth-scheduler --example scale_pass -- 10000 100000 20000 0 0
//! ```
//! Arguments: nodes (8 GPUs each), pending jobs, running jobs, the percentage of
//! pending jobs in QOS `high`, which may preempt the running jobs (QOS `normal`, exempt
//! for their first 10 minutes; default 0: no preemption), and whether CPUs and memory
//! are placed (default 1: nodes of 96 CPUs and 1 TiB; running jobs hold 12 CPUs and
//! 128 GiB per GPU; pending jobs ask 4–12 CPUs per GPU, and half of them 96 GiB per GPU,
//! the others memory in proportion to their CPUs; 0: GPUs only). Job sizes follow the
//! Tiresias 60-job mix (GPUs 1 × 50%, 2, 4, 8 × 1/6 each), plus gangs of whole nodes
//! (2 × 8 GPUs 3%, 4 × 8 GPUs 1%); time limits 10 min–24 h; 200 users in 20 accounts
//! with random fairshare; deterministic (a fixed-seed xorshift).

use berth_scheduler::planner::{
    plan, NodeView, PendingJob, PlannerConfig, QosPreemption, RunningAlloc, RunningJob, Snapshot,
};
use std::hash::{Hash, Hasher};
use std::time::Instant;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// (nodes, GPUs per node) of a job drawn from the mix.
fn size(rng: &mut Rng) -> (u32, u32) {
    match rng.below(100) {
        0..=2 => (2, 8),
        3 => (4, 8),
        4..=51 => (1, 1),
        52..=67 => (1, 2),
        68..=83 => (1, 4),
        _ => (1, 8),
    }
}

fn status(key: &str) -> String {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(key))
        .map(|l| l.split_whitespace().skip(1).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "?".into())
}

fn main() {
    let arg = |i: usize, d: usize| {
        std::env::args()
            .nth(i)
            .and_then(|a| a.parse().ok())
            .unwrap_or(d)
    };
    let (node_count, pending_count, running_count, high_percent) =
        (arg(1, 10_000), arg(2, 100_000), arg(3, 20_000), arg(4, 0));
    let placed_cpus = arg(5, 1) != 0;
    let (node_cpus, node_mem) = if placed_cpus { (96, 1 << 20) } else { (0, 0) };
    let now = 1_800_000_000i64;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let nodes: Vec<NodeView> = (0..node_count)
        .map(|i| NodeView {
            id: i as i64 + 1,
            name: format!("gpu{i:05}"),
            available: true,
            gpus: (0..8).map(|g| (g, "H100".to_string())).collect(),
            features: vec!["h100".into()],
            cpus: node_cpus,
            memory_mib: node_mem,
            threads_per_core: 1,
            weight: 1,
        })
        .collect();
    // Running jobs: first fit from a random node, so the busy GPUs are scattered.
    let mut free: Vec<u32> = vec![8; node_count];
    let mut running = Vec::new();
    let mut running_jobs = Vec::new();
    let mut placed = 0usize;
    let mut id = 1i64;
    let mut misses = 0u32;
    while placed < running_count {
        let (n, g) = size(&mut rng);
        let start = rng.below(node_count as u64) as usize;
        let mut chosen = Vec::new();
        for k in 0..node_count {
            let i = (start + k) % node_count;
            if free[i] >= g {
                chosen.push(i);
                if chosen.len() == n as usize {
                    break;
                }
            }
        }
        if chosen.len() < n as usize {
            misses += 1;
            if misses > 1000 {
                break; // the cluster is full
            }
            continue;
        }
        let end = now + 60 + rng.below(86_400) as i64;
        for &i in &chosen {
            let first = 8 - free[i];
            running.push(RunningAlloc {
                job_id: id,
                node_id: i as i64 + 1,
                gpus: (first..first + g).collect(),
                cpus: if placed_cpus { 12 * g } else { 0 },
                mem_mib: if placed_cpus {
                    131_072 * u64::from(g)
                } else {
                    0
                },
                exclusive: false,
                end: Some(end),
            });
            free[i] -= g;
        }
        running_jobs.push(RunningJob {
            job_id: id,
            user: format!("u{}", rng.below(200)),
            account: format!("a{}", rng.below(20)),
            qos: "normal".into(),
            cpus: n * g * 8,
            gpus: n * g,
            nodes: n,
            start: now - rng.below(3600) as i64,
        });
        placed += 1;
        id += 1;
    }
    let busy: u32 = free.iter().map(|f| 8 - f).sum();
    let pending: Vec<PendingJob> = (0..pending_count)
        .map(|_| {
            let (n, g) = size(&mut rng);
            let user = rng.below(200);
            // Drawn only when placed, so that GPUs only replays the earlier snapshot.
            let (cpus_per_gpu, mem_per_gpu) = if placed_cpus {
                (4 + rng.below(9) as u32, rng.below(2) == 0)
            } else {
                (1, false)
            };
            let job = PendingJob {
                cpus_per_node: if placed_cpus { g * cpus_per_gpu } else { 1 },
                mem_per_node_mib: (placed_cpus && mem_per_gpu).then_some(98_304 * u64::from(g)),
                id,
                submit_time: now - rng.below(7 * 86_400) as i64,
                partition_tier: 1,
                fairshare: (rng.below(1000) as f64) / 1000.0,
                nodes: n,
                gpus_per_node: g,
                time_limit: Some(600 + rng.below(86_400 - 600) as i64),
                user: format!("u{user}"),
                account: format!("a{}", user % 20),
                qos: if (id as usize) % 100 < high_percent {
                    "high"
                } else {
                    "normal"
                }
                .into(),
                qos_priority: if (id as usize) % 100 < high_percent {
                    100
                } else {
                    0
                },
                cpus: n * g * 8,
                ..Default::default()
            };
            id += 1;
            job
        })
        .collect();
    let mut snapshot = Snapshot {
        now,
        nodes,
        running,
        pending,
        running_jobs,
        ..Default::default()
    };
    if high_percent > 0 {
        snapshot.qos_priority_max = 100;
        snapshot.qos_preemption.insert(
            "high".into(),
            QosPreemption {
                priority: 100,
                preempt: vec!["normal".into()],
                ..Default::default()
            },
        );
        snapshot.qos_preemption.insert(
            "normal".into(),
            QosPreemption {
                exempt_time: 600,
                ..Default::default()
            },
        );
    }
    println!(
        "cluster {node_count} nodes × 8 GPUs{}; running {placed} jobs on {busy} GPUs ({:.0}%); pending {pending_count} ({high_percent}% may preempt)",
        if placed_cpus { ", 96 CPUs, 1 TiB" } else { "" },
        f64::from(busy) / (node_count as f64 * 8.0) * 100.0
    );
    println!(
        "before the pass: VmRSS {}, VmHWM {}",
        status("VmRSS:"),
        status("VmHWM:")
    );
    let config = PlannerConfig::default();
    let t = Instant::now();
    let out = plan(&snapshot, &config);
    let took = t.elapsed();
    println!(
        "pass: {:.1} ms; {} starts, {} reservations, {} preemptions, {} waiting",
        took.as_secs_f64() * 1e3,
        out.starts.len(),
        out.reservations.len(),
        out.preemptions.len(),
        out.pending.len()
    );
    println!(
        "after the pass: VmRSS {}, VmHWM {} (peak)",
        status("VmRSS:"),
        status("VmHWM:")
    );
    // A digest of the whole plan (starts, reservations, reasons), to check that a change
    // to the planner's speed left its decisions alone.
    let mut h = std::collections::hash_map::DefaultHasher::new();
    format!("{out:?}").hash(&mut h);
    println!("plan digest: {:016x}", h.finish());
}
