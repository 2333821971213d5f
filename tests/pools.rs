//! Cloud node pools with the local provider (real `berth worker` processes started by the
//! scheduler leader): an empty pool grows for the queue, starts a gang whole and shrinks
//! back; a capacity error moves to the next instance type; an instance that never joins
//! is terminated at the boot timeout and its job stays queued; a leader killed mid-launch
//! neither loses nor doubles the launch.

use crate::cluster::{Options, TestCluster};
use berth_core::pool::Pool;
use berth_core::state::{JobState, NodeState};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// A cluster with no static workers and pool `burst` (`pool` is the rest of its table).
async fn with_pool(pool: &str, schedulers: usize) -> TestCluster {
    let config = format!(
        r#"
[cloud]
local_state_dir = "@DIR@/local-cloud"
api_url = "@API_URL@"
orphan_grace_seconds = 5
describe_interval_seconds = 2
local_worker_args = ["--run-as", "worker", "--kill-wait", "2", "--poll-wait", "1", "--metadata-poll-ms", "300"]

[pools.burst]
provider = "local"
{pool}
"#
    );
    TestCluster::start_with_api_config(
        Options {
            workers: 0,
            schedulers,
            ..Default::default()
        },
        &config,
    )
    .await
}

const ONE_TYPE: &str = r#"min_nodes = 0
max_nodes = 4
idle_timeout = 8
boot_timeout = 120

[[pools.burst.instance_types]]
name = "sim-8xh100"
gpus = "8xH100"
cpus = 32
memory = "256G"
price_per_hour = 2.5
"#;

async fn pool(c: &TestCluster) -> Pool {
    c.get("/v1/pools/burst").await
}

