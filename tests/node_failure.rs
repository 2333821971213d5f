//! Node failure: a worker that goes silent has its node declared DOWN; its jobs are
//! requeued (or end NODE_FAIL with `--no-requeue`), multi-node jobs as a whole; the node
//! returns to service when it syncs again. A node that cannot reach the api stops its own
//! runs before the node timeout (its lease runs out), so a requeued job never runs twice
//! at once.

use crate::cluster::{Options, TestCluster};
use berth_core::state::{JobState, NodeState};
use nix::sys::signal::Signal;
use std::time::{Duration, Instant};

fn fast_timeout(workers: usize) -> Options {
    Options {
        workers,
        gpus: "4xH100",
        scheduler_config: "node_timeout_seconds = 6\ncompleting_timeout_seconds = 60",
        poll_wait: Some(1),
        ..Default::default()
    }
}

/// A script that takes its job's lock (a held lock means another run of the job still
/// runs: it says so in `doubles`), records its pid per run, then sleeps.
const SLEEPER: &str = "#!/bin/bash\nexec 9>>$SLURM_SUBMIT_DIR/lock-$SLURM_JOB_ID\nflock -n 9 || echo \"$SLURM_JOB_ID $SLURM_RESTART_COUNT\" >> $SLURM_SUBMIT_DIR/doubles\necho $$ > $SLURM_SUBMIT_DIR/pid-$SLURM_JOB_ID-$SLURM_RESTART_COUNT\necho run=$SLURM_RESTART_COUNT node=$SLURMD_NODENAME\nsleep 120\n";

