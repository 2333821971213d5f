//! Nodes against each other (issue 10, items 3 and 5): a joined node (with its own
//! credential, or a `node:*` token acting as it) reporting on, uploading for, or asking
//! about job runs placed on another node, and a bootstrap token taking over a live
//! node's name. Each is refused, and the victim's job runs on undisturbed.

use crate::cluster::{Options, TestCluster};
use berth_core::auth::Role;
use berth_core::state::JobState;
use reqwest::Method;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// A node that is only an HTTP client (no worker process): what an attacker holding a
/// node's credential, or a test acting as a worker, sends.
pub struct FakeNode {
    /// The node's name.
    pub name: String,
    /// Its bearer token (a credential, or a `node:*` JWT).
    pub token: String,
}

impl FakeNode {
    /// Registers the node with `gpus` simulated H100s.
    pub async fn register(&self, c: &TestCluster, gpus: u32) {
        let gpus: Vec<Value> = (0..gpus)
            .map(|i| {
                json!({"index": i, "uuid": format!("GPU-{}-{i}", self.name),
                       "model": "NVIDIA H100 80GB HBM3", "memory_mib": 81559})
            })
            .collect();
        let (s, body) = c
            .call(
                Method::POST,
                "/v1/nodes/register",
                Some(&self.token),
                Some(json!({"name": self.name, "hostname": self.name, "cpus": 8,
                            "memory_mib": 65536, "gpus": gpus})),
            )
            .await;
        assert_eq!(s, 200, "{body}");
    }

    /// `POST /v1/nodes/{name}/sync` with `body` (its `wait_seconds` 0 unless given).
    pub async fn sync(&self, c: &TestCluster, mut body: Value) -> (u16, Value) {
        if body.get("wait_seconds").is_none() {
            body["wait_seconds"] = json!(0);
        }
        c.call(
            Method::POST,
            &format!("/v1/nodes/{}/sync", self.name),
            Some(&self.token),
            Some(body),
        )
        .await
    }
}

/// A job report as a worker sends it.
pub fn report(job: i64, run: u32, kind: &str, seq: u64) -> Value {
    json!({"job_id": job, "run": run, "kind": kind, "at": chrono::Utc::now(),
           "exit_code": if kind == "exited" { Some(0) } else { None },
           "signal": null, "message": if kind == "launch_failed" { Some("forged") } else { None },
           "seq": seq})
}

/// Joins node `name` with a fresh one-time bootstrap token; its credential.
async fn join(c: &TestCluster, name: &str) -> (u16, Value) {
    let (s, boot) = c
        .call(
            Method::POST,
            "/v1/nodes/bootstrap-tokens",
            Some(&c.token),
            Some(json!({"ttl_minutes": 5})),
        )
        .await;
    assert_eq!(s, 201, "{boot}");
    c.call(
        Method::POST,
        "/v1/nodes/join",
        boot["token"].as_str(),
        Some(json!({"name": name})),
    )
    .await
}

