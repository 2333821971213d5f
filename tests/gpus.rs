//! GPUs seen from the node: per-job usage from the workers' samples (`GET
//! /v1/jobs/{id}/stats`, `berth stat`) and GPU faults that drain a node.

use crate::cluster::{berth_bin, Options, TestCluster};
use berth_core::state::{JobState, NodeState};
use berth_core::stats::{JobGpuSamples, JobStats};
use berth_core::wire::NodeList;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_job_has_gpu_stats_that_are_kept_after_it_ends() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let id = c
        .submit("#!/bin/bash\nsleep 300\n", &["--gres=gpu:2", "-t", "5"])
        .await;
    let job = c.wait_for(id, 60, |j| j.state == JobState::Running).await;
    // Samples arrive with every sync (at least every 10 s): wait for two per GPU, so that
    // energy (power between samples) is counted.
    let deadline = Instant::now() + Duration::from_secs(60);
    let stats = loop {
        let stats: JobStats = c.get(&format!("/v1/jobs/{id}/stats")).await;
        if stats.gpus.len() == 2 && stats.gpus.iter().all(|g| g.samples >= 2) {
            break stats;
        }
        assert!(Instant::now() < deadline, "no samples: {stats:?}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let held: Vec<u32> = job.allocations[0].gpus.clone();
    assert_eq!(stats.gpus.iter().map(|g| g.index).collect::<Vec<_>>(), held);
    // Simulated GPUs held by a job run at 70-100 %, with most of their memory.
    let avg = stats.avg_utilization_pct.unwrap();
    assert!((70.0..=100.0).contains(&avg), "{stats:?}");
    assert!(stats.peak_memory_mib > 40_000, "{stats:?}");
    assert!(stats.energy_joules > 0.0, "{stats:?}");

    // The time series (the Job page's charts): a point per GPU the job holds so far, with
    // what the stats saw; 10 s apart at least.
    let series: JobGpuSamples = c.get(&format!("/v1/jobs/{id}/gpu-samples")).await;
    assert_eq!(series.job_id, id);
    assert_eq!(series.step_seconds, 10, "{series:?}");
    assert_eq!(
        series.gpus.iter().map(|g| g.index).collect::<Vec<_>>(),
        held,
        "{series:?}"
    );
    for g in &series.gpus {
        assert!(!g.points.is_empty(), "{series:?}");
        for p in &g.points {
            assert!((70.0..=100.0).contains(&p.utilization_pct), "{series:?}");
            assert!(p.memory_used_mib > 40_000, "{series:?}");
            assert!(p.power_w.is_some_and(|w| w > 0.0), "{series:?}");
        }
        let times: Vec<_> = g.points.iter().map(|p| p.time).collect();
        assert!(times.windows(2).all(|w| w[0] < w[1]), "{series:?}");
    }
    // `since` later than every sample: nothing; bad parameters name themselves.
    let later = (chrono::Utc::now() + chrono::Duration::hours(1)).to_rfc3339();
    let none: JobGpuSamples = c
        .get(&format!(
            "/v1/jobs/{id}/gpu-samples?since={}",
            later.replace('+', "%2B")
        ))
        .await;
    assert!(none.gpus.is_empty(), "{none:?}");
    for (query, field) in [
        ("points=5", "points"),
        ("run=3", "run"),
        ("since=-4714-11-23T00:00:00Z", "since"),
    ] {
        let (s, p) = c
            .call(
                reqwest::Method::GET,
                &format!("/v1/jobs/{id}/gpu-samples?{query}"),
                Some(&c.token),
                None,
            )
            .await;
        assert_eq!((s, p["field"].as_str()), (400, Some(field)), "{p}");
    }

    // `berth stat` prints a line per GPU and the total.
    let out = std::process::Command::new(berth_bin())
        .args(["stat", &id.to_string()])
        .env("BERTH_URL", &c.url)
        .env("BERTH_TOKEN", &c.token)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 4, "{text}");
    assert!(text.lines().last().unwrap().contains("total"), "{text}");

    // Kept after the job ends, for accounting.
    c.http
        .post(format!("{}/v1/jobs/{id}/cancel", c.url))
        .bearer_auth(&c.token)
        .send()
        .await
        .unwrap();
    c.wait_ended(id, 30).await;
    let after: JobStats = c.get(&format!("/v1/jobs/{id}/stats")).await;
    assert_eq!(after.gpus.len(), 2);
    assert!(after.energy_joules >= stats.energy_joules);
    let kept: JobGpuSamples = c.get(&format!("/v1/jobs/{id}/gpu-samples")).await;
    assert_eq!(kept.gpus.len(), 2, "{kept:?}");
}

/// Writes a simulated worker's fault-injection file.
fn inject(c: &TestCluster, node: &str, faults: &str) {
    let dir = c.dir.join(node);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("inject-gpu-faults"), faults).unwrap();
}

