//! The node protocol's robustness (issue 10): a report that can never apply is set aside
//! without blocking the others (item 25); a node whose batch launches fail requeues the
//! jobs and is drained (item 15); and after a database failover that forgot the last
//! commits, the worker's journal decides: a completed run is accepted, never run again,
//! and a running one is taken back, not cancelled (item 24). The failover is emulated by
//! rewriting the rows to what a promoted standby would show.

use crate::attacks::nodes::{report, FakeNode};
use crate::cluster::{Options, TestCluster};
use berth_core::auth::Role;
use berth_core::state::{JobState, NodeState};
use serde_json::json;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_that_can_never_apply_is_set_aside_and_the_others_go_on() {
    let c = TestCluster::start(Options {
        workers: 0,
        ..Default::default()
    })
    .await;
    let node = FakeNode {
        name: "bxs-fake".into(),
        token: c.token_for("node:*", Role::Node),
    };
    node.register(&c, 2).await;
    let a = c.submit("#!/bin/bash\ntrue\n", &["--gres=gpu:1"]).await;
    let b = c.submit("#!/bin/bash\ntrue\n", &["--gres=gpu:1"]).await;
    for id in [a, b] {
        c.wait_for(id, 60, |j| j.state == JobState::Running).await;
    }
    // A's end carries text the database cannot store (a NUL byte): it can never apply.
    let mut broken = report(a, 0, "exited", 3);
    broken["message"] = json!("cut\u{0}short");
    let (s, answer) = node
        .sync(
            &c,
            json!({"acked_seq": 0, "running": [{"job_id": a, "run": 0}],
                   "reports": [report(a, 0, "started", 1), report(b, 0, "started", 2),
                               broken, report(b, 0, "exited", 4)]}),
        )
        .await;
    assert_eq!(s, 200, "{answer}");
    let rejected = answer["rejected"].as_array().unwrap();
    assert_eq!(rejected.len(), 1, "{answer}");
    assert_eq!(rejected[0]["seq"], 3);
    assert_eq!(rejected[0]["job_id"], a);
    assert_eq!(rejected[0]["status"], 422);
    assert!(
        rejected[0]["detail"]
            .as_str()
            .unwrap()
            .contains(&format!("cannot apply to job {a}")),
        "{answer}"
    );
    // The reports around it applied.
    let job = c.job(b).await;
    assert_eq!(
        (job.state, job.exit_code),
        (JobState::Completed, Some(0)),
        "{job:?}"
    );
    assert_eq!(c.job(a).await.state, JobState::Running);
    // The node is not blocked: its next sync, without the refused report, goes through.
    let (s, answer) = node
        .sync(
            &c,
            json!({"acked_seq": 4, "reports": [report(a, 0, "exited", 5)]}),
        )
        .await;
    assert_eq!(s, 200, "{answer}");
    assert!(answer.get("rejected").is_none(), "{answer}");
    let job = c.job(a).await;
    assert_eq!(job.state, JobState::Completed, "{job:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_whose_launches_fail_requeues_the_jobs_and_is_drained() {
    let c = TestCluster::start(Options {
        workers: 2,
        ..Default::default()
    })
    .await;
    // node-1's job directory is broken: a file where its directory of job runs goes.
    let jobs = c.dir.join("node-1").join("jobs");
    let _ = std::fs::remove_dir_all(&jobs);
    std::fs::write(&jobs, "not a directory\n").unwrap();
    let ids: Vec<i64> = submit_whole_node_jobs(&c, 6).await;
    let mut restarts = 0;
    for id in &ids {
        let job = c.wait_ended(*id, 180).await;
        assert_eq!(
            job.state,
            JobState::Completed,
            "no job fails for the node's fault: {job:?}\n{}",
            c.log("node-1")
        );
        restarts += job.restart_count;
    }
    let node = c
        .wait_node("node-1", 30, |n| n.state == NodeState::Drained)
        .await;
    let reason = node.reason.unwrap_or_default();
    assert!(
        reason.starts_with("batch job launch failure: ") && reason.contains("/node-1/jobs/"),
        "{reason}"
    );
    assert!(
        restarts >= 3,
        "the three launches that failed on node-1 requeued their jobs ({restarts})"
    );
    let db = c.db().await;
    let requeued: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM job_events WHERE kind = 'requeued' AND node = 'node-1'",
    )
    .fetch_one(&db)
    .await
    .unwrap();
    assert_eq!(requeued, 3, "drained at the third failure in a row");
}

