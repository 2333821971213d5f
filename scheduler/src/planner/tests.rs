//! The planner's tests: every scenario of SCENARIOS.md that concerns it (simulated time,
//! no sleeps) and proptest invariants.

use super::*;
use crate::sim::{simulate, uniform_cluster, SimConfig, SimJob};
use proptest::prelude::*;

mod threads;

fn node(id: i64, gpus: u32) -> NodeView {
    NodeView {
        id,
        name: format!("n{id}"),
        available: true,
        gpus: (0..gpus)
            .map(|i| (i, "NVIDIA H100 80GB HBM3".to_string()))
            .collect(),
        features: vec![],
        ..NodeView::default()
    }
}

fn job(id: i64, nodes: u32, gpus: u32) -> PendingJob {
    PendingJob {
        id,
        nodes,
        gpus_per_node: gpus,
        partition_tier: 1,
        fairshare: 1.0,
        time_limit: Some(3600),
        ..Default::default()
    }
}

fn busy(job_id: i64, node_id: i64, gpus: std::ops::Range<u32>, end: i64) -> RunningAlloc {
    RunningAlloc {
        job_id,
        node_id,
        gpus: gpus.collect(),
        exclusive: false,
        end: Some(end),
        ..RunningAlloc::default()
    }
}

fn sim_job(id: i64, submit: i64, nodes: u32, gpus: u32, dur: i64, limit: i64) -> SimJob {
    SimJob {
        id,
        submit,
        nodes,
        gpus_per_node: gpus,
        cpus: 1,
        duration: dur,
        time_limit: Some(limit),
        user: "u".into(),
        account: "root".into(),
        ..Default::default()
    }
}

/// S1: small jobs pack best-fit onto one node, so a whole-node job starts at once.
#[test]
fn s1_small_jobs_do_not_fragment_the_cluster() {
    let mut jobs: Vec<SimJob> = (1..=4)
        .map(|i| sim_job(i, i - 1, 1, 1, 3600, 3600))
        .collect();
    jobs.push(sim_job(5, 10, 1, 4, 600, 600));
    let r = simulate(&uniform_cluster(4, 4), &jobs, &SimConfig::default());
    assert_eq!(r.jobs[&5].start, Some(10));
    let a_nodes: BTreeSet<i64> = (1..=4).map(|i| r.jobs[&i].placements[0].node_id).collect();
    assert_eq!(a_nodes.len(), 1, "a1..a4 share one node");
    let a_gpus: BTreeSet<u32> = (1..=4).map(|i| r.jobs[&i].placements[0].gpus[0]).collect();
    assert_eq!(a_gpus, (0..4).collect());
    assert!(!a_nodes.contains(&r.jobs[&5].placements[0].node_id));
}

/// S2: the big gang gets a reservation at t=1000 (the r-jobs' start + limit) and no
/// s-job takes its nodes before it starts.
#[test]
fn s2_a_large_job_is_not_starved_by_small_ones() {
    let mut jobs: Vec<SimJob> = (1..=4).map(|i| sim_job(i, 0, 1, 8, 1000, 1000)).collect();
    let mut big = sim_job(100, 10, 4, 8, 500, 600);
    big.qos_priority = 10;
    jobs.push(big);
    for k in 0..=40 {
        jobs.push(sim_job(200 + k, 900 + 50 * k, 1, 8, 2000, 2000));
    }
    let r = simulate(&uniform_cluster(4, 8), &jobs, &SimConfig::default());
    let big = &r.jobs[&100];
    assert_eq!(big.start, Some(1000));
    assert_eq!(
        big.first_expected_start,
        Some(1000),
        "expected start shown from t=10"
    );
    assert_eq!(big.placements.len(), 4);
    for k in 0..=40 {
        let s = &r.jobs[&(200 + k)];
        assert!(s.start.unwrap() >= 1500, "s{k} started at {:?}", s.start);
    }
    // Under strict FIFO without backfill the result is the same here; the reason differs.
    let fifo = SimConfig {
        planner: PlannerConfig {
            backfill: false,
            order: QueueOrder::Submit,
            ..Default::default()
        },
        ..Default::default()
    };
    assert_eq!(
        simulate(&uniform_cluster(4, 8), &jobs, &fifo).jobs[&100].start,
        Some(1000)
    );
}

/// Backfill: a lower job starts now only where it ends before the reservation.
#[test]
fn backfill_starts_only_jobs_that_end_before_the_reservation() {
    let snap = Snapshot {
        now: 0,
        nodes: vec![node(1, 8), node(2, 8)],
        running: vec![busy(90, 1, 0..8, 1000), busy(91, 2, 0..4, 2000)],
        pending: vec![
            PendingJob {
                qos_priority: 10,
                ..job(1, 2, 8)
            },
            PendingJob {
                time_limit: Some(500),
                ..job(2, 1, 2)
            },
            PendingJob {
                time_limit: Some(5000),
                ..job(3, 1, 2)
            },
        ],
        ..Default::default()
    };
    let p = plan(&snap, &PlannerConfig::default());
    assert_eq!(p.starts.len(), 1);
    assert_eq!(p.starts[0].job_id, 2);
    assert_eq!(p.starts[0].placements[0].node_id, 2);
    assert_eq!(p.starts[0].placements[0].gpus, vec![4, 5]);
    let big = p.waiting(1).unwrap();
    assert_eq!(
        (big.reason.as_str(), big.expected_start),
        ("Resources", Some(2000))
    );
    let long = p.waiting(3).unwrap();
    assert_eq!(
        long.reason, "Priority",
        "it would fit but for the reservation"
    );
    assert_eq!(p.reservations[0].placements.len(), 2);
    // Strict FIFO starts nothing below the blocked job.
    let fifo = PlannerConfig {
        backfill: false,
        ..Default::default()
    };
    let p = plan(&snap, &fifo);
    assert!(p.starts.is_empty());
    assert_eq!(p.waiting(2).unwrap().reason, "Priority");
}

/// Reservations are per GPU: a job needing part of a node leaves the rest to backfill.
#[test]
fn reservations_hold_only_the_gpus_they_need() {
    let snap = Snapshot {
        now: 0,
        nodes: vec![node(1, 8)],
        running: vec![busy(90, 1, 0..6, 1000)],
        pending: vec![
            PendingJob {
                qos_priority: 10,
                ..job(1, 1, 4)
            },
            PendingJob {
                time_limit: Some(100_000),
                ..job(2, 1, 2)
            },
        ],
        ..Default::default()
    };
    let p = plan(&snap, &PlannerConfig::default());
    let r = &p.reservations[0];
    assert_eq!((r.job_id, r.start), (1, 1000));
    assert_eq!(r.placements[0].gpus, vec![0, 1, 2, 3]);
    // GPUs 6 and 7 are not in the reservation: the long job may take them.
    assert_eq!(p.starts.len(), 1);
    assert_eq!(p.starts[0].placements[0].gpus, vec![6, 7]);
}

/// S3: two 4-node gangs: one runs whole from t=0, the other whole from t=100.
#[test]
fn s3_two_gangs_never_deadlock() {
    let jobs = vec![sim_job(1, 0, 4, 8, 100, 100), sim_job(2, 0, 4, 8, 100, 100)];
    let r = simulate(&uniform_cluster(4, 8), &jobs, &SimConfig::default());
    assert_eq!(r.jobs[&1].start, Some(0));
    assert_eq!(r.jobs[&2].start, Some(100));
    assert_eq!(r.jobs[&1].placements.len(), 4);
    assert_eq!(r.jobs[&2].placements.len(), 4);
    // At t=0 the second gang holds nothing and waits on Resources.
    let snap = Snapshot {
        now: 0,
        nodes: (1..=4).map(|i| node(i, 8)).collect(),
        running: vec![],
        pending: vec![job(1, 4, 8), job(2, 4, 8)],
        ..Default::default()
    };
    let p = plan(&snap, &PlannerConfig::default());
    assert_eq!(p.starts.len(), 1);
    assert_eq!(p.waiting(2).unwrap().reason, "Resources");
}

/// S4 (planner side): dependencies block with Slurm's reasons; array tasks start within
/// their throttle.
#[test]
fn s4_dependencies_and_array_throttle() {
    let snap = Snapshot {
        now: 0,
        nodes: vec![node(1, 8)],
        running: vec![],
        pending: vec![
            PendingJob {
                dependency: DependencyState::Waiting,
                ..job(1, 1, 1)
            },
            PendingJob {
                dependency: DependencyState::Never,
                ..job(2, 1, 1)
            },
            PendingJob {
                array: Some(ArrayTasks {
                    ready: vec![0, 4, 8, 12],
                    remaining: 4,
                    running: 0,
                    max_running: Some(2),
                }),
                ..job(3, 1, 1)
            },
        ],
        ..Default::default()
    };
    let p = plan(&snap, &PlannerConfig::default());
    assert_eq!(p.waiting(1).unwrap().reason, "Dependency");
    assert_eq!(p.waiting(2).unwrap().reason, "DependencyNeverSatisfied");
    let tasks: Vec<Option<u32>> = p.starts.iter().map(|s| s.array_task_id).collect();
    assert_eq!(tasks, vec![Some(0), Some(4)]);
    assert_eq!(p.waiting(3).unwrap().reason, "JobArrayTaskLimit");
    // The last tasks of an array leave no pending entry once all started.
    let snap = Snapshot {
        pending: vec![PendingJob {
            array: Some(ArrayTasks {
                ready: vec![7],
                remaining: 1,
                running: 3,
                max_running: None,
            }),
            ..job(3, 1, 1)
        }],
        ..snap
    };
    let p = plan(&snap, &PlannerConfig::default());
    assert_eq!(p.starts[0].array_task_id, Some(7));
    assert!(p.pending.is_empty());
}

/// S5: GPU-heavy billing makes alice's fairshare drop, so bob's jobs go next.
#[test]
fn s5_fairshare_charges_gpus() {
    let mut jobs = Vec::new();
    for i in 1..=50 {
        jobs.push(SimJob {
            user: "alice".into(),
            cpus: 8,
            ..sim_job(i, 0, 1, 8, 3600, 3600)
        });
    }
    for i in 1..=5 {
        jobs.push(SimJob {
            user: "bob".into(),
            cpus: 8,
            ..sim_job(100 + i, 600, 1, 8, 3600, 3600)
        });
    }
    let config = SimConfig {
        billing: berth_core::priority::BillingWeights {
            cpu: 1.0,
            gpu: 32.0,
        },
        half_life: 86400,
        ..Default::default()
    };
    let r = simulate(&uniform_cluster(2, 8), &jobs, &config);
    let at_3600: BTreeSet<i64> = r
        .jobs
        .values()
        .filter(|j| j.start == Some(3600))
        .map(|j| j.id)
        .collect();
    assert_eq!(at_3600, BTreeSet::from([101, 102]));
    let alice: f64 = r
        .charges
        .iter()
        .filter(|c| c.0 <= 3600 && c.2 == "alice")
        .map(|c| c.3)
        .sum();
    assert_eq!(alice, 2.0 * 3600.0 * (8.0 * 32.0 + 8.0));
}