fn pid_of(c: &TestCluster, id: i64, run: u32) -> i32 {
    let path = c.dir.join(format!("pid-{id}-{run}"));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(pid) = std::fs::read_to_string(&path)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return pid;
        }
        assert!(Instant::now() < deadline, "no {}", path.display());
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn alive(pid: i32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_node_goes_down_its_jobs_requeue_or_fail_and_it_returns() {
    let c = TestCluster::start(fast_timeout(2)).await;
    let requeue = c.submit(SLEEPER, &["--gres=gpu:1"]).await;
    let no_requeue = c.submit(SLEEPER, &["--gres=gpu:1", "--no-requeue"]).await;
    for id in [requeue, no_requeue] {
        let job = c.wait_for(id, 60, |j| j.state == JobState::Running).await;
        assert_eq!(job.allocations[0].node, "node-1", "packed onto node-1");
    }
    let old_pid = pid_of(&c, requeue, 0);

    // The worker of node-1 freezes; its job processes keep running.
    c.signal("node-1", Signal::SIGSTOP);
    let frozen = Instant::now();
    let node = c
        .wait_node("node-1", 60, |n| n.state == NodeState::Down)
        .await;
    println!("node-1 DOWN {:?} after its worker froze", frozen.elapsed());
    assert_eq!(node.reason.as_deref(), Some("Not responding"));

    let failed = c.wait_ended(no_requeue, 30).await;
    assert_eq!(failed.state, JobState::NodeFail);
    assert_eq!(failed.reason.as_deref(), Some("NodeDown"));
    assert_eq!(failed.restart_count, 0);

    // The requeued job restarts on the other node, as its second run.
    let job = c
        .wait_for(requeue, 60, |j| {
            j.state == JobState::Running && j.restart_count == 1
        })
        .await;
    assert_eq!(job.allocations.len(), 1);
    assert_eq!(job.allocations[0].node, "node-2");
    let new_pid = pid_of(&c, requeue, 1);
    // Its first run was stopped on the unreachable node before the node timeout (its
    // shepherd fenced it when the node's lease ran out): never two runs at once.
    assert!(
        !alive(old_pid),
        "the unreachable node's run still runs beside its requeued run"
    );
    assert!(
        !c.dir.join("doubles").exists(),
        "ran twice at once: {}",
        std::fs::read_to_string(c.dir.join("doubles")).unwrap_or_default()
    );

    // The worker wakes up: its node returns to service; the stale run is gone.
    c.signal("node-1", Signal::SIGCONT);
    let node = c
        .wait_node("node-1", 30, |n| n.state != NodeState::Down)
        .await;
    assert_eq!(node.reason, None);
    let deadline = Instant::now() + Duration::from_secs(30);
    while alive(old_pid) {
        assert!(
            Instant::now() < deadline,
            "stale run still alive:\n{}",
            c.log("node-1")
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(alive(new_pid), "the requeued run is untouched");
    let job = c.job(requeue).await;
    assert_eq!((job.state, job.restart_count), (JobState::Running, 1));
    wait_output(&c, requeue, "run=1 node=node-2").await;

    // The history shows the failure once.
    let db = c.db().await;
    let kinds: Vec<(String, i32, Option<String>)> = sqlx::query_as(
        "SELECT kind, run, node FROM job_events WHERE job_id = $1 AND kind = 'node_fail'",
    )
    .bind(requeue)
    .fetch_all(&db)
    .await
    .unwrap();
    assert_eq!(kinds, vec![("node_fail".into(), 0, Some("node-1".into()))]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_two_node_job_requeues_as_a_whole_when_one_node_dies() {
    let mut c = TestCluster::start(fast_timeout(2)).await;
    let id = c.submit(SLEEPER, &["-N", "2", "--gpus-per-node=2"]).await;
    let job = c.wait_for(id, 60, |j| j.state == JobState::Running).await;
    assert_eq!(job.allocations.len(), 2);
    let batch_pid = pid_of(&c, id, 0);

    // The second node (not the one running the batch script) dies for good.
    c.kill("node-2");
    c.wait_node("node-2", 60, |n| n.state == NodeState::Down)
        .await;
    // The whole job goes back to the queue: every allocation of run 0 released and the
    // batch script on node-1 stopped.
    let job = c.wait_for(id, 30, |j| j.state == JobState::Pending).await;
    assert_eq!(job.restart_count, 1);
    let db = c.db().await;
    let live: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM allocations WHERE job_id = $1 AND released_at IS NULL",
    )
    .bind(id)
    .fetch_one(&db)
    .await
    .unwrap();
    assert_eq!(live, 0);
    let deadline = Instant::now() + Duration::from_secs(30);
    while alive(batch_pid) {
        assert!(
            Instant::now() < deadline,
            "batch script of run 0 still runs"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // It waits for two nodes while node-2 is DOWN, and runs again once it is back.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(c.job(id).await.state, JobState::Pending);
    c.restart("node-2");
    let job = c.wait_for(id, 60, |j| j.state == JobState::Running).await;
    assert_eq!(job.restart_count, 1);
    assert_eq!(job.allocations.len(), 2);
    wait_output(&c, id, "run=1 node=node-1").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_worker_adopts_the_runs_its_killed_process_left_and_runs_them_once() {
    let mut c = TestCluster::start(Options {
        workers: 1,
        gpus: "4xH100",
        poll_wait: Some(1),
        ..Default::default()
    })
    .await;
    let script = "#!/bin/bash\nexec 9>>$SLURM_SUBMIT_DIR/lock-$SLURM_JOB_ID\nflock -n 9 || echo twice >> $SLURM_SUBMIT_DIR/doubles\necho $$ >> $SLURM_SUBMIT_DIR/pids-$SLURM_JOB_ID\nsleep 5\necho done\n";
    let id = c.submit(script, &["--gres=gpu:1"]).await;
    c.wait_for(id, 60, |j| j.state == JobState::Running).await;
    let first = pid_of_line(&c, id, 0);
    c.kill("node-1");
    assert!(alive(first), "the batch script outlives its worker");
    c.restart("node-1");
    // The restarted worker supervises the same process to its end: the job completes in
    // its first run, and no second copy ever starts.
    let job = c.wait_ended(id, 60).await;
    assert_eq!(
        (job.state, job.exit_code, job.restart_count),
        (JobState::Completed, Some(0), 0)
    );
    let pids = std::fs::read_to_string(c.dir.join(format!("pids-{id}"))).unwrap();
    assert_eq!(pids.lines().count(), 1, "ran once: {pids}");
    assert!(!c.dir.join("doubles").exists(), "ran twice at once");
    assert!(c.output(id).await.contains("done"));
}

fn pid_of_line(c: &TestCluster, id: i64, line: usize) -> i32 {
    let path = c.dir.join(format!("pids-{id}"));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(pid) = std::fs::read_to_string(&path)
            .ok()
            .and_then(|s| s.lines().nth(line).and_then(|l| l.trim().parse().ok()))
        {
            return pid;
        }
        assert!(
            Instant::now() < deadline,
            "no line {line} in {}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits (up to 30 s) until the job's output, as the api has it, contains `needle`.
async fn wait_output(c: &TestCluster, id: i64, needle: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = c.output(id).await;
        if out.contains(needle) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no {needle:?} in the output: {out}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_requeued_while_its_node_is_unreachable_never_runs_twice_at_once() {
    let mut c = TestCluster::start(fast_timeout(0)).await;
    // node-1 reaches the api through a link the test can cut; its worker keeps running.
    let proxy = crate::proxy::Proxy::start(&c.url).await;
    let node_token = c.token_for("node:*", berth_core::auth::Role::Node);
    let state = c.dir.join("node-1").to_str().unwrap().to_string();
    let api = proxy.url.clone();
    c.spawn_berth(
        "node-1",
        &[
            "worker",
            "--api",
            &api,
            "--token",
            &node_token,
            "--name",
            "node-1",
            "--simulate-gpus",
            "4xH100",
            "--state-dir",
            &state,
            "--kill-wait",
            "2",
            "--poll-wait",
            "1",
            "--run-as",
            "worker",
        ],
    );
    let id = c.submit(SLEEPER, &["--gres=gpu:1"]).await;
    let job = c.wait_for(id, 60, |j| j.state == JobState::Running).await;
    assert_eq!(job.allocations[0].node, "node-1");
    let old_pid = pid_of(&c, id, 0);
    c.start_worker("node-2");
    c.wait_node("node-2", 60, |_| true).await;

    // The link is cut: node-1 is unreachable, its worker alive and cut off.
    proxy.set_cut(true);
    let job = c
        .wait_for(id, 90, |j| {
            j.state == JobState::Running && j.restart_count == 1
        })
        .await;
    assert_eq!(job.allocations[0].node, "node-2");
    let new_pid = pid_of(&c, id, 1);
    assert!(
        !alive(old_pid),
        "the unreachable node's run still runs beside its requeued run:\n{}",
        c.log("node-1")
    );
    assert!(
        !c.dir.join("doubles").exists(),
        "ran twice at once: {}",
        std::fs::read_to_string(c.dir.join("doubles")).unwrap_or_default()
    );

    // The link is back: node-1 returns to service and reports how its run ended.
    proxy.set_cut(false);
    c.wait_node("node-1", 60, |n| n.state != NodeState::Down)
        .await;
    let db = c.db().await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let exited: Option<serde_json::Value> = sqlx::query_scalar(
            "SELECT detail FROM job_events WHERE job_id = $1 AND run = 0 AND kind = 'exited'",
        )
        .bind(id)
        .fetch_optional(&db)
        .await
        .unwrap();
        if let Some(detail) = exited {
            assert_eq!(detail["node_failed"], true, "{detail}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "node-1 never reported its fenced run:\n{}",
            c.log("node-1")
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(alive(new_pid), "the requeued run is untouched");
    let job = c.job(id).await;
    assert_eq!((job.state, job.restart_count), (JobState::Running, 1));
}