/// Submits `n` whole-node jobs (8 GPUs each), so that both nodes get work.
async fn submit_whole_node_jobs(c: &TestCluster, n: usize) -> Vec<i64> {
    let mut ids = Vec::new();
    for _ in 0..n {
        ids.push(
            c.submit("#!/bin/bash\nsleep 1\necho ok\n", &["--gres=gpu:8"])
                .await,
        );
    }
    ids
}

/// What the database shows of a job's run after a failover that lost its last commits.
enum Forgotten {
    /// The run's placement, start and end: the job is PENDING again in the same run.
    Everything,
    /// Only the end: the job is RUNNING on its node again.
    TheEnd,
}

/// Rewrites the rows of job `id` (run 0, on node-1) to what a promoted standby would show,
/// and (for [`Forgotten::Everything`]) the node's report stream to before the run's start
/// report.
async fn forget(c: &TestCluster, id: i64, what: Forgotten) {
    let db = c.db().await;
    let mut tx = berth_db::begin(&db).await.unwrap();
    let started_seq: i64 = sqlx::query_scalar(
        "SELECT (detail->>'seq')::bigint FROM job_events WHERE job_id = $1 AND kind = 'started'",
    )
    .bind(id)
    .fetch_one(&mut *tx)
    .await
    .unwrap();
    match what {
        Forgotten::Everything => {
            for sql in [
                "DELETE FROM job_events WHERE job_id = $1 AND kind IN ('allocated', 'started', 'exited')",
                "DELETE FROM usage_charges WHERE job_id = $1",
                "DELETE FROM allocations WHERE job_id = $1",
                "UPDATE jobs SET state = 'PENDING', start_time = NULL, end_time = NULL,
                        exit_code = NULL, exit_signal = NULL, reason = NULL WHERE id = $1",
            ] {
                sqlx::query(sql).bind(id).execute(&mut *tx).await.unwrap();
            }
            sqlx::query("UPDATE node_report_state SET report_seq = $1")
                .bind(started_seq - 1)
                .execute(&mut *tx)
                .await
                .unwrap();
        }
        Forgotten::TheEnd => {
            for sql in [
                "DELETE FROM job_events WHERE job_id = $1 AND kind = 'exited'",
                "DELETE FROM usage_charges WHERE job_id = $1",
                "UPDATE allocation_gpus SET released_at = NULL
                 WHERE allocation_id IN (SELECT id FROM allocations WHERE job_id = $1)",
                "UPDATE allocation_cpus SET released_at = NULL
                 WHERE allocation_id IN (SELECT id FROM allocations WHERE job_id = $1)",
                "UPDATE allocations SET released_at = NULL WHERE job_id = $1",
                "UPDATE jobs SET state = 'RUNNING', end_time = NULL, exit_code = NULL,
                        exit_signal = NULL WHERE id = $1",
            ] {
                sqlx::query(sql).bind(id).execute(&mut *tx).await.unwrap();
            }
        }
    }
    tx.commit().await.unwrap();
}