/// S6 (planner side): a job past its limit (being killed) still holds its GPUs; nothing
/// is placed on them before its node releases them.
#[test]
fn s6_a_job_past_its_limit_still_holds_its_gpus() {
    let snap = Snapshot {
        now: 100,
        nodes: vec![node(1, 1)],
        running: vec![busy(9, 1, 0..1, 20)],
        pending: vec![job(1, 1, 1)],
        ..Default::default()
    };
    let p = plan(&snap, &PlannerConfig::default());
    assert!(p.starts.is_empty());
    let w = p.waiting(1).unwrap();
    assert_eq!(
        (w.reason.as_str(), w.expected_start),
        ("Resources", Some(101))
    );
}

/// S7 (planner side): a requeued gang avoids a DOWN node, or waits when it needs it.
#[test]
fn s7_a_requeued_gang_avoids_the_down_node() {
    let mut nodes: Vec<NodeView> = (1..=5).map(|i| node(i, 8)).collect();
    nodes[2].available = false;
    let snap = Snapshot {
        now: 0,
        nodes: nodes.clone(),
        running: vec![],
        pending: vec![job(1, 4, 8)],
        ..Default::default()
    };
    let p = plan(&snap, &PlannerConfig::default());
    let used: BTreeSet<i64> = p.starts[0].placements.iter().map(|p| p.node_id).collect();
    assert_eq!(used, BTreeSet::from([1, 2, 4, 5]));
    nodes.pop();
    let p = plan(&Snapshot { nodes, ..snap }, &PlannerConfig::default());
    assert_eq!(p.waiting(1).unwrap().reason, "ReqNodeNotAvail");
}

/// S8: a gang that cannot be placed holds nothing; the idle node serves short jobs; the
/// gang starts when the busy node frees.
#[test]
fn s8_an_unplaceable_gang_holds_nothing() {
    let snap = Snapshot {
        now: 0,
        nodes: vec![node(1, 4), node(2, 4)],
        running: vec![busy(9, 1, 0..4, 10_000)],
        pending: vec![
            job(1, 2, 4),
            PendingJob {
                time_limit: Some(20_000),
                ..job(2, 1, 4)
            },
            PendingJob {
                time_limit: Some(5000),
                ..job(3, 1, 4)
            },
            job(4, 3, 4),
        ],
        ..Default::default()
    };
    let p = plan(&snap, &PlannerConfig::default());
    let r = p.waiting(1).unwrap();
    assert_eq!(
        (r.reason.as_str(), r.expected_start),
        ("Resources", Some(10_000))
    );
    assert_eq!(p.starts.len(), 1);
    assert_eq!(
        (p.starts[0].job_id, p.starts[0].placements[0].node_id),
        (3, 2)
    );
    assert_eq!(p.waiting(2).unwrap().reason, "Priority", "it would delay R");
    assert_eq!(p.waiting(4).unwrap().reason, "PartitionNodeLimit");
    // In time: R starts at 10000 on both nodes.
    let jobs = vec![
        sim_job(9, 0, 1, 4, 10_000, 10_000),
        sim_job(1, 1, 2, 4, 100, 100),
    ];
    let cluster = uniform_cluster(2, 4);
    let r = simulate(&cluster, &jobs, &SimConfig::default());
    assert_eq!(r.jobs[&1].start, Some(10_000));
    assert_eq!(r.jobs[&1].placements.len(), 2);
}

#[test]
fn a_whole_node_job_is_sized_by_its_nodes_gpus() {
    let snap = Snapshot {
        now: 100,
        nodes: vec![node(1, 8), node(2, 4)],
        pending: vec![
            PendingJob {
                exclusive: true,
                whole_node: true,
                ..job(1, 1, 0)
            },
            job(2, 1, 4),
            job(3, 1, 1),
        ],
        ..Default::default()
    };
    let f = priorities(&snap, &PlannerConfig::default());
    assert!((f[&1].job_size - 8.0 / 12.0).abs() < 1e-9, "{:?}", f[&1]);
    assert!(f[&1].job_size > f[&2].job_size && f[&2].job_size > f[&3].job_size);
}

#[test]
fn priority_orders_by_qos_nice_age_and_fairshare() {
    let snap = Snapshot {
        now: 10_000,
        nodes: vec![node(1, 1)],
        running: vec![],
        pending: vec![
            PendingJob {
                submit_time: 0,
                ..job(1, 1, 1)
            },
            PendingJob {
                submit_time: 9000,
                qos_priority: 5,
                ..job(2, 1, 1)
            },
            PendingJob {
                submit_time: 5000,
                nice: 10_000,
                ..job(3, 1, 1)
            },
            PendingJob {
                submit_time: 0,
                fairshare: 0.5,
                ..job(4, 1, 1)
            },
        ],
        ..Default::default()
    };
    let p = plan(&snap, &PlannerConfig::default());
    assert_eq!(p.starts[0].job_id, 2, "QOS first");
    let order: Vec<i64> = p.pending.iter().map(|w| w.job_id).collect();
    assert_eq!(
        order,
        vec![1, 4, 3],
        "older, then lower fairshare, then niced"
    );
    assert!(p.pending[0].priority > p.pending[1].priority);
    let fifo = PlannerConfig {
        order: QueueOrder::Submit,
        ..Default::default()
    };
    assert_eq!(plan(&snap, &fifo).starts[0].job_id, 1);
}

#[test]
fn held_and_begin_time_jobs_wait_with_their_reasons() {
    let snap = Snapshot {
        now: 100,
        nodes: vec![node(1, 8)],
        running: vec![],
        pending: vec![
            PendingJob {
                held: Some("JobHeldUser".into()),
                ..job(1, 1, 1)
            },
            PendingJob {
                held: Some("JobHeldAdmin".into()),
                ..job(2, 1, 1)
            },
            PendingJob {
                begin: Some(200),
                ..job(3, 1, 1)
            },
            PendingJob {
                begin: Some(50),
                ..job(4, 1, 1)
            },
        ],
        ..Default::default()
    };
    let p = plan(&snap, &PlannerConfig::default());
    assert_eq!(p.waiting(1).unwrap().reason, "JobHeldUser");
    assert_eq!(p.waiting(2).unwrap().reason, "JobHeldAdmin");
    let b = p.waiting(3).unwrap();
    assert_eq!(
        (b.reason.as_str(), b.expected_start),
        ("BeginTime", Some(200))
    );
    assert_eq!(p.starts.len(), 1);
    assert_eq!(p.starts[0].job_id, 4);
}

#[test]
fn gpu_type_constraint_and_exclusive() {
    let mut a100 = node(2, 4);
    a100.gpus = (0..4)
        .map(|i| (i, "NVIDIA A100-SXM4-80GB".to_string()))
        .collect();
    a100.features = vec!["a100".into(), "nvlink".into()];
    let snap = Snapshot {
        now: 0,
        nodes: vec![node(1, 4), a100, node(3, 8)],
        running: vec![],
        pending: vec![
            PendingJob {
                gpu_type: Some("a100".into()),
                ..job(1, 1, 2)
            },
            PendingJob {
                constraint: Some("a100&nvlink".into()),
                ..job(2, 1, 1)
            },
            PendingJob {
                constraint: Some("h200|b200".into()),
                ..job(3, 1, 1)
            },
            PendingJob {
                exclusive: true,
                whole_node: true,
                ..job(4, 1, 0)
            },
            job(5, 1, 16),
        ],
        ..Default::default()
    };
    let p = plan(&snap, &PlannerConfig::default());
    let on = |id| {
        p.starts
            .iter()
            .find(|s| s.job_id == id)
            .map(|s| s.placements[0].clone())
    };
    assert_eq!(on(1).unwrap().node_id, 2);
    assert_eq!(on(2).unwrap().node_id, 2);
    assert_eq!(p.waiting(3).unwrap().reason, "ReqNodeNotAvail");
    let whole = on(4).unwrap();
    assert_eq!(
        whole.gpus.len(),
        4,
        "best fit: the smaller idle node, whole"
    );
    assert_eq!(whole.node_id, 1);
    assert_eq!(p.waiting(5).unwrap().reason, "ReqNodeNotAvail");
}

/// Random cluster: GPUs per node; running (node, GPUs, end); pending (nodes, GPUs per
/// node, exclusive, limit, QOS priority).
type Case = (
    Vec<u32>,
    Vec<(usize, u32, i64)>,
    Vec<(u32, u32, bool, i64, u32)>,
);

fn arb_case() -> impl Strategy<Value = Case> {
    (
        proptest::collection::vec(1u32..9, 1..6),
        proptest::collection::vec((0usize..6, 0u32..9, 1i64..5000), 0..6),
        proptest::collection::vec(
            (1u32..4, 0u32..9, any::<bool>(), 1i64..5000, 0u32..3),
            0..16,
        ),
    )
}

fn build(
    nodes: &[u32],
    running: &[(usize, u32, i64)],
    jobs: &[(u32, u32, bool, i64, u32)],
) -> Snapshot {
    let nodes: Vec<NodeView> = nodes
        .iter()
        .enumerate()
        .map(|(i, g)| node(i as i64 + 1, *g))
        .collect();
    let mut allocs = Vec::new();
    let mut used: Vec<u32> = vec![0; nodes.len()];
    for (k, (n, g, end)) in running.iter().enumerate() {
        let n = n % nodes.len();
        let total = nodes[n].gpus.len() as u32;
        let g = (*g).min(total - used[n]);
        if g == 0 {
            continue;
        }
        allocs.push(busy(
            1000 + k as i64,
            nodes[n].id,
            used[n]..used[n] + g,
            *end,
        ));
        used[n] += g;
    }
    let pending = jobs
        .iter()
        .enumerate()
        .map(|(i, (n, g, ex, limit, qos))| PendingJob {
            exclusive: *ex,
            time_limit: Some(*limit),
            qos_priority: *qos,
            submit_time: i as i64,
            ..job(i as i64 + 1, *n, *g)
        })
        .collect();
    Snapshot {
        now: 0,
        nodes,
        running: allocs,
        pending,
        qos_priority_max: 2,
        ..Default::default()
    }
}

