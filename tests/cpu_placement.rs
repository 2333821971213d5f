//! CPUs are placed like GPUs (issue 11), end to end: concrete CPU ids per node, never one
//! CPU to two jobs, a job that waits for CPUs says `Resources`, and `scontrol show job`
//! says what the job holds.
//!

use crate::cluster::{Options, TestCluster};
use berth_core::state::JobState;
use std::collections::BTreeSet;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_one_cpu_jobs_share_a_two_cpu_node_while_a_third_waits() {
    let c = TestCluster::start_with_worker_args(
        Options {
            workers: 1,
            gpus: "4xH100",
            ..Default::default()
        },
        &["--simulate-cpus", "2"],
    )
    .await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(c.submit("#!/bin/bash\nsleep 60\n", &["-c", "1"]).await);
    }
    // The first two run side by side, each on a CPU of its own.
    let mut cpus = BTreeSet::new();
    for id in &ids[..2] {
        let job = c.wait_for(*id, 60, |j| j.state == JobState::Running).await;
        assert_eq!(job.allocations.len(), 1);
        assert_eq!(job.allocations[0].node, "node-1");
        assert_eq!(job.allocations[0].cpus.len(), 1, "{:?}", job.allocations);
        assert_eq!(job.num_cpus, 1);
        cpus.insert(job.allocations[0].cpus[0]);
    }
    assert_eq!(cpus, BTreeSet::from([0, 1]), "one CPU each, none shared");
    // The third waits for a CPU.
    let third = c
        .wait_for(ids[2], 30, |j| j.reason.as_deref() == Some("Resources"))
        .await;
    assert_eq!(third.state, JobState::Pending);
    assert!(third.allocations.is_empty());

    let (code, out, err) = c.cli(&c.token, &["scontrol", "show", "job", &ids[0].to_string()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("NumCPUs=1 "), "{out}");
    assert!(out.contains("AllocTRES=cpu=1,"), "{out}");
    assert!(out.contains("CPU_IDs="), "{out}");

    // When one ends, the third gets its CPU.
    let freed = c.job(ids[0]).await.allocations[0].cpus.clone();
    let (code, _, err) = c.cli(&c.token, &["cancel", &ids[0].to_string()]);
    assert_eq!(code, 0, "{err}");
    let third = c
        .wait_for(ids[2], 60, |j| j.state == JobState::Running)
        .await;
    assert_eq!(third.allocations[0].cpus, freed);
    for id in &ids[1..] {
        c.cli(&c.token, &["cancel", &id.to_string()]);
    }
}

/// CPUs come from the topology domain of the job's GPUs: on a node of two domains (GPUs
/// 0-3 with CPU ids 0-3, GPUs 4-7 with CPU ids 4-7), a job on the second domain's GPUs
/// gets CPUs 4.. although lower ids are free.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cpus_come_from_the_domain_of_the_jobs_gpus() {
    let c = TestCluster::start_with_worker_args(
        Options {
            workers: 1,
            gpus: "8xH100/2",
            ..Default::default()
        },
        &["--simulate-cpus", "8"],
    )
    .await;
    let first = c
        .submit("#!/bin/bash\nsleep 60\n", &["--gpus=4", "-c", "2"])
        .await;
    let first = c
        .wait_for(first, 60, |j| j.state == JobState::Running)
        .await;
    let second = c
        .submit("#!/bin/bash\nsleep 60\n", &["--gpus=4", "-c", "2"])
        .await;
    let second = c
        .wait_for(second, 60, |j| j.state == JobState::Running)
        .await;
    let domain_of = |gpus: &[u32]| -> u32 {
        let d = gpus[0] / 4;
        assert!(gpus.iter().all(|g| g / 4 == d), "one domain: {gpus:?}");
        d
    };
    for job in [&first, &second] {
        let a = &job.allocations[0];
        let d = domain_of(&a.gpus);
        assert_eq!(a.cpus.len(), 2, "{a:?}");
        assert!(
            a.cpus.iter().all(|cpu| cpu / 4 == d),
            "CPUs {:?} of GPUs {:?}' domain {d}",
            a.cpus,
            a.gpus
        );
    }
    assert_ne!(
        domain_of(&first.allocations[0].gpus),
        domain_of(&second.allocations[0].gpus)
    );
    c.cli(
        &c.token,
        &["cancel", &first.id.to_string(), &second.id.to_string()],
    );
}