async fn events_by(c: &TestCluster, job: i64, node: &str) -> Vec<String> {
    let db = c.db().await;
    sqlx::query_scalar("SELECT kind FROM job_events WHERE job_id = $1 AND node = $2 ORDER BY id")
        .bind(job)
        .bind(node)
        .fetch_all(&db)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_cannot_report_upload_for_or_learn_about_another_nodes_runs() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    // The victim: a job on node-1 with a step task there.
    let id = c
        .submit(
            "#!/bin/bash\nsrun sleep 25\necho victim done\n",
            &["--gres=gpu:1", "-t", "10"],
        )
        .await;
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let (_, steps) = c
            .call(
                Method::GET,
                &format!("/v1/jobs/{id}/steps"),
                Some(&c.token),
                None,
            )
            .await;
        let running = steps["items"][0]["state"] == "RUNNING";
        if running {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the victim's step did not start: {steps}\n{}",
            c.log("node-1")
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // The attacker: a node that joined with its own bootstrap token …
    let (s, joined) = join(&c, "bxs-evil").await;
    assert_eq!(s, 200, "{joined}");
    let evil = FakeNode {
        name: "bxs-evil".into(),
        token: joined["credential"].as_str().unwrap().to_string(),
    };
    evil.register(&c, 1).await;
    // … and a `node:*` token acting as that node: it may act as any node, but reports
    // still name runs of the node in the URL.
    let star = FakeNode {
        name: "bxs-evil".into(),
        token: c.token_for("node:*", Role::Node),
    };
    for attacker in [&evil, &star] {
        let forged = json!({
            "reports": [report(id, 0, "started", 1), report(id, 0, "exited", 2),
                        {"job_id": id, "run": 0, "kind": "launch_failed", "at": chrono::Utc::now(),
                         "exit_code": null, "signal": null, "message": "forged", "seq": 3,
                         "launch_fault": "node"}],
            "time_limits": [{"job_id": id, "run": 0}],
            "step_reports": [{"key": {"job_id": id, "run": 0, "step_id": 0, "task_id": 0},
                              "kind": "exited", "at": chrono::Utc::now(), "exit_code": 0}],
            "running": [{"job_id": id, "run": 0}],
            "running_tasks": [{"job_id": id, "run": 0, "step_id": 0, "task_id": 0}],
        });
        let (s, answer) = attacker.sync(&c, forged).await;
        assert_eq!(s, 200, "{answer}");
        let rejected = answer["rejected"].as_array().unwrap();
        assert_eq!(
            rejected.len(),
            5,
            "every forged report is refused: {answer}"
        );
        for r in rejected {
            assert_eq!(r["status"], 403, "{r}");
            assert!(
                r["detail"]
                    .as_str()
                    .unwrap()
                    .contains("not placed on node bxs-evil"),
                "{r}"
            );
        }
        let sources: Vec<&str> = rejected
            .iter()
            .map(|r| r["source"].as_str().unwrap())
            .collect();
        assert_eq!(
            sources,
            [
                "time_limit",
                "job_report",
                "job_report",
                "job_report",
                "step_report"
            ]
        );
        // It learns nothing of the run: no assignment, no time limit, no step task.
        assert_eq!(answer["assignments"], json!([]), "{answer}");
        assert_eq!(answer["run_limits"], json!([]), "{answer}");
        assert_eq!(answer["step_tasks"], json!([]), "{answer}");

        // Output: its own credential uploads for no run of the job; `node:*` only for
        // runs that were placed (never for a run that does not exist).
        let chunk = json!({"run": 7, "stream": "stdout", "offset": 0, "data": "forged\n"});
        let (s, problem) = c
            .call(
                Method::POST,
                &format!("/v1/jobs/{id}/output"),
                Some(&attacker.token),
                Some(chunk),
            )
            .await;
        assert_eq!(s, 404, "{problem}");
    }
    let (s, problem) = c
        .call(
            Method::POST,
            &format!("/v1/jobs/{id}/output"),
            Some(&evil.token),
            Some(json!({"run": 0, "stream": "stdout", "offset": 0, "data": "forged\n"})),
        )
        .await;
    assert_eq!(s, 404, "{problem}");
    let (s, problem) = c
        .call(
            Method::POST,
            &format!("/v1/jobs/{id}/steps/0/output"),
            Some(&evil.token),
            Some(
                json!({"run": 0, "task_id": 0, "stream": "stdout", "offset": 0,
                        "data": "forged\n"}),
            ),
        )
        .await;
    assert_eq!(s, 404, "{problem}");

    // Nothing of it reached the job: still running in its first run on node-1, its step
    // task live, no event in the attacker's name, no TIMEOUT decision.
    let job = c.job(id).await;
    assert_eq!(job.state, JobState::Running, "{job:?}");
    assert_eq!(job.restart_count, 0);
    assert!(events_by(&c, id, "bxs-evil").await.is_empty());
    let db = c.db().await;
    let (time_limits, live_tasks): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM job_events WHERE job_id = $1 AND kind = 'time_limit'),
                (SELECT count(*) FROM step_tasks WHERE job_id = $1 AND ended_at IS NULL)",
    )
    .bind(id)
    .fetch_one(&db)
    .await
    .unwrap();
    assert_eq!((time_limits, live_tasks), (0, 1));
    // The victim ends as it would have: its own output, COMPLETED, exit 0.
    let job = c.wait_ended(id, 120).await;
    assert_eq!(job.state, JobState::Completed, "{job:?}");
    assert_eq!(job.exit_code, Some(0));
    let out = c.output(id).await;
    assert!(
        out.contains("victim done") && !out.contains("forged"),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bootstrap_token_cannot_take_over_a_nodes_name() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    // node-1 is live (registered with a `node:*` token, no credential): a reusable
    // bootstrap token does not get a credential for its name, so it never receives
    // node-1's assignments (other users' scripts and job tokens).
    let (_, reusable) = c
        .call(
            Method::POST,
            "/v1/nodes/bootstrap-tokens",
            Some(&c.token),
            Some(json!({"one_time": false, "ttl_minutes": 5})),
        )
        .await;
    let reusable = reusable["token"].as_str().unwrap().to_string();
    let (s, problem) = c
        .call(
            Method::POST,
            "/v1/nodes/join",
            Some(&reusable),
            Some(json!({"name": "node-1"})),
        )
        .await;
    assert_eq!(s, 409, "{problem}");
    assert!(
        problem["detail"].as_str().unwrap().contains("re-keys"),
        "{problem}"
    );
    // Nor under the same name in other letters' case, which every listing would show
    // as the same node.
    let (s, problem) = c
        .call(
            Method::POST,
            "/v1/nodes/join",
            Some(&reusable),
            Some(json!({"name": "NODE-1"})),
        )
        .await;
    assert_eq!(s, 409, "{problem}");
    // A name that joined (not yet registered) is taken as well.
    let (s, first) = c
        .call(
            Method::POST,
            "/v1/nodes/join",
            Some(&reusable),
            Some(json!({"name": "bxs-pool-1"})),
        )
        .await;
    assert_eq!(s, 200, "{first}");
    let (s, problem) = c
        .call(
            Method::POST,
            "/v1/nodes/join",
            Some(&reusable),
            Some(json!({"name": "bxs-pool-1"})),
        )
        .await;
    assert_eq!(s, 409, "{problem}");
    // The first credential still works; node-1's routes stay closed to it.
    let pool = FakeNode {
        name: "bxs-pool-1".into(),
        token: first["credential"].as_str().unwrap().to_string(),
    };
    pool.register(&c, 1).await;
    let node1 = FakeNode {
        name: "node-1".into(),
        token: pool.token.clone(),
    };
    let (s, _) = node1.sync(&c, json!({})).await;
    assert_eq!(s, 403);
}
