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
    violations_of(
        json!({ "$ref": format!("#/components/schemas/{name}") }),
        body,
    )
}

/// Why `body` is not valid against `schema`, whose `$ref`s name the document's
/// components; empty when it is.
fn violations_of(mut schema: Value, body: &Value) -> Vec<String> {
    schema["components"] = document()["components"].clone();
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
    // The job that completed a moment ago is still listed (Slurm's MinJobAge, 300 s).
    assert_eq!(ids(&body), vec![id, held], "{body}");
    assert_eq!(body["jobs"][0]["job_state"], json!(["COMPLETED"]));
    assert_eq!(body["jobs"][1]["hold"], true);
    assert_eq!(body["jobs"][1]["job_state"], json!(["PENDING"]));
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
        Some(json!({"script": "#!/bin/bash\ntrue\n", "job": {"licenses": "matlab:1"}})),
    )
    .await;
    assert_eq!(s, 400, "{body}");
    assert_valid("v0.0.44_openapi_job_submit_response", &body);
    assert_eq!(body["errors"][0]["source"], "job.licenses", "{body}");
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
    // An operation Berth does not serve: 501 in the operation's own shape.
    let (s, body) = get_as(&c, "alice", &c.token, &format!("{SLURM}/licenses/")).await;
    assert_eq!(s, 501, "{body}");
    assert_valid("v0.0.44_openapi_licenses_resp", &body);
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
    let job_token = c.job_token("bob", running, 0).await;
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

/// The shape of Slurm's `sinfo --json` document: slurmrestd's v0.0.44 document has no
/// sinfo answer, so this is the data parser's `SINFO_DATA` (Slurm's
/// `src/plugins/data_parser/v0.0.44/parsers.c`) over the document's own parts: `meta`,
/// `errors`, `warnings`, the node state flags of `v0.0.44_node`, `v0.0.44_hostlist`,
/// `v0.0.44_partition_info` and the `*_no_val` structs.
fn sinfo_schema() -> Value {
    let schema = |name: &str| json!({ "$ref": format!("#/components/schemas/{name}") });
    let int = json!({"type": "integer"});
    let string = json!({"type": "string"});
    let object = |fields: Value| {
        let required: Vec<String> = fields.as_object().unwrap().keys().cloned().collect();
        json!({
            "type": "object", "properties": fields, "required": required,
            "additionalProperties": false,
        })
    };
    let min_max = object(json!({"minimum": int, "maximum": int}));
    let entry = object(json!({
        "port": int,
        "node": object(json!({
            "state": document()["components"]["schemas"]["v0.0.44_node"]["properties"]["state"],
        })),
        "nodes": object(json!({
            "allocated": int, "idle": int, "other": int, "total": int,
            "hostnames": schema("v0.0.44_hostlist"),
            "addresses": schema("v0.0.44_hostlist"),
            "nodes": schema("v0.0.44_hostlist"),
        })),
        "cpus": object(json!({
            "allocated": int, "idle": int, "other": int, "total": int,
            "minimum": int, "maximum": int, "load": min_max,
            "per_node": object(json!({"max": schema("v0.0.44_uint32_no_val_struct")})),
        })),
        "sockets": min_max, "cores": min_max, "threads": min_max, "disk": min_max,
        "memory": object(json!({
            "minimum": int, "maximum": int, "allocated": int,
            "free": object(json!({
                "minimum": schema("v0.0.44_uint64_no_val_struct"),
                "maximum": schema("v0.0.44_uint64_no_val_struct"),
            })),
        })),
        "weight": min_max,
        "features": object(json!({"total": string, "active": string})),
        "gres": object(json!({"total": string, "used": string})),
        "cluster": string, "comment": string, "extra": string, "reservation": string,
        "reason": object(json!({"description": string, "time": int, "user": string})),
        "resource_spec": object(json!({"cpus": string, "memory": int})),
        "partition": schema("v0.0.44_partition_info"),
    }));
    object(json!({
        "sinfo": {"type": "array", "items": entry},
        "meta": schema("v0.0.44_openapi_meta"),
        "errors": schema("v0.0.44_openapi_errors"),
        "warnings": schema("v0.0.44_openapi_warnings"),
    }))
}