proptest! {
    /// Never more GPUs than exist, never one GPU to two jobs (running ones included),
    /// gangs whole or not at all, every job decided once.
    #[test]
    fn invariants((nodes, running, jobs) in arb_case()) {
        let snap = build(&nodes, &running, &jobs);
        let p = plan(&snap, &PlannerConfig::default());
        let mut held: BTreeSet<(i64, u32)> = snap.running.iter()
            .flat_map(|a| a.gpus.iter().map(move |g| (a.node_id, *g))).collect();
        for s in &p.starts {
            let j = snap.pending.iter().find(|j| j.id == s.job_id).unwrap();
            prop_assert_eq!(s.placements.len(), j.nodes as usize);
            let distinct: BTreeSet<i64> = s.placements.iter().map(|pl| pl.node_id).collect();
            prop_assert_eq!(distinct.len(), s.placements.len());
            for pl in &s.placements {
                prop_assert_eq!(pl.gpus.len(), j.gpus_per_node as usize);
                let n = snap.nodes.iter().find(|n| n.id == pl.node_id).unwrap();
                if j.exclusive {
                    prop_assert!(!snap.running.iter().any(|a| a.node_id == n.id));
                }
                for g in &pl.gpus {
                    prop_assert!(n.gpus.iter().any(|(i, _)| i == g));
                    prop_assert!(held.insert((pl.node_id, *g)), "GPU given twice");
                }
            }
        }
        prop_assert_eq!(p.starts.len() + p.pending.len(), snap.pending.len());
    }

    /// A reservation is never delayed by a backfilled job: once this pass's starts are
    /// running, planning again gives every reserved job a start no later than before.
    #[test]
    fn reservations_are_never_delayed_by_backfill((nodes, running, jobs) in arb_case()) {
        let snap = build(&nodes, &running, &jobs);
        let config = PlannerConfig::default();
        let first = plan(&snap, &config);
        let mut next = snap.clone();
        for s in &first.starts {
            let j = snap.pending.iter().find(|j| j.id == s.job_id).unwrap();
            for pl in &s.placements {
                next.running.push(RunningAlloc {
                    job_id: s.job_id,
                    node_id: pl.node_id,
                    gpus: pl.gpus.clone(),
                    exclusive: s.exclusive,
                    end: j.time_limit,
                    ..RunningAlloc::default()
                });
            }
        }
        next.pending.retain(|j| !first.starts.iter().any(|s| s.job_id == j.id));
        let second = plan(&next, &config);
        prop_assert!(second.starts.is_empty(), "nothing new can start at the same instant");
        for r in &first.reservations {
            let again = second.waiting(r.job_id).and_then(|w| w.expected_start);
            prop_assert!(again.is_some_and(|t| t <= r.start), "job {} reserved at {} now {:?}", r.job_id, r.start, again);
        }
    }
}

fn qjob(id: i64, user: &str, gpus: u32) -> PendingJob {
    PendingJob {
        user: user.into(),
        account: "physics".into(),
        qos: "normal".into(),
        cpus: 1,
        submit_time: id,
        ..job(id, 1, gpus)
    }
}

/// MaxTRESPerUser=gres/gpu=8: alice's third 4-GPU job waits with QOSMaxGRESPerUser (no
/// reservation) while bob's job still starts; running jobs count towards the limit.
#[test]
fn qos_max_gres_per_user_holds_back_the_job_over_the_limit() {
    let mut s = Snapshot {
        now: 100,
        nodes: vec![node(1, 8), node(2, 8)],
        ..Default::default()
    };
    s.qos_limits.insert(
        "normal".into(),
        QosLimits {
            max_tres_per_user: TresLimits {
                gpu: Some(8),
                ..Default::default()
            },
            ..Default::default()
        },
    );
    s.pending = vec![
        qjob(1, "alice", 4),
        qjob(2, "alice", 4),
        qjob(3, "alice", 4),
        qjob(4, "bob", 4),
    ];
    let p = plan(&s, &PlannerConfig::default());
    let started: BTreeSet<i64> = p.starts.iter().map(|x| x.job_id).collect();
    assert_eq!(started, BTreeSet::from([1, 2, 4]));
    let w = p.waiting(3).unwrap();
    assert_eq!(w.reason, "QOSMaxGRESPerUser");
    assert_eq!(w.expected_start, None);
    assert!(p.reservations.is_empty());

    // The same limit counts what alice already runs.
    s.running_jobs = vec![RunningJob {
        job_id: 9,
        user: "alice".into(),
        account: "physics".into(),
        qos: "normal".into(),
        cpus: 1,
        gpus: 8,
        nodes: 1,
        start: 0,
    }];
    s.running = vec![busy(9, 1, 0..8, 5000)];
    let p = plan(&s, &PlannerConfig::default());
    let started: Vec<i64> = p.starts.iter().map(|x| x.job_id).collect();
    assert_eq!(started, vec![4]);
    assert_eq!(p.waiting(1).unwrap().reason, "QOSMaxGRESPerUser");
}

/// GrpTRES, MaxJobsPerUser, MaxTRESPerAccount, MaxWall and the partition's MaxTime and
/// MaxNodes each leave a job pending with Slurm's reason.
#[test]
fn qos_and_partition_limits_give_slurm_reasons() {
    let base = Snapshot {
        now: 100,
        nodes: vec![node(1, 8), node(2, 8), node(3, 8)],
        pending: vec![qjob(1, "alice", 4), qjob(2, "bob", 4)],
        ..Default::default()
    };
    let reason_of_2 = |limits: QosLimits| {
        let mut s = base.clone();
        s.qos_limits.insert("normal".into(), limits);
        let p = plan(&s, &PlannerConfig::default());
        assert_eq!(p.starts[0].job_id, 1);
        p.waiting(2).map(|w| w.reason.clone())
    };
    let gpus = |n| TresLimits {
        gpu: Some(n),
        ..Default::default()
    };
    assert_eq!(
        reason_of_2(QosLimits {
            grp_tres: gpus(6),
            ..Default::default()
        })
        .as_deref(),
        Some("QOSGrpGRES")
    );
    assert_eq!(
        reason_of_2(QosLimits {
            max_tres_per_account: gpus(4),
            ..Default::default()
        })
        .as_deref(),
        Some("QOSMaxGRESPerAccount")
    );
    assert_eq!(reason_of_2(QosLimits::default()), None);

    let mut s = base.clone();
    s.pending[1].user = "alice".into();
    s.qos_limits.insert(
        "normal".into(),
        QosLimits {
            max_jobs_per_user: Some(1),
            ..Default::default()
        },
    );
    let p = plan(&s, &PlannerConfig::default());
    assert_eq!(p.waiting(2).unwrap().reason, "QOSMaxJobsPerUserLimit");

    let mut s = base.clone();
    s.qos_limits.insert(
        "normal".into(),
        QosLimits {
            max_wall: Some(600),
            ..Default::default()
        },
    );
    s.pending[0].time_limit = Some(600);
    let p = plan(&s, &PlannerConfig::default());
    assert_eq!(p.starts.len(), 1);
    assert_eq!(
        p.waiting(2).unwrap().reason,
        "QOSMaxWallDurationPerJobLimit"
    );

    let mut s = base.clone();
    s.pending[0].partition_max_time = Some(60);
    s.pending[1].partition_max_nodes = Some(1);
    s.pending[1].nodes = 2;
    let p = plan(&s, &PlannerConfig::default());
    assert!(p.starts.is_empty());
    assert_eq!(p.waiting(1).unwrap().reason, "PartitionTimeLimit");
    assert_eq!(p.waiting(2).unwrap().reason, "PartitionNodeLimit");
}

/// An array's tasks stop at the QOS limit: the rest wait with the limit's reason.
#[test]
fn array_tasks_respect_qos_limits() {
    let mut s = Snapshot {
        now: 100,
        nodes: vec![node(1, 8)],
        ..Default::default()
    };
    s.qos_limits.insert(
        "normal".into(),
        QosLimits {
            max_tres_per_user: TresLimits {
                gpu: Some(3),
                ..Default::default()
            },
            ..Default::default()
        },
    );
    s.pending = vec![PendingJob {
        array: Some(ArrayTasks {
            ready: (0..8).collect(),
            remaining: 8,
            running: 0,
            max_running: None,
        }),
        ..qjob(1, "alice", 1)
    }];
    let p = plan(&s, &PlannerConfig::default());
    assert_eq!(p.starts.len(), 3);
    assert_eq!(p.waiting(1).unwrap().reason, "QOSMaxGRESPerUser");
}

/// An account tree: root → physics (`GrpTRES` as given) → physics-a, physics-b; root →
/// chem (no limit).
fn account_tree(physics: TresLimits) -> HashMap<String, AccountLimits> {
    let under = |parent: &str, grp_tres| AccountLimits {
        parent: Some(parent.to_string()),
        grp_tres,
    };
    HashMap::from([
        ("root".to_string(), AccountLimits::default()),
        ("physics".to_string(), under("root", physics)),
        (
            "physics-a".to_string(),
            under("physics", TresLimits::default()),
        ),
        (
            "physics-b".to_string(),
            under("physics", TresLimits::default()),
        ),
        ("chem".to_string(), under("root", TresLimits::default())),
    ])
}

fn ajob(id: i64, account: &str, gpus: u32) -> PendingJob {
    PendingJob {
        account: account.into(),
        ..qjob(id, "alice", gpus)
    }
}

/// A parent account's GrpTRES=gres/gpu=6 caps its two sub-accounts' jobs together: the
/// job that would go past it waits with AssocGrpGRES (no reservation), a smaller job of
/// the subtree that stays within it still starts, and another account is not limited.
#[test]
fn a_parent_accounts_grp_tres_caps_its_sub_accounts_together() {
    let gpus = |n| TresLimits {
        gpu: Some(n),
        ..Default::default()
    };
    let mut s = Snapshot {
        now: 100,
        nodes: vec![node(1, 8), node(2, 8), node(3, 8)],
        accounts: account_tree(gpus(6)),
        ..Default::default()
    };
    s.pending = vec![
        ajob(1, "physics-a", 4),
        ajob(2, "physics-b", 4),
        ajob(3, "chem", 8),
        ajob(4, "physics-b", 2),
    ];
    let p = plan(&s, &PlannerConfig::default());
    let started: BTreeSet<i64> = p.starts.iter().map(|x| x.job_id).collect();
    assert_eq!(started, BTreeSet::from([1, 3, 4]));
    let w = p.waiting(2).unwrap();
    assert_eq!(w.reason, "AssocGrpGRES");
    assert_eq!(w.expected_start, None);
    assert!(p.reservations.is_empty());
    assert_eq!(plan_with(&s, &PlannerConfig::default(), true), p);

    // Without the limit all four start.
    s.accounts = account_tree(TresLimits::default());
    assert_eq!(plan(&s, &PlannerConfig::default()).starts.len(), 4);
}

/// Running jobs of the subtree count; when one ends the waiting job starts.
#[test]
fn an_association_limit_frees_when_a_job_ends() {
    let mut s = Snapshot {
        now: 100,
        nodes: vec![node(1, 8), node(2, 8)],
        accounts: account_tree(TresLimits {
            gpu: Some(4),
            ..Default::default()
        }),
        pending: vec![ajob(2, "physics-b", 2)],
        running_jobs: vec![RunningJob {
            account: "physics-a".into(),
            gpus: 3,
            ..running_job(9, "normal", 3, 0)
        }],
        running: vec![busy(9, 1, 0..3, 5000)],
        ..Default::default()
    };
    let p = plan(&s, &PlannerConfig::default());
    assert!(p.starts.is_empty());
    assert_eq!(p.waiting(2).unwrap().reason, "AssocGrpGRES");

    // Job 9 ended.
    s.running_jobs.clear();
    s.running.clear();
    let p = plan(&s, &PlannerConfig::default());
    assert_eq!(p.starts.len(), 1);
    assert_eq!(p.starts[0].job_id, 2);
}

