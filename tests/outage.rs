//! Database outage: the api answers 503 (never 500) while PostgreSQL restarts; running
//! jobs keep running through an outage shorter than the node's lease; the worker keeps
//! its reports in its on-disk journal and replays them, in order and applied once; api,
//! scheduler and worker reconnect by themselves; no node is declared DOWN for the
//! silence the outage caused. An outage longer than the lease stops the node's runs (the
//! node cannot know whether the scheduler requeued them meanwhile); the job is requeued
//! and runs again, so it never runs twice at once.

use crate::cluster::{Options, TestCluster};
use crate::private_pg::PrivatePg;
use berth_core::state::{JobState, NodeState};
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_survives_a_database_restart_and_no_report_is_lost() {
    let pg = PrivatePg::start();
    let c = TestCluster::start(Options {
        workers: 1,
        gpus: "4xH100",
        // A 9 s lease: outages up to about 7 s are harmless.
        scheduler_config: "node_timeout_seconds = 10",
        poll_wait: Some(1),
        server_url: Some(pg.url()),
        ..Default::default()
    })
    .await;
    let id = c
        .submit(
            "#!/bin/bash\nsleep 4\necho finished\nexit 3\n",
            &["--gres=gpu:1"],
        )
        .await;
    c.wait_for(id, 60, |j| j.state == JobState::Running).await;
    // RUNNING is the scheduler's placement; wait until the worker has launched the job
    // (its output file exists), or the outage could keep it from ever hearing of it.
    let out_file = c.dir.join(format!("slurm-{id}.out"));
    let deadline = Instant::now() + Duration::from_secs(60);
    while !out_file.exists() {
        assert!(
            Instant::now() < deadline,
            "the worker never launched job {id}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    pg.down();
    let down = Instant::now();
    // Requests fail with 503 and a problem document while the database is away.
    for (method, path) in [
        ("GET", "/v1/jobs"),
        ("GET", "/readyz"),
        ("POST", "/v1/jobs"),
    ] {
        let req = match method {
            "GET" => c.http.get(format!("{}{path}", c.url)),
            _ => c
                .http
                .post(format!("{}{path}", c.url))
                .json(&serde_json::json!({
                    "script": "#!/bin/bash\ntrue\n"
                })),
        };
        let r = req.bearer_auth(&c.token).send().await.unwrap();
        assert_eq!(r.status().as_u16(), 503, "{method} {path}");
        let problem: serde_json::Value = r.json().await.unwrap();
        assert_eq!(problem["code"], "unavailable", "{problem}");
    }
    // The job keeps running and ends during the outage (its output file says so); its
    // exit report waits in the worker until the api can take it.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(&out_file)
        .unwrap_or_default()
        .contains("finished")
    {
        assert!(
            Instant::now() < deadline,
            "the job did not finish during the outage"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Keep the database away 6 s.
    tokio::time::sleep(Duration::from_secs(6).saturating_sub(down.elapsed())).await;
    pg.up();
    println!("database was down for {:?}", down.elapsed());

    // The report is replayed once the api reaches the database again.
    let job = c.wait_ended(id, 60).await;
    assert_eq!((job.state, job.exit_code), (JobState::Failed, Some(3)));
    assert!(c.output(id).await.contains("finished"));
    let db = c.db().await;
    let exited: Vec<serde_json::Value> =
        sqlx::query_scalar("SELECT detail FROM job_events WHERE job_id = $1 AND kind = 'exited'")
            .bind(id)
            .fetch_all(&db)
            .await
            .unwrap();
    assert_eq!(exited.len(), 1);
    let started_seq: i64 = sqlx::query_scalar(
        "SELECT (detail->>'seq')::bigint FROM job_events WHERE job_id = $1 AND kind = 'started'",
    )
    .bind(id)
    .fetch_one(&db)
    .await
    .unwrap();
    assert!(
        exited[0]["seq"].as_i64().unwrap() > started_seq,
        "{exited:?}"
    );
    // The journal is empty again once acknowledged.
    let journal = c.dir.join("node-1/journal/reports.jsonl");
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::fs::read_to_string(&journal)
        .unwrap()
        .contains("\"exited\"")
    {
        assert!(Instant::now() < deadline, "journal not cleared");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // The scheduler and the worker are back: a new job runs, on the same node, which
    // was never declared DOWN for the outage's silence.
    let next = c
        .submit("#!/bin/bash\necho again\n", &["--gres=gpu:1"])
        .await;
    let job = c.wait_ended(next, 60).await;
    assert_eq!(job.state, JobState::Completed);
    assert_eq!(job.allocations[0].node, "node-1");
    let node = c.wait_node("node-1", 5, |_| true).await;
    assert_ne!(node.state, NodeState::Down);
    let downs: i64 = sqlx::query_scalar("SELECT count(*) FROM job_events WHERE kind = 'node_fail'")
        .fetch_one(&db)
        .await
        .unwrap();
    assert_eq!(downs, 0);
    db.close().await;

    // An outage longer than the node timeout: the running job's node cannot renew its
    // lease, so its shepherd stops the run; once the api hears of it, the job is
    // requeued (a node failure) and runs again. The node is never DOWN: it was silent
    // only while nothing could be recorded.
    let long = c
        .submit(
            "#!/bin/bash\nexec 9>>$SLURM_SUBMIT_DIR/lock-$SLURM_JOB_ID\n\
             flock -n 9 || echo twice >> $SLURM_SUBMIT_DIR/doubles\n\
             echo run=$SLURM_RESTART_COUNT\n\
             if [ $SLURM_RESTART_COUNT = 0 ]; then sleep 120; fi\n",
            &["--gres=gpu:1"],
        )
        .await;
    c.wait_for(long, 60, |j| j.state == JobState::Running).await;
    let out_file = c.dir.join(format!("slurm-{long}.out"));
    let deadline = Instant::now() + Duration::from_secs(60);
    while !std::fs::read_to_string(&out_file)
        .unwrap_or_default()
        .contains("run=0")
    {
        assert!(Instant::now() < deadline, "job {long} never started");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    pg.down();
    let down = Instant::now();
    tokio::time::sleep(Duration::from_secs(13).saturating_sub(down.elapsed())).await;
    pg.up();
    let job = c
        .wait_for(long, 90, |j| j.restart_count == 1 && j.state.is_terminal())
        .await;
    assert_eq!(
        job.state,
        JobState::Completed,
        "{job:?}\n{}",
        c.log("node-1")
    );
    let db = c.db().await;
    let exited: serde_json::Value = sqlx::query_scalar(
        "SELECT detail FROM job_events WHERE job_id = $1 AND run = 0 AND kind = 'exited'",
    )
    .bind(long)
    .fetch_one(&db)
    .await
    .unwrap();
    assert_eq!(exited["node_failed"], true, "{exited}");
    assert!(!c.dir.join("doubles").exists(), "ran twice at once");
    let node = c.wait_node("node-1", 5, |_| true).await;
    assert_ne!(node.state, NodeState::Down);
    db.close().await;
    assert!(
        !c.log("api").contains("\"status\":500") && !c.log("api").contains("internal error"),
        "the api answered 500 during the outage"
    );
}
