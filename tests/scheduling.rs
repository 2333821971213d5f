//! Placement and leadership, end to end.

use crate::cluster::{Options, TestCluster};
use berth_core::state::JobState;
use std::collections::BTreeSet;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_two_node_job_gets_two_distinct_nodes_at_once() {
    let c = TestCluster::start(Options::default()).await;
    let id = c
        .submit(
            "#!/bin/bash\n#SBATCH --nodes=2 --gpus-per-node=4\necho nodes=$SLURM_JOB_NUM_NODES list=$SLURM_JOB_NODELIST id=$SLURM_NODEID gpus=$CUDA_VISIBLE_DEVICES\n",
            &[],
        )
        .await;
    let job = c.wait_ended(id, 60).await;
    assert_eq!(job.state, JobState::Completed);
    let nodes: BTreeSet<&str> = job.allocations.iter().map(|a| a.node.as_str()).collect();
    assert_eq!(nodes, BTreeSet::from(["node-1", "node-2"]));
    assert!(job.allocations.iter().all(|a| a.gpus.len() == 4));
    assert_eq!(job.nodelist.as_deref(), Some("node-[1-2]"));
    let out = c.output(id).await;
    assert!(
        out.starts_with("nodes=2 list=node-[1-2] id=0 gpus="),
        "{out}"
    );
    // Both allocations were written by one decision.
    let db = c.db().await;
    let created: Vec<chrono::DateTime<chrono::Utc>> =
        sqlx::query_scalar("SELECT created_at FROM allocations WHERE job_id = $1")
            .bind(id)
            .fetch_all(&db)
            .await
            .unwrap();
    assert_eq!(created.len(), 2);
    assert_eq!(created[0], created[1], "same transaction");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_gpu_jobs_pack_onto_one_node() {
    let c = TestCluster::start(Options {
        workers: 2,
        gpus: "4xH100",
        schedulers: 1,
        ..Default::default()
    })
    .await;
    let mut ids = Vec::new();
    for _ in 0..4 {
        ids.push(c.submit("#!/bin/bash\nsleep 3\n", &["--gres=gpu:1"]).await);
    }
    let mut nodes = BTreeSet::new();
    let mut gpus = BTreeSet::new();
    for id in &ids {
        let job = c.wait_for(*id, 60, |j| !j.allocations.is_empty()).await;
        nodes.insert(job.allocations[0].node.clone());
        gpus.insert(job.allocations[0].gpus[0]);
    }
    assert_eq!(nodes.len(), 1, "packed: {nodes:?}");
    assert_eq!(gpus, BTreeSet::from([0, 1, 2, 3]));
    // A whole-node job can still start at once on the other node.
    let big = c
        .submit("#!/bin/bash\ntrue\n", &["--gpus-per-node=4"])
        .await;
    let big = c.wait_ended(big, 60).await;
    assert_eq!(big.state, JobState::Completed);
    assert!(!nodes.contains(&big.allocations[0].node));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_schedulers_elect_one_leader_that_places_everything() {
    let c = TestCluster::start(Options {
        workers: 2,
        gpus: "8xH100",
        schedulers: 2,
        ..Default::default()
    })
    .await;
    let mut ids = Vec::new();
    for i in 0..6 {
        ids.push(
            c.submit(&format!("#!/bin/bash\necho {i}\n"), &["--gres=gpu:2"])
                .await,
        );
    }
    for id in &ids {
        assert_eq!(c.wait_ended(*id, 60).await.state, JobState::Completed);
    }
    let db = c.db().await;
    let (holder, term): (String, i64) =
        sqlx::query_as("SELECT holder, term FROM leader_lease WHERE role = 'scheduler'")
            .fetch_one(&db)
            .await
            .unwrap();
    let terms: Vec<i64> = sqlx::query_scalar("SELECT DISTINCT term FROM allocations")
        .fetch_all(&db)
        .await
        .unwrap();
    assert_eq!(
        terms,
        vec![term],
        "every placement made under the one leader's term"
    );
    let leaders: Vec<String> = ["scheduler-0", "scheduler-1"]
        .iter()
        .filter(|s| c.log(s).contains("became leader"))
        .map(|s| s.to_string())
        .collect();
    assert_eq!(leaders.len(), 1, "exactly one leader: {leaders:?}");
    let pid = c.pid(&leaders[0]).unwrap();
    assert!(
        holder.ends_with(&format!("-{pid}")),
        "{holder} is {}",
        leaders[0]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_no_node_can_hold_are_refused_with_422() {
    let c = TestCluster::start(Options::default()).await;
    let (status, p) = c
        .try_submit("#!/bin/bash\ntrue\n", &["--gres=gpu:16"])
        .await
        .unwrap_err();
    assert_eq!((status, p.field.as_deref()), (422, Some("--gres")));
    let (status, p) = c
        .try_submit("#!/bin/bash\ntrue\n", &["--nodes=3"])
        .await
        .unwrap_err();
    assert_eq!((status, p.field.as_deref()), (422, Some("--nodes")));
    // A generic resource no node offers is refused, naming it.
    let (status, p) = c
        .try_submit("#!/bin/bash\ntrue\n", &["--gres=gpu:1,nvme:1"])
        .await
        .unwrap_err();
    assert_eq!((status, p.field.as_deref()), (400, Some("--gres")), "{p:?}");
    assert!(p.detail.contains("nvme"), "{p:?}");
}
