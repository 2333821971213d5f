//! Pool scaling benchmark (run on demand, never in tests): what the cloud module's
//! scaling decision adds to one planning pass of the scheduler leader
//! ([`berth_scheduler::cloud::Cloud::adjust_snapshot`] before the plan,
//! [`berth_scheduler::cloud::Cloud::launch_intents`] after it), with many pools of many
//! node slots, and the plan itself with those slots vs without them.
//!
//! ```sh
//! cargo run --release -p berth-scheduler --example pool_scale                # 10000 100000 20000 100 1000 3
//! cargo run --release -p berth-scheduler --example pool_scale -- 1000 10000 2000 100 1000 3
//! ```
//! Arguments: fixed nodes (8 GPUs each), pending jobs, running jobs (on the fixed nodes),
//! pools, slots per pool (8 GPUs each), repetitions. Of each pool's slots, 2% are in
//! service (UP, idle), 1% POWERING_UP (launched 30 s ago) and the rest POWERED_DOWN;
//! expected boot 120 s; launch budget 20 per pool. Jobs as in `scale_pass` (Tiresias mix
//! plus 2- and 4-node gangs, limits 10 min–24 h), GPUs only; deterministic. Each
//! repetition builds the snapshot afresh and times, in order: the plan over the nodes in
//! service (fixed and UP slots); the plan with every slot present but the powered-down
//! and booting ones not offered; `adjust_snapshot`; the
//! plan with the slots offered; `launch_intents`.

use berth_scheduler::cloud::{Cloud, CloudSettings, PoolPlanning, SlotView};
use berth_scheduler::planner::{plan, NodeView, PendingJob, PlannerConfig, RunningAlloc, Snapshot};
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

