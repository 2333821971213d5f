//! The slurmrestd-compatible subset (issue 15) as an existing client sees it: requests
//! with `X-SLURM-USER-NAME` and `X-SLURM-USER-TOKEN`, every answer validated against
//! slurmrestd's published v0.0.44 document (`tests/data/slurmrestd-v0.0.44.json`).
//! A ping answers; a name that is not the token's user is 401; a job submitted through
//! `job/submit` runs to COMPLETED; another tenant's jobs are invisible; `DELETE` cancels;
//! slurmdb shows the finished job; tokens get no more than on `/v1`, and the api's rate
//! and size limits hold, answering in slurmrestd's shapes.

use crate::cluster::{Options, TestCluster};
use berth_core::auth::Role;
use reqwest::Method;
use serde_json::{json, Value};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const SLURM: &str = "/slurm/v0.0.44";
const SLURMDB: &str = "/slurmdb/v0.0.44";

fn document() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/data/slurmrestd-v0.0.44.json"
        );
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    })
}

/// Why `body` is not valid against the document's schema `name`
/// (`v0.0.44_openapi_ping_array_resp` …); empty when it is.
fn violations(name: &str, body: &Value) -> Vec<String> {
    let schema = json!({
        "$ref": format!("#/components/schemas/{name}"),
        "components": document()["components"],
    });
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft4)
        .build(&schema)
        .unwrap();
    validator
        .iter_errors(body)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

/// Asserts that `body` is valid against the document's schema `name`.
fn assert_valid(name: &str, body: &Value) {
    let errors = violations(name, body);
    assert!(
        errors.is_empty(),
        "not a valid {name}: {errors:#?}\n{body:#}"
    );
}

/// Sends `method path` with the slurmrestd headers (`name`, `token`) and a JSON body.
async fn slurm(
    c: &TestCluster,
    method: Method,
    path: &str,
    name: Option<&str>,
    token: Option<&str>,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = c.http.request(method, format!("{}{path}", c.url));
    if let Some(name) = name {
        request = request.header("X-SLURM-USER-NAME", name);
    }
    if let Some(token) = token {
        request = request.header("X-SLURM-USER-TOKEN", token);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text:?}")),
    )
}

/// `GET path` as `user` (their token in the slurmrestd headers).
async fn get_as(c: &TestCluster, user: &str, token: &str, path: &str) -> (u16, Value) {
    slurm(c, Method::GET, path, Some(user), Some(token), None).await
}