async fn wait_node(c: &TestCluster, name: &str, done: impl Fn(&berth_core::wire::Node) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let nodes: NodeList = c.get("/v1/nodes").await;
        let node = nodes.items.iter().find(|n| n.name == name).unwrap();
        if done(node) {
            return;
        }
        assert!(Instant::now() < deadline, "{node:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn xid_errors_and_lost_gpus_drain_their_node_with_a_reason() {
    let c = TestCluster::start(Options::default()).await;
    inject(&c, "node-1", "xid 3 79\n");
    inject(&c, "node-2", "lost 5\n");
    wait_node(&c, "node-1", |n| {
        n.state == NodeState::Drained && n.reason.as_deref() == Some("gpu 3: XID 79")
    })
    .await;
    wait_node(&c, "node-2", |n| {
        n.state == NodeState::Drained && n.reason.as_deref() == Some("gpu 5: lost")
    })
    .await;
    // sinfo shows why.
    let out = std::process::Command::new(berth_bin())
        .args(["nodes", "-R"])
        .env("BERTH_URL", &c.url)
        .env("BERTH_TOKEN", &c.token)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("gpu 3: XID 79"), "{text}");
    // Nothing new lands on a drained node.
    let id = c.submit("#!/bin/bash\ntrue\n", &["--gres=gpu:1"]).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(c.job(id).await.state, JobState::Pending);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gpu_stuck_at_zero_under_a_job_drains_the_node_and_the_job_keeps_running() {
    let c = TestCluster::start_with_worker_args(
        Options {
            workers: 1,
            ..Default::default()
        },
        &["--gpu-stuck-seconds", "1"],
    )
    .await;
    let all: String = (0..8).map(|i| format!("stuck {i}\n")).collect();
    inject(&c, "node-1", &all);
    let id = c
        .submit("#!/bin/bash\nsleep 300\n", &["--gres=gpu:1", "-t", "5"])
        .await;
    let job = c.wait_for(id, 60, |j| j.state == JobState::Running).await;
    let gpu = job.allocations[0].gpus[0];
    let reason = format!("gpu {gpu}: stuck at 0% under a job");
    wait_node(&c, "node-1", |n| {
        n.state == NodeState::Draining && n.reason.as_deref() == Some(reason.as_str())
    })
    .await;
    assert_eq!(c.job(id).await.state, JobState::Running);
}

/// A node reporting GPU topology (`8xH100/2`: GPUs 0–3 and 4–7 in two domains, as the two
/// NUMA nodes of an HGX board): the node view shows each GPU's domain, and a 4-GPU job
/// placed after a 1-GPU job gets the untouched domain, not GPUs 1–4.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_get_gpus_of_one_topology_domain() {
    let c = TestCluster::start(Options {
        workers: 1,
        gpus: "8xH100/2",
        ..Default::default()
    })
    .await;
    let nodes: NodeList = c.get("/v1/nodes").await;
    let domains: Vec<Option<u32>> = nodes.items[0].gpus.iter().map(|g| g.domain).collect();
    assert_eq!(domains, [0, 0, 0, 0, 1, 1, 1, 1].map(Some).to_vec());
    let one = c
        .submit("#!/bin/bash\nsleep 300\n", &["--gres=gpu:1", "-t", "5"])
        .await;
    let one = c.wait_for(one, 60, |j| j.state == JobState::Running).await;
    assert_eq!(one.allocations[0].gpus, [0]);
    let four = c
        .submit("#!/bin/bash\nsleep 300\n", &["--gres=gpu:4", "-t", "5"])
        .await;
    let four = c.wait_for(four, 60, |j| j.state == JobState::Running).await;
    assert_eq!(four.allocations[0].gpus, [4, 5, 6, 7]);
}