fn node(id: i64, name: String, available: bool) -> NodeView {
    NodeView {
        id,
        name,
        available,
        gpus: (0..8).map(|g| (g, "H100".to_string())).collect(),
        features: vec!["h100".into()],
        weight: 1,
        ..Default::default()
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let arg = |i: usize, d: usize| {
        std::env::args()
            .nth(i)
            .and_then(|a| a.parse().ok())
            .unwrap_or(d)
    };
    let (fixed, pending_count, running_count, pools, per_pool, reps) = (
        arg(1, 10_000),
        arg(2, 100_000),
        arg(3, 20_000),
        arg(4, 100),
        arg(5, 1_000),
        arg(6, 3).max(1),
    );
    let now = 1_800_000_000i64;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut nodes: Vec<NodeView> = (0..fixed)
        .map(|i| node(i as i64 + 1, format!("gpu{i:05}"), true))
        .collect();
    // Running jobs on the fixed nodes, first fit from a random node.
    let mut free = vec![8u32; fixed];
    let mut running = Vec::new();
    let mut id = 1i64;
    let (mut placed, mut misses) = (0usize, 0u32);
    while placed < running_count && fixed > 0 {
        let (n, g) = size(&mut rng);
        let start = rng.below(fixed as u64) as usize;
        let chosen: Vec<usize> = (0..fixed)
            .map(|k| (start + k) % fixed)
            .filter(|i| free[*i] >= g)
            .take(n as usize)
            .collect();
        if chosen.len() < n as usize {
            misses += 1;
            if misses > 1000 {
                break;
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
                end: Some(end),
                ..Default::default()
            });
            free[i] -= g;
        }
        placed += 1;
        id += 1;
    }
    // The pools' slots: POWERED_DOWN nodes (not available) the cloud module offers.
    let cloud = Cloud::new(CloudSettings::default());
    let mut slots = Vec::with_capacity(pools * per_pool);
    for p in 0..pools {
        let pool = format!("pool{p:03}");
        cloud.set_pool_planning(
            &pool,
            PoolPlanning {
                offerable: true,
                expected_boot: 120,
                instance_type: "p5.48xlarge".into(),
                market: None,
                launch_budget: 20,
                max_nodes: per_pool as u32,
            },
        );
        for s in 1..=per_pool {
            let nid = nodes.len() as i64 + 1;
            let (state, launched_at) = match s * 100 / per_pool.max(1) {
                0..=1 => ("UP", None),
                2 => ("POWERING_UP", Some(now - 30)),
                _ => ("POWERED_DOWN", None),
            };
            let name = format!("{pool}-{s}");
            nodes.push(node(nid, name.clone(), state == "UP"));
            slots.push(SlotView {
                id: nid,
                name,
                pool: pool.clone(),
                state: state.into(),
                launched_at,
            });
        }
    }
    let pending: Vec<PendingJob> = (0..pending_count)
        .map(|_| {
            let (n, g) = size(&mut rng);
            let user = rng.below(200);
            id += 1;
            PendingJob {
                id,
                submit_time: now - rng.below(7 * 86_400) as i64,
                partition_tier: 1,
                fairshare: (rng.below(1000) as f64) / 1000.0,
                nodes: n,
                gpus_per_node: g,
                time_limit: Some(600 + rng.below(86_400 - 600) as i64),
                user: format!("u{user}"),
                account: format!("a{}", user % 20),
                qos: "normal".into(),
                cpus: n * g * 8,
                cpus_per_node: 1,
                ..Default::default()
            }
        })
        .collect();
    println!(
        "fixed {fixed} nodes × 8 GPUs, {placed} running jobs; {pending_count} pending; {pools} pools × {per_pool} slots ({} in all)",
        slots.len()
    );
    let config = PlannerConfig::default();
    let (mut without, mut present, mut adjust, mut with, mut intents) =
        (vec![], vec![], vec![], vec![], vec![]);
    let ms = |t: Instant| t.elapsed().as_secs_f64() * 1e3;
    for rep in 0..reps {
        let base = Snapshot {
            now,
            // The nodes in service: the fixed ones and the pools' UP slots.
            nodes: nodes.iter().filter(|n| n.available).cloned().collect(),
            running: running.clone(),
            pending: pending.clone(),
            ..Default::default()
        };
        let t = Instant::now();
        let p0 = plan(&base, &config);
        without.push(ms(t));
        // Every slot present, the powered-down and booting ones not offered (as without
        // the cloud module: nodes the planner skips), to tell the nodes' cost from the
        // offer's.
        let idle = Snapshot {
            nodes: nodes.clone(),
            ..base.clone()
        };
        let t = Instant::now();
        let _ = plan(&idle, &config);
        present.push(ms(t));
        let mut snapshot = Snapshot {
            nodes: nodes.clone(),
            ..base
        };
        let t = Instant::now();
        cloud.adjust_snapshot(&mut snapshot, &slots);
        adjust.push(ms(t));
        let t = Instant::now();
        let mut p1 = plan(&snapshot, &config);
        with.push(ms(t));
        // The budgets are spent by each call; give them back for the next repetition.
        for p in 0..pools {
            cloud.set_pool_planning(
                &format!("pool{p:03}"),
                PoolPlanning {
                    offerable: true,
                    expected_boot: 120,
                    instance_type: "p5.48xlarge".into(),
                    market: None,
                    launch_budget: 20,
                    max_nodes: per_pool as u32,
                },
            );
        }
        let t = Instant::now();
        let launches = cloud.launch_intents(&mut p1, now, &slots);
        intents.push(ms(t));
        if rep == 0 {
            println!(
                "without slots: {} starts, {} reservations; with: {} starts, {} reservations, {} launches of {} nodes, {} boot holds",
                p0.starts.len(),
                p0.reservations.len(),
                p1.starts.len(),
                p1.reservations.len(),
                launches.len(),
                launches.iter().map(|l| l.nodes.len()).sum::<usize>(),
                snapshot.advance_reservations.len()
            );
        }
    }
    let (a, l) = (median(&mut adjust), median(&mut intents));
    let (w0, w1) = (median(&mut without), median(&mut with));
    println!("median of {reps}:");
    println!("  adjust_snapshot  {a:9.1} ms");
    println!("  launch_intents   {l:9.1} ms");
    println!("  cloud steps      {:9.1} ms (the scaling decision)", a + l);
    println!("  plan, nodes in service only {w0:9.1} ms");
    println!(
        "  plan, slots present but not offered {:9.1} ms",
        median(&mut present)
    );
    println!("  plan with slots  {w1:9.1} ms (+{:.1} ms)", w1 - w0);
    println!(
        "  pass added       {:9.1} ms (cloud steps + the plan's extra)",
        a + l + w1 - w0
    );
}