/// The lines the job's runs appended to its marker file.
fn marker(c: &TestCluster, id: i64) -> Vec<String> {
    std::fs::read_to_string(c.dir.join(format!("ran-{id}")))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_failover_a_completed_run_is_accepted_and_never_runs_again() {
    let mut c = TestCluster::start(Options {
        workers: 1,
        poll_wait: Some(1),
        ..Default::default()
    })
    .await;
    let script = format!(
        "#!/bin/bash\necho \"run $SLURM_RESTART_COUNT\" >> {}/ran-$SLURM_JOB_ID\n",
        c.dir.display()
    );
    // 1. The database forgot the run entirely (placement, start, end) and the scheduler
    // is down: the worker sends its reports again and the api accepts the end.
    let id = c.submit(&script, &["--gres=gpu:1"]).await;
    let job = c.wait_ended(id, 60).await;
    assert_eq!(job.state, JobState::Completed);
    c.stop("scheduler-0");
    forget(&c, id, Forgotten::Everything).await;
    assert_eq!(c.job(id).await.state, JobState::Pending);
    let job = c.wait_ended(id, 60).await;
    assert_eq!(
        (job.state, job.exit_code, job.restart_count),
        (JobState::Completed, Some(0), 0),
        "{job:?}\n{}",
        c.log("node-1")
    );
    assert!(
        c.log("node-1").contains("sending them again"),
        "{}",
        c.log("node-1")
    );

    // 2. The database forgot only the end (the run is RUNNING on node-1 again, and the
    // api assigns it): the worker does not launch it again; it sends its end again.
    let second = c.submit(&script, &["--gres=gpu:1"]).await;
    c.restart("scheduler-0");
    assert_eq!(c.wait_ended(second, 60).await.state, JobState::Completed);
    forget(&c, second, Forgotten::TheEnd).await;
    let job = c.wait_ended(second, 60).await;
    assert_eq!(
        (job.state, job.exit_code, job.restart_count),
        (JobState::Completed, Some(0), 0),
        "{job:?}\n{}",
        c.log("node-1")
    );

    // Whatever the scheduler does next, neither ran a second time.
    tokio::time::sleep(Duration::from_secs(5)).await;
    for id in [id, second] {
        assert_eq!(marker(&c, id), vec!["run 0"], "job {id} ran once");
        assert_eq!(c.job(id).await.state, JobState::Completed);
    }
    let db = c.db().await;
    let started: i64 = sqlx::query_scalar("SELECT count(*) FROM job_events WHERE kind = 'started'")
        .fetch_one(&db)
        .await
        .unwrap();
    assert_eq!(started, 2, "one start per job");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_failover_a_running_run_is_taken_back_not_cancelled() {
    let mut c = TestCluster::start(Options {
        workers: 1,
        poll_wait: Some(1),
        ..Default::default()
    })
    .await;
    let script = format!(
        "#!/bin/bash\necho start >> {dir}/ran-$SLURM_JOB_ID\nsleep 12\necho end >> {dir}/ran-$SLURM_JOB_ID\n",
        dir = c.dir.display()
    );
    let id = c.submit(&script, &["--gres=gpu:2"]).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    while marker(&c, id).is_empty() {
        assert!(Instant::now() < deadline, "{}", c.log("node-1"));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The start report is in (the worker journals it before the api applies it).
    let db = c.db().await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let started: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM job_events WHERE job_id = $1 AND kind = 'started'",
        )
        .bind(id)
        .fetch_one(&db)
        .await
        .unwrap();
        if started == 1 {
            break;
        }
        assert!(Instant::now() < deadline, "{}", c.log("node-1"));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let gpus = c.job(id).await.allocations[0].gpus.clone();
    // The database forgot the placement and the start; the scheduler is down meanwhile.
    c.stop("scheduler-0");
    forget(&c, id, Forgotten::Everything).await;
    // The worker's journal decides: the api takes the run back on node-1, same GPUs.
    let job = c.wait_for(id, 60, |j| j.state == JobState::Running).await;
    assert_eq!(job.restart_count, 0);
    assert_eq!(job.allocations.len(), 1);
    assert_eq!(job.allocations[0].node, "node-1");
    assert_eq!(job.allocations[0].gpus, gpus);
    c.restart("scheduler-0");
    let job = c.wait_ended(id, 90).await;
    assert_eq!(
        (job.state, job.exit_code, job.restart_count),
        (JobState::Completed, Some(0), 0),
        "{job:?}\n{}",
        c.log("node-1")
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        marker(&c, id),
        vec!["start", "end"],
        "one run, never cancelled"
    );
    let adopted: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM job_events WHERE job_id = $1 AND kind = 'allocated'
           AND detail->>'adopted' = 'true' AND node = 'node-1'",
    )
    .bind(id)
    .fetch_one(&db)
    .await
    .unwrap();
    assert_eq!(adopted, 1);
}

/// Issue 27: after a failover to a standby that lost the last commits, a new job takes the
/// id of a job that ran here (the promoted server hands its id out again). Emulated by
/// rewriting job `id`'s row into a new submission (a new incarnation, its own
/// script, PENDING, nothing of the old run left) and forgetting the node's reports. The
/// worker's journal sends the old run's reports again; the api refuses each (409: another
/// job that had this id) and the new job runs its own script and gets its own end; the
/// old run's job token no longer authenticates; and the api moves the job id sequence past
/// the ids the worker remembers, so that the next submission takes a fresh id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_that_takes_the_id_of_a_job_the_database_lost_never_gets_its_ending() {
    let mut c = TestCluster::start(Options {
        workers: 1,
        poll_wait: Some(1),
        ..Default::default()
    })
    .await;
    let old = format!(
        "#!/bin/bash\necho old >> {}/ran-$SLURM_JOB_ID\nexit 3\n",
        c.dir.display()
    );
    let id = c.submit(&old, &["--gres=gpu:1"]).await;
    let job = c.wait_ended(id, 60).await;
    assert_eq!((job.state, job.exit_code), (JobState::Failed, Some(3)));
    let old_token = c.job_token("alice", id, 0).await;

    // The promoted server: job `id` is a new submission (of the same user: only the
    // incarnation tells them apart), never run; the node's
    // reports since the old run's start are forgotten, and so is the highest job id it
    // remembers; the sequence hands out `id` next.
    c.stop("scheduler-0");
    let new = format!(
        "#!/bin/bash\necho new >> {}/ran-$SLURM_JOB_ID\nsleep 3\n",
        c.dir.display()
    );
    let db = c.db().await;
    let started_seq: i64 = sqlx::query_scalar(
        "SELECT (detail->>'seq')::bigint FROM job_events WHERE job_id = $1 AND kind = 'started'",
    )
    .bind(id)
    .fetch_one(&db)
    .await
    .unwrap();
    let mut tx = berth_db::begin(&db).await.unwrap();
    for sql in [
        "DELETE FROM job_events WHERE job_id = $1",
        "DELETE FROM usage_charges WHERE job_id = $1",
        "DELETE FROM job_output WHERE job_id = $1",
        "DELETE FROM allocations WHERE job_id = $1",
    ] {
        sqlx::query(sql).bind(id).execute(&mut *tx).await.unwrap();
    }
    sqlx::query(
        "UPDATE jobs SET incarnation = gen_random_uuid(), script = $2,
                state = 'PENDING', start_time = NULL, end_time = NULL, exit_code = NULL,
                exit_signal = NULL, reason = NULL WHERE id = $1",
    )
    .bind(id)
    .bind(&new)
    .execute(&mut *tx)
    .await
    .unwrap();
    sqlx::query("UPDATE node_report_state SET report_seq = $1, job_id_seen = 0")
        .bind(started_seq - 1)
        .execute(&mut *tx)
        .await
        .unwrap();
    sqlx::query("SELECT setval('jobs_id_seq', $1, false)")
        .bind(id)
        .execute(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();

    // The worker's next sync tells the api the ids it remembers: the sequence moves past.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (last, called): (i64, bool) =
            sqlx::query_as("SELECT last_value, is_called FROM jobs_id_seq")
                .fetch_one(&db)
                .await
                .unwrap();
        if last >= id && called {
            break;
        }
        assert!(Instant::now() < deadline, "{}", c.log("api"));
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    c.restart("scheduler-0");
    c.wait_for(id, 60, |j| j.state == JobState::Running).await;
    // The old run's token is not the new job's.
    let (status, body) = c
        .call(
            reqwest::Method::GET,
            &format!("/v1/jobs/{id}"),
            Some(&old_token),
            None,
        )
        .await;
    assert_eq!(status, 401, "{body}");
    let job = c.wait_ended(id, 60).await;
    assert_eq!(
        (job.state, job.exit_code),
        (JobState::Completed, Some(0)),
        "the new job got the old one's ending:\n{}",
        c.log("node-1")
    );
    assert_eq!(marker(&c, id), vec!["old", "new"], "each script ran once");
    assert!(
        c.log("api").contains("another job that had this id"),
        "{}",
        c.log("api")
    );
    // The next submission does not take an id the worker remembers.
    let next = c.submit("#!/bin/bash\ntrue\n", &["--gres=gpu:1"]).await;
    assert!(next > id, "{next} after {id}");
    db.close().await;
}