/// GPU shards (`--simulate-gpus 2xH100:shards=4`: each GPU offered as 4 shards): jobs
/// asking `--gres=shard:2` share the GPUs, two per GPU, each seeing its GPU in
/// `CUDA_VISIBLE_DEVICES`; a fifth waits; a whole-GPU request is refused at submission,
/// as no node offers whole GPUs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shard_jobs_share_gpus() {
    let c = TestCluster::start(Options {
        workers: 1,
        gpus: "2xH100:shards=4",
        ..Default::default()
    })
    .await;
    let nodes: NodeList = c.get("/v1/nodes").await;
    let kinds: Vec<(berth_core::wire::GpuKind, Option<u32>)> = nodes.items[0]
        .gpus
        .iter()
        .map(|g| (g.kind, g.parent))
        .collect();
    assert_eq!(kinds.len(), 8);
    assert!(kinds
        .iter()
        .enumerate()
        .all(|(i, k)| *k == (berth_core::wire::GpuKind::Shard, Some(i as u32 / 4))));
    match c.try_submit("#!/bin/bash\ntrue\n", &["--gres=gpu:1"]).await {
        Err((422, p)) => assert_eq!(p.field.as_deref(), Some("--gres"), "{p:?}"),
        other => panic!("a GPU job on a shards-only cluster: {other:?}"),
    }
    let script = "#!/bin/bash\necho visible=$CUDA_VISIBLE_DEVICES\nsleep 300\n";
    let mut ids = Vec::new();
    for _ in 0..5 {
        ids.push(c.submit(script, &["--gres=shard:2", "-t", "5"]).await);
    }
    let mut seen = Vec::new();
    for id in &ids[..4] {
        let j = c.wait_for(*id, 60, |j| j.state == JobState::Running).await;
        let gpus = j.allocations[0].gpus.clone();
        assert_eq!(gpus.len(), 2);
        let parent = gpus[0] / 4;
        assert!(gpus.iter().all(|g| g / 4 == parent), "{gpus:?}");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let out = c.output(*id).await;
            if out.contains("visible=") {
                assert!(out.contains(&format!("visible={parent}\n")), "{out}");
                break;
            }
            assert!(Instant::now() < deadline, "no output from job {id}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        seen.push(parent);
    }
    seen.sort_unstable();
    assert_eq!(seen, [0, 0, 1, 1], "two jobs per GPU");
    let fifth = c
        .wait_for(ids[4], 30, |j| j.reason.as_deref() == Some("Resources"))
        .await;
    assert_eq!(fifth.state, JobState::Pending);
}

/// MIG instances (`--simulate-gpus 1xA100:mig=3g.40gb*2`): asked for as GPUs of the
/// profile's type, each job gets one instance and sees it by its `MIG-…` UUID.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mig_instances_are_gpus_of_their_profile() {
    let c = TestCluster::start(Options {
        workers: 1,
        gpus: "1xA100:mig=3g.40gb*2",
        ..Default::default()
    })
    .await;
    let nodes: NodeList = c.get("/v1/nodes").await;
    let gpus = &nodes.items[0].gpus;
    assert_eq!(gpus.len(), 2);
    assert!(gpus.iter().all(|g| g.kind == berth_core::wire::GpuKind::Mig
        && g.parent == Some(0)
        && g.model.contains("3g.40gb")
        && g.uuid.starts_with("MIG-")));
    let script = "#!/bin/bash\necho visible=$CUDA_VISIBLE_DEVICES\nsleep 300\n";
    let a = c.submit(script, &["--gres=gpu:3g.40gb:1", "-t", "5"]).await;
    let b = c.submit(script, &["--gres=gpu:3g.40gb:1", "-t", "5"]).await;
    for id in [a, b] {
        let j = c.wait_for(id, 60, |j| j.state == JobState::Running).await;
        let held = j.allocations[0].gpus[0];
        let uuid = &gpus.iter().find(|g| g.index == held).unwrap().uuid;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let out = c.output(id).await;
            if out.contains("visible=") {
                assert!(out.contains(&format!("visible={uuid}\n")), "{out}");
                break;
            }
            assert!(Instant::now() < deadline, "no output from job {id}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    match c
        .try_submit("#!/bin/bash\ntrue\n", &["--gres=gpu:1g.10gb:1"])
        .await
    {
        Err((422, p)) => assert_eq!(p.field.as_deref(), Some("--gres"), "{p:?}"),
        other => panic!("a profile no node offers: {other:?}"),
    }
}

/// `berth worker --gpu-shards 2` offers any backend's whole GPUs as shards (here two
/// simulated H100s: four shards), as a gres.conf `Name=shard` line does in Slurm; a
/// job's shards come from one GPU.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_offers_its_gpus_as_shards() {
    let c = TestCluster::start_with_worker_args(
        Options {
            workers: 1,
            gpus: "2xH100",
            ..Default::default()
        },
        &["--gpu-shards", "2"],
    )
    .await;
    let nodes: NodeList = c.get("/v1/nodes").await;
    let parents: Vec<Option<u32>> = nodes.items[0].gpus.iter().map(|g| g.parent).collect();
    assert_eq!(parents, [Some(0), Some(0), Some(1), Some(1)]);
    // One shard of GPU 0 is taken; a 2-shard job then gets GPU 1's two shards, not
    // shards of both GPUs.
    let small = c
        .submit("#!/bin/bash\nsleep 300\n", &["--gres=shard:1", "-t", "5"])
        .await;
    let small = c
        .wait_for(small, 60, |j| j.state == JobState::Running)
        .await;
    assert_eq!(small.allocations[0].gpus, [0]);
    let id = c
        .submit(
            "#!/bin/bash\necho visible=$CUDA_VISIBLE_DEVICES shards=$SLURM_SHARDS_ON_NODE\n",
            &["--gres=shard:2", "-t", "5"],
        )
        .await;
    let j = c.wait_ended(id, 60).await;
    assert_eq!(j.state, JobState::Completed, "{j:?}");
    assert_eq!(j.allocations[0].gpus, [2, 3]);
    let out = c.output(id).await;
    assert!(out.contains("visible=1 shards=2"), "{out}");
}
