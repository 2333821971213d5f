//! What the console's Queue and Job pages read: each pending job's place in the
//! scheduler's order (`queue_position`, following priority), the job list filtered by
//! account and QOS, a job's batch script (`GET /v1/jobs/{id}/script`), and the cluster's
//! GPU timeline of the overview (`GET /v1/usage/cluster/timeline`).

use crate::cluster::{Options, TestCluster};
use berth_core::wire::{Job, JobList};
use reqwest::Method;
use serde_json::json;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_jobs_show_their_queue_position_and_the_list_filters_by_account_and_qos() {
    // No worker: every job stays pending.
    let c = TestCluster::start(Options {
        workers: 0,
        ..Default::default()
    })
    .await;
    let admin = Some(c.token.as_str());
    // Alice (the cluster's admin token) charges `nlp` by default and may use `vision`.
    setup(
        &c,
        &[
            (
                Method::POST,
                "/v1/users",
                json!({"name": "alice", "role": "admin"}),
            ),
            (Method::POST, "/v1/accounts", json!({"name": "nlp"})),
            (Method::POST, "/v1/accounts", json!({"name": "vision"})),
            (
                Method::PUT,
                "/v1/accounts/nlp/users/alice",
                json!({"default": true}),
            ),
            (Method::PUT, "/v1/accounts/vision/users/alice", json!({})),
            (Method::PUT, "/v1/qos/high", json!({"priority": 100})),
        ],
    )
    .await;

    let script = "#!/bin/bash\n#SBATCH --job-name=pos\nsleep 1\n";
    let first = c.submit(script, &["--gres=gpu:1"]).await;
    let second = c.submit(script, &["--gres=gpu:1", "-A", "vision"]).await;
    let held = c.submit(script, &["--gres=gpu:1", "-H"]).await;
    let urgent = c.submit(script, &["--gres=gpu:1", "-q", "high"]).await;

    // Before the scheduler has ranked them, jobs without a priority come last, by age.
    // The held job has no place; once priorities are computed, the QOS `high` job leads
    // and the others follow by priority then age — on the job and in the list alike.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let jobs: Vec<Job> = jobs_now(&c, &[first, second, held, urgent]).await;
        let list: JobList = c.get("/v1/jobs?state=PENDING").await;
        let by_id = |id: i64| {
            list.items
                .iter()
                .find(|j| j.id == id)
                .unwrap()
                .queue_position
        };
        let pos: Vec<Option<u64>> = jobs.iter().map(|j| j.queue_position).collect();
        let listed = [by_id(first), by_id(second), by_id(held), by_id(urgent)];
        let ranked = jobs.iter().all(|j| j.id == held || j.priority.is_some());
        if ranked && pos == [Some(2), Some(3), None, Some(1)] && listed == pos[..] {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "positions {pos:?}, listed {listed:?}: {jobs:#?}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }

    // Filters by account and QOS.
    let ids = |l: JobList| l.items.iter().map(|j| j.id).collect::<Vec<_>>();
    assert_eq!(ids(c.get("/v1/jobs?account=vision").await), [second]);
    assert_eq!(ids(c.get("/v1/jobs?qos=high").await), [urgent]);
    assert!(ids(c.get("/v1/jobs?account=nosuch").await).is_empty());
    assert_eq!(
        ids(c.get("/v1/jobs?account=vision,nlp&state=PENDING").await),
        [first, second, held, urgent]
    );

    // Releasing the held job gives it a place; an ended job has none.
    let (s, _) = c
        .call(
            Method::POST,
            &format!("/v1/jobs/{held}/release"),
            admin,
            None,
        )
        .await;
    assert_eq!(s, 200);
    let (s, _) = c
        .call(
            Method::POST,
            &format!("/v1/jobs/{first}/cancel"),
            admin,
            None,
        )
        .await;
    assert_eq!(s, 200);
    let released = c.job(held).await;
    assert!(released.queue_position.is_some(), "{released:?}");
    assert_eq!(c.job(first).await.queue_position, None);
}

/// Makes each call as the cluster's admin, failing on any refusal.
async fn setup(c: &TestCluster, calls: &[(Method, &str, serde_json::Value)]) {
    for (method, path, body) in calls {
        let (s, answer) = c
            .call(method.clone(), path, Some(&c.token), Some(body.clone()))
            .await;
        assert!(s < 300, "{path}: {s} {answer}");
    }
}

async fn jobs_now(c: &TestCluster, ids: &[i64]) -> Vec<Job> {
    let mut out = Vec::new();
    for id in ids {
        out.push(c.job(*id).await);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobs_batch_script_reads_back_as_submitted_for_those_who_may_see_the_job() {
    let c = TestCluster::start(Options {
        workers: 0,
        ..Default::default()
    })
    .await;
    let script = "#!/bin/bash\n#SBATCH --job-name=<b>bold</b>\n# ünïcode\necho \"$HOME\"\n";
    let id = c.submit(script, &[]).await;
    let res = c
        .http
        .get(format!("{}/v1/jobs/{id}/script", c.url))
        .bearer_auth(&c.token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(
        res.headers()["content-type"].to_str().unwrap(),
        "text/plain; charset=utf-8"
    );
    assert_eq!(res.text().await.unwrap(), script);

    // Another plain user gets 404, as for the job itself.
    let other = c.token_for("mallory", berth_core::auth::Role::User);
    let (s, _) = c
        .call(
            Method::GET,
            &format!("/v1/jobs/{id}/script"),
            Some(&other),
            None,
        )
        .await;
    assert_eq!(s, 404);
    let (s, _) = c
        .call(Method::GET, "/v1/jobs/999999/script", Some(&c.token), None)
        .await;
    assert_eq!(s, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cluster_timeline_averages_the_minutes_of_each_bucket_over_gpu_models() {
    let c = TestCluster::start(Options {
        workers: 0,
        ..Default::default()
    })
    .await;
    // The scheduler's per-minute GPU state samples (two models) and a job's GPU samples,
    // written as the scheduler and the api write them, in a window of their own (2020).
    let db = c.db().await;
    for (minute, model, total, allocated, down) in [
        ("2020-01-01T10:00:00Z", "h100", 8, 4, 0),
        ("2020-01-01T10:00:00Z", "a100", 4, 0, 4),
        ("2020-01-01T10:01:00Z", "h100", 8, 8, 0),
        ("2020-01-01T10:01:00Z", "a100", 4, 2, 0),
        ("2020-01-01T10:05:00Z", "h100", 8, 0, 0),
    ] {
        sqlx::query(
            "INSERT INTO cluster_gpu_samples (minute, gpu_model, total, allocated, down,
                 planned_down, reserved) VALUES ($1::text::timestamptz, $2, $3, $4, $5, 0, 0)",
        )
        .bind(minute)
        .bind(model)
        .bind(total)
        .bind(allocated)
        .bind(down)
        .execute(&db)
        .await
        .unwrap();
    }
    let path =
        "/v1/usage/cluster/timeline?start=2020-01-01T10:00:00Z&end=2020-01-01T10:10:00Z&points=10";
    let t: serde_json::Value = c.get(path).await;
    assert_eq!(t["step_seconds"], 60, "{t}");
    let points = t["points"].as_array().unwrap();
    // Minutes without a sample are absent; each point sums the models of its minute.
    let row = |i: usize, k: &str| points[i][k].as_f64().unwrap();
    assert_eq!(points.len(), 3, "{t}");
    assert_eq!(
        (
            row(0, "gpus_total"),
            row(0, "gpus_allocated"),
            row(0, "gpus_down")
        ),
        (12.0, 4.0, 4.0)
    );
    assert_eq!(
        (row(1, "gpus_total"), row(1, "gpus_allocated")),
        (12.0, 10.0)
    );
    assert_eq!((row(2, "gpus_total"), row(2, "gpus_allocated")), (8.0, 0.0));
    assert!(points[0]["utilization_pct"].is_null(), "{t}");
    // Wider buckets average their minutes: 10 points over 20 minutes are 2 minutes wide.
    let t: serde_json::Value = c
        .get("/v1/usage/cluster/timeline?start=2020-01-01T10:00:00Z&end=2020-01-01T10:20:00Z&points=10")
        .await;
    assert_eq!(t["step_seconds"], 120, "{t}");
    assert_eq!(t["points"][0]["gpus_allocated"].as_f64(), Some(7.0), "{t}");
    // Bad parameters name themselves.
    for (query, field) in [
        ("points=3", "points"),
        ("start=2020-01-02&end=2020-01-01", "start"),
        ("end=someday", "end"),
    ] {
        let (s, p) = c
            .call(
                Method::GET,
                &format!("/v1/usage/cluster/timeline?{query}"),
                Some(&c.token),
                None,
            )
            .await;
        assert_eq!((s, p["field"].as_str()), (400, Some(field)), "{query}: {p}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_account_named_with_an_at_sign_takes_jobs_and_filters_them() {
    let c = TestCluster::start(Options {
        workers: 0,
        ..Default::default()
    })
    .await;
    setup(
        &c,
        &[
            (
                Method::POST,
                "/v1/users",
                json!({"name": "alice", "role": "admin"}),
            ),
            (Method::POST, "/v1/accounts", json!({"name": "ml@corp"})),
            (Method::PUT, "/v1/accounts/ml@corp/users/alice", json!({})),
        ],
    )
    .await;
    let id = c.submit("#!/bin/bash\ntrue\n", &["-A", "ml@corp"]).await;
    assert_eq!(c.job(id).await.account.as_deref(), Some("ml@corp"));
    let list: JobList = c.get("/v1/jobs?account=ml%40corp").await;
    assert_eq!(list.items.iter().map(|j| j.id).collect::<Vec<_>>(), [id]);
}