/// GrpTRES cpu and node limits, on the job's own account or an ancestor, give
/// AssocGrpCpuLimit and AssocGrpNodeLimit; an array's tasks stop at the limit.
#[test]
fn association_cpu_and_node_limits_give_slurm_reasons() {
    let mut s = Snapshot {
        now: 100,
        nodes: vec![node(1, 8), node(2, 8), node(3, 8)],
        accounts: account_tree(TresLimits {
            node: Some(2),
            ..Default::default()
        }),
        pending: vec![ajob(1, "physics-a", 1), {
            let mut j = ajob(2, "physics-b", 1);
            j.nodes = 2;
            j
        }],
        ..Default::default()
    };
    let fifo = PlannerConfig {
        order: QueueOrder::Submit,
        ..PlannerConfig::default()
    };
    let p = plan(&s, &fifo);
    assert_eq!(p.starts.len(), 1);
    assert_eq!(p.starts[0].job_id, 1);
    assert_eq!(p.waiting(2).unwrap().reason, "AssocGrpNodeLimit");

    s.accounts.get_mut("physics-b").unwrap().grp_tres.cpu = Some(3);
    s.accounts.get_mut("physics").unwrap().grp_tres = TresLimits::default();
    s.pending = vec![PendingJob {
        cpus: 2,
        array: Some(ArrayTasks {
            ready: (0..4).collect(),
            remaining: 4,
            running: 0,
            max_running: None,
        }),
        ..ajob(1, "physics-b", 1)
    }];
    let p = plan(&s, &PlannerConfig::default());
    assert_eq!(p.starts.len(), 1);
    assert_eq!(p.waiting(1).unwrap().reason, "AssocGrpCpuLimit");
}

/// A high-QOS job held back only by its account's limit preempts nothing, though its
/// QOS could preempt the low jobs that fill the cluster.
#[test]
fn a_job_over_its_association_limit_preempts_nothing() {
    let mut s = Snapshot {
        now: 10_000,
        nodes: vec![node(1, 4)],
        qos_preemption: preemption_qos(),
        running: vec![busy(8, 1, 0..2, 50_000), busy(9, 1, 2..4, 50_000)],
        running_jobs: vec![
            RunningJob {
                account: "physics-a".into(),
                ..running_job(8, "low", 2, 0)
            },
            RunningJob {
                account: "chem".into(),
                ..running_job(9, "low", 2, 0)
            },
        ],
        pending: vec![PendingJob {
            account: "physics-b".into(),
            ..qos_job(1, "high", 2)
        }],
        ..Default::default()
    };
    // Without a limit it preempts.
    s.accounts = account_tree(TresLimits::default());
    assert!(!plan(&s, &PlannerConfig::default()).preemptions.is_empty());

    s.accounts = account_tree(TresLimits {
        gpu: Some(3),
        ..Default::default()
    });
    let p = plan(&s, &PlannerConfig::default());
    assert!(p.preemptions.is_empty());
    assert!(p.reservations.is_empty());
    assert_eq!(p.waiting(1).unwrap().reason, "AssocGrpGRES");
}

fn preemption_qos() -> HashMap<String, QosPreemption> {
    HashMap::from([
        (
            "high".to_string(),
            QosPreemption {
                priority: 100,
                preempt: vec!["low".into()],
                ..Default::default()
            },
        ),
        (
            "low".to_string(),
            QosPreemption {
                priority: 0,
                mode: PreemptMode::Requeue,
                grace_time: 30,
                exempt_time: 600,
                ..Default::default()
            },
        ),
    ])
}

fn running_job(job_id: i64, qos: &str, gpus: u32, start: i64) -> RunningJob {
    RunningJob {
        job_id,
        user: "u".into(),
        account: "root".into(),
        qos: qos.into(),
        cpus: 1,
        gpus,
        nodes: 1,
        start,
    }
}

fn qos_job(id: i64, qos: &str, gpus: u32) -> PendingJob {
    PendingJob {
        qos: qos.into(),
        qos_priority: if qos == "high" { 100 } else { 0 },
        ..job(id, 1, gpus)
    }
}

/// A high-QOS job preempts the fewest low-QOS jobs that make room (the youngest first),
/// never a job of a QOS it may not preempt; the GPUs freed are held for it, so a lower
/// job does not take them.
#[test]
fn preemption_takes_the_fewest_youngest_preemptable_jobs_and_holds_their_gpus() {
    let snap = Snapshot {
        now: 10_000,
        nodes: vec![node(1, 8), node(2, 8)],
        running: vec![
            busy(90, 1, 0..4, 50_000),
            busy(91, 1, 4..8, 50_000),
            busy(92, 2, 0..8, 50_000),
        ],
        running_jobs: vec![
            running_job(90, "low", 4, 100),
            running_job(91, "low", 4, 200),
            running_job(92, "normal", 8, 50),
        ],
        pending: vec![qos_job(1, "high", 4), qos_job(2, "low", 4)],
        qos_preemption: preemption_qos(),
        ..Default::default()
    };
    let p = plan(&snap, &PlannerConfig::default());
    assert_eq!(
        p.preemptions,
        vec![Preemption {
            victim: 91,
            preemptor: 1,
            mode: PreemptMode::Requeue,
            grace_time: 30,
        }]
    );
    assert!(p.starts.is_empty());
    let w = p.waiting(1).unwrap();
    assert_eq!(w.expected_start, Some(10_030));
    let r = p.reservations.iter().find(|r| r.job_id == 1).unwrap();
    assert_eq!(r.placements[0].node_id, 1);
    assert_eq!(r.placements[0].gpus, vec![4, 5, 6, 7]);
    // The lower job neither starts nor preempts the other low job.
    assert!(p.preemptions.iter().all(|x| x.preemptor != 2));
}

/// A high-QOS array whose next task is blocked preempts for that task, like any job: the
/// freed GPUs are held for the array (its master id), one task's worth at a time.
#[test]
fn a_blocked_high_qos_array_preempts_for_its_next_task() {
    let snap = Snapshot {
        now: 10_000,
        nodes: vec![node(1, 8)],
        running: vec![busy(90, 1, 0..4, 50_000), busy(91, 1, 4..8, 50_000)],
        running_jobs: vec![
            running_job(90, "low", 4, 100),
            running_job(91, "low", 4, 200),
        ],
        pending: vec![PendingJob {
            array: Some(ArrayTasks {
                ready: vec![0, 1, 2],
                remaining: 3,
                running: 0,
                max_running: None,
            }),
            ..qos_job(1, "high", 4)
        }],
        qos_preemption: preemption_qos(),
        ..Default::default()
    };
    let p = plan(&snap, &PlannerConfig::default());
    assert_eq!(p.preemptions.len(), 1, "{:?}", p.preemptions);
    assert_eq!(
        (p.preemptions[0].victim, p.preemptions[0].preemptor),
        (91, 1)
    );
    assert!(p.starts.is_empty());
    let r = p.reservations.iter().find(|r| r.job_id == 1).unwrap();
    assert_eq!(r.placements[0].gpus, vec![4, 5, 6, 7]);
    // While that preemption is in flight the array preempts nothing more.
    let mut again = snap.clone();
    again.pending[0].preempting = true;
    assert!(plan(&again, &PlannerConfig::default())
        .preemptions
        .is_empty());
}

/// Two whole-node victims are needed for a two-node gang; a single preemptable job on a
/// node shared with an unpreemptable one is not enough, so nothing is preempted.
#[test]
fn preemption_only_when_the_victims_make_room() {
    let base = Snapshot {
        now: 10_000,
        nodes: vec![node(1, 8), node(2, 8)],
        running: vec![busy(90, 1, 0..4, 50_000), busy(92, 1, 4..8, 50_000)],
        running_jobs: vec![
            running_job(90, "low", 4, 100),
            running_job(92, "normal", 4, 100),
        ],
        pending: vec![PendingJob {
            qos: "high".into(),
            qos_priority: 100,
            ..job(1, 2, 8)
        }],
        qos_preemption: preemption_qos(),
        ..Default::default()
    };
    // n2 is free, n1 half held by an unpreemptable job: preempting 90 cannot make room.
    let p = plan(&base, &PlannerConfig::default());
    assert!(p.preemptions.is_empty());
    assert_eq!(p.waiting(1).unwrap().reason, "Resources");
    // A job that can never fit (16 GPUs on 8-GPU nodes) preempts nothing either.
    let never = Snapshot {
        pending: vec![qos_job(1, "high", 16)],
        ..base.clone()
    };
    let p = plan(&never, &PlannerConfig::default());
    assert!(p.preemptions.is_empty());
    assert_eq!(p.waiting(1).unwrap().reason, "ReqNodeNotAvail");
    // Both halves of n1 preemptable: both go.
    let both = Snapshot {
        running_jobs: vec![
            running_job(90, "low", 4, 100),
            running_job(92, "low", 4, 100),
        ],
        ..base
    };
    let p = plan(&both, &PlannerConfig::default());
    let victims: BTreeSet<i64> = p.preemptions.iter().map(|x| x.victim).collect();
    assert_eq!(victims, BTreeSet::from([90, 92]));
}

/// PreemptExemptTime protects a job for that long after its start; a QOS does not preempt
/// its own jobs, nor one that may preempt it back.
#[test]
fn preemption_respects_exempt_time_and_never_goes_both_ways() {
    let snap = Snapshot {
        now: 1000,
        nodes: vec![node(1, 8)],
        running: vec![busy(90, 1, 0..8, 50_000)],
        running_jobs: vec![running_job(90, "low", 8, 500)],
        pending: vec![qos_job(1, "high", 8)],
        qos_preemption: preemption_qos(),
        ..Default::default()
    };
    // Started at 500, exempt for 600 s: safe until 1100.
    assert!(plan(&snap, &PlannerConfig::default())
        .preemptions
        .is_empty());
    let later = Snapshot {
        now: 1100,
        ..snap.clone()
    };
    assert_eq!(plan(&later, &PlannerConfig::default()).preemptions.len(), 1);
    // Same QOS: never.
    let same = Snapshot {
        running_jobs: vec![running_job(90, "high", 8, 0)],
        ..later.clone()
    };
    assert!(plan(&same, &PlannerConfig::default())
        .preemptions
        .is_empty());
    // Mutual lists: neither preempts the other.
    let mut mutual = later.clone();
    mutual.qos_preemption.get_mut("low").unwrap().preempt = vec!["high".into()];
    assert!(plan(&mutual, &PlannerConfig::default())
        .preemptions
        .is_empty());
}