/// `sinfo`, `sshare` and `scontrol show` with `--json`/`--yaml` print Slurm's v0.0.44
/// documents; slurmrestd's gaps of issue 15 are closed: `jobs/` keeps jobs ended in the
/// last 300 s, `job/{id}` takes array ids (`12` the whole array, `12_3` one task),
/// `job/submit` passes `job.argv` to the script, nodes carry typed GRES, `shares` has the
/// association tree's account rows, and slurmdb jobs carry their steps.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_documents_of_the_slurm_commands_and_the_slurmrestd_gaps() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    c.wait_leader(60).await;
    let a = Some(c.token.as_str());
    for (method, path, body) in [
        (Method::POST, "/v1/users", json!({"name": "bob"})),
        (Method::POST, "/v1/accounts", json!({"name": "physics"})),
        (Method::PUT, "/v1/accounts/physics/users/bob", json!({})),
    ] {
        let (s, answer) = c.call(method, path, a, Some(body)).await;
        assert!(s == 200 || s == 201, "{path}: {s} {answer}");
    }
    let bob = c.token_for("bob", Role::User);

    // job/submit with argv: the script gets argv[1..] as $1, $2 (argv[0] is the script's).
    let path_env = format!("PATH={}", std::env::var("PATH").unwrap_or_default());
    let (s, body) = slurm(
        &c,
        Method::POST,
        &format!("{SLURM}/job/submit"),
        Some("bob"),
        Some(&bob),
        Some(json!({
            "script": "#!/bin/bash\necho \"args:$1|$2|$#\"\nsrun true\n",
            "job": {
                "name": "with-argv",
                "argv": ["ignored", "a b", "c"],
                "current_working_directory": c.dir.to_string_lossy(),
                "environment": [path_env],
            },
        })),
    )
    .await;
    assert_eq!(s, 200, "{body}");
    let id = body["job_id"].as_i64().unwrap();
    let job = c.wait_ended(id, 120).await;
    assert_eq!(job.state, berth_core::state::JobState::Completed);
    let output = c.output(id).await;
    assert!(output.contains("args:a b|c|2"), "{output}");

    // An ended job stays in jobs/ for 300 s.
    let (s, body) = get_as(&c, "bob", &bob, &format!("{SLURM}/jobs/")).await;
    assert_eq!(s, 200, "{body}");
    assert_valid("v0.0.44_openapi_job_info_resp", &body);
    assert_eq!(ids(&body), vec![id], "{body}");
    assert_eq!(body["jobs"][0]["job_state"], json!(["COMPLETED"]));

    // slurmdb: the run with its steps (batch, then the srun step); skip_steps leaves them out.
    let (s, body) = get_as(&c, "bob", &bob, &format!("{SLURMDB}/job/{id}")).await;
    assert_eq!(s, 200, "{body}");
    assert_valid("v0.0.44_openapi_slurmdbd_jobs_resp", &body);
    let steps: Vec<&str> = body["jobs"][0]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["step"]["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        steps,
        [format!("{id}.batch"), format!("{id}.0")],
        "{body:#}"
    );
    assert_eq!(body["jobs"][0]["steps"][1]["state"], json!(["COMPLETED"]));
    assert_eq!(
        body["jobs"][0]["steps"][1]["nodes"]["list"],
        json!(["node-1"])
    );
    let (_, body) = get_as(&c, "bob", &bob, &format!("{SLURMDB}/jobs/?skip_steps=true")).await;
    assert_valid("v0.0.44_openapi_slurmdbd_jobs_resp", &body);
    assert_eq!(body["jobs"][0]["steps"], json!([]), "{body:#}");

    // Arrays: `ID` gives every task, `ID_T` one; a task not started is the array's record.
    let array = c.submit("#!/bin/bash\ntrue\n", &["--array=1-2"]).await;
    for _ in 0..240 {
        let (_, body) = get_as(&c, "alice", &c.token, &format!("{SLURM}/job/{array}")).await;
        let states: Vec<&str> = body["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|j| j["job_state"][0].as_str().unwrap())
            .collect();
        if states.len() == 2 && states.iter().all(|s| *s == "COMPLETED") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    let (s, body) = get_as(&c, "alice", &c.token, &format!("{SLURM}/job/{array}")).await;
    assert_eq!(s, 200, "{body}");
    assert_valid("v0.0.44_openapi_job_info_resp", &body);
    let mut tasks: Vec<i64> = body["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["array_task_id"]["number"].as_i64().unwrap())
        .collect();
    tasks.sort_unstable();
    assert_eq!(tasks, [1, 2], "{body:#}");
    let (s, body) = get_as(&c, "alice", &c.token, &format!("{SLURM}/job/{array}_2")).await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(body["jobs"].as_array().unwrap().len(), 1, "{body}");
    assert_eq!(body["jobs"][0]["array_task_id"]["number"], 2);
    assert_eq!(body["jobs"][0]["array_job_id"]["number"], array);
    let (s, body) = get_as(&c, "alice", &c.token, &format!("{SLURM}/job/{array}_7")).await;
    assert_eq!(s, 404, "{body}");
    assert_valid("v0.0.44_openapi_job_info_resp", &body);
    let held = c
        .submit("#!/bin/bash\ntrue\n", &["--array=0-3", "-H"])
        .await;
    let (s, body) = get_as(&c, "alice", &c.token, &format!("{SLURM}/job/{held}_2")).await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(body["jobs"][0]["job_id"], held, "{body}");
    assert_eq!(body["jobs"][0]["array_task_string"], "0-3", "{body}");
    // Another user sees none of them.
    let (s, _) = get_as(&c, "bob", &bob, &format!("{SLURM}/job/{array}_2")).await;
    assert_eq!(s, 404);
    // POST and DELETE take array tasks too: updating task 2 splits it out of the array
    // into its own pending job; DELETE of task 1 cancels that task alone.
    let alice = c.token.clone();
    let (s, body) = slurm(
        &c,
        Method::POST,
        &format!("{SLURM}/job/{held}_2"),
        Some("alice"),
        Some(&alice),
        Some(json!({"time_limit": {"set": true, "number": 7}})),
    )
    .await;
    assert_eq!(s, 200, "{body}");
    assert_valid("v0.0.44_openapi_job_post_response", &body);
    let (_, body) = get_as(&c, "alice", &alice, &format!("{SLURM}/job/{held}_2")).await;
    let task2 = &body["jobs"][0];
    assert_ne!(
        task2["job_id"], held,
        "task 2 has its own job now: {body:#}"
    );
    assert_eq!(task2["array_task_id"]["number"], 2, "{body:#}");
    assert_eq!(task2["time_limit"]["number"], 7, "{body:#}");
    let (_, body) = get_as(&c, "alice", &alice, &format!("{SLURM}/job/{held}")).await;
    let master = body["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["job_id"] == held)
        .unwrap();
    assert_eq!(master["array_task_string"], "0-1,3", "{body:#}");
    assert_ne!(
        master["time_limit"]["number"], 7,
        "the rest keep theirs: {body:#}"
    );
    for (user, token, status) in [("bob", &bob, 404), ("alice", &alice, 200)] {
        let (s, body) = slurm(
            &c,
            Method::DELETE,
            &format!("{SLURM}/job/{held}_1"),
            Some(user),
            Some(token),
            None,
        )
        .await;
        assert_eq!(s, status, "{user}: {body}");
        assert_valid("v0.0.44_openapi_kill_job_resp", &body);
    }
    let (_, body) = get_as(&c, "alice", &alice, &format!("{SLURM}/job/{held}_1")).await;
    assert_eq!(
        body["jobs"][0]["job_state"],
        json!(["CANCELLED"]),
        "{body:#}"
    );
    let (_, body) = get_as(&c, "alice", &alice, &format!("{SLURM}/job/{held}")).await;
    let states: std::collections::BTreeMap<i64, String> = body["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["array_task_id"]["number"].as_i64().unwrap_or(-1),
                j["job_state"][0].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        states.get(&1).map(String::as_str),
        Some("CANCELLED"),
        "{body:#}"
    );
    assert_eq!(
        states.get(&2).map(String::as_str),
        Some("PENDING"),
        "{body:#}"
    );
    // A refused update of a task splits nothing: bob may not raise his array's limit.
    let bobs = c
        .submit_as(
            "bob",
            "#!/bin/bash\ntrue\n",
            &["--array=0-2", "-H", "-t", "10"],
            &[],
        )
        .await;
    let (s, body) = slurm(
        &c,
        Method::POST,
        &format!("{SLURM}/job/{bobs}_1"),
        Some("bob"),
        Some(&bob),
        Some(json!({"time_limit": {"set": true, "number": 600}})),
    )
    .await;
    assert_eq!(s, 403, "{body}");
    let (_, body) = get_as(&c, "bob", &bob, &format!("{SLURM}/job/{bobs}_1")).await;
    assert_eq!(
        body["jobs"][0]["job_id"], bobs,
        "still the array's: {body:#}"
    );
    assert_eq!(body["jobs"][0]["array_task_string"], "0-2", "{body:#}");

    // Typed GRES: the simulated H100s as Slurm's AutoDetect=nvml names them.
    let (_, body) = get_as(&c, "alice", &c.token, &format!("{SLURM}/nodes/")).await;
    assert_valid("v0.0.44_openapi_nodes_resp", &body);
    assert_eq!(body["nodes"][0]["gres"], "gpu:nvidia_h100_80gb_hbm3:8");
    assert_eq!(
        body["nodes"][0]["gres_used"],
        "gpu:nvidia_h100_80gb_hbm3:0(IDX:N/A)"
    );

    // shares: the association tree, account rows then their users.
    let (s, body) = get_as(&c, "alice", &c.token, &format!("{SLURM}/shares")).await;
    assert_eq!(s, 200, "{body}");
    assert_valid("v0.0.44_openapi_shares_resp", &body);
    let rows: Vec<(String, String, String)> = body["shares"]["shares"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["type"][0].as_str().unwrap().to_string(),
                r["name"].as_str().unwrap().to_string(),
                r["parent"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let row = |t: &str, n: &str, p: &str| (t.to_string(), n.to_string(), p.to_string());
    assert_eq!(rows[0], row("ASSOCIATION", "root", ""), "{body:#}");
    let physics = rows
        .iter()
        .position(|r| *r == row("ASSOCIATION", "physics", "root"))
        .unwrap_or_else(|| panic!("no physics row: {body:#}"));
    assert_eq!(rows[physics + 1], row("USER", "bob", "physics"), "{body:#}");
    let (_, body) = get_as(&c, "bob", &bob, &format!("{SLURM}/shares")).await;
    assert_valid("v0.0.44_openapi_shares_resp", &body);
    let users: Vec<&str> = body["shares"]["shares"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["type"][0] == "USER")
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(users, ["bob"], "{body:#}");

    // sinfo --json / --yaml: one entry per partition and node group.
    let t = c.token.clone();
    let (code, out, err) = c.slurm_command("sinfo", &t, &["--json"]);
    assert_eq!(code, 0, "{err}");
    let body: Value = serde_json::from_str(&out).unwrap();
    let errors = violations_of(sinfo_schema(), &body);
    assert!(errors.is_empty(), "{errors:#?}\n{body:#}");
    assert!(!violations_of(sinfo_schema(), &json!({"sinfo": [{}]})).is_empty());
    let entry = &body["sinfo"][0];
    assert_eq!(entry["nodes"]["nodes"], json!(["node-1"]), "{body:#}");
    assert_eq!(entry["nodes"]["total"], 1);
    assert_eq!(entry["node"]["state"], json!(["IDLE"]));
    assert_eq!(entry["gres"]["total"], "gpu:nvidia_h100_80gb_hbm3:8");
    assert_eq!(entry["partition"]["nodes"]["configured"], "node-1");
    assert_eq!(body["meta"]["client"]["user"], "alice");
    let (code, out, err) = c.slurm_command("sinfo", &t, &["--yaml", "-N", "-n", "node-1"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("---\n"), "{out}");
    let from_yaml: Value = serde_yaml_ng::from_str(&out).unwrap();
    assert!(violations_of(sinfo_schema(), &from_yaml).is_empty());
    assert_eq!(from_yaml["sinfo"][0]["nodes"]["nodes"], json!(["node-1"]));
    let (_, out, _) = c.slurm_command("sinfo", &t, &["--json", "-t", "down"]);
    let body: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(body["sinfo"], json!([]), "no node is down: {body:#}");

    // sshare --json / --yaml: slurmrestd's shares document of the same selection.
    let (code, out, err) = c.slurm_command("sshare", &t, &["--json", "-a"]);
    assert_eq!(code, 0, "{err}");
    let body: Value = serde_json::from_str(&out).unwrap();
    assert_valid("v0.0.44_openapi_shares_resp", &body);
    assert!(
        body["shares"]["shares"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["name"] == "bob" && r["parent"] == "physics"),
        "{body:#}"
    );
    let (code, out, err) = c.slurm_command("sshare", &bob, &["--yaml", "-U"]);
    assert_eq!(code, 0, "{err}");
    let body: Value = serde_yaml_ng::from_str(&out).unwrap();
    assert_valid("v0.0.44_openapi_shares_resp", &body);
    let names: Vec<&str> = body["shares"]["shares"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["bob"], "-U: users' rows only: {body:#}");

    // scontrol show … --json / --yaml: slurmrestd's documents.
    let id_text = id.to_string();
    for (args, schema) in [
        (
            vec!["show", "job", id_text.as_str(), "--json"],
            "v0.0.44_openapi_job_info_resp",
        ),
        (
            vec!["--json", "show", "node", "node-1"],
            "v0.0.44_openapi_nodes_resp",
        ),
        (
            vec!["show", "partition", "--json"],
            "v0.0.44_openapi_partition_resp",
        ),
        (
            vec!["show", "reservation", "--json"],
            "v0.0.44_openapi_reservation_resp",
        ),
    ] {
        let (code, out, err) = c.slurm_command("scontrol", &t, &args);
        assert_eq!(code, 0, "{args:?}: {err}");
        let body: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
        assert_valid(schema, &body);
    }
    let (_, out, _) = c.slurm_command(
        "scontrol",
        &t,
        &["--yaml", "show", "job", &array.to_string()],
    );
    let body: Value = serde_yaml_ng::from_str(&out).unwrap();
    assert_valid("v0.0.44_openapi_job_info_resp", &body);
    assert_eq!(body["jobs"].as_array().unwrap().len(), 2, "{body:#}");
    let (_, out, _) = c.slurm_command("scontrol", &t, &["show", "node", "--json"]);
    let body: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(body["nodes"][0]["name"], "node-1");
    let (code, _, err) = c.slurm_command("scontrol", &t, &["show", "job", "999999", "--json"]);
    assert_eq!(code, 1);
    assert!(err.contains("Invalid job id specified"), "{err}");
    let (code, _, err) = c.slurm_command("scontrol", &t, &["requeue", "5", "--json"]);
    assert_ne!(code, 0);
    assert!(err.contains("--json"), "{err}");

    // A drained node's reason says who set it and when, in sinfo's JSON and slurmrestd's.
    let before = chrono::Utc::now().timestamp();
    let (code, _, err) = c.slurm_command(
        "scontrol",
        &t,
        &["update", "NodeName=node-1", "State=DRAIN", "Reason=bad fan"],
    );
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = c.slurm_command("sinfo", &t, &["--json", "-R"]);
    assert_eq!(code, 0, "{err}");
    let body: Value = serde_json::from_str(&out).unwrap();
    assert!(violations_of(sinfo_schema(), &body).is_empty(), "{body:#}");
    let reason = &body["sinfo"][0]["reason"];
    assert_eq!(reason["description"], "bad fan", "{body:#}");
    assert_eq!(reason["user"], "alice", "{body:#}");
    let at = reason["time"].as_i64().unwrap();
    assert!((before - 1..=before + 60).contains(&at), "{at} vs {before}");
    let (s, body) = get_as(&c, "alice", &t, "/slurm/v0.0.44/node/node-1").await;
    assert_eq!(s, 200, "{body}");
    assert_valid("v0.0.44_openapi_nodes_resp", &body);
    assert_eq!(body["nodes"][0]["reason_set_by_user"], "alice", "{body:#}");
    assert_eq!(body["nodes"][0]["reason_changed_at"]["number"], at);
}

/// Every operation of slurmrestd's document answers a body valid against the document's
/// schema for it: the `200` schema when it succeeds, the `default` (error) schema when it
/// does not. One Berth does not serve answers 501 with `ESLURM_NOT_SUPPORTED` and the
/// operation's required fields, empty (a generated client parses it without raising).
/// `job/submit` takes `begin_time` as `sbatch --begin`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_of_the_document_answers_in_its_documented_shape() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    c.wait_leader(60).await;
    let responses = |op: &Value, code: &str| -> Value {
        op["responses"][code]["content"]["application/json"]["schema"].clone()
    };
    let (mut served, mut unserved) = (Vec::new(), Vec::new());
    for (path, item) in document()["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let Ok(method) = method.to_uppercase().parse::<Method>() else {
                continue;
            };
            // Path parameters name nothing that exists: a served operation fails as it
            // would for an unknown job, node, account ….
            let concrete = path
                .split('/')
                .map(|s| match s {
                    "{job_id}" => "999999",
                    s if s.starts_with('{') => "no-such-name",
                    s => s,
                })
                .collect::<Vec<_>>()
                .join("/");
            let body = (method != Method::GET && method != Method::DELETE).then(|| json!({}));
            let (s, answer) = slurm(
                &c,
                method.clone(),
                &concrete,
                Some("alice"),
                Some(&c.token),
                body,
            )
            .await;
            let schema = responses(op, if s == 200 { "200" } else { "default" });
            let errors = violations_of(schema, &answer);
            assert!(
                errors.is_empty(),
                "{method} {concrete} answered {s}, not valid against the document: {errors:#?}\n{answer:#}"
            );
            if s == 501 {
                assert_eq!(answer["errors"][0]["error_number"], 2036, "{answer}");
                unserved.push(format!("{method} {path}"));
            } else {
                assert!(
                    s == 200 || s == 400 || s == 404,
                    "{method} {concrete}: {s} {answer}"
                );
                served.push(format!("{method} {path}"));
            }
        }
    }
    assert!(
        unserved.contains(&"GET /slurm/v0.0.44/licenses/".to_string()),
        "{unserved:?}"
    );
    for op in [
        "GET /slurm/v0.0.44/ping/",
        "POST /slurm/v0.0.44/job/submit",
        "DELETE /slurm/v0.0.44/job/{job_id}",
        "GET /slurmdb/v0.0.44/qos/",
    ] {
        assert!(served.contains(&op.to_string()), "{op}: {served:?}");
    }
    assert_eq!(served.len() + unserved.len(), 66);

    // A path outside the document: 404 ESLURM_REST_UNKNOWN_URL; a method the document has
    // not on a served path: 405.
    let (s, body) = get_as(&c, "alice", &c.token, &format!("{SLURM}/no-such-thing/")).await;
    assert_eq!(s, 404, "{body}");
    assert_eq!(body["errors"][0]["error_number"], 9006, "{body}");
    assert_valid("v0.0.44_openapi_resp", &body);
    let (s, body) = slurm(
        &c,
        Method::PUT,
        &format!("{SLURM}/ping/"),
        Some("alice"),
        Some(&c.token),
        None,
    )
    .await;
    assert_eq!(s, 405, "{body}");
    assert_eq!(body["errors"][0]["error_number"], 9007, "{body}");

    // begin_time (a UNIX timestamp): the job waits for it, as with sbatch --begin.
    let begin = chrono::Utc::now().timestamp() + 3600;
    let path_env = format!("PATH={}", std::env::var("PATH").unwrap_or_default());
    let (s, body) = slurm(
        &c,
        Method::POST,
        &format!("{SLURM}/job/submit"),
        Some("alice"),
        Some(&c.token),
        Some(json!({
            "script": "#!/bin/bash\ntrue\n",
            "job": {
                "name": "later",
                "begin_time": {"set": true, "number": begin},
                "current_working_directory": c.dir.to_string_lossy(),
                "environment": [path_env],
            },
        })),
    )
    .await;
    assert_eq!(s, 200, "{body}");
    let id = body["job_id"].as_i64().unwrap();
    let (s, job) = c
        .call(Method::GET, &format!("/v1/jobs/{id}"), Some(&c.token), None)
        .await;
    assert_eq!(s, 200, "{job}");
    assert_eq!(job["state"], "PENDING", "{job}");
    assert_eq!(job["reason"], "BeginTime", "{job}");
    let expected = chrono::DateTime::from_timestamp(begin, 0)
        .unwrap()
        .format("%Y-%m-%dT%H:%M:%S")
        .to_string();
    assert_eq!(job["spec"]["begin"], expected, "{job}");
}