/// Waits until `done` holds of the pool.
async fn wait_pool(c: &TestCluster, secs: u64, what: &str, done: impl Fn(&Pool) -> bool) -> Pool {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let p = pool(c).await;
        if done(&p) {
            return p;
        }
        assert!(
            Instant::now() < deadline,
            "{what} within {secs} s: {p:#?}\n{}",
            c.log("scheduler-0")
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The local provider's instance directories.
fn instance_dirs(c: &TestCluster) -> Vec<String> {
    std::fs::read_dir(c.dir.join("local-cloud").join("instances"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_pool_grows_for_the_queue_starts_a_gang_whole_and_shrinks_back() {
    let c = with_pool(ONE_TYPE, 1).await;
    // The pool's four slots exist, powered down, with the instance type's shape.
    let p = pool(&c).await;
    assert_eq!(p.nodes.len(), 4);
    assert!(p.nodes.iter().all(|n| n.state == NodeState::PoweredDown));
    assert_eq!(p.nodes_active, 0);

    let a = c
        .submit("#!/bin/bash\nsleep 5\n", &["--gpus-per-node=8"])
        .await;
    let b = c
        .submit("#!/bin/bash\nsleep 5\n", &["--gpus-per-node=8"])
        .await;
    let gang = c
        .submit(
            "#!/bin/bash\nsrun bash -c 'echo on=$SLURMD_NODENAME'\n",
            &["-N", "2", "--gpus-per-node=8"],
        )
        .await;
    // Nodes appear: launched (POWERING_UP), then in service.
    wait_pool(&c, 60, "launches", |p| {
        p.events.iter().filter(|e| e.kind == "launch").count() >= 1
    })
    .await;
    let mut ended = Vec::new();
    for id in [a, b, gang] {
        let job = c.wait_ended(id, 180).await;
        assert_eq!(job.state, JobState::Completed, "{job:#?}");
        ended.push(job);
    }
    // The gang ran on two pool nodes at once.
    let gang = &ended[2];
    let nodes: BTreeSet<&str> = gang.allocations.iter().map(|a| a.node.as_str()).collect();
    assert_eq!(nodes.len(), 2, "{gang:#?}");
    assert!(nodes.iter().all(|n| n.starts_with("burst-")));
    let out = c.output(gang.id).await;
    for n in &nodes {
        assert!(out.contains(&format!("on={n}")), "a step ran on {n}: {out}");
    }
    let p = pool(&c).await;
    let launched: Vec<&str> = p
        .events
        .iter()
        .filter(|e| e.kind == "launch")
        .filter_map(|e| e.node.as_deref())
        .collect();
    assert!(
        launched.len() <= 4,
        "never more than max_nodes: {launched:?}"
    );
    assert!(
        p.events.iter().any(|e| e.kind == "joined"),
        "{:#?}",
        p.events
    );
    // Back to zero within idle_timeout + 30 s of the last end; the processes are gone.
    let last_end = ended.iter().filter_map(|j| j.end_time).max().unwrap();
    let p = wait_pool(&c, 60, "the pool back at 0 nodes", |p| p.nodes_active == 0).await;
    let back = chrono::Utc::now();
    assert!(
        (back - last_end).num_seconds() <= 8 + 30,
        "back at 0 {} s after the last end",
        (back - last_end).num_seconds()
    );
    assert!(p.events.iter().any(|e| e.kind == "terminate"));
    assert_eq!(p.hourly_spend, 0.0);
    assert!(p.nodes.iter().all(|n| n.instance_id.is_none()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capacity_error_on_the_first_type_launches_the_second() {
    let c = with_pool(
        r#"max_nodes = 2
idle_timeout = 600
capacity_cooldown = 300

[pools.burst.local]
capacity_errors = ["sim-first"]

[[pools.burst.instance_types]]
name = "sim-first"
gpus = "8xH100"
cpus = 32
memory = "256G"

[[pools.burst.instance_types]]
name = "sim-second"
gpus = "8xH100"
cpus = 64
memory = "512G"
"#,
        1,
    )
    .await;
    let id = c
        .submit("#!/bin/bash\necho ran\n", &["--gpus-per-node=8"])
        .await;
    let job = c.wait_ended(id, 120).await;
    assert_eq!(job.state, JobState::Completed, "{job:#?}");
    let p = pool(&c).await;
    let node = &job.allocations[0].node;
    let n = p.nodes.iter().find(|n| &n.name == node).unwrap();
    assert_eq!(n.instance_type.as_deref(), Some("sim-second"), "{p:#?}");
    assert!(
        p.events
            .iter()
            .any(|e| e.kind == "capacity_error" && e.reason.contains("sim-first")),
        "{:#?}",
        p.events
    );
    assert!(
        p.cooldowns.iter().any(|c| c.instance_type == "sim-first"),
        "{:#?}",
        p.cooldowns
    );
    assert!(p
        .last_error
        .as_deref()
        .is_some_and(|e| e.contains("InsufficientInstanceCapacity")));
    // The pool never backed off: the second type got past the error.
    assert!(p.backoff_until.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_that_never_joins_is_terminated_and_its_job_stays_queued() {
    let c = with_pool(
        r#"max_nodes = 1
boot_timeout = 4
expected_boot = 2

[pools.burst.local]
boot_delay = 600

[[pools.burst.instance_types]]
name = "sim-8xh100"
gpus = "8xH100"
cpus = 32
memory = "256G"
"#,
        1,
    )
    .await;
    let id = c
        .submit("#!/bin/bash\necho ran\n", &["--gpus-per-node=8"])
        .await;
    let p = wait_pool(&c, 60, "a boot timeout", |p| {
        p.events.iter().any(|e| e.kind == "boot_timeout")
    })
    .await;
    let timed_out = p.events.iter().find(|e| e.kind == "boot_timeout").unwrap();
    assert_eq!(timed_out.node.as_deref(), Some("burst-1"));
    // An instance that never joins is not relaunched at once: the pool backs off.
    assert!(p.backoff_until.is_some(), "{p:#?}");
    let launches = p.events.iter().filter(|e| e.kind == "launch").count();
    // The job was never failed: it waits for the next launch.
    let job = c.job(id).await;
    assert_eq!(job.state, JobState::Pending, "{job:#?}");
    // The instance is gone (its process killed), and the boot timeout is counted on the job.
    let instance = timed_out.instance_id.clone().expect("the instance id");
    let record = std::fs::read_to_string(
        c.dir
            .join("local-cloud/instances")
            .join(&instance)
            .join("instance.json"),
    )
    .unwrap();
    assert!(
        record.contains("\"terminated\":true") || record.contains("\"terminated\": true"),
        "{record}"
    );
    let counted: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM job_events WHERE job_id = $1 AND kind = 'cloud_boot_timeout'",
    )
    .bind(id)
    .fetch_one(&c.db().await)
    .await
    .unwrap();
    assert!(counted >= 1);
    // Its reason says why it still waits (from the next cycle on).
    let job = c
        .wait_for(id, 10, |j| {
            j.reason
                .as_deref()
                .is_some_and(|r| r.starts_with("CloudBootTimeout"))
        })
        .await;
    assert_eq!(job.state, JobState::Pending);
    let p = pool(&c).await;
    assert_eq!(
        p.events.iter().filter(|e| e.kind == "launch").count(),
        launches,
        "relaunched during the back-off: {:#?}",
        p.events
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_killed_mid_launch_neither_loses_nor_doubles_it() {
    let c = with_pool(
        r#"max_nodes = 2
idle_timeout = 600

[pools.burst.local]
boot_delay = 3

[[pools.burst.instance_types]]
name = "sim-8xh100"
gpus = "8xH100"
cpus = 32
memory = "256G"
"#,
        2,
    )
    .await;
    let (leader, _) = c.wait_leader(30).await;
    let db = c.db().await;
    let id = c
        .submit("#!/bin/bash\necho ran\n", &["-N", "2", "--gpus-per-node=8"])
        .await;
    // The launch is written; the leader dies at once (before, during or just after its
    // provider call).
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let n: i64 = sqlx::query_scalar("SELECT count(*) FROM cloud_launches")
            .fetch_one(&db)
            .await
            .unwrap();
        if n > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "no launch written");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut c = c;
    c.kill9(&leader);
    let job = c.wait_ended(id, 180).await;
    assert_eq!(job.state, JobState::Completed, "{job:#?}");
    // One launch, two instances: none lost, none doubled, no orphan.
    let launches: i64 = sqlx::query_scalar("SELECT count(*) FROM cloud_launches")
        .fetch_one(&db)
        .await
        .unwrap();
    assert_eq!(launches, 1);
    assert_eq!(instance_dirs(&c).len(), 2, "{:?}", instance_dirs(&c));
    let p = pool(&c).await;
    assert!(
        !p.events.iter().any(|e| e.kind == "orphan_terminated"),
        "{:#?}",
        p.events
    );
    assert_eq!(p.nodes_active, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reclaimed_spot_node_is_replaced_and_its_job_runs_again() {
    let c = with_pool(
        r#"max_nodes = 2
market = "spot"
idle_timeout = 600

[[pools.burst.instance_types]]
name = "sim-8xh100"
gpus = "8xH100"
cpus = 32
memory = "256G"
"#,
        1,
    )
    .await;
    let id = c
        .submit(
            "#!/bin/bash\ntrap 'echo caught USR1; exit 1' USR1\necho run=$SLURM_RESTART_COUNT on=$SLURMD_NODENAME\nsleep 20 & wait\n",
            &["--gpus-per-node=8", "--signal=B:USR1@60"],
        )
        .await;
    let job = c.wait_for(id, 120, |j| j.state == JobState::Running).await;
    let first = job.allocations[0].node.clone();
    let p = pool(&c).await;
    let node = p.nodes.iter().find(|n| n.name == first).unwrap();
    assert_eq!(node.market, Some(berth_core::pool::Market::Spot));
    let instance = node.instance_id.clone().unwrap();
    // The provider gives the instance its two minutes' notice.
    std::fs::write(
        c.dir
            .join("local-cloud/instances")
            .join(&instance)
            .join("spot-instance-action"),
        "",
    )
    .unwrap();
    // The job is requeued (never failed), the reclaimed instance terminated, and the job
    // runs again to the end on a replacement.
    let job = c.wait_for(id, 120, |j| j.restart_count == 1).await;
    assert_ne!(job.state, JobState::Failed);
    let p = wait_pool(&c, 120, "the reclaimed instance terminated", |p| {
        p.events.iter().any(|e| {
            e.kind == "terminate"
                && e.instance_id.as_deref() == Some(instance.as_str())
                && e.reason.starts_with("reclaimed")
        })
    })
    .await;
    assert!(
        p.events.iter().any(|e| e.kind == "reclaim"),
        "{:#?}",
        p.events
    );
    let job = c.wait_ended(id, 180).await;
    assert_eq!(job.state, JobState::Completed, "{job:#?}");
    assert_eq!(job.restart_count, 1);
    let out = c.output(id).await;
    assert!(
        out.contains("caught USR1") || out.contains("run=0"),
        "{out}"
    );
    assert!(out.contains("run=1"), "{out}");
}

/// Issue 27: while every instance type of a pool answers capacity errors, the job's
/// reason names the error (`CloudCapacity: …`) until a launch is tried again: through the
/// pool's back-off (30 s) and on while its types stay set aside (here 90 s), not falling
/// back to `ReqNodeNotAvail` when the back-off ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobs_capacity_reason_stands_until_a_launch_is_tried_again() {
    let c = with_pool(
        r#"max_nodes = 2
capacity_cooldown = 90

[pools.burst.local]
capacity_errors = ["sim-only"]

[[pools.burst.instance_types]]
name = "sim-only"
gpus = "8xH100"
cpus = 32
memory = "256G"
"#,
        1,
    )
    .await;
    let id = c
        .submit("#!/bin/bash\necho ran\n", &["--gpus-per-node=8"])
        .await;
    let job = c
        .wait_for(id, 60, |j| {
            j.reason
                .as_deref()
                .is_some_and(|r| r.starts_with("CloudCapacity"))
        })
        .await;
    let reason = job.reason.unwrap();
    assert!(reason.contains("sim-only"), "{reason}");
    let first = Instant::now();
    // Past the pool's first back-off (30 s), the types still set aside: the same reason.
    while first.elapsed() < Duration::from_secs(40) {
        let job = c.job(id).await;
        assert_eq!(job.state, JobState::Pending);
        assert!(
            job.reason
                .as_deref()
                .is_some_and(|r| r.starts_with("CloudCapacity")),
            "after {:?}: {:?}",
            first.elapsed(),
            job.reason
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}
