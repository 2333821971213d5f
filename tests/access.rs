//! Identity and access end to end: users, the account tree and memberships; who sees and
//! cancels which jobs; `--account` at submission; API tokens (shown once, scoped,
//! revocable, last use recorded); the audit log; masked secrets; rate limits; the CLI.

use crate::cluster::{Options, TestCluster};
use berth_core::auth::Role;
use reqwest::Method;
use serde_json::{json, Value};

const HELD: &str = "#!/bin/bash\n#SBATCH --hold\ntrue\n";

async fn submit_as(c: &TestCluster, token: &str, args: &[&str]) -> (u16, Value) {
    c.call(
        Method::POST,
        "/v1/jobs",
        Some(token),
        Some(json!({"script": HELD, "args": args})),
    )
    .await
}

fn ids(list: &Value) -> Vec<i64> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["id"].as_i64().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenants_see_only_their_own_and_their_coordinated_accounts_jobs() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let admin = c.token.clone();
    let operator = c.token_for("olga", Role::Operator);
    let a = Some(admin.as_str());

    // The tree: acme → ml → {vision, nlp}; globex beside it.
    for (name, parent) in [
        ("acme", None),
        ("ml", Some("acme")),
        ("vision", Some("ml")),
        ("nlp", Some("ml")),
        ("globex", None),
    ] {
        let (s, body) = c
            .call(
                Method::POST,
                "/v1/accounts",
                Some(&operator),
                Some(json!({"name": name, "parent": parent, "shares": 10})),
            )
            .await;
        assert_eq!(s, 201, "{body}");
    }
    let (s, p) = c
        .call(
            Method::POST,
            "/v1/accounts",
            a,
            Some(json!({"name": "x", "parent": "nope"})),
        )
        .await;
    assert_eq!((s, p["field"].as_str()), (400, Some("parent")));
    let (s, _) = c
        .call(
            Method::POST,
            "/v1/accounts",
            a,
            Some(json!({"name": "acme"})),
        )
        .await;
    assert_eq!(s, 409);

    // Users: an operator adds plain users but not admins.
    for name in ["vera", "nico", "carla", "gina"] {
        let (s, body) = c
            .call(
                Method::POST,
                "/v1/users",
                Some(&operator),
                Some(json!({"name": name})),
            )
            .await;
        assert_eq!(s, 201, "{body}");
    }
    let (s, _) = c
        .call(
            Method::POST,
            "/v1/users",
            Some(&operator),
            Some(json!({"name": "eve", "role": "admin"})),
        )
        .await;
    assert_eq!(s, 403);
    for (account, user, coordinator) in [
        ("vision", "vera", false),
        ("nlp", "nico", false),
        ("ml", "carla", true),
        ("globex", "gina", false),
    ] {
        let (s, u) = c
            .call(
                Method::PUT,
                &format!("/v1/accounts/{account}/users/{user}"),
                a,
                Some(json!({"coordinator": coordinator})),
            )
            .await;
        assert_eq!(s, 200, "{u}");
        // The first membership becomes the default account.
        assert_eq!(u["default_account"], account);
    }
    let (s, _) = c
        .call(
            Method::PUT,
            "/v1/accounts/vision/users/nobody",
            a,
            Some(json!({})),
        )
        .await;
    assert_eq!(s, 404);

    let vera = c.token_for("vera", Role::User);
    let nico = c.token_for("nico", Role::User);
    let carla = c.token_for("carla", Role::User);
    let gina = c.token_for("gina", Role::User);

    // Submissions are charged to the default account; another account is refused,
    // naming --account.
    let (s, v1) = submit_as(&c, &vera, &[]).await;
    assert_eq!(s, 201);
    let v1 = v1["id"].as_i64().unwrap();
    let (s, p) = submit_as(&c, &vera, &["--account=globex"]).await;
    assert_eq!((s, p["field"].as_str()), (400, Some("--account")), "{p}");
    let (s, p) = submit_as(&c, &vera, &["-A", "nosuch"]).await;
    assert_eq!((s, p["field"].as_str()), (400, Some("--account")), "{p}");
    let (s, n1) = submit_as(&c, &nico, &["-A", "nlp"]).await;
    assert_eq!(s, 201);
    let n1 = n1["id"].as_i64().unwrap();
    let (s, g1) = submit_as(&c, &gina, &[]).await;
    assert_eq!(s, 201);
    let g1 = g1["id"].as_i64().unwrap();
    let (_, job) = c
        .call(Method::GET, &format!("/v1/jobs/{v1}"), a, None)
        .await;
    assert_eq!(job["account"], "vision");

    // A plain user sees their own jobs only; others' are 404, not 403.
    let (_, list) = c.call(Method::GET, "/v1/jobs", Some(&vera), None).await;
    assert_eq!(ids(&list), vec![v1]);
    let (s, _) = c
        .call(Method::GET, &format!("/v1/jobs/{n1}"), Some(&vera), None)
        .await;
    assert_eq!(s, 404);
    let (s, _) = c
        .call(
            Method::POST,
            &format!("/v1/jobs/{n1}/cancel"),
            Some(&vera),
            None,
        )
        .await;
    assert_eq!(s, 404);
    let (s, _) = c
        .call(
            Method::GET,
            &format!("/v1/jobs/{g1}/output"),
            Some(&nico),
            None,
        )
        .await;
    assert_eq!(s, 404);

    // The coordinator of ml sees the jobs of ml's sub-accounts, not globex's, and may
    // cancel them.
    let (_, list) = c.call(Method::GET, "/v1/jobs", Some(&carla), None).await;
    assert_eq!(ids(&list), vec![v1, n1]);
    let (s, _) = c
        .call(Method::GET, &format!("/v1/jobs/{g1}"), Some(&carla), None)
        .await;
    assert_eq!(s, 404);
    let (s, job) = c
        .call(
            Method::POST,
            &format!("/v1/jobs/{n1}/cancel"),
            Some(&carla),
            None,
        )
        .await;
    assert_eq!((s, job["state"].as_str()), (200, Some("CANCELLED")));

    // Operators see every job.
    let (_, list) = c.call(Method::GET, "/v1/jobs", Some(&operator), None).await;
    assert_eq!(ids(&list), vec![v1, n1, g1]);

    // Users see the accounts they belong to; operators all of them.
    let (_, accts) = c.call(Method::GET, "/v1/accounts", Some(&vera), None).await;
    let names: Vec<&str> = accts["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["vision"]);
    let (_, accts) = c
        .call(Method::GET, "/v1/accounts", Some(&operator), None)
        .await;
    assert_eq!(accts["items"].as_array().unwrap().len(), 6);
    let (s, me) = c
        .call(Method::GET, "/v1/users/vera", Some(&vera), None)
        .await;
    assert_eq!(
        (s, me["memberships"][0]["account"].as_str()),
        (200, Some("vision"))
    );
    let (s, _) = c
        .call(Method::GET, "/v1/users/nico", Some(&vera), None)
        .await;
    assert_eq!(s, 404);

    // An account with sub-accounts cannot go; removing a membership clears the default.
    let (s, _) = c.call(Method::DELETE, "/v1/accounts/ml", a, None).await;
    assert_eq!(s, 409);
    let (s, _) = c
        .call(Method::DELETE, "/v1/accounts/globex/users/gina", a, None)
        .await;
    assert_eq!(s, 204);
    let (_, u) = c.call(Method::GET, "/v1/users/gina", a, None).await;
    assert_eq!(u["default_account"], Value::Null);
    let (s, _) = c.call(Method::DELETE, "/v1/accounts/globex", a, None).await;
    assert_eq!(s, 204);
    let (s, _) = c.call(Method::DELETE, "/v1/users/gina", a, None).await;
    assert_eq!(s, 204);
    let (s, _) = c.call(Method::GET, "/v1/users/gina", a, None).await;
    assert_eq!(s, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_tokens_are_shown_once_scoped_revocable_and_audited() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let dana = c.token_for("dana", Role::User);
    let d = Some(dana.as_str());

    // Create: the token appears once, with the berth_ prefix.
    let (s, created) = c
        .call(
            Method::POST,
            "/v1/tokens",
            d,
            Some(json!({"name": "ci-main", "scope": "submit", "expires_in_days": 7})),
        )
        .await;
    assert_eq!(s, 201, "{created}");
    let ci = created["token"].as_str().unwrap().to_string();
    assert!(ci.starts_with("berth_"));
    let ci_id = created["id"].as_i64().unwrap();
    let (_, ro) = c
        .call(
            Method::POST,
            "/v1/tokens",
            d,
            Some(json!({"name": "dashboard"})),
        )
        .await;
    assert_eq!(ro["scope"], "read-only");
    let ro = ro["token"].as_str().unwrap().to_string();
    // A plain user cannot make an admin-scoped token; bad expiry is a 400 naming it.
    let (s, _) = c
        .call(
            Method::POST,
            "/v1/tokens",
            d,
            Some(json!({"name": "x", "scope": "admin"})),
        )
        .await;
    assert_eq!(s, 403);
    let (s, p) = c
        .call(
            Method::POST,
            "/v1/tokens",
            d,
            Some(json!({"name": "x", "expires_in_days": 0})),
        )
        .await;
    assert_eq!((s, p["field"].as_str()), (400, Some("expires_in_days")));

    // Stored hashed: the database never holds the token.
    let db = c.db().await;
    let stored: Vec<(String,)> = sqlx::query_as("SELECT token_hash FROM api_tokens")
        .fetch_all(&db)
        .await
        .unwrap();
    assert_eq!(stored.len(), 2);
    assert!(stored
        .iter()
        .all(|(h,)| h.len() == 64 && !h.contains(&ci[6..])));

    // The submit token acts as dana: submits and cancels jobs, cannot make tokens.
    let (s, job) = submit_as(&c, &ci, &[]).await;
    assert_eq!(s, 201);
    let job = job["id"].as_i64().unwrap();
    let (_, view) = c
        .call(Method::GET, &format!("/v1/jobs/{job}"), Some(&ci), None)
        .await;
    assert_eq!(view["user"], "dana");
    let (s, _) = c
        .call(
            Method::POST,
            "/v1/tokens",
            Some(&ci),
            Some(json!({"name": "y"})),
        )
        .await;
    assert_eq!(s, 403);
    // The read-only token reads, and nothing else.
    let (s, _) = c.call(Method::GET, "/v1/jobs", Some(&ro), None).await;
    assert_eq!(s, 200);
    let (s, _) = submit_as(&c, &ro, &[]).await;
    assert_eq!(s, 403);
    let (s, _) = c
        .call(
            Method::POST,
            &format!("/v1/jobs/{job}/cancel"),
            Some(&ro),
            None,
        )
        .await;
    assert_eq!(s, 403);

    // The list shows no secret and the last use.
    let (_, list) = c.call(Method::GET, "/v1/tokens", d, None).await;
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert!(!list.to_string().contains(&ci[6..]));
    assert!(items[0]["last_used_at"].is_string());
    assert_eq!(items[0]["prefix"], format!("{}…", &ci[..10]));

    // Others cannot see or revoke dana's tokens (404); dana can.
    let erin = c.token_for("erin", Role::User);
    let (_, list) = c.call(Method::GET, "/v1/tokens", Some(&erin), None).await;
    assert!(list["items"].as_array().unwrap().is_empty());
    let (s, _) = c
        .call(
            Method::DELETE,
            &format!("/v1/tokens/{ci_id}"),
            Some(&erin),
            None,
        )
        .await;
    assert_eq!(s, 404);
    let (s, _) = c
        .call(Method::DELETE, &format!("/v1/tokens/{ci_id}"), d, None)
        .await;
    assert_eq!(s, 204);
    let (s, p) = c.call(Method::GET, "/v1/jobs", Some(&ci), None).await;
    assert_eq!(s, 401);
    assert!(!p.to_string().contains(&ci[6..]), "no secret in errors");
    // An expired token is refused too.
    sqlx::query("UPDATE api_tokens SET created_at = now() - interval '2 days', expires_at = now() - interval '1 second'")
        .execute(&db)
        .await
        .unwrap();
    let (s, _) = c.call(Method::GET, "/v1/jobs", Some(&ro), None).await;
    assert_eq!(s, 401);

    // The audit log has every state-changing call: who, what, status, from where.
    let (s, _) = c.call(Method::GET, "/v1/audit", d, None).await;
    assert_eq!(s, 403);
    let (s, audit) = c
        .call(Method::GET, "/v1/audit?limit=100", Some(&c.token), None)
        .await;
    assert_eq!(s, 200);
    let entries = audit["items"].as_array().unwrap();
    let find = |method: &str, path: &str, status: u64| {
        entries.iter().find(|e| {
            e["method"] == method && e["path"] == path && e["status"].as_u64() == Some(status)
        })
    };
    let e = find("POST", "/v1/jobs", 201).expect("the submission is audited");
    assert_eq!(e["actor"], "dana");
    assert_eq!(e["token_id"].as_i64(), Some(ci_id));
    assert!(e["remote_addr"].as_str().unwrap().starts_with("127.0.0.1:"));
    assert!(e["request_id"].is_string());
    let e = find("DELETE", &format!("/v1/tokens/{ci_id}"), 404).expect("refusals too");
    assert_eq!(e["actor"], "erin");
    let e = find("GET", "/v1/jobs", 401);
    assert!(e.is_none(), "reads are not audited");
    let e = find("POST", "/v1/jobs", 403).expect("scope refusals are audited");
    assert_eq!(e["actor"], "dana");
    // Newest first, and no token in the log.
    assert!(entries
        .windows(2)
        .all(|w| w[0]["id"].as_i64() > w[1]["id"].as_i64()));
    assert!(!audit.to_string().contains("berth_"));
    let api_log = c.log("api");
    assert!(!api_log.contains(&ci[6..]), "no token in the api's log");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secret_environment_variables_are_masked_in_job_views() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let (s, created) = c
        .call(
            Method::POST,
            "/v1/jobs",
            Some(&c.token),
            Some(json!({
                "script": HELD,
                "args": ["--export=ALL,WANDB_API_KEY=k-123,N=3"],
                "environment": {"HF_TOKEN": "hf_secret", "DB_PASSWORD": "pw", "LANG": "C"},
            })),
        )
        .await;
    assert_eq!(s, 201);
    let id = created["id"].as_i64().unwrap();
    let (_, job) = c
        .call(Method::GET, &format!("/v1/jobs/{id}"), Some(&c.token), None)
        .await;
    assert_eq!(job["environment"]["HF_TOKEN"], "********");
    assert_eq!(job["environment"]["DB_PASSWORD"], "********");
    assert_eq!(job["environment"]["WANDB_API_KEY"], "********");
    assert_eq!(job["environment"]["LANG"], "C");
    assert_eq!(job["environment"]["N"], "3");
    assert_eq!(job["spec"]["export"], "ALL,WANDB_API_KEY=********,N=3");
    let (_, list) = c.call(Method::GET, "/v1/jobs", Some(&c.token), None).await;
    let text = list.to_string();
    assert!(!text.contains("hf_secret") && !text.contains("k-123"));
    // The worker still gets the real values (the job runs with them).
    let db = c.db().await;
    let (env,): (Value,) = sqlx::query_as("SELECT environment FROM jobs WHERE id = $1")
        .bind(id)
        .fetch_one(&db)
        .await
        .unwrap();
    assert_eq!(env["HF_TOKEN"], "hf_secret");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limits_answer_429_with_retry_after_and_big_headers_431() {
    let c = TestCluster::start_with_api_config(
        Options {
            workers: 1,
            ..Default::default()
        },
        "rate_limit_per_token = 1\nrate_limit_per_address = 1000\nrate_limit_burst = 5\nmax_header_bytes = 4096\nmax_body_bytes = 4096\n",
    )
    .await;
    let bob = c.token_for("bob", Role::User);
    let mut statuses = Vec::new();
    let mut retry_after = None;
    for _ in 0..12 {
        let r = c
            .http
            .get(format!("{}/v1/jobs", c.url))
            .bearer_auth(&bob)
            .send()
            .await
            .unwrap();
        statuses.push(r.status().as_u16());
        if r.status() == 429 {
            retry_after = r.headers().get("retry-after").cloned();
            let p: Value = r.json().await.unwrap();
            assert_eq!(p["code"], "rate_limited");
        }
    }
    assert!(statuses[..5].iter().all(|s| *s == 200), "{statuses:?}");
    assert!(statuses.contains(&429), "{statuses:?}");
    let secs: u64 = retry_after.unwrap().to_str().unwrap().parse().unwrap();
    assert!((1..=2).contains(&secs));
    // Another token is not limited by bob's use.
    let (s, _) = c
        .call(
            Method::GET,
            "/v1/jobs",
            Some(&c.token_for("amy", Role::User)),
            None,
        )
        .await;
    assert_eq!(s, 200);
    // Oversized headers: 431.
    let r = c
        .http
        .get(format!("{}/healthz", c.url))
        .header("x-padding", "a".repeat(8000))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 431);
    // An oversized body: 413; a path parameter that does not parse: 400. Both are
    // problem documents like every other error.
    let r = c
        .http
        .post(format!("{}/v1/jobs", c.url))
        .bearer_auth(c.token_for("cleo", Role::User))
        .json(&json!({"script": format!("#!/bin/bash\n#{}\ntrue\n", "x".repeat(8000))}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 413);
    assert_eq!(r.headers()["content-type"], "application/problem+json");
    let r = c
        .http
        .get(format!("{}/v1/jobs/99999999999999999999", c.url))
        .bearer_auth(c.token_for("cleo", Role::User))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert_eq!(r.headers()["content-type"], "application/problem+json");
    let p: Value = r.json().await.unwrap();
    assert_eq!(p["code"], "invalid_parameter");
    assert!(p["request_id"].is_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_manages_accounts_users_and_api_tokens() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let (c2, admin) = (&c, c.token.clone());
    let run = |args: &'static [&'static str]| {
        let (code, out, err) = c2.cli(&admin, args);
        assert_eq!(code, 0, "berth {args:?}: {err}");
        out
    };
    run(&["account", "add", "acme", "--shares", "5"]);
    run(&["account", "add", "vision", "--parent", "acme"]);
    let out = run(&["user", "add", "vera", "-A", "vision", "--coordinator"]);
    assert!(
        out.contains("vera") && out.contains("vision(coord)*"),
        "{out}"
    );
    let out = run(&["account", "list"]);
    assert!(
        out.contains("acme ") && out.contains("\n    vision"),
        "{out}"
    );
    let out = run(&["user", "list"]);
    assert!(
        out.lines()
            .any(|l| l.starts_with("vera") && l.contains("user")),
        "{out}"
    );

    // vera makes a CI token, uses it to submit, lists and revokes it.
    let vera = c.token_for("vera", Role::User);
    let (code, out, err) = c.cli(
        &vera,
        &["token", "create", "--name", "ci", "--scope", "submit"],
    );
    assert_eq!(code, 0, "{err}");
    let ci = out.trim().to_string();
    assert!(
        ci.starts_with("berth_") && err.contains("shown only this once"),
        "{out} {err}"
    );
    let script = c.dir.join("t.sbatch");
    std::fs::write(&script, HELD).unwrap();
    let (code, out, err) = c.cli(&ci, &["submit", "--parsable", script.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let id: i64 = out.trim().parse().unwrap();
    let (_, job) = c
        .call(Method::GET, &format!("/v1/jobs/{id}"), Some(&admin), None)
        .await;
    assert_eq!(
        (job["user"].as_str(), job["account"].as_str()),
        (Some("vera"), Some("vision"))
    );
    let (_, out, _) = c.cli(&vera, &["token", "list"]);
    let line = out.lines().nth(1).unwrap();
    assert!(
        line.contains("ci") && line.contains("submit") && line.contains("active"),
        "{out}"
    );
    assert!(!out.contains(&ci));
    let token_id = line.split_whitespace().next().unwrap();
    let (code, _, err) = c.cli(&vera, &["token", "revoke", token_id]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = c.cli(&ci, &["queue"]);
    assert_eq!(code, 1);
    assert!(err.contains("API token"), "{err}");
    // A plain user cannot add users.
    let (code, _, err) = c.cli(&vera, &["user", "add", "mallory"]);
    assert_eq!(code, 1);
    assert!(err.contains("admin or operator"), "{err}");
}

/// `GET /v1/whoami` says who the credentials are: a user's JWT with their accounts and
/// default account, an API token with its id and scope, and nothing without credentials.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whoami_says_the_user_role_accounts_and_token_scope() {
    let c = TestCluster::start(Options {
        workers: 0,
        ..Default::default()
    })
    .await;
    let a = Some(c.token.as_str());
    c.call(
        Method::POST,
        "/v1/accounts",
        a,
        Some(json!({"name": "physics"})),
    )
    .await;
    c.call(Method::POST, "/v1/users", a, Some(json!({"name": "wren"})))
        .await;
    let (s, _) = c
        .call(
            Method::PUT,
            "/v1/accounts/physics/users/wren",
            a,
            Some(json!({"default": true, "coordinator": true})),
        )
        .await;
    assert_eq!(s, 200);
    let wren = c.token_for("wren", Role::User);
    let (s, me) = c.call(Method::GET, "/v1/whoami", Some(&wren), None).await;
    assert_eq!(s, 200, "{me}");
    assert_eq!(me["user"], "wren");
    assert_eq!(me["role"], "user");
    assert_eq!(me["default_account"], "physics");
    assert_eq!(
        me["accounts"],
        json!([{"account": "physics", "user": "wren", "coordinator": true}])
    );
    assert!(me["token_id"].is_null() && me["scope"].is_null(), "{me}");

    let (s, created) = c
        .call(
            Method::POST,
            "/v1/tokens",
            Some(&wren),
            Some(json!({"name": "dashboard"})),
        )
        .await;
    assert_eq!(s, 201, "{created}");
    let token = created["token"].as_str().unwrap();
    let (s, me) = c.call(Method::GET, "/v1/whoami", Some(token), None).await;
    assert_eq!(s, 200, "{me}");
    assert_eq!(me["user"], "wren");
    assert_eq!(me["token_id"], created["id"]);
    assert_eq!(me["scope"], "read-only");

    let (s, me) = c.call(Method::GET, "/v1/whoami", a, None).await;
    assert_eq!((s, me["role"].as_str()), (200, Some("admin")));
    let (s, p) = c.call(Method::GET, "/v1/whoami", None, None).await;
    assert_eq!(s, 401, "{p}");
}