/// Preemption never loops, over simulated cycles: at t=0 the high job preempts the low
/// one (REQUEUE, 30 s grace); at t=10, while the victim's run is still being stopped, the
/// high job preempts nothing more and the requeued victim cannot take the GPUs back; at
/// t=40 the victim's run is gone and the high job starts; at t=50 the requeued job waits
/// and preempts nothing (its QOS preempts nothing).
#[test]
fn preemption_never_loops_over_cycles() {
    let config = PlannerConfig::default();
    let mut low = qos_job(2, "low", 8);
    low.submit_time = -5000;
    let t0 = Snapshot {
        now: 0,
        nodes: vec![node(1, 8)],
        running: vec![busy(2, 1, 0..8, 100_000)],
        running_jobs: vec![running_job(2, "low", 8, -1000)],
        pending: vec![qos_job(1, "high", 8)],
        qos_preemption: preemption_qos(),
        ..Default::default()
    };
    let p0 = plan(&t0, &config);
    assert_eq!(p0.preemptions.len(), 1);
    assert_eq!(p0.preemptions[0].victim, 2);
    // t=10: job 2 requeued (pending again), its old run held until the kill at t=30.
    let t10 = Snapshot {
        now: 10,
        running: vec![busy(2, 1, 0..8, 30)],
        running_jobs: vec![],
        pending: vec![
            PendingJob {
                preempting: true,
                ..qos_job(1, "high", 8)
            },
            low.clone(),
        ],
        ..t0.clone()
    };
    let p10 = plan(&t10, &config);
    assert!(p10.preemptions.is_empty());
    assert!(p10.starts.is_empty());
    assert_eq!(p10.waiting(1).unwrap().expected_start, Some(30));
    assert!(p10.waiting(2).unwrap().expected_start.unwrap_or(0) > 30);
    // t=40: the old run is gone; the high job starts, the low one waits.
    let t40 = Snapshot {
        now: 40,
        running: vec![],
        pending: vec![qos_job(1, "high", 8), low.clone()],
        ..t10.clone()
    };
    let p40 = plan(&t40, &config);
    assert_eq!(p40.starts.len(), 1);
    assert_eq!(p40.starts[0].job_id, 1);
    assert!(p40.preemptions.is_empty());
    // t=50: the high job runs; the requeued low job preempts nothing.
    let t50 = Snapshot {
        now: 50,
        running: vec![busy(1, 1, 0..8, 3650)],
        running_jobs: vec![running_job(1, "high", 8, 40)],
        pending: vec![low],
        ..t40
    };
    let p50 = plan(&t50, &config);
    assert!(p50.preemptions.is_empty());
    assert_eq!(p50.waiting(2).unwrap().reason, "Resources");
}

/// A gang's nodes come in host-name order (numbers as numbers), whatever best fit chose
/// first, so node index 0 (the batch node) is the first name of `SLURM_JOB_NODELIST`.
#[test]
fn gang_placements_are_in_host_name_order() {
    let mut n10 = node(10, 4);
    n10.name = "node-10".into();
    let mut n2 = node(2, 8);
    n2.name = "node-2".into();
    let snap = Snapshot {
        now: 0,
        nodes: vec![n10, n2],
        pending: vec![job(1, 2, 4)],
        ..Default::default()
    };
    let p = plan(&snap, &PlannerConfig::default());
    let ids: Vec<i64> = p.starts[0].placements.iter().map(|pl| pl.node_id).collect();
    assert_eq!(ids, vec![2, 10]);
}

/// `--exclusive` with no GPU option takes the whole node: a job planned in the same pass
/// does not share it, nor does one planned while it runs.
#[test]
fn a_whole_node_job_shares_its_node_with_nothing_planned_beside_it() {
    let snap = Snapshot {
        now: 0,
        nodes: vec![node(1, 8)],
        pending: vec![
            PendingJob {
                exclusive: true,
                whole_node: true,
                ..job(1, 1, 0)
            },
            job(2, 1, 1),
        ],
        ..Default::default()
    };
    let p = plan(&snap, &PlannerConfig::default());
    // One of the two starts (the priority order decides which), never both.
    assert_eq!(p.starts.len(), 1, "{:?}", p.starts);
    // And once it runs, the next pass keeps the 1-GPU job waiting.
    let snap = Snapshot {
        now: 1,
        nodes: vec![node(1, 8)],
        running: vec![RunningAlloc {
            exclusive: true,
            ..busy(1, 1, 0..8, 300)
        }],
        pending: vec![job(2, 1, 1)],
        ..Default::default()
    };
    let p = plan(&snap, &PlannerConfig::default());
    assert!(p.starts.is_empty(), "{:?}", p.starts);
}

/// A job shape for [`fast_and_plain_plans_agree`]: nodes, GPUs per node, exclusive,
/// whole node, GPU type (0 none, 1 "h100", 2 "a100"), constraint (0 none, 1 "ib", 2
/// "ib|fast"), partition (a bitmask of nodes; 0 every node).
type ShapeCase = (u32, u32, bool, bool, u8, u8, u8);

/// A pending job: shape (index into the pool), time limit (0 none, 1..=3 that less one
/// second, so 0 to 2, else 8 times that),
/// QOS (0 normal, 1 high, 2 low), array tasks (0 none), `%LIMIT` (0 none), preempting,
/// held.
type JobCase = (usize, i64, u8, u32, u32, bool, bool);

/// A node: GPUs, of which the first this many are A100s (the rest H100s), has "ib", has
/// "fast", available, name number.
type NodeCase = (u32, u32, bool, bool, bool, u8);

/// A running allocation: node, first GPU, GPUs, end (0 none, else now - 50 + value),
/// exclusive, QOS low, started this long before now.
type RunCase = (usize, u32, u32, i64, bool, bool, i64);

/// A generated cluster: nodes, running allocations, the pool of job shapes, pending jobs,
/// and (backfill, backfill depth, submit order).
type ClusterCase = (
    Vec<NodeCase>,
    Vec<RunCase>,
    Vec<ShapeCase>,
    Vec<JobCase>,
    (bool, usize, bool),
);

fn arb_cluster() -> impl Strategy<Value = ClusterCase> {
    (
        proptest::collection::vec(
            (
                0u32..9,
                0u32..9,
                any::<bool>(),
                any::<bool>(),
                prop::bool::weighted(0.9),
                0u8..12,
            ),
            1..8,
        ),
        proptest::collection::vec(
            (
                0usize..8,
                0u32..8,
                0u32..4,
                0i64..3000,
                prop::bool::weighted(0.15),
                any::<bool>(),
                0i64..1200,
            ),
            0..12,
        ),
        proptest::collection::vec(
            (
                0u32..4,
                0u32..5,
                prop::bool::weighted(0.2),
                prop::bool::weighted(0.15),
                0u8..3,
                0u8..3,
                0u8..8,
            ),
            1..5,
        ),
        proptest::collection::vec(
            (
                0usize..5,
                0i64..400,
                0u8..3,
                0u32..3,
                0u32..3,
                prop::bool::weighted(0.1),
                prop::bool::weighted(0.05),
            ),
            0..30,
        ),
        (prop::bool::weighted(0.85), 0usize..6, any::<bool>()),
    )
}

fn build_cluster(
    nodes: &[NodeCase],
    running: &[RunCase],
    shapes: &[ShapeCase],
    jobs: &[JobCase],
) -> Snapshot {
    let now = 10_000;
    let nodes: Vec<NodeView> = nodes
        .iter()
        .enumerate()
        .map(|(i, (gpus, a100, ib, fast, up, name))| NodeView {
            id: i as i64 + 1,
            name: format!("n{name}"),
            available: *up,
            gpus: (0..*gpus)
                .map(|g| {
                    (
                        g,
                        if g < *a100 {
                            "NVIDIA A100"
                        } else {
                            "NVIDIA H100"
                        }
                        .to_string(),
                    )
                })
                .collect(),
            features: [(*ib, "ib"), (*fast, "fast")]
                .into_iter()
                .filter(|(on, _)| *on)
                .map(|(_, f)| f.to_string())
                .collect(),
            ..NodeView::default()
        })
        .collect();
    let mut allocs = Vec::new();
    let mut running_jobs = Vec::new();
    for (k, (n, first, count, end, exclusive, low, age)) in running.iter().enumerate() {
        let node = &nodes[n % nodes.len()];
        let id = 1000 + k as i64;
        allocs.push(RunningAlloc {
            job_id: id,
            node_id: node.id,
            gpus: (*first..first + count).collect(),
            exclusive: *exclusive,
            end: (*end != 0).then_some(now - 50 + end),
            ..RunningAlloc::default()
        });
        running_jobs.push(RunningJob {
            qos: if *low { "low" } else { "normal" }.into(),
            gpus: *count,
            account: PROP_ACCOUNTS[k % PROP_ACCOUNTS.len()].into(),
            ..running_job(id, "", 0, now - age)
        });
    }
    let pending = jobs
        .iter()
        .enumerate()
        .map(
            |(i, (shape, limit, qos, tasks, throttle, preempting, held))| {
                let (n, g, exclusive, whole, gpu_type, constraint, partition) =
                    shapes[shape % shapes.len()];
                let qos = ["normal", "high", "low"][*qos as usize];
                PendingJob {
                    exclusive,
                    whole_node: whole,
                    gpu_type: [None, Some("h100"), Some("a100")][gpu_type as usize]
                        .map(String::from),
                    constraint: [None, Some("ib"), Some("ib|fast")][constraint as usize]
                        .map(String::from),
                    partition_nodes: nodes
                        .iter()
                        .enumerate()
                        .filter(|(k, _)| partition & (1 << k) != 0)
                        .map(|(_, node)| node.name.clone())
                        .collect(),
                    time_limit: match *limit {
                        0 => None,
                        l @ 1..=3 => Some(l - 1),
                        l => Some(l * 8),
                    },
                    submit_time: i as i64 % 7,
                    array: (*tasks > 0).then(|| ArrayTasks {
                        ready: (0..*tasks).collect(),
                        remaining: u64::from(*tasks) + 1,
                        running: 0,
                        max_running: (*throttle > 0).then_some(*throttle),
                    }),
                    nodes: n,
                    preempting: *preempting,
                    held: held.then(|| "JobHeldUser".to_string()),
                    account: PROP_ACCOUNTS[i % PROP_ACCOUNTS.len()].into(),
                    cpus: 1 + g,
                    ..qos_job(i as i64 + 1, qos, g)
                }
            },
        )
        .collect();
    Snapshot {
        now,
        nodes,
        running: allocs,
        running_jobs,
        pending,
        qos_priority_max: 100,
        qos_preemption: preemption_qos(),
        accounts: prop_accounts(),
        ..Default::default()
    }
}

/// The accounts of generated jobs, in turn.
const PROP_ACCOUNTS: [&str; 4] = ["root", "physics-a", "physics-b", "chem"];