fn ids(body: &Value) -> Vec<i64> {
    body["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["job_id"].as_i64().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slurmrestd_clients_ping_submit_watch_cancel_and_account() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    c.wait_leader(60).await;
    let a = Some(c.token.as_str());
    for (account, user) in [("physics", "bob"), ("chem", "carol")] {
        let (s, body) = c
            .call(Method::POST, "/v1/users", a, Some(json!({"name": user})))
            .await;
        assert_eq!(s, 201, "{body}");
        let (s, body) = c
            .call(
                Method::POST,
                "/v1/accounts",
                a,
                Some(json!({"name": account})),
            )
            .await;
        assert_eq!(s, 201, "{body}");
        let (s, body) = c
            .call(
                Method::PUT,
                &format!("/v1/accounts/{account}/users/{user}"),
                a,
                Some(json!({})),
            )
            .await;
        assert_eq!(s, 200, "{body}");
    }
    // The validator does refuse what breaks the document (a ping without `pings`, a
    // job state Slurm does not have).
    assert!(!violations("v0.0.44_openapi_ping_array_resp", &json!({})).is_empty());
    assert!(!violations(
        "v0.0.44_openapi_job_info_resp",
        &json!({"jobs": [{"job_state": ["DONE"]}], "last_backfill": {}, "last_update": {}}),
    )
    .is_empty());
    let bob = c.token_for("bob", Role::User);
    let carol = c.token_for("carol", Role::User);

    // The acceptance line: ping with the headers answers 200, valid against the document.
    let (s, body) = get_as(&c, "alice", &c.token, &format!("{SLURM}/ping/")).await;
    assert_eq!(s, 200, "{body}");
    assert_valid("v0.0.44_openapi_ping_array_resp", &body);
    assert_eq!(body["pings"][0]["responding"], true, "{body}");
    assert_eq!(body["meta"]["client"]["user"], "alice");
    // The same with a bearer token and no name.
    let (s, body) = c.call(Method::GET, &format!("{SLURM}/ping"), a, None).await;
    assert_eq!(s, 200, "{body}");
    // A name that is not the token's user: 401, never the named user.
    let (s, body) = get_as(&c, "alice", &bob, &format!("{SLURM}/ping/")).await;
    assert_eq!(s, 401, "{body}");
    assert_valid("v0.0.44_openapi_ping_array_resp", &body);
    assert_eq!(body["errors"][0]["error_number"], 9008, "{body}");
    assert_eq!(body["pings"], json!([]));
    // No credentials at all, and a token that does not verify: 401.
    let (s, body) = slurm(&c, Method::GET, &format!("{SLURM}/jobs/"), None, None, None).await;
    assert_eq!(s, 401, "{body}");
    assert_valid("v0.0.44_openapi_job_info_resp", &body);
    let (s, _) = get_as(&c, "bob", "not-a-token", &format!("{SLURM}/jobs/")).await;
    assert_eq!(s, 401);

    // Submit as bob through job/submit: it runs to COMPLETED.
    let path_env = format!("PATH={}", std::env::var("PATH").unwrap_or_default());
    let dir = c.dir.to_string_lossy().into_owned();
    let (s, body) = slurm(
        &c,
        Method::POST,
        &format!("{SLURM}/job/submit"),
        Some("bob"),
        Some(&bob),
        Some(json!({
            "script": "#!/bin/bash\necho hello from slurmrestd\n",
            "job": {
                "name": "rest-hello",
                "current_working_directory": dir,
                "environment": [path_env],
                "time_limit": {"set": true, "infinite": false, "number": 5},
                "tasks": 1,
            },
        })),
    )
    .await;
    assert_eq!(s, 200, "{body}");
    assert_valid("v0.0.44_openapi_job_submit_response", &body);
    let id = body["job_id"].as_i64().unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    let job = loop {
        let (s, body) = get_as(&c, "bob", &bob, &format!("{SLURM}/job/{id}")).await;
        assert_eq!(s, 200, "{body}");
        assert_valid("v0.0.44_openapi_job_info_resp", &body);
        let job = body["jobs"][0].clone();
        let state = job["job_state"][0].as_str().unwrap().to_string();
        if !matches!(state.as_str(), "PENDING" | "RUNNING" | "COMPLETING") {
            break job;
        }
        assert!(Instant::now() < deadline, "job {id} still {state}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(job["job_state"], json!(["COMPLETED"]), "{job:#}");
    assert_eq!(job["name"], "rest-hello");
    assert_eq!(job["user_name"], "bob");
    assert_eq!(job["account"], "physics");
    assert_eq!(job["time_limit"]["number"], 5);
    assert_eq!(job["exit_code"]["status"], json!(["SUCCESS"]));
    assert_eq!(job["exit_code"]["return_code"]["number"], 0);
    assert!(c.output(id).await.contains("hello from slurmrestd"));

    // Another tenant does not see it: 404 for the job, absent from the lists.
    let (s, body) = get_as(&c, "carol", &carol, &format!("{SLURM}/job/{id}")).await;
    assert_eq!(s, 404, "{body}");
    assert_valid("v0.0.44_openapi_job_info_resp", &body);
    assert_eq!(body["errors"][0]["error_number"], 2017, "{body}");

    // A held job stays pending: listed for bob, not for carol; carol cannot cancel it.
    let (s, body) = slurm(
        &c,
        Method::POST,
        &format!("{SLURM}/job/submit/"),
        Some("bob"),
        Some(&bob),
        Some(json!({
            "job": {
                "script": "#!/bin/bash\nsleep 600\n",
                "name": "held",
                "hold": true,
                "time_limit": 10,
                "current_working_directory": dir,
                "environment": ["A=1"],
            },
        })),
    )
    .await;
    assert_eq!(s, 200, "{body}");
    let held = body["job_id"].as_i64().unwrap();
    let (s, body) = get_as(&c, "bob", &bob, &format!("{SLURM}/jobs/")).await;
    assert_eq!(s, 200, "{body}");
    assert_valid("v0.0.44_openapi_job_info_resp", &body);
    assert_eq!(ids(&body), vec![held], "{body}");
    assert_eq!(body["jobs"][0]["hold"], true);
    assert_eq!(body["jobs"][0]["job_state"], json!(["PENDING"]));
    let (s, body) = get_as(&c, "carol", &carol, &format!("{SLURM}/jobs")).await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(ids(&body), Vec::<i64>::new(), "{body}");
    let (s, body) = slurm(
        &c,
        Method::DELETE,
        &format!("{SLURM}/job/{held}"),
        Some("carol"),
        Some(&carol),
        None,
    )
    .await;
    assert_eq!(s, 404, "{body}");
    assert_valid("v0.0.44_openapi_kill_job_resp", &body);

    // bob lowers its time limit (POST job/{id}), then cancels it (DELETE).
    let (s, body) = slurm(
        &c,
        Method::POST,
        &format!("{SLURM}/job/{held}"),
        Some("bob"),
        Some(&bob),
        Some(json!({"time_limit": {"set": true, "number": 3}})),
    )
    .await;
    assert_eq!(s, 200, "{body}");
    assert_valid("v0.0.44_openapi_job_post_response", &body);
    let (_, body) = get_as(&c, "bob", &bob, &format!("{SLURM}/job/{held}")).await;
    assert_eq!(body["jobs"][0]["time_limit"]["number"], 3, "{body}");
    // Raising it is for admins, as on /v1.
    let (s, body) = slurm(
        &c,
        Method::POST,
        &format!("{SLURM}/job/{held}"),
        Some("bob"),
        Some(&bob),
        Some(json!({"time_limit": 600})),
    )
    .await;
    assert_eq!(s, 403, "{body}");
    assert_valid("v0.0.44_openapi_job_post_response", &body);
    let (s, body) = slurm(
        &c,
        Method::DELETE,
        &format!("{SLURM}/job/{held}?signal=SIGKILL"),
        Some("bob"),
        Some(&bob),
        None,
    )
    .await;
    assert_eq!(s, 200, "{body}");
    assert_valid("v0.0.44_openapi_kill_job_resp", &body);
    let (_, body) = get_as(&c, "bob", &bob, &format!("{SLURM}/job/{held}")).await;
    assert_eq!(body["jobs"][0]["job_state"], json!(["CANCELLED"]), "{body}");

    // The cancellation is in the audit log, as bob's.
    let (s, audit) = c.call(Method::GET, "/v1/audit?actor=bob", a, None).await;
    assert_eq!(s, 200, "{audit}");
    assert!(
        audit["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["method"] == "DELETE"
                && e["path"] == format!("{SLURM}/job/{held}")
                && e["status"] == 200),
        "{audit:#}"
    );

    // A field Berth does not honour is refused by name, and nothing is submitted.
    let (s, body) = slurm(
        &c,
        Method::POST,
        &format!("{SLURM}/job/submit"),
        Some("bob"),
        Some(&bob),
        Some(json!({"script": "#!/bin/bash\ntrue\n", "job": {"argv": ["x"]}})),
    )
    .await;
    assert_eq!(s, 400, "{body}");
    assert_valid("v0.0.44_openapi_job_submit_response", &body);
    assert_eq!(body["errors"][0]["source"], "job.argv", "{body}");
    // An sbatch-level refusal names the job_desc field it came from.
    let (s, body) = slurm(
        &c,
        Method::POST,
        &format!("{SLURM}/job/submit"),
        Some("bob"),
        Some(&bob),
        Some(json!({"script": "#!/bin/bash\ntrue\n", "job": {"partition": "nope"}})),
    )
    .await;
    assert_eq!(s, 400, "{body}");
    assert!(
        body["errors"][0]["source"]
            .as_str()
            .unwrap()
            .starts_with("job.partition"),
        "{body}"
    );

    // slurmdb: the finished job, for bob; not for carol.
    let (s, body) = get_as(&c, "bob", &bob, &format!("{SLURMDB}/jobs/")).await;
    assert_eq!(s, 200, "{body}");
    assert_valid("v0.0.44_openapi_slurmdbd_jobs_resp", &body);
    let done = body["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["job_id"] == id)
        .unwrap_or_else(|| panic!("job {id} missing: {body:#}"));
    assert_eq!(done["state"]["current"], json!(["COMPLETED"]));
    assert_eq!(done["user"], "bob");
    assert_eq!(done["exit_code"]["status"], json!(["SUCCESS"]));
    let (s, body) = get_as(&c, "carol", &carol, &format!("{SLURMDB}/jobs/")).await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(ids(&body), Vec::<i64>::new(), "{body}");
    let (s, body) = get_as(&c, "carol", &carol, &format!("{SLURMDB}/job/{id}")).await;
    assert_eq!(s, 404, "{body}");
    assert_valid("v0.0.44_openapi_slurmdbd_jobs_resp", &body);
    let (s, body) = get_as(&c, "bob", &bob, &format!("{SLURMDB}/job/{id}")).await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(ids(&body), vec![id]);

    // The cluster's other reads answer in the document's shapes, with /v1's visibility.
    for (path, schema) in [
        ("/slurm/v0.0.44/diag/", "v0.0.44_openapi_diag_resp"),
        ("/slurm/v0.0.44/nodes/", "v0.0.44_openapi_nodes_resp"),
        ("/slurm/v0.0.44/node/node-1", "v0.0.44_openapi_nodes_resp"),
        (
            "/slurm/v0.0.44/partitions/",
            "v0.0.44_openapi_partition_resp",
        ),
        (
            "/slurm/v0.0.44/reservations/",
            "v0.0.44_openapi_reservation_resp",
        ),
        ("/slurm/v0.0.44/shares", "v0.0.44_openapi_shares_resp"),
        (
            "/slurmdb/v0.0.44/accounts/",
            "v0.0.44_openapi_accounts_resp",
        ),
        ("/slurmdb/v0.0.44/users/", "v0.0.44_openapi_users_resp"),
        ("/slurmdb/v0.0.44/qos/", "v0.0.44_openapi_slurmdbd_qos_resp"),
    ] {
        let (s, body) = get_as(&c, "alice", &c.token, path).await;
        assert_eq!(s, 200, "{path}: {body}");
        assert_valid(schema, &body);
    }
    let (_, body) = get_as(&c, "alice", &c.token, &format!("{SLURM}/nodes/")).await;
    assert_eq!(body["nodes"][0]["name"], "node-1", "{body}");
    let (_, body) = get_as(&c, "alice", &c.token, &format!("{SLURMDB}/users/")).await;
    let names: Vec<&str> = body["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"bob") && names.contains(&"carol"), "{body}");
    // A user sees themself only, and only their accounts.
    let (_, body) = get_as(&c, "carol", &carol, &format!("{SLURMDB}/users/")).await;
    assert_eq!(body["users"].as_array().unwrap().len(), 1, "{body}");
    assert_eq!(body["users"][0]["name"], "carol");
    let (_, body) = get_as(&c, "carol", &carol, &format!("{SLURMDB}/accounts/")).await;
    let accounts: Vec<&str> = body["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert!(!accounts.contains(&"physics"), "{body}");
    // An unknown operation: 404 in the document's error shape.
    let (s, body) = get_as(&c, "alice", &c.token, &format!("{SLURM}/licenses/")).await;
    assert_eq!(s, 404, "{body}");
    assert_valid("v0.0.44_openapi_resp", &body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_get_nothing_here_they_lack_on_v1() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let a = Some(c.token.as_str());
    let (s, body) = c
        .call(Method::POST, "/v1/users", a, Some(json!({"name": "bob"})))
        .await;
    assert_eq!(s, 201, "{body}");
    let bob = c.token_for("bob", Role::User);
    let dir = c.dir.to_string_lossy().into_owned();
    let submit = |token: String, script: &'static str| {
        let dir = dir.clone();
        let c = &c;
        async move {
            slurm(
                c,
                Method::POST,
                &format!("{SLURM}/job/submit"),
                Some("bob"),
                Some(&token),
                Some(json!({"script": script, "job": {"current_working_directory": dir}})),
            )
            .await
        }
    };

    // A read-only API token reads, and submits nothing.
    let (s, created) = c
        .call(
            Method::POST,
            "/v1/tokens",
            Some(&bob),
            Some(json!({"name": "ro", "scope": "read-only"})),
        )
        .await;
    assert_eq!(s, 201, "{created}");
    let read_only = created["token"].as_str().unwrap().to_string();
    let (s, body) = get_as(&c, "bob", &read_only, &format!("{SLURM}/jobs/")).await;
    assert_eq!(s, 200, "{body}");
    let (s, body) = submit(read_only.clone(), "#!/bin/bash\ntrue\n").await;
    assert_eq!(s, 403, "{body}");
    assert_valid("v0.0.44_openapi_job_submit_response", &body);
    // The API token's user is its owner: another name is 401.
    let (s, _) = get_as(&c, "alice", &read_only, &format!("{SLURM}/jobs/")).await;
    assert_eq!(s, 401);

    // A running job's own token: its job, yes; the nodes or another job, no.
    let (s, body) = submit(bob.clone(), "#!/bin/bash\nsleep 600\n").await;
    assert_eq!(s, 200, "{body}");
    let running = body["job_id"].as_i64().unwrap();
    let (s, body) = submit(bob.clone(), "#!/bin/bash\nsleep 600\n").await;
    assert_eq!(s, 200, "{body}");
    let other = body["job_id"].as_i64().unwrap();
    c.wait_for(running, 60, |j| {
        j.state == berth_core::state::JobState::Running
    })
    .await;
    let job_token = berth_api::auth::mint_job_token(crate::cluster::SECRET, "bob", running, 0, 600);
    let (s, body) = get_as(&c, "bob", &job_token, &format!("{SLURM}/job/{running}")).await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(body["jobs"][0]["job_state"], json!(["RUNNING"]), "{body}");
    let (s, body) = get_as(&c, "bob", &job_token, &format!("{SLURM}/job/{other}")).await;
    assert_eq!(s, 404, "{body}");
    for path in [
        "/slurm/v0.0.44/nodes/",
        "/slurm/v0.0.44/diag/",
        "/slurmdb/v0.0.44/users/",
    ] {
        let (s, body) = get_as(&c, "bob", &job_token, path).await;
        assert_eq!(s, 403, "{path}: {body}");
    }
    // It may not hold a job (no hold on /v1 either), but may cancel its own.
    let (s, body) = slurm(
        &c,
        Method::POST,
        &format!("{SLURM}/job/{running}"),
        Some("bob"),
        Some(&job_token),
        Some(json!({"hold": true})),
    )
    .await;
    assert_eq!(s, 403, "{body}");
    let (s, body) = slurm(
        &c,
        Method::DELETE,
        &format!("{SLURM}/job/{running}"),
        Some("bob"),
        Some(&job_token),
        None,
    )
    .await;
    assert_eq!(s, 200, "{body}");
    let job = c.wait_ended(running, 60).await;
    assert_eq!(job.state, berth_core::state::JobState::Cancelled);
    let (s, _) = slurm(
        &c,
        Method::DELETE,
        &format!("{SLURM}/job/{other}"),
        Some("bob"),
        Some(&bob),
        None,
    )
    .await;
    assert_eq!(s, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_limits_apply_and_answer_in_slurmrestd_shapes() {
    let c = TestCluster::start_with_api_config(
        Options {
            workers: 0,
            ..Default::default()
        },
        "rate_limit_per_token = 1\nrate_limit_per_address = 1000\nrate_limit_burst = 5\nmax_body_bytes = 4096\n",
    )
    .await;
    // An oversized body: 413, in the operation's shape.
    let amy = c.token_for("amy", Role::User);
    let (s, body) = slurm(
        &c,
        Method::POST,
        &format!("{SLURM}/job/submit"),
        Some("amy"),
        Some(&amy),
        Some(json!({"script": format!("#!/bin/bash\n#{}\ntrue\n", "x".repeat(8000))})),
    )
    .await;
    assert_eq!(s, 413, "{body}");
    assert_valid("v0.0.44_openapi_job_submit_response", &body);
    // The per-user rate limit holds for tokens sent in X-SLURM-USER-TOKEN.
    let bob = c.token_for("bob", Role::User);
    let mut statuses = Vec::new();
    let mut limited = None;
    for _ in 0..12 {
        let r = c
            .http
            .get(format!("{}{SLURM}/ping/", c.url))
            .header("X-SLURM-USER-NAME", "bob")
            .header("X-SLURM-USER-TOKEN", &bob)
            .send()
            .await
            .unwrap();
        statuses.push(r.status().as_u16());
        if r.status() == 429 {
            assert!(r.headers().contains_key("retry-after"));
            limited = Some(r.json::<Value>().await.unwrap());
        }
    }
    assert!(statuses[..5].iter().all(|s| *s == 200), "{statuses:?}");
    let body = limited.unwrap_or_else(|| panic!("never limited: {statuses:?}"));
    assert_valid("v0.0.44_openapi_ping_array_resp", &body);
}

/// `sacct --json` / `--yaml` and `squeue --json` / `--yaml` print Slurm's documents (data
/// parser v0.0.44) of what the filters select, so that `squeue --json | jq` scripts
/// written for Slurm work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sacct_and_squeue_json_and_yaml_print_slurms_documents() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let id = c
        .submit("#!/bin/bash\n#SBATCH -J acct-json\nexit 3\n", &[])
        .await;
    c.wait_ended(id, 60).await;
    let other = c.submit("#!/bin/bash\ntrue\n", &[]).await;
    c.wait_ended(other, 60).await;
    let (code, out, err) = c.slurm_command("sacct", &c.token, &["--json", "-j", &id.to_string()]);
    assert_eq!(code, 0, "{err}");
    let body: Value = serde_json::from_str(&out).unwrap();
    assert_valid("v0.0.44_openapi_slurmdbd_jobs_resp", &body);
    let jobs = body["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 1, "-j selects: {body:#}");
    assert_eq!(jobs[0]["job_id"], id);
    assert_eq!(jobs[0]["name"], "acct-json");
    assert_eq!(jobs[0]["exit_code"]["return_code"]["number"], 3);
    let (code, out, err) = c.slurm_command("sacct", &c.token, &["--yaml", "-j", &id.to_string()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("---\n"), "{out}");
    let from_yaml: Value = serde_yaml_ng::from_str(&out).unwrap();
    assert_eq!(from_yaml["jobs"], body["jobs"]);

    // squeue --json: slurmctld's job list document of the jobs the filters select.
    let held = c
        .submit("#!/bin/bash\n#SBATCH -H -J held-json\ntrue\n", &[])
        .await;
    let (code, out, err) = c.slurm_command("squeue", &c.token, &["--json"]);
    assert_eq!(code, 0, "{err}");
    let body: Value = serde_json::from_str(&out).unwrap();
    assert_valid("v0.0.44_openapi_job_info_resp", &body);
    let listed: Vec<i64> = body["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["job_id"].as_i64().unwrap())
        .collect();
    assert_eq!(
        listed,
        vec![held],
        "pending and running jobs only: {body:#}"
    );
    assert_eq!(body["jobs"][0]["name"], "held-json");
    let (code, out, err) = c.slurm_command("squeue", &c.token, &["--yaml", "-j", &id.to_string()]);
    assert_eq!(code, 0, "{err}");
    let from_yaml: Value = serde_yaml_ng::from_str(&out).unwrap();
    assert_valid("v0.0.44_openapi_job_info_resp", &from_yaml);
    assert_eq!(from_yaml["jobs"][0]["job_id"], id, "-j selects any state");
}
