//! Slurm's limits on the queue (issue 27): `MaxArraySize` and `MaxJobCount` refused at
//! submission with Slurm's words, ended jobs leaving the live queue after `MinJobAge`
//! (kept in accounting), and sbatch retrying its submission through a database switch
//! with an `Idempotency-Key` of its own (one job however many times it is sent).

use crate::cluster::{Options, TestCluster};
use crate::private_pg::PrivatePg;
use berth_core::state::JobState;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_array_size_and_max_job_count_refuse_submissions_with_slurms_words() {
    let c = TestCluster::start(Options {
        workers: 0,
        scheduler_config: "max_job_count = 3",
        ..Default::default()
    })
    .await;
    let script = c.dir.join("array.sbatch");
    std::fs::write(&script, "#!/bin/bash\necho $SLURM_ARRAY_TASK_ID\n").unwrap();
    let script = script.display().to_string();
    // Slurm's default MaxArraySize (1001): indices 0 to 1000.
    let (code, out, err) = c.slurm_command("sbatch", &c.token, &["--array=0-5000", &script]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("Invalid job array specification") && err.contains("MaxArraySize (1001)"),
        "{err}"
    );
    assert!(out.is_empty(), "{out}");
    let (code, out, err) = c.slurm_command(
        "sbatch",
        &c.token,
        &["--parsable", "--array=0-1000%4", &script],
    );
    assert_eq!(code, 0, "{out}{err}");
    let array: i64 = out.trim().parse().unwrap();
    assert_eq!(
        c.job(array).await.array_tasks_pending.as_deref(),
        Some("0-1000")
    );

    // MaxJobCount = 3: the array is one job record while its tasks are pending, so two
    // more fit and the next is refused (503, Retry-After, naming MaxJobCount).
    for _ in 0..2 {
        c.submit("#!/bin/bash\ntrue\n", &[]).await;
    }
    let answer = c
        .http
        .post(format!("{}/v1/jobs", c.url))
        .bearer_auth(&c.token)
        .json(&serde_json::json!({"script": "#!/bin/bash\ntrue\n"}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 503);
    assert!(answer.headers().contains_key("retry-after"));
    let problem: serde_json::Value = answer.json().await.unwrap();
    assert_eq!(problem["code"], "max_job_count", "{problem}");
    let detail = problem["detail"].as_str().unwrap();
    assert!(
        detail.contains("temporarily unable to accept job") && detail.contains("MaxJobCount (3)"),
        "{detail}"
    );
    let db = c.db().await;
    let jobs: i64 = sqlx::query_scalar("SELECT count(*) FROM jobs")
        .fetch_one(&db)
        .await
        .unwrap();
    assert_eq!(jobs, 3, "nothing of the refused submission was written");
    db.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ended_job_leaves_the_live_queue_after_min_job_age_and_stays_in_accounting() {
    let c = TestCluster::start(Options {
        workers: 1,
        gpus: "2xH100",
        scheduler_config: "min_job_age_seconds = 4",
        poll_wait: Some(1),
        ..Default::default()
    })
    .await;
    let ended = c.submit("#!/bin/bash\ntrue\n", &["--gres=gpu:1"]).await;
    let running = c.submit("#!/bin/bash\nsleep 60\n", &["--gres=gpu:1"]).await;
    assert_eq!(c.wait_ended(ended, 60).await.state, JobState::Completed);
    c.wait_for(running, 60, |j| j.state == JobState::Running)
        .await;
    let listed = |c: &TestCluster| {
        let (code, out, err) =
            c.slurm_command("squeue", &c.token, &["-t", "all", "-h", "-o", "%i %T"]);
        assert_eq!(code, 0, "{err}");
        out
    };
    let out = listed(&c);
    assert!(out.contains(&format!("{ended} COMPLETED")), "{out}");
    let end = c.job(ended).await.end_time.unwrap();
    // Gone from the live queue once min_job_age has passed since its end…
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = listed(&c);
        assert!(out.contains(&format!("{running} RUNNING")), "{out}");
        if !out.contains(&format!("{ended} ")) {
            assert!(
                chrono::Utc::now() - end >= chrono::Duration::seconds(4),
                "left before min_job_age: {out}"
            );
            break;
        }
        assert!(Instant::now() < deadline, "{out}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let queue: serde_json::Value = c.get("/v1/queue?state=COMPLETED").await;
    assert_eq!(queue["items"], serde_json::json!([]), "{queue}");
    // … and still in accounting and the jobs collection.
    let (code, out, err) = c.slurm_command(
        "sacct",
        &c.token,
        &["-j", &ended.to_string(), "-n", "-X", "-o", "JobID,State"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("COMPLETED"), "{out}");
    assert_eq!(c.job(ended).await.state, JobState::Completed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sbatch_retries_through_a_database_switch_and_makes_one_job() {
    let pg = PrivatePg::start();
    let c = TestCluster::start(Options {
        workers: 0,
        server_url: Some(pg.url()),
        ..Default::default()
    })
    .await;
    let script = c.dir.join("switch.sbatch");
    std::fs::write(&script, "#!/bin/bash\necho through the switch\n").unwrap();
    pg.down();
    let sbatch = c.slurm_command_spawn(
        "sbatch",
        &c.token,
        &["--parsable", &script.display().to_string()],
    );
    tokio::time::sleep(Duration::from_secs(5)).await;
    pg.up();
    let out = tokio::task::spawn_blocking(move || sbatch.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stderr.contains(
            "sbatch: error: Slurm temporarily unable to accept job, sleeping and retrying"
        ),
        "{stderr}"
    );
    let id: i64 = stdout.trim().parse().unwrap();
    let db = c.db().await;
    let made: Vec<i64> =
        sqlx::query_scalar("SELECT id FROM jobs WHERE script LIKE '%through the switch%'")
            .fetch_all(&db)
            .await
            .unwrap();
    assert_eq!(made, vec![id], "one job, however many times it was sent");
    db.close().await;
}