/// The account tree of generated clusters: physics (GPUs and nodes limited) over
/// physics-a (CPUs limited) and physics-b; root and chem unlimited.
fn prop_accounts() -> HashMap<String, AccountLimits> {
    let mut accounts = account_tree(TresLimits {
        gpu: Some(10),
        node: Some(4),
        cpu: None,
    });
    accounts.get_mut("physics-a").unwrap().grp_tres.cpu = Some(12);
    accounts
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// The pass's shortcuts (cached candidate lists, the per-node summary at `now`, the
    /// shapes remembered not to fit, the early stop at a best fit, the earliest start
    /// found per node) decide exactly what the plain algorithms decide: same starts on
    /// the same GPUs, same reservations, preemptions, reasons and expected starts.
    #[test]
    fn fast_and_plain_plans_agree(
        (nodes, running, shapes, jobs, (backfill, depth, submit)) in arb_cluster()
    ) {
        let snap = build_cluster(&nodes, &running, &shapes, &jobs);
        let config = PlannerConfig {
            backfill,
            backfill_depth: depth,
            order: if submit { QueueOrder::Submit } else { QueueOrder::Multifactor },
            ..PlannerConfig::default()
        };
        let fast = plan_with(&snap, &config, false);
        let plain = plan_with(&snap, &config, true);
        prop_assert_eq!(fast, plain);
        // The same with GPU topology on every other node (domains of 3 GPUs), every
        // third node offering shards, and every fourth job asking for shards.
        let mut topo = snap;
        topo.gpu_domains = topo
            .nodes
            .iter()
            .filter(|n| n.id % 2 == 0)
            .map(|n| (n.id, n.gpus.iter().map(|(g, _)| (*g, g / 3)).collect()))
            .collect();
        topo.shards = topo
            .nodes
            .iter()
            .filter(|n| n.id % 3 == 0)
            .map(|n| (n.id, n.gpus.iter().map(|(g, _)| *g).collect()))
            .collect();
        for j in topo.pending.iter_mut().filter(|j| j.id % 4 == 0) {
            j.shards = true;
        }
        prop_assert_eq!(plan_with(&topo, &config, false), plan_with(&topo, &config, true));
    }

    /// Association limits hold: whenever a pass starts jobs charged to an account's
    /// subtree, what that subtree then holds (running jobs plus the GPUs, CPUs and nodes
    /// actually placed for the starts) stays within the account's GrpTRES.
    #[test]
    fn association_limits_are_respected(
        (nodes, running, shapes, jobs, (backfill, depth, submit)) in arb_cluster()
    ) {
        let snap = build_cluster(&nodes, &running, &shapes, &jobs);
        let config = PlannerConfig {
            backfill,
            backfill_depth: depth,
            order: if submit { QueueOrder::Submit } else { QueueOrder::Multifactor },
            ..PlannerConfig::default()
        };
        let p = plan(&snap, &config);
        let within = |account: &str, top: &str| {
            let mut a = Some(account.to_string());
            let mut hops = 0;
            while let Some(name) = a {
                if name == top {
                    return true;
                }
                hops += 1;
                if hops > 16 {
                    return false;
                }
                a = snap.accounts.get(&name).and_then(|l| l.parent.clone());
            }
            false
        };
        for (top, limits) in &snap.accounts {
            let (mut gpus, mut cpus, mut node_count) = (0u64, 0u64, 0u64);
            for r in snap.running_jobs.iter().filter(|r| within(&r.account, top)) {
                gpus += u64::from(r.gpus);
                cpus += u64::from(r.cpus);
                node_count += u64::from(r.nodes);
            }
            let mut started = false;
            for st in &p.starts {
                let j = snap.pending.iter().find(|j| j.id == st.job_id).unwrap();
                if !within(&j.account, top) {
                    continue;
                }
                started = true;
                gpus += st.placements.iter().map(|pl| pl.gpus.len() as u64).sum::<u64>();
                cpus += u64::from(j.cpus);
                node_count += st.placements.len() as u64;
            }
            if !started {
                continue;
            }
            for (what, used, limit) in [
                ("gpu", gpus, limits.grp_tres.gpu),
                ("cpu", cpus, limits.grp_tres.cpu),
                ("node", node_count, limits.grp_tres.node),
            ] {
                if let Some(limit) = limit {
                    prop_assert!(
                        used <= limit,
                        "{top}: {what} {used} over GrpTRES {limit}"
                    );
                }
            }
        }
    }
}

/// A generated cluster with every resource of issue 11 in play: node CPUs (some not
/// counted), memory and weights; running allocations holding CPUs and memory; jobs asking
/// CPUs and memory per node (some memory left to the proportional default), some with
/// `--time-min`, `-w`, `-x`; a whole-node advance reservation on the first node ahead of
/// `now` whose window some jobs name, and a GPU reservation on the second node open now.
fn with_cpus_memory_and_reservations(mut snap: Snapshot) -> Snapshot {
    for n in &mut snap.nodes {
        n.cpus = if n.id % 5 == 0 {
            0
        } else {
            2 + 2 * (n.id as u32 % 4)
        };
        n.memory_mib = 1024 * (1 + n.id as u64 % 3);
        n.weight = if n.id % 3 == 0 { 10 } else { 1 };
    }
    for a in &mut snap.running {
        a.cpus = 1 + (a.job_id % 2) as u32;
        a.mem_mib = 256;
    }
    let names: Vec<String> = snap.nodes.iter().map(|n| n.name.clone()).collect();
    for j in &mut snap.pending {
        j.cpus_per_node = 1 + (j.id % 3) as u32;
        j.mem_per_node_mib = match j.id % 4 {
            1 => Some(512),
            2 => Some(2048),
            _ => None,
        };
        if j.id % 5 == 0 {
            j.time_min = j.time_limit.map(|l| (l / 3).max(1));
        }
        if j.id % 7 == 0 {
            j.nodelist = names.iter().take(1).cloned().collect();
        }
        if j.id % 6 == 0 {
            j.exclude = names.iter().rev().take(1).cloned().collect();
        }
        if j.id % 9 == 0 {
            j.reservation = Some("maint".into());
        }
        if j.id % 8 == 0 {
            j.constraint = Some("[ib|fast]".into());
        } else if j.id % 11 == 0 {
            j.constraint = Some("fast*1&ib|fast".into());
        }
    }
    let now = snap.now;
    snap.advance_reservations = snap
        .nodes
        .iter()
        .take(1)
        .map(|n| AdvanceReservation {
            name: "maint".into(),
            start: now + 16,
            end: now + 64,
            nodes: vec![ReservedNode {
                node_id: n.id,
                gpus: None,
            }],
            ..Default::default()
        })
        .chain(
            snap.nodes
                .iter()
                .skip(1)
                .take(1)
                .map(|n| AdvanceReservation {
                    name: "gpus".into(),
                    start: now - 5,
                    end: now + 40,
                    nodes: vec![ReservedNode {
                        node_id: n.id,
                        gpus: Some(vec![0, 1]),
                    }],
                    flex: true,
                    ..Default::default()
                }),
        )
        .collect();
    snap
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    /// With CPUs, memory, weights, node lists and advance reservations in play, the
    /// pass's shortcuts still decide exactly what the plain algorithms decide.
    #[test]
    fn fast_and_plain_plans_agree_with_cpus_memory_and_reservations(
        (nodes, running, shapes, jobs, (backfill, depth, submit)) in arb_cluster()
    ) {
        let snap = with_cpus_memory_and_reservations(
            build_cluster(&nodes, &running, &shapes, &jobs),
        );
        let config = PlannerConfig {
            backfill,
            backfill_depth: depth,
            order: if submit { QueueOrder::Submit } else { QueueOrder::Multifactor },
            ..PlannerConfig::default()
        };
        prop_assert_eq!(plan_with(&snap, &config, false), plan_with(&snap, &config, true));
    }

    /// No node is ever given more CPUs or memory than it has (running allocations plus
    /// the starts of a pass), a start's CPUs and memory are what its job asks of that
    /// node, `-w` nodes are in and `-x` nodes out, and no job but the reservation's own
    /// is started or reserved on a reserved node across its window, while the
    /// reservation's jobs start only inside it.
    #[test]
    fn cpus_memory_and_reservation_windows_are_respected(
        (nodes, running, shapes, jobs, (backfill, depth, submit)) in arb_cluster()
    ) {
        let snap = with_cpus_memory_and_reservations(
            build_cluster(&nodes, &running, &shapes, &jobs),
        );
        let config = PlannerConfig {
            backfill,
            backfill_depth: depth,
            order: if submit { QueueOrder::Submit } else { QueueOrder::Multifactor },
            ..PlannerConfig::default()
        };
        let p = plan(&snap, &config);
        let now = snap.now;
        for n in &snap.nodes {
            // Generated running allocations may overcommit a node already: what is
            // checked is that a pass adds nothing to a node it would overfill.
            let held = snap.running.iter().filter(|a| a.node_id == n.id);
            let mut cpus: u64 = held.clone().map(|a| u64::from(a.cpus)).sum();
            let mut mem: u64 = held.map(|a| a.mem_mib).sum();
            if !p.starts.iter().any(|st| st.placements.iter().any(|pl| pl.node_id == n.id)) {
                continue;
            }
            for st in &p.starts {
                let j = snap.pending.iter().find(|j| j.id == st.job_id).unwrap();
                if j.time_limit == Some(0) {
                    // Holds nothing past `now` (the database never has such a job).
                    continue;
                }
                for pl in st.placements.iter().filter(|pl| pl.node_id == n.id) {
                    prop_assert!(pl.cpus >= j.cpus_per_node.max(1));
                    if let Some(m) = j.mem_per_node_mib {
                        prop_assert!(pl.mem_mib >= m);
                    }
                    cpus += u64::from(pl.cpus);
                    mem += pl.mem_mib;
                }
            }
            if n.cpus > 0 {
                prop_assert!(cpus <= u64::from(n.cpus), "{}: {cpus} CPUs of {}", n.name, n.cpus);
            }
            prop_assert!(mem <= n.memory_mib, "{}: {mem} MiB of {}", n.name, n.memory_mib);
        }
        let name_of = |id: i64| snap.nodes.iter().find(|n| n.id == id).unwrap().name.clone();
        // What each start and reservation holds: [start, end). A preemption's
        // reservation holds from now (its `start` is when the victims are gone).
        let held_from = |job: i64, start: i64, end: i64| {
            let j = snap.pending.iter().find(|j| j.id == job).unwrap();
            match j.time_limit {
                Some(l) if end != FOREVER => end - l,
                _ => start,
            }
        };
        let planned = p
            .starts
            .iter()
            .map(|st| {
                let j = snap.pending.iter().find(|j| j.id == st.job_id).unwrap();
                let limit = st.time_limit.or(j.time_limit).unwrap_or(FOREVER);
                (st.job_id, now, now.saturating_add(limit), &st.placements)
            })
            .chain(p.reservations.iter().map(|r| {
                (r.job_id, held_from(r.job_id, r.start, r.end), r.end, &r.placements)
            }));
        for (id, start, end, placements) in planned {
            let j = snap.pending.iter().find(|j| j.id == id).unwrap();
            for pl in placements {
                prop_assert!(!j.exclude.contains(&name_of(pl.node_id)));
            }
            if let Some(c) = &j.constraint {
                let c = berth_core::constraint::Constraint::parse(c).unwrap();
                let features: Vec<&[String]> = placements
                    .iter()
                    .map(|pl| snap.nodes.iter().find(|n| n.id == pl.node_id).unwrap().features.as_slice())
                    .collect();
                prop_assert!(c.placement_matches(&features), "job {id}: {c} on {features:?}");
            }
            for want in &j.nodelist {
                prop_assert!(placements.iter().any(|pl| &name_of(pl.node_id) == want));
            }
            for r in snap.advance_reservations.iter().filter(|r| r.name == "maint") {
                let on = placements.iter().any(|pl| r.nodes.iter().any(|rn| rn.node_id == pl.node_id));
                if j.reservation.as_deref() == Some("maint") {
                    prop_assert!(start >= r.start && start < r.end, "job {id} outside its window");
                    prop_assert!(placements.iter().all(|pl| r.nodes.iter().any(|rn| rn.node_id == pl.node_id)));
                } else if on {
                    prop_assert!(end <= r.start || start >= r.end, "job {id} overlaps maint");
                }
            }
        }
    }
}

