//! Cores of several hardware threads (issue 29): on such a node a job holds whole cores,
//! with `--hint=nomultithread` (threads per core 1) a core per CPU it asks for, and the
//! pass's shortcuts decide what the plain algorithms decide.

use super::*;

/// A node of `cores` cores of `threads` threads and 1 GiB per CPU.
fn threaded(id: i64, cores: u32, threads: u32) -> NodeView {
    NodeView {
        cpus: cores * threads,
        memory_mib: 1024 * u64::from(cores * threads),
        threads_per_core: threads,
        ..node(id, 0)
    }
}

fn cpu_job(id: i64, cpus: u32, threads: Option<u32>) -> PendingJob {
    PendingJob {
        cpus_per_node: cpus,
        threads_per_core: threads,
        ..job(id, 1, 0)
    }
}

/// `-c2 --hint=nomultithread` holds two cores (4 CPUs) of a node of 2 threads per core, so
/// on 2 cores a one-CPU job waits beside it; without the hint `-c2` holds one core, and
/// `-c1` a whole core too, as Slurm's `CR_Core` gives it; memory asked for by no one is
/// in proportion to the CPUs held.
#[test]
fn jobs_hold_whole_cores_and_nomultithread_a_core_per_cpu() {
    let snap = Snapshot {
        now: 100,
        nodes: vec![threaded(1, 2, 2)],
        pending: vec![cpu_job(1, 2, Some(1)), cpu_job(2, 1, None)],
        ..Default::default()
    };
    let p = plan(&snap, &PlannerConfig::default());
    assert_eq!(p.starts.len(), 1);
    assert_eq!(p.starts[0].job_id, 1);
    assert_eq!(p.starts[0].placements[0].cpus, 4);
    assert_eq!(p.starts[0].placements[0].mem_mib, 4096);
    assert_eq!(p.waiting(2).unwrap().reason, "Resources");

    let snap = Snapshot {
        now: 100,
        nodes: vec![threaded(1, 2, 2)],
        pending: vec![
            cpu_job(1, 2, None),
            cpu_job(2, 1, None),
            cpu_job(3, 1, None),
        ],
        ..Default::default()
    };
    let p = plan(&snap, &PlannerConfig::default());
    let held: Vec<(i64, u32)> = p
        .starts
        .iter()
        .map(|s| (s.job_id, s.placements[0].cpus))
        .collect();
    assert_eq!(held, vec![(1, 2), (2, 2)]);
    assert_eq!(p.waiting(3).unwrap().reason, "Resources");

    // One thread per core on a node of one thread per core changes nothing; a node too
    // small in cores for the hinted job never holds it, though its CPUs would do.
    let snap = Snapshot {
        now: 100,
        nodes: vec![threaded(1, 3, 1)],
        pending: vec![cpu_job(1, 3, Some(1))],
        ..Default::default()
    };
    let p = plan(&snap, &PlannerConfig::default());
    assert_eq!(p.starts[0].placements[0].cpus, 3);
    let snap = Snapshot {
        now: 100,
        nodes: vec![threaded(1, 2, 2)],
        pending: vec![cpu_job(1, 3, Some(1))],
        ..Default::default()
    };
    let p = plan(&snap, &PlannerConfig::default());
    assert!(p.starts.is_empty());
    assert!(p.reservations.is_empty());
}

/// Every other generated node has two threads per core and every third job asks for one
/// thread per core.
fn with_threads(mut snap: Snapshot) -> Snapshot {
    let threaded: Vec<i64> = snap
        .nodes
        .iter()
        .filter(|n| n.id % 2 == 0)
        .map(|n| n.id)
        .collect();
    for n in snap.nodes.iter_mut().filter(|n| threaded.contains(&n.id)) {
        n.threads_per_core = 2;
    }
    // Running jobs there hold whole cores.
    for a in snap
        .running
        .iter_mut()
        .filter(|a| threaded.contains(&a.node_id))
    {
        a.cpus = a.cpus.div_ceil(2) * 2;
    }
    for j in snap.pending.iter_mut().filter(|j| j.id % 3 == 0) {
        j.threads_per_core = Some(1);
    }
    snap
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// With cores of two threads on some nodes and one thread per core asked by some
    /// jobs, the pass's shortcuts decide what the plain algorithms decide; a start holds
    /// whole cores on a threaded node (an even count, at least a core per CPU asked with
    /// one thread per core) and never more CPUs than a node has.
    #[test]
    fn whole_cores_are_placed_and_fast_and_plain_plans_agree(
        (nodes, running, shapes, jobs, (backfill, depth, submit)) in arb_cluster()
    ) {
        let snap = with_threads(with_cpus_memory_and_reservations(
            build_cluster(&nodes, &running, &shapes, &jobs),
        ));
        let config = PlannerConfig {
            backfill,
            backfill_depth: depth,
            order: if submit { QueueOrder::Submit } else { QueueOrder::Multifactor },
            ..PlannerConfig::default()
        };
        let p = plan_with(&snap, &config, false);
        prop_assert_eq!(&p, &plan_with(&snap, &config, true));
        for n in &snap.nodes {
            let mut cpus: u64 = snap
                .running
                .iter()
                .filter(|a| a.node_id == n.id)
                .map(|a| u64::from(a.cpus))
                .sum();
            let mut started = false;
            for st in &p.starts {
                let j = snap.pending.iter().find(|j| j.id == st.job_id).unwrap();
                for pl in st.placements.iter().filter(|pl| pl.node_id == n.id) {
                    started = true;
                    if j.time_limit != Some(0) {
                        cpus += u64::from(pl.cpus);
                    }
                    if n.threads_per_core == 2 && !(j.exclusive || j.whole_node) {
                        prop_assert_eq!(pl.cpus % 2, 0, "job {} on {}", j.id, n.name);
                        let per_core = if j.threads_per_core == Some(1) { 1 } else { 2 };
                        prop_assert!(
                            pl.cpus / 2 >= j.cpus_per_node.max(1).div_ceil(per_core),
                            "job {} on {}: {} CPUs", j.id, n.name, pl.cpus
                        );
                    } else {
                        prop_assert!(pl.cpus >= j.cpus_per_node.max(1));
                    }
                }
            }
            if started && n.cpus > 0 {
                prop_assert!(cpus <= u64::from(n.cpus), "{}: {cpus} CPUs of {}", n.name, n.cpus);
            }
        }
    }
}