/// Two 1-CPU jobs share a 2-CPU node while a third waits with reason `Resources`; a job
/// asking more CPUs than any node has never starts; memory binds like CPUs, and memory
/// not asked for is the node's in proportion to the CPUs.
#[test]
fn cpus_and_memory_are_placed_like_gpus() {
    let mut n = node(1, 2);
    n.cpus = 2;
    n.memory_mib = 8192;
    let cpu_job = |id: i64, cpus: u32| PendingJob {
        cpus_per_node: cpus,
        ..job(id, 1, 0)
    };
    let snap = Snapshot {
        now: 100,
        nodes: vec![n.clone()],
        pending: vec![cpu_job(1, 1), cpu_job(2, 1), cpu_job(3, 1), cpu_job(4, 4)],
        ..Default::default()
    };
    let p = plan(&snap, &PlannerConfig::default());
    let started: Vec<i64> = p.starts.iter().map(|s| s.job_id).collect();
    assert_eq!(started, vec![1, 2]);
    assert_eq!(p.starts[0].placements[0].cpus, 1);
    // Half the CPUs: half the memory.
    assert_eq!(p.starts[0].placements[0].mem_mib, 4096);
    assert_eq!(p.waiting(3).unwrap().reason, "Resources");
    assert!(p.waiting(4).is_some());
    assert!(p.reservations.iter().all(|r| r.job_id != 4));
    // Memory: a 6 GiB job and a 4 GiB job do not fit together on 8 GiB.
    let mem_job = |id: i64, mib: u64| PendingJob {
        cpus_per_node: 1,
        mem_per_node_mib: Some(mib),
        ..job(id, 1, 0)
    };
    let snap = Snapshot {
        now: 100,
        nodes: vec![n],
        pending: vec![mem_job(1, 6144), mem_job(2, 4096), mem_job(3, 2048)],
        ..Default::default()
    };
    let p = plan(&snap, &PlannerConfig::default());
    let started: Vec<i64> = p.starts.iter().map(|s| s.job_id).collect();
    assert_eq!(started, vec![1, 3]);
    assert_eq!(p.waiting(2).unwrap().reason, "Resources");
}

/// `--constraint=[ib|fast]` gives a gang nodes of one kind only; `fast*2` at least two
/// fast nodes among more.
#[test]
fn constraints_with_brackets_and_counts_span_the_gang() {
    let with = |id: i64, features: &[&str]| NodeView {
        features: features.iter().map(|f| f.to_string()).collect(),
        ..node(id, 8)
    };
    let nodes = vec![
        with(1, &["ib"]),
        with(2, &["fast"]),
        with(3, &["ib", "fast"]),
        with(4, &["fast"]),
        with(5, &[]),
    ];
    let snap = Snapshot {
        now: 100,
        nodes,
        // Node 1 is busy, so only one node is `ib` and free: the gang must be `fast`.
        running: vec![busy(99, 1, 0..8, 5000)],
        pending: vec![
            PendingJob {
                constraint: Some("[ib|fast]".into()),
                ..job(1, 2, 1)
            },
            PendingJob {
                constraint: Some("fast*2".into()),
                ..job(2, 3, 1)
            },
        ],
        ..Default::default()
    };
    let p = plan(&snap, &PlannerConfig::default());
    assert_eq!(plan_with(&snap, &PlannerConfig::default(), true), p);
    let nodes_of = |id: i64| -> Vec<i64> {
        p.starts
            .iter()
            .find(|s| s.job_id == id)
            .unwrap()
            .placements
            .iter()
            .map(|pl| pl.node_id)
            .collect()
    };
    let gang = nodes_of(1);
    assert!(gang.iter().all(|n| [2, 3, 4].contains(n)), "{gang:?}");
    let counted = nodes_of(2);
    assert_eq!(counted.len(), 3);
    assert!(
        counted.iter().filter(|n| [2, 3, 4].contains(*n)).count() >= 2,
        "{counted:?}"
    );
}

/// Lower `Weight` nodes are filled first, before best fit: a 1-GPU job goes to the
/// weight-1 node with 8 free GPUs rather than the weight-10 node with 1.
#[test]
fn node_weight_orders_placement_before_best_fit() {
    let mut light = node(1, 8);
    light.weight = 1;
    let mut heavy = node(2, 1);
    heavy.weight = 10;
    let snap = Snapshot {
        now: 100,
        nodes: vec![heavy, light],
        pending: vec![job(1, 1, 1)],
        ..Default::default()
    };
    let p = plan(&snap, &PlannerConfig::default());
    assert_eq!(p.starts[0].placements[0].node_id, 1);
    assert_eq!(plan_with(&snap, &PlannerConfig::default(), true), p);
}

/// `-w` gets the named nodes (and others by best fit when it wants more); `-x` never
/// gets the excluded ones.
#[test]
fn nodelist_and_exclude_pick_the_right_nodes() {
    let nodes: Vec<NodeView> = (1..=4).map(|i| node(i, 8)).collect();
    let snap = Snapshot {
        now: 100,
        nodes,
        pending: vec![
            PendingJob {
                nodelist: vec!["n3".into()],
                ..job(1, 1, 1)
            },
            PendingJob {
                nodelist: vec!["n4".into()],
                ..job(2, 2, 1)
            },
            PendingJob {
                exclude: vec!["n1".into(), "n2".into(), "n3".into()],
                ..job(3, 1, 1)
            },
        ],
        ..Default::default()
    };
    let p = plan(&snap, &PlannerConfig::default());
    let nodes_of = |id: i64| -> Vec<i64> {
        p.starts
            .iter()
            .find(|s| s.job_id == id)
            .unwrap()
            .placements
            .iter()
            .map(|pl| pl.node_id)
            .collect()
    };
    assert_eq!(nodes_of(1), vec![3]);
    let two = nodes_of(2);
    assert_eq!(two.len(), 2);
    assert!(two.contains(&4), "{two:?}");
    assert_eq!(nodes_of(3), vec![4]);
}

/// A maintenance reservation of node 1 from `now + 100` for an hour: a plain 1-hour job
/// cannot start there now (it would overlap) and waits for the window's end, a 50-second
/// job backfills before it, the reservation's own job waits with reason `Reservation`
/// expecting the window's start, and starts once the window is open. With `--time-min`,
/// a long job starts now with its limit cut to end before the window.
#[test]
fn advance_reservations_keep_their_window_free() {
    let resv = |start: i64| AdvanceReservation {
        name: "maint".into(),
        start,
        end: start + 3600,
        nodes: vec![ReservedNode {
            node_id: 1,
            gpus: None,
        }],
        maint: true,
        ..Default::default()
    };
    let long = job(1, 1, 1);
    let short = PendingJob {
        time_limit: Some(50),
        ..job(2, 1, 1)
    };
    let member = PendingJob {
        reservation: Some("maint".into()),
        time_limit: Some(600),
        ..job(3, 1, 1)
    };
    let snap = Snapshot {
        now: 1000,
        nodes: vec![node(1, 8)],
        pending: vec![long.clone(), short.clone(), member.clone()],
        advance_reservations: vec![resv(1100)],
        ..Default::default()
    };
    let p = plan(&snap, &PlannerConfig::default());
    assert_eq!(plan_with(&snap, &PlannerConfig::default(), true), p);
    let started: Vec<i64> = p.starts.iter().map(|s| s.job_id).collect();
    assert_eq!(started, vec![2]);
    assert_eq!(p.waiting(1).unwrap().expected_start, Some(4700));
    let waiting = p.waiting(3).unwrap();
    assert_eq!(waiting.reason, "Reservation");
    assert_eq!(waiting.expected_start, Some(1100));
    // The window open: the member starts, the plain job still waits.
    let snap = Snapshot {
        now: 1200,
        advance_reservations: vec![resv(1100)],
        ..snap
    };
    let p = plan(&snap, &PlannerConfig::default());
    let started: Vec<i64> = p.starts.iter().map(|s| s.job_id).collect();
    assert_eq!(started, vec![3]);
    assert_eq!(p.waiting(1).unwrap().reason, "Resources");
    // A reservation that is gone: its jobs wait, saying so.
    let snap = Snapshot {
        advance_reservations: vec![],
        pending: vec![member],
        ..snap
    };
    let p = plan(&snap, &PlannerConfig::default());
    assert_eq!(p.waiting(3).unwrap().reason, "ReservationDeleted");
    // `--time-min`: cut to the 100 s before the window.
    let snap = Snapshot {
        now: 1000,
        nodes: vec![node(1, 8)],
        pending: vec![PendingJob {
            time_min: Some(60),
            ..long
        }],
        advance_reservations: vec![resv(1100)],
        ..Default::default()
    };
    let p = plan(&snap, &PlannerConfig::default());
    assert_eq!(p.starts.len(), 1);
    assert_eq!(p.starts[0].time_limit, Some(100));
    let _ = short;
}

/// Topology: on a node reporting two domains of 4 GPUs (0–3, 4–7) with GPU 0 held, a
/// 4-GPU job gets the whole free domain (not 1–4), a 2-GPU job the domain with the fewest
/// usable GPUs that holds it (best fit), and a job larger than any domain takes the
/// emptiest domain first. Without topology the lowest indices are taken.
#[test]
fn gpus_come_from_one_topology_domain_when_they_fit() {
    let gpus_of = |p: &Plan, id: i64| -> Vec<u32> {
        p.starts.iter().find(|s| s.job_id == id).unwrap().placements[0]
            .gpus
            .clone()
    };
    let domains: HashMap<i64, Vec<(u32, u32)>> =
        HashMap::from([(1, (0..8).map(|g| (g, g / 4)).collect())]);
    let mut four = job(1, 1, 4);
    four.adjust = 100;
    let snap = Snapshot {
        now: 0,
        nodes: vec![node(1, 8)],
        running: vec![busy(90, 1, 0..1, 1000)],
        pending: vec![four.clone(), job(2, 1, 2)],
        gpu_domains: domains.clone(),
        ..Default::default()
    };
    let p = plan(&snap, &PlannerConfig::default());
    assert_eq!(gpus_of(&p, 1), [4, 5, 6, 7]);
    assert_eq!(gpus_of(&p, 2), [1, 2]);

    let plain = Snapshot {
        gpu_domains: HashMap::new(),
        ..snap.clone()
    };
    let p = plan(&plain, &PlannerConfig::default());
    assert_eq!(gpus_of(&p, 1), [1, 2, 3, 4]);

    let six = Snapshot {
        pending: vec![job(3, 1, 6)],
        running: vec![busy(90, 1, 0..1, 1000), busy(91, 1, 4..5, 1000)],
        ..snap
    };
    // Domain 0 has 3 usable (1–3), domain 1 has 3 (5–7): equal, so domain order.
    let p = plan(&six, &PlannerConfig::default());
    assert_eq!(gpus_of(&p, 3), [1, 2, 3, 5, 6, 7]);
}

#[test]
fn pick_gpus_spans_as_few_domains_as_it_can() {
    let d = [0b0000_1111u128, 0b0011_0000, 0b1100_0000];
    // Usable: GPU 0 in domain 0, 4–5 in domain 1, 6–7 in domain 2.
    let usable = 0b1111_0001u128;
    // 3 GPUs fit no domain: the emptiest domains first (1, then 2), not GPU 0.
    assert_eq!(pick_gpus(usable, 3, &d), 0b0111_0000);
    // 2 GPUs fit domains 1 and 2 (2 usable each): the first of them, not GPUs 0 and 4.
    assert_eq!(pick_gpus(usable, 2, &d), 0b0011_0000);
    // 1 GPU: the domain with the fewest usable that holds it (domain 0).
    assert_eq!(pick_gpus(usable, 1, &d), 0b0000_0001);
    // No domains: the lowest.
    assert_eq!(pick_gpus(usable, 3, &[]), 0b0011_0001);
}

/// A generated TRES limit set: cpu, gpu, node (each maybe none).
type TresCase = (Option<u64>, Option<u64>, Option<u64>);

/// A generated QOS's limits: MaxTRESPerUser, MaxTRESPerAccount, GrpTRES, MaxJobsPerUser,
/// MaxWall (a pending job of the QOS, in turn, and seconds added to its time limit, so
/// that some jobs are right at the limit, a second over or a second under).
type QosLimitCase = (
    TresCase,
    TresCase,
    TresCase,
    Option<u32>,
    Option<(usize, i64)>,
);

fn arb_tres() -> impl Strategy<Value = TresCase> {
    (
        proptest::option::weighted(0.4, 0u64..16),
        proptest::option::weighted(0.4, 0u64..14),
        proptest::option::weighted(0.4, 0u64..5),
    )
}

fn arb_qos_limits() -> impl Strategy<Value = QosLimitCase> {
    (
        arb_tres(),
        arb_tres(),
        arb_tres(),
        proptest::option::weighted(0.3, 0u32..4),
        proptest::option::weighted(0.3, (0usize..30, -1i64..2)),
    )
}

fn tres((cpu, gpu, node): TresCase) -> TresLimits {
    TresLimits { cpu, gpu, node }
}

/// The users of generated jobs (pending first, then running), by index.
const PROP_USERS: [&str; 3] = ["alice", "bob", "carol"];

/// A generated cluster with QOS limits on normal, high and low, each job (pending and
/// running) given one of three users, each running job some CPUs and nodes, and the
/// pending jobs picked by `unlimited` (in turn) no time limit. `open`: every node is up
/// and no job names a partition or a constraint, so that more of them start.
fn build_limited_cluster(
    case: &ClusterCase,
    limits: &[QosLimitCase; 3],
    users: &[u8],
    running_size: &[(u32, u32)],
    unlimited: &[bool],
    open: bool,
) -> Snapshot {
    let (nodes, running, shapes, jobs, _) = case;
    let mut snap = build_cluster(nodes, running, shapes, jobs);
    if open {
        for n in &mut snap.nodes {
            n.available = true;
        }
        for j in &mut snap.pending {
            j.partition_nodes.clear();
            j.constraint = None;
        }
    }
    let user = |k: usize| PROP_USERS[usize::from(users[k % users.len()]) % PROP_USERS.len()];
    for (k, j) in snap.pending.iter_mut().enumerate() {
        j.user = user(k).to_string();
        if unlimited[k % unlimited.len()] {
            j.time_limit = None;
        }
    }
    let pending = snap.pending.len();
    for (k, r) in snap.running_jobs.iter_mut().enumerate() {
        r.user = user(pending + k).to_string();
        let (cpus, nodes) = running_size[k % running_size.len()];
        r.cpus = cpus;
        r.nodes = nodes;
    }
    for (qos, (per_user, per_account, grp, max_jobs, max_wall)) in
        ["normal", "high", "low"].into_iter().zip(limits.iter())
    {
        snap.qos_limits.insert(
            qos.to_string(),
            QosLimits {
                max_tres_per_user: tres(*per_user),
                max_tres_per_account: tres(*per_account),
                grp_tres: tres(*grp),
                max_jobs_per_user: *max_jobs,
                max_wall: max_wall.map(|(k, delta)| {
                    let mine: Vec<&PendingJob> =
                        snap.pending.iter().filter(|j| j.qos == qos).collect();
                    let base = mine
                        .get(k % mine.len().max(1))
                        .and_then(|j| j.time_limit)
                        .unwrap_or(100);
                    (base + delta).max(0)
                }),
            },
        );
    }
    snap
}

proptest! {
    /// QOS limits hold: in every scope a QOS limit counts (the QOS per user for
    /// MaxTRESPerUser and MaxJobsPerUser, per account for MaxTRESPerAccount, the whole
    /// QOS for GrpTRES) where this pass starts anything, the running jobs plus the
    /// starts (one job per start, an array task included; its CPUs, the GPUs actually
    /// placed, whole-node jobs included, and its nodes) stay within the limit. So a start
    /// never takes a scope over a limit, nor adds to one the running jobs alone already
    /// had over it. And no job starts with a time limit above its QOS's MaxWall (or none).
    #[test]
    fn qos_limits_are_respected(
        (case, limits, users, running_size, unlimited, open, (backfill, depth, submit)) in (
            arb_cluster(),
            [arb_qos_limits(), arb_qos_limits(), arb_qos_limits()],
            proptest::collection::vec(0u8..3, 1..48),
            proptest::collection::vec((0u32..8, 1u32..3), 1..12),
            proptest::collection::vec(prop::bool::weighted(0.15), 1..8),
            prop::bool::weighted(0.7),
            (prop::bool::weighted(0.85), 0usize..6, any::<bool>()),
        )
    ) {
        let snap =
            build_limited_cluster(&case, &limits, &users, &running_size, &unlimited, open);
        let config = PlannerConfig {
            backfill,
            backfill_depth: depth,
            order: if submit { QueueOrder::Submit } else { QueueOrder::Multifactor },
            ..PlannerConfig::default()
        };
        let p = plan(&snap, &config);
        // (scope, qos, user or account or "") → (started here, [jobs, cpus, gpus, nodes]).
        let mut held: HashMap<(&str, &str, &str), (bool, [u64; 4])> = HashMap::new();
        let mut charge = |qos, user, account, started: bool, v: [u64; 4]| {
            for key in [("user", qos, user), ("account", qos, account), ("group", qos, "")] {
                let slot = held.entry(key).or_default();
                slot.0 |= started;
                for (a, b) in slot.1.iter_mut().zip(v) {
                    *a += b;
                }
            }
        };
        for r in &snap.running_jobs {
            charge(
                r.qos.as_str(),
                r.user.as_str(),
                r.account.as_str(),
                false,
                [1, u64::from(r.cpus), u64::from(r.gpus), u64::from(r.nodes)],
            );
        }
        for st in &p.starts {
            let j = snap.pending.iter().find(|j| j.id == st.job_id).unwrap();
            let limits = &snap.qos_limits[&j.qos];
            if let Some(wall) = limits.max_wall {
                prop_assert!(
                    j.time_limit.is_some_and(|t| t <= wall),
                    "job {} started with time limit {:?} over {} MaxWall {}",
                    j.id, j.time_limit, j.qos, wall
                );
            }
            let gpus: u64 = st.placements.iter().map(|pl| pl.gpus.len() as u64).sum();
            charge(
                j.qos.as_str(),
                j.user.as_str(),
                j.account.as_str(),
                true,
                [1, u64::from(j.cpus), gpus, st.placements.len() as u64],
            );
        }
        for ((scope, qos, who), (started, [jobs, cpus, gpus, node_count])) in &held {
            if !started {
                continue;
            }
            let limits = &snap.qos_limits[*qos];
            let (max, max_jobs) = match *scope {
                "user" => (&limits.max_tres_per_user, limits.max_jobs_per_user),
                "account" => (&limits.max_tres_per_account, None),
                _ => (&limits.grp_tres, None),
            };
            for (what, used, limit) in [
                ("jobs", *jobs, max_jobs.map(u64::from)),
                ("cpu", *cpus, max.cpu),
                ("gpu", *gpus, max.gpu),
                ("node", *node_count, max.node),
            ] {
                if let Some(limit) = limit {
                    prop_assert!(
                        used <= limit,
                        "QOS {qos}, {scope} {who:?}: {what} {used} over the limit {limit}"
                    );
                }
            }
        }
    }
}

/// Shards: a node offering its 2 GPUs as 4 shards each (devices 0–7) gives them only to
/// jobs asking for shards, several jobs per GPU; GPU jobs never get shards, and wait
/// when the whole GPUs are taken.
#[test]
fn shard_devices_go_only_to_shard_jobs() {
    let mut gpu_job = job(1, 1, 2);
    gpu_job.adjust = 10;
    let mut waits = job(2, 1, 1);
    waits.adjust = 5;
    let shard = |id| PendingJob {
        shards: true,
        ..job(id, 1, 3)
    };
    let snap = Snapshot {
        now: 0,
        nodes: vec![node(1, 2), node(2, 8)],
        pending: vec![gpu_job, waits, shard(3), shard(4)],
        shards: HashMap::from([(2, (0..8).collect())]),
        ..Default::default()
    };
    let p = plan(&snap, &PlannerConfig::default());
    let on = |id: i64| {
        p.starts
            .iter()
            .find(|s| s.job_id == id)
            .map(|s| (s.placements[0].node_id, s.placements[0].gpus.clone()))
    };
    assert_eq!(on(1), Some((1, vec![0, 1])));
    assert_eq!(on(2), None, "a GPU job does not take shards");
    assert_eq!(p.waiting(2).unwrap().reason, "Resources");
    assert_eq!(on(3), Some((2, vec![0, 1, 2])));
    assert_eq!(on(4), Some((2, vec![3, 4, 5])));
    // A shard job on a cluster without shards can never run.
    let none = Snapshot {
        pending: vec![shard(5)],
        shards: HashMap::new(),
        ..snap
    };
    let p = plan(&none, &PlannerConfig::default());
    assert!(p.starts.is_empty());
}
